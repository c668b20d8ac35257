/* fairness.c - the hourly Jain index over backlogged groups (see fairness.h).
 *
 * Cells are settled lazily: usage_since / pending_since say up to when a
 * cell's area / pending time is counted; a change settles that cell, an
 * hour boundary settles them all.  Work per event is O(1), per hour
 * O(groups x types).
 */
#include "sim/fairness.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

double gp_sim_jain(const double *x, size_t n)
{
    double sum = 0, sum_sq = 0;
    for (size_t i = 0; i < n; i++) {
        sum += x[i];
        sum_sq += x[i] * x[i];
    }
    return n == 0 || sum_sq == 0 ? 1.0 : sum * sum / ((double)n * sum_sq);
}

void gp_sim_fair_tree_entitlements(const gp_sim_fair_tree *tree, size_t n_groups, const bool *backlogged,
                                   bool *active, double *sum, double *out)
{
    size_t top = tree->n_nodes; /* sum[top]: the top level's */
    memset(active, 0, tree->n_nodes * sizeof *active);
    memset(sum, 0, (top + 1) * sizeof *sum);
    for (size_t g = 0; g < n_groups; g++)
        for (int32_t a = backlogged[g] ? tree->group_node[g] : -1; a >= 0 && !active[a]; a = tree->parent[a]) {
            active[a] = true;
            sum[tree->parent[a] < 0 ? top : (size_t)tree->parent[a]] += tree->weight[a];
        }
    for (size_t g = 0; g < n_groups; g++) {
        double share = backlogged[g] ? 1.0 : 0.0;
        for (int32_t a = backlogged[g] ? tree->group_node[g] : -1; a >= 0; a = tree->parent[a]) {
            double s = sum[tree->parent[a] < 0 ? top : (size_t)tree->parent[a]];
            share *= s > 0 ? tree->weight[a] / s : 0.0;
        }
        out[g] = share;
    }
}

void gp_sim_fair_tree_free(gp_sim_fair_tree *tree)
{
    free(tree->parent);
    free(tree->weight);
    free(tree->group_node);
    memset(tree, 0, sizeof *tree);
}

/* f->tree := a copy of tree (n_groups group nodes); false when out of memory. */
static bool copy_tree(gp_sim_fairness *f, const gp_sim_fair_tree *tree, size_t n_groups)
{
    size_t n = tree->n_nodes, ng = n_groups ? n_groups : 1;
    f->tree.parent = malloc((n ? n : 1) * sizeof *f->tree.parent);
    f->tree.weight = malloc((n ? n : 1) * sizeof *f->tree.weight);
    f->tree.group_node = malloc(ng * sizeof *f->tree.group_node);
    f->active = malloc((n ? n : 1) * sizeof *f->active);
    f->active_sum = malloc((n + 1) * sizeof *f->active_sum);
    if (!f->tree.parent || !f->tree.weight || !f->tree.group_node || !f->active || !f->active_sum)
        return false;
    f->tree.n_nodes = n;
    memcpy(f->tree.parent, tree->parent, n * sizeof *tree->parent);
    memcpy(f->tree.weight, tree->weight, n * sizeof *tree->weight);
    memcpy(f->tree.group_node, tree->group_node, n_groups * sizeof *tree->group_node);
    return true;
}

gp_err gp_sim_fairness_init(gp_sim_fairness *f, size_t n_groups, const double *entitlement,
                            const gp_sim_fair_tree *tree, int n_types, const int64_t *capacity_milli, int64_t t0,
                            gp_error *err)
{
    memset(f, 0, sizeof *f);
    size_t ng = n_groups ? n_groups : 1, cells = ng * (size_t)(n_types > 0 ? n_types : 1);
    f->n_groups = n_groups;
    f->n_types = n_types < GP_MAX_GPU_TYPES ? n_types : GP_MAX_GPU_TYPES;
    memcpy(f->capacity_milli, capacity_milli, (size_t)f->n_types * sizeof *capacity_milli);
    f->entitlement = malloc(ng * sizeof *f->entitlement);
    f->usage = calloc(cells, sizeof *f->usage);
    f->usage_since = malloc(cells * sizeof *f->usage_since);
    f->area = calloc(cells, sizeof *f->area);
    f->pending = calloc(ng, sizeof *f->pending);
    f->pending_since = malloc(ng * sizeof *f->pending_since);
    f->pending_s = calloc(ng, sizeof *f->pending_s);
    f->x = malloc(ng * sizeof *f->x);
    f->x_static = malloc(ng * sizeof *f->x_static);
    f->backlogged = malloc(ng * sizeof *f->backlogged);
    f->backlog_entitlement = malloc(ng * sizeof *f->backlog_entitlement);
    if (!f->entitlement || !f->usage || !f->usage_since || !f->area || !f->pending || !f->pending_since ||
        !f->pending_s || !f->x || !f->x_static || !f->backlogged || !f->backlog_entitlement ||
        (tree && tree->n_nodes > 0 && !copy_tree(f, tree, n_groups))) {
        gp_sim_fairness_free(f);
        return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    }
    memcpy(f->entitlement, entitlement, n_groups * sizeof *entitlement);
    for (size_t c = 0; c < cells; c++)
        f->usage_since[c] = t0;
    for (size_t g = 0; g < ng; g++)
        f->pending_since[g] = t0;
    f->hour_start = t0;
    return GP_OK;
}

static void settle_usage(gp_sim_fairness *f, size_t cell, int64_t to)
{
    f->area[cell] += (double)f->usage[cell] * (double)(to - f->usage_since[cell]);
    f->usage_since[cell] = to;
}

static void settle_pending(gp_sim_fairness *f, size_t g, int64_t to)
{
    if (f->pending[g] > 0)
        f->pending_s[g] += to - f->pending_since[g];
    f->pending_since[g] = to;
}

void gp_sim_fairness_usage(gp_sim_fairness *f, int64_t now, size_t g, int type, int64_t delta_milli)
{
    if (g >= f->n_groups || type < 0 || type >= f->n_types)
        return;
    size_t cell = g * (size_t)f->n_types + (size_t)type;
    settle_usage(f, cell, now);
    f->usage[cell] += delta_milli;
}

void gp_sim_fairness_pending(gp_sim_fairness *f, int64_t now, size_t g, int delta)
{
    if (g >= f->n_groups)
        return;
    settle_pending(f, g, now);
    f->pending[g] += delta;
}

/* Group g's dominant share over the hour just settled, and reset its cells. */
static double hour_dominant_share(gp_sim_fairness *f, size_t g)
{
    double best = 0;
    for (int t = 0; t < f->n_types; t++) {
        size_t cell = g * (size_t)f->n_types + (size_t)t;
        if (f->capacity_milli[t] > 0) {
            double share = f->area[cell] / GP_SIM_FAIR_HOUR_S / (double)f->capacity_milli[t];
            best = share > best ? share : best;
        }
        f->area[cell] = 0;
    }
    return best;
}

static bool close_hour(gp_sim_fairness *f)
{
    gp_sim_fair_hour *hours = gp_grow(f->hours, &f->cap_hours, f->n_hours + 1, sizeof *hours);
    if (!hours)
        return false;
    f->hours = hours;
    int64_t end = f->hour_start + GP_SIM_FAIR_HOUR_S;
    for (size_t g = 0; g < f->n_groups; g++) {
        for (int t = 0; t < f->n_types; t++)
            settle_usage(f, g * (size_t)f->n_types + (size_t)t, end);
        settle_pending(f, g, end);
        f->backlogged[g] = f->pending_s[g] >= GP_SIM_BACKLOG_MIN_S && f->entitlement[g] > 0;
        f->pending_s[g] = 0;
    }
    if (f->tree.n_nodes > 0)
        gp_sim_fair_tree_entitlements(&f->tree, f->n_groups, f->backlogged, f->active, f->active_sum,
                                      f->backlog_entitlement);
    else
        memcpy(f->backlog_entitlement, f->entitlement, f->n_groups * sizeof *f->entitlement);
    size_t n = 0;
    for (size_t g = 0; g < f->n_groups; g++) {
        double share = hour_dominant_share(f, g);
        if (!f->backlogged[g])
            continue;
        f->x_static[n] = share / f->entitlement[g];
        f->x[n++] = f->backlog_entitlement[g] > 0 ? share / f->backlog_entitlement[g] : 0;
    }
    f->hours[f->n_hours++] = (gp_sim_fair_hour){.start = f->hour_start, .backlogged = (int32_t)n,
                                                 .jain = n >= 2 ? gp_sim_jain(f->x, n) : -1,
                                                 .jain_static = n >= 2 ? gp_sim_jain(f->x_static, n) : -1};
    f->hour_start = end;
    return true;
}

bool gp_sim_fairness_advance(gp_sim_fairness *f, int64_t now)
{
    while (f->hour_start + GP_SIM_FAIR_HOUR_S <= now)
        if (!close_hour(f))
            return false;
    return true;
}

gp_sim_fair_hour *gp_sim_fairness_take_hours(gp_sim_fairness *f, size_t *n)
{
    gp_sim_fair_hour *h = f->hours;
    *n = f->n_hours;
    f->hours = NULL;
    f->n_hours = f->cap_hours = 0;
    return h;
}

void gp_sim_fairness_free(gp_sim_fairness *f)
{
    free(f->entitlement);
    free(f->usage);
    free(f->usage_since);
    free(f->area);
    free(f->pending);
    free(f->pending_since);
    free(f->pending_s);
    free(f->x);
    free(f->x_static);
    free(f->backlogged);
    free(f->backlog_entitlement);
    free(f->active);
    free(f->active_sum);
    gp_sim_fair_tree_free(&f->tree);
    free(f->hours);
    memset(f, 0, sizeof *f);
}

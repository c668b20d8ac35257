/* share.c - received GPU-hours against the water-filled fair share (see share.h).
 *
 * The tree is flattened once: nodes in an order where parents come first,
 * and each node's children in one array.  A fill sums the demand under
 * every node (children first), then hands each node's allocation to its
 * children (and its own group) with gp_sim_water_fill, parents first.
 */
#include "sim/share.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

double gp_sim_water_fill(size_t n, const double *weight, const double *demand, double capacity, double *out)
{
    double left = capacity > 0 ? capacity : 0, given = 0;
    size_t active = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = weight[i] > 0 && demand[i] > 0 ? -1 : 0; /* -1: still wants more */
        active += out[i] < 0;
    }
    while (active > 0 && left > 0) {
        double wsum = 0;
        for (size_t i = 0; i < n; i++)
            wsum += out[i] < 0 ? weight[i] : 0;
        double level = left / wsum;
        bool capped = false;
        for (size_t i = 0; i < n; i++)
            if (out[i] < 0 && demand[i] <= level * weight[i]) {
                out[i] = demand[i];
                left -= demand[i];
                given += demand[i];
                active--;
                capped = true;
            }
        if (capped)
            continue;
        for (size_t i = 0; i < n; i++)
            if (out[i] < 0) {
                out[i] = level * weight[i];
                given += out[i];
            }
        left = active = 0;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = out[i] < 0 ? 0 : out[i];
    return given;
}

/* ---- the tree ---- */

static int32_t depth_of(const gp_sim_fair_tree *tree, int32_t k)
{
    int32_t d = 0;
    for (int32_t a = tree->parent[k]; a >= 0 && d <= (int32_t)tree->n_nodes; a = tree->parent[a])
        d++;
    return d;
}

/* st->order: nodes by depth (a counting sort; parents first). */
static void order_by_depth(gp_sim_share_tree *st, const gp_sim_fair_tree *tree, int32_t *depth, size_t *count)
{
    size_t n = st->n_nodes;
    memset(count, 0, (n + 2) * sizeof *count);
    for (size_t k = 0; k < n; k++) {
        depth[k] = depth_of(tree, (int32_t)k);
        count[depth[k] + 1]++;
    }
    for (size_t d = 1; d < n + 2; d++)
        count[d] += count[d - 1];
    for (size_t k = 0; k < n; k++)
        st->order[count[depth[k]]++] = (int32_t)k;
}

/* st->child_start / st->child: the children of every node and of the top (index n_nodes). */
static void list_children(gp_sim_share_tree *st, const gp_sim_fair_tree *tree)
{
    size_t n = st->n_nodes;
    memset(st->child_start, 0, (n + 2) * sizeof *st->child_start);
    for (size_t k = 0; k < n; k++)
        st->child_start[(tree->parent[k] < 0 ? (int32_t)n : tree->parent[k]) + 1]++;
    for (size_t k = 1; k < n + 2; k++)
        st->child_start[k] += st->child_start[k - 1];
    for (size_t i = 0; i < n; i++) { /* in order, so each list is too */
        int32_t k = st->order[i], p = tree->parent[k] < 0 ? (int32_t)n : tree->parent[k];
        int32_t filled = 0;
        while (st->child[st->child_start[p] + filled] >= 0)
            filled++;
        st->child[st->child_start[p] + filled] = k;
    }
}

gp_err gp_sim_share_tree_init(gp_sim_share_tree *st, const gp_sim_fair_tree *tree, size_t n_groups, gp_error *err)
{
    memset(st, 0, sizeof *st);
    size_t n = tree ? tree->n_nodes : 0, slots = n + n_groups + 2;
    st->n_nodes = n;
    st->n_groups = n_groups;
    st->order = malloc((n + 1) * sizeof *st->order);
    st->child_start = malloc((n + 2) * sizeof *st->child_start);
    st->child = malloc((n + 1) * sizeof *st->child);
    st->node_group = malloc((n + 1) * sizeof *st->node_group);
    st->weight = malloc((n + 1) * sizeof *st->weight);
    st->group_node = malloc((n_groups + 1) * sizeof *st->group_node);
    st->sub = malloc((n + 1) * sizeof *st->sub);
    st->alloc = malloc((n + 1) * sizeof *st->alloc);
    st->w_scratch = malloc(slots * sizeof *st->w_scratch);
    st->d_scratch = malloc(slots * sizeof *st->d_scratch);
    st->o_scratch = malloc(slots * sizeof *st->o_scratch);
    int32_t *depth = malloc((n + 1) * sizeof *depth);
    size_t *count = malloc((n + 2) * sizeof *count);
    if (!st->order || !st->child_start || !st->child || !st->node_group || !st->weight || !st->group_node ||
        !st->sub || !st->alloc || !st->w_scratch || !st->d_scratch || !st->o_scratch || !depth || !count) {
        free(depth);
        free(count);
        gp_sim_share_tree_free(st);
        return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        st->child[k] = st->node_group[k] = -1;
        st->weight[k] = tree->weight[k];
    }
    for (size_t g = 0; g < n_groups; g++) {
        st->group_node[g] = n ? tree->group_node[g] : -1;
        if (st->group_node[g] >= 0)
            st->node_group[st->group_node[g]] = (int32_t)g;
    }
    if (n) {
        order_by_depth(st, tree, depth, count);
        list_children(st, tree);
    } else {
        st->child_start[0] = st->child_start[1] = 0;
    }
    free(depth);
    free(count);
    return GP_OK;
}

void gp_sim_share_tree_free(gp_sim_share_tree *st)
{
    free(st->order);
    free(st->child_start);
    free(st->child);
    free(st->node_group);
    free(st->weight);
    free(st->group_node);
    free(st->sub);
    free(st->alloc);
    free(st->w_scratch);
    free(st->d_scratch);
    free(st->o_scratch);
    memset(st, 0, sizeof *st);
}

/* Share `capacity` among node p's children (p = n_nodes: the top, with the
 * groups outside the tree) and p's own group; write the children's
 * allocations to st->alloc and the groups' to out. */
static void fill_node(gp_sim_share_tree *st, int32_t p, const double *demand, double capacity, double *out)
{
    size_t m = 0, n = st->n_nodes;
    for (int32_t c = st->child_start[p]; c < st->child_start[p + 1]; c++) {
        st->w_scratch[m] = st->weight[st->child[c]];
        st->d_scratch[m++] = st->sub[st->child[c]];
    }
    size_t own = m;
    if (p < (int32_t)n && st->node_group[p] >= 0) {
        st->w_scratch[m] = st->weight[p];
        st->d_scratch[m++] = demand[st->node_group[p]];
    }
    size_t outside = m;
    for (size_t g = 0; p == (int32_t)n && g < st->n_groups; g++)
        if (st->group_node[g] < 0) {
            st->w_scratch[m] = 1;
            st->d_scratch[m++] = demand[g];
        }
    gp_sim_water_fill(m, st->w_scratch, st->d_scratch, capacity, st->o_scratch);
    size_t i = 0;
    for (int32_t c = st->child_start[p]; c < st->child_start[p + 1]; c++)
        st->alloc[st->child[c]] = st->o_scratch[i++];
    if (own < outside)
        out[st->node_group[p]] = st->o_scratch[own];
    for (size_t g = 0, k = outside; p == (int32_t)n && g < st->n_groups; g++)
        if (st->group_node[g] < 0)
            out[g] = st->o_scratch[k++];
}

void gp_sim_share_tree_fill(gp_sim_share_tree *st, const double *demand, double capacity, double *out)
{
    size_t n = st->n_nodes;
    double total = 0;
    for (size_t g = 0; g < st->n_groups; g++)
        total += demand[g];
    if (total <= capacity) { /* no contention: every node gets the demand under it */
        memcpy(out, demand, st->n_groups * sizeof *out);
        return;
    }
    for (size_t k = 0; k < n; k++)
        st->sub[k] = st->node_group[k] >= 0 ? demand[st->node_group[k]] : 0;
    for (size_t i = n; i-- > 0;) { /* children before parents */
        int32_t k = st->order[i];
        for (int32_t c = st->child_start[k]; c < st->child_start[k + 1]; c++)
            st->sub[k] += st->sub[st->child[c]];
    }
    for (size_t g = 0; g < st->n_groups; g++)
        out[g] = 0;
    fill_node(st, (int32_t)n, demand, capacity, out);
    for (size_t i = 0; i < n; i++) {
        int32_t k = st->order[i];
        fill_node(st, k, demand, st->alloc[k], out);
    }
}

/* ---- the tracker ---- */

gp_err gp_sim_share_init(gp_sim_share *s, size_t n_groups, const gp_sim_fair_tree *tree, int n_types,
                         const int64_t *capacity_milli, int64_t t0, gp_error *err)
{
    memset(s, 0, sizeof *s);
    s->n_groups = n_groups;
    s->n_types = n_types < GP_MAX_GPU_TYPES ? (n_types > 0 ? n_types : 0) : GP_MAX_GPU_TYPES;
    for (int t = 0; t < s->n_types; t++)
        s->capacity_milli[t] = (double)capacity_milli[t];
    size_t ng = n_groups ? n_groups : 1, cells = ng * (size_t)(s->n_types ? s->n_types : 1);
    gp_err rc = gp_sim_share_tree_init(&s->tree, tree, n_groups, err);
    if (rc)
        return rc;
    s->usage = calloc(cells, sizeof *s->usage);
    s->pending = calloc(cells, sizeof *s->pending);
    s->fair = calloc(cells, sizeof *s->fair);
    s->filled = calloc(cells, sizeof *s->filled);
    s->demand = calloc(ng, sizeof *s->demand);
    s->one = calloc(ng, sizeof *s->one);
    s->received_day = calloc(ng, sizeof *s->received_day);
    s->fair_day = calloc(ng, sizeof *s->fair_day);
    s->res.n_groups = n_groups;
    s->res.received_h = calloc(ng, sizeof *s->res.received_h);
    s->res.fair_h = calloc(ng, sizeof *s->res.fair_h);
    if (!s->usage || !s->pending || !s->fair || !s->filled || !s->demand || !s->one || !s->received_day || !s->fair_day ||
        !s->res.received_h || !s->res.fair_h) {
        gp_sim_share_free(s);
        return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    }
    s->since = s->day_start = t0;
    return GP_OK;
}

/* The fair shares of the demand now, per type whose demand changed
 * since the last fill (a bind moves a job's GPUs from pending to usage,
 * often on the same type: no change). */
static void recompute(gp_sim_share *s)
{
    size_t nt = (size_t)s->n_types;
    for (size_t t = 0; t < nt; t++) {
        bool changed = false;
        for (size_t g = 0; g < s->n_groups; g++) { /* below half a milli-GPU: rounding of the split, none */
            double d = s->usage[g * nt + t] + s->pending[g * nt + t];
            s->demand[g] = d < 0.5 ? 0 : d;
            changed = changed || s->demand[g] < s->filled[g * nt + t] - 0.5 ||
                      s->demand[g] > s->filled[g * nt + t] + 0.5;
        }
        if (!changed)
            continue;
        gp_sim_share_tree_fill(&s->tree, s->demand, s->capacity_milli[t], s->one);
        for (size_t g = 0; g < s->n_groups; g++) {
            s->filled[g * nt + t] = s->demand[g];
            s->fair[g * nt + t] = s->one[g];
        }
    }
    s->dirty = false;
}

/* Add the state's GPU-seconds from s->since to `to`. */
static void integrate(gp_sim_share *s, int64_t to)
{
    if (to <= s->since)
        return;
    if (s->dirty)
        recompute(s);
    double dt = (double)(to - s->since);
    size_t nt = (size_t)s->n_types;
    for (size_t g = 0; g < s->n_groups; g++)
        for (size_t t = 0; t < nt; t++) {
            s->received_day[g] += s->usage[g * nt + t] * dt;
            s->fair_day[g] += s->fair[g * nt + t] * dt;
        }
    s->since = to;
}

void gp_sim_share_usage(gp_sim_share *s, int64_t now, size_t g, int type, int64_t delta_milli)
{
    if (g >= s->n_groups || type < 0 || type >= s->n_types)
        return;
    integrate(s, now);
    s->usage[g * (size_t)s->n_types + (size_t)type] += (double)delta_milli;
    s->dirty = true;
}

void gp_sim_share_pending(gp_sim_share *s, int64_t now, size_t g, uint32_t type_bits, int64_t milli, int sign)
{
    int accepted = 0;
    for (int t = 0; t < s->n_types; t++)
        accepted += (type_bits >> t & 1u) && s->capacity_milli[t] > 0;
    if (g >= s->n_groups || accepted == 0)
        return;
    integrate(s, now);
    for (int t = 0; t < s->n_types; t++)
        if ((type_bits >> t & 1u) && s->capacity_milli[t] > 0)
            s->pending[g * (size_t)s->n_types + (size_t)t] += sign * (double)milli / accepted;
    s->dirty = true;
}

/* Move the day's GPU-seconds into the run's totals (and into a new day
 * when `day`); false when out of memory. */
static bool close_day(gp_sim_share *s, bool day)
{
    gp_sim_share_result *r = &s->res;
    size_t ng = s->n_groups ? s->n_groups : 1;
    if (day) {
        gp_sim_share_day *days = gp_grow(r->days, &s->cap_days, r->n_days + 1, sizeof *days);
        double *rec = days ? realloc(r->day_received_h, (r->n_days + 1) * ng * sizeof *rec) : NULL;
        if (rec)
            r->day_received_h = rec;
        double *fair = rec ? realloc(r->day_fair_h, (r->n_days + 1) * ng * sizeof *fair) : NULL;
        if (days)
            r->days = days;
        if (!fair)
            return false;
        r->day_fair_h = fair;
    }
    double *ratio = s->one; /* scratch: the teams' ratios */
    size_t teams = 0;
    for (size_t g = 0; g < s->n_groups; g++) {
        double rec_h = s->received_day[g] / 1000.0 / 3600.0, fair_h = s->fair_day[g] / 1000.0 / 3600.0;
        r->received_h[g] += rec_h;
        r->fair_h[g] += fair_h;
        if (day) {
            r->day_received_h[r->n_days * ng + g] = rec_h;
            r->day_fair_h[r->n_days * ng + g] = fair_h;
        }
        if (fair_h > 1e-9)
            ratio[teams++] = rec_h / fair_h;
        s->received_day[g] = s->fair_day[g] = 0;
    }
    if (day)
        r->days[r->n_days++] = (gp_sim_share_day){.start = s->day_start, .teams = (int32_t)teams,
                                                  .jain = teams >= 2 ? gp_sim_jain(ratio, teams) : -1};
    return true;
}

bool gp_sim_share_advance(gp_sim_share *s, int64_t now)
{
    while (s->day_start + GP_SIM_SHARE_DAY_S <= now) {
        integrate(s, s->day_start + GP_SIM_SHARE_DAY_S);
        if (!close_day(s, true))
            return false;
        s->day_start += GP_SIM_SHARE_DAY_S;
    }
    integrate(s, now);
    return true;
}

bool gp_sim_share_take(gp_sim_share *s, int64_t end, gp_sim_share_result *out)
{
    bool ok = gp_sim_share_advance(s, end);
    if (ok)
        close_day(s, false); /* the partial last day: the run's totals only */
    *out = s->res;
    memset(&s->res, 0, sizeof s->res);
    s->cap_days = 0;
    return ok;
}

void gp_sim_share_result_free(gp_sim_share_result *r)
{
    free(r->days);
    free(r->received_h);
    free(r->fair_h);
    free(r->day_received_h);
    free(r->day_fair_h);
    memset(r, 0, sizeof *r);
}

void gp_sim_share_free(gp_sim_share *s)
{
    gp_sim_share_tree_free(&s->tree);
    free(s->usage);
    free(s->pending);
    free(s->fair);
    free(s->filled);
    free(s->demand);
    free(s->one);
    free(s->received_day);
    free(s->fair_day);
    gp_sim_share_result_free(&s->res);
    memset(s, 0, sizeof *s);
}

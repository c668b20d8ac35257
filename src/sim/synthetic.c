/* synthetic.c - the product-scale synthetic world (see synthetic.h).
 *
 * Generation is in three independent random streams derived from the seed
 * (fleet layout is deterministic; tenants, arrivals, job shapes), so
 * changing, say, the job mix does not reshuffle the team sizes.
 *
 * Worked example with the defaults: 50,000 GPUs = 6,250 nodes of 8: 3,125
 * H100 (49 blocks of 64 nodes), 1,875 A100, 1,250 L40S of which 875 MPS and
 * 125 time-sliced.  300 teams in 10 orgs, each with 2 projects (the
 * leaves); team guarantees are Zipf(1.0)-skewed and add up to 80 % of each
 * GPU type.  30,000 jobs a day: 20 % of them in bursts of ~20 from one team
 * within a minute; 5 % gangs of 8-512 GPUs (H100 : A100 as 25 : 15, median
 * 8 h), 45 % single-node training (median 2 h), 30 % inference services of
 * 1-4 MPS shares of 25 or 50 % (median 8 h), 20 % time-sliced notebooks
 * (median 3 h); durations log-normal with sigma 1.0, capped at 14 days.
 * With --synth-a100-mig F, a fraction F of the A100 nodes is MIG-partitioned
 * and a fraction F of the inference services runs on them as 1g.10gb or
 * 3g.40gb instances instead of MPS shares (default 0: no MIG).
 * Offered load over 30 days: about 0.8 of the H100 and A100 GPUs and 0.5
 * of the L40S (0.75 of the fleet; MPS GPUs about 0.6); with shares 0 the
 * L40S are overloaded.
 */
#include "sim/synthetic.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim/rng.h"
#include "sim/strbuf.h"

typedef struct param_def {
    const char *name;
    size_t offset;
    double min, max;
    const char *help;
} param_def;

#define P(field) offsetof(gp_synth_params, field)
static const param_def params[] = {
    {"days", P(days), 0.01, 365, "simulated days of arrivals"},
    {"gpus", P(gpus), 8, 1e6, "GPUs in the fleet (whole nodes)"},
    {"share-h100", P(share_h100), 0, 1, "fraction of nodes that are H100"},
    {"share-a100", P(share_a100), 0, 1, "fraction of nodes that are A100 (the rest L40S)"},
    {"gpus-per-node", P(gpus_per_node), 1, GP_MAX_GPUS_PER_NODE, "GPUs per node"},
    {"nodes-per-block", P(nodes_per_block), 1, 4096, "nodes per fabric block"},
    {"l40s-mps", P(l40s_mps), 0, 1, "fraction of L40S nodes shared by MPS"},
    {"l40s-timeslice", P(l40s_timeslice), 0, 1, "fraction of L40S nodes time-sliced"},
    {"a100-mig", P(a100_mig), 0, 1, "fraction of A100 nodes MIG-partitioned, and of inference jobs on them"},
    {"orgs", P(orgs), 1, 1000, "organisations (top-level tenants)"},
    {"teams", P(teams), 1, 10000, "teams (spread over the orgs; they hold the guarantees)"},
    {"projects-per-team", P(projects_per_team), 1, 16, "projects per team (the leaves jobs go to)"},
    {"guaranteed", P(guaranteed), 0, 1, "sum of team guarantees as a fraction of each GPU type"},
    {"team-skew", P(team_skew), 0, 4, "Zipf exponent of team sizes (0 = equal)"},
    {"jobs-per-day", P(jobs_per_day), 1, 1e7, "mean arrivals per day"},
    {"diurnal", P(diurnal), 0, 1, "amplitude of the daily arrival cycle"},
    {"burst-fraction", P(burst_fraction), 0, 1, "fraction of jobs that arrive in team bursts"},
    {"burst-size", P(burst_size), 1, 10000, "mean jobs per burst"},
    {"mix-gang", P(mix_gang), 0, 1, "share of multi-node training gangs"},
    {"mix-single", P(mix_single), 0, 1, "share of single-node training jobs"},
    {"mix-inference", P(mix_inference), 0, 1, "share of inference services"},
    {"mix-notebook", P(mix_notebook), 0, 1, "share of interactive notebooks"},
    {"gang-max", P(gang_max), 8, 8 * GP_MAX_REPLICAS, "largest gang in GPUs (8 x a power of two)"},
    {"gang-hours", P(gang_hours), 0.01, 1e4, "median duration of gangs, hours"},
    {"single-hours", P(single_hours), 0.01, 1e4, "median duration of single-node training, hours"},
    {"inference-hours", P(inference_hours), 0.01, 1e4, "median duration of inference services, hours"},
    {"notebook-hours", P(notebook_hours), 0.01, 1e4, "median duration of notebooks, hours"},
    {"sigma", P(sigma), 0, 5, "log-normal sigma of durations (the tail)"},
    {"max-days", P(max_days), 0.01, 365, "longest duration, days"},
    {"grace", P(grace_s), 0, GP_GRACE_MAX_S, "checkpoint grace of training jobs, seconds"},
    {"shares", P(shares), 0, 1, "1: inference and notebooks use GPU shares; 0: whole GPUs"},
};
#undef P
enum { N_PARAMS = sizeof params / sizeof params[0] };

gp_synth_params gp_synth_defaults(void)
{
    gp_synth_params p = {
        .seed = 1,         .days = 30,           .gpus = 50000,         .share_h100 = 0.5,
        .share_a100 = 0.3, .gpus_per_node = 8,   .nodes_per_block = 64, .l40s_mps = 0.7,
        .l40s_timeslice = 0.1, .orgs = 10,       .teams = 300,          .projects_per_team = 2,
        .guaranteed = 0.8, .team_skew = 1.0,     .jobs_per_day = 30000, .diurnal = 0.5,
        .burst_fraction = 0.2, .burst_size = 20, .mix_gang = 0.05,      .mix_single = 0.45,
        .mix_inference = 0.3, .mix_notebook = 0.2, .gang_max = 512,     .gang_hours = 8,
        .single_hours = 2, .inference_hours = 8, .notebook_hours = 3,  .sigma = 1.0,
        .max_days = 14,    .grace_s = 120,       .shares = 1,
    };
    return p;
}

bool gp_synth_set(gp_synth_params *p, const char *name, const char *value)
{
    char *end;
    if (strcmp(name, "seed") == 0) {
        unsigned long long v = strtoull(value, &end, 10);
        if (value[0] == '\0' || value[0] == '-' || *end != '\0')
            return false;
        p->seed = v;
        return true;
    }
    for (int i = 0; i < N_PARAMS; i++) {
        if (strcmp(params[i].name, name) != 0)
            continue;
        double v = strtod(value, &end);
        if (value[0] == '\0' || *end != '\0' || !(v >= params[i].min && v <= params[i].max))
            return false;
        *(double *)((char *)p + params[i].offset) = v;
        return true;
    }
    return false;
}

void gp_synth_describe(const gp_synth_params *p, FILE *out)
{
    fprintf(out, "seed=%llu", (unsigned long long)p->seed);
    for (int i = 0; i < N_PARAMS; i++)
        fprintf(out, " %s=%g", params[i].name, *(const double *)((const char *)p + params[i].offset));
    fputc('\n', out);
}

void gp_synth_help(FILE *out)
{
    gp_synth_params d = gp_synth_defaults();
    fprintf(out, "  --synth-seed N                 seed of the synthetic world (default: --seed)\n");
    for (int i = 0; i < N_PARAMS; i++)
        fprintf(out, "  --synth-%-22s %s (default %g)\n", params[i].name, params[i].help,
                *(const double *)((const char *)&d + params[i].offset));
}

/* ---- fleet ---- */

typedef struct fleet_shape {
    int nodes[3];      /* H100, A100, L40S */
    int gpus_per_node;
} fleet_shape;

static const char *const type_names[3] = {"H100", "A100", "L40S"};
static const int64_t type_mem_mib[3] = {81920, 81920, 46080};

static fleet_shape shape_of(const gp_synth_params *p)
{
    fleet_shape s;
    s.gpus_per_node = (int)p->gpus_per_node;
    int total = (int)ceil(p->gpus / s.gpus_per_node);
    s.nodes[0] = (int)lround(total * p->share_h100);
    s.nodes[1] = (int)lround(total * p->share_a100);
    if (s.nodes[0] + s.nodes[1] > total)
        s.nodes[1] = total - s.nodes[0];
    s.nodes[2] = total - s.nodes[0] - s.nodes[1];
    return s;
}

/* Entries of `count` nodes in blocks of nodes_per_block, one sharing mode. */
static void fleet_entries(gp_strbuf *b, const gp_synth_params *p, const fleet_shape *s, int type, gp_sharing mode,
                          int count, int *block_no)
{
    int per_block = (int)p->nodes_per_block;
    for (int done = 0; done < count; done += per_block) {
        int n = count - done < per_block ? count - done : per_block;
        gp_strbuf_printf(b,
                         "  - {name: %s-b%03d, count: %d, zone: z%d, block: %s-b%03d, gpu_type: %s, gpus: %d, "
                         "gpu_mem_mib: %lld, cpu_millis: %d, mem_mib: %d, sharing: %s}\n",
                         type_names[type], *block_no, n, *block_no % 3, type_names[type], *block_no,
                         type_names[type], s->gpus_per_node, (long long)type_mem_mib[type],
                         24000 * s->gpus_per_node, 262144 * s->gpus_per_node, gp_sharing_name(mode));
        (*block_no)++;
    }
}

static char *fleet_yaml(const gp_synth_params *p, const fleet_shape *s)
{
    gp_strbuf b = {0};
    gp_strbuf_printf(&b, "# synthetic fleet (gpupool-sim, seed %llu)\nnodes:\n", (unsigned long long)p->seed);
    int block_no = 0;
    int mps = (int)lround(s->nodes[2] * p->l40s_mps), ts = (int)lround(s->nodes[2] * p->l40s_timeslice);
    if (mps + ts > s->nodes[2])
        ts = s->nodes[2] - mps;
    fleet_entries(&b, p, s, 0, GP_SHARING_EXCLUSIVE, s->nodes[0], &block_no);
    int mig = (int)lround(s->nodes[1] * p->a100_mig);
    fleet_entries(&b, p, s, 1, GP_SHARING_EXCLUSIVE, s->nodes[1] - mig, &block_no);
    fleet_entries(&b, p, s, 1, GP_SHARING_MIG, mig, &block_no);
    fleet_entries(&b, p, s, 2, GP_SHARING_EXCLUSIVE, s->nodes[2] - mps - ts, &block_no);
    fleet_entries(&b, p, s, 2, GP_SHARING_MPS, mps, &block_no);
    fleet_entries(&b, p, s, 2, GP_SHARING_TIMESLICE, ts, &block_no);
    return gp_strbuf_take(&b);
}

/* ---- tenants ---- */

typedef struct world {
    const gp_synth_params *p;
    fleet_shape shape;
    int teams;
    double *team_weight;   /* Zipf weight, shuffled over teams */
    double *team_cdf;      /* for choosing a team by weight */
    uint16_t *leaf;        /* trace tenant index of each team's projects: teams x projects */
    int projects;
} world;

static void team_path(char *out, size_t cap, const world *w, int team)
{
    snprintf(out, cap, "org%02d/team%03d", team % (int)w->p->orgs, team);
}

static bool make_teams(world *w, gp_rng *r)
{
    w->teams = (int)w->p->teams;
    w->projects = (int)w->p->projects_per_team;
    w->team_weight = calloc((size_t)w->teams, sizeof *w->team_weight);
    w->team_cdf = calloc((size_t)w->teams, sizeof *w->team_cdf);
    w->leaf = calloc((size_t)w->teams * (size_t)w->projects, sizeof *w->leaf);
    uint32_t *order = calloc((size_t)w->teams, sizeof *order);
    if (!w->team_weight || !w->team_cdf || !w->leaf || !order) {
        free(order);
        return false;
    }
    for (int i = 0; i < w->teams; i++)
        order[i] = (uint32_t)i;
    gp_rng_shuffle_u32(r, order, (size_t)w->teams);
    double sum = 0;
    for (int rank = 0; rank < w->teams; rank++) {
        w->team_weight[order[rank]] = 1.0 / pow(rank + 1, w->p->team_skew);
        sum += 1.0 / pow(rank + 1, w->p->team_skew);
    }
    double acc = 0;
    for (int i = 0; i < w->teams; i++) {
        w->team_weight[i] /= sum;
        acc += w->team_weight[i];
        w->team_cdf[i] = acc;
    }
    free(order);
    return true;
}

/* Team guarantee of one type in whole GPUs. */
static int64_t team_guarantee(const world *w, int team, int type)
{
    double gpus = (double)w->shape.nodes[type] * w->shape.gpus_per_node;
    return (int64_t)floor(gpus * w->p->guaranteed * w->team_weight[team]);
}

static char *tenants_yaml(world *w, gp_trace *t)
{
    gp_strbuf b = {0};
    gp_strbuf_printf(&b, "# synthetic tenants (gpupool-sim, seed %llu)\ntenants:\n",
                     (unsigned long long)w->p->seed);
    int orgs = (int)w->p->orgs;
    for (int o = 0; o < orgs; o++) {
        int64_t sum[3] = {0, 0, 0};
        for (int team = o; team < w->teams; team += orgs)
            for (int ty = 0; ty < 3; ty++)
                sum[ty] += team_guarantee(w, team, ty);
        gp_strbuf_printf(&b, "  - {path: org%02d, guarantee: {gpu: {H100: %lld, A100: %lld, L40S: %lld}}}\n", o,
                         (long long)sum[0], (long long)sum[1], (long long)sum[2]);
        for (int team = o; team < w->teams; team += orgs) {
            char path[GP_PATH_MAX];
            team_path(path, sizeof path, w, team);
            gp_strbuf_printf(&b, "  - {path: %s, guarantee: {gpu: {H100: %lld, A100: %lld, L40S: %lld}}}\n", path,
                             (long long)team_guarantee(w, team, 0), (long long)team_guarantee(w, team, 1),
                             (long long)team_guarantee(w, team, 2));
            for (int pr = 0; pr < w->projects; pr++) {
                char leaf[GP_PATH_MAX + 8];
                snprintf(leaf, sizeof leaf, "%s/p%d", path, pr);
                gp_strbuf_printf(&b, "  - {path: %s}\n", leaf);
                if (!gp_trace_tenant(t, leaf, &w->leaf[team * w->projects + pr]))
                    b.oom = true;
            }
        }
    }
    return gp_strbuf_take(&b);
}

/* ---- jobs ---- */

enum { KIND_GANG, KIND_SINGLE, KIND_INFERENCE, KIND_NOTEBOOK };

static int pick_team(const world *w, gp_rng *r)
{
    double u = gp_rng_uniform(r);
    int lo = 0, hi = w->teams - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (w->team_cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int pick_kind(const gp_synth_params *p, gp_rng *r)
{
    double mix[4] = {p->mix_gang, p->mix_single, p->mix_inference, p->mix_notebook};
    double total = mix[0] + mix[1] + mix[2] + mix[3], u = gp_rng_uniform(r) * total;
    for (int k = 0; k < 3; k++) {
        if (u < mix[k])
            return k;
        u -= mix[k];
    }
    return KIND_NOTEBOOK;
}

static int64_t draw_duration(const gp_synth_params *p, gp_rng *r, double median_hours)
{
    double d = gp_rng_lognormal(r, log(median_hours * 3600.0), p->sigma);
    double cap = p->max_days * 86400.0;
    return (int64_t)(d < 60 ? 60 : d > cap ? cap : d);
}

/* An inference service on MIG A100s (--synth-a100-mig): its 25 % share
 * becomes a 1g.10gb instance (142 milli-GPUs), its 50 % a 3g.40gb (428). */
static void mig_inference(gp_trace_job *j)
{
    bool small = j->gpu_milli <= 250;
    snprintf(j->mig_profile, sizeof j->mig_profile, "%s", small ? "1g.10gb" : "3g.40gb");
    j->gpu_milli = small ? 142 : 428;
    j->isolation = GP_ISO_MIG;
    j->type_mask = 2;
}

/* Shape, types and duration of one job of `kind` (tenant and time are set by the caller). */
static void job_shape(const world *w, gp_rng *r, int kind, gp_trace_job *j)
{
    const gp_synth_params *p = w->p;
    memset(j, 0, sizeof *j);
    j->replicas = 1;
    j->isolation = GP_ISO_EXCLUSIVE;
    j->topology = GP_TOPO_ANY;
    if (kind == KIND_GANG) {
        int steps = (int)floor(log2(p->gang_max / 8.0)), k = 0;
        while (k < steps && gp_rng_uniform(r) < 0.5)
            k++;
        j->gpus = w->shape.gpus_per_node;
        j->replicas = (8 << k) / j->gpus > 0 ? (8 << k) / j->gpus : 1;
        j->topology = j->replicas > 1 ? GP_TOPO_BLOCK : GP_TOPO_NVLINK;
        j->type_mask = gp_rng_uniform(r) < 0.625 ? 1 : 2; /* H100 : A100 as 25,000 : 15,000 */
        j->kind = GP_KIND_TRAINING;
        j->grace_s = (int64_t)p->grace_s;
        j->duration = draw_duration(p, r, p->gang_hours);
    } else if (kind == KIND_SINGLE) {
        static const int sizes[4] = {1, 2, 4, 8};
        double u = gp_rng_uniform(r);
        j->gpus = sizes[u < 0.5 ? 0 : u < 0.7 ? 1 : u < 0.85 ? 2 : 3];
        if (j->gpus > w->shape.gpus_per_node)
            j->gpus = w->shape.gpus_per_node;
        j->type_mask = j->gpus == 1 && gp_rng_uniform(r) < 0.3 ? 4 : 3;
        j->kind = GP_KIND_TRAINING;
        j->grace_s = (int64_t)p->grace_s;
        j->duration = draw_duration(p, r, p->single_hours);
    } else if (kind == KIND_INFERENCE) {
        j->replicas = 1 << gp_rng_below(r, 3);
        j->gpus = 1;
        j->gpu_milli = p->shares > 0 ? (gp_rng_uniform(r) < 0.5 ? 250 : 500) : 0;
        j->isolation = p->shares > 0 ? GP_ISO_MPS : GP_ISO_EXCLUSIVE;
        j->type_mask = 4;
        j->kind = GP_KIND_INFERENCE;
        j->priority = 100;
        j->grace_s = 30;
        j->duration = draw_duration(p, r, p->inference_hours);
        if (p->a100_mig > 0 && p->shares > 0 && gp_rng_uniform(r) < p->a100_mig)
            mig_inference(j);
    } else {
        j->gpus = 1;
        j->gpu_milli = p->shares > 0 ? 250 : 0;
        j->isolation = p->shares > 0 ? GP_ISO_TIMESLICE : GP_ISO_EXCLUSIVE;
        j->type_mask = 4;
        j->kind = GP_KIND_INTERACTIVE;
        j->priority = 50;
        j->duration = draw_duration(p, r, p->notebook_hours);
    }
    int gpus = j->gpu_milli ? 1 : j->gpus;
    j->cpu_millis = (j->gpu_milli ? 4000 : 12000) * (int64_t)gpus;
    j->mem_mib = (j->gpu_milli ? 32768 : 98304) * (int64_t)gpus;
}

/* An arrival time in [0, span) following the daily cycle (thinning). */
static int64_t draw_time(const gp_synth_params *p, gp_rng *r, double span)
{
    for (;;) {
        double t = gp_rng_uniform(r) * span;
        double rate = 1.0 + p->diurnal * sin(6.283185307179586 * (t / 86400.0 - 0.375));
        if (gp_rng_uniform(r) * (1.0 + p->diurnal) < rate)
            return (int64_t)t;
    }
}

static gp_err add_job(world *w, gp_trace *t, gp_rng *r, gp_trace_job *j, int team, int64_t time, gp_error *err)
{
    j->tenant = w->leaf[team * w->projects + (int)gp_rng_below(r, (uint64_t)w->projects)];
    j->submit = time;
    return gp_trace_add(t, j, err);
}

static gp_err make_jobs(world *w, gp_trace *t, gp_rng *r, gp_error *err)
{
    const gp_synth_params *p = w->p;
    double span = p->days * 86400.0;
    int64_t total = (int64_t)llround(p->jobs_per_day * p->days);
    int64_t in_bursts = (int64_t)llround((double)total * p->burst_fraction);
    gp_trace_job j;
    gp_err rc = GP_OK;
    for (int64_t i = 0; rc == GP_OK && i < total - in_bursts; i++) {
        job_shape(w, r, pick_kind(p, r), &j);
        rc = add_job(w, t, r, &j, pick_team(w, r), draw_time(p, r, span), err);
    }
    /* bursts: one team, one job template, within a minute */
    for (int64_t done = 0; rc == GP_OK && done < in_bursts;) {
        int team = pick_team(w, r), kind = pick_kind(p, r);
        int64_t start = draw_time(p, r, span);
        int64_t size = 1 + (int64_t)gp_rng_exponential(r, p->burst_size - 1);
        if (size > in_bursts - done)
            size = in_bursts - done;
        job_shape(w, r, kind, &j);
        for (int64_t k = 0; rc == GP_OK && k < size; k++) {
            j.duration = draw_duration(p, r, kind == KIND_GANG ? p->gang_hours : kind == KIND_SINGLE ? p->single_hours
                                                               : kind == KIND_INFERENCE ? p->inference_hours
                                                                                        : p->notebook_hours);
            rc = add_job(w, t, r, &j, team, start + (int64_t)gp_rng_below(r, 60), err);
        }
        done += size;
    }
    return rc ? rc : gp_trace_sort(t, err);
}

gp_err gp_synth_generate(const gp_synth_params *p, gp_trace *t, char **fleet_out, char **tenants_out, gp_error *err)
{
    world w;
    memset(&w, 0, sizeof w);
    w.p = p;
    w.shape = shape_of(p);
    for (int ty = 0; ty < 3; ty++)
        if (gp_trace_type(t, type_names[ty]) != ty)
            return gp_error_set(err, GP_ERR_INVALID, "trace", "the synthetic generator needs an empty trace");
    gp_rng tenant_rng = gp_rng_new(gp_rng_derive(p->seed, 1)), job_rng = gp_rng_new(gp_rng_derive(p->seed, 2));
    gp_err rc = GP_OK;
    char *fleet = NULL, *tenants = NULL;
    if (!make_teams(&w, &tenant_rng) || !(fleet = fleet_yaml(p, &w.shape)) || !(tenants = tenants_yaml(&w, t)))
        rc = gp_error_set(err, GP_ERR_NOMEM, "trace", "out of memory generating the synthetic world");
    if (rc == GP_OK)
        rc = make_jobs(&w, t, &job_rng, err);
    free(w.team_weight);
    free(w.team_cdf);
    free(w.leaf);
    if (rc) {
        free(fleet);
        free(tenants);
        return rc;
    }
    *fleet_out = fleet;
    *tenants_out = tenants;
    return GP_OK;
}

/* main.c - gpupool-sim: command line, inputs, runs, outputs.
 *
 * Reads the fleet, the tenants and the trace, runs every policy asked for
 * (or the FGD experiment), prints a human summary and, as its last stdout
 * line, one JSON object; with --out, writes the full report, CSV files and
 * plots.  docs/simulator.md is the manual; --help lists every flag.
 *
 * Exit status: 0 done, 1 a run failed, 2 bad command line or inputs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/fleet_file.h"
#include "config/tenant_file.h"
#include "sim/capacity.h"
#include "sim/fgd_experiment.h"
#include "sim/ledger.h"
#include "sim/metrics.h"
#include "sim/observed.h"
#include "sim/plots.h"
#include "sim/progress.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/slurm_compare.h"
#include "sim/sizing.h"
#include "sim/synthetic.h"

#define MAX_TRACES 32
#define MAX_POLICIES 16
#define MAX_SEEDS 256

typedef struct cli {
    const char *fleet, *tenants, *out;
    const char *slurm_nodes; /* --slurm-nodes FILE: scontrol show nodes --oneliner */
    int64_t time_scale;      /* --time-scale K: Slurm times x K */
    const char *ledger;     /* --ledger FILE */
    int64_t epoch;          /* --epoch: the ledger's time of simulated second 0 */
    const char *traces[MAX_TRACES];
    size_t n_traces;
    char policy_list[512];
    uint64_t seed;
    bool strict, no_plots, fgd, whole_gpus_only, quiet;
    bool capacity, no_sharing;   /* --capacity, --no-sharing */
    bool no_finish_time;         /* --finish-time 0 */
    gp_sim_slo slo;
    size_t max_warnings;
    double ratio, size_percentile;
    int gpus_per_node;
    const char *gpu_type;
    char seeds_text[64];
    gp_sim_options opt;
    gp_synth_params synth;
    bool synth_seed_set;
} cli;

/* Inputs once read. */
typedef struct inputs {
    gp_trace trace;
    gp_fleet_file fleet;
    gp_tenant_file tenants;
    bool have_tenants;
    char *fleet_yaml, *tenants_yaml; /* generated (synthetic, sizing) */
    char trace_desc[1024];
} inputs;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpupool-sim --trace FORMAT:PATH [--trace ...] [--fleet FILE] [--tenants FILE]\n"
            "                   [--policy P1,P2,...] [--seed N] [--out DIR] [options]\n"
            "\n"
            "inputs\n"
            "  --trace openb:PODS.csv      Alibaba openb pod list (cluster-trace-gpu-v2023)\n"
            "  --trace itp:CLUSTER.csv     Microsoft ITP cluster (one tenant per file: itp/<name>)\n"
            "  --trace slurm:SACCT.txt     Slurm accounting (sacct --allocations --parsable2; docs/slurm.md):\n"
            "                              replayed and reported beside what Slurm did\n"
            "  --slurm-nodes FILE          scontrol show nodes --oneliner output as the fleet\n"
            "  --time-scale K              Slurm times and durations x K (a time-compressed history)\n"
            "  --trace synthetic           the product-scale generator (makes fleet and tenants too)\n"
            "  --fleet FILE                fleet file (YAML/JSON, docs/fleet-file.md)\n"
            "  --fleet openb:NODES.csv     openb node list as the fleet\n"
            "  --tenants FILE              tenant file; trace tenants it lacks get no quota\n"
            "  --size-fleet P              size fleet and guarantees from the trace: p-th percentile\n"
            "                              of each tenant's demand (docs/simulator.md, pooling)\n"
            "  --gpus-per-node N           node size for --size-fleet (default 8)\n"
            "  --gpu-type NAME             GPU type for --size-fleet (default GPU)\n"
            "  --strict                    a malformed trace row is fatal (default: reported, skipped)\n"
            "  --max-warnings N            report at most N malformed rows per file (default 20)\n"
            "\n"
            "runs\n"
            "  --policy LIST               gpupool, static, fifo, bestfit, fgd, random, dotprod,\n"
            "                              clustering, packing, spread (default gpupool)\n"
            "  --seed N                    seed of everything random (default 1; printed)\n"
            "  --quantum S                 at most one scheduling pass per S seconds (default 0: each event time)\n"
            "  --max-preemptions N         a job preempted N times is no longer a reclaim victim\n"
            "                              (default 3; 0: no cap; docs/scheduling.md)\n"
            "  --fair-share-reclaim 0|1    burstable jobs of tenants below their fair share preempt\n"
            "                              borrowers of tenants above theirs (default 0; docs/scheduling.md)\n"
            "  --checkpoint-interval S     running jobs checkpoint every S s (default 3600; 0: never)\n"
            "  --checkpoint-save S         grace needed to save a checkpoint when preempted (default 60)\n"
            "  --sample S                  time series step (default: ~400 samples)\n"
            "  --finish-time 0|1           replay each team alone on its guarantee for finish-time\n"
            "                              fairness (default 1; docs/simulator.md)\n"
            "\n"
            "the capacity experiment (docs/simulator.md, capacity)\n"
            "  --capacity                  per policy, the smallest fleet (8-GPU nodes of the fleet's mix) on\n"
            "                              which every team meets the service level; static: one cluster per team\n"
            "  --slo-p99-wait-guaranteed S p99 wait of jobs within their team's guarantee (default 600)\n"
            "  --slo-mean-wait S           mean wait of each team's jobs (default 3600)\n"
            "  --no-sharing                every GPU share becomes a whole GPU, every node unshared\n"
            "\n"
            "the FGD experiment (Weng et al., ATC'23)\n"
            "  --experiment fgd            inflate the pods, no departures, unplaceable pods fail\n"
            "  --ratio R                   inflate to R x the fleet's GPUs (default 1.3)\n"
            "  --seeds A-B | A,B,...       seeds (default 42-51)\n"
            "  --whole-gpus-only           drop CPU-only and fractional pods first\n"
            "\n"
            "outputs\n"
            "  --out DIR                   report.json, CSV files, plots (PNG, SVG), inputs used\n"
            "  --no-plots                  do not run gnuplot\n"
            "  --quiet                     no progress line on stderr (shown only on a terminal)\n"
            "  --ledger FILE               the usage ledger as JSON lines (one policy; docs/metering.md)\n"
            "  --epoch T                   ledger time of simulated second 0 (default 1793491200,\n"
            "                              2026-11-01T00:00:00Z: a 30-day run is the month 2026-11)\n"
            "\n"
            "synthetic generator (--trace synthetic)\n");
    gp_synth_help(out);
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (s[0] == '\0' || s[0] == '-' || *end != '\0' || errno)
        return false;
    *out = v;
    return true;
}

static bool parse_i64(const char *s, int64_t min, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (s[0] == '\0' || *end != '\0' || errno || v < min)
        return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (s[0] == '\0' || *end != '\0' || !(v >= min && v <= max))
        return false;
    *out = v;
    return true;
}

/* One flag with its value; false with a message when it is bad. */
static bool parse_flag(cli *c, const char *flag, const char *v)
{
    int64_t n;
    if (strcmp(flag, "--fleet") == 0)
        c->fleet = v;
    else if (strcmp(flag, "--tenants") == 0)
        c->tenants = v;
    else if (strcmp(flag, "--slurm-nodes") == 0)
        c->slurm_nodes = v;
    else if (strcmp(flag, "--time-scale") == 0)
        return parse_i64(v, 1, &c->time_scale) && c->time_scale <= 1000000;
    else if (strcmp(flag, "--out") == 0)
        c->out = v;
    else if (strcmp(flag, "--ledger") == 0)
        c->ledger = v;
    else if (strcmp(flag, "--epoch") == 0)
        return parse_i64(v, 0, &c->epoch);
    else if (strcmp(flag, "--trace") == 0 && c->n_traces < MAX_TRACES)
        c->traces[c->n_traces++] = v;
    else if (strcmp(flag, "--policy") == 0)
        snprintf(c->policy_list, sizeof c->policy_list, "%s", v);
    else if (strcmp(flag, "--seed") == 0)
        return parse_u64(v, &c->seed);
    else if (strcmp(flag, "--max-warnings") == 0 && parse_i64(v, 0, &n))
        c->max_warnings = (size_t)n;
    else if (strcmp(flag, "--quantum") == 0)
        return parse_i64(v, 0, &c->opt.quantum_s);
    else if (strcmp(flag, "--max-preemptions") == 0 && parse_i64(v, 0, &n) && n <= 1000000)
        c->opt.engine.max_preemptions = (int)n;
    else if (strcmp(flag, "--fair-share-reclaim") == 0 && parse_i64(v, 0, &n) && n <= 1)
        c->opt.engine.fair_share_reclaim = n == 1;
    else if (strcmp(flag, "--finish-time") == 0 && parse_i64(v, 0, &n) && n <= 1)
        c->no_finish_time = n == 0;
    else if (strcmp(flag, "--checkpoint-interval") == 0)
        return parse_i64(v, 0, &c->opt.checkpoint_interval_s);
    else if (strcmp(flag, "--checkpoint-save") == 0)
        return parse_i64(v, 0, &c->opt.checkpoint_save_s);
    else if (strcmp(flag, "--sample") == 0)
        return parse_i64(v, 1, &c->opt.sample_interval_s);
    else if (strcmp(flag, "--experiment") == 0 && strcmp(v, "fgd") == 0)
        c->fgd = true;
    else if (strcmp(flag, "--slo-p99-wait-guaranteed") == 0)
        return parse_i64(v, 0, &c->slo.p99_wait_guaranteed_s);
    else if (strcmp(flag, "--slo-mean-wait") == 0)
        return parse_i64(v, 0, &c->slo.mean_wait_s);
    else if (strcmp(flag, "--ratio") == 0)
        return parse_double(v, 0.01, 100, &c->ratio);
    else if (strcmp(flag, "--seeds") == 0)
        snprintf(c->seeds_text, sizeof c->seeds_text, "%s", v);
    else if (strcmp(flag, "--size-fleet") == 0)
        return parse_double(v, 0, 100, &c->size_percentile);
    else if (strcmp(flag, "--gpus-per-node") == 0 && parse_i64(v, 1, &n) && n <= GP_MAX_GPUS_PER_NODE)
        c->gpus_per_node = (int)n;
    else if (strcmp(flag, "--gpu-type") == 0)
        c->gpu_type = v;
    else if (strncmp(flag, "--synth-", 8) == 0) {
        c->synth_seed_set = c->synth_seed_set || strcmp(flag + 8, "seed") == 0;
        return gp_synth_set(&c->synth, flag + 8, v);
    } else
        return false;
    return true;
}

/* 0: run; -1: help printed; 2: bad command line (message printed). */
static int parse_cli(cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->seed = 1;
    c->max_warnings = 20;
    c->ratio = 1.3;
    c->size_percentile = -1;
    c->gpus_per_node = 8;
    c->gpu_type = "GPU";
    c->slo = (gp_sim_slo){.p99_wait_guaranteed_s = 600, .mean_wait_s = 3600};
    c->epoch = GP_SIM_LEDGER_EPOCH;
    snprintf(c->policy_list, sizeof c->policy_list, "gpupool");
    snprintf(c->seeds_text, sizeof c->seeds_text, "42-51");
    c->opt = gp_sim_options_default();
    c->synth = gp_synth_defaults();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return -1;
        }
        if (strcmp(a, "--strict") == 0 || strcmp(a, "--no-plots") == 0 || strcmp(a, "--whole-gpus-only") == 0 ||
            strcmp(a, "--quiet") == 0 || strcmp(a, "--capacity") == 0 || strcmp(a, "--no-sharing") == 0) {
            c->capacity = c->capacity || strcmp(a, "--capacity") == 0;
            c->no_sharing = c->no_sharing || strcmp(a, "--no-sharing") == 0;
            c->strict = c->strict || strcmp(a, "--strict") == 0;
            c->quiet = c->quiet || strcmp(a, "--quiet") == 0;
            c->no_plots = c->no_plots || strcmp(a, "--no-plots") == 0;
            c->whole_gpus_only = c->whole_gpus_only || strcmp(a, "--whole-gpus-only") == 0;
            continue;
        }
        if (i + 1 >= argc || !parse_flag(c, a, argv[i + 1])) {
            fprintf(stderr, "gpupool-sim: bad or unknown option %s%s%s (see --help)\n", a, i + 1 < argc ? " " : "",
                    i + 1 < argc ? argv[i + 1] : "");
            return 2;
        }
        i++;
    }
    if (c->n_traces == 0) {
        fprintf(stderr, "gpupool-sim: --trace is required (see --help)\n");
        return 2;
    }
    if (!c->synth_seed_set)
        c->synth.seed = c->seed;
    return 0;
}

/* ---- inputs ---- */

static gp_err read_traces(const cli *c, inputs *in, gp_error *err)
{
    gp_trace_read_opts ro = {.strict = c->strict, .warn = stderr, .max_warnings = c->max_warnings,
                             .time_scale = c->time_scale};
    size_t used = 0;
    for (size_t i = 0; i < c->n_traces; i++) {
        const char *spec = c->traces[i];
        gp_err rc;
        used += (size_t)snprintf(in->trace_desc + used, used < sizeof in->trace_desc ? sizeof in->trace_desc - used : 0,
                                 "%s%s", i ? "," : "", spec);
        if (strncmp(spec, "openb:", 6) == 0)
            rc = gp_trace_read_openb(&in->trace, spec + 6, &ro, err);
        else if (strncmp(spec, "itp:", 4) == 0)
            rc = gp_trace_read_itp(&in->trace, spec + 4, &ro, err);
        else if (strncmp(spec, "slurm:", 6) == 0)
            rc = gp_trace_read_slurm(&in->trace, spec + 6, &ro, err);
        else if (strcmp(spec, "synthetic") == 0 && c->n_traces == 1) {
            fprintf(stdout, "synthetic: ");
            gp_synth_describe(&c->synth, stdout);
            rc = gp_synth_generate(&c->synth, &in->trace, &in->fleet_yaml, &in->tenants_yaml, err);
        } else
            rc = gp_error_set(err, GP_ERR_INVALID, "trace",
                              "unknown trace %s (openb:PATH, itp:PATH, slurm:PATH, or synthetic alone)", spec);
        if (rc)
            return rc;
    }
    return gp_trace_sort(&in->trace, err);
}

/* The fleet and tenants: a file given on the command line wins over one
 * generated (synthetic world, --size-fleet), which is dropped. */
static gp_err read_fleet_and_tenants(const cli *c, inputs *in, gp_error *err)
{
    gp_err rc = GP_OK;
    if (c->size_percentile >= 0) {
        gp_sizing how = {.percentile = c->size_percentile, .gpus_per_node = c->gpus_per_node,
                         .gpu_type = c->gpu_type};
        free(in->fleet_yaml);
        free(in->tenants_yaml);
        if ((rc = gp_sim_size_fleet(&in->trace, &how, &in->fleet_yaml, &in->tenants_yaml, err)))
            return rc;
    }
    if (c->fleet) {
        free(in->fleet_yaml);
        in->fleet_yaml = NULL;
    }
    if (c->tenants) {
        free(in->tenants_yaml);
        in->tenants_yaml = NULL;
    }
    gp_trace_read_opts ro = {.strict = c->strict, .warn = stderr, .max_warnings = c->max_warnings};
    if (c->fleet && strncmp(c->fleet, "openb:", 6) == 0)
        rc = gp_trace_openb_fleet_yaml(c->fleet + 6, &ro, &in->fleet_yaml, NULL, err);
    else if (!c->fleet && c->slurm_nodes)
        rc = gp_trace_slurm_fleet_yaml(c->slurm_nodes, &ro, &in->fleet_yaml, NULL, err);
    if (rc == GP_OK && !c->tenants && !in->tenants_yaml && gp_sim_trace_observed(&in->trace))
        rc = gp_trace_slurm_tenants_yaml(&in->trace, &in->tenants_yaml, err);
    if (rc)
        return rc;
    if (in->fleet_yaml)
        rc = gp_fleet_file_parse(in->fleet_yaml, strlen(in->fleet_yaml), c->fleet ? c->fleet : "generated fleet",
                                 &in->fleet, err);
    else if (c->fleet)
        rc = gp_fleet_file_load(c->fleet, &in->fleet, err);
    else
        rc = gp_error_set(err, GP_ERR_INVALID, "fleet",
                          "--fleet is required (or --slurm-nodes, --size-fleet, or a synthetic trace)");
    if (rc)
        return rc;
    if (c->tenants)
        rc = gp_tenant_file_load(c->tenants, &in->tenants, err);
    else if (in->tenants_yaml)
        rc = gp_tenant_file_parse(in->tenants_yaml, strlen(in->tenants_yaml), "generated tenants", &in->tenants, err);
    in->have_tenants = rc == GP_OK && (c->tenants || in->tenants_yaml);
    if (rc == GP_OK && c->tenants && gp_sim_trace_observed(&in->trace))
        printf("slurm: %zu accounts mapped to tenants of %s\n", gp_trace_slurm_map_accounts(&in->trace, &in->tenants),
               c->tenants);
    return rc;
}

static void free_inputs(inputs *in)
{
    gp_trace_free(&in->trace);
    gp_fleet_file_free(&in->fleet);
    gp_tenant_file_free(&in->tenants);
    free(in->fleet_yaml);
    free(in->tenants_yaml);
}

static bool make_out_dir(const char *dir)
{
    if (mkdir(dir, 0755) == 0 || errno == EEXIST)
        return true;
    fprintf(stderr, "gpupool-sim: cannot create %s: %s\n", dir, strerror(errno));
    return false;
}

static void save_generated(const char *dir, const inputs *in)
{
    const char *names[2] = {"fleet.yaml", "tenants.yaml"};
    const char *texts[2] = {in->fleet_yaml, in->tenants_yaml};
    for (int i = 0; i < 2; i++) {
        if (!texts[i])
            continue;
        FILE *f = gp_sim_open_out(dir, names[i], NULL);
        if (f) {
            fputs(texts[i], f);
            fclose(f);
        }
    }
}

static size_t parse_policies(const char *list, gp_sim_policy *out)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    size_t n = 0;
    for (char *tok = strtok(buf, ","); tok && n < MAX_POLICIES; tok = strtok(NULL, ",")) {
        if (!gp_sim_policy_parse(tok, &out[n])) {
            fprintf(stderr, "gpupool-sim: unknown policy %s\n", tok);
            return 0;
        }
        n++;
    }
    return n;
}

static size_t parse_seeds(const char *text, uint64_t *seeds)
{
    uint64_t a, b;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", text);
    char *dash = strchr(buf, '-');
    if (dash) {
        *dash = '\0';
        if (!parse_u64(buf, &a) || !parse_u64(dash + 1, &b) || b < a || b - a >= MAX_SEEDS)
            return 0;
        for (uint64_t s = a; s <= b; s++)
            seeds[s - a] = s;
        return (size_t)(b - a + 1);
    }
    size_t n = 0;
    for (char *tok = strtok(buf, ","); tok && n < MAX_SEEDS; tok = strtok(NULL, ","))
        if (!parse_u64(tok, &seeds[n++]))
            return 0;
    return n;
}

/* ---- runs ---- */

static void print_run(const gp_sim_result *r, const gp_trace *t, const gp_sim_dedicated *d)
{
    gp_sim_metrics m;
    gp_sim_finish_summary fs;
    if (gp_sim_metrics_compute(r, t, GP_SIM_ALL_GROUPS, &m, NULL) != GP_OK ||
        gp_sim_finish_summary_compute(r, t, d, &fs, NULL) != GP_OK)
        return;
    printf("%-10s alloc %6.2f%%  wait mean %9.0f s p99 %9.0f s  jct %9.0f s  within-guarantee p99 %8.0f s  "
           "lost %8.1f GPU-h  done %zu/%zu  (%.2f s, %llu events)\n",
           r->policy.name, m.allocation_pct, m.mean_wait_s, m.p99_wait_s, m.mean_jct_s, m.within_p99_wait_s,
           m.lost_gpu_h, m.done, m.jobs, r->wall_s, (unsigned long long)r->events);
    printf("%-10s share: Jain of received / fair share per day mean %.3f min %.3f over %zu days (%zu skipped), "
           "over the run %.3f\n",
           "", m.share_jain_day_mean, m.share_jain_day_min, m.share_days, m.share_days_skipped, m.share_jain_run);
    if (d)
        printf("%-10s finish time / alone on its guarantee: p50 %.3f p95 %.3f max %.3f over %zu jobs (%zu without); "
               "teams whose within-guarantee jobs read p95 <= 1: %zu of %zu (worst %.3f)\n",
               "", fs.all.p50, fs.all.p95, fs.all.max, fs.all.jobs, fs.all.no_ratio, fs.teams_met, fs.teams_judged,
               fs.worst_within_p95);
    printf("%-10s hourly Jain (diagnostic): mean %.3f min %.3f over %zu hours with >= 2 backlogged teams (%zu skipped; "
           "static entitlements: mean %.3f)  lost %.3f%% of delivered  most preemptions of one job %d\n",
           "", m.jain_mean, m.jain_min, m.fair_hours, m.fair_hours_skipped, m.jain_static_mean, m.lost_pct,
           m.max_preemptions);
    if (r->rejected)
        printf("%-10s %zu jobs refused by the engine, first: %s\n", "", r->rejected, r->first_rejection);
}

/* A Slurm history: what Slurm did beside each policy's replay (slurm_compare.h),
 * on stdout and, with --out, in slurm.txt. */
static int compare_with_observed(const gp_sim_setup *setup, const gp_sim_options *opt, const gp_trace *t,
                                 const gp_sim_result *results, size_t n, const char *out_dir)
{
    gp_sim_result *runs = calloc(n + 1, sizeof *runs);
    gp_error err;
    if (!runs || gp_sim_observed(setup, opt, "slurm", &runs[0], &err) != GP_OK) {
        fprintf(stderr, "gpupool-sim: slurm: %s\n", runs ? err.message : "out of memory");
        free(runs);
        return 1;
    }
    memcpy(runs + 1, results, n * sizeof *runs);
    int status = gp_sim_slurm_compare(stdout, t, runs, n + 1, &err) == GP_OK ? 0 : 1;
    FILE *f = status == 0 && out_dir ? gp_sim_open_out(out_dir, "slurm.txt", &err) : NULL;
    if (f) {
        status = gp_sim_slurm_compare(f, t, runs, n + 1, &err) == GP_OK ? 0 : 1;
        fclose(f);
    } else if (status == 0 && out_dir) {
        status = 1;
    }
    if (status)
        fprintf(stderr, "gpupool-sim: slurm: %s\n", err.message);
    gp_sim_result_free(&runs[0]);
    free(runs);
    return status;
}

static int run_policies(const cli *c, inputs *in, const gp_sim_policy *pol, size_t n_pol)
{
    gp_sim_result results[MAX_POLICIES];
    gp_sim_setup setup = {.fleet = &in->fleet, .tenants = in->have_tenants ? &in->tenants : NULL,
                          .trace = &in->trace};
    gp_sim_options opt = c->opt;
    opt.seed = c->seed;
    gp_error err;
    size_t done = 0;
    int status = 0;
    gp_sim_progress progress;
    opt.progress = gp_sim_progress_update;
    opt.progress_ctx = &progress;
    gp_sim_dedicated dedicated = {0};
    bool have_dedicated = !c->no_finish_time && setup.tenants;
    if (have_dedicated && gp_sim_dedicated_run(&setup, &opt, &dedicated, &err) != GP_OK) {
        fprintf(stderr, "gpupool-sim: finish time: %s\n", err.message);
        return 1;
    }
    if (have_dedicated)
        printf("finish time: %zu teams replayed alone on their guarantees (%.2f s)\n", dedicated.teams,
               dedicated.wall_s);
    if (c->ledger && gp_sim_ledger_open(c->ledger, c->epoch, &opt.ledger, &err) != GP_OK) {
        fprintf(stderr, "gpupool-sim: %s\n", err.message);
        gp_sim_dedicated_free(&dedicated);
        return 2;
    }
    for (; done < n_pol; done++) {
        char label[64];
        snprintf(label, sizeof label, "%s (%zu/%zu)", pol[done].name, done + 1, n_pol);
        gp_sim_progress_begin(&progress, gp_sim_progress_wanted(stderr, c->quiet) ? stderr : NULL, label);
        gp_err rc = gp_sim_run(&setup, &pol[done], &opt, &results[done], &err);
        gp_sim_progress_end(&progress);
        if (rc != GP_OK) {
            fprintf(stderr, "gpupool-sim: %s: %s: %s\n", pol[done].name, err.field, err.message);
            status = 1;
            break;
        }
        print_run(&results[done], &in->trace, have_dedicated ? &dedicated : NULL);
    }
    if (opt.ledger) {
        int64_t records = gp_sim_ledger_records(opt.ledger);
        if (gp_sim_ledger_close(opt.ledger, &err) != GP_OK) {
            fprintf(stderr, "gpupool-sim: %s\n", err.message);
            status = 1;
        } else {
            printf("ledger: %lld records in %s\n", (long long)records, c->ledger);
        }
        opt.ledger = NULL;
    }
    gp_sim_run_set rs = {.trace_desc = in->trace_desc, .fleet_desc = c->fleet ? c->fleet : "generated",
                         .seed = c->seed, .trace = &in->trace, .options = &opt, .results = results,
                         .n_results = done, .dedicated = have_dedicated ? &dedicated : NULL};
    if (status == 0 && c->out && gp_sim_report_write(c->out, &rs, &err) != GP_OK) {
        fprintf(stderr, "gpupool-sim: report: %s\n", err.message);
        status = 1;
    }
    if (status == 0 && c->out && !c->no_plots)
        gp_sim_plots_run(c->out, stderr);
    if (status == 0 && gp_sim_trace_observed(&in->trace))
        status = compare_with_observed(&setup, &opt, &in->trace, results, done, c->out);
    if (status == 0 && gp_sim_report_summary(stdout, &rs, &err) != GP_OK)
        status = 1;
    for (size_t i = 0; i < done; i++)
        gp_sim_result_free(&results[i]);
    gp_sim_dedicated_free(&dedicated);
    return status;
}

static int run_fgd(const cli *c, inputs *in, const gp_sim_policy *pol, size_t n_pol)
{
    uint64_t seeds[MAX_SEEDS];
    size_t n_seeds = parse_seeds(c->seeds_text, seeds);
    if (n_seeds == 0) {
        fprintf(stderr, "gpupool-sim: bad --seeds %s\n", c->seeds_text);
        return 2;
    }
    gp_fgd_config cfg = {.ratio = c->ratio, .seeds = seeds, .n_seeds = n_seeds, .policies = pol,
                         .n_policies = n_pol, .whole_gpus_only = c->whole_gpus_only};
    gp_fgd_run *runs;
    size_t n_runs;
    gp_error err;
    if (gp_fgd_run_all(&in->fleet, &in->trace, &cfg, &runs, &n_runs, stdout, &err) != GP_OK) {
        fprintf(stderr, "gpupool-sim: fgd: %s: %s\n", err.field, err.message);
        return 1;
    }
    int status = 0;
    if (c->out && gp_fgd_report_write(c->out, &cfg, runs, n_runs, &err) != GP_OK) {
        fprintf(stderr, "gpupool-sim: report: %s\n", err.message);
        status = 1;
    }
    if (status == 0 && c->out && !c->no_plots)
        gp_sim_plots_run(c->out, stderr);
    gp_fgd_summary(stdout, in->trace_desc, &cfg, runs, n_runs);
    free(runs);
    return status;
}

/* The capacity experiment (capacity.h): a row per policy, a table, the
 * CSV and plot with --out, and the rows as the last JSON line. */
static int run_capacity(const cli *c, inputs *in, const gp_sim_policy *pol, size_t n_pol)
{
    if (!in->have_tenants) {
        fprintf(stderr, "gpupool-sim: --capacity needs guarantees (--tenants, --size-fleet or a synthetic trace)\n");
        return 2;
    }
    gp_sim_capacity_config cfg = {.base = &in->fleet, .promises = &in->tenants, .trace = &in->trace, .slo = c->slo,
                                  .opt = c->opt, .offered_gpu_s = gp_sim_offered_gpu_s(&in->trace),
                                  .log = c->quiet ? NULL : stderr};
    cfg.opt.seed = c->seed;
    if (c->no_sharing)
        gp_sim_whole_gpus_only(&in->trace, &in->fleet);
    gp_sim_capacity_row rows[MAX_POLICIES];
    gp_error err;
    printf("capacity: service level p99 wait within guarantee <= %lld s, mean wait <= %lld s, every team%s\n",
           (long long)c->slo.p99_wait_guaranteed_s, (long long)c->slo.mean_wait_s,
           c->no_sharing ? "; whole GPUs only" : "");
    printf("%-10s %7s %7s %8s %8s %12s %14s %6s\n", "policy", "nodes", "GPUs", "util %", "alloc %", "mean wait s",
           "in-g p99 wait s", "runs");
    for (size_t i = 0; i < n_pol; i++) {
        if (gp_sim_capacity_run(&cfg, &pol[i], &rows[i], &err) != GP_OK) {
            fprintf(stderr, "gpupool-sim: capacity %s: %s\n", pol[i].name, err.message);
            return 1;
        }
        const gp_sim_capacity_row *r = &rows[i];
        printf("%-10s %7lld %7lld %8.2f %8.2f %12.0f %14.0f %6d%s\n", r->policy, (long long)r->nodes,
               (long long)r->gpus, r->utilization_pct, r->allocation_pct, r->worst_mean_wait_s, r->worst_within_p99_s,
               r->probes, r->nodes < 0 ? "  (not met at 64x the start)" : "");
    }
    char label[128];
    snprintf(label, sizeof label, "%zu jobs of %zu trace tenants%s", in->trace.n_jobs, in->trace.n_tenants,
             c->no_sharing ? ", whole GPUs only" : "");
    if (c->out && gp_sim_capacity_write(c->out, label, rows, n_pol, &err) != GP_OK) {
        fprintf(stderr, "gpupool-sim: capacity: %s\n", err.message);
        return 1;
    }
    if (c->out && !c->no_plots)
        gp_sim_plots_run(c->out, stderr);
    printf("{\"capacity\":[");
    for (size_t i = 0; i < n_pol; i++)
        printf("%s{\"policy\":\"%s\",\"nodes\":%lld,\"gpus\":%lld,\"utilization_pct\":%.3f,"
               "\"allocation_pct\":%.3f}", i ? "," : "", rows[i].policy, (long long)rows[i].nodes,
               (long long)rows[i].gpus, rows[i].utilization_pct, rows[i].allocation_pct);
    printf("]}\n");
    return 0;
}

int main(int argc, char **argv)
{
    cli c;
    int status = parse_cli(&c, argc, argv);
    if (status)
        return status < 0 ? 0 : status; /* -1: --help was printed */
    gp_sim_policy pol[MAX_POLICIES];
    size_t n_pol = parse_policies(c.policy_list, pol);
    if (n_pol == 0)
        return 2;
    if (c.ledger && (n_pol != 1 || c.fgd)) {
        fprintf(stderr, "gpupool-sim: --ledger takes one policy and no --experiment\n");
        return 2;
    }
    printf("gpupool-sim: seed %llu\n", (unsigned long long)c.seed);
    inputs in;
    memset(&in, 0, sizeof in);
    gp_trace_init(&in.trace);
    gp_error err;
    if (read_traces(&c, &in, &err) != GP_OK || read_fleet_and_tenants(&c, &in, &err) != GP_OK) {
        fprintf(stderr, "gpupool-sim: %s\n", err.message);
        free_inputs(&in);
        return 2;
    }
    printf("trace: %zu jobs (%zu rows, %zu malformed skipped), fleet: %zu nodes\n", in.trace.n_jobs, in.trace.rows,
           in.trace.malformed, in.fleet.n_nodes);
    if (c.out && !make_out_dir(c.out)) {
        free_inputs(&in);
        return 2;
    }
    if (c.out)
        save_generated(c.out, &in);
    status = c.fgd        ? run_fgd(&c, &in, pol, n_pol)
             : c.capacity ? run_capacity(&c, &in, pol, n_pol)
                          : run_policies(&c, &in, pol, n_pol);
    free_inputs(&in);
    return status;
}

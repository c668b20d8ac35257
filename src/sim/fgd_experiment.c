/* fgd_experiment.c - seeds x policies of the FGD experiment (see fgd_experiment.h).
 *
 * Each (seed, policy) run is independent: a fresh engine, the same
 * inflated pod list for every policy of one seed (so policies are compared
 * on identical arrivals), and the random placement score seeded with the
 * run's seed.
 */
#include "sim/fgd_experiment.h"

#include <stdlib.h>
#include <string.h>

#include "sim/inflate.h"
#include "sim/plots.h"
#include "sim/report.h"

static int64_t fleet_capacity_milli(const gp_fleet_file *fleet)
{
    int64_t sum = 0;
    for (size_t n = 0; n < fleet->n_nodes; n++)
        sum += (int64_t)fleet->nodes[n].gpu_count * 1000;
    return sum;
}

/* The pods the experiment uses: all, or whole-GPU ones only. */
static gp_err select_pods(const gp_trace *src, bool whole_only, gp_trace *out, gp_error *err)
{
    for (int b = 0; b < src->n_types; b++)
        gp_trace_type(out, src->types[b]);
    for (size_t i = 0; i < src->n_tenants; i++) {
        uint16_t idx;
        if (!gp_trace_tenant(out, src->tenants[i], &idx))
            return gp_error_set(err, GP_ERR_NOMEM, "trace", "out of memory");
    }
    gp_err rc = GP_OK;
    for (size_t j = 0; rc == GP_OK && j < src->n_jobs; j++)
        if (!whole_only || (src->jobs[j].gpus > 0 && src->jobs[j].gpu_milli == 0))
            rc = gp_trace_add(out, &src->jobs[j], err);
    return rc;
}

static void finish_run(gp_fgd_run *run, const gp_sim_result *r)
{
    run->pods = r->n_jobs;
    for (size_t j = 0; j < r->n_jobs; j++) {
        run->failed += r->jobs[j].outcome == GP_SIM_FAILED;
        run->rejected += r->jobs[j].outcome == GP_SIM_REJECTED;
    }
    gp_sim_alloc_curve(r, run->curve, run->have);
    run->alloc_100 = gp_sim_curve_at(run->curve, run->have, 100);
    run->alloc_130 = gp_sim_curve_at(run->curve, run->have, 130);
    run->monotone = true;
    double last = -1;
    for (int b = 0; b < GP_SIM_CURVE_BINS; b++)
        if (run->have[b]) {
            run->monotone = run->monotone && run->curve[b] >= last - 1e-9;
            last = run->curve[b];
        }
    run->events = r->events;
    run->wall_s = r->wall_s;
}

static gp_err run_seed(const gp_fleet_file *fleet, const gp_trace *pods, const gp_fgd_config *cfg, size_t s,
                       gp_fgd_run *runs, FILE *progress, gp_error *err)
{
    gp_trace inflated;
    gp_trace_init(&inflated);
    gp_err rc = gp_trace_inflate(pods, cfg->ratio, fleet_capacity_milli(fleet), cfg->seeds[s], &inflated, err);
    gp_sim_options opt = gp_sim_options_default();
    opt.fail_unplaced = true;
    opt.record_arrivals = true;
    opt.checkpoint_interval_s = 0;
    opt.seed = cfg->seeds[s];
    gp_sim_setup setup = {.fleet = fleet, .tenants = NULL, .trace = &inflated};
    for (size_t p = 0; rc == GP_OK && p < cfg->n_policies; p++) {
        gp_sim_result r;
        if ((rc = gp_sim_run(&setup, &cfg->policies[p], &opt, &r, err)))
            break;
        gp_fgd_run *run = &runs[s * cfg->n_policies + p];
        memset(run, 0, sizeof *run);
        run->policy = p;
        run->seed = cfg->seeds[s];
        finish_run(run, &r);
        gp_sim_result_free(&r);
        if (progress)
            fprintf(progress, "  seed %llu %-10s pods %zu failed %zu alloc@100 %.2f%% alloc@130 %.2f%% (%.2f s)\n",
                    (unsigned long long)run->seed, cfg->policies[p].name, run->pods, run->failed, run->alloc_100,
                    run->alloc_130, run->wall_s);
    }
    gp_trace_free(&inflated);
    return rc;
}

gp_err gp_fgd_run_all(const gp_fleet_file *fleet, const gp_trace *pods, const gp_fgd_config *cfg,
                      gp_fgd_run **runs_out, size_t *n_runs, FILE *progress, gp_error *err)
{
    size_t n = cfg->n_seeds * cfg->n_policies;
    gp_fgd_run *runs = calloc(n ? n : 1, sizeof *runs);
    gp_trace selected;
    gp_trace_init(&selected);
    if (!runs)
        return gp_error_set(err, GP_ERR_NOMEM, "fgd", "out of memory");
    gp_err rc = select_pods(pods, cfg->whole_gpus_only, &selected, err);
    for (size_t s = 0; rc == GP_OK && s < cfg->n_seeds; s++)
        rc = run_seed(fleet, &selected, cfg, s, runs, progress, err);
    gp_trace_free(&selected);
    if (rc) {
        free(runs);
        return rc;
    }
    *runs_out = runs;
    *n_runs = n;
    return GP_OK;
}

double gp_fgd_median(const gp_fgd_run *runs, size_t n_runs, size_t policy, bool at130)
{
    double v[256];
    size_t k = 0;
    for (size_t i = 0; i < n_runs && k < 256; i++)
        if (runs[i].policy == policy)
            v[k++] = at130 ? runs[i].alloc_130 : runs[i].alloc_100;
    return gp_sim_median(v, k);
}

void gp_fgd_summary(FILE *out, const char *trace_desc, const gp_fgd_config *cfg, const gp_fgd_run *runs,
                    size_t n_runs)
{
    fprintf(out, "{\"experiment\":\"fgd\",\"trace\":");
    gp_sim_json_string(out, trace_desc);
    fprintf(out, ",\"ratio\":%.3f,\"whole_gpus_only\":%s,\"seeds\":[", cfg->ratio,
            cfg->whole_gpus_only ? "true" : "false");
    for (size_t s = 0; s < cfg->n_seeds; s++)
        fprintf(out, "%s%llu", s ? "," : "", (unsigned long long)cfg->seeds[s]);
    fprintf(out, "],\"policies\":[");
    for (size_t p = 0; p < cfg->n_policies; p++) {
        size_t pods = 0, failed = 0;
        bool monotone = true;
        for (size_t i = 0; i < n_runs; i++)
            if (runs[i].policy == p) {
                pods += runs[i].pods;
                failed += runs[i].failed;
                monotone = monotone && runs[i].monotone;
            }
        fprintf(out, "%s{\"policy\":", p ? "," : "");
        gp_sim_json_string(out, cfg->policies[p].name);
        fprintf(out, ",\"alloc_100_median\":%.3f,\"alloc_130_median\":%.3f,\"pods\":%zu,\"failed\":%zu,"
                     "\"monotone\":%s}",
                gp_fgd_median(runs, n_runs, p, false), gp_fgd_median(runs, n_runs, p, true), pods, failed,
                monotone ? "true" : "false");
    }
    fprintf(out, "]}\n");
    fflush(out);
}

static gp_err write_curve(const char *dir, const gp_fgd_config *cfg, const gp_fgd_run *runs, size_t n_runs,
                          gp_error *err)
{
    FILE *f = gp_sim_open_out(dir, "fgd_curve.csv", err);
    if (!f)
        return GP_ERR_INVALID;
    fprintf(f, "load_pct");
    for (size_t p = 0; p < cfg->n_policies; p++)
        fprintf(f, ",%s", cfg->policies[p].name);
    fprintf(f, "\n");
    for (int b = 0; b < GP_SIM_CURVE_BINS; b++) {
        fprintf(f, "%d", b);
        for (size_t p = 0; p < cfg->n_policies; p++) {
            double sum = 0;
            size_t k = 0;
            for (size_t i = 0; i < n_runs; i++)
                if (runs[i].policy == p && runs[i].have[b]) {
                    sum += runs[i].curve[b];
                    k++;
                }
            if (k)
                fprintf(f, ",%.3f", sum / (double)k);
            else
                fprintf(f, ",");
        }
        fprintf(f, "\n");
    }
    fclose(f);
    return GP_OK;
}

gp_err gp_fgd_report_write(const char *dir, const gp_fgd_config *cfg, const gp_fgd_run *runs, size_t n_runs,
                           gp_error *err)
{
    FILE *f = gp_sim_open_out(dir, "fgd_runs.csv", err);
    if (!f)
        return GP_ERR_INVALID;
    fprintf(f, "policy,seed,pods,failed,rejected,alloc_100_pct,alloc_130_pct,monotone,wall_s\n");
    for (size_t i = 0; i < n_runs; i++)
        fprintf(f, "%s,%llu,%zu,%zu,%zu,%.3f,%.3f,%d,%.3f\n", cfg->policies[runs[i].policy].name,
                (unsigned long long)runs[i].seed, runs[i].pods, runs[i].failed, runs[i].rejected, runs[i].alloc_100,
                runs[i].alloc_130, runs[i].monotone, runs[i].wall_s);
    fclose(f);
    gp_err rc = write_curve(dir, cfg, runs, n_runs, err);
    if (rc)
        return rc;
    FILE *gp = gp_sim_plot_begin(dir, "alloc_vs_load", "GPU allocation vs arrived load (FGD experiment, mean of seeds)",
                                 "arrived load: GPUs requested so far, % of fleet", "GPUs allocated, % of fleet", err);
    if (!gp)
        return GP_ERR_INVALID;
    char cmd[4096];
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "set xrange [0:130]\nset yrange [0:105]\nset datafile missing ''\n"
                                                 "plot x < 100 ? x : 100 with lines dt 2 lc 'gray' title 'ideal'");
    for (size_t p = 0; p < cfg->n_policies && n < sizeof cmd; p++)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, ", 'fgd_curve.csv' using 1:%zu with lines lw 2 title '%s'",
                              p + 2, cfg->policies[p].name);
    gp_sim_plot_both(gp, "alloc_vs_load", cmd);
    fclose(gp);
    return GP_OK;
}

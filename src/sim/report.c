/* report.c - the summary line, report.json, the CSV files and the plots.
 *
 * See report.h for the list of outputs.  JSON is written directly with
 * stdio (it is flat and small; the only strings are policy names, tenant
 * paths and file names, escaped by gp_sim_json_string).  Numbers use %.6g
 * or %.3f so reports diff cleanly between runs.
 */
#include "sim/report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/metrics.h"
#include "sim/plots.h"

#define TOP_GROUPS 8 /* teams drawn one by one in the stacked usage plot; the rest are "others" */

void gp_sim_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

FILE *gp_sim_open_out(const char *dir, const char *name, gp_error *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        gp_error_set(err, GP_ERR_INVALID, "out", "%s: %s", path, strerror(errno));
    return f;
}

static void metrics_json(FILE *out, const gp_sim_metrics *m, bool overall)
{
    fprintf(out,
            "\"jobs\":%zu,\"done\":%zu,\"failed\":%zu,\"unfinished\":%zu,\"rejected\":%zu,"
            "\"mean_wait_s\":%.1f,\"p50_wait_s\":%.1f,\"p99_wait_s\":%.1f,\"mean_jct_s\":%.1f,"
            "\"within_guarantee_jobs\":%zu,\"within_guarantee_p99_wait_s\":%.1f,"
            "\"mean_usage_gpus\":%.3f,\"guarantee_gpus\":%.3f,\"lost_gpu_h\":%.3f,\"preemptions\":%llu,"
            "\"max_preemptions\":%d",
            m->jobs, m->done, m->failed, m->unfinished, m->rejected, m->mean_wait_s, m->p50_wait_s, m->p99_wait_s,
            m->mean_jct_s, m->within_jobs, m->within_p99_wait_s, m->mean_usage_gpus, m->guarantee_gpus,
            m->lost_gpu_h, (unsigned long long)m->preemptions, m->max_preemptions);
    if (overall)
        fprintf(out,
                ",\"allocation_pct\":%.3f,\"lost_pct\":%.4f,\"jain_mean\":%.4f,\"jain_min\":%.4f,"
                "\"fair_hours\":%zu,\"fair_hours_skipped\":%zu,\"jain_static_mean\":%.4f",
                m->allocation_pct, m->lost_pct, m->jain_mean, m->jain_min, m->fair_hours, m->fair_hours_skipped,
                m->jain_static_mean);
}

/* The share and finish-time figures of a group (share.h, finish_time.h). */
static void group_fairness_json(FILE *out, const gp_sim_metrics *m, const gp_sim_finish_stats *f)
{
    fprintf(out,
            ",\"received_gpu_h\":%.3f,\"fair_share_gpu_h\":%.3f,\"share_ratio\":%.4f,\"ftf_jobs\":%zu,"
            "\"ftf_no_ratio\":%zu,\"ftf_p50\":%.4f,\"ftf_p95\":%.4f,\"ftf_max\":%.4f,\"ftf_within_p95\":%.4f,"
            "\"team_within_guarantee\":%s",
            m->received_gpu_h, m->fair_share_gpu_h, m->share_ratio, f->jobs, f->no_ratio, f->p50, f->p95, f->max,
            f->within_p95, f->team_within ? "true" : "false");
}

/* The run's share and finish-time figures. */
static gp_err run_fairness_json(FILE *out, const gp_sim_run_set *rs, const gp_sim_result *r, const gp_sim_metrics *m,
                                gp_error *err)
{
    gp_sim_finish_summary fs;
    gp_err rc = gp_sim_finish_summary_compute(r, rs->trace, rs->dedicated, &fs, err);
    if (rc)
        return rc;
    fprintf(out,
            ",\"share_jain_day_mean\":%.4f,\"share_jain_day_min\":%.4f,\"share_days\":%zu,"
            "\"share_days_skipped\":%zu,\"share_jain_run\":%.4f,\"ftf_jobs\":%zu,\"ftf_no_ratio\":%zu,"
            "\"ftf_p50\":%.4f,\"ftf_p95\":%.4f,\"ftf_max\":%.4f,\"ftf_teams_judged\":%zu,"
            "\"ftf_teams_met\":%zu,\"ftf_worst_within_p95\":%.4f,\"ftf_teams_all_within\":%zu",
            m->share_jain_day_mean, m->share_jain_day_min, m->share_days, m->share_days_skipped, m->share_jain_run,
            fs.all.jobs, fs.all.no_ratio, fs.all.p50, fs.all.p95, fs.all.max, fs.teams_judged, fs.teams_met,
            fs.worst_within_p95, fs.teams_all_within);
    return GP_OK;
}

static gp_err run_json(FILE *out, const gp_sim_run_set *rs, const gp_sim_result *r, const gp_sim_metrics *m,
                       gp_error *err)
{
    fprintf(out, "\"policy\":");
    gp_sim_json_string(out, r->policy.name);
    fprintf(out, ",");
    metrics_json(out, m, true);
    gp_err rc = run_fairness_json(out, rs, r, m, err);
    if (rc)
        return rc;
    fprintf(out, ",\"events\":%llu,\"ticks\":%llu,\"wall_s\":%.3f,\"events_per_s\":%.0f,\"capacity_gpus\":%.3f",
            (unsigned long long)r->events, (unsigned long long)r->ticks, r->wall_s,
            r->wall_s > 0 ? (double)r->events / r->wall_s : 0.0, (double)r->capacity_milli / 1000.0);
    if (r->rejected) {
        fprintf(out, ",\"first_rejection\":");
        gp_sim_json_string(out, r->first_rejection);
    }
    return GP_OK;
}

gp_err gp_sim_report_summary(FILE *out, const gp_sim_run_set *rs, gp_error *err)
{
    fprintf(out, "{\"trace\":");
    gp_sim_json_string(out, rs->trace_desc ? rs->trace_desc : "");
    fprintf(out, ",\"seed\":%llu,\"jobs\":%zu,\"malformed_rows\":%zu,\"runs\":[", (unsigned long long)rs->seed,
            rs->trace->n_jobs, rs->trace->malformed);
    for (size_t i = 0; i < rs->n_results; i++) {
        gp_sim_metrics m;
        gp_err rc = gp_sim_metrics_compute(&rs->results[i], rs->trace, GP_SIM_ALL_GROUPS, &m, err);
        if (rc)
            return rc;
        fprintf(out, "%s{", i ? "," : "");
        if ((rc = run_json(out, rs, &rs->results[i], &m, err)))
            return rc;
        fprintf(out, "}");
    }
    fprintf(out, "]}\n");
    fflush(out);
    return GP_OK;
}

/* ---- report.json ---- */

static gp_err groups_json(FILE *out, const gp_sim_run_set *rs, const gp_sim_result *r, gp_error *err)
{
    fprintf(out, ",\"groups\":[");
    for (size_t g = 0; g < r->n_groups; g++) {
        gp_sim_metrics m;
        gp_sim_finish_stats f;
        gp_err rc = gp_sim_metrics_compute(r, rs->trace, g, &m, err);
        if (rc == GP_OK)
            rc = gp_sim_finish_stats_compute(r, rs->trace, rs->dedicated, g, &f, err);
        if (rc)
            return rc;
        fprintf(out, "%s\n    {\"group\":", g ? "," : "");
        gp_sim_json_string(out, r->groups[g]);
        fprintf(out, ",\"entitlement\":%.6f,", r->group_entitlement[g]);
        metrics_json(out, &m, false);
        group_fairness_json(out, &m, &f);
        fprintf(out, "}");
    }
    fprintf(out, "]");
    return GP_OK;
}

static gp_err write_report_json(const char *dir, const gp_sim_run_set *rs, gp_error *err)
{
    FILE *out = gp_sim_open_out(dir, "report.json", err);
    if (!out)
        return GP_ERR_INVALID;
    const gp_sim_options *o = rs->options;
    fprintf(out, "{\"trace\":");
    gp_sim_json_string(out, rs->trace_desc ? rs->trace_desc : "");
    fprintf(out, ",\"fleet\":");
    gp_sim_json_string(out, rs->fleet_desc ? rs->fleet_desc : "");
    fprintf(out,
            ",\"seed\":%llu,\"jobs\":%zu,\"trace_rows\":%zu,\"malformed_rows\":%zu,\n"
            " \"options\":{\"quantum_s\":%lld,\"checkpoint_interval_s\":%lld,\"checkpoint_save_s\":%lld,"
            "\"fail_unplaced\":%s,\"sample_interval_s\":%lld},\n \"runs\":[",
            (unsigned long long)rs->seed, rs->trace->n_jobs, rs->trace->rows, rs->trace->malformed,
            (long long)o->quantum_s, (long long)o->checkpoint_interval_s, (long long)o->checkpoint_save_s,
            o->fail_unplaced ? "true" : "false", (long long)o->sample_interval_s);
    gp_err rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < rs->n_results; i++) {
        gp_sim_metrics m;
        if ((rc = gp_sim_metrics_compute(&rs->results[i], rs->trace, GP_SIM_ALL_GROUPS, &m, err)))
            break;
        fprintf(out, "%s\n  {", i ? "," : "");
        rc = run_json(out, rs, &rs->results[i], &m, err);
        if (rc == GP_OK)
            rc = groups_json(out, rs, &rs->results[i], err);
        fprintf(out, "}");
    }
    fprintf(out, "]}\n");
    fclose(out);
    return rc;
}

/* ---- CSV ---- */

/* summary.csv: the headline figures, one row per policy. */
static gp_err write_summary_csv(const char *dir, const gp_sim_run_set *rs, gp_error *err)
{
    FILE *f = gp_sim_open_out(dir, "summary.csv", err);
    if (!f)
        return GP_ERR_INVALID;
    fprintf(f, "policy,jobs,done,unfinished,mean_wait_s,p99_wait_s,mean_jct_s,allocation_pct,lost_gpu_h,"
               "within_guarantee_jobs,within_guarantee_p99_wait_s,preemptions,lost_pct,max_preemptions,jain_mean,"
               "jain_min,fair_hours,fair_hours_skipped,jain_static_mean,share_jain_day_mean,share_jain_day_min,"
               "share_days,share_days_skipped,share_jain_run,ftf_p50,ftf_p95,ftf_max,ftf_teams_judged,"
               "ftf_teams_met,ftf_worst_within_p95,ftf_jobs,ftf_no_ratio,ftf_teams_all_within\n");
    gp_err rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < rs->n_results; i++) {
        gp_sim_metrics m;
        gp_sim_finish_summary fs;
        if ((rc = gp_sim_metrics_compute(&rs->results[i], rs->trace, GP_SIM_ALL_GROUPS, &m, err)) ||
            (rc = gp_sim_finish_summary_compute(&rs->results[i], rs->trace, rs->dedicated, &fs, err)))
            break;
        fprintf(f, "%s,%zu,%zu,%zu,%.1f,%.1f,%.1f,%.3f,%.3f,%zu,%.1f,%llu,%.4f,%d,%.4f,%.4f,%zu,%zu,%.4f,",
                rs->results[i].policy.name, m.jobs, m.done, m.unfinished, m.mean_wait_s, m.p99_wait_s, m.mean_jct_s,
                m.allocation_pct, m.lost_gpu_h, m.within_jobs, m.within_p99_wait_s, (unsigned long long)m.preemptions,
                m.lost_pct, m.max_preemptions, m.jain_mean, m.jain_min, m.fair_hours, m.fair_hours_skipped,
                m.jain_static_mean);
        fprintf(f, "%.4f,%.4f,%zu,%zu,%.4f,%.4f,%.4f,%.4f,%zu,%zu,%.4f,%zu,%zu,%zu\n", m.share_jain_day_mean,
                m.share_jain_day_min, m.share_days, m.share_days_skipped, m.share_jain_run, fs.all.p50, fs.all.p95,
                fs.all.max, fs.teams_judged, fs.teams_met, fs.worst_within_p95, fs.all.jobs, fs.all.no_ratio,
                fs.teams_all_within);
    }
    fclose(f);
    return rc;
}

/* dir/STEM-POLICY.csv opened for writing, or NULL with err set. */
static FILE *open_policy_csv(const char *dir, const char *stem, const gp_sim_result *r, gp_error *err)
{
    char name[96];
    snprintf(name, sizeof name, "%s-%s.csv", stem, r->policy.name);
    return gp_sim_open_out(dir, name, err);
}

static gp_err write_timeseries(const char *dir, const gp_sim_result *r, gp_error *err)
{
    FILE *f = open_policy_csv(dir, "timeseries", r, err);
    if (!f)
        return GP_ERR_INVALID;
    double cap = r->capacity_milli > 0 ? (double)r->capacity_milli : 1;
    fprintf(f, "t_s,t_h,allocated_gpus,allocated_pct,demand_gpus,demand_pct,arrived_gpus,stranded_gpus,"
               "stranded_pct,pending,running\n");
    for (size_t s = 0; s < r->n_samples; s++) {
        const gp_sim_sample *p = &r->samples[s];
        fprintf(f, "%lld,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%d,%d\n", (long long)p->t,
                (double)(p->t - r->t_first_arrival) / 3600.0, (double)p->allocated_milli / 1000.0,
                100.0 * (double)p->allocated_milli / cap, (double)p->demand_milli / 1000.0,
                100.0 * (double)p->demand_milli / cap, (double)p->arrived_milli / 1000.0,
                (double)p->stranded_milli / 1000.0, 100.0 * (double)p->stranded_milli / cap, p->pending, p->running);
    }
    fclose(f);
    return GP_OK;
}

/* fairness-POLICY.csv: every full hour, its backlogged groups and Jain's index (empty: skipped). */
static gp_err write_fairness(const char *dir, const gp_sim_result *r, gp_error *err)
{
    FILE *f = open_policy_csv(dir, "fairness", r, err);
    if (!f)
        return GP_ERR_INVALID;
    fprintf(f, "t_h,backlogged,jain\n");
    for (size_t h = 0; h < r->n_fair_hours; h++) {
        const gp_sim_fair_hour *fh = &r->fair_hours[h];
        fprintf(f, "%.4f,%d,", (double)(fh->start - r->t_first_arrival) / 3600.0, fh->backlogged);
        if (fh->jain >= 0)
            fprintf(f, "%.4f", fh->jain);
        fprintf(f, "\n");
    }
    fclose(f);
    return GP_OK;
}

/* share-POLICY.csv: per full day and team with a fair share, GPU-hours
 * received and fair; share_days-POLICY.csv: the day's Jain index (empty:
 * skipped). */
static gp_err write_share(const char *dir, const gp_sim_result *r, gp_error *err)
{
    const gp_sim_share_result *sh = &r->share;
    FILE *f = open_policy_csv(dir, "share", r, err);
    if (!f)
        return GP_ERR_INVALID;
    fprintf(f, "t_day,group,received_gpu_h,fair_share_gpu_h,ratio\n");
    for (size_t d = 0; d < sh->n_days; d++)
        for (size_t g = 0; g < sh->n_groups; g++) {
            double rec = sh->day_received_h[d * sh->n_groups + g], fair = sh->day_fair_h[d * sh->n_groups + g];
            if (fair > 1e-9)
                fprintf(f, "%zu,%s,%.4f,%.4f,%.4f\n", d, r->groups[g], rec, fair, rec / fair);
        }
    fclose(f);
    if (!(f = open_policy_csv(dir, "share_days", r, err)))
        return GP_ERR_INVALID;
    fprintf(f, "t_day,teams,jain\n");
    for (size_t d = 0; d < sh->n_days; d++) {
        fprintf(f, "%zu,%d,", d, sh->days[d].teams);
        if (sh->days[d].jain >= 0)
            fprintf(f, "%.4f", sh->days[d].jain);
        fprintf(f, "\n");
    }
    fclose(f);
    return GP_OK;
}

static gp_err write_waits(const char *dir, const gp_sim_result *r, gp_error *err)
{
    int64_t *w;
    size_t n;
    gp_err rc = gp_sim_sorted_waits(r, &w, &n, err);
    if (rc)
        return rc;
    FILE *f = open_policy_csv(dir, "waits", r, err);
    if (!f) {
        free(w);
        return GP_ERR_INVALID;
    }
    fprintf(f, "wait_h,fraction\n");
    size_t step = n > 2000 ? n / 2000 : 1; /* at most ~2000 points, always the last */
    for (size_t i = 0; i < n; i++)
        if (i % step == 0 || i == n - 1)
            fprintf(f, "%.5f,%.5f\n", (double)w[i] / 3600.0 > 1e-3 ? (double)w[i] / 3600.0 : 1e-3,
                    (double)(i + 1) / (double)n);
    fclose(f);
    free(w);
    return GP_OK;
}

/* Groups in drawing order: largest guarantee first, then largest usage. */
static int draw_order_cmp(const gp_sim_result *r, const double *usage, size_t a, size_t b)
{
    if (r->group_guarantee_milli[a] != r->group_guarantee_milli[b])
        return r->group_guarantee_milli[a] > r->group_guarantee_milli[b] ? -1 : 1;
    if (usage[a] != usage[b])
        return usage[a] > usage[b] ? -1 : 1;
    return a < b ? -1 : 1;
}

static void top_groups(const gp_sim_result *r, size_t *order, size_t *n_top)
{
    double *usage = calloc(r->n_groups ? r->n_groups : 1, sizeof *usage);
    for (size_t g = 0; g < r->n_groups; g++) {
        order[g] = g;
        for (size_t s = 0; usage && s < r->n_samples; s++)
            usage[g] += (double)r->group_usage[s * r->n_groups + g];
    }
    for (size_t i = 1; usage && i < r->n_groups; i++) /* insertion sort: a few hundred groups */
        for (size_t k = i; k > 0 && draw_order_cmp(r, usage, order[k], order[k - 1]) < 0; k--) {
            size_t t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    free(usage);
    *n_top = r->n_groups < TOP_GROUPS ? r->n_groups : TOP_GROUPS;
}

/* usage-POLICY.csv: t_h, then cumulative GPUs of the top groups and
 * "others", so each column is the top edge of its band. */
static gp_err write_usage(const char *dir, const gp_sim_result *r, size_t *order, size_t n_top, gp_error *err)
{
    FILE *f = open_policy_csv(dir, "usage", r, err);
    if (!f)
        return GP_ERR_INVALID;
    fprintf(f, "t_h");
    for (size_t k = 0; k < n_top; k++)
        fprintf(f, ",%s", r->groups[order[k]]);
    fprintf(f, ",others\n");
    for (size_t s = 0; s < r->n_samples; s++) {
        const int64_t *u = r->group_usage + s * r->n_groups;
        double acc = 0, all = 0;
        for (size_t g = 0; g < r->n_groups; g++)
            all += (double)u[g] / 1000.0;
        fprintf(f, "%.4f", (double)(r->samples[s].t - r->t_first_arrival) / 3600.0);
        for (size_t k = 0; k < n_top; k++) {
            acc += (double)u[order[k]] / 1000.0;
            fprintf(f, ",%.3f", acc);
        }
        fprintf(f, ",%.3f\n", all);
    }
    fclose(f);
    return GP_OK;
}

static gp_err write_groups_csv(const char *dir, const gp_sim_run_set *rs, const gp_sim_result *r, gp_error *err)
{
    FILE *f = open_policy_csv(dir, "groups", r, err);
    if (!f)
        return GP_ERR_INVALID;
    fprintf(f, "group,jobs,done,unfinished,mean_wait_s,p99_wait_s,mean_jct_s,within_guarantee_jobs,"
               "within_guarantee_p99_wait_s,mean_usage_gpus,guarantee_gpus,lost_gpu_h,preemptions,max_preemptions,"
               "entitlement,received_gpu_h,fair_share_gpu_h,share_ratio,ftf_jobs,ftf_no_ratio,ftf_p50,ftf_p95,ftf_max,"
               "ftf_within_p95,team_within_guarantee\n");
    gp_err rc = GP_OK;
    for (size_t g = 0; rc == GP_OK && g < r->n_groups; g++) {
        gp_sim_metrics m;
        gp_sim_finish_stats fs;
        if ((rc = gp_sim_metrics_compute(r, rs->trace, g, &m, err)) ||
            (rc = gp_sim_finish_stats_compute(r, rs->trace, rs->dedicated, g, &fs, err)))
            break;
        fprintf(f, "%s,%zu,%zu,%zu,%.1f,%.1f,%.1f,%zu,%.1f,%.3f,%.3f,%.3f,%llu,%d,%.6f,", r->groups[g], m.jobs,
                m.done, m.unfinished, m.mean_wait_s, m.p99_wait_s, m.mean_jct_s, m.within_jobs, m.within_p99_wait_s,
                m.mean_usage_gpus, m.guarantee_gpus, m.lost_gpu_h, (unsigned long long)m.preemptions,
                m.max_preemptions, r->group_entitlement[g]);
        fprintf(f, "%.3f,%.3f,%.4f,%zu,%zu,%.4f,%.4f,%.4f,%.4f,%d\n", m.received_gpu_h, m.fair_share_gpu_h,
                m.share_ratio, fs.jobs, fs.no_ratio, fs.p50, fs.p95, fs.max, fs.within_p95, fs.team_within);
    }
    fclose(f);
    return rc;
}

/* alloc_vs_load.csv: per 5 % bin of demand (arrived, unfinished work),
 * the mean allocation % of each policy ("" where a policy has no sample). */
static gp_err write_alloc_vs_load(const char *dir, const gp_sim_run_set *rs, gp_error *err)
{
    enum { BINS = 61 }; /* 0..300 % in steps of 5 */
    FILE *f = gp_sim_open_out(dir, "alloc_vs_load.csv", err);
    if (!f)
        return GP_ERR_INVALID;
    double *sum = calloc(rs->n_results * BINS, sizeof *sum);
    size_t *cnt = calloc(rs->n_results * BINS, sizeof *cnt);
    for (size_t i = 0; sum && cnt && i < rs->n_results; i++) {
        const gp_sim_result *r = &rs->results[i];
        double cap = r->capacity_milli > 0 ? (double)r->capacity_milli : 1;
        for (size_t s = 0; s < r->n_samples; s++) {
            long bin = lround(100.0 * (double)r->samples[s].demand_milli / cap / 5.0);
            if (bin >= BINS)
                bin = BINS - 1;
            sum[i * BINS + (size_t)bin] += 100.0 * (double)r->samples[s].allocated_milli / cap;
            cnt[i * BINS + (size_t)bin]++;
        }
    }
    fprintf(f, "load_pct");
    for (size_t i = 0; i < rs->n_results; i++)
        fprintf(f, ",%s", rs->results[i].policy.name);
    fprintf(f, "\n");
    for (size_t b = 0; sum && cnt && b < BINS; b++) {
        fprintf(f, "%zu", b * 5);
        for (size_t i = 0; i < rs->n_results; i++)
            if (cnt[i * BINS + b])
                fprintf(f, ",%.3f", sum[i * BINS + b] / (double)cnt[i * BINS + b]);
            else
                fprintf(f, ",");
        fprintf(f, "\n");
    }
    fclose(f);
    gp_err rc = sum && cnt ? GP_OK : gp_error_set(err, GP_ERR_NOMEM, "report", "out of memory");
    free(sum);
    free(cnt);
    return rc;
}

/* ---- plots ---- */

static gp_err plot_per_policy_lines(const char *dir, const gp_sim_run_set *rs, const char *name, const char *title,
                                    const char *xlabel, const char *ylabel, const char *extra,
                                    const char *file_fmt, const char *using, gp_error *err)
{
    FILE *f = gp_sim_plot_begin(dir, name, title, xlabel, ylabel, err);
    if (!f)
        return GP_ERR_INVALID;
    char cmd[8192];
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "%splot ", extra);
    for (size_t i = 0; i < rs->n_results && n < sizeof cmd; i++) {
        char file[128];
        snprintf(file, sizeof file, file_fmt, rs->results[i].policy.name);
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "%s'%s' using %s with lines lw 2 title '%s'", i ? ", " : "",
                              file, using, rs->results[i].policy.name);
    }
    gp_sim_plot_both(f, name, cmd);
    fclose(f);
    return GP_OK;
}

static gp_err plot_alloc_vs_load(const char *dir, const gp_sim_run_set *rs, gp_error *err)
{
    FILE *f = gp_sim_plot_begin(dir, "alloc_vs_load", "GPU allocation vs arrived load (demand)",
                                "arrived load: GPUs asked for by jobs arrived and not finished, % of fleet",
                                "GPUs allocated, % of fleet", err);
    if (!f)
        return GP_ERR_INVALID;
    char cmd[4096];
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "set yrange [0:105]\nset datafile missing ''\nplot ");
    for (size_t i = 0; i < rs->n_results && n < sizeof cmd; i++)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "%s'alloc_vs_load.csv' using 1:%zu with linespoints lw 2 "
                                                       "title '%s'", i ? ", " : "", i + 2, rs->results[i].policy.name);
    n += (size_t)snprintf(cmd + n, sizeof cmd - n > 0 ? sizeof cmd - n : 0, ", x < 100 ? x : 100 with lines dt 2 "
                                                                            "lc 'gray' title 'ideal'");
    gp_sim_plot_both(f, "alloc_vs_load", cmd);
    fclose(f);
    return GP_OK;
}

static gp_err plot_team_usage(const char *dir, const gp_sim_result *r, const size_t *order, size_t n_top,
                              gp_error *err)
{
    char name[96], title[160];
    snprintf(name, sizeof name, "team_usage-%s", r->policy.name);
    snprintf(title, sizeof title, "GPUs in use per team, stacked (%s); dashed: cumulative guarantees", r->policy.name);
    FILE *f = gp_sim_plot_begin(dir, name, title, "time since first arrival, hours", "GPUs", err);
    if (!f)
        return GP_ERR_INVALID;
    char cmd[8192];
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "set style fill solid 0.6 noborder\nplot ");
    double cum = 0;
    /* bands from the top ("others") down, so lower bands paint over upper ones */
    n += (size_t)snprintf(cmd + n, sizeof cmd - n, "'usage-%s.csv' using 1:%zu with filledcurves x1 lc 'gray' title 'others'",
                          r->policy.name, n_top + 2);
    for (size_t k = n_top; k-- > 0 && n < sizeof cmd;)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, ", '' using 1:%zu with filledcurves x1 lc %zu title '%s'",
                              k + 2, k + 1, r->groups[order[k]]);
    for (size_t k = 0; k < n_top && n < sizeof cmd; k++) {
        cum += (double)r->group_guarantee_milli[order[k]] / 1000.0;
        if (r->group_guarantee_milli[order[k]] > 0)
            n += (size_t)snprintf(cmd + n, sizeof cmd - n, ", %.3f with lines dt 2 lw 1.5 lc %zu notitle", cum,
                                  k + 1);
    }
    snprintf(cmd + n, n < sizeof cmd ? sizeof cmd - n : 0, ", %.3f with lines lw 2 lc 'black' title 'fleet'",
             (double)r->capacity_milli / 1000.0);
    gp_sim_plot_both(f, name, cmd);
    fclose(f);
    return GP_OK;
}

static gp_err write_plots(const char *dir, const gp_sim_run_set *rs, gp_error *err)
{
    gp_err rc = plot_alloc_vs_load(dir, rs, err);
    if (rc == GP_OK)
        rc = plot_per_policy_lines(dir, rs, "wait_cdf", "Queueing delay CDF", "wait, hours (log)",
                                   "fraction of jobs", "set logscale x\nset yrange [0:1.02]\n", "waits-%s.csv",
                                   "1:2", err);
    if (rc == GP_OK)
        rc = plot_per_policy_lines(dir, rs, "fragmentation",
                                   "Stranded GPUs: free GPUs on partly used nodes", "time since first arrival, hours",
                                   "% of fleet", "", "timeseries-%s.csv", "2:9", err);
    return rc;
}

gp_err gp_sim_report_write(const char *dir, const gp_sim_run_set *rs, gp_error *err)
{
    gp_err rc = write_report_json(dir, rs, err);
    if (rc == GP_OK)
        rc = write_summary_csv(dir, rs, err);
    for (size_t i = 0; rc == GP_OK && i < rs->n_results; i++) {
        const gp_sim_result *r = &rs->results[i];
        size_t *order = calloc(r->n_groups ? r->n_groups : 1, sizeof *order), n_top = 0;
        if (!order)
            return gp_error_set(err, GP_ERR_NOMEM, "report", "out of memory");
        top_groups(r, order, &n_top);
        if ((rc = write_timeseries(dir, r, err)) == GP_OK && (rc = write_waits(dir, r, err)) == GP_OK &&
            (rc = write_usage(dir, r, order, n_top, err)) == GP_OK && (rc = write_groups_csv(dir, rs, r, err)) == GP_OK &&
            (rc = write_fairness(dir, r, err)) == GP_OK && (rc = write_share(dir, r, err)) == GP_OK)
            rc = plot_team_usage(dir, r, order, n_top, err);
        free(order);
    }
    if (rc == GP_OK)
        rc = write_alloc_vs_load(dir, rs, err);
    if (rc == GP_OK)
        rc = write_plots(dir, rs, err);
    return rc;
}

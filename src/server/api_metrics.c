/* api_metrics.c - GET /metrics: gpupoold in the Prometheus text format
 * (version 0.0.4); docs/metrics.md lists every metric.
 *
 * A scrape never stalls the engine thread on formatting: an op on the
 * engine thread copies what it needs into a snapshot (per GPU model and
 * sharing mode the GPUs and what is allocated, node states, each tenant's
 * usage, guarantee, limit and queue, each agent's last heartbeat), then
 * this API thread ranks the tenants and writes the text.
 *
 * Tenant labels are bounded: the --metrics-tenants tenants (default 50)
 * with the most GPUs in use or guaranteed (each model's larger of the
 * two, summed) get their own label; the others' queue lengths add up under
 * tenant="other" (its oldest wait is the longest among them).  Usage,
 * guarantee and limit are per tenant subtree, so they are not summed into
 * "other" (a parent and its child would count twice).
 *
 * Example: tenants ml (guarantee 8 H100), ml/nlp (6 H100 in use), web
 * (nothing) with --metrics-tenants 2: ml and ml/nlp are labelled, web's
 * 3 pending jobs read gpupool_tenant_pending_jobs{tenant="other"} 3.
 *
 * For the security alerts (examples/prometheus/alerts.yml): failed
 * sign-ins by address and user (auth_failures.h, copied on the API
 * thread), the recently restarted jobs' counts (metrics.h's ids, looked up
 * in the snapshot), and each labelled tenant's baseline for this hour of
 * the week (baseline.h: the hour's first scrape reads the store through a
 * reader connection, here on the API thread, never the engine thread's).
 *
 * Who may scrape: a token whose role sees every tenant (admin, operator,
 * auditor), or anybody with --metrics-open (router.c).
 */
#include "server/api.h"

#include "util/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SHARING_MODES = GP_SHARING_TIMESLICE + 1 };

typedef struct gpu_class {
    int64_t healthy, unhealthy, allocated_milli;
} gpu_class;

typedef struct tenant_row {
    char path[GP_PATH_MAX];
    bool has_guarantee;
    int64_t usage[GP_MAX_GPU_TYPES], guarantee[GP_MAX_GPU_TYPES], limit[GP_MAX_GPU_TYPES];
    int pending, running;
    int64_t oldest_wait_s; /* -1: nothing pending */
    int64_t rank;          /* milli-GPUs in use or guaranteed */
} tenant_row;

typedef struct agent_row {
    char node[GP_NAME_MAX];
    int64_t last_seen_ms;
} agent_row;

/* A live job among the recently restarted (metrics.h) and its counts. */
typedef struct restart_row {
    uint64_t id;
    char tenant[GP_PATH_MAX];
    int restarts, requeues;
} restart_row;

typedef struct snapshot {
    int n_types;
    char type_names[GP_MAX_GPU_TYPES][GP_NAME_MAX];
    gpu_class gpus[GP_MAX_GPU_TYPES][SHARING_MODES];
    int64_t nodes_up, nodes_lost, nodes_draining;
    gp_engine_stats st;
    tenant_row *tenants;
    size_t n_tenants;
    agent_row *agents;
    size_t n_agents, cap_agents;
    int64_t now_ms;
    size_t tokens;
    uint64_t wakeups;
    gp_metrics counters;
    restart_row restarted[GP_METRICS_RESTARTED_JOBS];
    size_t n_restarted;
    gp_auth_failure_counts signin_failures;
    bool failed; /* out of memory on the engine thread */
} snapshot;

/* ---- on the engine thread ---- */

static void snap_gpus(const gp_engine *e, snapshot *s)
{
    s->n_types = gp_engine_gpu_type_count(e);
    for (int t = 0; t < s->n_types && t < GP_MAX_GPU_TYPES; t++)
        snprintf(s->type_names[t], sizeof s->type_names[t], "%s", gp_engine_gpu_type_name(e, t));
    for (uint32_t g = 0; g < gp_engine_gpu_count(e); g++) {
        gp_gpu_info gi;
        if (!gp_engine_gpu_get(e, g, &gi) || gi.type < 0 || gi.type >= GP_MAX_GPU_TYPES ||
            (unsigned)gi.sharing >= SHARING_MODES)
            continue;
        gpu_class *c = &s->gpus[gi.type][gi.sharing];
        if (gi.healthy)
            c->healthy++;
        else
            c->unhealthy++;
        c->allocated_milli += gi.sharing == GP_SHARING_EXCLUSIVE ? (gi.job ? 1000 : 0) : gi.used_milli;
    }
    for (uint32_t i = 0; i < gp_engine_node_count(e); i++) {
        gp_node_info n;
        if (!gp_engine_node_get(e, i, &n))
            continue;
        s->nodes_up += n.up;
        s->nodes_lost += !n.up;
        s->nodes_draining += n.up && n.draining;
    }
}

static void snap_tenant(const gp_tenant_info *t, int n_types, int64_t now, tenant_row *row)
{
    memset(row, 0, sizeof *row);
    snprintf(row->path, sizeof row->path, "%s", t->path);
    row->has_guarantee = t->has_guarantee;
    row->pending = t->pending_jobs;
    row->running = t->running_jobs;
    row->oldest_wait_s = t->oldest_pending_submit < 0 ? -1 : now - t->oldest_pending_submit;
    for (int d = 0; d < n_types && d < GP_MAX_GPU_TYPES; d++) {
        row->usage[d] = t->usage.v[d];
        row->guarantee[d] = t->has_guarantee ? t->guarantee.v[d] : 0;
        row->limit[d] = t->limit.v[d];
        row->rank += row->usage[d] > row->guarantee[d] ? row->usage[d] : row->guarantee[d];
    }
}

static void snap_tenants(const gp_engine *e, snapshot *s, int64_t now)
{
    size_t n = gp_engine_tenant_count(e);
    s->tenants = calloc(n ? n : 1, sizeof *s->tenants);
    if (!s->tenants) {
        s->failed = true;
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        gp_tenant_info t;
        if (gp_engine_tenant_get(e, i, &t))
            snap_tenant(&t, s->n_types, now, &s->tenants[s->n_tenants++]);
    }
}

static void snap_agent(void *ctx, const char *node, int64_t last_seen_ms)
{
    snapshot *s = ctx;
    agent_row *a = gp_grow(s->agents, &s->cap_agents, s->n_agents + 1, sizeof *a);
    if (!a) {
        s->failed = true;
        return;
    }
    s->agents = a;
    agent_row *row = &s->agents[s->n_agents++];
    snprintf(row->node, sizeof row->node, "%s", node);
    row->last_seen_ms = last_seen_ms;
}

static bool job_live(gp_job_state s)
{
    return s == GP_JOB_PENDING || s == GP_JOB_ADMITTED || s == GP_JOB_RUNNING || s == GP_JOB_PREEMPTING;
}

/* The recently restarted jobs that still live, with the engine's counts. */
static void snap_restarted(gp_server *srv, const gp_engine *e, snapshot *s)
{
    uint64_t ids[GP_METRICS_RESTARTED_JOBS];
    size_t n = gp_metrics_restarted(&srv->metrics, ids);
    for (size_t i = 0; i < n; i++) {
        gp_job_info j;
        if (gp_engine_job_info(e, ids[i], &j, NULL) != GP_OK || !job_live(j.state))
            continue;
        restart_row *row = &s->restarted[s->n_restarted++];
        row->id = j.id;
        snprintf(row->tenant, sizeof row->tenant, "%s", gp_engine_tenant_path(e, j.tenant));
        row->restarts = j.restarts;
        row->requeues = j.requeues;
    }
}

static void snapshot_run(gp_server *srv, gp_op *op, int64_t now)
{
    snapshot *s = op->arg;
    const gp_engine *e = srv->journal.engine;
    gp_engine_stats_get(e, &s->st);
    snap_gpus(e, s);
    snap_tenants(e, s, now);
    snap_restarted(srv, e, s);
    gp_agents_each_seen(&srv->agents, snap_agent, s);
    s->now_ms = gp_wall_ms();
    s->tokens = gp_auth_count(&srv->auth);
    s->wakeups = gp_agents_wakeups(&srv->agents);
    op->status = s->failed ? 503 : 200;
}

/* ---- on the API thread: the text ---- */

/* A label value as the text format wants it: \ " and newline escaped. */
static void put_label(FILE *f, const char *value)
{
    for (const char *c = value; *c; c++) {
        if (*c == '\\' || *c == '"')
            fputc('\\', f);
        if (*c == '\n')
            fputs("\\n", f);
        else
            fputc(*c, f);
    }
}

static void header(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void histogram(FILE *f, const char *name, const char *labels, const gp_histogram *h)
{
    const char *sep = labels[0] ? "," : "";
    for (int i = 0; i < GP_METRICS_BUCKETS; i++)
        fprintf(f, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, gp_metrics_bounds[i],
                (unsigned long long)h->bucket[i]);
    fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (unsigned long long)h->count);
    fprintf(f, "%s_sum%s%s%s %.6f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "", h->sum);
    fprintf(f, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
            (unsigned long long)h->count);
}

/* OIDC sign-ins refused, by reason (oidc.h's names; every reason, 0 too). */
static void write_auth_refusals(FILE *f, gp_server *srv)
{
    header(f, "gpupool_auth_refusals_total", "counter", "provider tokens refused, by reason");
    for (int i = GP_OIDC_BAD_SIGNATURE; i < GP_OIDC_RESULT_COUNT; i++)
        fprintf(f, "gpupool_auth_refusals_total{reason=\"%s\"} %llu\n", gp_oidc_result_name((gp_oidc_result)i),
                (unsigned long long)atomic_load(&srv->auth_refusals[i]));
}

static void write_daemon(FILE *f, gp_server *srv, const snapshot *s)
{
    header(f, "gpupool_requests_total", "counter", "API requests answered");
    fprintf(f, "gpupool_requests_total %llu\n", (unsigned long long)atomic_load(&srv->requests));
    header(f, "gpupool_request_errors_total", "counter", "API requests answered 4xx or 5xx");
    fprintf(f, "gpupool_request_errors_total{class=\"4xx\"} %llu\ngpupool_request_errors_total{class=\"5xx\"} %llu\n",
            (unsigned long long)atomic_load(&srv->errors_4xx), (unsigned long long)atomic_load(&srv->errors_5xx));
    header(f, "gpupool_submits_total", "counter", "jobs submitted");
    fprintf(f, "gpupool_submits_total %llu\n", (unsigned long long)atomic_load(&srv->submits));
    header(f, "gpupool_batches_total", "counter", "engine thread batches committed");
    fprintf(f, "gpupool_batches_total %llu\n", (unsigned long long)atomic_load(&srv->loop.batches));
    header(f, "gpupool_batch_ops_total", "counter", "requests handled in engine thread batches");
    fprintf(f, "gpupool_batch_ops_total %llu\n", (unsigned long long)atomic_load(&srv->loop.ops));
    header(f, "gpupool_batch_max", "gauge", "most requests in one batch so far");
    fprintf(f, "gpupool_batch_max %llu\n", (unsigned long long)atomic_load(&srv->loop.max_batch));
    header(f, "gpupool_batch_seconds_total", "counter", "time spent in batches, start to commit");
    fprintf(f, "gpupool_batch_seconds_total %.3f\n", (double)atomic_load(&srv->loop.commits_ms_total) / 1000.0);
    header(f, "gpupool_passes_total", "counter", "scheduling passes");
    fprintf(f, "gpupool_passes_total %llu\n", (unsigned long long)atomic_load(&srv->loop.ticks));
    header(f, "gpupool_jobs", "gauge", "live jobs by state");
    fprintf(f, "gpupool_jobs{state=\"pending\"} %zu\ngpupool_jobs{state=\"running\"} %zu\n"
               "gpupool_jobs{state=\"preempting\"} %zu\n",
            s->st.pending, s->st.running, s->st.preempting);
    header(f, "gpupool_tokens", "gauge", "live API tokens");
    fprintf(f, "gpupool_tokens %zu\n", s->tokens);
    header(f, "gpupool_agent_poll_wakeups_total", "counter", "agent long-polls woken by a commit touching their node");
    fprintf(f, "gpupool_agent_poll_wakeups_total %llu\n", (unsigned long long)s->wakeups);
    write_auth_refusals(f, srv);
}

/* The usage ledger: the last verification (at start and at each GET
 * /v1/ledger/verify) and the head as last logged. */
static void write_ledger(FILE *f, gp_ledger_state *l)
{
    pthread_mutex_lock(&l->lock);
    int ok = l->verify_ok;
    int64_t at = l->verified_at, head = l->head_seq;
    pthread_mutex_unlock(&l->lock);
    if (ok >= 0) {
        header(f, "gpupool_ledger_verify_ok", "gauge", "1 when the usage ledger's chain verified, 0 when not");
        fprintf(f, "gpupool_ledger_verify_ok %d\n", ok);
        header(f, "gpupool_ledger_verified_timestamp_seconds", "gauge", "when the ledger was last verified");
        fprintf(f, "gpupool_ledger_verified_timestamp_seconds %lld\n", (long long)at);
    }
    header(f, "gpupool_ledger_head_seq", "gauge", "the ledger head's sequence number as last logged");
    fprintf(f, "gpupool_ledger_head_seq %lld\n", (long long)head);
}

static void write_fleet(FILE *f, const snapshot *s)
{
    header(f, "gpupool_gpus", "gauge", "GPUs by model, sharing mode and health");
    for (int t = 0; t < s->n_types && t < GP_MAX_GPU_TYPES; t++)
        for (int m = 0; m < SHARING_MODES; m++) {
            const gpu_class *c = &s->gpus[t][m];
            if (!c->healthy && !c->unhealthy)
                continue;
            const char *mode = gp_sharing_name((gp_sharing)m);
            fprintf(f, "gpupool_gpus{gpu_model=\"%s\",sharing=\"%s\",health=\"healthy\"} %lld\n", s->type_names[t],
                    mode, (long long)c->healthy);
            fprintf(f, "gpupool_gpus{gpu_model=\"%s\",sharing=\"%s\",health=\"unhealthy\"} %lld\n", s->type_names[t],
                    mode, (long long)c->unhealthy);
        }
    header(f, "gpupool_gpus_allocated", "gauge", "GPUs allocated to jobs (fractions for shared GPUs)");
    for (int t = 0; t < s->n_types && t < GP_MAX_GPU_TYPES; t++)
        for (int m = 0; m < SHARING_MODES; m++)
            if (s->gpus[t][m].healthy || s->gpus[t][m].unhealthy)
                fprintf(f, "gpupool_gpus_allocated{gpu_model=\"%s\",sharing=\"%s\"} %.3f\n", s->type_names[t],
                        gp_sharing_name((gp_sharing)m), (double)s->gpus[t][m].allocated_milli / 1000.0);
    header(f, "gpupool_nodes", "gauge", "nodes by state (draining nodes are also up)");
    fprintf(f, "gpupool_nodes{state=\"up\"} %lld\ngpupool_nodes{state=\"lost\"} %lld\n"
               "gpupool_nodes{state=\"draining\"} %lld\n",
            (long long)s->nodes_up, (long long)s->nodes_lost, (long long)s->nodes_draining);
    header(f, "gpupool_agent_heartbeat_age_seconds", "gauge", "time since each agent node's last heartbeat");
    for (size_t i = 0; i < s->n_agents; i++) {
        fputs("gpupool_agent_heartbeat_age_seconds{node=\"", f);
        put_label(f, s->agents[i].node);
        fprintf(f, "\"} %.3f\n", (double)(s->now_ms - s->agents[i].last_seen_ms) / 1000.0);
    }
}

static int rank_cmp(const void *a, const void *b)
{
    const tenant_row *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank > y->rank ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* One per-model gauge of a labelled tenant; never an unlimited limit, and
 * zeros only where they say something (skip_zero: a guarantee of 0). */
static void tenant_gauge(FILE *f, const char *name, const snapshot *s, const tenant_row *t, const int64_t *v,
                         bool skip_zero)
{
    for (int d = 0; d < s->n_types && d < GP_MAX_GPU_TYPES; d++) {
        if (v[d] == GP_UNLIMITED || (v[d] == 0 && skip_zero))
            continue;
        fprintf(f, "%s{tenant=\"", name);
        put_label(f, t->path);
        fprintf(f, "\",gpu_model=\"%s\"} %.3f\n", s->type_names[d], (double)v[d] / 1000.0);
    }
}

static void queue_line(FILE *f, const char *name, const char *tenant, double value)
{
    fprintf(f, "%s{tenant=\"", name);
    put_label(f, tenant);
    fprintf(f, "\"} %g\n", value);
}

static void write_tenants(FILE *f, const snapshot *s, size_t top)
{
    size_t n = s->n_tenants < top ? s->n_tenants : top;
    static const char *const names[3] = {"gpupool_tenant_usage_gpus", "gpupool_tenant_guarantee_gpus",
                                         "gpupool_tenant_limit_gpus"};
    static const char *const helps[3] = {"GPUs in use by the tenant and its subtree",
                                         "the tenant's guaranteed GPUs", "the most GPUs the tenant's subtree may hold"};
    for (int k = 0; k < 3; k++) {
        header(f, names[k], "gauge", helps[k]);
        for (size_t i = 0; i < n; i++) {
            const tenant_row *t = &s->tenants[i];
            tenant_gauge(f, names[k], s, t, k == 0 ? t->usage : k == 1 ? t->guarantee : t->limit, k == 1);
        }
    }
    tenant_row other = {.path = "other", .oldest_wait_s = -1};
    for (size_t i = n; i < s->n_tenants; i++) {
        other.pending += s->tenants[i].pending;
        other.running += s->tenants[i].running;
        if (s->tenants[i].oldest_wait_s > other.oldest_wait_s)
            other.oldest_wait_s = s->tenants[i].oldest_wait_s;
    }
    header(f, "gpupool_tenant_pending_jobs", "gauge", "jobs waiting in the tenant's own queue");
    for (size_t i = 0; i < n; i++)
        queue_line(f, "gpupool_tenant_pending_jobs", s->tenants[i].path, s->tenants[i].pending);
    if (n < s->n_tenants)
        queue_line(f, "gpupool_tenant_pending_jobs", "other", other.pending);
    header(f, "gpupool_tenant_running_jobs", "gauge", "the tenant's own running jobs");
    for (size_t i = 0; i < n; i++)
        queue_line(f, "gpupool_tenant_running_jobs", s->tenants[i].path, s->tenants[i].running);
    if (n < s->n_tenants)
        queue_line(f, "gpupool_tenant_running_jobs", "other", other.running);
    header(f, "gpupool_tenant_oldest_pending_seconds", "gauge",
           "how long the tenant's longest-waiting pending job has waited (absent: none waits)");
    for (size_t i = 0; i < n; i++)
        if (s->tenants[i].oldest_wait_s >= 0)
            queue_line(f, "gpupool_tenant_oldest_pending_seconds", s->tenants[i].path,
                       (double)s->tenants[i].oldest_wait_s);
    if (n < s->n_tenants && other.oldest_wait_s >= 0)
        queue_line(f, "gpupool_tenant_oldest_pending_seconds", "other", (double)other.oldest_wait_s);
}

static void write_counters(FILE *f, const gp_metrics *m)
{
    header(f, "gpupool_preemptions_total", "counter", "jobs preempted or stopped by the scheduler, by reason");
    for (int r = 0; r < GP_PREEMPT_REASONS; r++)
        fprintf(f, "gpupool_preemptions_total{reason=\"%s\"} %llu\n", gp_preempt_reason_names[r],
                (unsigned long long)m->preemptions[r]);
    header(f, "gpupool_booking_changes_total", "counter",
           "advance bookings' state changes by the state reached; to=\"note\": a substitution or shortage");
    for (int k = 0; k < GP_METRICS_BOOKING_KINDS; k++)
        fprintf(f, "gpupool_booking_changes_total{to=\"%s\"} %llu\n",
                k == GP_METRICS_BOOKING_NOTE ? "note" : gp_booking_state_name((gp_booking_state)k),
                (unsigned long long)m->booking_changes[k]);
    header(f, "gpupool_scheduling_pass_duration_seconds", "histogram", "scheduling pass duration");
    histogram(f, "gpupool_scheduling_pass_duration_seconds", "", &m->pass_seconds);
    header(f, "gpupool_store_commit_duration_seconds", "histogram", "a batch's commit (fsync), sent to answer seen");
    histogram(f, "gpupool_store_commit_duration_seconds", "", &m->commit_seconds);
    header(f, "gpupool_http_requests_total", "counter", "API requests by route, method and status code");
    for (size_t i = 0; i < m->n_requests; i++)
        fprintf(f, "gpupool_http_requests_total{route=\"%s\",method=\"%s\",code=\"%d\"} %llu\n", m->requests[i].route,
                m->requests[i].method, m->requests[i].status, (unsigned long long)m->requests[i].seconds.count);
    header(f, "gpupool_http_request_duration_seconds", "histogram", "API request handling time");
    for (size_t i = 0; i < m->n_requests; i++) {
        char labels[160];
        snprintf(labels, sizeof labels, "route=\"%s\",method=\"%s\",code=\"%d\"", m->requests[i].route,
                 m->requests[i].method, m->requests[i].status);
        histogram(f, "gpupool_http_request_duration_seconds", labels, &m->requests[i].seconds);
    }
}

static void failure_lines(FILE *f, const char *name, const char *label, const gp_auth_failure_count *keys, int n)
{
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s{%s=\"", name, label);
        put_label(f, keys[i].key);
        fprintf(f, "\"} %u\n", keys[i].failures);
    }
}

/* Failed sign-ins (auth_failures.h): the total, and by address and by
 * user over the last ten minutes. */
static void write_signin_failures(FILE *f, const gp_auth_failure_counts *c)
{
    header(f, "gpupool_signin_failures_total", "counter", "credentials presented and refused");
    fprintf(f, "gpupool_signin_failures_total %llu\n", (unsigned long long)c->total);
    header(f, "gpupool_signin_failures_by_address", "gauge",
           "failed sign-ins in the last 10 minutes by remote address (64 addresses at most)");
    failure_lines(f, "gpupool_signin_failures_by_address", "address", c->by_address, c->n_address);
    header(f, "gpupool_signin_failures_by_user", "gauge",
           "failed sign-ins in the last 10 minutes by the user the credential names (64 users at most)");
    failure_lines(f, "gpupool_signin_failures_by_user", "user", c->by_user, c->n_user);
}

static void restart_line(FILE *f, const restart_row *j, const char *cause, int value)
{
    fprintf(f, "gpupool_job_restarts_total{job_id=\"%llu\",tenant=\"", (unsigned long long)j->id);
    put_label(f, j->tenant);
    fprintf(f, "\",cause=\"%s\"} %d\n", cause, value);
}

/* Crash loops: the recently restarted live jobs' counts (metrics.h). */
static void write_restarts(FILE *f, const snapshot *s)
{
    header(f, "gpupool_job_restarts_total", "counter",
           "times a live job recently sent back to pending was restarted after a failure or requeued after it ran");
    for (size_t i = 0; i < s->n_restarted; i++) {
        restart_line(f, &s->restarted[i], "failure", s->restarted[i].restarts);
        restart_line(f, &s->restarted[i], "requeue", s->restarted[i].requeues);
    }
}

/* Each labelled tenant's usual use for this hour of the week (baseline.h);
 * none when the store cannot be read now (the next scrape tries again). */
static void write_baselines(FILE *f, gp_server *srv, const snapshot *s, size_t top)
{
    gp_error err;
    gp_store *reader = gp_readers_take(&srv->readers, &err);
    gp_err rc = reader ? gp_baseline_refresh(&srv->baseline, reader, s->now_ms / 1000, &err) : err.code;
    gp_readers_give(&srv->readers, reader);
    if (rc != GP_OK) {
        char q[300];
        gp_log(GP_LOG_WARN, "baseline", "error=%s", gp_log_quote(err.message, q, sizeof q));
        return;
    }
    size_t n = s->n_tenants < top ? s->n_tenants : top;
    header(f, "gpupool_tenant_gpu_baseline", "gauge",
           "the tenant's usual GPUs in use for this hour of the week over the past 4 weeks (mean, p90)");
    gp_baseline_stat *stats = calloc(n ? n : 1, sizeof *stats);
    for (size_t i = 0; stats && i < n; i++) {
        if (!gp_baseline_of(&srv->baseline, s->tenants[i].path, &stats[i]))
            continue;
        fputs("gpupool_tenant_gpu_baseline{tenant=\"", f);
        put_label(f, s->tenants[i].path);
        fprintf(f, "\",stat=\"mean\"} %.3f\ngpupool_tenant_gpu_baseline{tenant=\"", stats[i].mean);
        put_label(f, s->tenants[i].path);
        fprintf(f, "\",stat=\"p90\"} %.3f\n", stats[i].p90);
    }
    header(f, "gpupool_tenant_gpu_baseline_history", "gauge", "weeks of history in the tenant's baseline (0-4)");
    for (size_t i = 0; stats && i < n; i++)
        queue_line(f, "gpupool_tenant_gpu_baseline_history", s->tenants[i].path, stats[i].weeks);
    free(stats);
}

static char *metrics_text(gp_server *srv, snapshot *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    qsort(s->tenants, s->n_tenants, sizeof *s->tenants, rank_cmp);
    write_daemon(f, srv, s);
    write_ledger(f, &srv->ledger);
    write_fleet(f, s);
    size_t top = (size_t)(srv->cfg.metrics_tenants > 0 ? srv->cfg.metrics_tenants : 0);
    write_tenants(f, s, top);
    write_baselines(f, srv, s, top);
    write_counters(f, &s->counters);
    write_restarts(f, s);
    write_signin_failures(f, &s->signin_failures);
    fclose(f);
    return text;
}

void gp_api_metrics(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (!r->srv->cfg.metrics_open && !gp_principal_sees_all(&r->who)) {
        gp_api_forbidden(r, "read metrics");
        return;
    }
    snapshot *s = calloc(1, sizeof *s);
    if (!s) {
        gp_api_error(r, 503, "unavailable", "", "out of memory");
        return;
    }
    gp_op op = {.run = snapshot_run, .arg = s, .who = &r->who, .request_id = r->request_id};
    gp_loop_run(&r->srv->loop, &op);
    json_decref(op.reply); /* only a shutdown answers one */
    gp_metrics_copy(&r->srv->metrics, &s->counters);
    gp_auth_failures_copy(&r->srv->auth_failures, s->now_ms, &s->signin_failures);
    char *text = op.status == 200 ? metrics_text(r->srv, s) : NULL;
    free(s->tenants);
    free(s->agents);
    free(s);
    if (!text) {
        gp_api_error(r, 503, "unavailable", "", "metrics are not available");
        return;
    }
    r->status = 200;
    r->text_reply = text;
    r->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

/* store_jobs.c - the materialized job, history and usage tables.
 *
 * The engine thread writes them from the engine's decisions (in the
 * transaction that logs the event); API threads read them through reader
 * connections, so listing 100,000 jobs never waits for the engine.
 *
 * Scoping is done here, in SQL, so a caller never receives a row it may not
 * see: a scope "a/b" admits tenant "a/b" and every tenant below it.  Job
 * lists use the job_scope table (a row per ancestor prefix of each job's
 * tenant), so "newest 100 jobs of subtree a/b" is one index range read
 * backwards.  Usage sums use the range ("a/b/", "a/b0") -- '0' is the
 * character after '/' -- which needs no LIKE escaping.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writes ---- */

static void bind_times(gp_db_stmt *st, int first, const gp_store_job *j)
{
    int64_t t[3] = {j->bind_time, j->end_time, j->updated};
    for (int i = 0; i < 3; i++)
        gp__store_bind_int_or_null(st, first + i, t[i]);
}

gp_err gp_store_job_insert(gp_store *s, const gp_store_job *j, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_JOB_INSERT, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)j->id);
    gp_db_bind_text(st, 2, j->tenant);
    gp_db_bind_text(st, 3, j->user);
    gp_db_bind_text(st, 4, j->name);
    gp_db_bind_text(st, 5, j->state);
    gp_db_bind_text(st, 6, j->cls);
    gp_db_bind_text(st, 7, j->reason);
    gp_db_bind_int64(st, 8, j->submit_time);
    bind_times(st, 9, j);
    gp_db_bind_text(st, 12, j->spec_json);
    gp_db_bind_text(st, 13, j->placement_json);
    gp__store_bind_int_or_null(st, 14, j->array_id > 0 ? (int64_t)j->array_id : -1);
    gp__store_bind_int_or_null(st, 15, j->array_id > 0 ? j->array_index : -1);
    gp_err rc = gp__store_exec_stmt(st, "job insert", err);
    /* one job_scope row per prefix: "a", "a/b", ... the tenant itself */
    char prefix[256];
    size_t len = strlen(j->tenant);
    if (rc != GP_OK)
        return rc;
    if (len >= sizeof prefix)
        return gp_error_set(err, GP_ERR_INVALID, "tenant", "tenant path longer than %zu", sizeof prefix - 1);
    memcpy(prefix, j->tenant, len + 1);
    for (size_t i = 1; rc == GP_OK && i <= len; i++) {
        if (j->tenant[i] != '/' && j->tenant[i] != '\0')
            continue;
        gp_db_stmt *sc = gp__store_stmt(s, GP__ST_JOB_SCOPE, err);
        if (!sc)
            return err ? err->code : GP_ERR_INVALID;
        prefix[i] = '\0';
        gp_db_bind_text(sc, 1, prefix);
        gp_db_bind_int64(sc, 2, (int64_t)j->id);
        rc = gp__store_exec_stmt(sc, "job scope", err);
        prefix[i] = j->tenant[i];
    }
    return rc;
}

gp_err gp_store_job_update(gp_store *s, const gp_store_job *j, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_JOB_UPDATE, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)j->id);
    gp_db_bind_text(st, 2, j->state);
    gp_db_bind_text(st, 3, j->cls);
    gp_db_bind_text(st, 4, j->reason);
    bind_times(st, 5, j);
    gp_db_bind_text(st, 8, j->placement_json);
    return gp__store_exec_stmt(st, "job update", err);
}

gp_err gp_store_job_spec_set(gp_store *s, uint64_t id, const char *spec_json, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_JOB_SPEC, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)id);
    gp_db_bind_text(st, 2, spec_json);
    return gp__store_exec_stmt(st, "job spec", err);
}

gp_err gp_store_history_add(gp_store *s, uint64_t job, int64_t time, const char *kind, const char *from,
                            const char *to, const char *reason, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_HISTORY_ADD, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)job);
    gp_db_bind_int64(st, 2, time);
    gp_db_bind_text(st, 3, kind);
    gp_db_bind_text(st, 4, from);
    gp_db_bind_text(st, 5, to);
    gp_db_bind_text(st, 6, reason);
    return gp__store_exec_stmt(st, "history add", err);
}

gp_err gp_store_run_add(gp_store *s, uint64_t job, int64_t bind_time, int replica, const char *node, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_RUN_ADD, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)job);
    gp_db_bind_int64(st, 2, bind_time);
    gp_db_bind_int64(st, 3, replica);
    gp_db_bind_text(st, 4, node);
    return gp__store_exec_stmt(st, "run add", err);
}

gp_err gp_store_run_started(gp_store *s, uint64_t job, int64_t bind_time, int replica, int64_t pid, bool *first,
                            gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_RUN_STARTED, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)job);
    gp_db_bind_int64(st, 2, bind_time);
    gp_db_bind_int64(st, 3, replica);
    gp_db_bind_int64(st, 4, pid);
    gp_err rc = gp__store_exec_stmt(st, "run started", err);
    *first = rc == GP_OK && gp_db_changes(s->conn) == 1;
    return rc;
}

gp_err gp_store_run_node(gp_store *s, uint64_t job, int64_t bind_time, int replica, char *node, size_t cap,
                         gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_RUN_NODE, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)job);
    gp_db_bind_int64(st, 2, bind_time);
    gp_db_bind_int64(st, 3, replica);
    int step = gp_db_step(st, err);
    const char *text = step == GP_DB_ROW ? gp_db_column_text(st, 0) : NULL;
    snprintf(node, cap, "%s", text ? text : "");
    gp_db_reset(st);
    return step != GP_DB_ERROR ? GP_OK : gp__store_failed(err, "run node");
}

int64_t gp_store_runs_list(gp_store *s, uint64_t job, int replica, int64_t *bind_times, size_t cap)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_RUN_LIST, NULL);
    if (!st)
        return -1;
    gp_db_bind_int64(st, 1, (int64_t)job);
    gp_db_bind_int64(st, 2, replica);
    int64_t n = 0;
    int step;
    while ((step = gp_db_step(st, NULL)) == GP_DB_ROW) {
        if ((size_t)n < cap)
            bind_times[n] = gp_db_column_int64(st, 0);
        n++;
    }
    gp_db_reset(st);
    return step == GP_DB_DONE ? n : -1;
}

gp_err gp_store_usage_open(gp_store *s, const gp_store_usage *u, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_USAGE_OPEN, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)u->interval_id);
    gp_db_bind_int64(st, 2, (int64_t)u->job_id);
    gp_db_bind_text(st, 3, u->tenant);
    gp_db_bind_text(st, 4, u->gpu_type);
    gp_db_bind_int64(st, 5, u->milli_gpus);
    gp_db_bind_text(st, 6, u->cls);
    gp_db_bind_text(st, 7, u->topology);
    gp_db_bind_int64(st, 8, u->start);
    return gp__store_exec_stmt(st, "usage open", err);
}

gp_err gp_store_usage_close(gp_store *s, uint64_t interval_id, int64_t end, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_USAGE_CLOSE, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)interval_id);
    gp_db_bind_int64(st, 2, end);
    return gp__store_exec_stmt(st, "usage close", err);
}

/* ---- scoped queries ---- */

enum { MAX_BINDS = 64, SQL_MAX = 4096 };

/* A WHERE clause under construction with its text parameters. */
typedef struct where {
    char sql[SQL_MAX];
    size_t len;
    const char *text[MAX_BINDS];
    char owned[MAX_BINDS][256];
    int n;
    bool overflow;
} where;

static void where_add(where *w, const char *fmt)
{
    int n = snprintf(w->sql + w->len, sizeof w->sql - w->len, "%s", fmt);
    if (n < 0 || (size_t)n >= sizeof w->sql - w->len)
        w->overflow = true;
    else
        w->len += (size_t)n;
}

static int where_param(where *w, const char *text, const char *suffix)
{
    if (w->n >= MAX_BINDS) {
        w->overflow = true;
        return 1;
    }
    snprintf(w->owned[w->n], sizeof w->owned[w->n], "%s%s", text, suffix);
    w->text[w->n] = w->owned[w->n];
    return ++w->n;
}

/* "(tenant = ?a OR (tenant > ?b AND tenant < ?c))" for the subtree of path. */
static void where_subtree(where *w, const char *column, const char *path)
{
    char frag[256];
    int a = where_param(w, path, "");
    int b = where_param(w, path, "/");
    int c = where_param(w, path, "0");
    snprintf(frag, sizeof frag, "(%s = ?%d OR (%s > ?%d AND %s < ?%d))", column, a, column, b, column, c);
    where_add(w, frag);
}

static void where_scopes(where *w, const char *column, const char *const *scopes, int n_scopes, const char *tenant)
{
    where_add(w, " WHERE 1 = 1");
    if (scopes) {
        where_add(w, " AND (1 = 0");
        for (int i = 0; i < n_scopes; i++) {
            where_add(w, " OR ");
            where_subtree(w, column, scopes[i]);
        }
        where_add(w, ")");
    }
    if (tenant) {
        where_add(w, " AND ");
        where_subtree(w, column, tenant);
    }
}

static gp_err where_prepare(gp_store *s, where *w, gp_db_stmt **st, gp_error *err)
{
    if (w->overflow)
        return gp_error_set(err, GP_ERR_INVALID, "tenant", "too many tenant scopes in one query");
    *st = gp__store_prepare(s, w->sql, 0, "query", err);
    if (!*st)
        return err ? err->code : GP_ERR_INVALID;
    for (int i = 0; i < w->n; i++)
        gp_db_bind_text(*st, i + 1, w->text[i]);
    return GP_OK;
}

static json_t *history_of(gp_store *s, uint64_t id)
{
    json_t *list = json_array();
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT time, kind, from_state AS \"from\", to_state AS \"to\", reason FROM"
                                       " job_history WHERE job_id = ?1 ORDER BY seq",
                                       0, "history", NULL);
    if (!st)
        return list;
    gp_db_bind_int64(st, 1, (int64_t)id);
    while (gp_db_step(st, NULL) == GP_DB_ROW)
        json_array_append_new(list, gp__store_row_json(st));
    gp_db_finalize(st);
    return list;
}

/* last_exit: the newest report of a replica's end ("replica 0 on t4-2:
 * exit code 3 (exited)"), NULL when none (job_history_by_job finds it) */
#define LAST_EXIT                                                                                                \
    " (SELECT h.reason FROM job_history h WHERE h.job_id = j.id AND h.kind = 'exit' ORDER BY h.seq DESC LIMIT 1)" \
    " AS last_exit"

#define JOB_COLUMNS                                                                                              \
    "SELECT id, tenant, \"user\", name, state, class, reason, submit_time, bind_time, end_time, updated,"            \
    " spec_json, placement_json," LAST_EXIT " FROM jobs j"

gp_err gp_store_job_get(gp_store *s, uint64_t id, json_t **out, gp_error *err)
{
    *out = NULL;
    gp_db_stmt *st = gp__store_prepare(s, JOB_COLUMNS " WHERE id = ?1", 0, "job get", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)id);
    if (gp_db_step(st, NULL) == GP_DB_ROW)
        *out = gp__store_row_json(st);
    gp_db_finalize(st);
    if (*out)
        json_object_set_new(*out, "history", history_of(s, id));
    return GP_OK;
}

#define JOB_COLUMNS_J                                                                                            \
    "SELECT j.id, j.tenant, j.\"user\", j.name, j.state, j.class, j.reason, j.submit_time, j.bind_time, j.end_time,"  \
    " j.updated, j.spec_json, j.placement_json," LAST_EXIT

static bool covers(const char *scope, const char *path)
{
    size_t n = strlen(scope);
    return strncmp(scope, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The one subtree a listing reads, from the caller's scope and its tenant
 * filter; *empty when they do not meet.  NULL = every job. */
static const char *list_prefix(const gp_store_job_filter *f, bool *empty)
{
    *empty = false;
    const char *scope = f->scopes && f->n_scopes == 1 ? f->scopes[0] : NULL;
    if (!scope)
        return f->tenant;
    if (!f->tenant || covers(scope, f->tenant))
        return f->tenant ? f->tenant : scope;
    if (covers(f->tenant, scope))
        return scope;
    *empty = true;
    return NULL;
}

/* Jobs alive some time in [from, to): submitted before to, not ended before from. */
static void where_window(where *w, int64_t from, int64_t to)
{
    char frag[96];
    if (from > 0) {
        snprintf(frag, sizeof frag, " AND (j.end_time IS NULL OR j.end_time >= %lld)", (long long)from);
        where_add(w, frag);
    }
    if (to > 0) {
        snprintf(frag, sizeof frag, " AND j.submit_time < %lld", (long long)to);
        where_add(w, frag);
    }
}

gp_err gp_store_jobs_list(gp_store *s, const gp_store_job_filter *f, json_t **out, gp_error *err)
{
    where w = {0};
    bool empty;
    *out = NULL;
    if (f->scopes && f->n_scopes != 1)
        return gp_error_set(err, GP_ERR_INVALID, "tenant", "a listing takes exactly one scope");
    const char *prefix = list_prefix(f, &empty);
    if (prefix) {
        char frag[128];
        where_add(&w, JOB_COLUMNS_J " FROM job_scope s JOIN jobs j ON j.id = s.job_id");
        snprintf(frag, sizeof frag, " WHERE s.prefix = ?%d", where_param(&w, prefix, ""));
        where_add(&w, frag);
    } else {
        where_add(&w, JOB_COLUMNS_J " FROM jobs j WHERE 1 = 1");
    }
    if (empty)
        where_add(&w, " AND 1 = 0");
    if (f->state && strcmp(f->state, "live") == 0) {
        where_add(&w, " AND j.state IN ('pending', 'admitted', 'running', 'preempting')");
    } else if (f->state) {
        char frag[64];
        snprintf(frag, sizeof frag, " AND j.state = ?%d", where_param(&w, f->state, ""));
        where_add(&w, frag);
    }
    if (f->user) {
        char frag[64];
        snprintf(frag, sizeof frag, " AND j.\"user\" = ?%d", where_param(&w, f->user, ""));
        where_add(&w, frag);
    }
    if (f->before > 0) {
        char frag[64];
        snprintf(frag, sizeof frag, " AND %s < %llu", prefix ? "s.job_id" : "j.id", (unsigned long long)f->before);
        where_add(&w, frag);
    }
    where_window(&w, f->from, f->to);
    int limit = f->limit < 1 ? 1 : f->limit > 1000 ? 1000 : f->limit;
    char tail[64];
    snprintf(tail, sizeof tail, " ORDER BY %s DESC LIMIT %d", prefix ? "s.job_id" : "j.id", limit + 1);
    where_add(&w, tail);
    gp_db_stmt *st;
    gp_err rc = where_prepare(s, &w, &st, err);
    if (rc)
        return rc;
    json_t *jobs = json_array();
    json_t *next = json_null();
    int n = 0;
    while (gp_db_step(st, NULL) == GP_DB_ROW) {
        if (n++ == limit) {
            json_decref(next);
            next = json_integer(json_integer_value(json_object_get(json_array_get(jobs, limit - 1), "id")));
            break;
        }
        json_array_append_new(jobs, gp__store_row_json(st));
    }
    gp_db_finalize(st);
    *out = json_pack("{s:o, s:o}", "jobs", jobs, "next", next);
    return GP_OK;
}

gp_err gp_store_array_members(gp_store *s, uint64_t array_id, json_t **out, gp_error *err)
{
    *out = NULL;
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT id, array_index, tenant, \"user\", state, reason FROM jobs"
                                       " WHERE array_id = ?1 ORDER BY array_index",
                                       0, "array members", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)array_id);
    json_t *members = json_array();
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW)
        json_array_append_new(members, gp__store_row_json(st));
    gp_db_finalize(st);
    if (step == GP_DB_ERROR) {
        json_decref(members);
        return gp__store_failed(err, "array members");
    }
    *out = members;
    return GP_OK;
}

gp_err gp_store_live_jobs_scan(gp_store *s, gp_store_job_fn fn, void *ctx, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT id, state, placement_json FROM jobs"
                                       " WHERE state IN ('pending', 'admitted', 'running', 'preempting') ORDER BY id",
                                       GP_DB_STREAM, "live jobs", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_err rc = GP_OK;
    int step;
    while (rc == GP_OK && (step = gp_db_step(st, err)) == GP_DB_ROW)
        rc = fn(ctx, (uint64_t)gp_db_column_int64(st, 0), gp_db_column_text(st, 1), gp_db_column_text(st, 2), err);
    if (rc == GP_OK && step == GP_DB_ERROR)
        rc = gp__store_failed(err, "live jobs");
    gp_db_finalize(st);
    return rc;
}

gp_err gp_store_usage_query(gp_store *s, const char *const *scopes, int n_scopes, const char *tenant, bool by_user,
                            int64_t from, int64_t to, int64_t now, json_t **out, gp_error *err)
{
    where w = {0};
    char head[1024];
    const char *user = by_user ? "j.\"user\"" : "NULL";
    *out = NULL;
    /* each interval's overlap with [from, to), an open one's up to now:
     * min(end, to) - max(start, from), in CASE (min/max of two values are
     * not portable SQL); the job's user from its row */
    snprintf(head, sizeof head,
             "SELECT tenant, usr, gpu_type, class,"
             " CAST(SUM(CASE WHEN e > b THEN (e - b) * milli_gpus ELSE 0 END) AS BIGINT)"
             " AS milli_gpu_seconds FROM (SELECT u.tenant AS tenant, %s AS usr, u.gpu_type AS gpu_type,"
             " u.class AS class, u.milli_gpus AS milli_gpus,"
             " CASE WHEN COALESCE(u.end_time, %lld) < %lld THEN COALESCE(u.end_time, %lld) ELSE %lld END AS e,"
             " CASE WHEN u.start > %lld THEN u.start ELSE %lld END AS b FROM usage u LEFT JOIN jobs j ON j.id = u.job_id",
             user, (long long)now, (long long)to, (long long)now, (long long)to, (long long)from, (long long)from);
    where_add(&w, head);
    where_scopes(&w, "u.tenant", scopes, n_scopes, tenant);
    char tail[256];
    snprintf(tail, sizeof tail,
             " AND u.start < %lld AND COALESCE(u.end_time, %lld) > %lld) x GROUP BY tenant, usr, gpu_type, class"
             " ORDER BY tenant, usr, gpu_type, class",
             (long long)to, (long long)now, (long long)from);
    where_add(&w, tail);
    gp_db_stmt *st;
    gp_err rc = where_prepare(s, &w, &st, err);
    if (rc)
        return rc;
    json_t *rows = json_array();
    while (gp_db_step(st, NULL) == GP_DB_ROW) {
        int64_t milli = gp_db_column_int64(st, 4);
        const char *who = gp_db_column_text(st, 1);
        json_t *row = json_pack("{s:s, s:s, s:s, s:f}", "tenant", gp_db_column_text(st, 0), "gpu_type",
                                gp_db_column_text(st, 2), "class", gp_db_column_text(st, 3), "gpu_seconds",
                                (double)milli / 1000.0);
        if (by_user)
            json_object_set_new(row, "user", who ? json_string(who) : json_null());
        json_array_append_new(rows, row);
    }
    gp_db_finalize(st);
    *out = json_pack("{s:o, s:I, s:I}", "usage", rows, "from", (json_int_t)from, "to", (json_int_t)to);
    return GP_OK;
}

gp_err gp_store_usage_first_starts(gp_store *s, json_t **out, gp_error *err)
{
    *out = NULL;
    gp_db_stmt *st = gp__store_prepare(s, "SELECT tenant, MIN(start) FROM usage GROUP BY tenant", GP_DB_STREAM,
                                       "usage first starts", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    json_t *firsts = json_object();
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW)
        json_object_set_new(firsts, gp_db_column_text(st, 0), json_integer(gp_db_column_int64(st, 1)));
    gp_db_finalize(st);
    if (step == GP_DB_ERROR) {
        json_decref(firsts);
        return gp__store_failed(err, "usage first starts");
    }
    *out = firsts;
    return GP_OK;
}

gp_err gp_store_usage_scan(gp_store *s, int64_t from, int64_t to, int64_t now, gp_store_usage_fn fn, void *ctx,
                           gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT tenant, start, COALESCE(end_time, ?3), milli_gpus FROM usage"
                                       " WHERE start < ?2 AND COALESCE(end_time, ?3) > ?1",
                                       GP_DB_STREAM, "usage scan", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, from);
    gp_db_bind_int64(st, 2, to);
    gp_db_bind_int64(st, 3, now);
    gp_err rc = GP_OK;
    int step;
    while (rc == GP_OK && (step = gp_db_step(st, err)) == GP_DB_ROW)
        rc = fn(ctx, gp_db_column_text(st, 0), gp_db_column_int64(st, 1), gp_db_column_int64(st, 2),
                gp_db_column_int64(st, 3), err);
    if (rc == GP_OK && step == GP_DB_ERROR)
        rc = gp__store_failed(err, "usage scan");
    gp_db_finalize(st);
    return rc;
}

gp_err gp_store_use_query(gp_store *s, const char *const *scopes, int n_scopes, const char *tenant, json_t **out,
                          gp_error *err)
{
    where w = {0};
    *out = NULL;
    where_add(&w, "SELECT tenant, gpu_type, SUM(busy_gpu_s * milli_per_gpu) / 1000.0, CAST(SUM(lost_gpu_s) AS BIGINT)"
                  " FROM job_use");
    where_scopes(&w, "tenant", scopes, n_scopes, tenant);
    where_add(&w, " GROUP BY tenant, gpu_type");
    gp_db_stmt *st;
    gp_err rc = where_prepare(s, &w, &st, err);
    if (rc)
        return rc;
    json_t *byt = json_object();
    while (gp_db_step(st, NULL) == GP_DB_ROW) {
        const char *t = gp_db_column_text(st, 0);
        json_t *types = json_object_get(byt, t);
        if (!types)
            json_object_set_new(byt, t, types = json_object());
        json_object_set_new(types, gp_db_column_text(st, 1),
                            json_pack("[f, I]", gp_db_column_double(st, 2), (json_int_t)gp_db_column_int64(st, 3)));
    }
    gp_db_finalize(st);
    *out = byt;
    return GP_OK;
}

gp_err gp_store_preemptions_list(gp_store *s, const char *const *scopes, int n_scopes, int limit, json_t **out,
                                 gp_error *err)
{
    where w = {0};
    *out = NULL;
    where_add(&w, "SELECT h.time, h.job_id AS job, j.tenant, h.reason FROM job_history h JOIN jobs j ON j.id = h.job_id");
    where_scopes(&w, "j.tenant", scopes, n_scopes, NULL);
    char tail[96];
    snprintf(tail, sizeof tail, " AND h.kind = 'preempt' ORDER BY h.seq DESC LIMIT %d", limit);
    where_add(&w, tail);
    gp_db_stmt *st;
    gp_err rc = where_prepare(s, &w, &st, err);
    if (rc)
        return rc;
    json_t *rows = json_array();
    while (gp_db_step(st, NULL) == GP_DB_ROW)
        json_array_append_new(rows, gp__store_row_json(st));
    gp_db_finalize(st);
    *out = json_pack("{s:o}", "preemptions", rows);
    return GP_OK;
}

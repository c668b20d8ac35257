/* api_logs.c - the replicas' logs over HTTP (docs/api.md, "Job logs").
 *
 *   POST /v1/agents/{node}/logs      a node agent ships new bytes of its
 *        replicas' logs: {"logs": [{"job", "replica", "bind_time",
 *        "offset", "data" (base64), "eof"}]} -> {"results": [{"size"}]}
 *   GET  /v1/jobs/{id}/logs?replica=N&run=latest|BIND_TIME&offset=O&wait=S
 *        whoever may see the job reads them; wait long-polls for bytes
 *        past `offset`
 *
 * A node may ship only the runs that were placed on it (the store's
 * job_runs rows, kept after the job ended, so the last bytes of a replica
 * that exited arrive after its job finished).  Every entry is checked
 * before any is written (400/404/409 naming logs[i].field).  The bytes go
 * to joblogs.h's files.
 *
 * Example: job 7's replica 0 runs on n1, bound at 100.  n1 posts {"logs":
 * [{"job": 7, "replica": 0, "bind_time": 100, "offset": 0, "data":
 * "aGVsbG8K", "eof": false}]} -> {"results": [{"size": 6}]}; GET
 * /v1/jobs/7/logs -> {"run": 100, "offset": 0, "size": 6, "data":
 * "aGVsbG8K", "next": 6, "eof": false, ...}; GET ...?offset=6&wait=30
 * answers when the next bytes arrive (or after 30 s with none).  n2 posting
 * for job 7 replica 0 -> 404 "logs[0].job".
 *
 * Reading another user's logs is audited: a GET whose token does not run
 * as the job's user (an admin, an operator, a tenant-admin, a colleague
 * in the tenant) writes an audit row "job.logs.read" with the job,
 * replica, run and the job's user, committed before any byte is sent (no
 * row, no bytes: a store failure answers 503).  One row per token, job
 * and replica per ten minutes of reading (log_reads.h), so `gpupool logs
 * --follow` adds a row every ten minutes, not one per poll.  On a
 * follower replica such a read is answered 503 (it writes no audit row):
 * read from the leader.
 */
#include "server/api.h"

#include "spec/json_input.h"

#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ENTRIES = 64, MAX_WAIT_S = 300, MAX_RUNS = 256 };
#define READ_CAP ((size_t)512 * 1024) /* bytes per GET answer */

/* ---- POST /v1/agents/{node}/logs ---- */

typedef struct log_entry {
    gp_joblog_run run;
    int64_t offset;
    gnutls_datum_t bytes; /* decoded; gnutls_free */
    bool eof;
} log_entry;

static gp_err entry_data(const json_t *v, const char *name, log_entry *out, gp_error *err)
{
    if (!json_is_string(v))
        return gp_error_set(err, GP_ERR_INVALID, name, "%s must be a base64 string", name);
    gnutls_datum_t text = {(unsigned char *)json_string_value(v), (unsigned int)json_string_length(v)};
    if (text.size == 0)
        return GP_OK;
    if (gnutls_base64_decode2(&text, &out->bytes) != 0)
        return gp_error_set(err, GP_ERR_INVALID, name, "%s is not valid base64", name);
    return GP_OK;
}

static gp_err entry_field(const char *key, const json_t *v, const char *name, log_entry *out, gp_error *err)
{
    int64_t n;
    gp_err rc;
    if (strcmp(key, "data") == 0)
        return entry_data(v, name, out, err);
    if (strcmp(key, "eof") == 0)
        return gp_json_bool(v, name, &out->eof, err);
    if (strcmp(key, "job") == 0) {
        rc = gp_json_int(v, name, 1, INT64_MAX, &n, err);
        out->run.job = (uint64_t)n;
    } else if (strcmp(key, "replica") == 0) {
        rc = gp_json_int(v, name, 0, GP_MAX_REPLICAS - 1, &n, err);
        out->run.replica = (int)n;
    } else if (strcmp(key, "bind_time") == 0) {
        rc = gp_json_int(v, name, 0, INT64_MAX, &out->run.bind_time, err);
    } else if (strcmp(key, "offset") == 0) {
        rc = gp_json_int(v, name, 0, INT64_MAX / 2, &out->offset, err);
    } else {
        return gp_error_set(err, GP_ERR_INVALID, name, "unknown field %s", name);
    }
    return rc;
}

static gp_err entry_parse(const json_t *v, size_t i, log_entry *out, gp_error *err)
{
    static const char *const NEEDS[] = {"job", "replica", "bind_time", "offset", "data"};
    char field[32];
    snprintf(field, sizeof field, "logs[%zu]", i);
    gp_err rc = gp_json_object(v, field, err);
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x) {
        char name[96];
        gp_json_field_name(name, sizeof name, field, key);
        if (rc == GP_OK)
            rc = entry_field(key, x, name, out, err);
    }
    for (size_t k = 0; rc == GP_OK && k < sizeof NEEDS / sizeof NEEDS[0]; k++)
        if (!json_object_get(v, NEEDS[k]))
            rc = gp_error_set(err, GP_ERR_INVALID, field, "%s.%s is required", field, NEEDS[k]);
    return rc;
}

/* The entry's run was placed on node, and its offset leaves no gap. */
static gp_err entry_allowed(gp_server *srv, gp_store *s, const log_entry *x, size_t i, const char *node,
                            gp_error *err)
{
    char placed[GP_NAME_MAX], field[48];
    snprintf(field, sizeof field, "logs[%zu].job", i);
    gp_err rc = gp_store_run_node(s, x->run.job, x->run.bind_time, x->run.replica, placed, sizeof placed, err);
    if (rc == GP_OK && strcmp(placed, node) != 0)
        return gp_error_set(err, GP_ERR_NOT_FOUND, field,
                            "job %llu replica %d of the run bound at %lld was not placed on node %s",
                            (unsigned long long)x->run.job, x->run.replica, (long long)x->run.bind_time, node);
    char none[1];
    size_t n;
    int64_t size;
    bool eof;
    if (rc == GP_OK && (rc = gp_joblogs_read(&srv->joblogs, &x->run, x->offset, none, 0, &n, &size, &eof, err)))
        snprintf(err->field, sizeof err->field, "logs[%zu].offset", i);
    return rc;
}

static gp_err entries_parse(gp_server *srv, const json_t *list, const char *node, log_entry *items, gp_error *err)
{
    gp_err rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < json_array_size(list); i++)
        rc = entry_parse(json_array_get(list, i), i, &items[i], err);
    gp_store *s = rc == GP_OK ? gp_readers_take(&srv->readers, err) : NULL;
    if (rc == GP_OK && !s)
        rc = err->code;
    for (size_t i = 0; rc == GP_OK && i < json_array_size(list); i++)
        rc = entry_allowed(srv, s, &items[i], i, node, err);
    gp_readers_give(&srv->readers, s);
    return rc;
}

void gp_api_agent_logs(gp_request *r, const char *node)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !gp_api_node_caller(r, node))
        return;
    json_t *list;
    json_t *body = gp_api_body_list(r, "logs", MAX_ENTRIES, &list);
    if (!body)
        return;
    size_t n = json_array_size(list);
    gp_error err;
    gp_err rc = GP_OK;
    log_entry *items = calloc(n + 1, sizeof *items);
    if (rc == GP_OK && !items)
        rc = gp_error_set(&err, GP_ERR_NOMEM, "logs", "out of memory");
    if (rc == GP_OK)
        rc = entries_parse(r->srv, list, node, items, &err);
    json_t *results = json_array();
    for (size_t i = 0; rc == GP_OK && i < n; i++) {
        int64_t size;
        rc = gp_joblogs_append(&r->srv->joblogs, &items[i].run, items[i].offset, items[i].bytes.data,
                               items[i].bytes.size, items[i].eof, &size, &err);
        json_array_append_new(results, json_pack("{s:I}", "size", (json_int_t)size));
    }
    for (size_t i = 0; items && i < n; i++)
        gnutls_free(items[i].bytes.data);
    free(items);
    json_decref(body);
    if (rc != GP_OK) {
        json_decref(results);
        gp_api_fail(r, &err);
        return;
    }
    gp_api_reply(r, 200, json_pack("{s:o}", "results", results));
}

/* ---- GET /v1/jobs/{id}/logs ---- */

typedef struct log_query {
    int64_t replica, offset, wait;
    int64_t runs[MAX_RUNS];
    int64_t n_runs;
    gp_joblog_run run;
    bool has_run;
} log_query;

/* run=latest (default) or a bind time among the replica's runs. */
static bool pick_run(gp_request *r, log_query *q)
{
    const char *text = gp_api_query(r, "run");
    q->has_run = q->n_runs > 0;
    if (q->has_run)
        q->run.bind_time = q->runs[0]; /* newest first */
    if (!text || strcmp(text, "latest") == 0)
        return true;
    int64_t bind = -1;
    if (!gp_api_query_int(r, "run", 0, INT64_MAX, &bind))
        return false;
    for (int64_t i = 0; i < q->n_runs && i < MAX_RUNS; i++)
        if (q->runs[i] == bind) {
            q->run.bind_time = bind;
            return true;
        }
    gp_api_error(r, 404, "not_found", "run", "job %llu replica %lld has no run bound at %lld",
                 (unsigned long long)q->run.job, (long long)q->replica, (long long)bind);
    return false;
}

/* The job's row when the caller may see it (else replies 404), and the
 * replica's runs. */
static json_t *job_and_runs(gp_request *r, log_query *q)
{
    gp_error err;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    json_t *row = NULL;
    if (!s || gp_store_job_get(s, q->run.job, &row, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        gp_api_fail(r, &err);
        return NULL;
    }
    const char *tenant = json_string_value(json_object_get(row, "tenant"));
    if (!row || !tenant || !gp_principal_sees(&r->who, tenant)) {
        gp_readers_give(&r->srv->readers, s);
        json_decref(row);
        gp_api_error(r, 404, "not_found", "id", "no job %llu", (unsigned long long)q->run.job);
        return NULL;
    }
    q->n_runs = gp_store_runs_list(s, q->run.job, (int)q->replica, q->runs, MAX_RUNS);
    gp_readers_give(&r->srv->readers, s);
    if (q->n_runs < 0) {
        json_decref(row);
        gp_api_error(r, 503, "unavailable", "store", "cannot read the job's runs; try again");
        return NULL;
    }
    return row;
}

/* Reads from q's offset, waiting up to q->wait seconds for bytes when
 * there are none yet and the run has not ended. */
static gp_err read_or_wait(gp_request *r, const log_query *q, char *buf, size_t *n, int64_t *size, bool *eof,
                           gp_error *err)
{
    int64_t deadline = gp_wall_ms() + q->wait * 1000;
    for (;;) {
        uint64_t seen = gp_joblogs_appends(&r->srv->joblogs);
        gp_err rc = q->has_run ? gp_joblogs_read(&r->srv->joblogs, &q->run, q->offset, buf, READ_CAP, n, size, eof, err)
                               : GP_OK;
        int64_t left = deadline - gp_wall_ms();
        if (rc != GP_OK || *n > 0 || *eof || !q->has_run || left <= 0 || r->srv->joblogs.stopping)
            return rc;
        gp_joblogs_wait(&r->srv->joblogs, seen, left);
    }
}

/* The audit row of a read of another user's log: engine thread, in its batch. */
static void read_audited(gp_server *srv, gp_op *op, int64_t now)
{
    (void)srv;
    (void)now;
    op->status = 200;
}

/* Is this read of the job (its store row) another user's?  The token
 * reads its own only when it runs as the job's user. */
static bool another_users(const gp_request *r, const json_t *row)
{
    const char *owner = json_string_value(json_object_get(row, "user"));
    return !owner || !r->who.user[0] || strcmp(owner, r->who.user) != 0;
}

/* Writes the read's audit row when it is due (see the file header); false
 * when it could not be written (the reply says so). */
static bool audit_read(gp_request *r, const log_query *q, const json_t *row)
{
    int64_t now = gp_wall_ms() / 1000;
    if (!another_users(r, row) || !gp_log_reads_due(&r->srv->log_reads, r->who.token_id, q->run.job, q->run.replica, now))
        return true;
    const char *owner = json_string_value(json_object_get(row, "user"));
    gp_op op = {.run = read_audited, .mutates = true, .who = &r->who, .request_id = r->request_id,
                .action = "job.logs.read"};
    snprintf(op.target, sizeof op.target, "job/%llu/logs replica=%d run=%lld user=%s", (unsigned long long)q->run.job,
             q->run.replica, (long long)(q->has_run ? q->run.bind_time : -1), owner ? owner : "-");
    gp_loop_run(&r->srv->loop, &op);
    if (op.status != 200) {
        gp_api_error(r, 503, "unavailable", "logs", "the read's audit row could not be written; try again%s",
                     atomic_load(&r->srv->lease.leading) ? "" : " on the leader");
        json_decref(op.reply);
        return false;
    }
    json_decref(op.reply);
    gp_log_reads_done(&r->srv->log_reads, r->who.token_id, q->run.job, q->run.replica, now);
    return true;
}

static json_t *runs_json(const log_query *q)
{
    json_t *a = json_array();
    for (int64_t i = 0; i < q->n_runs && i < MAX_RUNS; i++)
        json_array_append_new(a, json_integer(q->runs[i]));
    return a;
}

static void logs_reply(gp_request *r, const log_query *q, const json_t *row, const char *buf, size_t n, int64_t size,
                       bool eof)
{
    gnutls_datum_t in = {(unsigned char *)buf, (unsigned int)n}, out = {NULL, 0};
    if (n > 0 && gnutls_base64_encode2(&in, &out) != 0) {
        gp_api_error(r, 503, "unavailable", "data", "out of memory");
        return;
    }
    json_t *reply = json_pack("{s:I, s:I, s:o, s:o, s:I, s:I, s:s#, s:I, s:b, s:O}", "job", (json_int_t)q->run.job,
                              "replica", (json_int_t)q->replica, "run",
                              q->has_run ? json_integer(q->run.bind_time) : json_null(), "runs", runs_json(q),
                              "offset", (json_int_t)q->offset, "size", (json_int_t)size, "data",
                              out.data ? (const char *)out.data : "", (int)out.size, "next",
                              (json_int_t)(q->offset + (int64_t)n), "eof", eof, "job_state",
                              json_object_get(row, "state"));
    gnutls_free(out.data);
    gp_api_reply(r, 200, reply);
}

void gp_api_job_logs(gp_request *r, const char *id)
{
    static const char *const allowed[] = {"replica", "run", "offset", "wait", NULL};
    log_query q = {0};
    if (!gp_api_query_only(r, allowed) || !gp_api_parse_job_id(r, id, &q.run.job) ||
        !gp_api_query_int(r, "replica", 0, GP_MAX_REPLICAS - 1, &q.replica) ||
        !gp_api_query_int(r, "offset", 0, INT64_MAX / 2, &q.offset) ||
        !gp_api_query_int(r, "wait", 0, MAX_WAIT_S, &q.wait))
        return;
    q.run.replica = (int)q.replica;
    json_t *row = job_and_runs(r, &q);
    if (!row)
        return;
    char *buf = malloc(READ_CAP);
    size_t n = 0;
    int64_t size = 0;
    bool eof = false;
    gp_error err;
    gp_err rc = !buf ? gp_error_set(&err, GP_ERR_NOMEM, "logs", "out of memory") : GP_OK;
    if (rc == GP_OK && pick_run(r, &q) && audit_read(r, &q, row)) {
        rc = read_or_wait(r, &q, buf, &n, &size, &eof, &err);
        if (rc == GP_OK)
            logs_reply(r, &q, row, buf, n, size, eof);
    }
    if (rc != GP_OK)
        gp_api_fail(r, &err);
    free(buf);
    json_decref(row);
}

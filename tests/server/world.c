/* world.c - gpupoold's journal over a fresh SQLite store, driven in
 * engine time, for the tests of this folder (world.h).
 */
#include "world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void check(gp_err rc, const gp_error *err, const char *what)
{
    if (rc != GP_OK)
        fail_msg("%s: %s (%s: %s)", what, gp_err_name(rc), err->field, err->message);
}

int world_setup(void **state)
{
    world *w = calloc(1, sizeof *w);
    assert_non_null(w);
    snprintf(w->dir, sizeof w->dir, "/tmp/gp_ledger_XXXXXX");
    assert_non_null(mkdtemp(w->dir));
    snprintf(w->path, sizeof w->path, "%s/gpupool.db", w->dir);
    char url[128];
    snprintf(url, sizeof url, "sqlite:%s", w->path);
    gp_error err;
    gp_error_clear(&err);
    check(gp_store_open(url, false, &w->store, &err), &err, "store open");
    gp_engine_config cfg = gp_engine_config_default();
    check(gp_journal_open(&w->journal, w->store, &cfg, NULL, &err), &err, "journal open");
    *state = w;
    return 0;
}

int world_teardown(void **state)
{
    world *w = *state;
    gp_journal_close(&w->journal);
    gp_store_close(w->store);
    char file[128];
    const char *const suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(file, sizeof file, "%s%s", w->path, suffixes[i]);
        unlink(file);
    }
    rmdir(w->dir);
    free(w);
    return 0;
}

/* ---- events, each in its own transaction ---- */

void commit(world *w, gp_err rc, gp_error *err, const char *what)
{
    if (rc != GP_OK) {
        gp_store_rollback(w->store);
        check(rc, err, what);
    }
    check(gp_store_commit(w->store, err), err, "commit");
}

json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *body = json_loads(text, 0, &jerr);
    if (!body)
        fail_msg("bad JSON in the test: %s", jerr.text);
    return body;
}

void tenant(world *w, const char *path, const char *spec_text, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    json_t *body = parse(spec_text);
    gp_tenant_spec spec;
    check(gp_tenant_spec_parse(body, &spec, &err), &err, "tenant spec");
    check(gp_store_begin(w->store, &err), &err, "begin");
    commit(w, gp_journal_tenant_set(&w->journal, path, &spec, now, &err), &err, "tenant set");
    json_decref(body);
}

void node(world *w, const char *spec_text, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    json_t *body = parse(spec_text);
    gp_node_request req;
    check(gp_node_request_parse(body, &req, &err), &err, "node spec");
    check(gp_store_begin(w->store, &err), &err, "begin");
    commit(w, gp_journal_node_add(&w->journal, &req.spec, now, &err), &err, "node add");
    json_decref(body);
}

void pool(world *w, const char *spec_text, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    json_t *body = parse(spec_text);
    char name[GP_NAME_MAX];
    gp_pool_spec spec;
    check(gp_pool_parse(body, name, &spec, &err), &err, "pool spec");
    check(gp_store_begin(w->store, &err), &err, "begin");
    commit(w, gp_journal_pool_set(&w->journal, name, &spec, now, &err), &err, "pool set");
    json_decref(body);
}

/* Submits the job and runs the scheduling pass of its batch; its id. */
uint64_t submit(world *w, const char *job_text, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    json_t *body = parse(job_text);
    gp_job_request req;
    check(gp_job_request_parse(body, false, &req, &err), &err, "job spec");
    check(gp_store_begin(w->store, &err), &err, "begin");
    gp_err rc = gp_journal_submit(&w->journal, &req, now, &err);
    if (rc == GP_OK)
        rc = gp_journal_tick(&w->journal, now, &err);
    commit(w, rc, &err, "submit");
    uint64_t id = req.spec.id;
    gp_job_request_free(&req);
    json_decref(body);
    return id;
}

void tick(world *w, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    check(gp_store_begin(w->store, &err), &err, "begin");
    commit(w, gp_journal_tick(&w->journal, now, &err), &err, "tick");
}

void node_lost(world *w, const char *name, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    check(gp_store_begin(w->store, &err), &err, "begin");
    gp_err rc = gp_journal_node_lost(&w->journal, name, now, &err);
    if (rc == GP_OK)
        rc = gp_journal_tick(&w->journal, now, &err);
    commit(w, rc, &err, "node lost");
}

void gpu_failed(world *w, const char *name, int index, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    check(gp_store_begin(w->store, &err), &err, "begin");
    commit(w, gp_journal_gpu_health(&w->journal, name, index, false, now, &err), &err, "gpu health");
}

/* The agent reports the job's only replica exited 0 (on node). */
void exit_ok(world *w, uint64_t id, const char *node_name, int64_t now)
{
    gp_job_info info;
    assert_int_equal(gp_engine_job_info(w->journal.engine, id, &info, NULL), GP_OK);
    gp_replica_exit x = {.job_id = id, .replica = 0, .bind_time = info.bind_time, .exit_code = 0,
                         .reason = GP_EXIT_REASON_EXITED};
    snprintf(x.node, sizeof x.node, "%s", node_name);
    gp_error err;
    gp_error_clear(&err);
    check(gp_store_begin(w->store, &err), &err, "begin");
    commit(w, gp_journal_replica_exit(&w->journal, &x, now, &err), &err, "replica exit");
}

gp_job_state job_state(world *w, uint64_t id)
{
    gp_job_info info;
    assert_int_equal(gp_engine_job_info(w->journal.engine, id, &info, NULL), GP_OK);
    return info.state;
}


/* store_health.c - GPU checks, each GPU's health since its last change,
 * and the drains gpupoold made for GPU health (store.h; schema 4 in
 * store_sqlite.c).
 *
 * These are records, not engine state: the engine knows only whether a GPU
 * is healthy (its events are in the log); what the checks said, when and
 * why is kept here for operators (GET /v1/nodes/{name}, .../checks).  A
 * GPU keeps its last 1,000 checks: at 8 GPUs checked every 5 minutes that
 * is three days and a half of history, XIDs included.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <string.h>

#define GP__CHECKS_KEPT 1000
#define GP__XIDS_SHOWN 20

/* Prepares sql (not cached: these run a few times per report batch). */
static gp_db_stmt *gp__prepare(gp_store *s, const char *sql, gp_error *err)
{
    return gp__store_prepare(s, sql, 0, "prepare", err);
}

gp_err gp_store_gpu_check_add(gp_store *s, const gp_store_gpu_check *c, gp_error *err)
{
    gp_db_stmt *st = gp__prepare(s,
                                   "INSERT INTO gpu_checks(node, gpu, at, check_name, passed, detail, xid, action,"
                                   " duration_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                                   err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, c->node);
    gp_db_bind_int64(st, 2, c->gpu);
    gp_db_bind_int64(st, 3, c->at);
    gp_db_bind_text(st, 4, c->check);
    gp_db_bind_int64(st, 5, c->passed);
    gp_db_bind_text(st, 6, c->detail);
    if (c->xid > 0)
        gp_db_bind_int64(st, 7, c->xid);
    gp_db_bind_text(st, 8, c->action);
    if (c->duration_ms >= 0)
        gp_db_bind_int64(st, 9, c->duration_ms);
    gp_err rc = gp__store_exec_once(st, "gpu check", err);
    if (rc != GP_OK)
        return rc;
    st = gp__prepare(s,
                     "DELETE FROM gpu_checks WHERE node = ?1 AND gpu = ?2 AND seq <= (SELECT seq FROM gpu_checks"
                     " WHERE node = ?1 AND gpu = ?2 ORDER BY seq DESC LIMIT 1 OFFSET ?3)",
                     err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, c->node);
    gp_db_bind_int64(st, 2, c->gpu);
    gp_db_bind_int64(st, 3, GP__CHECKS_KEPT);
    return gp__store_exec_once(st, "gpu check", err);
}

#define GP__CHECK_COLUMNS "gpu, at, check_name AS \"check\", passed, detail, xid, action, duration_ms"

/* A row of GP__CHECK_COLUMNS with passed as a boolean. */
static json_t *gp__check_row(gp_db_stmt *st)
{
    json_t *row = gp__store_row_json(st);
    json_object_set_new(row, "passed", json_boolean(json_integer_value(json_object_get(row, "passed"))));
    return row;
}

gp_err gp_store_gpu_checks_list(gp_store *s, const char *node, int gpu, int limit, json_t **out, gp_error *err)
{
    gp_db_stmt *st = gp__prepare(s,
                                   "SELECT " GP__CHECK_COLUMNS " FROM gpu_checks WHERE node = ?1 AND (?2 < 0 OR gpu = ?2)"
                                   " ORDER BY seq DESC LIMIT ?3",
                                   err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, node);
    gp_db_bind_int64(st, 2, gpu);
    gp_db_bind_int64(st, 3, limit);
    json_t *checks = json_array();
    int rc;
    while ((rc = gp_db_step(st, err)) == GP_DB_ROW)
        json_array_append_new(checks, gp__check_row(st));
    gp_db_finalize(st);
    if (rc != GP_DB_DONE) {
        json_decref(checks);
        return gp__store_failed(err, "gpu checks");
    }
    *out = json_pack("{s:o}", "checks", checks);
    return GP_OK;
}

gp_err gp_store_gpu_health_set(gp_store *s, const char *node, int gpu, bool healthy, int64_t since,
                               const char *reason, gp_error *err)
{
    gp_db_stmt *st = gp__prepare(s,
                                   "INSERT INTO gpu_health(node, gpu, healthy, since, reason) VALUES(?1, ?2, ?3, ?4, ?5)"
                                   " ON CONFLICT(node, gpu) DO UPDATE SET reason = excluded.reason,"
                                   " since = CASE WHEN gpu_health.healthy = excluded.healthy THEN gpu_health.since"
                                   " ELSE excluded.since END, healthy = excluded.healthy",
                                   err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, node);
    gp_db_bind_int64(st, 2, gpu);
    gp_db_bind_int64(st, 3, healthy);
    gp_db_bind_int64(st, 4, since);
    gp_db_bind_text(st, 5, reason);
    return gp__store_exec_once(st, "gpu health", err);
}

/* Fills each GPU's object from one query's rows: fill(row, view[gpu]). */
static gp_err gp__per_gpu(gp_store *s, const char *sql, const char *node, int gpu_count, json_t *views,
                          void (*fill)(gp_db_stmt *st, json_t *view), gp_error *err)
{
    gp_db_stmt *st = gp__prepare(s, sql, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, node);
    int rc;
    while ((rc = gp_db_step(st, err)) == GP_DB_ROW) {
        int64_t gpu = gp_db_column_int64(st, 0);
        if (gpu >= 0 && gpu < gpu_count)
            fill(st, json_array_get(views, (size_t)gpu));
    }
    gp_db_finalize(st);
    return rc == GP_DB_DONE ? GP_OK : gp__store_failed(err, "gpu health");
}

static void gp__fill_health(gp_db_stmt *st, json_t *view)
{
    json_object_set_new(view, "since", json_integer(gp_db_column_int64(st, 1)));
    const char *reason = gp_db_column_text(st, 2);
    json_object_set_new(view, "reason", reason && reason[0] ? json_string(reason) : json_null());
}

static void gp__fill_last_check(gp_db_stmt *st, json_t *view)
{
    json_t *row = gp__check_row(st);
    json_object_del(row, "gpu");
    json_object_set_new(view, "last_check", row);
}

static void gp__fill_xid(gp_db_stmt *st, json_t *view)
{
    json_t *xids = json_object_get(view, "xids");
    if (json_array_size(xids) < GP__XIDS_SHOWN)
        json_array_append_new(xids, json_pack("{s:i, s:s?, s:I}", "xid", (int)gp_db_column_int64(st, 1), "action",
                                              gp_db_column_text(st, 2), "at", (json_int_t)gp_db_column_int64(st, 3)));
}

gp_err gp_store_gpu_health_view(gp_store *s, const char *node, int gpu_count, json_t **out, gp_error *err)
{
    json_t *views = json_array();
    for (int g = 0; g < gpu_count; g++)
        json_array_append_new(views, json_pack("{s:n, s:n, s:n, s:[]}", "since", "reason", "last_check", "xids"));
    gp_err rc = gp__per_gpu(s, "SELECT gpu, since, reason FROM gpu_health WHERE node = ?1", node, gpu_count, views,
                            gp__fill_health, err);
    if (rc == GP_OK)
        rc = gp__per_gpu(s,
                         "SELECT " GP__CHECK_COLUMNS " FROM gpu_checks WHERE seq IN (SELECT max(seq) FROM gpu_checks"
                         " WHERE node = ?1 GROUP BY gpu)",
                         node, gpu_count, views, gp__fill_last_check, err);
    if (rc == GP_OK)
        rc = gp__per_gpu(s,
                         "SELECT gpu, xid, action, at FROM gpu_checks WHERE node = ?1 AND xid IS NOT NULL"
                         " ORDER BY seq DESC",
                         node, gpu_count, views, gp__fill_xid, err);
    if (rc != GP_OK) {
        json_decref(views);
        return rc;
    }
    *out = views;
    return GP_OK;
}

gp_err gp_store_health_drain_set(gp_store *s, const char *node, bool drained, int64_t since, gp_error *err)
{
    gp_db_stmt *st = gp__prepare(s,
                                   drained ? "INSERT INTO health_drains(node, since) VALUES(?1, ?2)"
                                             " ON CONFLICT(node) DO UPDATE SET since = excluded.since"
                                           : "DELETE FROM health_drains WHERE node = ?1",
                                   err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, node);
    if (drained)
        gp_db_bind_int64(st, 2, since);
    return gp__store_exec_once(st, "health drain", err);
}

gp_err gp_store_health_drain_get(gp_store *s, const char *node, bool *drained, gp_error *err)
{
    gp_db_stmt *st = gp__prepare(s, "SELECT 1 FROM health_drains WHERE node = ?1", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, node);
    int rc = gp_db_step(st, err);
    *drained = rc == GP_DB_ROW;
    gp_db_finalize(st);
    return rc != GP_DB_ERROR ? GP_OK : gp__store_failed(err, "health drain");
}

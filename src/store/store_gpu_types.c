/* store_gpu_types.c - GPU types an admin declared before their nodes
 * arrive (store.h; schema 11).
 *
 * One row per declared type, spelt as declared; gpupoold (server/gpu_types.c)
 * counts these as known beside the types of registered nodes, so a quota or
 * a job may name them.  Example after `gpupool gpu-types declare H200`:
 *     gpu_types("H200", 1796600000, "tok-admin")
 */
#include "store/store_internal.h"

#include <string.h>

gp_err gp_store_gpu_type_declare(gp_store *s, const char *name, int64_t time, const char *by, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "INSERT INTO gpu_types(name, declared, declared_by) VALUES(?1, ?2, ?3)"
                                       " ON CONFLICT(name) DO NOTHING",
                                       0, "gpu type declare", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, name);
    gp_db_bind_int64(st, 2, time);
    gp_db_bind_text(st, 3, by);
    return gp__store_exec_once(st, "gpu type declare", err);
}

gp_err gp_store_gpu_type_undeclare(gp_store *s, const char *name, bool *found, gp_error *err)
{
    json_t *all = NULL;
    gp_err rc = gp_store_gpu_types_declared(s, &all, err);
    size_t i;
    json_t *row;
    *found = false;
    json_array_foreach(all, i, row) {
        *found = *found || strcmp(json_string_value(json_object_get(row, "name")), name) == 0;
    }
    json_decref(all);
    if (rc != GP_OK || !*found)
        return rc;
    gp_db_stmt *st = gp__store_prepare(s, "DELETE FROM gpu_types WHERE name = ?1", 0, "gpu type undeclare", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, name);
    return gp__store_exec_once(st, "gpu type undeclare", err);
}

gp_err gp_store_gpu_types_declared(gp_store *s, json_t **out, gp_error *err)
{
    *out = NULL;
    gp_db_stmt *st = gp__store_prepare(s, "SELECT name, declared, declared_by FROM gpu_types ORDER BY name", 0,
                                       "gpu types", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    json_t *list = json_array();
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW)
        json_array_append_new(list, json_pack("{s:s, s:I, s:s}", "name", gp_db_column_text(st, 0), "declared",
                                              (json_int_t)gp_db_column_int64(st, 1), "declared_by",
                                              gp_db_column_text(st, 2)));
    gp_db_finalize(st);
    if (step != GP_DB_DONE) {
        json_decref(list);
        return gp__store_failed(err, "gpu types");
    }
    *out = list;
    return GP_OK;
}

/* store_secrets.c - tenants' secrets as gpupoold sealed them (store.h;
 * schema 10 in store_schema.c).
 *
 * The store never sees a secret's value: `sealed` is what
 * server/secret_box.h made of it (AES-256-GCM under gpupoold's key, bound
 * to its tenant and name), so a copy of the store, or its backups, holds
 * no secret without the key file.  `bytes` is the value's length, which a
 * listing shows with who set it and when.  A tenant's secrets are deleted
 * with the tenant (gp_store_tenant_delete): a tenant made again at that
 * path starts without them, and a moved tenant leaves them behind (they
 * are set again at its new path).
 */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

gp_err gp_store_secret_put(gp_store *s, const gp_store_secret *sec, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "INSERT INTO secrets(tenant, name, sealed, bytes, set_by, updated)"
                                       " VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(tenant, name) DO UPDATE SET"
                                       " sealed = excluded.sealed, bytes = excluded.bytes, set_by = excluded.set_by,"
                                       " updated = excluded.updated",
                                       0, "secret put", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, sec->tenant);
    gp_db_bind_text(st, 2, sec->name);
    gp_db_bind_text(st, 3, sec->sealed);
    gp_db_bind_int64(st, 4, sec->bytes);
    gp_db_bind_text(st, 5, sec->set_by);
    gp_db_bind_int64(st, 6, sec->updated);
    return gp__store_exec_once(st, "secret put", err);
}

gp_err gp_store_secret_delete(gp_store *s, const char *tenant, const char *name, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "DELETE FROM secrets WHERE tenant = ?1 AND name = ?2", 0, "secret delete",
                                       err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, tenant);
    gp_db_bind_text(st, 2, name);
    gp_err rc = gp__store_exec_once(st, "secret delete", err);
    if (rc == GP_OK && gp_db_changes(s->conn) == 0)
        rc = gp_error_set(err, GP_ERR_NOT_FOUND, "name", "tenant %s has no secret %s", tenant, name);
    return rc;
}

gp_err gp__store_secrets_forget(gp_store *s, const char *path, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "DELETE FROM secrets WHERE tenant = ?1", 0, "secrets forget", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, path);
    return gp__store_exec_once(st, "secrets forget", err);
}

gp_err gp_store_secret_get(gp_store *s, const char *tenant, const char *name, char **sealed, gp_error *err)
{
    *sealed = NULL;
    gp_db_stmt *st = gp__store_prepare(s, "SELECT sealed FROM secrets WHERE tenant = ?1 AND name = ?2", 0,
                                       "secret get", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, tenant);
    gp_db_bind_text(st, 2, name);
    int step = gp_db_step(st, err);
    if (step == GP_DB_ROW)
        *sealed = strdup(gp_db_column_text(st, 0));
    gp_db_finalize(st);
    if (step == GP_DB_ERROR)
        return gp__store_failed(err, "secret get");
    return step == GP_DB_ROW && !*sealed ? gp_error_set(err, GP_ERR_NOMEM, "secret", "out of memory") : GP_OK;
}

gp_err gp_store_secrets_list(gp_store *s, const char *tenant, json_t **out, gp_error *err)
{
    *out = NULL;
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT name, bytes, set_by, updated FROM secrets WHERE tenant = ?1"
                                       " ORDER BY name",
                                       0, "secrets list", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, tenant);
    json_t *list = json_array();
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW)
        json_array_append_new(list, gp__store_row_json(st));
    gp_db_finalize(st);
    if (step == GP_DB_ERROR) {
        json_decref(list);
        return gp__store_failed(err, "secrets list");
    }
    *out = list;
    return GP_OK;
}

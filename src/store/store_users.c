/* store_users.c - which tenant each job user belongs to (store.h; schema 10).
 *
 * A job runs on its node as the Unix user it names, so a user name is an
 * identity: two tenants' jobs that ran as one user could read each other's
 * environments and signal each other's processes.  gpupoold therefore binds
 * every user name it lets jobs run as to one tenant path, durably, in
 * user_tenants(name, tenant, bound, bound_by): the first member token
 * minted for a user (or the first job an admin submits naming it) binds it,
 * and from then on only tokens scoped inside that tenant and jobs of its
 * subtree may use the name (server/users.c decides; this file keeps rows).
 *
 * Example: a tenant-admin of research/nlp mints a token for alice:
 *     user_tenants("alice", "research/nlp", 1796000000, "<token id>")
 * and a tenant-admin of product/ads asking for alice later is refused.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <string.h>

gp_err gp_store_user_tenant(gp_store *s, const char *name, char *tenant, size_t cap, gp_error *err)
{
    tenant[0] = '\0';
    gp_db_stmt *st = gp__store_prepare(s, "SELECT tenant FROM user_tenants WHERE name = ?1", 0, "user binding", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, name);
    int step = gp_db_step(st, err);
    if (step == GP_DB_ROW)
        snprintf(tenant, cap, "%s", gp_db_column_text(st, 0));
    gp_err rc = step != GP_DB_ERROR ? GP_OK : gp__store_failed(err, "user binding");
    gp_db_finalize(st);
    return rc;
}

gp_err gp_store_user_bind(gp_store *s, const char *name, const char *tenant, int64_t time, const char *by,
                          gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "INSERT INTO user_tenants(name, tenant, bound, bound_by) VALUES(?1, ?2, ?3, ?4)"
                                       " ON CONFLICT(name) DO UPDATE SET tenant = excluded.tenant,"
                                       " bound = excluded.bound, bound_by = excluded.bound_by",
                                       0, "user bind", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, name);
    gp_db_bind_text(st, 2, tenant);
    gp_db_bind_int64(st, 3, time);
    gp_db_bind_text(st, 4, by);
    return gp__store_exec_once(st, "user bind", err);
}

gp_err gp_store_user_unbind(gp_store *s, const char *name, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "DELETE FROM user_tenants WHERE name = ?1", 0, "user unbind", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, name);
    gp_err rc = gp__store_exec_once(st, "user unbind", err);
    if (rc == GP_OK && gp_db_changes(s->conn) == 0)
        rc = gp_error_set(err, GP_ERR_NOT_FOUND, "user", "user %s is bound to no tenant", name);
    return rc;
}

gp_err gp_store_users_scan(gp_store *s, gp_store_user_fn fn, void *ctx, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "SELECT name, tenant, bound, bound_by FROM user_tenants ORDER BY name", 0,
                                       "user bindings", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_err rc = GP_OK;
    int step;
    while (rc == GP_OK && (step = gp_db_step(st, err)) == GP_DB_ROW) {
        gp_store_user u = {.name = gp_db_column_text(st, 0),
                           .tenant = gp_db_column_text(st, 1),
                           .bound = gp_db_column_int64(st, 2),
                           .bound_by = gp_db_column_text(st, 3)};
        rc = fn(ctx, &u, err);
    }
    if (rc == GP_OK && step == GP_DB_ERROR)
        rc = gp__store_failed(err, "user bindings");
    gp_db_finalize(st);
    return rc;
}

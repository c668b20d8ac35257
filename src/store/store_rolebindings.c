/* store_rolebindings.c - the role bindings that give people signed in
 * through OIDC their authority (store.h; schema 12).
 *
 * rolebindings(id, kind, subject, role, scope, created, created_by): kind
 * "user" or "group", subject the user name or group the provider's token
 * carries, role admin / tenant-admin / member, scope a tenant path ("" for
 * admin).  Ids are given by the one writer (the engine thread): the
 * largest so far plus one.  server/rolebindings.c decides who may add
 * what; this file keeps rows.
 *
 * Example: `gpupool rolebinding create --group ml-admins --role tenant-admin
 * --scope research/nlp` -> (3, "group", "ml-admins", "tenant-admin",
 * "research/nlp", 1796000000, "<actor>").
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <string.h>

static gp_err next_id(gp_store *s, int64_t *id, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "SELECT coalesce(max(id), 0) + 1 FROM rolebindings", 0, "rolebinding id",
                                       err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    int step = gp_db_step(st, err);
    *id = step == GP_DB_ROW ? gp_db_column_int64(st, 0) : 1;
    gp_db_finalize(st);
    return step == GP_DB_ERROR ? gp__store_failed(err, "rolebinding id") : GP_OK;
}

gp_err gp_store_rolebinding_add(gp_store *s, gp_store_rolebinding *b, gp_error *err)
{
    gp_err rc = next_id(s, &b->id, err);
    gp_db_stmt *st = rc == GP_OK ? gp__store_prepare(s,
                                                     "INSERT INTO rolebindings(id, kind, subject, role, scope, created,"
                                                     " created_by) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                                                     " ON CONFLICT(kind, subject, role, scope) DO NOTHING",
                                                     0, "rolebinding add", err)
                                 : NULL;
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, b->id);
    gp_db_bind_text(st, 2, b->kind);
    gp_db_bind_text(st, 3, b->subject);
    gp_db_bind_text(st, 4, b->role);
    gp_db_bind_text(st, 5, b->scope);
    gp_db_bind_int64(st, 6, b->created);
    gp_db_bind_text(st, 7, b->created_by);
    rc = gp__store_exec_once(st, "rolebinding add", err);
    if (rc == GP_OK && gp_db_changes(s->conn) == 0)
        rc = gp_error_set(err, GP_ERR_EXISTS, "subject", "%s %s already holds %s at %s", b->kind, b->subject, b->role,
                          b->scope[0] ? b->scope : "the root");
    return rc;
}

gp_err gp_store_rolebinding_delete(gp_store *s, int64_t id, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "DELETE FROM rolebindings WHERE id = ?1", 0, "rolebinding delete", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, id);
    gp_err rc = gp__store_exec_once(st, "rolebinding delete", err);
    if (rc == GP_OK && gp_db_changes(s->conn) == 0)
        rc = gp_error_set(err, GP_ERR_NOT_FOUND, "id", "no role binding %lld", (long long)id);
    return rc;
}

gp_err gp_store_rolebindings_scan(gp_store *s, int64_t id, gp_store_rolebinding_fn fn, void *ctx, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT id, kind, subject, role, scope, created, created_by FROM rolebindings"
                                       " WHERE ?1 = 0 OR id = ?1 ORDER BY id",
                                       0, "rolebindings", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, id);
    gp_err rc = GP_OK;
    int step;
    while (rc == GP_OK && (step = gp_db_step(st, err)) == GP_DB_ROW) {
        gp_store_rolebinding b = {.id = gp_db_column_int64(st, 0),
                                  .kind = gp_db_column_text(st, 1),
                                  .subject = gp_db_column_text(st, 2),
                                  .role = gp_db_column_text(st, 3),
                                  .scope = gp_db_column_text(st, 4),
                                  .created = gp_db_column_int64(st, 5),
                                  .created_by = gp_db_column_text(st, 6)};
        rc = fn(ctx, &b, err);
    }
    if (rc == GP_OK && step == GP_DB_ERROR)
        rc = gp__store_failed(err, "rolebindings");
    gp_db_finalize(st);
    return rc;
}

/* store_node_ca.c - gpupoold's node CA (store.h; schema 12, issue 33).
 *
 * One row (id 1): the CA's certificate (PEM) and its key sealed by
 * server/secret_box.h, and when it was made.  The first replica that
 * needs it inserts it; a replica starting beside it that loses the race
 * reads the winner's (ON CONFLICT DO NOTHING, then a read), so every
 * replica signs and checks with the same CA (server/node_ca.h).
 *     node_ca(1, "-----BEGIN CERTIFICATE-----...", "v1:q1x...", 1796600000)
 */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

gp_err gp_store_node_ca_get(gp_store *s, char **cert_pem, char **key_sealed, gp_error *err)
{
    *cert_pem = *key_sealed = NULL;
    gp_db_stmt *st = gp__store_prepare(s, "SELECT cert_pem, key_sealed FROM node_ca WHERE id = 1", 0, "node CA", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    int step = gp_db_step(st, err);
    if (step == GP_DB_ROW) {
        *cert_pem = strdup(gp_db_column_text(st, 0));
        *key_sealed = strdup(gp_db_column_text(st, 1));
    }
    gp_db_finalize(st);
    if (step == GP_DB_ERROR)
        return gp__store_failed(err, "node CA");
    if (step == GP_DB_ROW && (!*cert_pem || !*key_sealed)) {
        free(*cert_pem);
        free(*key_sealed);
        *cert_pem = *key_sealed = NULL;
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    }
    return GP_OK;
}

gp_err gp_store_node_ca_add(gp_store *s, const char *cert_pem, const char *key_sealed, int64_t created, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "INSERT INTO node_ca(id, cert_pem, key_sealed, created) VALUES(?1, ?2, ?3, ?4)"
                                       " ON CONFLICT(id) DO NOTHING",
                                       0, "node CA", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, 1); /* the one row */
    gp_db_bind_text(st, 2, cert_pem);
    gp_db_bind_text(st, 3, key_sealed);
    gp_db_bind_int64(st, 4, created);
    return gp__store_exec_once(st, "node CA", err);
}

gp_err gp_store_node_ca_remove(gp_store *s, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "DELETE FROM node_ca WHERE id = 1", 0, "node CA", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    return gp__store_exec_once(st, "node CA", err);
}

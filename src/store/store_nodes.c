/* store_nodes.c - node approvals (store.h; schema 10 in store_schema.c).
 *
 * A node name has at most one row: "awaiting" while a node registered
 * under --approve-nodes waits, cordoned, for an admin; "approved" once an
 * admin let the next join-token-only registration of that existing node
 * in (its agent lost its credential, or a host was replaced) -- for an
 * hour (api_agents.c), so a forgotten approval does not wait for whoever
 * holds a join token months later.  The
 * registration that uses an approval clears it, as does the approval of an
 * awaiting node: a row is a question or an answer, never history (the
 * audit log keeps that).
 */
#include "store/store_internal.h"

#include <stdio.h>

gp_err gp_store_node_approval_set(gp_store *s, const char *node, const char *state, int64_t time, const char *actor,
                                  gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "INSERT INTO node_approvals(node, state, time, actor) VALUES(?1, ?2, ?3, ?4)"
                                       " ON CONFLICT(node) DO UPDATE SET state = excluded.state,"
                                       " time = excluded.time, actor = excluded.actor",
                                       0, "node approval", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, node);
    gp_db_bind_text(st, 2, state);
    gp_db_bind_int64(st, 3, time);
    gp_db_bind_text(st, 4, actor);
    return gp__store_exec_once(st, "node approval", err);
}

gp_err gp_store_node_approval_get(gp_store *s, const char *node, char *state, size_t cap, int64_t *time,
                                  gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "SELECT state, time FROM node_approvals WHERE node = ?1", 0,
                                       "node approval", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, node);
    state[0] = '\0';
    *time = -1;
    int step = gp_db_step(st, err);
    if (step == GP_DB_ROW) {
        snprintf(state, cap, "%s", gp_db_column_text(st, 0));
        *time = gp_db_column_int64(st, 1);
    }
    gp_db_finalize(st);
    return step == GP_DB_ERROR ? gp__store_failed(err, "node approval") : GP_OK;
}

gp_err gp_store_node_approval_clear(gp_store *s, const char *node, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "DELETE FROM node_approvals WHERE node = ?1", 0, "node approval", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, node);
    return gp__store_exec_once(st, "node approval", err);
}

/* store_nodes.c - node approvals and operators' drains (store.h; schemas
 * 10 and 12 in store_schema.c).
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
 *
 * A drain's row says why an operator drained a node, who (the token's
 * user, else its name) and since when: the engine knows only that the
 * node drains (its event is in the log); this is for the people reading
 * `gpupool nodes`.  Written in the transaction of the drain's event and
 * deleted in that of the undrain, so a restart or a new leader reads what
 * the engine replays.  Draining a drained node again replaces the reason
 * and who, and keeps since.  gp_store_node_drains also answers for the
 * drains gpupoold made itself -- for GPU health (health_drains) and for
 * nodes awaiting an admin's approval -- so every drained node says why:
 *   node_drains ("n1", "kernel 6.19", "alice", 100), health_drains ("n2",
 *   200) -> {"n1": {"reason": "kernel 6.19", "by": "alice", "since": 100,
 *   "kind": "operator"}, "n2": {"reason": "GPU health: ...", "by":
 *   "gpupoold", "since": 200, "kind": "health"}}
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

gp_err gp_store_node_drain_set(gp_store *s, const char *node, const char *reason, const char *by, int64_t since,
                               gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "INSERT INTO node_drains(node, reason, drained_by, since) VALUES(?1, ?2, ?3, ?4)"
                                       " ON CONFLICT(node) DO UPDATE SET reason = excluded.reason,"
                                       " drained_by = excluded.drained_by",
                                       0, "node drain", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, node);
    gp_db_bind_text(st, 2, reason);
    gp_db_bind_text(st, 3, by);
    gp_db_bind_int64(st, 4, since);
    return gp__store_exec_once(st, "node drain", err);
}

gp_err gp_store_node_drain_clear(gp_store *s, const char *node, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "DELETE FROM node_drains WHERE node = ?1", 0, "node drain", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, node);
    return gp__store_exec_once(st, "node drain", err);
}

/* Every kind of drain's rows, the operator's first for each node (rank). */
#define GP__DRAINS_SQL                                                                                                \
    "SELECT node, reason, drained_by, since, 'operator' AS kind, 0 AS rank FROM node_drains"                          \
    " UNION ALL SELECT node, 'GPU health: a GPU of it failed its checks', 'gpupoold', since, 'health', 1"             \
    " FROM health_drains"                                                                                            \
    " UNION ALL SELECT node, 'awaiting an admin''s approval', actor, time, 'approval', 2 FROM node_approvals"         \
    " WHERE state = 'awaiting'"

gp_err gp_store_node_drains(gp_store *s, const char *node, json_t **out, gp_error *err)
{
    *out = NULL;
    gp_db_stmt *st = gp__store_prepare(s,
                                       node ? "SELECT * FROM (" GP__DRAINS_SQL ") d WHERE node = ?1 ORDER BY rank"
                                            : "SELECT * FROM (" GP__DRAINS_SQL ") d ORDER BY node, rank",
                                       0, "node drains", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    if (node)
        gp_db_bind_text(st, 1, node);
    json_t *drains = json_object();
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW) {
        const char *name = gp_db_column_text(st, 0);
        if (!json_object_get(drains, name))
            json_object_set_new(drains, name,
                                json_pack("{s:s, s:s, s:I, s:s}", "reason", gp_db_column_text(st, 1), "by",
                                          gp_db_column_text(st, 2), "since", (json_int_t)gp_db_column_int64(st, 3),
                                          "kind", gp_db_column_text(st, 4)));
    }
    gp_db_finalize(st);
    if (step != GP_DB_DONE) {
        json_decref(drains);
        return gp__store_failed(err, "node drains");
    }
    *out = drains;
    return GP_OK;
}

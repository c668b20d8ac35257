/* fleet_sync.c - the fleet file reconciled with the replayed engine at a
 * leader's start (fleet_sync.h).
 *
 * A node the file lists and the engine lacks (or holds as lost) is added
 * and marked up; a node the engine holds up but the file no longer lists
 * is lost (its jobs are requeued); a node whose type, GPU count, block or
 * zone changed is refused -- gpupoold does not start, and says which node.
 * All of it goes through the journal, so the event log stays the whole
 * truth.  Nodes registered by an agent are not the file's: they stay.
 */
#include "server/fleet_sync.h"

#include "config/fleet_file.h"
#include "server/server.h"
#include "util/hashmap.h"

#include <string.h>
#include <strings.h>

/* A GPU type matches in any case: the file's "h100" is the fleet's H100. */
static bool node_shape_matches(const gp_engine *e, const gp_node_info *n, const gp_node_spec *s)
{
    return strcasecmp(gp_engine_gpu_type_name(e, n->type), s->gpu_type) == 0 && n->gpu_count == s->gpu_count &&
           strcmp(n->block, s->block ? s->block : "") == 0 && strcmp(n->zone, s->zone ? s->zone : "") == 0;
}

/* engine: node name -> engine index, for the nodes the engine knows. */
static gp_err reconcile_node(gp_server *srv, const gp_strmap *engine, const gp_node_spec *s, int64_t now,
                             int *added, gp_error *err)
{
    const gp_engine *e = srv->journal.engine;
    uint32_t i;
    gp_node_info n;
    if (gp_strmap_get(engine, s->name, &i) && gp_engine_node_get(e, i, &n)) {
        if (!node_shape_matches(e, &n, s))
            return gp_error_set(err, GP_ERR_CONFLICT, "fleet",
                                "node %s changed its type, GPU count, block or zone; remove it from the fleet file,"
                                " start once, then add it under a new name",
                                s->name);
        if (n.up)
            return GP_OK;
    }
    (*added)++;
    return gp_journal_node_add(&srv->journal, s, now, err);
}

/* A pool of the file: its settings as the file says; its owner as the
 * file says when it says one, else as it is (set by PUT /v1/pools). */
static gp_err sync_pool(gp_server *srv, const gp_fleet_pool *p, int64_t now, gp_error *err)
{
    gp_pool_spec spec = p->spec;
    gp_pool_info now_info;
    if (!p->owner_given && gp_engine_pool_get(srv->journal.engine, gp_engine_pool_find(srv->journal.engine, p->name),
                                              &now_info))
        memcpy(spec.owner, now_info.spec.owner, sizeof spec.owner);
    return gp_journal_pool_set(&srv->journal, p->name, &spec, now, err);
}

static gp_err reconcile_fleet(gp_server *srv, const gp_fleet_file *f, gp_error *err)
{
    int64_t now = gp_journal_now(&srv->journal, gp_wall_ms() / 1000);
    int added = 0, lost = 0;
    const gp_engine *e = srv->journal.engine;
    gp_strmap engine_nodes = {0}, file_nodes = {0};
    gp_err rc = GP_OK;
    for (uint32_t i = 0; rc == GP_OK && i < gp_engine_node_count(e); i++) {
        gp_node_info n;
        if (gp_engine_node_get(e, i, &n) && !gp_strmap_put(&engine_nodes, n.name, i))
            rc = gp_error_set(err, GP_ERR_NOMEM, "fleet", "out of memory");
    }
    for (size_t i = 0; rc == GP_OK && i < f->n_nodes; i++)
        if (!gp_strmap_put(&file_nodes, f->nodes[i].name, (uint32_t)i))
            rc = gp_error_set(err, GP_ERR_NOMEM, "fleet", "out of memory");
    if (rc == GP_OK)
        rc = gp_store_begin(srv->store, err);
    for (size_t i = 0; rc == GP_OK && i < f->n_pools; i++)
        rc = sync_pool(srv, &f->pools[i], now, err);
    for (size_t i = 0; rc == GP_OK && i < f->n_nodes; i++)
        rc = reconcile_node(srv, &engine_nodes, &f->nodes[i], now, &added, err);
    for (uint32_t i = 0; rc == GP_OK && i < gp_engine_node_count(e); i++) {
        gp_node_info n;
        uint32_t unused;
        if (gp_engine_node_get(e, i, &n) && n.up && !gp_strmap_get(&file_nodes, n.name, &unused) &&
            !gp_agents_has_agent(&srv->agents, n.name)) {
            rc = gp_journal_node_lost(&srv->journal, n.name, now, err);
            lost++;
        }
    }
    gp_strmap_free(&engine_nodes);
    gp_strmap_free(&file_nodes);
    if (rc == GP_OK && (added || lost))
        rc = gp_journal_tick(&srv->journal, now, err);
    if (rc != GP_OK) {
        gp_store_rollback(srv->store); /* harmless when no transaction is open */
        return rc;
    }
    rc = gp_store_commit(srv->store, err);
    gp_log(GP_LOG_INFO, "fleet", "nodes=%zu added=%d lost=%d", f->n_nodes, added, lost);
    return rc;
}

gp_err gp_fleet_sync(gp_server *srv, gp_error *err)
{
    if (!srv->cfg.fleet_path)
        return GP_OK;
    gp_fleet_file f;
    gp_err rc = gp_fleet_file_load(srv->cfg.fleet_path, &f, err);
    if (rc)
        return rc;
    rc = reconcile_fleet(srv, &f, err);
    gp_fleet_file_free(&f);
    return rc;
}

/* replayer.c - the apply step shared by the daemon and replay (see replayer.h).
 *
 * Example: the log holds pool_set default, node_add h100-a-0 (8 GPUs),
 * tenant_set research, submit job 1 (8 GPUs), tick at t=100.  Applying
 * them in order leaves job 1 running on h100-a-0 with decisions BIND,
 * TRANSITION x2 and USAGE_OPEN pending after the tick; the digest of those
 * four lines is what the daemon recorded with the tick, and settle clears
 * them.  A later cancel at t=200 and the tick that ends its grace leave
 * job 1 cancelled: settle forgets it.
 */
#include "eventlog/replayer.h"

#include "eventlog/decisions.h"
#include "eventlog/placement.h"
#include "util/grow.h"

#include <stdlib.h>
#include <string.h>

static bool is_final(gp_job_state s)
{
    return s == GP_JOB_SUCCEEDED || s == GP_JOB_FAILED || s == GP_JOB_CANCELLED;
}

gp_err gp_replayer_init(gp_replayer *r, const gp_engine_config *cfg, gp_error *err)
{
    memset(r, 0, sizeof *r);
    r->engine = gp_engine_new(cfg);
    r->pools = json_object();
    r->next_job_id = 1;
    if (!r->engine || !r->pools) {
        gp_replayer_free(r);
        return gp_error_set(err, GP_ERR_NOMEM, "engine", "out of memory");
    }
    return GP_OK;
}

void gp_replayer_free(gp_replayer *r)
{
    gp_engine_free(r->engine);
    json_decref(r->pools);
    gp_exits_free(&r->exits);
    free(r->touched);
    memset(r, 0, sizeof *r);
}

/* ---- the jobs the decisions name ---- */

static void touch(gp_replayer *r, uint64_t id)
{
    for (size_t i = 0; i < r->n_touched; i++)
        if (r->touched[i] == id)
            return;
    uint64_t *touched = gp_grow(r->touched, &r->cap_touched, r->n_touched + 1, sizeof *touched);
    if (!touched)
        return; /* its row is rewritten by its next decision; the job is forgotten then */
    r->touched = touched;
    r->touched[r->n_touched++] = id;
}

static void collect_touched(gp_replayer *r)
{
    size_t n;
    const gp_decision *ds = gp_engine_decisions(r->engine, &n);
    r->n_touched = 0;
    for (size_t i = 0; i < n; i++)
        if (ds[i].job_id != 0)
            touch(r, ds[i].job_id);
}

/* ---- events with a rule of their own ---- */

static gp_err apply_submit(gp_replayer *r, const gp_event *ev, gp_error *err)
{
    gp_err rc = gp_engine_job_submit(r->engine, &ev->job->spec, ev->time, err);
    if (rc == GP_OK && ev->job->spec.id >= r->next_job_id)
        r->next_job_id = ev->job->spec.id + 1;
    return rc;
}

/* Logs written before trust became a floor may hold an explicit "trusted"
 * below an untrusted ancestor, which the engine now refuses.  Such a child
 * was never allowed to be more trusted than its parent, so it replays as
 * "inherit" (untrusted); the restart check then says whether any placement
 * depended on the old reading. */
static gp_err apply_tenant_set(gp_replayer *r, const gp_event *ev, gp_apply_mode mode, gp_error *err)
{
    gp_error first = {0};
    gp_err rc = gp_engine_tenant_set(r->engine, ev->path, ev->tenant, ev->time, &first);
    if (rc == GP_ERR_INVALID && mode == GP_APPLY_REPLAY && ev->tenant->trust == GP_TRUST_TRUSTED &&
        strcmp(first.field, "trust") == 0) {
        gp_tenant_spec inherit = *ev->tenant;
        inherit.trust = GP_TRUST_INHERIT;
        rc = gp_engine_tenant_set(r->engine, ev->path, &inherit, ev->time, err);
        r->trust_floor_applied = rc == GP_OK;
        return rc;
    }
    if (rc != GP_OK && err)
        *err = first;
    return rc;
}

static gp_err apply_pool_set(gp_replayer *r, const gp_event *ev, bool *logged, gp_error *err)
{
    json_t *canon = gp_pool_to_json(ev->name, ev->pool);
    json_t *last = json_object_get(r->pools, ev->name);
    gp_err rc = GP_OK;
    *logged = !(last && json_equal(last, canon));
    if (*logged)
        rc = gp_engine_pool_set(r->engine, ev->name, ev->pool, err);
    if (*logged && rc == GP_OK)
        json_object_set(r->pools, ev->name, canon);
    json_decref(canon);
    return rc;
}

static gp_err apply_tick(gp_replayer *r, const gp_event *ev, bool *logged, gp_error *err)
{
    uint64_t before = gp_engine_changes(r->engine);
    gp_err rc = gp_engine_tick(r->engine, ev->time, err);
    *logged = gp_engine_changes(r->engine) != before;
    return rc;
}

static gp_err apply_clock_resolution(gp_replayer *r, const gp_event *ev, bool *logged, gp_error *err)
{
    *logged = gp_engine_clock_resolution(r->engine) != ev->seconds;
    return *logged ? gp_engine_clock_resolution_set(r->engine, ev->seconds, ev->time, err) : GP_OK;
}

gp_err gp_replayer_apply(gp_replayer *r, const gp_event *ev, gp_apply_mode mode, bool *logged, gp_error *err)
{
    gp_engine *e = r->engine;
    gp_err rc;
    *logged = true;
    r->trust_floor_applied = false;
    switch (ev->kind) {
    case GP_EV_SUBMIT: rc = apply_submit(r, ev, err); break;
    case GP_EV_CANCEL: rc = gp_engine_job_cancel(e, ev->job_id, ev->time, err); break;
    case GP_EV_TENANT_SET: rc = apply_tenant_set(r, ev, mode, err); break;
    case GP_EV_TENANT_REMOVE: rc = gp_engine_tenant_remove(e, ev->path, ev->time, err); break;
    case GP_EV_NODE_ADD: rc = gp_engine_node_add(e, ev->node, ev->time, err); break;
    case GP_EV_NODE_LOST: rc = gp_engine_node_lost(e, ev->name, ev->time, err); break;
    case GP_EV_NODE_DRAIN: rc = gp_engine_node_drain(e, ev->name, ev->drain, ev->time, err); break;
    case GP_EV_POOL_SET: rc = apply_pool_set(r, ev, logged, err); break;
    case GP_EV_TICK: rc = apply_tick(r, ev, logged, err); break;
    case GP_EV_CLOCK_RESOLUTION: rc = apply_clock_resolution(r, ev, logged, err); break;
    case GP_EV_REPLICA_EXIT: rc = gp_exits_apply(&r->exits, e, ev->exit, ev->time, logged, err); break;
    case GP_EV_CHECKPOINTED: rc = gp_engine_job_checkpointed(e, ev->job_id, ev->time, err); break;
    case GP_EV_GPU_HEALTH: rc = gp_engine_gpu_health(e, ev->name, ev->gpu_index, ev->healthy, ev->time, err); break;
    case GP_EV_JOB_UPDATE: rc = gp_engine_job_update(e, ev->job_id, ev->update, ev->time, err); break;
    case GP_EV_GPU_TYPE_DECLARE: rc = gp_engine_gpu_type_declare(e, ev->name, ev->time, err); break;
    case GP_EV_BOOKING_ADD: rc = gp_engine_booking_add(e, ev->booking, ev->time, &r->booking_result, err); break;
    case GP_EV_BOOKING_CANCEL: rc = gp_engine_booking_cancel(e, ev->name, ev->time, err); break;
    case GP_EV_BOOKING_CHANGE: rc = gp_engine_booking_change(e, ev->name, ev->booking_change, ev->time, err); break;
    case GP_EV_BOOKING_ALLOWANCE:
        rc = gp_engine_booking_allowance_set(e, ev->name, ev->seconds, ev->time, err);
        break;
    default: rc = gp_error_set(err, GP_ERR_INVALID, "kind", "unknown event kind %d", (int)ev->kind);
    }
    if (rc == GP_OK)
        collect_touched(r);
    return rc;
}

gp_err gp_replayer_digest(const gp_replayer *r, int64_t *count, char hex[65], gp_error *err)
{
    size_t n;
    const gp_decision *ds = gp_engine_decisions(r->engine, &n);
    *count = (int64_t)n;
    return gp_decisions_digest(r->engine, ds, n, hex, err);
}

void gp_replayer_settle(gp_replayer *r)
{
    for (size_t i = 0; i < r->n_touched; i++) {
        gp_job_info info;
        if (gp_engine_job_info(r->engine, r->touched[i], &info, NULL) == GP_OK && is_final(info.state))
            gp_engine_job_forget(r->engine, r->touched[i], NULL);
        gp_exits_settle(&r->exits, r->engine, r->touched[i]);
    }
    r->n_touched = 0;
    gp_engine_decisions_clear(r->engine);
}

/* ---- the check against a store's job table ---- */

gp_err gp_replayer_check_job(void *replayer, uint64_t id, const char *state, const char *placement_json,
                             gp_error *err)
{
    gp_replayer *r = replayer;
    gp_job_info info;
    r->rows_checked++;
    if (gp_engine_job_info(r->engine, id, &info, NULL) != GP_OK)
        return gp_error_set(err, GP_ERR_CONFLICT, "store", "job %llu is %s in the store but not in the replayed engine",
                            (unsigned long long)id, state);
    if (strcmp(state, gp_job_state_name(info.state)) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "store", "job %llu is %s in the store, %s after replay",
                            (unsigned long long)id, state, gp_job_state_name(info.state));
    json_t *placement = gp_placement_json(r->engine, id, &info);
    char *text = json_is_null(placement) ? NULL : json_dumps(placement, GP_JSON_CANONICAL);
    json_decref(placement);
    bool same = (!text && !placement_json) || (text && placement_json && strcmp(text, placement_json) == 0);
    free(text);
    if (!same)
        return gp_error_set(err, GP_ERR_CONFLICT, "store", "job %llu has another placement after replay",
                            (unsigned long long)id);
    return GP_OK;
}

gp_err gp_replayer_check_totals(const gp_replayer *r, gp_error *err)
{
    size_t rows = r->rows_checked;
    gp_engine_stats stats;
    gp_engine_stats_get(r->engine, &stats);
    if (stats.jobs != rows)
        return gp_error_set(err, GP_ERR_CONFLICT, "store", "the store has %zu live jobs, the replayed engine %zu", rows,
                            stats.jobs);
    return gp_engine_check_invariants(r->engine, err);
}

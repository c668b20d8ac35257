/* ledger.c - the usage ledger's records (see ledger.h; the chain is
 * store_ledger.c's).
 *
 * An "open" record says who held what from when: the interval's tenant,
 * job, class, topology, GPU type and milli-GPUs from the engine's decision;
 * the job's user from its row; where it runs (node, GPU UUIDs, the MIG
 * instance or the share of a shared GPU) from the engine's placement, read
 * while the job still holds it (the journal's, built once for the event
 * and the job's row).  The "close" record repeats the open one's
 * fields (copied from the ledger, so it does not depend on a job the
 * engine may have forgotten) and adds end, why it closed, and the seq of
 * its open record.
 *
 * Why it closed: gp_ledger_close_reason (eventlog/ledger_record.c).
 *
 * Guarantee and capacity records (gp_ledger_sync) are written by
 * difference: the engine's state against the last records of the ledger,
 * so a restart, a migration or a change that moves nothing writes none.
 * Example: PUT research {guarantee 24 H100} at t, then research/nlp {16}:
 *     {"gpu_type":"H100","kind":"guarantee","milli_gpus":24000,"start":t,"tenant":"research"}
 *     {"gpu_type":"H100","kind":"guarantee","milli_gpus":16000,"start":t2,"tenant":"research/nlp"}
 */
#include "server/ledger.h"

#include "eventlog/ledger_record.h"
#include "server/log.h"

#include <stdio.h>
#include <string.h>

static gp_err open_record(gp_store *s, const gp_engine *e, const gp_usage *u, json_t *placement, gp_error *err)
{
    const char *user = gp_engine_job_user(e, u->job_id); /* the engine's: no read in the batch */
    json_t *rec = gp_ledger_usage_record(u, "open");
    json_object_set_new(rec, "user", user ? json_string(user) : json_null());
    json_object_set_new(rec, "share", json_is_array(placement) ? json_string(gp_ledger_share_of(placement)) : json_null());
    json_object_set(rec, "placement", placement ? placement : json_null());
    gp_err rc = gp_store_ledger_append(s, rec, err);
    json_decref(rec);
    return rc;
}

/* The close record: the open one's fields (or the decision's alone when
 * the interval opened before the ledger existed) plus end and why. */
static gp_err close_record(gp_store *s, const gp_usage *u, const char *why, gp_error *err)
{
    json_t *open = NULL;
    gp_err rc = gp_store_ledger_open_get(s, u->interval_id, &open, err);
    if (rc)
        return rc;
    json_t *rec = gp_ledger_usage_record(u, "close");
    json_object_set_new(rec, "open_seq", open ? json_incref(json_object_get(open, "seq")) : json_null());
    static const char *const copied[] = {"user", "share", "placement"};
    for (size_t k = 0; k < sizeof copied / sizeof copied[0]; k++) {
        json_t *v = open ? json_object_get(open, copied[k]) : NULL;
        json_object_set_new(rec, copied[k], v ? json_incref(v) : json_null());
    }
    json_object_set_new(rec, "end", json_integer(u->end));
    json_object_set_new(rec, "closed", json_string(why));
    rc = gp_store_ledger_append(s, rec, err);
    json_decref(rec);
    json_decref(open);
    return rc;
}

gp_err gp_ledger_write(gp_store *s, const gp_engine *e, const gp_event *ev, const gp_decision *ds, size_t n,
                       size_t i, json_t *placement, gp_error *err)
{
    const gp_decision *d = &ds[i];
    if (d->kind == GP_DEC_USAGE_OPEN)
        return open_record(s, e, &d->usage, placement, err);
    return close_record(s, &d->usage, gp_ledger_close_reason(ev, ds, n, i), err);
}

/* ---- guarantee and capacity records ---- */

/* What the ledger says is in force: "tenant\tTYPE" -> guarantee and
 * "TYPE" -> capacity, in milli-GPUs. */
typedef struct levels {
    json_t *guarantee, *capacity;
} levels;

static void level_seen(void *ctx, const char *kind, const char *tenant, const char *gpu_type, int64_t milli)
{
    levels *l = ctx;
    char key[GP_PATH_MAX + GP_NAME_MAX + 2];
    bool guarantee = strcmp(kind, "guarantee") == 0;
    snprintf(key, sizeof key, "%s%s%s", guarantee ? tenant : "", guarantee ? "\t" : "", gpu_type);
    json_object_set_new(guarantee ? l->guarantee : l->capacity, key, json_integer(milli));
}

static int64_t level_of(json_t *map, const char *key)
{
    return json_integer_value(json_object_get(map, key)); /* absent: 0 */
}

static gp_err append_new(gp_store *s, json_t *rec, gp_error *err)
{
    gp_err rc = rec ? gp_store_ledger_append(s, rec, err) : gp_error_set(err, GP_ERR_NOMEM, "ledger", "out of memory");
    json_decref(rec);
    return rc;
}

static gp_err sync_guarantees(gp_store *s, const gp_engine *e, json_t *recorded, int64_t now, gp_error *err)
{
    gp_err rc = GP_OK;
    int types = gp_engine_gpu_type_count(e);
    for (uint32_t i = 0; rc == GP_OK && i < gp_engine_tenant_count(e); i++) {
        gp_tenant_info t;
        if (!gp_engine_tenant_get(e, i, &t))
            continue;
        for (int d = 0; rc == GP_OK && d < types && d < GP_MAX_GPU_TYPES; d++) {
            const char *type = gp_engine_gpu_type_name(e, d);
            char key[GP_PATH_MAX + GP_NAME_MAX + 2];
            snprintf(key, sizeof key, "%s\t%s", t.path, type);
            int64_t g = t.has_guarantee && t.guarantee.v[d] != GP_UNLIMITED ? t.guarantee.v[d] : 0;
            if (g != level_of(recorded, key))
                rc = append_new(s, gp_ledger_guarantee_record(t.path, type, g, now), err);
            json_object_del(recorded, key);
        }
    }
    const char *key; /* what is left: tenants the engine no longer has */
    json_t *v;
    json_object_foreach(recorded, key, v) {
        const char *tab = strchr(key, '\t');
        if (rc == GP_OK && json_integer_value(v) != 0 && tab) {
            char path[GP_PATH_MAX];
            snprintf(path, sizeof path, "%.*s", (int)(tab - key), key);
            rc = append_new(s, gp_ledger_guarantee_record(path, tab + 1, 0, now), err);
        }
    }
    return rc;
}

static gp_err sync_capacity(gp_store *s, const gp_engine *e, json_t *recorded, int64_t now, gp_error *err)
{
    int64_t gpus[GP_MAX_GPU_TYPES]; /* per node add, so one pass without copying nodes */
    gp_engine_gpus_by_type(e, gpus);
    gp_err rc = GP_OK;
    for (int d = 0; rc == GP_OK && d < gp_engine_gpu_type_count(e) && d < GP_MAX_GPU_TYPES; d++) {
        const char *type = gp_engine_gpu_type_name(e, d);
        if (gpus[d] * 1000 != level_of(recorded, type))
            rc = append_new(s, gp_ledger_capacity_record(type, gpus[d] * 1000, now), err);
    }
    return rc;
}

gp_err gp_ledger_sync(gp_store *s, const gp_engine *e, bool tenants, bool capacity, int64_t now, gp_error *err)
{
    levels l = {json_object(), json_object()};
    gp_err rc = gp_store_ledger_levels(s, level_seen, &l, err);
    if (rc == GP_OK && tenants)
        rc = sync_guarantees(s, e, l.guarantee, now, err);
    if (rc == GP_OK && capacity)
        rc = sync_capacity(s, e, l.capacity, now, err);
    json_decref(l.guarantee);
    json_decref(l.capacity);
    return rc;
}

/* ---- the daemon's view: head log, last verification ---- */

void gp_ledger_state_init(gp_ledger_state *l)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    l->verify_ok = -1;
}

/* ---- booking records ---- */

gp_err gp_ledger_booking(gp_store *s, const gp_engine *e, const gp_decision *d, int64_t now, gp_error *err)
{
    gp_booking_info b;
    const char *type = NULL;
    if (gp_engine_booking_get(e, d->booking, &b, NULL) != GP_OK || b.state == GP_BOOKING_REFUSED ||
        !(type = gp_engine_gpu_type_name(e, b.gpu_type)))
        return GP_OK;
    bool cut = b.state == GP_BOOKING_CANCELLED || b.state == GP_BOOKING_RELEASED_NO_SHOW;
    int64_t end = cut ? (now < b.start ? b.start : now < b.end ? now : b.end) : b.end;
    json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:I, s:I, s:s}", "kind", "booking", "booking", b.name,
                            "tenant", gp_engine_tenant_path(e, b.tenant), "user", b.made_by, "gpu_type", type,
                            "milli_gpus", (json_int_t)b.allowance_gpus * 1000, "topology",
                            gp_topology_name(b.topology), "start", (json_int_t)b.start, "end", (json_int_t)end,
                            "state", gp_booking_state_name(b.state));
    gp_err rc = rec ? gp_store_ledger_append(s, rec, err) : gp_error_set(err, GP_ERR_NOMEM, "ledger", "out of memory");
    json_decref(rec);
    return rc;
}

bool gp_ledger_head_log_due(const gp_ledger_state *l, int64_t now_ms)
{
    return l->head_due_ms == 0 || now_ms >= l->head_due_ms;
}

void gp_ledger_head_log(gp_ledger_state *l, gp_store *writer, int64_t now_ms)
{
    if (!gp_ledger_head_log_due(l, now_ms))
        return;
    l->head_due_ms = now_ms + GP_LEDGER_HEAD_LOG_MS;
    gp_error err;
    int64_t seq;
    char hash[65];
    if (gp_store_ledger_head(writer, &seq, hash, &err) != GP_OK) {
        char q[300];
        gp_log(GP_LOG_WARN, "ledger_head", "error=%s", gp_log_quote(err.message, q, sizeof q));
        return;
    }
    pthread_mutex_lock(&l->lock);
    l->head_seq = seq;
    memcpy(l->head_hash, hash, sizeof hash);
    pthread_mutex_unlock(&l->lock);
    gp_log(GP_LOG_INFO, "ledger_head", "seq=%lld hash=%s", (long long)seq, hash);
}

void gp_ledger_verified(gp_ledger_state *l, const gp_store_ledger_check *c, int64_t at)
{
    pthread_mutex_lock(&l->lock);
    l->verify_ok = c->first_bad == 0;
    l->first_bad = c->first_bad;
    l->verified_at = at;
    pthread_mutex_unlock(&l->lock);
    if (c->first_bad != 0) {
        char q[300];
        gp_log(GP_LOG_ERROR, "ledger_verify", "ok=false first_bad=%lld why=%s", (long long)c->first_bad,
               gp_log_quote(c->why, q, sizeof q));
    }
}

/* ledger.c - gpupool-sim's usage ledger file (see ledger.h).
 *
 * The writer keeps the chain's head (seq, hash) and every open interval's
 * sealed open record, indexed by the engine's interval id (consecutive
 * from 1), so a close repeats what its open said as gpupoold's close
 * record does (server/ledger.c reads it back from the store instead).
 *
 * This file includes eventlog/ledger_record.h (and so eventlog/event.h);
 * simulator.c includes sim/event_queue.h, whose gp_event is another type:
 * the two meet only through ledger.h, which names neither.
 */
#include "sim/ledger.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventlog/ledger_record.h"
#include "eventlog/placement.h"
#include "util/grow.h"

struct gp_sim_ledger {
    FILE *f;
    char path[GP_PATH_MAX];
    int64_t epoch;
    int64_t seq;       /* of the last record written */
    char head[65];     /* its hash */
    json_t **open;     /* by interval id: the sealed open record, NULL when closed */
    size_t cap_open;
    char failed[GP_ERROR_MESSAGE_MAX]; /* the first failure, "" when none */
};

gp_err gp_sim_ledger_open(const char *path, int64_t epoch, gp_sim_ledger **out, gp_error *err)
{
    gp_sim_ledger *l = calloc(1, sizeof *l);
    if (!l)
        return gp_error_set(err, GP_ERR_NOMEM, "ledger", "out of memory");
    l->f = fopen(path, "w");
    if (!l->f) {
        gp_error_set(err, GP_ERR_INVALID, "ledger", "%s: %s", path, strerror(errno));
        free(l);
        return GP_ERR_INVALID;
    }
    snprintf(l->path, sizeof l->path, "%s", path);
    l->epoch = epoch;
    memcpy(l->head, GP_LEDGER_ZERO_HASH, sizeof l->head);
    *out = l;
    return GP_OK;
}

static void fail(gp_sim_ledger *l, const char *why)
{
    if (!l->failed[0])
        snprintf(l->failed, sizeof l->failed, "%s", why);
}

/* Seal rec as the next record and write its line; rec keeps seq and prev. */
static void append(gp_sim_ledger *l, json_t *rec)
{
    if (l->failed[0])
        return;
    if (!rec) {
        fail(l, "out of memory");
        return;
    }
    char hash[65];
    char *text = gp_ledger_seal(rec, l->seq + 1, l->head, hash);
    if (!text) {
        fail(l, "out of memory");
        return;
    }
    if (fputs(text, l->f) == EOF || fputc('\n', l->f) == EOF)
        fail(l, strerror(errno));
    free(text);
    l->seq++;
    memcpy(l->head, hash, sizeof l->head);
}

static void capacity_records(gp_sim_ledger *l, const gp_engine *e, int64_t start)
{
    int64_t milli[GP_MAX_GPU_TYPES] = {0};
    size_t n = gp_engine_node_count(e);
    for (size_t i = 0; i < n; i++) {
        gp_node_info ni;
        if (gp_engine_node_get(e, (uint32_t)i, &ni) && ni.type >= 0 && ni.type < GP_MAX_GPU_TYPES)
            milli[ni.type] += (int64_t)ni.gpu_count * 1000;
    }
    for (int ty = 0; ty < GP_MAX_GPU_TYPES; ty++) {
        const char *name = gp_engine_gpu_type_name(e, ty);
        if (name && milli[ty] > 0) {
            json_t *rec = gp_ledger_capacity_record(name, milli[ty], start);
            append(l, rec);
            json_decref(rec);
        }
    }
}

static void guarantee_records(gp_sim_ledger *l, const gp_tenant_file *tenants, int64_t start)
{
    for (size_t i = 0; tenants && i < tenants->n_tenants; i++) {
        const gp_quota *g = &tenants->tenants[i].spec.guarantee;
        for (int k = 0; g->set && k < g->n_gpu; k++) {
            if (g->gpu[k].milli <= 0)
                continue;
            json_t *rec = gp_ledger_guarantee_record(tenants->tenants[i].path, g->gpu[k].type, g->gpu[k].milli, start);
            append(l, rec);
            json_decref(rec);
        }
    }
}

void gp_sim_ledger_start(gp_sim_ledger *l, const gp_engine *e, const gp_tenant_file *tenants, int64_t now)
{
    capacity_records(l, e, l->epoch + now);
    guarantee_records(l, tenants, l->epoch + now);
}

/* The slot of an interval id in l->open, grown as needed; NULL when out of memory. */
static json_t **open_slot(gp_sim_ledger *l, uint64_t id)
{
    size_t had = l->cap_open;
    json_t **open = gp_grow(l->open, &l->cap_open, (size_t)id + 1, sizeof *open);
    if (!open)
        return NULL;
    memset(open + had, 0, (l->cap_open - had) * sizeof *open);
    l->open = open;
    return &l->open[id];
}

/* The decision's interval with times moved from simulated to epoch seconds. */
static gp_usage at_epoch(const gp_sim_ledger *l, const gp_usage *u)
{
    gp_usage v = *u;
    v.start += l->epoch;
    if (v.end >= 0)
        v.end += l->epoch;
    return v;
}

static void open_record(gp_sim_ledger *l, const gp_engine *e, const gp_usage *u)
{
    json_t **slot = open_slot(l, u->interval_id);
    if (!slot) {
        fail(l, "out of memory");
        return;
    }
    gp_job_info info;
    json_t *placement = gp_engine_job_info(e, u->job_id, &info, NULL) == GP_OK ? gp_placement_json(e, u->job_id, &info)
                                                                              : json_null();
    gp_usage v = at_epoch(l, u);
    json_t *rec = gp_ledger_usage_record(&v, "open");
    if (rec) {
        json_object_set_new(rec, "user", json_null());
        json_object_set_new(rec, "share",
                            json_is_array(placement) ? json_string(gp_ledger_share_of(placement)) : json_null());
        json_object_set_new(rec, "placement", placement);
    } else {
        json_decref(placement);
    }
    append(l, rec);
    json_decref(*slot);
    *slot = rec;
}

static void close_record(gp_sim_ledger *l, const gp_usage *u, const char *why)
{
    json_t **slot = u->interval_id < l->cap_open ? &l->open[u->interval_id] : NULL;
    json_t *open = slot ? *slot : NULL;
    gp_usage v = at_epoch(l, u);
    json_t *rec = gp_ledger_usage_record(&v, "close");
    if (rec) {
        json_object_set_new(rec, "open_seq", open ? json_incref(json_object_get(open, "seq")) : json_null());
        static const char *const copied[] = {"user", "share", "placement"};
        for (size_t k = 0; k < sizeof copied / sizeof copied[0]; k++) {
            json_t *val = open ? json_object_get(open, copied[k]) : NULL;
            json_object_set_new(rec, copied[k], val ? json_incref(val) : json_null());
        }
        json_object_set_new(rec, "end", json_integer(v.end));
        json_object_set_new(rec, "closed", json_string(why));
    }
    append(l, rec);
    json_decref(rec);
    if (slot) {
        json_decref(*slot);
        *slot = NULL;
    }
}

void gp_sim_ledger_decisions(gp_sim_ledger *l, const gp_engine *e, const gp_decision *ds, size_t n)
{
    /* The simulator's engine calls are submits, ticks, job ends,
     * checkpoints and cancels: never a node loss or a GPU fault, the only
     * events gp_ledger_close_reason reads. */
    gp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = GP_EV_TICK;
    for (size_t i = 0; i < n; i++) {
        if (ds[i].kind == GP_DEC_USAGE_OPEN)
            open_record(l, e, &ds[i].usage);
        else if (ds[i].kind == GP_DEC_USAGE_CLOSE)
            close_record(l, &ds[i].usage, gp_ledger_close_reason(&ev, ds, n, i));
    }
}

int64_t gp_sim_ledger_records(const gp_sim_ledger *l)
{
    return l->seq;
}

gp_err gp_sim_ledger_close(gp_sim_ledger *l, gp_error *err)
{
    if (fclose(l->f) != 0)
        fail(l, strerror(errno));
    for (size_t i = 0; i < l->cap_open; i++)
        json_decref(l->open[i]);
    free(l->open);
    gp_err rc = GP_OK;
    if (l->failed[0])
        rc = gp_error_set(err, GP_ERR_INVALID, "ledger", "%s: %s", l->path, l->failed);
    free(l);
    return rc;
}

/* exits.c - replicas ended, gangs finished (see exits.h for the rule). */
#include "eventlog/exits.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

struct gp__exit_record {
    uint64_t job;
    int64_t bind_time;
    int replicas;
    int ended;
    bool failed;               /* a replica ended failed */
    unsigned char *ended_mask; /* one byte per replica */
};

static gp__exit_record *find(gp_exits *x, uint64_t job)
{
    for (size_t i = 0; i < x->n; i++)
        if (x->records[i].job == job)
            return &x->records[i];
    return NULL;
}

static void drop(gp_exits *x, gp__exit_record *rec)
{
    free(rec->ended_mask);
    *rec = x->records[--x->n];
}

/* The record of this run, made (or remade for a new run) when needed. */
static gp__exit_record *record_of(gp_exits *x, uint64_t job, const gp_job_info *info)
{
    gp__exit_record *rec = find(x, job);
    if (rec && rec->bind_time != info->bind_time) {
        drop(x, rec);
        rec = NULL;
    }
    if (rec)
        return rec;
    gp__exit_record *records = gp_grow(x->records, &x->cap, x->n + 1, sizeof *records);
    if (!records)
        return NULL;
    x->records = records;
    unsigned char *mask = calloc((size_t)info->replicas, 1);
    if (!mask)
        return NULL;
    rec = &x->records[x->n++];
    *rec = (gp__exit_record){.job = job, .bind_time = info->bind_time, .replicas = info->replicas, .ended_mask = mask};
    return rec;
}

static bool placed_and_live(const gp_job_info *info)
{
    return (info->state == GP_JOB_ADMITTED || info->state == GP_JOB_RUNNING || info->state == GP_JOB_PREEMPTING) &&
           info->bind_time >= 0;
}

gp_err gp_exits_apply(gp_exits *x, gp_engine *e, const gp_replica_exit *report, int64_t now, bool *logged,
                      gp_error *err)
{
    gp_job_info info;
    *logged = false;
    if (gp_engine_job_info(e, report->job_id, &info, NULL) != GP_OK || !placed_and_live(&info) ||
        info.bind_time != report->bind_time || report->replica < 0 || report->replica >= info.replicas)
        return GP_OK; /* stale or unknown: nothing to count */
    gp__exit_record *rec = record_of(x, report->job_id, &info);
    if (!rec)
        return gp_error_set(err, GP_ERR_NOMEM, "replica", "out of memory");
    if (rec->ended_mask[report->replica])
        return GP_OK; /* counted already */
    bool failed = gp_replica_exit_failed(report), all = rec->ended + 1 == rec->replicas;
    bool finish = info.state == GP_JOB_PREEMPTING ? all : failed || all;
    gp_exit how = failed ? GP_EXIT_FAILED : GP_EXIT_SUCCEEDED;
    if (info.state == GP_JOB_PREEMPTING) /* past its time limit and all exited 0: its work is done */
        how = info.time_limited && !failed && !rec->failed ? GP_EXIT_SUCCEEDED : GP_EXIT_STOPPED;
    if (finish) {
        gp_err rc = gp_engine_job_finished(e, report->job_id, how, now, err);
        if (rc)
            return rc;
        drop(x, rec);
    } else {
        rec->ended_mask[report->replica] = 1;
        rec->ended++;
        rec->failed = rec->failed || failed;
    }
    *logged = true;
    return GP_OK;
}

void gp_exits_settle(gp_exits *x, const gp_engine *e, uint64_t id)
{
    gp__exit_record *rec = find(x, id);
    gp_job_info info;
    if (rec && (gp_engine_job_info(e, id, &info, NULL) != GP_OK || !placed_and_live(&info) ||
                info.bind_time != rec->bind_time))
        drop(x, rec);
}

json_t *gp_exits_to_json(const gp_exits *x)
{
    json_t *out = json_array();
    for (size_t i = 0; out && i < x->n; i++) {
        const gp__exit_record *rec = &x->records[i];
        json_t *ended = json_array();
        for (int k = 0; k < rec->replicas; k++)
            json_array_append_new(ended, json_boolean(rec->ended_mask[k]));
        json_array_append_new(out, json_pack("{s:I, s:I, s:b, s:o}", "job", (json_int_t)rec->job, "bind_time",
                                             (json_int_t)rec->bind_time, "failed", rec->failed, "ended", ended));
    }
    return out;
}

gp_err gp_exits_from_json(gp_exits *x, const json_t *records, gp_error *err)
{
    size_t i;
    const json_t *o;
    json_array_foreach(records, i, o) {
        const json_t *ended = json_object_get(o, "ended");
        size_t replicas = json_array_size(ended);
        if (!json_is_integer(json_object_get(o, "job")) || replicas < 1 || replicas > GP_MAX_REPLICAS)
            return gp_error_set(err, GP_ERR_INVALID, "exits", "exit record %zu is malformed", i);
        gp_job_info info = {.bind_time = json_integer_value(json_object_get(o, "bind_time")),
                            .replicas = (int)replicas};
        gp__exit_record *rec = record_of(x, (uint64_t)json_integer_value(json_object_get(o, "job")), &info);
        if (!rec)
            return gp_error_set(err, GP_ERR_NOMEM, "exits", "out of memory");
        rec->failed = json_is_true(json_object_get(o, "failed"));
        for (size_t k = 0; k < replicas; k++)
            if (json_is_true(json_array_get(ended, k))) {
                rec->ended_mask[k] = 1;
                rec->ended++;
            }
    }
    return GP_OK;
}

void gp_exits_free(gp_exits *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->records[i].ended_mask);
    free(x->records);
    memset(x, 0, sizeof *x);
}

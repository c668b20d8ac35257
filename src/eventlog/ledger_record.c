/* ledger_record.c - the usage ledger's record format (see ledger_record.h).
 *
 * Why an interval closed is read from what the same event decided next for
 * its job:
 *
 *     next decision for the job           closed
 *     USAGE_OPEN (a new interval)         reclassified (burstable <-> guaranteed)
 *     -> succeeded                        finished
 *     -> cancelled                        cancelled
 *     -> failed, reason "time_limit: ..." time_limit
 *     -> failed, otherwise                failed
 *     -> pending, event node_lost         node_lost
 *     -> pending, event gpu_health        gpu_failed
 *     -> pending, from preempting         preempted
 *     -> pending, from running            failed (restarted by its restart_policy)
 *     (a dedicated-idle interval)         recounted
 *
 * Example: job 7 (research/nlp) is preempted at t=5400 after running on
 * one 1g.10gb slice from t=0: the tick that ends its grace releases it
 * (USAGE_CLOSE #1) and requeues it (preempting -> pending), so the close
 * record says "closed":"preempted".
 */
#include "eventlog/ledger_record.h"
#include "util/shape_names.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <string.h>

const char GP_LEDGER_ZERO_HASH[65] = "0000000000000000000000000000000000000000000000000000000000000000";

static const char *requeue_reason(const gp_event *ev, const gp_decision *d)
{
    if (ev->kind == GP_EV_NODE_LOST)
        return "node_lost";
    if (ev->kind == GP_EV_GPU_HEALTH)
        return "gpu_failed";
    return d->from == GP_JOB_PREEMPTING ? "preempted" : "failed";
}

const char *gp_ledger_close_reason(const gp_event *ev, const gp_decision *ds, size_t n, size_t i)
{
    if (ds[i].usage.dedicated_idle) /* a node's idle GPUs or its dedicated tenant changed (core/metering.c) */
        return "recounted";
    for (size_t k = i + 1; k < n; k++) {
        const gp_decision *d = &ds[k];
        if (d->job_id != ds[i].job_id)
            continue;
        if (d->kind == GP_DEC_USAGE_OPEN)
            return "reclassified";
        if (d->kind != GP_DEC_TRANSITION)
            continue;
        if (d->to == GP_JOB_SUCCEEDED)
            return "finished";
        if (d->to == GP_JOB_CANCELLED)
            return "cancelled";
        if (d->to == GP_JOB_FAILED)
            return strncmp(d->reason, "time_limit", 10) == 0 ? "time_limit" : "failed";
        if (d->to == GP_JOB_PENDING)
            return requeue_reason(ev, d);
    }
    return "released"; /* no later decision for the job says why: not expected */
}

json_t *gp_ledger_usage_record(const gp_usage *u, const char *kind)
{
    return json_pack("{s:s, s:I, s:I, s:s, s:s, s:I, s:s, s:s, s:I}", "kind", kind, "interval",
                     (json_int_t)u->interval_id, "job", (json_int_t)u->job_id, "tenant", u->tenant, "gpu_type",
                     u->gpu_type, "milli_gpus", (json_int_t)u->milli_gpus, "class",
                     u->dedicated_idle ? "dedicated_idle" : gp_class_name(u->cls), "topology",
                     gp_topology_name(u->topology), "start", (json_int_t)u->start);
}

const char *gp_ledger_share_of(const json_t *placement)
{
    json_t *slice = json_object_get(json_array_get(placement, 0), "slice");
    return slice ? json_string_value(json_object_get(slice, "kind")) : gp_share_whole;
}

json_t *gp_ledger_guarantee_record(const char *tenant, const char *gpu_type, int64_t milli_gpus, int64_t start)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:I}", "kind", "guarantee", "tenant", tenant, "gpu_type", gpu_type,
                     "milli_gpus", (json_int_t)milli_gpus, "start", (json_int_t)start);
}

json_t *gp_ledger_capacity_record(const char *gpu_type, int64_t milli_gpus, int64_t start)
{
    return json_pack("{s:s, s:s, s:I, s:I}", "kind", "capacity", "gpu_type", gpu_type, "milli_gpus",
                     (json_int_t)milli_gpus, "start", (json_int_t)start);
}

void gp_ledger_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char digest[32];
    gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, digest);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

char *gp_ledger_seal(json_t *record, int64_t seq, const char prev[65], char hash[65])
{
    json_object_set_new(record, "seq", json_integer(seq));
    json_object_set_new(record, "prev", json_string(prev));
    char *text = json_dumps(record, JSON_COMPACT | JSON_SORT_KEYS);
    if (text)
        gp_ledger_sha256_hex(text, strlen(text), hash);
    return text;
}

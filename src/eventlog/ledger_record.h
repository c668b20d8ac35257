/* ledger_record.h - the usage ledger's record format, shared by gpupoold
 * (server/ledger.c writes records into the store) and gpupool-sim (which
 * writes the same records to a file), so a bill computed from either is
 * computed from the same thing.  docs/metering.md lists every field.
 *
 * A record is a JSON object; sealing it adds its place in the chain
 * ("seq", "prev") and gives its canonical text (compact, keys sorted,
 * integers and strings only) and that text's SHA-256 as lowercase hex:
 *
 *     rec  = gp_ledger_usage_record(&usage, "open");   // + user, share, placement
 *     text = gp_ledger_seal(rec, 1, GP_LEDGER_ZERO_HASH, hash);
 *     -> {"class":"burstable",...,"kind":"open","prev":"0000...","seq":1,...}
 *
 * Ownership: every json_t * returned is a new reference the caller
 * releases with json_decref; gp_ledger_seal's text is malloc'd and freed
 * by the caller.  Strings passed in are copied.
 */
#ifndef GP_EVENTLOG_LEDGER_RECORD_H
#define GP_EVENTLOG_LEDGER_RECORD_H

#include "core/engine.h"
#include "eventlog/event.h"

#include <jansson.h>

extern const char GP_LEDGER_ZERO_HASH[65];

/* The fields an engine usage decision carries, for an "open" or "close"
 * record: kind, interval, job, tenant, gpu_type, milli_gpus, class,
 * topology, start.  The caller adds the rest (user, share, placement; a
 * close's end, closed, open_seq). */
json_t *gp_ledger_usage_record(const gp_usage *u, const char *kind);

/* "whole", or the first replica's share kind ("mig", "mps", "timeslice")
 * of a placement as eventlog/placement.h spells it. */
const char *gp_ledger_share_of(const json_t *placement);

/* Why an interval closed, from what the event decided next for its job:
 * "finished", "failed", "cancelled", "time_limit", "preempted",
 * "node_lost", "gpu_failed", or "reclassified" (it continues as another
 * class in a new interval).  ds[0..n) are the event's decisions, ds[i]
 * the USAGE_CLOSE. */
const char *gp_ledger_close_reason(const gp_event *ev, const gp_decision *ds, size_t n, size_t i);

/* A tenant's guarantee (its own configured floor) of one GPU type from
 * start on, until the next guarantee record for the same tenant and type
 * (0 when removed):
 *     {"gpu_type":"H100","kind":"guarantee","milli_gpus":16000,"start":...,"tenant":"research/nlp"} */
json_t *gp_ledger_guarantee_record(const char *tenant, const char *gpu_type, int64_t milli_gpus, int64_t start);

/* The physical GPUs of one type in the fleet from start on, until the
 * next capacity record for the type:
 *     {"gpu_type":"H100","kind":"capacity","milli_gpus":32000,"start":...} */
json_t *gp_ledger_capacity_record(const char *gpu_type, int64_t milli_gpus, int64_t start);

/* Adds "seq" and "prev" to record and returns its canonical text (NULL
 * when out of memory); hash receives the text's SHA-256 (hex). */
char *gp_ledger_seal(json_t *record, int64_t seq, const char prev[65], char hash[65]);

/* SHA-256 of len bytes as lowercase hex. */
void gp_ledger_sha256_hex(const void *data, size_t len, char out[65]);

#endif

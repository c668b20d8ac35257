/* decisions.h - an event's decisions in canonical text, and their digest.
 *
 * Each decision is one line of text that names its kind and every field
 * that kind carries, e.g.
 *
 *     transition t=100 job=7 pending->running "bound to 8 H100 GPUs (...)"
 *     bind t=100 job=7 gpus=0,1,2,3,4,5,6,7
 *     usage_open t=100 job=7 interval=3 research/nlp H100 8000 guaranteed any start=100 end=-1
 *
 * (a bind lists the GPUs the engine holds for the job right after the
 * event, and a shared replica its slice, so a different placement is a
 * different line).  The digest is SHA-256 over the lines of one event in
 * order, without their quoted reasons (a rewording is not a different
 * decision): what gpupoold records with each logged event and what a replay
 * compares (docs/event-log.md).  Lines are for people too: the replay tool
 * prints them when an event differs.
 *
 * Ownership: callers pass buffers; nothing is kept.
 */
#ifndef GP_EVENTLOG_DECISIONS_H
#define GP_EVENTLOG_DECISIONS_H

#include "core/engine.h"

/* Writes d's line (with its newline) into buf; returns the length it
 * needed, like snprintf. */
size_t gp_decision_text(const gp_engine *e, const gp_decision *d, char *buf, size_t cap);

/* SHA-256 of the lines of ds[0..n), lowercase hex. */
gp_err gp_decisions_digest(const gp_engine *e, const gp_decision *ds, size_t n, char hex[65], gp_error *err);

#endif

/* decisions.c - canonical decision lines and their SHA-256 (see decisions.h).
 *
 * One writer serves both uses: it formats a piece at a time and either
 * appends it to the caller's buffer (cut at the end) or feeds it to the
 * hash, so the digest covers exactly the text a person is shown -- but for
 * the reasons: a reason explains a decision and is not part of it, so a
 * build that words a reason better ("1 GPU", not "1 GPUs") still replays
 * an older log as equal.  The text shows them; the hash leaves them out.
 */
#include "eventlog/decisions.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sink {
    gnutls_hash_hd_t hash; /* NULL: text only */
    char *buf;
    size_t cap, len;
} sink;

static void put(sink *s, const char *fmt, ...)
{
    char piece[GP_REASON_MAX * 3 + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof piece, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof piece ? (size_t)n : sizeof piece - 1;
    if (s->hash)
        gnutls_hash(s->hash, piece, len);
    if (s->buf && s->len + 1 < s->cap) {
        size_t room = s->cap - s->len - 1;
        memcpy(s->buf + s->len, piece, len < room ? len : room);
        s->buf[s->len + (len < room ? len : room)] = '\0';
    }
    s->len += len;
}

/* A decision's reason: shown, not hashed (see the top of the file). */
static void put_reason(sink *s, const char *reason)
{
    if (s->buf)
        put(s, " \"%s\"", reason);
}

/* The GPUs (or slices) the engine holds for the job now. */
static void put_placement(sink *s, const gp_engine *e, uint64_t job)
{
    gp_job_info info;
    put(s, " gpus=");
    if (gp_engine_job_info(e, job, &info, NULL) != GP_OK)
        return;
    size_t cap = (size_t)info.replicas * (size_t)(info.gpus > 0 ? info.gpus : 1);
    uint32_t *gpus = malloc(cap * sizeof *gpus);
    gp_slice *slices = malloc((size_t)info.replicas * sizeof *slices);
    size_t n = gpus ? gp_engine_job_gpus(e, job, gpus, cap) : 0;
    size_t ns = slices ? gp_engine_job_slices(e, job, slices, (size_t)info.replicas) : 0;
    for (size_t i = 0; i < ns; i++)
        put(s, "%s%u:%s:%s@%d:%d", i ? "," : "", slices[i].gpu, gp_isolation_name(slices[i].kind),
            slices[i].mig_profile, slices[i].mig_start, slices[i].milli);
    for (size_t i = 0; ns == 0 && i < n; i++)
        put(s, "%s%u", i ? "," : "", gpus[i]);
    free(gpus);
    free(slices);
}

static void put_usage(sink *s, const gp_usage *u)
{
    put(s, " interval=%llu %s %s %lld %s %s start=%lld end=%lld", (unsigned long long)u->interval_id, u->tenant,
        u->gpu_type, (long long)u->milli_gpus, gp_class_name(u->cls), gp_topology_name(u->topology),
        (long long)u->start, (long long)u->end);
}

static void put_decision(sink *s, const gp_engine *e, const gp_decision *d)
{
    put(s, "%s t=%lld job=%llu", gp_decision_kind_name(d->kind), (long long)d->time, (unsigned long long)d->job_id);
    switch (d->kind) {
    case GP_DEC_TRANSITION:
        put(s, " %s->%s", gp_job_state_name(d->from), gp_job_state_name(d->to));
        put_reason(s, d->reason);
        break;
    case GP_DEC_BIND: put_placement(s, e, d->job_id); break;
    case GP_DEC_PREEMPT:
        put(s, " grace=%lld by_job=%llu by=%s guarantee_of=%s lost=%lld", (long long)d->grace_s,
            (unsigned long long)d->by_job, d->by_tenant, d->guarantee_of, (long long)d->work_lost_gpu_s);
        put_reason(s, d->reason);
        break;
    case GP_DEC_STOP:
        put(s, " grace=%lld", (long long)d->grace_s);
        put_reason(s, d->reason);
        break;
    case GP_DEC_DRAINED: put(s, " node=%s", d->node); break;
    case GP_DEC_USAGE_OPEN:
    case GP_DEC_USAGE_CLOSE: put_usage(s, &d->usage); break;
    case GP_DEC_RECONFIGURE: put(s, " node=%s gpu=%d layout=%s", d->node, d->gpu_index, d->mig_layout); break;
    case GP_DEC_BOOKING:
        put(s, " booking=%s from=%s to=%s", d->booking, gp_booking_state_name(d->booking_from),
            gp_booking_state_name(d->booking_to));
        put_reason(s, d->reason);
        break;
    }
    put(s, "\n");
}

size_t gp_decision_text(const gp_engine *e, const gp_decision *d, char *buf, size_t cap)
{
    sink s = {.hash = NULL, .buf = buf, .cap = cap, .len = 0};
    if (buf && cap > 0)
        buf[0] = '\0';
    put_decision(&s, e, d);
    return s.len;
}

gp_err gp_decisions_digest(const gp_engine *e, const gp_decision *ds, size_t n, char hex[65], gp_error *err)
{
    sink s = {0};
    unsigned char out[32];
    if (gnutls_hash_init(&s.hash, GNUTLS_DIG_SHA256) < 0)
        return gp_error_set(err, GP_ERR_NOMEM, "digest", "cannot start SHA-256");
    for (size_t i = 0; i < n; i++)
        put_decision(&s, e, &ds[i]);
    gnutls_hash_deinit(s.hash, out);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", out[i]);
    return GP_OK;
}

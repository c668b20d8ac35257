/* snapshot.c - the whole engine state into a memory buffer, and back.
 *
 * A snapshot lets a restart skip replaying the event log from its start:
 * restore the newest snapshot, replay only the events after it.  It must
 * hold everything that can influence a later decision, so it is not a
 * summary (specs re-submitted would not rebuild claims, reservations, MIG
 * layouts, cool-downs, the fair-share cursor or the learned workload mix):
 * it is the engine's own structs, byte for byte, with every array they
 * point to.  Restored, the engine is the same state machine, and the same
 * events give exactly the same decisions (tests/property proves it for
 * random event sequences).
 *
 * Format (host byte order; the layout word ties it to one build's structs):
 *
 *     "gpsnap\0\0"   8 bytes
 *     version        uint32  GP_ENGINE_SNAPSHOT_VERSION
 *     layout         uint32  FNV-1a over the sizes of the structs below and
 *                            a byte-order probe
 *     body_len       uint64  bytes that follow
 *     body           struct gp_engine as it is, then every array it points
 *                    to, each as (uint64 count, count x element), in the
 *                    fixed order of engine_put below; the jobs' history
 *                    lines alone are packed (histories_put: only the
 *                    lines kept, each only as long as its reason)
 *
 * What is left out: the decisions (a snapshot is taken between events, once
 * they were handled; write refuses pending ones), the per-call scratch
 * (placement's and reclaim's work arrays, made again with room for every
 * GPU) and the lookup maps by name and id, which read rebuilds from the
 * arrays.  Arrays come back exactly as
 * long as they are used (capacity = count); growth is invisible to
 * decisions.
 *
 * A snapshot is a cache of the event log, never the truth: a build reads
 * only snapshots of its own version and layout and refuses any other, as
 * it refuses a short or over-long buffer; the caller then replays the log
 * in full.  Corruption inside a well-formed body is not detected here: the
 * caller seals the buffer with a checksum (eventlog/snapshot.h) and checks
 * the restored engine (gp_engine_check_invariants, the job table).
 * Whoever adds a pointer to the structs of internal.h adds its array here
 * and bumps GP_ENGINE_SNAPSHOT_VERSION when a field changes meaning.
 */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "gpsnap\0\0"
#define HEADER_LEN 24

/* ---- the layout word ---- */

static uint32_t layout_word(void)
{
    const size_t sizes[] = {sizeof(struct gp_engine), sizeof(gp__fleet), sizeof(gp__node), sizeof(gp__gpu),
                            sizeof(gp__block), sizeof(gp__pool), sizeof(gp__tenant), sizeof(gp__user),
                            sizeof(gp__job), sizeof(gp__history), sizeof(gp__claim), sizeof(gp__preemption),
                            sizeof(gp__reservation), sizeof(gp_res), sizeof(gp__booking), sizeof(void *), 0x01020304u};
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int b = 0; b < 8; b++) {
            h ^= (uint32_t)((sizes[i] >> (8 * b)) & 0xff);
            h *= 16777619u;
        }
    return h;
}

/* ---- writing ---- */

typedef struct writer {
    unsigned char *buf;   /* NULL: count only */
    size_t len;
} writer;

/* Without a buffer the writer only counts: a first pass sizes the
 * buffer, so the copy is one allocation (growing it while copying cost
 * seven times the copy at 100,000 jobs). */
static void put(writer *w, const void *p, size_t n)
{
    if (w->buf && n > 0)
        memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static void put_array(writer *w, const void *p, size_t n, size_t elem)
{
    uint64_t count = p ? n : 0;
    put(w, &count, sizeof count);
    put(w, p, (size_t)count * elem);
}

static void fleet_put(writer *w, const gp__fleet *f)
{
    put_array(w, f->nodes, f->n_nodes, sizeof *f->nodes);
    put_array(w, f->gpus, f->n_gpus, sizeof *f->gpus);
    put_array(w, f->blocks, f->n_blocks, sizeof *f->blocks);
    for (size_t b = 0; b < f->n_blocks; b++)
        put_array(w, f->blocks[b].nodes, f->blocks[b].n_nodes, sizeof *f->blocks[b].nodes);
    put_array(w, f->zones, f->n_zones, sizeof *f->zones);
    put_array(w, f->pools, f->n_pools, sizeof *f->pools);
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++) {
        put_array(w, f->mps_nodes[t], f->n_mps_nodes[t], sizeof *f->mps_nodes[t]);
        put_array(w, f->type_nodes[t], f->n_type_nodes[t], sizeof *f->type_nodes[t]);
    }
}

static void tenants_put(writer *w, const gp_engine *e)
{
    put_array(w, e->tenants, e->n_tenants, sizeof *e->tenants);
    for (size_t i = 0; i < e->n_tenants; i++) {
        const gp__tenant *t = &e->tenants[i];
        put_array(w, t->children, t->n_children, sizeof *t->children);
        put_array(w, t->pending, t->n_pending, sizeof *t->pending);
    }
    put_array(w, e->roots, e->n_roots, sizeof *e->roots);
    put_array(w, e->users, e->n_users, sizeof *e->users);
}

/* Each job's kept history lines, oldest first, only as long as their
 * reasons: (uint8 count, then per line int64 time, from, to, uint16
 * length, the reason's bytes).  The ring of GP__HISTORY fixed 192-byte
 * reasons was two thirds of a snapshot; restored, the same lines sit at
 * the same ring positions (read below), so gp_engine_why and
 * gp_engine_job_history answer as before.  A free slot has none. */
static size_t history_kept(const gp__job *j)
{
    return !j->used ? 0 : j->n_history < GP__HISTORY ? (size_t)j->n_history : GP__HISTORY;
}

static void histories_put(writer *w, const gp_engine *e)
{
    for (size_t i = 0; i < e->n_jobs; i++) {
        const gp__job *j = &e->jobs[i];
        uint8_t kept = (uint8_t)history_kept(j);
        put(w, &kept, sizeof kept);
        for (size_t k = (size_t)j->n_history - kept; k < (size_t)j->n_history; k++) {
            const gp_history_entry *h = &e->histories[i].entry[k % GP__HISTORY];
            const char *end = memchr(h->reason, '\0', sizeof h->reason);
            uint16_t n = (uint16_t)(end ? end - h->reason : 0);
            put(w, &h->time, sizeof h->time);
            put(w, &h->from, sizeof h->from);
            put(w, &h->to, sizeof h->to);
            put(w, &n, sizeof n);
            put(w, h->reason, n);
        }
    }
}

static void jobs_put(writer *w, const gp_engine *e)
{
    put_array(w, e->jobs, e->n_jobs, sizeof *e->jobs);
    for (size_t i = 0; i < e->n_jobs; i++) {
        const gp__job *j = &e->jobs[i];
        put_array(w, j->placed, gp__placed_count(j), sizeof *j->placed);
        put_array(w, j->slot, (size_t)j->replicas, sizeof *j->slot);
        put_array(w, j->claimed, j->n_claimed, sizeof *j->claimed);
        put_array(w, j->victims, j->n_victims, sizeof *j->victims);
    }
    histories_put(w, e);
    put_array(w, e->free_slots, e->n_free_slots, sizeof *e->free_slots);
    put_array(w, e->running, e->n_running, sizeof *e->running);
}

static void engine_put(writer *w, const gp_engine *e)
{
    put(w, e, sizeof *e);
    fleet_put(w, &e->fleet);
    tenants_put(w, e);
    jobs_put(w, e);
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++)
        put_array(w, e->reservation[t].nodes, e->reservation[t].n_nodes, sizeof *e->reservation[t].nodes);
    put_array(w, e->recent, e->n_recent, sizeof *e->recent);
    put_array(w, e->reclaiming, e->cap_reclaiming, sizeof *e->reclaiming);
    put_array(w, e->bookings, e->n_bookings, sizeof *e->bookings);
    for (size_t i = 0; i < e->n_bookings; i++)
        put_array(w, e->bookings[i].held, (size_t)e->bookings[i].n_held, sizeof *e->bookings[i].held);
}

gp_err gp_engine_snapshot_write(const gp_engine *e, unsigned char **buf, size_t *len, gp_error *err)
{
    *buf = NULL;
    *len = 0;
    if (e->n_decisions > 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "decisions",
                            "%zu decisions are pending: take a snapshot once they were handled", e->n_decisions);
    writer w = {0};
    engine_put(&w, e);
    uint32_t version = GP_ENGINE_SNAPSHOT_VERSION, layout = layout_word();
    uint64_t body_len = w.len;
    w = (writer){.buf = malloc(HEADER_LEN + body_len)};
    if (!w.buf)
        return gp_error_set(err, GP_ERR_NOMEM, "snapshot", "out of memory");
    put(&w, MAGIC, 8);
    put(&w, &version, sizeof version);
    put(&w, &layout, sizeof layout);
    put(&w, &body_len, sizeof body_len);
    engine_put(&w, e);
    *buf = w.buf;
    *len = w.len;
    return GP_OK;
}

/* ---- reading ---- */

typedef struct reader {
    const unsigned char *buf;
    size_t len, pos;
    bool failed;
} reader;

static bool get(reader *r, void *p, size_t n)
{
    if (r->failed || n > r->len - r->pos) {
        r->failed = true;
        return false;
    }
    if (n > 0)
        memcpy(p, r->buf + r->pos, n);
    r->pos += n;
    return true;
}

/* An array into a fresh allocation of exactly its count (NULL when empty);
 * *n and *cap (either may be NULL) get the count.  False when short or out
 * of memory (r->failed says which). */
static bool get_array(reader *r, void **p, size_t *n, size_t *cap, size_t elem, bool *nomem)
{
    uint64_t count;
    if (!get(r, &count, sizeof count) || count > (r->len - r->pos) / elem) {
        r->failed = true;
        return false;
    }
    void *a = NULL;
    if (count > 0 && !(a = malloc((size_t)count * elem))) {
        *nomem = true;
        r->failed = true;
        return false;
    }
    get(r, a, (size_t)count * elem);
    *p = a;
    if (n)
        *n = (size_t)count;
    if (cap)
        *cap = (size_t)count;
    return true;
}

/* The pointers and counts of a struct copied from the buffer mean nothing
 * here: each is cleared before its array is read, so that the engine can
 * be freed at any point of a failed read. */
static void fleet_detach(gp__fleet *f)
{
    f->nodes = NULL;
    f->gpus = NULL;
    f->blocks = NULL;
    f->zones = NULL;
    f->pools = NULL;
    f->touched = NULL; /* derived (fleet.c): made again below, all nodes untouched */
    f->cap_touched = 0;
    f->brief = NULL; /* derived (fleet.c): made again below from the nodes */
    f->cap_brief = 0;
    f->gpu_node = NULL; /* derived (fleet.c): made again below from the GPUs */
    f->cap_gpu_node = 0;
    f->n_nodes = f->cap_nodes = f->n_gpus = f->cap_gpus = f->n_blocks = f->cap_blocks = 0;
    f->n_zones = f->cap_zones = f->n_pools = f->cap_pools = 0;
    memset(&f->node_by_name, 0, sizeof f->node_by_name);
    memset(&f->block_by_name, 0, sizeof f->block_by_name);
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++) {
        f->mps_nodes[t] = f->type_nodes[t] = NULL;
        f->n_mps_nodes[t] = f->cap_mps_nodes[t] = f->n_type_nodes[t] = f->cap_type_nodes[t] = 0;
    }
}

static void engine_detach(gp_engine *e)
{
    fleet_detach(&e->fleet);
    e->tenants = NULL;
    e->roots = NULL;
    e->users = NULL;
    e->jobs = NULL;
    e->histories = NULL;
    e->free_slots = NULL;
    e->running = NULL;
    e->decisions = NULL;
    e->recent = NULL;
    e->reclaim_buf = NULL;
    e->replay_front = NULL;
    e->cand_nodes = NULL;
    e->barred = NULL; /* derived (dedicated.c): empty between events */
    e->n_barred = e->cap_barred = 0;
    e->ded_nodes = NULL; /* derived (dedicated.c): made again at the next pass's start */
    e->n_ded_nodes = e->cap_ded_nodes = 0;
    e->owned_nodes = NULL; /* derived (dedicated.c): made again at the next pass's start */
    e->n_owned_nodes = e->cap_owned_nodes = 0;
    e->bookings = NULL;
    e->n_bookings = e->cap_bookings = 0;
    e->book_barred = NULL; /* derived (booking.c): empty between events */
    e->n_book_barred = e->cap_book_barred = 0;
    e->pool = NULL;
    e->ent = NULL;
    e->reclaiming = NULL;
    e->entitlement = NULL; /* derived (tenants.c): walked again once the tenants are read */
    e->cap_entitlement = 0;
    e->entitlements_known = false;
    e->n_tenants = e->cap_tenants = e->n_roots = e->cap_roots = e->n_users = e->cap_users = 0;
    e->n_jobs = e->cap_jobs = e->cap_histories = e->n_free_slots = e->cap_free_slots = 0;
    e->n_running = e->cap_running = e->n_decisions = e->cap_decisions = 0;
    e->running_due = NULL;
    e->cap_running_due = 0;
    e->n_recent = e->cap_recent = e->cap_reclaim_buf = e->cap_reclaiming = e->cap_replay_front = e->cap_cand_nodes = 0;
    memset(&e->tenant_by_path, 0, sizeof e->tenant_by_path);
    memset(&e->user_by_key, 0, sizeof e->user_by_key);
    memset(&e->job_by_id, 0, sizeof e->job_by_id);
    memset(&e->scratch, 0, sizeof e->scratch);
    e->n_nofit = e->nofit_next = 0; /* derived (reclaim.c): remembered failures start forgotten */
    e->cand_memo.valid = false;     /* derived (reclaim.c): reclaim_buf is not restored */
    e->n_pool = e->cap_pool = e->pool_pass = e->cap_ent = e->ent_pass = 0; /* derived (reclaim.c): made again by the next search */
    e->fair_leaf = GP__NONE;        /* derived (fairshare.c): the next pick descends */
    memset(e->share_scores, 0, sizeof e->share_scores); /* derived (fragmentation.c): scored again when looked at */
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++) {
        e->reservation[t].nodes = NULL;
        e->reservation[t].n_nodes = e->reservation[t].cap_nodes = 0;
        e->type_running[t] = NULL; /* derived (jobs.c): rebuilt from running, as running_due */
        e->n_type_running[t] = e->cap_type_running[t] = 0;
    }
}

static bool fleet_get(reader *r, gp__fleet *f, bool *nomem)
{
    if (!get_array(r, (void **)&f->nodes, &f->n_nodes, &f->cap_nodes, sizeof *f->nodes, nomem) ||
        !get_array(r, (void **)&f->gpus, &f->n_gpus, &f->cap_gpus, sizeof *f->gpus, nomem) ||
        !get_array(r, (void **)&f->blocks, &f->n_blocks, &f->cap_blocks, sizeof *f->blocks, nomem))
        return false;
    for (size_t b = 0; b < f->n_blocks; b++) {
        f->blocks[b].nodes = NULL;
        f->blocks[b].n_nodes = f->blocks[b].cap_nodes = 0;
    }
    for (size_t b = 0; b < f->n_blocks; b++)
        if (!get_array(r, (void **)&f->blocks[b].nodes, &f->blocks[b].n_nodes, &f->blocks[b].cap_nodes,
                       sizeof *f->blocks[b].nodes, nomem))
            return false;
    if (!get_array(r, (void **)&f->zones, &f->n_zones, &f->cap_zones, sizeof *f->zones, nomem) ||
        !get_array(r, (void **)&f->pools, &f->n_pools, &f->cap_pools, sizeof *f->pools, nomem))
        return false;
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++)
        if (!get_array(r, (void **)&f->mps_nodes[t], &f->n_mps_nodes[t], &f->cap_mps_nodes[t],
                       sizeof *f->mps_nodes[t], nomem) ||
            !get_array(r, (void **)&f->type_nodes[t], &f->n_type_nodes[t], &f->cap_type_nodes[t],
                       sizeof *f->type_nodes[t], nomem))
            return false;
    if (!gp__grow((void **)&f->touched, &f->cap_touched, f->n_nodes ? f->n_nodes : 1, sizeof *f->touched) ||
        !gp__grow((void **)&f->brief, &f->cap_brief, f->n_nodes ? f->n_nodes : 1, sizeof *f->brief) ||
        !gp__grow((void **)&f->gpu_node, &f->cap_gpu_node, f->n_gpus ? f->n_gpus : 1, sizeof *f->gpu_node))
        return !(*nomem = true);
    for (size_t n = 0; n < f->n_nodes; n++)
        f->brief[n] = gp__node_brief_of(&f->nodes[n]);
    for (size_t g = 0; g < f->n_gpus; g++)
        f->gpu_node[g] = f->gpus[g].node;
    for (size_t n = 0; n < f->n_nodes; n++)
        if (!gp_strmap_put(&f->node_by_name, f->nodes[n].name, (uint32_t)n))
            return !(*nomem = true);
    for (size_t b = 0; b < f->n_blocks; b++)
        if (!gp_strmap_put(&f->block_by_name, f->blocks[b].name, (uint32_t)b))
            return !(*nomem = true);
    return true;
}

static bool tenants_get(reader *r, gp_engine *e, bool *nomem)
{
    if (!get_array(r, (void **)&e->tenants, &e->n_tenants, &e->cap_tenants, sizeof *e->tenants, nomem))
        return false;
    for (size_t i = 0; i < e->n_tenants; i++) {
        gp__tenant *t = &e->tenants[i];
        t->children = t->pending = NULL;
        t->n_children = t->cap_children = t->n_pending = t->cap_pending = t->pending_front = 0;
        t->room_stamp = 0; /* derived (admission.c): worked out again when first asked */
    }
    for (size_t i = 0; i < e->n_tenants; i++) {
        gp__tenant *t = &e->tenants[i];
        if (!get_array(r, (void **)&t->children, &t->n_children, &t->cap_children, sizeof *t->children, nomem) ||
            !get_array(r, (void **)&t->pending, &t->n_pending, &t->cap_pending, sizeof *t->pending, nomem))
            return false;
        if (!t->removed && !gp_strmap_put(&e->tenant_by_path, t->path, (uint32_t)i))
            return !(*nomem = true);
    }
    if (!get_array(r, (void **)&e->roots, &e->n_roots, &e->cap_roots, sizeof *e->roots, nomem) ||
        !get_array(r, (void **)&e->users, &e->n_users, &e->cap_users, sizeof *e->users, nomem))
        return false;
    gp__entitlements_update(e);
    for (size_t u = 0; u < e->n_users; u++) {
        char key[GP_PATH_MAX + GP_NAME_MAX + 2];
        snprintf(key, sizeof key, "%u:%s", e->users[u].tenant, e->users[u].name); /* as jobs.c's user_get */
        if (!gp_strmap_put(&e->user_by_key, key, (uint32_t)u))
            return !(*nomem = true);
    }
    return true;
}

/* histories_put's lines back into their ring positions (zeroed rings,
 * one per job slot). */
static bool histories_get(reader *r, gp_engine *e, bool *nomem)
{
    if (e->n_jobs > 0 && !(e->histories = calloc(e->n_jobs, sizeof *e->histories)))
        return !(*nomem = true);
    e->cap_histories = e->n_jobs;
    for (size_t i = 0; i < e->n_jobs; i++) {
        const gp__job *j = &e->jobs[i];
        uint8_t kept;
        if (!get(r, &kept, sizeof kept) || kept != history_kept(j))
            return !(r->failed = true);
        for (size_t k = (size_t)j->n_history - kept; k < (size_t)j->n_history; k++) {
            gp_history_entry *h = &e->histories[i].entry[k % GP__HISTORY];
            uint16_t n;
            if (!get(r, &h->time, sizeof h->time) || !get(r, &h->from, sizeof h->from) ||
                !get(r, &h->to, sizeof h->to) || !get(r, &n, sizeof n) || n >= sizeof h->reason ||
                !get(r, h->reason, n))
                return !(r->failed = true);
        }
    }
    return true;
}

static bool jobs_get(reader *r, gp_engine *e, bool *nomem)
{
    if (!get_array(r, (void **)&e->jobs, &e->n_jobs, &e->cap_jobs, sizeof *e->jobs, nomem))
        return false;
    for (size_t i = 0; i < e->n_jobs; i++) {
        gp__job *j = &e->jobs[i];
        j->placed = NULL;
        j->slot = NULL;
        j->claimed = NULL;
        j->victims = NULL;
        j->n_claimed = j->n_claimed_cap = j->n_victims = j->cap_victims = 0;
    }
    for (size_t i = 0; i < e->n_jobs; i++) {
        gp__job *j = &e->jobs[i];
        if (!get_array(r, (void **)&j->placed, NULL, NULL, sizeof *j->placed, nomem) ||
            !get_array(r, (void **)&j->slot, NULL, NULL, sizeof *j->slot, nomem) ||
            !get_array(r, (void **)&j->claimed, &j->n_claimed, &j->n_claimed_cap, sizeof *j->claimed, nomem) ||
            !get_array(r, (void **)&j->victims, &j->n_victims, &j->cap_victims, sizeof *j->victims, nomem))
            return false;
        if (j->used && !gp_u64map_put(&e->job_by_id, j->id, (uint32_t)i))
            return !(*nomem = true);
        j->possible_shape = 0; /* derived (engine.c, possible_after_miss): not known after a restore */
    }
    if (!histories_get(r, e, nomem) ||
        !get_array(r, (void **)&e->free_slots, &e->n_free_slots, &e->cap_free_slots, sizeof *e->free_slots, nomem) ||
        !get_array(r, (void **)&e->running, &e->n_running, &e->cap_running, sizeof *e->running, nomem))
        return false;
    if (!gp__running_derived_rebuild(e))
        return !(*nomem = true);
    return true;
}

static bool bookings_get(reader *r, gp_engine *e, bool *nomem)
{
    if (!get_array(r, (void **)&e->bookings, &e->n_bookings, &e->cap_bookings, sizeof *e->bookings, nomem))
        return false;
    for (size_t i = 0; i < e->n_bookings; i++)
        e->bookings[i].held = NULL; /* read below; a failure part way frees only those read */
    for (size_t i = 0; i < e->n_bookings; i++) {
        gp__booking *b = &e->bookings[i];
        size_t n = 0, cap = 0;
        if (!get_array(r, (void **)&b->held, &n, &cap, sizeof *b->held, nomem) || n != (size_t)b->n_held)
            return false;
        for (size_t k = 0; k < n; k++)
            if (b->held[k] >= e->fleet.n_gpus)
                return false;
    }
    return true;
}

static bool engine_get(reader *r, gp_engine *e, bool *nomem)
{
    if (!get(r, e, sizeof *e))
        return false;
    engine_detach(e);
    if (!fleet_get(r, &e->fleet, nomem) || !tenants_get(r, e, nomem) || !jobs_get(r, e, nomem))
        return false;
    e->fleet.shape_count = 1; /* derived (engine.c): with every job's possible_shape 0, asked again */
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++)
        if (!get_array(r, (void **)&e->reservation[t].nodes, &e->reservation[t].n_nodes,
                       &e->reservation[t].cap_nodes, sizeof *e->reservation[t].nodes, nomem))
            return false;
    if (!get_array(r, (void **)&e->recent, &e->n_recent, &e->cap_recent, sizeof *e->recent, nomem) ||
        !get_array(r, (void **)&e->reclaiming, NULL, &e->cap_reclaiming, sizeof *e->reclaiming, nomem) ||
        !bookings_get(r, e, nomem))
        return false;
    if (!gp__scratch_reserve(e, e->fleet.n_gpus)) /* placement's room for every GPU, as node_add keeps it */
        return !(*nomem = true);
    return true;
}

/* The settings a snapshot was taken under must be the caller's (the log
 * changes only the clock resolution, an event). */
static bool same_config(const gp_engine_config *a, const gp_engine_config *b)
{
    return a->preempt_cooldown_s == b->preempt_cooldown_s && a->max_preemptions == b->max_preemptions &&
           a->fair_share_reclaim == b->fair_share_reclaim &&
           a->max_reclaim_searches == b->max_reclaim_searches &&
           a->overdue_grace_s == b->overdue_grace_s && a->mig_reconfigure_interval_s == b->mig_reconfigure_interval_s;
}

static gp_err header_check(const unsigned char *buf, size_t len, gp_error *err)
{
    uint32_t version, layout;
    uint64_t body_len;
    if (len < HEADER_LEN || memcmp(buf, MAGIC, 8) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "snapshot", "not an engine snapshot (%zu bytes)", len);
    memcpy(&version, buf + 8, sizeof version);
    memcpy(&layout, buf + 12, sizeof layout);
    memcpy(&body_len, buf + 16, sizeof body_len);
    if (version != GP_ENGINE_SNAPSHOT_VERSION)
        return gp_error_set(err, GP_ERR_INVALID, "version", "snapshot format version %u, this build reads %u",
                            version, GP_ENGINE_SNAPSHOT_VERSION);
    if (layout != layout_word())
        return gp_error_set(err, GP_ERR_INVALID, "layout",
                            "snapshot written by a build with another engine layout (%08x, this build %08x)", layout,
                            layout_word());
    if (body_len != len - HEADER_LEN)
        return gp_error_set(err, GP_ERR_INVALID, "snapshot", "snapshot is %s: %zu body bytes, header says %llu",
                            body_len > len - HEADER_LEN ? "truncated" : "too long", len - HEADER_LEN,
                            (unsigned long long)body_len);
    return GP_OK;
}

gp_err gp_engine_snapshot_read(const unsigned char *buf, size_t len, const gp_engine_config *cfg, gp_engine **out,
                               gp_error *err)
{
    *out = NULL;
    gp_err rc = header_check(buf, len, err);
    if (rc)
        return rc;
    gp_engine *e = calloc(1, sizeof *e);
    if (!e)
        return gp_error_set(err, GP_ERR_NOMEM, "snapshot", "out of memory");
    reader r = {.buf = buf, .len = len, .pos = HEADER_LEN};
    bool nomem = false;
    bool ok = engine_get(&r, e, &nomem);
    gp_engine_config want = gp__config_resolve(cfg);
    if (!ok || r.pos != len || !same_config(&e->cfg, &want)) {
        gp_engine_free(e);
        if (nomem)
            return gp_error_set(err, GP_ERR_NOMEM, "snapshot", "out of memory");
        if (ok && r.pos == len)
            return gp_error_set(err, GP_ERR_CONFLICT, "config",
                                "snapshot taken under other engine settings than this start's");
        return gp_error_set(err, GP_ERR_INVALID, "snapshot", "snapshot body is malformed at byte %zu of %zu", r.pos,
                            len);
    }
    *out = e;
    return GP_OK;
}

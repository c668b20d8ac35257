/* prop_engine_model.c - the engine property test's books and checks (see
 * prop_engine_model.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine.h"

#include "support/prop_engine_model.h"

const char *const prop_type_names[PROP_MAX_TYPES] = {"H100", "A100", "L40S"};

/* ---- deterministic PRNG (splitmix64) ---------------------------------- */


static uint64_t rng_next(prop_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in lo..hi inclusive. */
int pe_rng_int(prop_rng *r, int lo, int hi)
{
    if (hi <= lo)
        return lo;
    return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

bool pe_rng_pct(prop_rng *r, int percent)
{
    return pe_rng_int(r, 0, 99) < percent;
}

/* ---- the test's own model ---------------------------------------------- */








/* ---- failure and logging ------------------------------------------------ */

void pe_sim_fail(sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

void pe_sim_fail(sim *s, const char *fmt, ...)
{
    int n = snprintf(s->fail_text, sizeof s->fail_text, "seed=0x%" PRIx64 " event=%d t=%" PRId64 ": ", s->seed,
                     s->event_index, s->now);
    if (n < 0)
        n = 0;
    if ((size_t)n < sizeof s->fail_text) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->fail_text + n, sizeof s->fail_text - (size_t)n, fmt, ap);
        va_end(ap);
    }
    longjmp(s->fail_jmp, 1);
}

void pe_sim_log(sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void pe_sim_log(sim *s, const char *fmt, ...)
{
    char *line = s->log[s->log_next % PROP_LOG_LINES];
    s->log_next++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, PROP_LOG_LEN, fmt, ap);
    va_end(ap);
    if (s->verbose)
        fprintf(stderr, "%s\n", line);
}

void pe_sim_print_log(const sim *s)
{
    int first = s->log_next > PROP_LOG_LINES ? s->log_next - PROP_LOG_LINES : 0;
    fprintf(stderr, "  last events and decisions (seed 0x%" PRIx64 "):\n", s->seed);
    for (int i = first; i < s->log_next; i++)
        fprintf(stderr, "    %s\n", s->log[i % PROP_LOG_LINES]);
}

static void hash_bytes(sim *s, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        s->hash ^= b[i];
        s->hash *= 0x100000001b3ULL;
    }
}

void pe_hash_i64(sim *s, int64_t v)
{
    hash_bytes(s, &v, sizeof v);
}

static void hash_str(sim *s, const char *str)
{
    hash_bytes(s, str, strlen(str) + 1);
}

/* ---- small helpers ------------------------------------------------------ */

static sim_job *job_by_id(sim *s, uint64_t id)
{
    if (id == 0 || id > (uint64_t)s->n_jobs)
        return NULL;
    return &s->jobs[id - 1];
}

static bool state_final(gp_job_state st)
{
    return st == GP_JOB_SUCCEEDED || st == GP_JOB_FAILED || st == GP_JOB_CANCELLED;
}

static bool state_holds(gp_job_state st)
{
    return st == GP_JOB_ADMITTED || st == GP_JOB_RUNNING || st == GP_JOB_PREEMPTING;
}

static int64_t job_demand(const sim_job *j)
{
    if (j->shared)
        return (int64_t)j->spec.replicas * j->slice_milli;
    return (int64_t)j->spec.replicas * j->spec.gpus * 1000;
}

static gp_sharing mode_of(gp_isolation iso)
{
    return iso == GP_ISO_MIG ? GP_SHARING_MIG
           : iso == GP_ISO_MPS ? GP_SHARING_MPS
           : iso == GP_ISO_TIMESLICE ? GP_SHARING_TIMESLICE
                                     : GP_SHARING_EXCLUSIVE;
}

int pe_org_of(const sim *s, int t)
{
    while (s->tenants[t].parent >= 0)
        t = s->tenants[t].parent;
    return t;
}

bool pe_untrusted(const sim *s, int t)
{
    for (; t >= 0; t = s->tenants[t].parent)
        if (s->tenants[t].spec.trust == GP_TRUST_UNTRUSTED)
            return true;
    return false;
}

/* a + b <= c without overflow (all >= 0, c may be GP_UNLIMITED). */
static bool fits_under(int64_t a, int64_t b, int64_t c)
{
    if (c == GP_UNLIMITED)
        return true;
    if (a > c)
        return false;
    return b <= c - a;
}

void pe_quota_clear(gp_quota *q, bool set)
{
    memset(q, 0, sizeof *q);
    q->set = set;
    q->cpu_millis = GP_UNLIMITED;
    q->mem_mib = GP_UNLIMITED;
}

void pe_quota_put(gp_quota *q, const char *type, int64_t milli)
{
    for (int i = 0; i < q->n_gpu; i++) {
        if (strcmp(q->gpu[i].type, type) == 0) {
            q->gpu[i].milli = milli;
            return;
        }
    }
    if (q->n_gpu < GP_MAX_GPU_TYPES) {
        snprintf(q->gpu[q->n_gpu].type, sizeof q->gpu[q->n_gpu].type, "%s", type);
        q->gpu[q->n_gpu].milli = milli;
        q->n_gpu++;
    }
}

/* Listed amount, or -1 when the type is not listed. */
int64_t pe_quota_get(const gp_quota *q, const char *type)
{
    for (int i = 0; i < q->n_gpu; i++)
        if (strcmp(q->gpu[i].type, type) == 0)
            return q->gpu[i].milli;
    return -1;
}

bool pe_tenant_info_same(const gp_tenant_info *a, const gp_tenant_info *b)
{
    return a->has_guarantee == b->has_guarantee && memcmp(&a->guarantee, &b->guarantee, sizeof a->guarantee) == 0 &&
           memcmp(&a->limit, &b->limit, sizeof a->limit) == 0 &&
           memcmp(&a->user_limit, &b->user_limit, sizeof a->user_limit) == 0 &&
           memcmp(&a->usage, &b->usage, sizeof a->usage) == 0 &&
           memcmp(&a->guaranteed_usage, &b->guaranteed_usage, sizeof a->guaranteed_usage) == 0 &&
           a->weight == b->weight && a->lend == b->lend && a->untrusted == b->untrusted &&
           a->pending_jobs == b->pending_jobs && a->running_jobs == b->running_jobs && a->parent == b->parent &&
           strcmp(a->path, b->path) == 0;
}

void pe_read_tenants(sim *s, gp_tenant_info *out)
{
    for (int t = 0; t < s->n_tenants; t++) {
        if (!gp_engine_tenant_get(s->e, s->tenants[t].engine_index, &out[t]))
            pe_sim_fail(s, "gp_engine_tenant_get(%s) failed", s->tenants[t].path);
    }
}

/* ---- interval id set ---------------------------------------------------- */

static bool interval_seen_insert(sim *s, uint64_t id)
{
    if (s->interval_count * 2 + 2 > s->interval_cap) {
        size_t ncap = s->interval_cap ? s->interval_cap * 2 : 1024;
        uint64_t *n = calloc(ncap, sizeof *n);
        if (n == NULL)
            pe_sim_fail(s, "out of memory");
        for (size_t i = 0; i < s->interval_cap; i++) {
            uint64_t v = s->interval_ids[i];
            if (v == 0)
                continue;
            size_t h = (size_t)(v * 0x9e3779b97f4a7c15ULL) & (ncap - 1);
            while (n[h] != 0)
                h = (h + 1) & (ncap - 1);
            n[h] = v;
        }
        free(s->interval_ids);
        s->interval_ids = n;
        s->interval_cap = ncap;
    }
    uint64_t key = id + 1; /* 0 marks an empty slot */
    size_t h = (size_t)(key * 0x9e3779b97f4a7c15ULL) & (s->interval_cap - 1);
    while (s->interval_ids[h] != 0) {
        if (s->interval_ids[h] == key)
            return false;
        h = (h + 1) & (s->interval_cap - 1);
    }
    s->interval_ids[h] = key;
    s->interval_count++;
    return true;
}

/* ---- decisions ---------------------------------------------------------- */

static void release_job(sim *s, sim_job *j)
{
    for (int i = 0; i < j->n_gpus; i++)
        if (s->owner[j->gpus[i]] == j->id)
            s->owner[j->gpus[i]] = 0;
    s->alloc_milli -= job_demand(j);
    j->bound = false;
    j->n_gpus = 0;
    j->bound_type = -1;
    j->deadline = -1;
    j->preempted = false;
    j->trust_preempted = false;
    j->preempted_by = 0;
    j->stopping = false;
    j->cancel_asked = false;
}

/* P2: the placement the engine just bound, checked against the fleet as it is
 * right after the event. */
static void check_placement(sim *s, sim_job *j)
{
    int per = j->spec.gpus;
    int want = j->spec.replicas * per;
    if (j->n_gpus != want)
        pe_sim_fail(s, "P2: job %" PRIu64 " bound to %d GPUs, wants %d x %d", j->id, j->n_gpus, j->spec.replicas, per);
    int type = -1, node0 = -1, domain0 = -1;
    for (int i = 0; i < j->n_gpus; i++) {
        uint32_t g = j->gpus[i];
        if (g >= (uint32_t)s->n_gpus)
            pe_sim_fail(s, "P2: job %" PRIu64 " bound to GPU %u, fleet has %d", j->id, g, s->n_gpus);
        for (int k = 0; k < i; k++)
            if (j->gpus[k] == g)
                pe_sim_fail(s, "P2: job %" PRIu64 " holds GPU %u twice", j->id, g);
        gp_gpu_info gi;
        if (!gp_engine_gpu_get(s->e, g, &gi))
            pe_sim_fail(s, "gp_engine_gpu_get(%u) failed", g);
        const sim_node *n = &s->nodes[s->gpu_node[g]];
        if (!gi.healthy)
            pe_sim_fail(s, "P2: job %" PRIu64 " bound to unhealthy GPU %u", j->id, g);
        gp_node_info ni;
        if (!gp_engine_node_get(s->e, (uint32_t)s->gpu_node[g], &ni))
            pe_sim_fail(s, "gp_engine_node_get failed");
        if (!ni.up || ni.draining)
            pe_sim_fail(s, "P2: job %" PRIu64 " bound to GPU %u on node %s (up=%d draining=%d)", j->id, g, n->name,
                     ni.up, ni.draining);
        if (type < 0)
            type = gi.type;
        if (gi.type != type)
            pe_sim_fail(s, "P2: job %" PRIu64 " bound to GPUs of two types", j->id);
        if (!(j->accepts & (1u << gi.type)))
            pe_sim_fail(s, "P2: job %" PRIu64 " bound to GPU %u of type %s it does not accept", j->id, g,
                     gp_engine_gpu_type_name(s->e, gi.type));
        int replica_first = (i / per) * per;
        if (s->gpu_node[j->gpus[replica_first]] != s->gpu_node[g])
            pe_sim_fail(s, "P2: job %" PRIu64 " replica %d spans nodes %s and %s", j->id, i / per,
                     s->nodes[s->gpu_node[j->gpus[replica_first]]].name, n->name);
        if (i == 0) {
            node0 = s->gpu_node[g];
            domain0 = gi.nvlink_domain;
        }
        if (j->spec.topology == GP_TOPO_BLOCK && strcmp(s->nodes[node0].block, n->block) != 0)
            pe_sim_fail(s, "P2: BLOCK job %" PRIu64 " spans blocks %s and %s", j->id, s->nodes[node0].block, n->block);
        if (j->spec.topology == GP_TOPO_NVLINK && (s->gpu_node[g] != node0 || gi.nvlink_domain != domain0))
            pe_sim_fail(s, "P2: NVLINK job %" PRIu64 " spans NVLink domains (%s/%d and %s/%d)", j->id,
                     s->nodes[node0].name, domain0, n->name, gi.nvlink_domain);
    }
    j->bound_type = type;
}

/* P2 for a shared job: one slice per replica, each on a healthy GPU of the
 * job's mode on an up, undrained node, all of one accepted type. */
static void check_placement_shared(sim *s, sim_job *j)
{
    if (j->n_gpus != j->spec.replicas)
        pe_sim_fail(s, "P2: shared job %" PRIu64 " bound to %d GPUs for %d replicas", j->id, j->n_gpus,
                    j->spec.replicas);
    int type = -1;
    for (int i = 0; i < j->n_gpus; i++) {
        uint32_t g = j->gpus[i];
        gp_gpu_info gi;
        gp_node_info ni;
        if (g >= (uint32_t)s->n_gpus || !gp_engine_gpu_get(s->e, g, &gi) ||
            !gp_engine_node_get(s->e, (uint32_t)s->gpu_node[g], &ni))
            pe_sim_fail(s, "P2: shared job %" PRIu64 " bound to unknown GPU %u", j->id, g);
        if (!gi.healthy || !ni.up || ni.draining)
            pe_sim_fail(s, "P2: shared job %" PRIu64 " bound to GPU %u (healthy=%d up=%d draining=%d)", j->id, g,
                        gi.healthy, ni.up, ni.draining);
        if (gi.sharing != mode_of(j->spec.isolation))
            pe_sim_fail(s, "P2: %s job %" PRIu64 " bound to GPU %u in another mode", gp_isolation_name(j->spec.isolation),
                        j->id, g);
        if (type < 0)
            type = gi.type;
        if (gi.type != type || !(j->accepts & (1u << gi.type)))
            pe_sim_fail(s, "P2: shared job %" PRIu64 " bound to GPU %u of type %s (two types or not accepted)", j->id,
                        g, gp_engine_gpu_type_name(s->e, gi.type));
    }
    j->bound_type = type;
}

/* Is job `id` released by a decision after index i of this batch? */
static bool released_later(const gp_decision *d, size_t n, size_t i, uint64_t id)
{
    for (size_t k = i + 1; k < n; k++)
        if (d[k].kind == GP_DEC_TRANSITION && d[k].job_id == id &&
            (d[k].to == GP_JOB_PENDING || state_final(d[k].to)))
            return true;
    return false;
}

static void on_bind(sim *s, sim_job *j, const gp_decision *d, size_t n, size_t i)
{
    if (j->bound)
        pe_sim_fail(s, "BIND of job %" PRIu64 " which is already bound", j->id);
    if (j->state != GP_JOB_PENDING && j->state != GP_JOB_ADMITTED && j->state != GP_JOB_RUNNING)
        pe_sim_fail(s, "BIND of job %" PRIu64 " in state %s", j->id, gp_job_state_name(j->state));
    size_t got = gp_engine_job_gpus(s->e, j->id, j->gpus, PROP_MAX_JOB_GPUS);
    s->counters->binds++;
    j->bound = true;
    j->bind_time = s->now;
    j->deadline = -1;
    j->preempted = j->stopping = j->withdrawn = false;
    s->alloc_milli += job_demand(j);
    if (got == 0 && released_later(d, n, i, j->id)) {
        j->n_gpus = 0; /* bound and released in one batch: nothing to hold */
        return;
    }
    j->n_gpus = (int)got;
    if (j->shared) {
        s->counters->shared_binds++;
        check_placement_shared(s, j);
        return;
    }
    check_placement(s, j);
    for (int k = 0; k < j->n_gpus; k++) {
        uint32_t g = j->gpus[k];
        if (s->owner[g] != 0 && s->owner[g] != j->id) {
            /* The holder may be released later in this batch (a grace-0
             * victim); decided once the whole batch is applied. */
            if (s->n_conflicts >= PROP_MAX_CONFLICTS)
                pe_sim_fail(s, "too many GPU conflicts in one batch");
            s->conflicts[s->n_conflicts++] = (gpu_conflict){g, j->id, s->owner[g]};
        }
        s->owner[g] = j->id;
    }
}

static void on_transition(sim *s, sim_job *j, const gp_decision *d)
{
    if (d->from != j->state)
        pe_sim_fail(s, "TRANSITION of job %" PRIu64 " from %s, but it is %s", j->id, gp_job_state_name(d->from),
                 gp_job_state_name(j->state));
    if (state_final(j->state))
        pe_sim_fail(s, "TRANSITION of job %" PRIu64 " out of final state %s", j->id, gp_job_state_name(j->state));
    j->state = d->to;
    if ((d->to == GP_JOB_PENDING || state_final(d->to)) && j->bound)
        release_job(s, j);
    if (d->to == GP_JOB_PREEMPTING && !j->preempted && !j->stopping)
        pe_sim_fail(s, "job %" PRIu64 " went to preempting without a PREEMPT or STOP decision", j->id);
    if (d->from == GP_JOB_PREEMPTING && d->to == GP_JOB_RUNNING) { /* a preemption withdrawn */
        if (!j->preempted || j->stopping)
            pe_sim_fail(s, "job %" PRIu64 " went back to running but was no victim in grace", j->id);
        j->preempted = false;
        j->preempted_by = 0;
        j->deadline = -1;
        j->withdrawn = true;
    }
}

static void on_preempt(sim *s, sim_job *j, const gp_decision *d)
{
    s->counters->preemptions++;
    if (!j->bound || (j->state != GP_JOB_RUNNING && j->state != GP_JOB_PREEMPTING))
        pe_sim_fail(s, "PREEMPT of job %" PRIu64 " that is not running (state %s, bound %d)", j->id,
                 gp_job_state_name(j->state), j->bound);
    if (j->preempted || j->stopping)
        pe_sim_fail(s, "PREEMPT of job %" PRIu64 " that is already preempting", j->id);
    if (d->by_job != 0 && j->preemptions >= PROP_MAX_PREEMPTIONS)
        pe_sim_fail(s, "reclaim PREEMPT of job %" PRIu64 " already preempted %d times (the cap is %d)", j->id,
                    j->preemptions, PROP_MAX_PREEMPTIONS);
    j->preemptions++;
    if (d->by_job == 0) { /* not a reclaim: its tenant became untrusted */
        if (!j->shared || !pe_untrusted(s, j->tenant) || strstr(d->reason, "untrusted") == NULL)
            pe_sim_fail(s, "PREEMPT of %s job %" PRIu64 " (tenant %s untrusted=%d) by no job: %s",
                        gp_isolation_name(j->spec.isolation), j->id, s->tenants[j->tenant].path,
                        pe_untrusted(s, j->tenant), d->reason);
        if (d->grace_s != j->spec.checkpoint_grace_s)
            pe_sim_fail(s, "trust PREEMPT of job %" PRIu64 " with grace %" PRId64 ", its checkpoint grace is %" PRId64,
                        j->id, d->grace_s, j->spec.checkpoint_grace_s);
        s->counters->trust_preemptions++;
        j->preempted = true;
        j->trust_preempted = true;
        j->preempted_by = 0;
        j->deadline = s->now + d->grace_s;
        return;
    }
    if (j->cls != GP_CLASS_BURSTABLE)
        pe_sim_fail(s, "PREEMPT of job %" PRIu64 " whose class is %s (only burstable jobs are victims)", j->id,
                 gp_class_name(j->cls));
    if (d->grace_s != j->spec.checkpoint_grace_s)
        pe_sim_fail(s, "PREEMPT of job %" PRIu64 " with grace %" PRId64 ", its checkpoint grace is %" PRId64, j->id,
                 d->grace_s, j->spec.checkpoint_grace_s);
    sim_job *by = job_by_id(s, d->by_job);
    if (by == NULL)
        pe_sim_fail(s, "PREEMPT of job %" PRIu64 " by unknown job %" PRIu64, j->id, d->by_job);
    if (strcmp(d->by_tenant, s->tenants[by->tenant].path) != 0)
        pe_sim_fail(s, "PREEMPT by_tenant %s, job %" PRIu64 " belongs to %s", d->by_tenant, by->id,
                 s->tenants[by->tenant].path);
    /* P6: no preemption loop inside the cool-down. */
    for (size_t k = 0; k < s->n_pre; k++) {
        const preempt_record *r = &s->pre[k];
        if (r->victim == d->by_job && r->by == j->id && s->now - r->time < PROP_COOLDOWN)
            pe_sim_fail(s,
                     "P6: job %" PRIu64 " preempted for job %" PRIu64 " at t=%" PRId64
                     ", and now job %" PRIu64 " is preempted for job %" PRIu64 " (%" PRId64 " s later)",
                     r->victim, r->by, r->time, j->id, d->by_job, s->now - r->time);
    }
    if (s->n_pre == s->cap_pre) {
        size_t ncap = s->cap_pre ? s->cap_pre * 2 : 64;
        preempt_record *np = realloc(s->pre, ncap * sizeof *np);
        if (np == NULL)
            pe_sim_fail(s, "out of memory");
        s->pre = np;
        s->cap_pre = ncap;
    }
    s->pre[s->n_pre++] = (preempt_record){j->id, d->by_job, s->now};
    j->preempted = true;
    j->preempted_by = d->by_job;
    j->deadline = s->now + d->grace_s;
}

static void on_stop(sim *s, sim_job *j, const gp_decision *d)
{
    s->counters->stops++;
    if (!j->bound)
        pe_sim_fail(s, "STOP of job %" PRIu64 " that holds no GPUs (state %s)", j->id, gp_job_state_name(j->state));
    if (d->grace_s < 0 || d->grace_s > j->spec.checkpoint_grace_s)
        pe_sim_fail(s, "STOP of job %" PRIu64 " with grace %" PRId64 " (checkpoint grace %" PRId64 ")", j->id,
                 d->grace_s, j->spec.checkpoint_grace_s);
    j->stopping = true;
    int64_t dl = s->now + d->grace_s;
    if (j->deadline < 0 || dl < j->deadline)
        j->deadline = dl;
}

static void on_usage_open(sim *s, sim_job *j, const gp_decision *d)
{
    const gp_usage *u = &d->usage;
    if (!interval_seen_insert(s, u->interval_id))
        pe_sim_fail(s, "USAGE_OPEN reuses interval id %" PRIu64, u->interval_id);
    if (!j->bound)
        pe_sim_fail(s, "P5: USAGE_OPEN for job %" PRIu64 " which holds no GPUs", j->id);
    if (u->start != s->now || u->end != -1)
        pe_sim_fail(s, "P5: USAGE_OPEN for job %" PRIu64 " with start %" PRId64 " end %" PRId64 " at now %" PRId64, j->id,
                 u->start, u->end, s->now);
    if (u->milli_gpus != job_demand(j))
        pe_sim_fail(s, "P5: USAGE_OPEN for job %" PRIu64 " with %" PRId64 " mGPU, job holds %" PRId64, j->id,
                 u->milli_gpus, job_demand(j));
    if (strcmp(u->tenant, s->tenants[j->tenant].path) != 0)
        pe_sim_fail(s, "P5: USAGE_OPEN for job %" PRIu64 " names tenant %s, job belongs to %s", j->id, u->tenant,
                 s->tenants[j->tenant].path);
    if (j->bound_type >= 0 && strcmp(u->gpu_type, gp_engine_gpu_type_name(s->e, j->bound_type)) != 0)
        pe_sim_fail(s, "P5: USAGE_OPEN for job %" PRIu64 " names type %s, job is on %s", j->id, u->gpu_type,
                 gp_engine_gpu_type_name(s->e, j->bound_type));
    if (u->cls != GP_CLASS_GUARANTEED && u->cls != GP_CLASS_BURSTABLE)
        pe_sim_fail(s, "P5: USAGE_OPEN for job %" PRIu64 " with class %d", j->id, (int)u->cls);
    if (u->topology != j->spec.topology)
        pe_sim_fail(s, "P5: USAGE_OPEN for job %" PRIu64 " with topology %s, job asked %s", j->id,
                 gp_topology_name(u->topology), gp_topology_name(j->spec.topology));
    if (j->open_intervals > 0)
        pe_sim_fail(s, "P5: USAGE_OPEN for job %" PRIu64 " which already has interval %" PRIu64 " open", j->id,
                 j->open_id);
    if (j->cls == GP_CLASS_BURSTABLE && u->cls == GP_CLASS_GUARANTEED)
        s->counters->promotions++;
    j->open_intervals++;
    j->open_id = u->interval_id;
    j->open_start = u->start;
    j->open_milli = u->milli_gpus;
    j->cls = u->cls;
    s->open_milli += u->milli_gpus;
    s->open_milli_start += u->milli_gpus * u->start;
}

static void on_usage_close(sim *s, sim_job *j, const gp_decision *d)
{
    const gp_usage *u = &d->usage;
    if (j->open_intervals != 1 || j->open_id != u->interval_id)
        pe_sim_fail(s, "P5: USAGE_CLOSE of interval %" PRIu64 " for job %" PRIu64 ", which is not its open one", u->interval_id,
                 j->id);
    if (u->end != s->now || u->start != j->open_start || u->milli_gpus != j->open_milli)
        pe_sim_fail(s,
                 "P5: USAGE_CLOSE of interval %" PRIu64 " start %" PRId64 " end %" PRId64 " milli %" PRId64
                 ", opened with start %" PRId64 " milli %" PRId64 ", now %" PRId64,
                 u->interval_id, u->start, u->end, u->milli_gpus, j->open_start, j->open_milli, s->now);
    j->open_intervals--;
    s->open_milli -= j->open_milli;
    s->open_milli_start -= j->open_milli * j->open_start;
    s->closed_sum += j->open_milli * (u->end - u->start);
}

static void hash_decision(sim *s, const gp_decision *d)
{
    pe_hash_i64(s, d->kind);
    pe_hash_i64(s, d->time);
    pe_hash_i64(s, (int64_t)d->job_id);
    pe_hash_i64(s, d->from);
    pe_hash_i64(s, d->to);
    pe_hash_i64(s, d->grace_s);
    pe_hash_i64(s, (int64_t)d->by_job);
    hash_str(s, d->by_tenant);
    hash_str(s, d->guarantee_of);
    pe_hash_i64(s, d->work_lost_gpu_s);
    hash_str(s, d->node);
    pe_hash_i64(s, d->gpu_index);
    hash_str(s, d->mig_layout);
    pe_hash_i64(s, (int64_t)d->usage.interval_id);
    pe_hash_i64(s, (int64_t)d->usage.job_id);
    hash_str(s, d->usage.tenant);
    hash_str(s, d->usage.gpu_type);
    pe_hash_i64(s, d->usage.milli_gpus);
    pe_hash_i64(s, d->usage.cls);
    pe_hash_i64(s, d->usage.topology);
    pe_hash_i64(s, d->usage.start);
    pe_hash_i64(s, d->usage.end);
    hash_str(s, d->reason);
}

static void log_decision(sim *s, const gp_decision *d)
{
    switch (d->kind) {
    case GP_DEC_TRANSITION:
        pe_sim_log(s, "    -> job %" PRIu64 " %s->%s (%s)", d->job_id, gp_job_state_name(d->from), gp_job_state_name(d->to),
                d->reason);
        break;
    case GP_DEC_PREEMPT:
        pe_sim_log(s, "    -> PREEMPT job %" PRIu64 " grace %" PRId64 " by job %" PRIu64 " (%s) guarantee_of %s",
                d->job_id, d->grace_s, d->by_job, d->by_tenant, d->guarantee_of);
        break;
    case GP_DEC_STOP:
        pe_sim_log(s, "    -> STOP job %" PRIu64 " grace %" PRId64 " (%s)", d->job_id, d->grace_s, d->reason);
        break;
    case GP_DEC_DRAINED:
        pe_sim_log(s, "    -> DRAINED %s", d->node);
        break;
    case GP_DEC_RECONFIGURE:
        pe_sim_log(s, "    -> RECONFIGURE %s/%d '%s'", d->node, d->gpu_index, d->mig_layout);
        break;
    case GP_DEC_BOOKING:
        pe_sim_log(s, "    -> BOOKING %s %s->%s (%s)", d->booking, gp_booking_state_name(d->booking_from),
                gp_booking_state_name(d->booking_to), d->reason);
        break;
    case GP_DEC_USAGE_OPEN:
    case GP_DEC_USAGE_CLOSE:
        pe_sim_log(s, "    -> USAGE_%s #%" PRIu64 " job %" PRIu64 " %s %" PRId64 "m %s [%" PRId64 ",%" PRId64 "]",
                d->kind == GP_DEC_USAGE_OPEN ? "OPEN" : "CLOSE", d->usage.interval_id, d->job_id, d->usage.gpu_type,
                d->usage.milli_gpus, gp_class_name(d->usage.cls), d->usage.start, d->usage.end);
        break;
    case GP_DEC_BIND: {
        uint32_t g[PROP_MAX_JOB_GPUS];
        size_t n = gp_engine_job_gpus(s->e, d->job_id, g, PROP_MAX_JOB_GPUS);
        char buf[160];
        size_t off = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < n && off + 8 < sizeof buf; i++)
            off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%u", i ? "," : "", g[i]);
        pe_sim_log(s, "    -> BIND job %" PRIu64 " gpus [%s]", d->job_id, buf);
        break;
    }
    }
}

void pe_process_decisions(sim *s)
{
    size_t n = 0;
    const gp_decision *d = gp_engine_decisions(s->e, &n);
    s->n_conflicts = 0;
    s->n_drained = 0;
    for (size_t i = 0; i < n; i++) {
        hash_decision(s, &d[i]);
        if (s->verbose || i < 24)
            log_decision(s, &d[i]);
        if (d[i].time != s->now)
            pe_sim_fail(s, "decision %s carries time %" PRId64 ", event time is %" PRId64,
                     gp_decision_kind_name(d[i].kind), d[i].time, s->now);
        if (d[i].kind == GP_DEC_RECONFIGURE) {
            int found = -1;
            for (int k = 0; k < s->n_nodes; k++)
                if (strcmp(s->nodes[k].name, d[i].node) == 0)
                    found = k;
            if (found < 0 || s->nodes[found].sharing != GP_SHARING_MIG)
                pe_sim_fail(s, "RECONFIGURE of %s/%d, which is not a MIG node", d[i].node, d[i].gpu_index);
            continue;
        }
        if (d[i].kind == GP_DEC_BOOKING)
            continue; /* no job: the booking model checks these */
        if (d[i].kind == GP_DEC_DRAINED) {
            int found = -1;
            for (int k = 0; k < s->n_nodes; k++)
                if (strcmp(s->nodes[k].name, d[i].node) == 0)
                    found = k;
            if (found < 0)
                pe_sim_fail(s, "DRAINED names unknown node '%s'", d[i].node);
            s->drained[s->n_drained++ % PROP_MAX_NODES] = found;
            continue;
        }
        sim_job *j = job_by_id(s, d[i].job_id);
        if (j == NULL)
            pe_sim_fail(s, "decision %s names unknown job %" PRIu64, gp_decision_kind_name(d[i].kind), d[i].job_id);
        switch (d[i].kind) {
        case GP_DEC_TRANSITION: on_transition(s, j, &d[i]); break;
        case GP_DEC_BIND: on_bind(s, j, d, n, i); break;
        case GP_DEC_PREEMPT: on_preempt(s, j, &d[i]); break;
        case GP_DEC_STOP: on_stop(s, j, &d[i]); break;
        case GP_DEC_USAGE_OPEN: on_usage_open(s, j, &d[i]); break;
        case GP_DEC_USAGE_CLOSE: on_usage_close(s, j, &d[i]); break;
        case GP_DEC_DRAINED:
        case GP_DEC_RECONFIGURE:
        case GP_DEC_BOOKING: break;
        }
    }
    if (n > 24 && !s->verbose)
        pe_sim_log(s, "    -> ... %zu decisions in all", n);
    /* P1: a GPU handed to a new job while its previous holder still holds it. */
    for (int c = 0; c < s->n_conflicts; c++) {
        const gpu_conflict *k = &s->conflicts[c];
        sim_job *old = job_by_id(s, k->old_job);
        if (old != NULL && old->bound)
            for (int i = 0; i < old->n_gpus; i++)
                if (old->gpus[i] == k->gpu)
                    pe_sim_fail(s, "P1: GPU %u bound to job %" PRIu64 " while job %" PRIu64 " (%s) still holds it",
                             k->gpu, k->new_job, old->id, gp_job_state_name(old->state));
    }
    gp_engine_decisions_clear(s->e);
}

/* ---- per-event checks --------------------------------------------------- */

void pe_check_fleet(sim *s)
{
    for (int k = 0; k < s->n_nodes; k++) {
        gp_node_info ni;
        if (!gp_engine_node_get(s->e, (uint32_t)k, &ni))
            pe_sim_fail(s, "gp_engine_node_get(%d) failed", k);
        if (ni.up != s->nodes[k].up)
            pe_sim_fail(s, "node %s up=%d, expected %d", s->nodes[k].name, ni.up, s->nodes[k].up);
        s->nodes[k].draining = ni.draining;
    }
    for (int g = 0; g < s->n_gpus; g++) {
        gp_gpu_info gi;
        if (!gp_engine_gpu_get(s->e, (uint32_t)g, &gi))
            pe_sim_fail(s, "gp_engine_gpu_get(%d) failed", g);
        s->gpu_healthy[g] = gi.healthy;
        if (gi.job != s->owner[g])
            pe_sim_fail(s, "P1: GPU %d (%s/%d) belongs to job %" PRIu64 " in the engine, to job %" PRIu64
                        " by the decisions",
                     g, s->nodes[s->gpu_node[g]].name, gi.index, gi.job, s->owner[g]);
        if (s->owner[g] != 0 && (!gi.healthy || !s->nodes[s->gpu_node[g]].up))
            pe_sim_fail(s, "P1: job %" PRIu64 " still holds GPU %d which is unhealthy or on a lost node", s->owner[g], g);
    }
    for (int i = 0; i < s->n_drained; i++) {
        const sim_node *n = &s->nodes[s->drained[i]];
        if (!n->draining)
            pe_sim_fail(s, "DRAINED for node %s which is not draining", n->name);
        for (int g = 0; g < n->gpu_count; g++)
            if (s->owner[n->gpu_first + (uint32_t)g] != 0)
                pe_sim_fail(s, "DRAINED for node %s while job %" PRIu64 " holds GPU %d", n->name,
                         s->owner[n->gpu_first + (uint32_t)g], g);
    }
}

void pe_check_jobs(sim *s, bool is_tick)
{
    for (int i = 0; i < s->n_jobs; i++) {
        sim_job *j = &s->jobs[i];
        if (j->forgotten)
            continue;
        if (j->bound != state_holds(j->state))
            pe_sim_fail(s, "job %" PRIu64 " is %s but bound=%d", j->id, gp_job_state_name(j->state), j->bound);
        if (j->state == GP_JOB_ADMITTED)
            pe_sim_fail(s, "job %" PRIu64 " left in ADMITTED after the event", j->id);
        if (j->open_intervals != (j->bound ? 1 : 0))
            pe_sim_fail(s, "P5: job %" PRIu64 " (%s) has %d open usage intervals", j->id, gp_job_state_name(j->state),
                     j->open_intervals);
        if (j->state == GP_JOB_PREEMPTING && is_tick && j->deadline <= s->now)
            pe_sim_fail(s, "job %" PRIu64 " still preempting at tick %" PRId64 ", its deadline was %" PRId64, j->id, s->now,
                     j->deadline);
        if (state_final(j->state))
            continue;
        gp_job_info info;
        gp_error err;
        if (gp_engine_job_info(s->e, j->id, &info, &err) != GP_OK)
            pe_sim_fail(s, "gp_engine_job_info(%" PRIu64 "): %s", j->id, err.message);
        if (info.state != j->state)
            pe_sim_fail(s, "job %" PRIu64 " is %s in the engine, %s by the decisions", j->id, gp_job_state_name(info.state),
                     gp_job_state_name(j->state));
        j->wait = info.state == GP_JOB_PENDING ? info.wait.code : GP_WAIT_NONE;
        if (is_tick && j->wait == GP_WAIT_USER_LIMIT)
            s->counters->user_limit_waits++;
        if (!j->bound)
            continue;
        if (info.cls != j->cls)
            pe_sim_fail(s, "job %" PRIu64 " has class %s in the engine, %s by its usage interval", j->id,
                     gp_class_name(info.cls), gp_class_name(j->cls));
        if (j->n_gpus > 0 && info.gpu_type != j->bound_type)
            pe_sim_fail(s, "job %" PRIu64 " has gpu_type %d in the engine, bound on %d", j->id, info.gpu_type,
                     j->bound_type);
        if (info.bind_time != j->bind_time)
            pe_sim_fail(s, "job %" PRIu64 " has bind_time %" PRId64 ", BIND came at %" PRId64, j->id, info.bind_time,
                     j->bind_time);
        if (j->state == GP_JOB_PREEMPTING && info.preempt_deadline != j->deadline)
            pe_sim_fail(s, "job %" PRIu64 " preempt_deadline %" PRId64 ", decisions say %" PRId64, j->id,
                     info.preempt_deadline, j->deadline);
        uint32_t g[PROP_MAX_JOB_GPUS];
        size_t n = gp_engine_job_gpus(s->e, j->id, g, PROP_MAX_JOB_GPUS);
        if (n != (size_t)j->n_gpus || memcmp(g, j->gpus, n * sizeof g[0]) != 0)
            pe_sim_fail(s, "job %" PRIu64 " GPUs changed since its BIND (%zu now, %d at bind)", j->id, n, j->n_gpus);
    }
}

void pe_check_tenants(sim *s)
{
    int64_t usage[PROP_MAX_TENANTS][GP_DIMS];
    int64_t gusage[PROP_MAX_TENANTS][GP_DIMS];
    int pending[PROP_MAX_TENANTS];
    memset(usage, 0, sizeof usage);
    memset(gusage, 0, sizeof gusage);
    memset(pending, 0, sizeof pending);
    for (int i = 0; i < s->n_jobs; i++) {
        const sim_job *j = &s->jobs[i];
        if (j->state == GP_JOB_PENDING)
            pending[j->tenant]++;
        if (!j->bound || j->bound_type < 0)
            continue;
        for (int t = j->tenant; t >= 0; t = s->tenants[t].parent) {
            usage[t][j->bound_type] += job_demand(j);
            usage[t][GP_DIM_CPU] += (int64_t)j->spec.replicas * j->spec.cpu_millis;
            usage[t][GP_DIM_MEM] += (int64_t)j->spec.replicas * j->spec.mem_mib;
            if (j->cls == GP_CLASS_GUARANTEED) {
                gusage[t][j->bound_type] += job_demand(j);
                gusage[t][GP_DIM_CPU] += (int64_t)j->spec.replicas * j->spec.cpu_millis;
                gusage[t][GP_DIM_MEM] += (int64_t)j->spec.replicas * j->spec.mem_mib;
            }
        }
    }
    pe_read_tenants(s, s->tinfo);
    for (int t = 0; t < s->n_tenants; t++) {
        sim_tenant *st = &s->tenants[t];
        const gp_tenant_info *ti = &s->tinfo[t];
        for (int d = 0; d < GP_DIMS; d++) {
            if (d >= s->n_types && d < GP_MAX_GPU_TYPES)
                continue;
            if (ti->usage.v[d] != usage[t][d])
                pe_sim_fail(s, "tenant %s usage[%d] = %" PRId64 ", bound jobs sum to %" PRId64, st->path, d, ti->usage.v[d],
                         usage[t][d]);
            if (ti->guaranteed_usage.v[d] != gusage[t][d])
                pe_sim_fail(s, "tenant %s guaranteed_usage[%d] = %" PRId64 ", guaranteed jobs sum to %" PRId64, st->path,
                         d, ti->guaranteed_usage.v[d], gusage[t][d]);
        }
        if (ti->untrusted != pe_untrusted(s, t))
            pe_sim_fail(s, "P8: tenant %s untrusted=%d, its spec and its ancestors' say %d (trust is a floor)", st->path,
                        ti->untrusted, pe_untrusted(s, t));
        if (st->leaf && ti->pending_jobs != pending[t])
            pe_sim_fail(s, "tenant %s pending_jobs = %d, we count %d", st->path, ti->pending_jobs, pending[t]);
        if (ti->has_guarantee != st->spec.guarantee.set)
            pe_sim_fail(s, "tenant %s has_guarantee = %d, spec set = %d", st->path, ti->has_guarantee,
                     st->spec.guarantee.set);
        /* P3: guaranteed usage under the guarantee. */
        bool g_over = false;
        if (ti->has_guarantee) {
            for (int k = 0; k < s->n_types; k++) {
                int d = s->type_engine[k];
                int64_t want = pe_quota_get(&st->spec.guarantee, s->type_name[k]);
                if (want < 0)
                    want = 0;
                if (ti->guarantee.v[d] != want)
                    pe_sim_fail(s, "tenant %s guarantee[%s] = %" PRId64 ", set to %" PRId64, st->path, s->type_name[k],
                             ti->guarantee.v[d], want);
            }
            for (int d = 0; d < GP_DIMS; d++) {
                if (ti->guaranteed_usage.v[d] > ti->guarantee.v[d]) {
                    g_over = true;
                    if (!st->guarantee_relaxed)
                        pe_sim_fail(s, "P3: tenant %s guaranteed_usage[%d] = %" PRId64 " > guarantee %" PRId64, st->path,
                                 d, ti->guaranteed_usage.v[d], ti->guarantee.v[d]);
                }
            }
        }
        if (!g_over)
            st->guarantee_relaxed = false;
        /* P3: usage under the limit. */
        bool l_over = false;
        for (int d = 0; d < GP_DIMS; d++) {
            if (ti->usage.v[d] > ti->limit.v[d]) {
                l_over = true;
                if (!st->limit_relaxed)
                    pe_sim_fail(s, "P3: tenant %s usage[%d] = %" PRId64 " > limit %" PRId64, st->path, d, ti->usage.v[d],
                             ti->limit.v[d]);
            }
        }
        if (!l_over)
            st->limit_relaxed = false;
    }
}

void pe_check_metering(sim *s)
{
    int64_t metered = s->closed_sum + s->open_milli * s->now - s->open_milli_start;
    if (metered != s->alloc_integral)
        pe_sim_fail(s, "P5: metered %" PRId64 " milli-GPU-s, allocated %" PRId64 " milli-GPU-s", metered,
                 s->alloc_integral);
}

static const gp_tenant_info *user_limit_of(const sim *s, int t);
static int64_t user_usage(const sim *s, int leaf, int user, int dim);

/* Guarantee-eligible on engine type `type` (GPU dimension): at every ancestor
 * that has a guarantee (and at least one has), guaranteed usage + demand fits
 * under it.  With `admit`, also usage + demand <= limit at every ancestor. */
static bool eligible_on(const sim *s, const sim_job *j, int type, bool admit)
{
    int64_t dem = job_demand(j);
    int64_t cpu = (int64_t)j->spec.replicas * j->spec.cpu_millis;
    int64_t mem = (int64_t)j->spec.replicas * j->spec.mem_mib;
    bool any = false;
    for (int t = j->tenant; t >= 0; t = s->tenants[t].parent) {
        const gp_tenant_info *ti = &s->tinfo[t];
        if (ti->has_guarantee) {
            any = true;
            if (!fits_under(ti->guaranteed_usage.v[type], dem, ti->guarantee.v[type]) ||
                !fits_under(ti->guaranteed_usage.v[GP_DIM_CPU], cpu, ti->guarantee.v[GP_DIM_CPU]) ||
                !fits_under(ti->guaranteed_usage.v[GP_DIM_MEM], mem, ti->guarantee.v[GP_DIM_MEM]))
                return false;
        }
        if (admit && (!fits_under(ti->usage.v[type], dem, ti->limit.v[type]) ||
                      !fits_under(ti->usage.v[GP_DIM_CPU], cpu, ti->limit.v[GP_DIM_CPU]) ||
                      !fits_under(ti->usage.v[GP_DIM_MEM], mem, ti->limit.v[GP_DIM_MEM])))
            return false;
    }
    const gp_tenant_info *ul = j->user >= 0 ? user_limit_of(s, j->tenant) : NULL;
    if (admit && ul &&
        (!fits_under(user_usage(s, j->tenant, j->user, type), dem, ul->user_limit.v[type]) ||
         !fits_under(user_usage(s, j->tenant, j->user, GP_DIM_CPU), cpu, ul->user_limit.v[GP_DIM_CPU]) ||
         !fits_under(user_usage(s, j->tenant, j->user, GP_DIM_MEM), mem, ul->user_limit.v[GP_DIM_MEM])))
        return false;
    return any;
}

/* P4: guaranteed progress.
 *
 * After every event, for every pending job J we evaluate condition C(J) on
 * the state right after the event (public queries + our books):
 *   a) J takes whole GPUs (not a share), has topology ANY and accepts
 *      exactly one GPU type T of the fleet;
 *   b) J is guarantee-eligible on T (eligible_on with limits: at every
 *      ancestor with a guarantee, at least one, guaranteed_usage + demand <=
 *      guarantee, at every ancestor usage + demand <= limit, and its user's
 *      usage + demand <= the user limit that applies);
 *   c) J would fit if every burstable job were gone: with c_n = GPUs of node
 *      n in exclusive mode (shared-mode GPUs are not counted) that are of
 *      type T, healthy, on an up, not draining node, and free,
 *      or held by a running burstable job preempted fewer than
 *      PROP_MAX_PREEMPTIONS times, or held by a preempting job that
 *      J itself preempted (their deadline is at most PROP_GRACE_MAX after
 *      J's reclaim), the sum over nodes of floor(c_n / gpus) is at least
 *      replicas (node CPU and memory are sized so that they never bind
 *      before GPUs do).  GPUs of other preempting jobs (cancelled, or
 *      victims of another reclaimer) do not count: their deadline may fall
 *      after J's window;
 *   d) no other pending job that accepts T is guarantee-eligible on any of
 *      its types (nobody can take the capacity ahead of J in phase 1), and
 *      no other pending job that accepts T waits in GP_WAIT_RECLAIM (holds
 *      claims on victims' GPUs);
 *   e) J is not restarting within its back-off (restart_policy: passes
 *      skip it until eligible_at).
 * (lend=0 is not a condition: by the draft, idle guarantee of non-lending
 * tenants is held back from burstable jobs only.)
 * The window opens when C(J) first holds and closes (resets) as soon as it
 * fails after any event, or any fleet or tenant change is accepted (node
 * lost/added, GPU health, drain/undrain, tenant set).  t1 is the first tick
 * taken while the window is open (its pass sees J eligible).  By the draft
 * semantics, that pass places J or reclaims victims whose grace is at most
 * PROP_GRACE_MAX, and J is placed by the first pass at or after the
 * victims' deadline, where the test always ticks.  So: after a tick at time
 * >= t1 + PROP_GRACE_MAX with C(J) still holding, J must not be pending.
 */
void pe_check_guarantee_progress(sim *s, bool is_tick, bool changed)
{
    int cap[PROP_MAX_NODES];
    int elig_accepting[GP_MAX_GPU_TYPES], reclaim_accepting[GP_MAX_GPU_TYPES];
    unsigned fleet_types = 0;
    for (int k = 0; k < s->n_types; k++)
        fleet_types |= 1u << s->type_engine[k];

    for (int k = 0; k < s->n_nodes; k++) {
        const sim_node *n = &s->nodes[k];
        cap[k] = 0;
        if (!n->up || n->draining)
            continue;
        if (n->sharing != GP_SHARING_EXCLUSIVE)
            continue; /* whole-GPU work may use an empty MPS GPU too; counting fewer is safe */
        for (int g = 0; g < n->gpu_count; g++) {
            uint32_t gi = n->gpu_first + (uint32_t)g;
            if (!s->gpu_healthy[gi])
                continue;
            const sim_job *h = job_by_id(s, s->owner[gi]);
            if (h == NULL || (h->cls == GP_CLASS_BURSTABLE && h->state == GP_JOB_RUNNING &&
                              h->preemptions < PROP_MAX_PREEMPTIONS))
                cap[k]++;
        }
    }
    memset(elig_accepting, 0, sizeof elig_accepting);
    memset(reclaim_accepting, 0, sizeof reclaim_accepting);
    for (int i = 0; i < s->n_jobs; i++) {
        const sim_job *j = &s->jobs[i];
        if (j->state != GP_JOB_PENDING)
            continue;
        unsigned acc = j->accepts & fleet_types;
        bool elig = false;
        for (int d = 0; d < GP_MAX_GPU_TYPES && !elig; d++)
            if (acc & (1u << d))
                elig = eligible_on(s, j, d, false);
        for (int d = 0; d < GP_MAX_GPU_TYPES; d++) {
            if (!(acc & (1u << d)))
                continue;
            if (elig)
                elig_accepting[d]++;
            if (j->wait == GP_WAIT_RECLAIM)
                reclaim_accepting[d]++;
        }
    }

    for (int i = 0; i < s->n_jobs; i++) {
        sim_job *j = &s->jobs[i];
        if (changed)
            j->elig_active = false;
        if (j->state != GP_JOB_PENDING) {
            if (j->elig_active && j->elig_t1 >= 0 && j->bound)
                s->counters->p4_bound_in_window++;
            j->elig_active = false;
            continue;
        }
        unsigned acc = j->accepts & fleet_types;
        bool cond = !j->shared && j->spec.topology == GP_TOPO_ANY && acc != 0 && (acc & (acc - 1)) == 0;
        int d = -1, k = -1;
        if (cond) {
            for (int x = 0; x < s->n_types; x++)
                if (acc == (1u << s->type_engine[x])) {
                    k = x;
                    d = s->type_engine[x];
                }
            cond = k >= 0;
        }
        cond = cond && eligible_on(s, j, d, true) && s->now >= j->eligible_at;
        cond = cond && elig_accepting[d] == 1 && reclaim_accepting[d] == (j->wait == GP_WAIT_RECLAIM ? 1 : 0);
        if (cond) {
            int mine[PROP_MAX_NODES];
            memcpy(mine, cap, sizeof mine);
            for (int v = 0; v < s->n_jobs; v++) {
                const sim_job *vj = &s->jobs[v];
                if (vj->state != GP_JOB_PREEMPTING || !vj->preempted || vj->preempted_by != j->id)
                    continue;
                for (int x = 0; x < vj->n_gpus; x++) {
                    uint32_t g = vj->gpus[x];
                    const sim_node *n = &s->nodes[s->gpu_node[g]];
                    if (n->up && !n->draining && s->gpu_healthy[g])
                        mine[s->gpu_node[g]]++;
                }
            }
            int replicas = 0;
            for (int n = 0; n < s->n_nodes; n++)
                if (s->nodes[n].type == k)
                    replicas += mine[n] / j->spec.gpus;
            cond = replicas >= j->spec.replicas;
        }
        if (!cond) {
            j->elig_active = false;
            continue;
        }
        if (!j->elig_active) {
            j->elig_active = true;
            j->elig_t1 = -1;
            continue;
        }
        if (is_tick && j->elig_t1 >= 0 && s->now >= j->elig_t1 + PROP_GRACE_MAX) {
            char why[256];
            gp_engine_why(s->e, j->id, why, sizeof why);
            pe_sim_fail(s,
                     "P4: job %" PRIu64 " (%s, %d x %d %s) has been guarantee-eligible and placeable (burstable jobs "
                     "aside) since the tick at t=%" PRId64 ", still pending at t=%" PRId64 ": %s",
                     j->id, s->tenants[j->tenant].path, j->spec.replicas, j->spec.gpus, s->type_name[k], j->elig_t1,
                     s->now, why);
        }
    }
}

/* P8: trust and co-location, from our books and public queries.
 *   - per shared GPU, the slices of our bound jobs add up to the engine's
 *     used_milli and jobs, and are all of the GPU's mode;
 *   - an MPS or time-sliced GPU holds one org (preempting jobs included:
 *     the org of a tenant never changes) and names it as trust_domain;
 *   - no untrusted tenant (effective trust now) runs an MPS or time-slice
 *     share; one in its grace is leaving and may still hold it;
 *   - a running MIG slice of an untrusted tenant shares its GPU with
 *     nobody else's slice, in any state, and the GPU names it;
 *   - after a tick every pending mps/timeslice job of an untrusted tenant
 *     waits with GP_WAIT_TRUST, and only those do;
 *   - slices sit on healthy GPUs of up nodes. */
typedef struct gpu_slices {
    int jobs, org, tenant, untrusted_running;
    int64_t milli;
    bool mixed_orgs, mixed_tenants;
} gpu_slices;

static void slices_add(sim *s, gpu_slices *b, const sim_job *j, uint32_t g)
{
    int org = pe_org_of(s, j->tenant);
    if (b->jobs > 0 && b->org != org)
        b->mixed_orgs = true;
    if (b->jobs > 0 && b->tenant != j->tenant)
        b->mixed_tenants = true;
    if (j->state == GP_JOB_RUNNING && pe_untrusted(s, j->tenant)) {
        if (j->spec.isolation != GP_ISO_MIG)
            pe_sim_fail(s, "P8: job %" PRIu64 " of untrusted %s runs a %s share on GPU %u", j->id,
                        s->tenants[j->tenant].path, gp_isolation_name(j->spec.isolation), g);
        b->untrusted_running = j->tenant + 1;
    }
    b->org = org;
    b->tenant = j->tenant;
    b->jobs++;
    b->milli += j->slice_milli;
    if (!s->gpu_healthy[g] || !s->nodes[s->gpu_node[g]].up)
        pe_sim_fail(s, "P8: job %" PRIu64 " holds a slice of GPU %u, unhealthy or on a lost node", j->id, g);
}

static void check_shared_gpu(sim *s, uint32_t g, const gpu_slices *b)
{
    gp_gpu_info gi;
    if (!gp_engine_gpu_get(s->e, g, &gi))
        pe_sim_fail(s, "gp_engine_gpu_get(%u) failed", g);
    if (gi.sharing == GP_SHARING_EXCLUSIVE) {
        if (b->jobs)
            pe_sim_fail(s, "P8: exclusive GPU %u holds %d slices", g, b->jobs);
        return;
    }
    if (gi.jobs != b->jobs || gi.used_milli != b->milli)
        pe_sim_fail(s, "P8: GPU %u has jobs %d used_milli %d, the slices on it say %d, %" PRId64, g, gi.jobs,
                    gi.used_milli, b->jobs, b->milli);
    if (b->jobs && gi.job != 0)
        pe_sim_fail(s, "P8: GPU %u has a whole-GPU owner and slices", g);
    if (gi.sharing == GP_SHARING_MIG) {
        if (b->untrusted_running && b->mixed_tenants)
            pe_sim_fail(s, "P8: MIG GPU %u: untrusted %s shares it with another tenant", g,
                        s->tenants[b->untrusted_running - 1].path);
        if (b->untrusted_running && strcmp(gi.trust_domain, s->tenants[b->untrusted_running - 1].path) != 0)
            pe_sim_fail(s, "P8: MIG GPU %u runs untrusted %s but names \"%s\"", g,
                        s->tenants[b->untrusted_running - 1].path, gi.trust_domain);
        return;
    }
    if (b->mixed_orgs)
        pe_sim_fail(s, "P8: %s GPU %u holds two orgs", gi.sharing == GP_SHARING_MPS ? "MPS" : "time-sliced", g);
    const char *want = b->jobs ? s->tenants[b->org].path : "";
    if (strcmp(gi.trust_domain, want) != 0)
        pe_sim_fail(s, "P8: GPU %u names trust domain \"%s\", its slices are of \"%s\"", g, gi.trust_domain, want);
}

void pe_check_sharing(sim *s, bool is_tick)
{
    gpu_slices books[PROP_MAX_GPUS];
    memset(books, 0, sizeof books);
    for (int i = 0; i < s->n_jobs; i++) {
        const sim_job *j = &s->jobs[i];
        if (j->forgotten || !j->shared)
            continue;
        if (j->bound)
            for (int k = 0; k < j->n_gpus; k++)
                slices_add(s, &books[j->gpus[k]], j, j->gpus[k]);
        bool forbidden = j->spec.isolation != GP_ISO_MIG && pe_untrusted(s, j->tenant);
        if (is_tick && j->state == GP_JOB_PENDING && forbidden != (j->wait == GP_WAIT_TRUST))
            pe_sim_fail(s, "P8: pending %s job %" PRIu64 " of %s (untrusted=%d) waits with code %d after a pass",
                        gp_isolation_name(j->spec.isolation), j->id, s->tenants[j->tenant].path,
                        pe_untrusted(s, j->tenant), (int)j->wait);
    }
    for (int g = 0; g < s->n_gpus; g++)
        check_shared_gpu(s, (uint32_t)g, &books[g]);
}

/* ---- P9: per-user limits ------------------------------------------------ */

/* The user limit that applies to jobs of leaf t: the nearest tenant from t
 * up whose spec sets one (NULL: none). */
static const gp_tenant_info *user_limit_of(const sim *s, int t)
{
    for (; t >= 0; t = s->tenants[t].parent)
        if (s->tenants[t].spec.user_limit.set)
            return &s->tinfo[t];
    return NULL;
}

static void user_usage_refresh(sim *s)
{
    memset(s->user_usage, 0, sizeof s->user_usage);
    for (int i = 0; i < s->n_jobs; i++) {
        const sim_job *j = &s->jobs[i];
        if (!j->bound || j->user < 0 || j->bound_type < 0)
            continue;
        int64_t *u = s->user_usage[j->tenant][j->user];
        u[GP_DIM_CPU] += (int64_t)j->spec.replicas * j->spec.cpu_millis;
        u[GP_DIM_MEM] += (int64_t)j->spec.replicas * j->spec.mem_mib;
        u[j->bound_type] += job_demand(j);
    }
}

static int64_t user_usage(const sim *s, int leaf, int user, int dim)
{
    return s->user_usage[leaf][user][dim];
}

/* A user of leaf t over the limit that applies (or none). */
static bool users_over(const sim *s, int t, int *user, int *dim)
{
    const gp_tenant_info *lim = user_limit_of(s, t);
    for (int u = 0; lim && u < PROP_USERS; u++)
        for (int d = 0; d < GP_DIMS; d++)
            if (lim->user_limit.v[d] != GP_UNLIMITED && user_usage(s, t, u, d) > lim->user_limit.v[d]) {
                *user = u;
                *dim = d;
                return true;
            }
    return false;
}

/* After an accepted tenant change: leaves whose users it put over. */
void pe_mark_user_relaxed(sim *s)
{
    int u, d;
    pe_read_tenants(s, s->tinfo);
    user_usage_refresh(s);
    for (int t = 0; t < s->n_tenants; t++)
        if (s->tenants[t].leaf && users_over(s, t, &u, &d))
            s->tenants[t].user_relaxed = true;
}

void pe_check_users(sim *s)
{
    user_usage_refresh(s);
    for (int t = 0; t < s->n_tenants; t++) {
        sim_tenant *st = &s->tenants[t];
        int u, d;
        if (!st->leaf)
            continue;
        if (!users_over(s, t, &u, &d)) {
            st->user_relaxed = false;
            continue;
        }
        if (!st->user_relaxed)
            pe_sim_fail(s, "P9: user u%d of %s uses %" PRId64 " on dim %d, over its user limit %" PRId64, u, st->path,
                        user_usage(s, t, u, d), d, user_limit_of(s, t)->user_limit.v[d]);
    }
}

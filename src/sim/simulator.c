/* simulator.c - the discrete-event loop around the engine (see simulator.h).
 *
 * Time moves from event to event.  At each step the loop takes the
 * earliest of (next trace arrival, earliest queued event), picks the tick
 * time (that time, or the end of its quantum), delivers every arrival and
 * queued event up to the tick time at its own time, then ticks the engine
 * if any of them can change a scheduling decision (arrivals, ends,
 * grace wake-ups; not checkpoints), and carries out the decisions.
 *
 * Work and preemption.  A job has `duration` seconds of work.  Bound at
 * time b, it ends at b + remaining.  Every checkpoint_interval_s of running
 * it checkpoints (reported to the engine, which uses it to pick cheap
 * victims).  When preempted it keeps running through its grace; a job
 * whose grace is at least checkpoint_save_s uses it to save a checkpoint
 * (so it loses nothing), others lose the work since their last checkpoint.
 * When the engine requeues it, remaining work drops by what was saved,
 * and the lost GPU-seconds are counted.  With checkpoint_interval_s = 0
 * and no graceful save, a preempted job restarts from scratch.
 *
 * Worked example: 8 GPUs, team a (guarantee 8) idle, team b borrows all 8
 * with one job of 3 h work at t=0, grace 120 s, checkpoints hourly.  At
 * t=5400 a submits 8 GPUs: the tick preempts b (PREEMPT, grace 120); b
 * saves a checkpoint at t=5460 (save time 60 <= grace); the wake-up at
 * t=5520 ticks the engine, which requeues b (remaining 3 h - 5460 s) and
 * binds a.  b lost 0 GPU-seconds; its wait restarts at 5520.
 *
 * Allocation is integrated from USAGE_OPEN/CLOSE decisions (milli-GPUs
 * times seconds) over the arrival window (and over the whole run, the
 * GPU-hours delivered); samples of the state are taken every
 * sample_interval_s for the time series.  The fairness tracker
 * (fairness.h) follows each group's usage per GPU type and its pending
 * jobs, and closes an hour whenever the clock passes one; the share
 * tracker (share.h) follows the same and closes days.
 */
#include "sim/simulator.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/event_queue.h"
#include "sim/setup.h"
#include "util/grow.h"

enum { JOB_WAITING = 0, JOB_PENDING, JOB_RUNNING, JOB_PREEMPTING, JOB_OVER };

typedef struct sim_job {
    int64_t remaining;     /* seconds of work left at the start of the current run */
    int64_t run_start;     /* bind time of the current run */
    int64_t saved;         /* time up to which the current run's work is checkpointed */
    int64_t pending_since;
    uint32_t epoch;
    uint8_t state;
} sim_job;

typedef struct sim {
    const gp_sim_setup *setup;
    const gp_sim_options *opt;
    gp_sim_result *r;
    gp_engine *e;
    char (*tenant_of)[GP_PATH_MAX];
    sim_job *jobs;
    gp_event_queue q;
    size_t next_arrival;
    int64_t now;
    int64_t allocated_milli, arrived_milli, demand_milli;
    int64_t *group_usage;           /* current, per group */
    gp_sim_fairness fair;
    gp_sim_share share;
    uint32_t type_bits[GP_MAX_GPU_TYPES]; /* trace type bit b: the engine's type (as a bit) */
    int64_t next_sample;
    size_t cap_samples, cap_usage_rows; /* of r->samples, r->group_usage (rows) */
    size_t cap_arrived, cap_allocated;  /* of r->arrival_arrived, r->arrival_allocated */
    size_t batch_first, batch_end;  /* arrivals of the current batch (fail_unplaced) */
    bool oom;
} sim;

bool gp_sim_policy_parse(const char *name, gp_sim_policy *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    if (strcmp(name, "gpupool") == 0)
        return true;
    if (strcmp(name, "static") == 0) {
        out->kind = GP_SIM_STATIC;
        return true;
    }
    if (strcmp(name, "fifo") == 0) {
        out->kind = GP_SIM_FIFO;
        return true;
    }
    int score = 0;
    if (!gp_enum_value(GP_ENUM_SCORE, name, &score) || score == GP_SCORE_DEFAULT)
        return false; /* "gpupool" is the default score */
    out->set_score = true;
    out->score = (gp_score)score;
    return true;
}

gp_sim_options gp_sim_options_default(void)
{
    gp_sim_options o;
    memset(&o, 0, sizeof o);
    o.checkpoint_interval_s = 3600;
    o.checkpoint_save_s = 60;
    o.engine = gp_engine_config_default();
    return o;
}

/* ---- time series ---- */

static int64_t stranded_milli(const gp_engine *e)
{
    int64_t sum = 0;
    size_t n = gp_engine_node_count(e);
    for (size_t i = 0; i < n; i++) {
        gp_node_info ni;
        if (gp_engine_node_get(e, (uint32_t)i, &ni) && ni.up && ni.gpus_free > 0 && ni.gpus_free < ni.gpus_healthy)
            sum += (int64_t)ni.gpus_free * 1000;
    }
    return sum;
}

/* Room for one more sample and its row of group usage; false when out of
 * memory. */
static bool sample_room(sim *s)
{
    gp_sim_result *r = s->r;
    size_t row = (r->n_groups ? r->n_groups : 1) * sizeof *r->group_usage;
    gp_sim_sample *samples = gp_grow(r->samples, &s->cap_samples, r->n_samples + 1, sizeof *samples);
    if (samples)
        r->samples = samples;
    int64_t *usage = samples ? gp_grow(r->group_usage, &s->cap_usage_rows, r->n_samples + 1, row) : NULL;
    if (usage)
        r->group_usage = usage;
    return usage != NULL;
}

static void take_sample(sim *s, int64_t t)
{
    gp_sim_result *r = s->r;
    if (!sample_room(s)) {
        s->oom = true;
        return;
    }
    gp_engine_stats st;
    gp_engine_stats_get(s->e, &st);
    gp_sim_sample *p = &r->samples[r->n_samples];
    p->t = t;
    p->allocated_milli = s->allocated_milli;
    p->arrived_milli = s->arrived_milli;
    p->demand_milli = s->demand_milli;
    p->stranded_milli = stranded_milli(s->e);
    p->pending = (int32_t)st.pending;
    p->running = (int32_t)(st.running + st.preempting);
    memcpy(r->group_usage + r->n_samples * r->n_groups, s->group_usage, r->n_groups * sizeof *s->group_usage);
    r->n_samples++;
}

/* Move the clock to t: integrate allocation, take the samples due.  A
 * sample at time x < t shows the state after every event at or before x
 * (nothing changes between events); samples stop at the last arrival. */
static void advance(sim *s, int64_t t)
{
    gp_sim_result *r = s->r;
    int64_t from = s->now > r->t_first_arrival ? s->now : r->t_first_arrival;
    int64_t to = t < r->t_last_arrival ? t : r->t_last_arrival;
    if (to > from)
        r->allocated_gpu_s += (double)s->allocated_milli * (double)(to - from) / 1000.0;
    r->delivered_gpu_s += (double)s->allocated_milli * (double)(t - s->now) / 1000.0;
    if (!gp_sim_fairness_advance(&s->fair, t) || !gp_sim_share_advance(&s->share, t))
        s->oom = true;
    while (s->next_sample < t && s->next_sample <= r->t_last_arrival) {
        take_sample(s, s->next_sample);
        s->next_sample += s->opt->sample_interval_s;
    }
    s->now = t;
}

static void record_arrival_point(sim *s)
{
    gp_sim_result *r = s->r;
    int64_t *arrived = gp_grow(r->arrival_arrived, &s->cap_arrived, r->n_arrivals + 1, sizeof *arrived);
    if (arrived)
        r->arrival_arrived = arrived;
    int64_t *allocated = arrived ? gp_grow(r->arrival_allocated, &s->cap_allocated, r->n_arrivals + 1,
                                           sizeof *allocated)
                                 : NULL;
    if (!allocated) {
        s->oom = true;
        return;
    }
    r->arrival_allocated = allocated;
    r->arrival_arrived[r->n_arrivals] = s->arrived_milli;
    r->arrival_allocated[r->n_arrivals++] = s->allocated_milli;
}

/* ---- decisions ---- */

/* The engine's GPU types job j accepts, as bits (0 in the trace: any). */
static uint32_t engine_type_bits(const sim *s, const gp_trace_job *tj)
{
    uint32_t bits = 0;
    for (int b = 0; b < GP_MAX_GPU_TYPES; b++)
        bits |= tj->type_mask & (1u << b) ? s->type_bits[b] : 0;
    return tj->type_mask ? bits : UINT32_MAX;
}

/* Job j's group has one pending job more (+1) or less (-1). */
static void note_pending(sim *s, uint32_t j, int delta)
{
    const gp_trace_job *tj = &s->setup->trace->jobs[j];
    gp_sim_fairness_pending(&s->fair, s->now, s->r->job_group[j], delta);
    gp_sim_share_pending(&s->share, s->now, s->r->job_group[j], engine_type_bits(s, tj), gp_trace_job_milli(tj),
                         delta);
}

static void push(sim *s, int64_t time, gp_event_kind kind, uint32_t job)
{
    if (!gp_event_push(&s->q, time, kind, job, s->jobs[job].epoch))
        s->oom = true;
}

static void on_bind(sim *s, uint32_t j)
{
    sim_job *sj = &s->jobs[j];
    gp_sim_job_result *res = &s->r->jobs[j];
    if (sj->state != JOB_PENDING)
        return;
    res->wait_s += s->now - sj->pending_since;
    note_pending(s, j, -1);
    if (res->first_start < 0)
        res->first_start = s->now;
    sj->state = JOB_RUNNING;
    sj->run_start = sj->saved = s->now;
    if (sj->remaining >= 0)
        push(s, s->now + sj->remaining, GP_EV_END, j);
    int64_t every = s->opt->checkpoint_interval_s;
    if (every > 0 && (sj->remaining < 0 || every < sj->remaining))
        push(s, s->now + every, GP_EV_CHECKPOINT, j);
}

static void on_preempt(sim *s, uint32_t j, int64_t grace_s)
{
    sim_job *sj = &s->jobs[j];
    if (sj->state != JOB_RUNNING)
        return;
    sj->state = JOB_PREEMPTING;
    s->r->jobs[j].preemptions++;
    s->r->preemptions++;
    if (grace_s >= s->opt->checkpoint_save_s && grace_s > 0)
        push(s, s->now + s->opt->checkpoint_save_s, GP_EV_CHECKPOINT, j);
    push(s, s->now + grace_s, GP_EV_WAKE, j);
}

/* The engine withdrew a preemption: the job runs on, its checkpoints go on. */
static void on_withdrawn(sim *s, uint32_t j)
{
    sim_job *sj = &s->jobs[j];
    if (sj->state != JOB_PREEMPTING)
        return;
    sj->state = JOB_RUNNING;
    int64_t every = s->opt->checkpoint_interval_s;
    if (every > 0 && (sj->remaining < 0 || s->now + every < sj->run_start + sj->remaining))
        push(s, s->now + every, GP_EV_CHECKPOINT, j);
}

/* The engine put a running or preempting job back in the queue. */
static void on_requeue(sim *s, uint32_t j)
{
    sim_job *sj = &s->jobs[j];
    if (sj->state != JOB_RUNNING && sj->state != JOB_PREEMPTING)
        return;
    const gp_trace_job *tj = &s->setup->trace->jobs[j];
    if (sj->remaining >= 0)
        sj->remaining -= sj->saved - sj->run_start;
    s->r->jobs[j].lost_gpu_s += (s->now - sj->saved) * gp_trace_job_milli(tj) / 1000;
    sj->epoch++;
    sj->state = JOB_PENDING;
    sj->pending_since = s->now;
    note_pending(s, j, +1);
}

/* The engine's index of a GPU type name; -1 if it has none. */
static int gpu_type_index(const gp_engine *e, const char *name)
{
    for (int ty = 0; ty < gp_engine_gpu_type_count(e); ty++)
        if (strcmp(gp_engine_gpu_type_name(e, ty), name) == 0)
            return ty;
    return -1;
}

static void on_usage(sim *s, const gp_usage *u, int sign)
{
    if (u->dedicated_idle) /* idle GPUs billed to a dedicated tenant: not allocated */
        return;
    s->allocated_milli += sign * u->milli_gpus;
    uint64_t j = u->job_id - 1;
    if (j >= s->r->n_jobs)
        return;
    int type = gpu_type_index(s->e, u->gpu_type);
    s->group_usage[s->r->job_group[j]] += sign * u->milli_gpus;
    gp_sim_fairness_usage(&s->fair, s->now, s->r->job_group[j], type, sign * u->milli_gpus);
    gp_sim_share_usage(&s->share, s->now, s->r->job_group[j], type, sign * u->milli_gpus);
}

static void carry_out(sim *s)
{
    size_t n;
    const gp_decision *d = gp_engine_decisions(s->e, &n);
    if (s->opt->ledger)
        gp_sim_ledger_decisions(s->opt->ledger, s->e, d, n);
    for (size_t i = 0; i < n; i++) {
        uint32_t j = (uint32_t)(d[i].job_id - 1);
        switch (d[i].kind) {
        case GP_DEC_BIND:
            on_bind(s, j);
            break;
        case GP_DEC_PREEMPT:
            on_preempt(s, j, d[i].grace_s);
            break;
        case GP_DEC_TRANSITION:
            if (d[i].to == GP_JOB_PENDING && d[i].from != GP_JOB_PENDING)
                on_requeue(s, j);
            else if (d[i].from == GP_JOB_PREEMPTING && d[i].to == GP_JOB_RUNNING)
                on_withdrawn(s, j);
            break;
        case GP_DEC_USAGE_OPEN:
            on_usage(s, &d[i].usage, +1);
            break;
        case GP_DEC_USAGE_CLOSE:
            on_usage(s, &d[i].usage, -1);
            break;
        default: /* STOP is followed by its requeue or final transition; the rest do not concern jobs */
            break;
        }
    }
    gp_engine_decisions_clear(s->e);
}

/* ---- events ---- */

static void finish(sim *s, uint32_t j, gp_sim_outcome outcome)
{
    if (s->jobs[j].state == JOB_PENDING)
        note_pending(s, j, -1);
    s->jobs[j].state = JOB_OVER;
    s->r->jobs[j].outcome = (uint8_t)outcome;
    s->r->jobs[j].end = s->now;
    s->demand_milli -= gp_trace_job_milli(&s->setup->trace->jobs[j]);
    gp_engine_job_forget(s->e, j + 1, NULL);
}

static gp_job_spec job_spec(const sim *s, uint32_t j)
{
    const gp_trace *t = s->setup->trace;
    const gp_trace_job *tj = &t->jobs[j];
    bool fifo = s->r->policy.kind == GP_SIM_FIFO;
    gp_job_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.id = tj->id;
    spec.tenant = s->tenant_of[tj->tenant];
    spec.kind = tj->kind;
    spec.replicas = tj->replicas;
    spec.gpus = tj->gpus;
    for (int b = 0; b < t->n_types; b++)
        if (tj->type_mask & (1u << b))
            spec.gpu_types[spec.n_gpu_types++] = t->types[b];
    spec.cpu_millis = tj->cpu_millis;
    spec.mem_mib = tj->mem_mib;
    spec.topology = tj->topology;
    spec.isolation = tj->isolation;
    if (tj->isolation == GP_ISO_MPS)
        spec.share.mps_milli = tj->gpu_milli;
    if (tj->isolation == GP_ISO_MIG)
        snprintf(spec.share.mig_profile, sizeof spec.share.mig_profile, "%s", tj->mig_profile);
    spec.priority = fifo ? 0 : tj->priority;
    spec.checkpoint_grace_s = tj->grace_s;
    spec.expected_runtime_s = tj->duration > 0 ? tj->duration : 0;
    return spec;
}

static void arrive(sim *s, uint32_t j)
{
    const gp_trace_job *tj = &s->setup->trace->jobs[j];
    gp_job_spec spec = job_spec(s, j);
    gp_error err;
    s->r->events++;
    s->arrived_milli += gp_trace_job_milli(tj);
    if (gp_engine_job_submit(s->e, &spec, s->now, &err) != GP_OK) {
        if (s->r->rejected++ == 0)
            snprintf(s->r->first_rejection, sizeof s->r->first_rejection, "job %llu: %s: %s",
                     (unsigned long long)tj->id, err.field, err.message);
        s->jobs[j].state = JOB_OVER;
        s->r->jobs[j].outcome = GP_SIM_REJECTED;
        return;
    }
    s->demand_milli += gp_trace_job_milli(tj);
    s->jobs[j].state = JOB_PENDING;
    s->jobs[j].pending_since = s->now;
    s->jobs[j].remaining = tj->duration;
    note_pending(s, j, +1);
    carry_out(s);
}

/* A queued event; returns whether it calls for a scheduling pass. */
static bool deliver(sim *s, const gp_event *ev)
{
    sim_job *sj = &s->jobs[ev->job];
    s->r->events++;
    if (ev->epoch != sj->epoch || (sj->state != JOB_RUNNING && sj->state != JOB_PREEMPTING))
        return ev->kind == GP_EV_WAKE;
    if (ev->kind == GP_EV_END) {
        gp_engine_job_finished(s->e, ev->job + 1, GP_EXIT_SUCCEEDED, s->now, NULL);
        carry_out(s);
        finish(s, ev->job, GP_SIM_DONE);
        return true;
    }
    if (ev->kind == GP_EV_CHECKPOINT) {
        gp_engine_job_checkpointed(s->e, ev->job + 1, s->now, NULL);
        sj->saved = s->now;
        int64_t next = s->now + s->opt->checkpoint_interval_s;
        if (sj->state == JOB_RUNNING && s->opt->checkpoint_interval_s > 0 &&
            (sj->remaining < 0 || next < sj->run_start + sj->remaining))
            push(s, next, GP_EV_CHECKPOINT, ev->job);
        return false;
    }
    return true; /* wake-up at a grace deadline */
}

/* fail_unplaced: arrivals of this batch that are still pending fail. */
static void fail_unplaced(sim *s)
{
    for (size_t j = s->batch_first; j < s->batch_end; j++) {
        if (s->jobs[j].state != JOB_PENDING)
            continue;
        gp_engine_job_cancel(s->e, j + 1, s->now, NULL);
        carry_out(s);
        finish(s, (uint32_t)j, GP_SIM_FAILED);
    }
}

static int64_t next_time(const sim *s, bool *any)
{
    const gp_trace *t = s->setup->trace;
    const gp_event *ev = gp_event_peek(&s->q);
    *any = ev || s->next_arrival < t->n_jobs;
    int64_t a = s->next_arrival < t->n_jobs ? t->jobs[s->next_arrival].submit : INT64_MAX;
    int64_t b = ev ? ev->time : INT64_MAX;
    return a < b ? a : b;
}

/* Deliver everything up to tick_at in time order; true when a pass is due. */
static bool deliver_until(sim *s, int64_t tick_at)
{
    const gp_trace *t = s->setup->trace;
    bool pass = false;
    s->batch_first = s->next_arrival;
    for (;;) {
        const gp_event *ev = gp_event_peek(&s->q);
        int64_t a = s->next_arrival < t->n_jobs ? t->jobs[s->next_arrival].submit : INT64_MAX;
        int64_t b = ev ? ev->time : INT64_MAX;
        int64_t at = a < b ? a : b;
        if (at > tick_at)
            break;
        advance(s, at);
        if (a <= b) {
            arrive(s, (uint32_t)s->next_arrival++);
            pass = true;
        } else {
            gp_event copy = *ev;
            gp_event_pop(&s->q);
            pass = deliver(s, &copy) || pass;
        }
    }
    s->batch_end = s->next_arrival;
    return pass;
}

/* Tell the caller where the run is, every PROGRESS_STEPS steps of the loop. */
static void report_progress(const sim *s, uint64_t step)
{
    enum { PROGRESS_STEPS = 16 };
    if (!s->opt->progress || step % PROGRESS_STEPS)
        return;
    gp_sim_point at = {.now = s->now, .t_first_arrival = s->r->t_first_arrival,
                       .t_last_arrival = s->r->t_last_arrival, .events = s->r->events};
    s->opt->progress(s->opt->progress_ctx, &at);
}

static gp_err run_loop(sim *s, gp_error *err)
{
    bool any;
    uint64_t step = 0;
    for (int64_t t = next_time(s, &any); any && !s->oom; t = next_time(s, &any)) {
        report_progress(s, step++);
        int64_t q = s->opt->quantum_s;
        int64_t tick_at = q > 0 ? (t + q - 1) / q * q : t;
        if (!deliver_until(s, tick_at))
            continue;
        advance(s, tick_at);
        gp_err rc = gp_engine_tick(s->e, tick_at, err);
        if (rc)
            return rc;
        s->r->ticks++;
        carry_out(s);
        if (s->opt->fail_unplaced)
            fail_unplaced(s);
        if (s->opt->record_arrivals && s->batch_end > s->batch_first)
            record_arrival_point(s);
    }
    if (s->oom)
        return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory during the simulation");
    return GP_OK;
}

/* ---- setup and results ---- */

static gp_err prepare(sim *s, const gp_sim_setup *setup, const gp_sim_policy *policy, gp_sim_result *r,
                      gp_error *err)
{
    const gp_trace *t = setup->trace;
    memset(r, 0, sizeof *r);
    r->policy = *policy;
    r->n_jobs = t->n_jobs;
    r->jobs = calloc(t->n_jobs ? t->n_jobs : 1, sizeof *r->jobs);
    s->jobs = calloc(t->n_jobs ? t->n_jobs : 1, sizeof *s->jobs);
    if (!r->jobs || !s->jobs)
        return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    for (size_t j = 0; j < t->n_jobs; j++) {
        r->jobs[j].first_start = r->jobs[j].end = -1;
        if (t->jobs[j].id != j + 1 || (j > 0 && t->jobs[j].submit < t->jobs[j - 1].submit))
            return gp_error_set(err, GP_ERR_INVALID, "trace", "the trace must be sorted by submit time (job %zu)",
                                j + 1);
    }
    gp_err rc = gp__sim_groups(setup, r, err);
    if (rc)
        return rc;
    s->group_usage = calloc(r->n_groups ? r->n_groups : 1, sizeof *s->group_usage);
    if (!s->group_usage)
        return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    rc = gp__sim_engine_new(setup, policy, s->opt, &s->e, &s->tenant_of, err);
    if (rc == GP_OK)
        rc = gp__sim_entitlements(setup, policy, s->e, r, err);
    if (rc)
        return rc;
    gp_res cap;
    gp_engine_fleet_capacity(s->e, &cap);
    for (int ty = 0; ty < GP_MAX_GPU_TYPES; ty++)
        r->capacity_milli += cap.v[ty];
    r->t_first_arrival = t->n_jobs ? t->jobs[0].submit : 0;
    r->t_last_arrival = t->n_jobs ? t->jobs[t->n_jobs - 1].submit : 0;
    s->now = r->t_first_arrival;
    s->next_sample = r->t_first_arrival;
    if (s->opt->ledger) /* the world exists from simulated time 0 (or the first arrival, when earlier) */
        gp_sim_ledger_start(s->opt->ledger, s->e, policy->kind == GP_SIM_FIFO ? NULL : setup->tenants,
                            r->t_first_arrival < 0 ? r->t_first_arrival : 0);
    for (int b = 0; b < t->n_types; b++) {
        int ty = gpu_type_index(s->e, t->types[b]);
        s->type_bits[b] = ty >= 0 ? 1u << ty : 0;
    }
    rc = gp_sim_fairness_init(&s->fair, r->n_groups, r->group_entitlement, &r->fair_tree,
                              gp_engine_gpu_type_count(s->e), cap.v, r->t_first_arrival, err);
    return rc ? rc
              : gp_sim_share_init(&s->share, r->n_groups, &r->fair_tree, gp_engine_gpu_type_count(s->e), cap.v,
                                  r->t_first_arrival, err);
}

/* Jobs never placed wait until the end of the run. */
static void close_waits(sim *s)
{
    for (size_t j = 0; j < s->r->n_jobs; j++)
        if (s->jobs[j].state == JOB_PENDING)
            s->r->jobs[j].wait_s += s->now - s->jobs[j].pending_since;
}

gp_err gp_sim_run(const gp_sim_setup *setup, const gp_sim_policy *policy, const gp_sim_options *opt,
                  gp_sim_result *out, gp_error *err)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gp_sim_options o = *opt;
    const gp_trace *t = setup->trace;
    if (o.sample_interval_s <= 0) {
        int64_t span = t->n_jobs ? t->jobs[t->n_jobs - 1].submit - t->jobs[0].submit : 0;
        o.sample_interval_s = span / 400 > 0 ? span / 400 : 1;
    }
    sim s;
    memset(&s, 0, sizeof s);
    s.setup = setup;
    s.opt = &o;
    s.r = out;
    gp_err rc = prepare(&s, setup, policy, out, err);
    if (rc == GP_OK)
        rc = run_loop(&s, err);
    if (rc == GP_OK) {
        close_waits(&s);
        out->t_end = s.now;
        out->fair_hours = gp_sim_fairness_take_hours(&s.fair, &out->n_fair_hours);
        if (!gp_sim_share_take(&s.share, s.now, &out->share))
            rc = gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    }
    gp_engine_free(s.e);
    gp_event_queue_free(&s.q);
    free(s.jobs);
    free(s.group_usage);
    free(s.tenant_of);
    gp_sim_fairness_free(&s.fair);
    gp_sim_share_free(&s.share);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (rc)
        gp_sim_result_free(out);
    return rc;
}

void gp_sim_result_free(gp_sim_result *r)
{
    free(r->jobs);
    free(r->groups);
    free(r->job_group);
    free(r->group_guarantee_milli);
    free(r->group_entitlement);
    gp_sim_fair_tree_free(&r->fair_tree);
    free(r->fair_hours);
    gp_sim_share_result_free(&r->share);
    free(r->samples);
    free(r->group_usage);
    free(r->arrival_arrived);
    free(r->arrival_allocated);
    memset(r, 0, sizeof *r);
}

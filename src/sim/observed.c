/* observed.c - replaying what the source scheduler did, to measure it.
 *
 * See observed.h.  No engine decides anything here: the observed starts
 * and ends are events (ends first at a time, then submits, then starts,
 * so a GPU freed at t is free for a start at t), and between events the
 * same bookkeeping as simulator.c's runs: allocation integrated over the
 * arrival window, samples every sample step, the fairness tracker fed
 * each group's usage per GPU type and pending count.  An engine is built
 * only to read the fleet's capacity and the groups' entitlements the way
 * a gpupool run reads them.
 *
 * Example: 8 h100, job 1 (vision, 8 GPUs) submitted at 0, started at 0,
 * ended at 100; job 2 (nlp, 4 GPUs) submitted at 10, started at 100:
 * waits 0 and 90, allocation over the window [0, 10] is 100 %.
 */
#include "sim/observed.h"

#include <stdlib.h>
#include <string.h>

#include "sim/setup.h"

enum { EV_END, EV_SUBMIT, EV_START };

typedef struct observed_event {
    int64_t t;
    int kind;
    uint32_t job;
} observed_event;

typedef struct observed {
    const gp_trace *t;
    gp_sim_result *r;
    gp_engine *e;
    gp_sim_fairness fair;
    int64_t now, next_sample, step, allocated, demand;
    int64_t *group_usage;
    int32_t pending, running;
    size_t cap_samples;
    int type_of[GP_MAX_GPU_TYPES]; /* trace type -> engine type */
} observed;

bool gp_sim_trace_observed(const gp_trace *t)
{
    for (size_t j = 0; j < t->n_jobs; j++)
        if (t->jobs[j].observed)
            return true;
    return false;
}

static int by_time(const void *a, const void *b)
{
    const observed_event *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    return (x->job > y->job) - (x->job < y->job);
}

static void take_sample(observed *o, int64_t at)
{
    gp_sim_result *r = o->r;
    if (r->n_samples == o->cap_samples)
        return;
    gp_sim_sample *p = &r->samples[r->n_samples];
    memset(p, 0, sizeof *p);
    p->t = at;
    p->allocated_milli = o->allocated;
    p->demand_milli = o->demand;
    p->pending = o->pending;
    p->running = o->running;
    memcpy(r->group_usage + r->n_samples * r->n_groups, o->group_usage, r->n_groups * sizeof *o->group_usage);
    r->n_samples++;
}

/* Move the clock to t, as simulator.c's advance does. */
static bool advance(observed *o, int64_t t)
{
    gp_sim_result *r = o->r;
    int64_t from = o->now > r->t_first_arrival ? o->now : r->t_first_arrival;
    int64_t to = t < r->t_last_arrival ? t : r->t_last_arrival;
    if (to > from)
        r->allocated_gpu_s += (double)o->allocated * (double)(to - from) / 1000.0;
    r->delivered_gpu_s += (double)o->allocated * (double)(t - o->now) / 1000.0;
    while (o->next_sample < t && o->next_sample <= r->t_last_arrival) {
        take_sample(o, o->next_sample);
        o->next_sample += o->step;
    }
    o->now = t;
    return gp_sim_fairness_advance(&o->fair, t);
}

static void apply(observed *o, const observed_event *ev)
{
    const gp_trace_job *tj = &o->t->jobs[ev->job];
    size_t g = o->r->job_group[ev->job];
    int64_t milli = gp_trace_job_milli(tj);
    int type = tj->observed_type >= 0 && tj->observed_type < GP_MAX_GPU_TYPES ? o->type_of[tj->observed_type] : 0;
    if (ev->kind == EV_SUBMIT) {
        o->demand += milli;
        o->pending++;
        gp_sim_fairness_pending(&o->fair, o->now, g, +1);
    } else if (ev->kind == EV_START) {
        o->pending--;
        o->running++;
        o->allocated += milli;
        o->group_usage[g] += milli;
        gp_sim_fairness_pending(&o->fair, o->now, g, -1);
        gp_sim_fairness_usage(&o->fair, o->now, g, type < 0 ? 0 : type, milli);
    } else {
        o->running--;
        o->demand -= milli;
        o->allocated -= milli;
        o->group_usage[g] -= milli;
        gp_sim_fairness_usage(&o->fair, o->now, g, type < 0 ? 0 : type, -milli);
    }
}

/* Per-job figures and the three events of each observed job. */
static size_t job_events(const gp_trace *t, gp_sim_result *r, observed_event *ev)
{
    size_t n = 0;
    for (size_t j = 0; j < t->n_jobs; j++) {
        const gp_trace_job *tj = &t->jobs[j];
        gp_sim_job_result *jr = &r->jobs[j];
        if (!tj->observed) {
            jr->first_start = jr->end = -1;
            jr->outcome = GP_SIM_REJECTED;
            continue;
        }
        jr->first_start = tj->observed_start;
        jr->end = tj->observed_end;
        jr->wait_s = tj->observed_start - tj->submit;
        jr->outcome = GP_SIM_DONE;
        jr->preemptions = tj->observed_preempted ? 1 : 0;
        jr->lost_gpu_s = tj->observed_preempted ? (tj->observed_end - tj->observed_start) * gp_trace_job_milli(tj) / 1000 : 0;
        ev[n++] = (observed_event){tj->submit, EV_SUBMIT, (uint32_t)j};
        ev[n++] = (observed_event){tj->observed_start, EV_START, (uint32_t)j};
        ev[n++] = (observed_event){tj->observed_end, EV_END, (uint32_t)j};
    }
    qsort(ev, n, sizeof *ev, by_time);
    return n;
}

static gp_err prepare(observed *o, const gp_sim_setup *setup, const gp_sim_options *opt, const char *name,
                      gp_error *err)
{
    gp_sim_result *r = o->r;
    const gp_trace *t = setup->trace;
    gp_sim_policy pol;
    gp_sim_policy_parse("gpupool", &pol);
    r->policy = pol;
    snprintf(r->policy.name, sizeof r->policy.name, "%s", name);
    r->n_jobs = t->n_jobs;
    r->jobs = calloc(t->n_jobs ? t->n_jobs : 1, sizeof *r->jobs);
    if (!r->jobs)
        return gp_error_set(err, GP_ERR_NOMEM, "observed", "out of memory");
    char(*tenant_of)[GP_PATH_MAX] = NULL;
    gp_err rc = gp__sim_groups(setup, r, err);
    if (rc == GP_OK)
        rc = gp__sim_engine_new(setup, &pol, opt, &o->e, &tenant_of, err);
    free(tenant_of);
    if (rc == GP_OK)
        rc = gp__sim_entitlements(setup, &pol, o->e, r, err);
    if (rc)
        return rc;
    gp_res cap;
    gp_engine_fleet_capacity(o->e, &cap);
    for (int ty = 0; ty < GP_MAX_GPU_TYPES; ty++)
        r->capacity_milli += cap.v[ty];
    for (int i = 0; i < t->n_types; i++) {
        o->type_of[i] = -1;
        for (int ty = 0; ty < gp_engine_gpu_type_count(o->e); ty++)
            if (strcmp(gp_engine_gpu_type_name(o->e, ty), t->types[i]) == 0)
                o->type_of[i] = ty;
    }
    r->t_first_arrival = t->n_jobs ? t->jobs[0].submit : 0;
    r->t_last_arrival = t->n_jobs ? t->jobs[t->n_jobs - 1].submit : 0;
    int64_t span = r->t_last_arrival - r->t_first_arrival;
    o->step = opt->sample_interval_s > 0 ? opt->sample_interval_s : (span / 400 > 0 ? span / 400 : 1);
    o->cap_samples = (size_t)(span / o->step) + 2;
    o->now = o->next_sample = r->t_first_arrival;
    r->samples = calloc(o->cap_samples, sizeof *r->samples);
    r->group_usage = calloc(o->cap_samples * (r->n_groups ? r->n_groups : 1), sizeof *r->group_usage);
    o->group_usage = calloc(r->n_groups ? r->n_groups : 1, sizeof *o->group_usage);
    if (!r->samples || !r->group_usage || !o->group_usage)
        return gp_error_set(err, GP_ERR_NOMEM, "observed", "out of memory");
    return gp_sim_fairness_init(&o->fair, r->n_groups, r->group_entitlement, &r->fair_tree,
                                gp_engine_gpu_type_count(o->e), cap.v, r->t_first_arrival, err);
}

static gp_err replay(observed *o, gp_error *err)
{
    observed_event *ev = malloc((o->t->n_jobs ? o->t->n_jobs : 1) * 3 * sizeof *ev);
    if (!ev)
        return gp_error_set(err, GP_ERR_NOMEM, "observed", "out of memory");
    size_t n = job_events(o->t, o->r, ev);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        ok = ev[i].t <= o->now || advance(o, ev[i].t);
        apply(o, &ev[i]);
    }
    o->r->t_end = o->now;
    free(ev);
    if (!ok)
        return gp_error_set(err, GP_ERR_NOMEM, "observed", "out of memory");
    o->r->fair_hours = gp_sim_fairness_take_hours(&o->fair, &o->r->n_fair_hours);
    return GP_OK;
}

gp_err gp_sim_observed(const gp_sim_setup *setup, const gp_sim_options *opt, const char *name, gp_sim_result *out,
                       gp_error *err)
{
    observed o;
    memset(&o, 0, sizeof o);
    memset(out, 0, sizeof *out);
    o.t = setup->trace;
    o.r = out;
    gp_err rc = prepare(&o, setup, opt, name, err);
    if (rc == GP_OK)
        rc = replay(&o, err);
    gp_engine_free(o.e);
    free(o.group_usage);
    gp_sim_fairness_free(&o.fair);
    if (rc)
        gp_sim_result_free(out);
    return rc;
}

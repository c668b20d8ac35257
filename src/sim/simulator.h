/* simulator.h - the discrete-event loop that drives the real engine.
 *
 * gp_sim_run replays a trace against a fresh gp_engine configured for one
 * policy, and records what happened to every job plus time series for the
 * reports.  The engine is the production src/core code, untouched: the
 * simulator only feeds it events with `now` and carries out its decisions,
 * exactly as the daemon will.
 *
 * The loop (simulator.c has the details and a worked example):
 *   events   job arrivals (from the trace, in submit order), job ends
 *            (bind time + remaining work), periodic checkpoints, and
 *            wake-ups at grace deadlines;
 *   ticks    after each batch of events at one time (or, with a quantum,
 *            at most once per quantum), gp_engine_tick(now) runs a pass;
 *   decisions BIND starts a job, PREEMPT signals it (it keeps running
 *            through its grace), a requeue (TRANSITION to pending) puts
 *            back the work done since its last checkpoint, USAGE_OPEN /
 *            CLOSE move the allocation counters.
 *
 * Policies (gp_sim_policy), all on the same engine:
 *   gpupool   the tenant file as written: guarantees, borrowing, DRF,
 *             reclaim; gpupool's default placement score;
 *   static    static partitioning: every tenant with a guarantee gets a
 *             limit equal to it (types it does not list: 0), so nobody
 *             borrows;
 *   fifo      one FIFO queue with backfill and no quotas: every job goes to
 *             a single tenant "fifo" at priority 0; inside one leaf the
 *             engine orders by priority then submit time, i.e. FIFO, and
 *             its EASY backfill lets later jobs run when they do not delay
 *             the head;
 *   bestfit, fgd, random, dotprod, clustering, packing, spread: gpupool
 *             with that placement score on every pool (the FGD paper's
 *             policies).
 *
 * Ownership: gp_sim_run fills a caller-owned gp_sim_result whose arrays it
 * allocates; gp_sim_result_free releases them.  The setup is only read.
 */
#ifndef GP_SIM_SIMULATOR_H
#define GP_SIM_SIMULATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/fleet_file.h"
#include "config/tenant_file.h"
#include "core/engine.h"
#include "sim/fairness.h"
#include "sim/ledger.h"
#include "sim/share.h"
#include "sim/trace.h"

typedef enum gp_sim_policy_kind { GP_SIM_GPUPOOL = 0, GP_SIM_STATIC, GP_SIM_FIFO } gp_sim_policy_kind;

typedef struct gp_sim_policy {
    char name[32];
    gp_sim_policy_kind kind;
    bool set_score;           /* configure every pool with `score` */
    gp_score score;
} gp_sim_policy;

/* "gpupool", "static", "fifo", or a score name; false when unknown. */
bool gp_sim_policy_parse(const char *name, gp_sim_policy *out);

/* Where a run is, reported to gp_sim_options.progress (progress.h draws it). */
typedef struct gp_sim_point {
    int64_t now, t_first_arrival, t_last_arrival;
    uint64_t events;
} gp_sim_point;

typedef struct gp_sim_options {
    int64_t quantum_s;             /* 0: tick at every event time; q: at most one tick per q seconds */
    int64_t checkpoint_interval_s; /* running jobs checkpoint this often; 0: never (restart from scratch) */
    int64_t checkpoint_save_s;     /* a job whose grace is at least this saves a checkpoint when preempted */
    bool fail_unplaced;            /* a job still pending after the tick that follows its arrival fails */
    bool record_arrivals;          /* keep (arrived, allocated) after every tick with an arrival */
    int64_t sample_interval_s;     /* time series step; 0: about 400 samples over the run */
    uint64_t seed;                 /* seed of the random placement score */
    void (*progress)(void *ctx, const gp_sim_point *at); /* NULL, or called every few steps of the loop */
    void *progress_ctx;
    gp_engine_config engine;
    gp_sim_ledger *ledger;         /* where the run's usage ledger goes (sim/ledger.h); NULL: nowhere */
} gp_sim_options;

gp_sim_options gp_sim_options_default(void);

/* What a simulation runs: a fleet, a tenant tree and a trace.  Trace
 * tenants missing from the tenant file are created without quotas. */
typedef struct gp_sim_setup {
    const gp_fleet_file *fleet;
    const gp_tenant_file *tenants; /* may be NULL */
    const gp_trace *trace;
} gp_sim_setup;

typedef enum gp_sim_outcome {
    GP_SIM_UNFINISHED = 0, /* still pending or running when the events ran out */
    GP_SIM_DONE,
    GP_SIM_FAILED,         /* fail_unplaced: could not be placed at arrival */
    GP_SIM_REJECTED        /* the engine refused the job spec */
} gp_sim_outcome;

typedef struct gp_sim_job_result {
    int64_t first_start;   /* -1: never started */
    int64_t end;           /* -1: not finished */
    int64_t wait_s;        /* time spent pending, requeues included (until the end of the run if never placed) */
    int64_t lost_gpu_s;    /* GPU-seconds of work lost to preemption */
    int32_t preemptions;
    uint8_t outcome;       /* gp_sim_outcome */
    bool within_guarantee; /* its group's ideal demand fit under the group's guarantee at submit */
} gp_sim_job_result;

/* One point of the time series. */
typedef struct gp_sim_sample {
    int64_t t;
    int64_t allocated_milli;   /* GPUs in use */
    int64_t arrived_milli;     /* GPUs asked for by jobs that arrived so far (cumulative) */
    int64_t demand_milli;      /* GPUs asked for by jobs arrived and not finished */
    int64_t stranded_milli;    /* free GPUs on partly used nodes */
    int32_t pending, running;
} gp_sim_sample;

typedef struct gp_sim_result {
    gp_sim_policy policy;
    gp_sim_job_result *jobs;   /* indexed like trace->jobs */
    size_t n_jobs;
    /* report groups: each trace tenant reports under its nearest ancestor-or-self with a guarantee */
    char (*groups)[GP_PATH_MAX];
    size_t n_groups;
    uint32_t *job_group;       /* n_jobs */
    int64_t *group_guarantee_milli;
    double *group_entitlement; /* n_groups: the share of the fleet each is entitled to (fairness.h) */
    gp_sim_fair_tree fair_tree; /* the tenant tree above the groups (fairness.h) */
    gp_sim_fair_hour *fair_hours; /* every full hour of the run: backlogged groups, Jain's index */
    size_t n_fair_hours;
    gp_sim_share_result share; /* GPU-hours received against the fair share, per group and day (share.h) */
    gp_sim_sample *samples;
    size_t n_samples;
    int64_t *group_usage;      /* n_samples x n_groups, milli-GPUs */
    int64_t *arrival_arrived, *arrival_allocated; /* record_arrivals: one pair per tick with arrivals */
    size_t n_arrivals;
    int64_t capacity_milli;    /* healthy GPUs of the fleet */
    int64_t t_first_arrival, t_last_arrival, t_end;
    double allocated_gpu_s;    /* integral of allocation over [first, last arrival] */
    double delivered_gpu_s;    /* integral of allocation over the whole run (work lost later included) */
    uint64_t events, ticks, preemptions;
    size_t rejected;
    char first_rejection[GP_ERROR_MESSAGE_MAX];
    double wall_s;
} gp_sim_result;

gp_err gp_sim_run(const gp_sim_setup *setup, const gp_sim_policy *policy, const gp_sim_options *opt,
                  gp_sim_result *out, gp_error *err);
void gp_sim_result_free(gp_sim_result *r);

#endif

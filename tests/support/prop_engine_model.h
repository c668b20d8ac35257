/* prop_engine_model.h - the engine property test's own model of the engine.
 *
 * tests/property/test_engine_properties.c drives the engine with random
 * events; this is the other half: the books it keeps from the decisions the
 * engine emits (GPU owners, job states, usage intervals, preemptions), the
 * per-event property checks P1-P9 and the failure log.  Read the test
 * file's opening comment for the properties themselves.
 *
 * Ownership: a `sim` is the caller's (usually on the stack); nothing here
 * allocates except what sim_free() in the test releases.
 */
#ifndef GP_TESTS_SUPPORT_PROP_ENGINE_MODEL_H
#define GP_TESTS_SUPPORT_PROP_ENGINE_MODEL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"

#define PROP_DEFAULT_SEQUENCES 1000
#define PROP_DEFAULT_SEED 0x67707570ULL
#define PROP_DETERMINISM_SEQUENCES 16

#define PROP_MAX_TYPES 3
#define PROP_MAX_BLOCKS 6
#define PROP_MAX_NODES_PER_BLOCK 6
#define PROP_MAX_NODES (PROP_MAX_BLOCKS * PROP_MAX_NODES_PER_BLOCK)
#define PROP_MAX_NODE_GPUS 8
#define PROP_MAX_GPUS (PROP_MAX_NODES * PROP_MAX_NODE_GPUS)
#define PROP_MAX_TENANTS (3 + 9 + 27)
#define PROP_MIN_EVENTS 100
#define PROP_MAX_EVENTS 300
#define PROP_MAX_JOBS (PROP_MAX_EVENTS + 1)
#define PROP_MAX_REPLICAS 4
#define PROP_MAX_JOB_GPUS (PROP_MAX_REPLICAS * PROP_MAX_NODE_GPUS)
#define PROP_GRACE_MAX 120   /* largest checkpoint_grace_s we submit */
#define PROP_COOLDOWN 600    /* gp_engine_config_default().preempt_cooldown_s */
#define PROP_MAX_PREEMPTIONS 3 /* gp_engine_config_default().max_preemptions */
#define PROP_LOG_LINES 40
#define PROP_LOG_LEN 256
#define PROP_MAX_CONFLICTS 256
#define PROP_USERS 3         /* users u0..u2 (and jobs without a user) */
#define PROP_TIMESLICE 4     /* time-slice replicas per GPU (default pool) */


extern const char *const prop_type_names[PROP_MAX_TYPES];

typedef struct prop_rng {
    uint64_t state;
} prop_rng;

typedef struct sim_node {
    char name[GP_NAME_MAX];
    char zone[GP_NAME_MAX];
    char block[GP_NAME_MAX];
    int type;                 /* our type index (into sim.type_name) */
    int gpu_count;
    int nvlink_domains;
    uint32_t gpu_first;       /* from gp_engine_node_get */
    bool up;                  /* not lost */
    bool draining;            /* from the engine after each event */
    gp_sharing sharing;       /* mode of all its GPUs */
} sim_node;

typedef struct sim_tenant {
    char path[GP_PATH_MAX];
    int parent;               /* our index, -1 for an org */
    int depth;
    bool leaf;
    gp_tenant_spec spec;      /* what the engine last accepted */
    uint32_t engine_index;
    bool limit_relaxed;       /* a change of its own put usage over its limit */
    bool guarantee_relaxed;   /* a change of its own put guaranteed usage over its guarantee */
    bool user_relaxed;        /* leaf: a tenant change put one of its users over the user limit */
} sim_tenant;

typedef struct sim_job {
    uint64_t id;
    int tenant;               /* our tenant index, a leaf */
    gp_job_spec spec;
    unsigned accepts;         /* bit i: engine GPU type i is accepted */
    gp_job_state state;       /* as the TRANSITION decisions say */
    bool bound;               /* between BIND and the release transition */
    bool forgotten;
    int n_gpus;
    uint32_t gpus[PROP_MAX_JOB_GPUS];
    int bound_type;           /* engine type index while bound */
    int64_t bind_time;
    gp_class cls;             /* of its open usage interval */
    int open_intervals;
    uint64_t open_id;
    int64_t open_start;
    int64_t open_milli;
    int64_t deadline;         /* PREEMPTING: decision time + grace */
    bool preempted;           /* PREEMPTING because of a PREEMPT */
    int preemptions;          /* PREEMPTs of it so far (reclaim and trust) */
    uint64_t preempted_by;    /* its PREEMPT's by_job */
    bool stopping;            /* PREEMPTING because of a STOP */
    bool cancel_asked;        /* a cancel was accepted while it held GPUs */
    int restarts;             /* requeued after failures (restart_policy on-failure) */
    int64_t eligible_at;      /* after a restart: not placed before (its back-off), else 0 */
    gp_wait_code wait;        /* from gp_engine_job_info while pending */
    bool shared;              /* mig/mps/timeslice: one slice of one GPU per replica */
    int64_t slice_milli;      /* shared: what one replica is charged (MIG c/7, MPS share, 1000/4) */
    int user;                 /* 0..PROP_USERS-1, -1 without a user */
    bool trust_preempted;     /* PREEMPTING because its tenant became untrusted */
    bool withdrawn;           /* a preemption of this run was withdrawn: a stop report requeues it */
    /* P4 bookkeeping */
    bool elig_active;         /* condition held after every event since it was set */
    int64_t elig_t1;          /* first tick whose pass saw the condition; -1 = none yet */
} sim_job;

typedef struct preempt_record {
    uint64_t victim, by;
    int64_t time;
} preempt_record;

typedef struct gpu_conflict {
    uint32_t gpu;
    uint64_t new_job, old_job;
} gpu_conflict;

typedef struct prop_counters {
    uint64_t sequences, events, binds, preemptions, stops, rejected_tenant_changes,
        accepted_tenant_changes, p4_windows, p4_bound_in_window, promotions,
        invalid_calls, shared_binds, trust_preemptions, trust_refusals, user_limit_waits;
} prop_counters;

typedef struct sim {
    gp_engine *e;
    prop_rng rng;
    uint64_t seed;
    int event_index;
    int snapshot_at;          /* the event after which the engine is swapped for a
                                 restore of its snapshot; -1 = never */
    int64_t now;
    uint64_t hash;
    bool verbose;
    prop_counters *counters;

    /* fleet */
    int n_types;
    char type_name[PROP_MAX_TYPES][GP_NAME_MAX];
    int type_engine[PROP_MAX_TYPES];      /* our type -> engine type index */
    int64_t type_capacity[PROP_MAX_TYPES]; /* milli-GPUs of the fleet as built */
    int n_nodes;
    sim_node nodes[PROP_MAX_NODES];
    int n_gpus;
    uint64_t owner[PROP_MAX_GPUS];        /* job holding the GPU, 0 = free */
    int gpu_node[PROP_MAX_GPUS];
    bool gpu_healthy[PROP_MAX_GPUS];      /* from the engine after each event */
    bool two_domains;
    int n_shared_nodes;                   /* nodes in mig, mps or timeslice mode */

    /* tenants */
    int n_tenants;
    sim_tenant tenants[PROP_MAX_TENANTS];
    int n_leaves;
    int leaves[PROP_MAX_TENANTS];
    gp_tenant_info tinfo[PROP_MAX_TENANTS];
    bool any_guarantee;

    int64_t user_usage[PROP_MAX_TENANTS][PROP_USERS][GP_DIMS]; /* per leaf and user, refreshed by P9 */

    /* jobs: id = index + 1 */
    int n_jobs;
    sim_job jobs[PROP_MAX_JOBS];

    /* metering */
    int64_t alloc_milli;      /* sum over bound jobs */
    int64_t alloc_integral;   /* our integral of alloc_milli over time */
    int64_t closed_sum;       /* sum over closed intervals of milli x (end - start) */
    int64_t open_milli;       /* sum over open intervals of milli */
    int64_t open_milli_start; /* sum over open intervals of milli x start */
    uint64_t *interval_ids;   /* open-addressing set of every interval id seen */
    size_t interval_cap, interval_count;

    /* preemptions seen */
    preempt_record *pre;
    size_t n_pre, cap_pre;

    /* per-batch scratch */
    gpu_conflict conflicts[PROP_MAX_CONFLICTS];
    int n_conflicts;
    int drained[PROP_MAX_NODES];
    int n_drained;

    /* event log (ring) and failure */
    char log[PROP_LOG_LINES][PROP_LOG_LEN];
    int log_next;
    jmp_buf fail_jmp;
    char fail_text[1024];
} sim;

/* ---- the model's entry points ---- */

int pe_rng_int(prop_rng *r, int lo, int hi);
bool pe_rng_pct(prop_rng *r, int percent);
void pe_sim_fail(sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
void pe_sim_log(sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pe_sim_print_log(const sim *s);
void pe_hash_i64(sim *s, int64_t v);
void pe_quota_clear(gp_quota *q, bool set);
void pe_quota_put(gp_quota *q, const char *type, int64_t milli);
int64_t pe_quota_get(const gp_quota *q, const char *type);
bool pe_tenant_info_same(const gp_tenant_info *a, const gp_tenant_info *b);
void pe_read_tenants(sim *s, gp_tenant_info *out);
void pe_process_decisions(sim *s);
void pe_check_fleet(sim *s);
void pe_check_jobs(sim *s, bool is_tick);
void pe_check_tenants(sim *s);
void pe_check_metering(sim *s);
void pe_check_guarantee_progress(sim *s, bool is_tick, bool changed);
void pe_check_sharing(sim *s, bool is_tick);
void pe_check_users(sim *s);
/* Our books' view of a tenant: its org (top-level index) and effective
 * trust (the floor: untrusted if it or an ancestor says so). */
int pe_org_of(const sim *s, int t);
bool pe_untrusted(const sim *s, int t);
/* After an accepted tenant change: leaves whose users it put over their
 * user limit are exempt from P9 until they are back under. */
void pe_mark_user_relaxed(sim *s);

#endif

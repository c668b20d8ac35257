/* types.h - the public vocabulary of the scheduling engine.
 *
 * Everything a caller (daemon, simulator, tests) passes into the engine or
 * reads back out of it is declared here: resource vectors, the specs of
 * nodes, tenants and jobs, job states, wait reasons and decisions.  The
 * engine itself is opaque (engine.h).
 *
 * Units: GPU amounts are milli-GPUs (1000 = one whole GPU), CPU is
 * millicores, memory is MiB, time is whole seconds on the caller's clock.
 *
 * Ownership: every struct here is plain data owned by whoever declared it.
 * String pointers inside specs are only read during the call they are
 * passed to; the engine copies what it keeps.
 */
#ifndef GP_CORE_TYPES_H
#define GP_CORE_TYPES_H

#include "util/stop_signal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_MAX_GPU_TYPES 8       /* distinct GPU models in one fleet */
#define GP_MAX_GPUS_PER_NODE 16
#define GP_MAX_REPLICAS 4096
#define GP_NAME_MAX 64           /* node, block, zone, type, user, tenant segment */
#define GP_PATH_MAX 192          /* tenant path "org/team/project" */
#define GP_REASON_MAX 192
#define GP_UUID_MAX 48
#define GP_MAX_TENANT_DEPTH 4    /* org/team/project/(sub-project) */
#define GP_PRIORITY_MIN (-1000)
#define GP_PRIORITY_MAX 1000
#define GP_GRACE_MAX_S 86400
#define GP_TIME_LIMIT_MAX_S (INT64_C(1) << 40) /* time limits: 1..this seconds */
#define GP_BOOKING_NAME_MAX 48   /* a booking's name with its NUL (booking.h); an occurrence adds ".N" */

/* Resource vector: one dimension per GPU type (milli-GPUs), then CPU and
 * memory.  The GPU type of dimension i is whatever the engine registered as
 * type i (gp_engine_gpu_type_name). */
enum { GP_DIM_CPU = GP_MAX_GPU_TYPES, GP_DIM_MEM = GP_MAX_GPU_TYPES + 1, GP_DIMS = GP_MAX_GPU_TYPES + 2 };

/* "No bound": a limit dimension that is not set. */
#define GP_UNLIMITED INT64_MAX

typedef struct gp_res {
    int64_t v[GP_DIMS];
} gp_res;

/* ---- fleet ---------------------------------------------------------- */

/* How a GPU is shared (set per node, or per GPU, by the operator):
 *   exclusive  one job per GPU (whole GPUs);
 *   mig        partitioned into MIG instances (profiles with placement slots);
 *   mps        several processes with a share of SMs and a memory limit each;
 *   timeslice  N replicas (the pool's oversubscription factor) that take turns. */
typedef enum gp_sharing { GP_SHARING_EXCLUSIVE = 0, GP_SHARING_MIG, GP_SHARING_MPS, GP_SHARING_TIMESLICE } gp_sharing;

/* Placement score for a pool: how to choose among GPUs that fit.
 * GP_SCORE_DEFAULT is gpupool's own; the others are the policies of the
 * FGD paper (Weng et al., ATC'23), kept for comparison in the simulator. */
typedef enum gp_score {
    GP_SCORE_DEFAULT = 0,
    GP_SCORE_BESTFIT,
    GP_SCORE_FGD,
    GP_SCORE_RANDOM,
    GP_SCORE_DOTPROD,
    GP_SCORE_CLUSTERING,
    GP_SCORE_PACKING,
    GP_SCORE_SPREAD
} gp_score;

typedef struct gp_pool_spec {
    gp_score score;            /* default GP_SCORE_DEFAULT */
    int timeslice_replicas;    /* oversubscription of time-sliced GPUs, 1..8 (0 = default 4) */
    uint64_t seed;             /* random choices (GP_SCORE_RANDOM, ties of the paper's scores) */
    /* the tenant that owns the pool's nodes ("" = nobody: anyone places
     * there).  Jobs of its subtree place there as anywhere; others only
     * while the owner's `lend` is on, as borrowers that the owner's jobs
     * reclaim with grace (dedicated.c, reclaim.c).  A path that names no
     * tenant closes the pool to everybody until that tenant exists. */
    char owner[GP_PATH_MAX];
} gp_pool_spec;

/* One kind of task in the workload mix the fragmentation measure weighs
 * (FGD's "typical pods").  Without gp_engine_workload_set the engine uses
 * the mix of the jobs submitted so far. */
typedef struct gp_workload_shape {
    int64_t cpu_millis;        /* per replica */
    int gpus;                  /* GPUs per replica, 0 = CPU only */
    int milli;                 /* per GPU: 1000 = whole GPUs, less = a share of one GPU */
    int n_gpu_types;           /* accepted types, 0 = any */
    const char *gpu_types[GP_MAX_GPU_TYPES];
    double weight;             /* relative frequency (> 0) */
} gp_workload_shape;

typedef struct gp_node_spec {
    const char *name;          /* unique, 1..63 chars */
    const char *zone;          /* e.g. "us-east-1a" */
    const char *block;         /* fabric block (InfiniBand leaf), unique within the fleet */
    const char *gpu_type;      /* e.g. "H100"; at most GP_MAX_GPU_TYPES distinct per fleet */
    int gpu_count;             /* 1..GP_MAX_GPUS_PER_NODE */
    int nvlink_domains;        /* >= 1 and divides gpu_count; usually 1 (all 8 GPUs linked) */
    int64_t gpu_mem_mib;       /* memory of one GPU */
    int64_t cpu_millis;        /* allocatable CPU of the node */
    int64_t mem_mib;           /* allocatable host memory */
    const char *const *gpu_uuids; /* optional: gpu_count UUIDs; NULL = engine makes "node/i" */
    gp_sharing sharing;        /* mode of the node's GPUs (default exclusive) */
    const gp_sharing *gpu_sharing; /* optional per-GPU modes (gpu_count entries); overrides `sharing` */
    const char *pool;          /* placement pool (default "default") */
} gp_node_spec;

/* ---- tenants -------------------------------------------------------- */

typedef enum gp_trust { GP_TRUST_INHERIT = 0, GP_TRUST_TRUSTED, GP_TRUST_UNTRUSTED } gp_trust;

/* Whether a tenant's jobs share nodes with other tenants' (dedicated.c):
 * INHERIT = the parent's (root default: shared).  Dedicated is a floor like
 * untrusted: the outermost tenant that says dedicated is the domain; a node
 * that runs any job of the domain runs no job from outside it. */
typedef enum gp_nodes_policy { GP_NODES_INHERIT = 0, GP_NODES_SHARED, GP_NODES_DEDICATED } gp_nodes_policy;
/* Whose jobs a member of the tenant may cancel: its own (the default at
 * the top), or any of the tenant's (gpupoold's rule, not the engine's). */
typedef enum gp_cancel_policy { GP_CANCEL_INHERIT = 0, GP_CANCEL_OWN, GP_CANCEL_TENANT } gp_cancel_policy;
/* Who books capacity for the tenant (gpupoold's rule, not the engine's):
 * its tenant-admins and admins only (the default at the top), or its
 * members too. */
typedef enum gp_booking_policy { GP_BOOKING_INHERIT = 0, GP_BOOKING_ADMINS, GP_BOOKING_MEMBERS } gp_booking_policy;

/* A quota as a caller writes it: GPU amounts per named type.
 * For a guarantee: `set` false means "this tenant has no floor of its own"
 * (its jobs are guaranteed only through an ancestor's floor); when set, GPU
 * types not listed are 0 and cpu/mem of GP_UNLIMITED do not constrain.
 * For a limit: types not listed and cpu/mem of GP_UNLIMITED are unbounded. */
typedef struct gp_quota {
    bool set;
    int n_gpu;
    struct {
        char type[GP_NAME_MAX];
        int64_t milli;
    } gpu[GP_MAX_GPU_TYPES];
    int64_t cpu_millis;
    int64_t mem_mib;
} gp_quota;

/* What a tenant sets for each job of its subtree that runs on a node, per
 * replica (like a Kubernetes LimitRange, see job_limits.c): 0 = not set
 * here (the nearest ancestor's value holds). */
#define GP_PIDS_MAX 4194304 /* pids_max: 1..this (Linux's PID_MAX_LIMIT) */
typedef struct gp_job_limits {
    int64_t cpu_millis;
    int64_t mem_mib;
    int64_t pids_max;      /* processes and threads */
} gp_job_limits;

/* How a tenant's jobs run on a node (issue 31; docs/api.md "Tenants"):
 * kept with the spec and enforced by gpupoold (spec/container_spec.h); the
 * engine keeps none of it.  Zeroed: every field inherited. */
#define GP_MAX_IMAGE_SOURCES 16
#define GP_IMAGE_SOURCE_MAX 256  /* bytes of a source prefix, with its NUL */
#define GP_MAX_VOLUMES 16
#define GP_HOST_PATH_MAX 512     /* bytes of a volume's host path, with its NUL */
#define GP_MAX_EGRESS 32         /* egress destinations one tenant sets */
#define GP_EGRESS_MAX 64         /* bytes of one, with its NUL: "[ffff:...:ffff/128]:65535" */
#define GP_MAX_REACH_FROM 16     /* reach_from tenant subtrees one tenant sets */
typedef enum gp_container_rule { GP_CONTAINER_INHERIT = 0, GP_CONTAINER_REQUIRED, GP_CONTAINER_OPTIONAL } gp_container_rule;
typedef struct gp_volume {
    char name[GP_NAME_MAX];
    char path[GP_HOST_PATH_MAX];  /* absolute host path */
    bool read_only;
} gp_volume;
typedef struct gp_container_policy {
    gp_container_rule rule;       /* INHERIT: the parent's (top: required if untrusted, else optional) */
    bool image_sources_set;       /* false: the parent's (top: any image) */
    int n_image_sources;
    char image_sources[GP_MAX_IMAGE_SOURCES][GP_IMAGE_SOURCE_MAX];
    int n_volumes;                /* added to the ancestors' (a name here hides an ancestor's) */
    gp_volume volumes[GP_MAX_VOLUMES];
    bool allow_userns_set;        /* false: the parent's (top: no) */
    bool allow_userns;
    int n_egress;                 /* where its jobs may connect (spec/net_dest.h), added to the ancestors' */
    char egress[GP_MAX_EGRESS][GP_EGRESS_MAX];
    int n_reach_from;             /* tenant subtrees whose jobs may connect to its jobs, added to the ancestors' */
    char reach_from[GP_MAX_REACH_FROM][GP_PATH_MAX];
} gp_container_policy;

typedef struct gp_tenant_spec {
    gp_quota guarantee;   /* floor, never preempted */
    gp_quota limit;       /* ceiling including borrowing */
    gp_quota user_limit;  /* per-user ceiling inside this tenant (and its subtree) */
    double weight;        /* fair-share weight among siblings; 0 = default (see scheduling.md) */
    int lend;             /* -1 = default (yes), 0 = keep idle guarantee idle, 1 = lend */
    gp_trust trust;       /* INHERIT = parent's (root default: trusted) */
    /* default time limit of a job, per gp_job_kind, seconds; 0 = the
     * parent's (none at the top: such jobs run without a limit).  It is
     * also the most a job of that kind may ask for (scheduling.md). */
    int64_t time_limit_s[3];
    gp_job_limits job_defaults; /* what a job that sets a field gets */
    gp_job_limits job_max;      /* the most a job may set; no more than the parent's */
    gp_nodes_policy nodes;      /* shared or dedicated nodes, inherited */
    gp_cancel_policy cancel;    /* whose jobs its members cancel, inherited (gpupoold's, not the engine's) */
    gp_booking_policy booking;  /* whether its members book, inherited (gpupoold's, not the engine's) */
    gp_container_policy containers; /* gpupoold's, not the engine's (above) */
} gp_tenant_spec;

/* ---- jobs ----------------------------------------------------------- */

typedef enum gp_job_kind { GP_KIND_TRAINING = 0, GP_KIND_INFERENCE, GP_KIND_INTERACTIVE } gp_job_kind;
typedef enum gp_topology { GP_TOPO_ANY = 0, GP_TOPO_BLOCK, GP_TOPO_NVLINK } gp_topology;
typedef enum gp_isolation { GP_ISO_EXCLUSIVE = 0, GP_ISO_MIG, GP_ISO_MPS, GP_ISO_TIMESLICE } gp_isolation;

typedef enum gp_job_state {
    GP_JOB_PENDING = 0,
    GP_JOB_ADMITTED,   /* passed admission, placement chosen, bind decision out */
    GP_JOB_RUNNING,
    GP_JOB_PREEMPTING, /* signalled, inside its grace; GPUs still held */
    GP_JOB_SUCCEEDED,
    GP_JOB_FAILED,
    GP_JOB_CANCELLED
} gp_job_state;

typedef enum gp_class { GP_CLASS_NONE = 0, GP_CLASS_GUARANTEED, GP_CLASS_BURSTABLE } gp_class;

/* A fractional share of one GPU, per replica. */
typedef struct gp_share {
    char mig_profile[16];      /* isolation mig: a GPU-instance profile, e.g. "1g.10gb" */
    int mps_milli;             /* isolation mps: share of the SMs, 1..1000 milli-GPUs (API: percent x 10) */
    int64_t gpu_mem_mib;       /* isolation mps: memory limit; 0 = the share's part of the GPU's memory */
} gp_share;

/* What happens when a replica of a running job fails (exit code != 0, a
 * signal, oom): DEFAULT is on-failure for inference jobs, never for the
 * other kinds (restart.c). */
typedef enum gp_restart_policy { GP_RESTART_DEFAULT = 0, GP_RESTART_NEVER, GP_RESTART_ON_FAILURE } gp_restart_policy;
/* The signal a stop (preemption, cancel, time limit) sends first; the node
 * agent kills the whole tree when the grace ends.  The engine only keeps it. */
/* (gp_stop_signal and its names: util/stop_signal.h, one table for the
 * engine, the agent and the CLI) */
#define GP_MAX_RESTARTS_MAX 100 /* max_restarts: 1..this */

typedef struct gp_job_spec {
    uint64_t id;               /* caller-chosen, unique, non-zero */
    const char *name;          /* optional */
    const char *tenant;        /* path of a leaf tenant */
    const char *user;          /* optional; per-user limits apply when set */
    gp_job_kind kind;
    int replicas;              /* gang size, 1..GP_MAX_REPLICAS */
    int gpus;                  /* whole GPUs per replica, 0..GP_MAX_GPUS_PER_NODE (0 = CPU-only; 1 for a share) */
    int n_gpu_types;           /* 0 = any type */
    const char *gpu_types[GP_MAX_GPU_TYPES];
    int64_t cpu_millis;        /* per replica */
    int64_t mem_mib;           /* per replica */
    gp_topology topology;
    gp_isolation isolation;    /* exclusive: `gpus` whole GPUs; mig/mps/timeslice: one share per replica (gpus = 1) */
    gp_share share;            /* the share, for mig and mps */
    int priority;              /* GP_PRIORITY_MIN..GP_PRIORITY_MAX, higher first */
    int64_t checkpoint_grace_s;/* 0..GP_GRACE_MAX_S */
    int64_t expected_runtime_s;/* 0 = unknown (never backfilled into a reservation) */
    int64_t time_limit_s;      /* 0 = the tenant's default for the kind; stopped ("time_limit") once past it */
    gp_restart_policy restart_policy;
    int max_restarts;          /* on-failure: restarts after failures, 1..GP_MAX_RESTARTS_MAX; 0 = default (3) */
    gp_stop_signal stop_signal;/* what a stop sends first (default SIGTERM) */
    int64_t pids_max;          /* per replica, 0..GP_PIDS_MAX; 0 = the tenant's default, else the node agent's */
    const char *booking;       /* NULL or "": none; else a booking of the job's tenant (booking.h): the job
                                  runs guaranteed on that booking's GPUs once it is active, and waits for it
                                  until then (GP_WAIT_BOOKING); refused at submit when no such booking of
                                  the tenant is live, or the job's shape cannot fit inside it */
} gp_job_spec;

/* How a running job ended, as its node reports it. */
typedef enum gp_exit {
    GP_EXIT_SUCCEEDED = 0,
    GP_EXIT_FAILED,
    GP_EXIT_STOPPED    /* it stopped because we asked (preempt/cancel/node loss) */
} gp_exit;

/* Why a job is waiting.  Stored as a code plus parameters; gp_engine_why()
 * turns it into a sentence a person can act on. */
typedef enum gp_wait_code {
    GP_WAIT_NONE = 0,
    GP_WAIT_NEW,            /* not yet seen by a scheduling pass */
    GP_WAIT_LIMIT,          /* tenant: ancestor whose limit; dim; a = usage, b = demand, c = limit */
    GP_WAIT_USER_LIMIT,     /* tenant: where the user limit is; same numbers */
    GP_WAIT_NO_GPU_TYPE,    /* no healthy schedulable GPU of an accepted type */
    GP_WAIT_TOPOLOGY,       /* no domain could ever hold it: a = largest domain's GPUs, b = needed */
    GP_WAIT_CAPACITY,       /* fits in principle, capacity in use: a = free, b = needed; tenant = ahead */
    GP_WAIT_LENDING,        /* idle capacity is held for non-lending tenants: a = free, b = held */
    GP_WAIT_RESERVATION,    /* would delay reserved head job `job` (starts at `time`) */
    GP_WAIT_RESERVED,       /* this job holds the reservation; expected start `time` */
    GP_WAIT_RECLAIM,        /* reclaiming a = victims from borrowers; grace ends at `time`; b = 1: for fair
                               share (tenant = the job's leaf), 0: for a guarantee (tenant = its holder), 2:
                               from a pool its tenant owns (tenant = the owner) */
    GP_WAIT_NODE_SHAPE,     /* no node could ever hold one replica's CPU/memory: a, b = largest node's */
    GP_WAIT_TRUST,          /* the tenant is untrusted and the job asks for mps/timeslice; tenant = where
                               untrusted is set (the job's tenant or an ancestor) */
    GP_WAIT_SHARING_MODE,   /* no healthy schedulable GPU of an accepted type is in the job's sharing mode
                               (MIG: with a model that offers its profile); dim = the first accepted type */
    GP_WAIT_BACKOFF,        /* restarting after a failure: a = restarts so far, b = max; eligible at `time` */
    GP_WAIT_DEDICATED,      /* the free GPUs that would hold it are on nodes it may not share: a = those free
                               GPUs, b = needed; c = 1: its own tenant is dedicated (tenant = the domain) and
                               no whole node is free, 0: they run jobs of dedicated tenant `tenant`, 2: they
                               are in pools owned by other tenants (tenant = the owner of pool `pool`, the
                               one with the most of them) */
    GP_WAIT_HELD,           /* held (gp_engine_job_update): not placed until released; who held it is the job's */
    GP_WAIT_BOOKING         /* names a booking that is not active yet (starts at `time`), or whose GPUs are
                               in use by its other jobs (a = its free GPUs, b = needed) */
} gp_wait_code;

typedef struct gp_wait {
    gp_wait_code code;
    int dim;                /* resource dimension concerned, or -1 */
    uint32_t tenant;        /* tenant index concerned (see gp_engine_tenant_path), or UINT32_MAX */
    uint64_t job;           /* other job concerned, or 0 */
    int64_t a, b, c;
    int64_t time;
    uint32_t pool;          /* GP_WAIT_DEDICATED with c = 2: the pool (see gp_engine_pool_get) */
} gp_wait;

/* ---- decisions ------------------------------------------------------ */

typedef enum gp_decision_kind {
    GP_DEC_TRANSITION = 0, /* job changed state: from, to, reason */
    GP_DEC_BIND,           /* job placed: read gp_engine_job_gpus() */
    GP_DEC_PREEMPT,        /* signal job, kill after grace_s, it will be requeued; by_* say who reclaimed */
    GP_DEC_STOP,           /* stop job (cancel or node loss), kill after grace_s */
    GP_DEC_DRAINED,        /* node has no jobs left and is draining */
    GP_DEC_USAGE_OPEN,     /* a metering interval opened (usage.end = -1) */
    GP_DEC_USAGE_CLOSE,    /* the same interval closed */
    GP_DEC_RECONFIGURE,    /* set a MIG GPU's instances to `mig_layout` (node, gpu_index) */
    GP_DEC_BOOKING         /* booking `booking` changed state (booking_from -> booking_to, gp_booking_state),
                              or a note without a change (equal states: a substitution, a shortage);
                              `reason` says what.  Emitted by the booking events and by gp_engine_tick */
} gp_decision_kind;

typedef struct gp_usage {
    uint64_t interval_id;
    uint64_t job_id;
    char tenant[GP_PATH_MAX];
    char gpu_type[GP_NAME_MAX];
    int64_t milli_gpus;     /* all replicas together */
    gp_class cls;
    gp_topology topology;
    int64_t start;
    int64_t end;            /* -1 while open */
    bool dedicated_idle;    /* not a job's: free GPUs of node `node` of the decision that the exclusivity
                               of dedicated tenant `tenant` keeps idle (job_id 0, cls NONE; metering.c) */
} gp_usage;

typedef struct gp_decision {
    gp_decision_kind kind;
    int64_t time;
    uint64_t job_id;
    gp_job_state from, to;      /* TRANSITION */
    int64_t grace_s;            /* PREEMPT, STOP */
    uint64_t by_job;            /* PREEMPT: the job that reclaimed */
    char by_tenant[GP_PATH_MAX];/* PREEMPT: its tenant */
    char guarantee_of[GP_PATH_MAX]; /* PREEMPT: tenant whose guarantee was reclaimed */
    int64_t work_lost_gpu_s;    /* PREEMPT: GPU-seconds since the victim's last checkpoint */
    char node[GP_NAME_MAX];     /* DRAINED, RECONFIGURE, USAGE_* of dedicated idle */
    int gpu_index;              /* RECONFIGURE: GPU within the node */
    char mig_layout[GP_REASON_MAX]; /* RECONFIGURE: "profile@start,..." after the change, "" = no instances */
    gp_usage usage;             /* USAGE_OPEN, USAGE_CLOSE */
    char reason[GP_REASON_MAX]; /* TRANSITION, PREEMPT, STOP, BOOKING */
    char booking[GP_BOOKING_NAME_MAX + 8]; /* BOOKING: the booking's name; PREEMPT: the booking whose
                                  clearing preempted the job ("" otherwise) */
    int booking_from, booking_to; /* BOOKING: gp_booking_state values (booking.h) */
} gp_decision;

/* ---- read-only views ------------------------------------------------ */

typedef struct gp_history_entry {
    int64_t time;
    gp_job_state from, to;
    char reason[GP_REASON_MAX];
} gp_history_entry;

typedef struct gp_job_info {
    uint64_t id;
    gp_job_state state;
    gp_class cls;
    uint32_t tenant;            /* tenant index */
    int replicas, gpus;
    int priority;
    int gpu_type;               /* bound type index, -1 when not placed */
    int64_t submit_time;
    int64_t bind_time;          /* -1 when not placed */
    int64_t last_checkpoint;    /* -1 when none */
    int64_t preempt_deadline;   /* PREEMPTING: when its GPUs are free again */
    int preemptions;            /* how many times it was preempted */
    gp_wait wait;
    int64_t time_limit_s;       /* effective (its own or its tenant's default), 0 = none */
    bool time_limited;          /* PREEMPTING: stopped for running past its time limit */
    int restarts;               /* times requeued after a failure (restart_policy on-failure) */
    int requeues;               /* times requeued after it ran: preempted, its node lost, its GPU failed */
} gp_job_info;

typedef struct gp_tenant_info {
    uint32_t index;
    uint32_t parent;            /* UINT32_MAX for a top-level tenant */
    char path[GP_PATH_MAX];
    bool has_guarantee;
    gp_res guarantee;           /* effective, in engine dimensions */
    gp_res limit;
    gp_res user_limit;
    gp_res usage;               /* this tenant and its subtree */
    gp_res guaranteed_usage;    /* the part running as guaranteed */
    double weight;
    double dominant_share;      /* usage / fleet over dims, divided by weight */
    bool lend;
    bool untrusted;
    bool dedicated;             /* effective nodes policy (own or inherited) */
    int pending_jobs;           /* this tenant only */
    int running_jobs;
    int64_t oldest_pending_submit; /* submit time of its longest-waiting pending job, -1 when none */
    int64_t time_limit_s[3];    /* effective default per gp_job_kind (own or inherited), 0 = none */
    gp_job_limits job_defaults; /* effective (own or inherited), 0 = none */
    gp_job_limits job_max;
} gp_tenant_info;

typedef struct gp_gpu_info {
    uint32_t node;
    int index;                  /* within the node */
    int nvlink_domain;
    int type;
    bool healthy;
    uint64_t job;               /* exclusive: the owner, 0 when free */
    char uuid[GP_UUID_MAX];
    gp_sharing sharing;
    int used_milli;             /* shared GPUs: milli-GPUs in use (slices, MPS shares, replicas) */
    int jobs;                   /* shared GPUs: replicas placed on it */
    char trust_domain[GP_NAME_MAX]; /* mps/timeslice: the org that holds it, "" when empty */
    char mig_layout[GP_REASON_MAX]; /* mig: "profile@start,..." */
    uint64_t claimed_for;       /* the reclaiming job it is held for, 0 when none */
} gp_gpu_info;

/* One replica's piece of a GPU (gp_engine_job_slices). */
typedef struct gp_slice {
    uint32_t gpu;               /* global GPU index */
    gp_isolation kind;
    char mig_profile[16];       /* mig */
    int mig_start;              /* mig: placement start slot */
    int milli;                  /* quota and billing weight of the slice */
    int64_t gpu_mem_mib;        /* memory of the slice */
} gp_slice;

typedef struct gp_node_info {
    char name[GP_NAME_MAX];
    char zone[GP_NAME_MAX];
    char block[GP_NAME_MAX];
    int type;
    int gpu_count;
    int gpus_free;              /* healthy, unallocated, unclaimed */
    int gpus_healthy;
    uint32_t gpu_first;         /* global index of GPU 0 of this node */
    bool up, draining;
    int replicas;               /* job replicas placed on it: a draining node with none is drained */
    int64_t cpu_millis, cpu_used, mem_mib, mem_used;
    int64_t gpu_mem_mib;        /* memory of one of its GPUs */
} gp_node_info;

/* A pool as gp_engine_pool_get reports it. */
typedef struct gp_pool_info {
    char name[GP_NAME_MAX];
    gp_pool_spec spec;          /* spec.owner: as set, even if that tenant is gone since */
    bool owned;                 /* the owner names a tenant that exists */
    bool lent;                  /* owned, and the owner lends: others may borrow its nodes */
    int nodes, gpus;            /* its nodes (up or not) and their GPUs */
    int gpus_borrowed;          /* whole GPUs held by jobs from outside the owner's subtree */
} gp_pool_info;

typedef struct gp_engine_stats {
    size_t pending, running, preempting;
    size_t jobs;                 /* all jobs the engine still holds */
    int64_t gpus_total, gpus_healthy, gpus_allocated;
    /* last scheduling pass */
    size_t pass_considered;     /* pending jobs looked at */
    size_t pass_placed;
    size_t pass_preempted;      /* victims chosen */
    size_t pass_reclaim_searches;
    size_t pass_reclaim_remembered; /* of those, known to find nothing: replayed without placement looks */
    size_t pass_reservations;
    size_t pass_held_looks;     /* looks that put the held nodes back for a job ending before the reservation */
    /* since the engine started */
    uint64_t total_placed, total_preempted, total_passes;
} gp_engine_stats;

/* The names of the engine's enums, as the API, the files, the CLI and the
 * simulator spell them (names.c holds the one table).  Out-of-range values
 * read "unknown". */
typedef enum gp_enum {
    GP_ENUM_JOB_STATE = 0,
    GP_ENUM_CLASS,
    GP_ENUM_TOPOLOGY,
    GP_ENUM_ISOLATION,
    GP_ENUM_JOB_KIND,
    GP_ENUM_DECISION_KIND,
    GP_ENUM_SHARING,
    GP_ENUM_SCORE,
    GP_ENUM_TRUST,
    GP_ENUM_RESTART_POLICY,
    GP_ENUM_STOP_SIGNAL,
    GP_ENUM_NODES,
    GP_ENUM_CANCEL,
    GP_ENUM_BOOKING,
    GP_ENUM_COUNT
} gp_enum;

/* How many values the enum has (names of values 0..count-1). */
int gp_enum_count(gp_enum which);
/* The name of one value, or "unknown". */
const char *gp_enum_name(gp_enum which, int value);
/* Name to value: true and *value set when `name` is one of the enum's
 * names (exact, case-sensitive), else false and *value untouched. */
bool gp_enum_value(gp_enum which, const char *name, int *value);
/* "a, b, c": every name of the enum, for error messages (truncated to cap). */
void gp_enum_list(gp_enum which, char *out, size_t cap);

const char *gp_job_state_name(gp_job_state s);
const char *gp_class_name(gp_class c);
const char *gp_topology_name(gp_topology t);
const char *gp_isolation_name(gp_isolation i);
const char *gp_job_kind_name(gp_job_kind k);
const char *gp_decision_kind_name(gp_decision_kind k);
const char *gp_wait_code_name(gp_wait_code c);
const char *gp_sharing_name(gp_sharing s);
const char *gp_score_name(gp_score s);
const char *gp_trust_name(gp_trust t);
const char *gp_nodes_policy_name(gp_nodes_policy p);
const char *gp_restart_policy_name(gp_restart_policy p);
/* The POSIX signal a stop signal sends (SIGTERM for a value out of range). */

/* The smallest share that would fit what a job used on one GPU of
 * gpu_type (gpu_mem_mib of memory): its peak SM activity (percent of the
 * GPU) and peak memory.  mig: the smallest MIG profile of the model whose
 * compute and memory cover both ("" when the model has no MIG or none
 * fits); mps_pct: an MPS share (5..100, a multiple of 5) covering both.
 * False on bad input (gpu_mem_mib <= 0, negatives).  Example (H100 80 GiB):
 * peak 9 % SM and 6,000 MiB -> mig 1g.10gb (1/7 = 14 % SM, 10 GiB),
 * mps 10 %; peak 20 % and 30,000 MiB -> mig 3g.40gb, mps 40 %.  For the
 * under-driven jobs of `gpupool usage` (allocated vs used, issue 15). */
typedef struct gp_share_fit_out {
    char mig[16];
    int mps_pct;
} gp_share_fit_out;
bool gp_share_fit(const char *gpu_type, int64_t gpu_mem_mib, int sm_pct, int64_t mem_mib, gp_share_fit_out *out);

/* A tenant's given fair-share weight; 0 means "derived from its guarantee".
 * The floor keeps usage / weight finite (5e-324 made shares infinite). */
#define GP_WEIGHT_MIN 0.001
#define GP_WEIGHT_MAX 1000000.0

#endif

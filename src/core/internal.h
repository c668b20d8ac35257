/* internal.h - the engine's private state, shared by the files of src/core.
 *
 * Nothing here is a promise to callers (they see engine.h and types.h);
 * private functions carry the gp__ prefix.
 *
 *   types.h      the public vocabulary (specs, states, decisions)
 *   engine.h     the public API: events in, decisions out, queries
 *   internal.h   this file: the private state and the gp__ functions
 *
 * Layers.  The files of src/core come in four layers.  A file calls only
 * files of a lower layer, or of its own layer listed before it in the table
 * below, so no file calls up and no two files call each other round in a
 * circle.  scripts/core-layers reads this table and checks it against the
 * symbols the object files define and use (ctest core_layers, in `make
 * test`); a new file goes into the table, or that check fails.
 *
 *   base: books.c amounts.c names.c mig.c
 *     books.c      growable arrays, placement's scratch space, a job's placed count
 *     amounts.c    an amount of GPUs, CPU or memory in words
 *     names.c      the enum names (job state, class, isolation, ...)
 *     mig.c        MIG geometry: which GPU instances fit where
 *   books: metering.c restart.c fleet.c job_limits.c tenants.c jobs.c claims.c
 *     metering.c   decisions and usage intervals
 *     restart.c    restart policies and their back-off
 *     fleet.c      nodes, GPUs, the free-capacity index, pools, the fullness
 *                  levels of shared GPUs, the undo log of a placement look
 *     job_limits.c a tenant's job defaults and maximums
 *     tenants.c    the tenancy tree, quota validation, usage, shares, entitlements
 *     jobs.c       the job table, spec validation, states, history, queues,
 *                  a replica's part of a GPU
 *     claims.c     what is held for reclaiming jobs (claims, covers), room
 *   policies: dedicated.c sharing.c fragmentation.c placement.c backfill.c admission.c fairshare.c reclaim.c booking.c
 *     dedicated.c  dedicated nodes and owned pools: which nodes a job may not
 *                  use (the fence around each job's looks) and its wait when
 *                  that keeps it out
 *     sharing.c    shared GPUs (MIG, MPS, time-slicing): trust, where a share goes
 *     fragmentation.c placing by node score (FGD), the workload mix
 *     placement.c  gang placement with topology and best fit
 *     backfill.c   the head job's reservation (EASY backfill)
 *     admission.c  limits, guarantee classes, promotion, lending
 *     fairshare.c  hierarchical weighted DRF: which tenant goes next
 *     reclaim.c    victim selection and preemption
 *     booking.c    advance bookings: admission onto named GPUs, their
 *                  calendar, clearing, the nodes a job may not use for them
 *   top: engine.c hold.c snapshot.c invariants.c why.c blockers.c queries.c
 *     engine.c     every event that reaches jobs (job, fleet, pool and
 *                  tenant events) and the scheduling pass that ties them together
 *     hold.c       a pending job's hold, priority and time limit changed
 *                  (gp_engine_job_update)
 *     snapshot.c   the whole state into a buffer and back (restarts)
 *     invariants.c the self-check the tests run after every event
 *     why.c        wait reasons in words (gp_engine_why)
 *     blockers.c   every blocker of a pending job (gp_engine_blockers)
 *     queries.c    the read-only queries of engine.h
 *
 * Books keep data and answer for it: they validate, count and index, and
 * return what changed; they never decide about a job (fleet.c and
 * tenants.c do not stop, requeue, demote or preempt jobs: engine.c acts on
 * what they return).  Policies decide (where, who next, whom to preempt)
 * and change the books only through the books' functions.  The top layer
 * takes the events, runs the pass, and answers questions; nothing below
 * calls it.
 *
 * Indexes: nodes, GPUs, tenants and jobs live in arrays and refer to each
 * other by uint32_t index.  GP__NONE marks "no index".  A GPU's owner is
 * stored as job index + 1 (0 = free) so a zeroed GPU is free.
 */
#ifndef GP_CORE_INTERNAL_H
#define GP_CORE_INTERNAL_H

#include "core/engine.h"
#include "util/hashmap.h"

#define GP__NONE UINT32_MAX
#define GP__HISTORY 6
#define GP__TAGS 16       /* kinds of task the clustering score tells apart */
#define GP__MISSES 64
#define GP__NOFITS 64     /* reclaim searches that found nothing, remembered */

/* ---- fleet ---- */

/* A MIG GPU instance: profile (index into the GPU's model table), the
 * first memory slice it occupies, and the replica using it (job + 1, 0 =
 * idle: created but unused, may be destroyed to make room). */
typedef struct gp__mig_instance {
    uint8_t profile;
    uint8_t start;
    uint32_t owner;
} gp__mig_instance;

#define GP__MIG_MAX 7 /* GPU instances per GPU */

typedef struct gp__gpu {
    uint32_t node;
    uint8_t index;        /* within the node */
    uint8_t nvlink;       /* NVLink domain within the node */
    bool healthy;
    uint8_t sharing;      /* gp_sharing */
    uint32_t owner;       /* exclusive: job index + 1, 0 = free */
    uint32_t claim;       /* reclaiming job index + 1: held for it once free */
    /* shared GPUs (sharing.c) */
    uint16_t used_milli;  /* mps: SM shares; timeslice: replicas x share; mig: instances in use */
    uint16_t jobs;        /* replicas placed on it */
    int64_t used_mem;     /* mps: memory limits in use */
    uint32_t trust;       /* mps/timeslice: org holding it; mig: untrusted tenant holding it; GP__NONE */
    int8_t mig_model;     /* index into the MIG tables, -1 when not MIG */
    uint8_t n_mig;
    gp__mig_instance mig[GP__MIG_MAX];
    int64_t reconfigured_at; /* last MIG layout change, for the rate limit */
    uint8_t level;        /* shared GPUs: fullness 0..8, the list it sits in */
    uint32_t lprev, lnext; /* links of that list (fleet.level_head) */
    char uuid[GP_UUID_MAX];
    /* shared GPUs: the part claimed by reclaiming shared jobs for their
     * victims' grace (claims.c keeps it; sharing.c counts it as taken) */
    uint16_t claim_jobs;  /* replicas claimed; 0 = no partial claim */
    uint16_t claim_milli; /* their shares */
    int64_t claim_mem;    /* mps: their memory limits */
    uint8_t claim_mig;    /* mig: memory slices of their instances */
    uint32_t claim_domain; /* trust domain of the claimers (as `trust`), while claim_jobs > 0 */
    int64_t claim_until;  /* mig: the earliest grace end among the claimers */
    uint16_t cover_milli; /* mps: the part of the claims that the claimers' own victims */
    int64_t cover_mem;    /* still hold here (counted once, in used_milli / used_mem) */
} gp__gpu;

/* A pool (fleet.c): nodes that share a placement score and time-slice factor. */
typedef struct gp__pool {
    char name[GP_NAME_MAX];
    gp_pool_spec spec;    /* score, timeslice_replicas (resolved), seed, owner (a path) */
    uint32_t owner;       /* spec.owner's tenant, GP__NONE when none or gone; derived at each
                             pass's start (dedicated.c, gp__fence_begin) */
} gp__pool;

#define GP__MEMOS 4        /* share scores a node remembers */

/* A share's node score as evaluated, and what it depends on besides the
 * node's GPUs (which node->stamp stands for; fragmentation.c). */
typedef struct gp__memo {
    bool valid, any_org, ok;
    int8_t gpu;
    uint8_t score_kind;   /* gp_score */
    int16_t milli;        /* the job's share */
    uint32_t org;         /* the job's trust domain (any when any_org) */
    uint32_t mix_version;
    uint64_t stamp;
    int64_t cpu_used, mem_used; /* the node's */
    int64_t cpu, mem, share_mem; /* the job's */
    double score, tie;
} gp__memo;

/* A node the capacity candidates are on, and how many GPUs there they
 * would free (reclaim.c, candidate_nodes). */
typedef struct gp__cand_node {
    uint32_t node;
    uint8_t freed;
} gp__cand_node;

typedef struct gp__node_brief {
    uint32_t block;
    int16_t free;         /* the node's free GPUs; -1 when down or draining */
    uint8_t withheld;     /* node->withheld */
} gp__node_brief;

typedef struct gp__node {
    char name[GP_NAME_MAX];
    uint32_t zone, block;
    uint16_t pool;
    uint8_t type;
    uint8_t gpu_count, domains;
    uint32_t gpu_first;
    int64_t gpu_mem_mib;
    bool up, draining, drained_reported;
    bool held;            /* held for a reservation during this pass */
    bool barred;          /* fenced off for the job being looked at (dedicated.c); false between jobs */
    uint32_t ded_domain;  /* the dedicated domain whose replicas run here, GP__NONE when none */
    uint32_t ded_replicas; /* replicas of that domain's jobs on the node (placed while it was dedicated) */
    /* the open dedicated-idle interval (metering.c): id (0 = none), start, domain, GPUs */
    uint64_t idle_interval;
    int64_t idle_start;
    uint32_t idle_domain;
    uint8_t idle_gpus;
    uint8_t withheld;     /* GPUs unhealthy or claimed whole: a job's end gives them to no
                             one (backfill.c; counted by gp__node_reindex) */
    int64_t cpu_cap, mem_cap, cpu_used, mem_used;
    uint32_t busy;        /* GPUs owned by whole-GPU jobs */
    uint32_t replicas;    /* job replicas of any kind on the node (drain waits for 0) */
    uint16_t tag_count[GP__TAGS]; /* GPU jobs per kind of task (GpuClustering score) */
    uint8_t free;         /* schedulable free GPUs (0 if down/draining) */
    uint8_t indexed;      /* the bucket the node sits in (0 = none) */
    uint32_t prev, next;  /* bucket list links */
    uint64_t stamp;       /* bumped by gp__node_touch: every change a share's score reads */
    gp__memo memo[GP__MEMOS]; /* the last share scores (fragmentation.c) */
    uint8_t memo_next;
} gp__node;

/* What a set of nodes could hold if it were empty, per type: replicas of
 * g GPUs in all of them / in the best block, the largest NVLink domain,
 * the largest node's CPU and memory, GPUs per sharing mode and the MIG
 * models among the MIG-mode ones (bit per model).  The fleet keeps one
 * of its healthy schedulable nodes (for wait reasons and fast rejection);
 * gp__fleet_registered_shape counts every registered node, whatever its
 * state (what the fleet could ever hold: refusals at submit). */
typedef struct gp__fleet_shape {
    int64_t empty_replicas[GP_MAX_GPU_TYPES][GP_MAX_GPUS_PER_NODE + 1];
    int64_t empty_block_replicas[GP_MAX_GPU_TYPES][GP_MAX_GPUS_PER_NODE + 1];
    int max_domain[GP_MAX_GPU_TYPES];
    int64_t max_cpu[GP_MAX_GPU_TYPES], max_mem[GP_MAX_GPU_TYPES]; /* largest node */
    int64_t mode_gpus[GP_MAX_GPU_TYPES][4];
    uint32_t mig_models[GP_MAX_GPU_TYPES];
} gp__fleet_shape;

typedef struct gp__block {
    char name[GP_NAME_MAX];
    uint32_t zone;
    uint32_t *nodes;
    size_t n_nodes, cap_nodes;
    /* nodes of each type by schedulable free count (held nodes excluded) */
    uint32_t hist[GP_MAX_GPU_TYPES][GP_MAX_GPUS_PER_NODE + 1];
    int64_t free[GP_MAX_GPU_TYPES];
} gp__block;

typedef struct gp__fleet {
    gp__node *nodes;
    size_t n_nodes, cap_nodes;
    gp__gpu *gpus;
    size_t n_gpus, cap_gpus;
    gp__block *blocks;
    size_t n_blocks, cap_blocks;
    char (*zones)[GP_NAME_MAX];
    size_t n_zones, cap_zones;
    char types[GP_MAX_GPU_TYPES][GP_NAME_MAX];
    int n_types;
    gp_strmap node_by_name, block_by_name;
    gp__pool *pools;      /* pool 0 is "default" */
    size_t n_pools, cap_pools;
    /* shared GPUs per mode and type by fullness (MIG: busy memory slices,
     * time-slice: replicas, MPS: used/125), so best fit walks from the
     * fullest level down and stops at the first level that has room */
    uint32_t level_head[4][GP_MAX_GPU_TYPES][9];
    bool all_spread;      /* every pool spreads: walk the levels upwards */
    uint32_t *mps_nodes[GP_MAX_GPU_TYPES]; /* nodes with an MPS GPU, per type */
    size_t n_mps_nodes[GP_MAX_GPU_TYPES], cap_mps_nodes[GP_MAX_GPU_TYPES];
    uint32_t *type_nodes[GP_MAX_GPU_TYPES]; /* nodes per type, in fleet order */
    size_t n_type_nodes[GP_MAX_GPU_TYPES], cap_type_nodes[GP_MAX_GPU_TYPES];
    bool all_paper_scores; /* every pool uses one of the FGD paper's scores: whole
                              GPUs are placed by node score too (fragmentation.c) */
    /* the free-capacity index: per type, per free count, a list of nodes */
    uint32_t head[GP_MAX_GPU_TYPES][GP_MAX_GPUS_PER_NODE + 1];
    uint32_t hist[GP_MAX_GPU_TYPES][GP_MAX_GPUS_PER_NODE + 1];
    int64_t free[GP_MAX_GPU_TYPES];       /* indexed free GPUs per type */
    uint64_t moves;                       /* nodes taken out of or put into a list, ever */
    uint64_t recounts;                    /* gp__node_reindex calls, ever: a GPU or node may have changed */
    gp__fleet_shape shape;                /* of the healthy schedulable fleet */
    gp_res capacity;                      /* healthy GPUs of up nodes, cpu, mem */
    uint64_t capacity_version;            /* changes of capacity, ever (tenant shares divide by it) */
    bool shape_dirty;                     /* shape needs gp__fleet_recount */
    uint32_t shape_count;                 /* recounts of shape so far (starts at 1);
                                             gp__job.possible_shape is checked against it */
    /* per node (owned, grown with nodes): touch_seq at the node's last
     * change of anything a share's node score reads (its GPUs, CPU and
     * memory in use, up, drain, held; gp__node_touch); derived: zero after
     * a snapshot is read */
    uint64_t *touched;
    size_t cap_touched;
    uint64_t touch_seq;
    /* per node (owned, grown with nodes): what a reservation sweep starts
     * from, without reading the node (backfill.c); derived: made again from
     * the nodes after a snapshot is read */
    gp__node_brief *brief;
    size_t cap_brief;
    /* per GPU (owned, grown with gpus): gpus[g].node, a small array a
     * sweep reads for every replica it pops (backfill.c); derived: made
     * again after a snapshot is read */
    uint32_t *gpu_node;
    size_t cap_gpu_node;
} gp__fleet;

/* ---- tenants ---- */

typedef struct gp__tenant {
    char path[GP_PATH_MAX];
    uint32_t parent;
    uint32_t *children;
    size_t n_children, cap_children;
    int depth;            /* 1 = top level */
    bool removed;
    bool has_guarantee;
    gp_res guarantee, limit, user_limit;
    bool has_user_limit;
    double weight;
    bool weight_set;
    bool lend;
    gp_trust trust_set;   /* as given */
    bool untrusted;       /* effective */
    gp_nodes_policy nodes_set; /* as given */
    uint32_t ded_domain;  /* effective: the outermost tenant on its path that is dedicated, GP__NONE */
    gp_res usage, guaranteed;
    double share;         /* dominant share / weight */
    uint64_t share_capacity; /* fleet.capacity_version the share was computed at */
    uint64_t fair_pass;   /* reclaim.c: the pass a job of this leaf last searched for fair share */
    bool promote_dirty;   /* guaranteed usage dropped or guarantee grew: look for promotions */
    /* leaf queue: pending job indexes in (priority desc, submit, id) order */
    uint32_t *pending;
    size_t n_pending, cap_pending;
    size_t n_pending_gpuless; /* of them, jobs that ask for no GPU (jobs.c): they may fit a used-up guarantee */
    int running;
    /* scheduling pass */
    size_t cursor;
    uint32_t active;      /* leaves below (or itself) with untried jobs */
    int64_t time_limit[3]; /* default time limit per job kind as given, 0 = the parent's */
    gp_job_limits job_defaults, job_max; /* as given, 0 = the parent's (job_limits.c) */
    size_t pending_front; /* free slots before pending[0]; cap_pending counts the whole array (jobs.c) */
    int64_t booking_allowance; /* top level: GPU-hours per week its bookings may take beyond guarantees
                                  (booking.c): 0 none, -1 unbounded */
    /* admission.c: the least room left on the path, as of shares_updated
     * = room_stamp - 1 (0: never computed) */
    uint64_t room_stamp;
    gp_res room;            /* least limit - usage; GP_UNLIMITED where no limit */
    gp_res guarantee_room;  /* least guarantee - guaranteed over tenants with a guarantee */
    bool room_guaranteed;   /* a tenant on the path has a guarantee */
    bool room_user_limited; /* a tenant on the path has a user limit */
} gp__tenant;

typedef struct gp__user {
    uint32_t tenant;      /* the leaf */
    char name[GP_NAME_MAX];
    gp_res usage;
} gp__user;

/* ---- jobs ---- */

/* One GPU claimed for a reclaiming job: a whole GPU (exclusive jobs), or
 * one replica's part of a shared GPU at MIG start `start` (-1 for MPS and
 * time-slicing); for MPS, how much of the share its victims on that GPU
 * still hold (the cover, claims.c). */
typedef struct gp__claim {
    uint32_t gpu;
    int8_t start;
    int16_t cover_milli;
    int64_t cover_mem;
} gp__claim;

typedef struct gp__job {
    /* read for every pending job in every pass: kept together up front */
    uint64_t id;
    uint64_t pass_seen;   /* pass number in which it was last considered */
    uint32_t tenant;
    uint32_t user;        /* GP__NONE when none */
    int replicas, gpus;
    uint8_t type_mask;    /* accepted types (bit per type); 0xff when any */
    bool used;
    gp_job_kind kind;
    gp_topology topology;
    gp_isolation isolation;
    int priority;
    uint32_t possible_shape; /* derived: the fleet's shape_count at which gp__place_possible
                                last found room possible for this job (0: not known) */
    int64_t cpu, mem;     /* per replica */
    int64_t grace, runtime;
    int mps_milli;
    int64_t share_mem;    /* mps memory limit per replica, 0 = proportional */
    int64_t submit_time;
    gp_wait wait;

    gp_job_state state;
    gp_class cls;
    int bound_type;
    uint32_t *placed;     /* gp__placed_count entries, NULL when not placed: exclusive:
                             replicas*gpus GPU indexes; shared: the GPU of each replica;
                             CPU-only (gpus = 0): the first GPU of each replica's node,
                             an anchor that is not owned */
    int8_t *slot;         /* shared: per replica MIG start slice (-1 for mps/timeslice) */
    int64_t milli_total;  /* GPU milli charged while placed */
    int64_t bind_time, last_checkpoint;
    int64_t deadline;     /* PREEMPTING: when the grace ends */
    int64_t last_preempted;
    int preemptions;
    bool cancel_requested;
    uint32_t running_pos; /* index in engine->running, GP__NONE when not listed */
    uint32_t type_pos;    /* index in engine->type_running[bound_type], GP__NONE when not listed */
    uint64_t interval_id; /* open usage interval, 0 when none */
    int64_t interval_start;

    /* reclaim: the GPUs claimed for this job and the victims still in grace */
    gp__claim *claimed;
    size_t n_claimed, n_claimed_cap;
    int victims_left;
    uint64_t reclaimed_by;    /* as a victim: the reclaiming job's id */
    uint32_t *victims;        /* job slots this job preempted since it last had none in grace
                                 (owned; may hold slots no longer its victims: check reclaimed_by) */
    size_t n_victims, cap_victims;

    int n_history;        /* total transitions; the last GP__HISTORY are kept in
                             engine->histories[slot], apart from the job so the
                             pass's hot loop touches less memory */
    char mig_profile[16];
    char name[GP_NAME_MAX];
    int64_t limit;        /* time limit from bind, seconds (own or the tenant's default), 0 = none */
    bool time_limited;    /* stopped for running past it: ends failed, never requeued */
    gp_restart_policy restart; /* resolved: NEVER or ON_FAILURE */
    int max_restarts;     /* ON_FAILURE: restarts allowed after failures */
    int restarts;         /* restarts after failures so far */
    int requeues;         /* requeued after it ran (preempted, node lost, GPU failed) */
    int64_t eligible_at;  /* PENDING after a failure: not placed before this (back-off) */
    bool withdrawn;       /* a PREEMPT reached it since its bind and was withdrawn: if it
                             stops anyway (it may have acted on the signal), it is requeued */
    bool claims_dropped;  /* claims given back for a placement look (gp__claims_drop) */
    bool fair_reclaim;    /* its victims were taken for fair share (reclaim.c), not for a
                             guarantee: phase 2 keeps them and its claims */
    bool pool_reclaim;    /* its victims were taken from a pool its tenant owns (reclaim.c):
                             phase 2 keeps them and its claims too */
    bool held;            /* PENDING and held (hold.c): never placed until released */
    uint64_t covers_for;  /* a victim in grace whose shares cover an MPS claim of this job id */
    uint32_t ded_domain;  /* while placed: its tenant's dedicated domain at bind (counted on its
                             nodes as such until it leaves them), GP__NONE when shared */
    char held_by[GP_NAME_MAX]; /* held: who held it ("" when not held) */
    uint64_t booking;     /* the id of the booking it names (gp__booking.id), 0 = none */
} gp__job;

/* An advance booking (booking.c): its spec, state, and the GPUs it holds
 * for its window (held[], n_held whole GPUs, replica by replica). */
typedef struct gp__booking {
    uint64_t id;          /* serial, never reused: what a job names (gp__job.booking) */
    char name[GP_BOOKING_NAME_MAX + 8];
    char series[GP_BOOKING_NAME_MAX];
    int occurrence;
    uint32_t tenant;
    uint32_t holder;      /* the tenant whose guarantee covers it (itself or the nearest ancestor with one), GP__NONE */
    char made_by[GP_NAME_MAX];
    int type;
    int replicas, gpus;   /* the shape as booked */
    char mig_profile[16];
    gp_topology topology;
    int64_t created, start, end;
    bool lend;
    int64_t no_show_s;
    uint8_t recurrence;   /* gp_recurrence */
    int64_t until;
    uint8_t state;        /* gp_booking_state */
    char reason[GP_REASON_MAX];
    uint32_t *held;       /* owned; n_held global GPU indexes */
    int n_held;
    int64_t guaranteed, allowance; /* whole GPUs inside the holder's guarantee / beyond it */
    int gpus_short, substitutions;
    int64_t last_used;    /* -1 never */
    int jobs_running;
    int n_cleared;
    uint64_t cleared[GP_BOOKING_CLEARED_MAX];
    int n_history;
    gp_booking_event history[GP_BOOKING_HISTORY]; /* ring, indexed by n_history % GP_BOOKING_HISTORY */
} gp__booking;

typedef struct gp__history {
    gp_history_entry entry[GP__HISTORY]; /* ring, indexed by n_history % GP__HISTORY */
} gp__history;

/* A task shape of the workload mix (fragmentation.c). */
typedef struct gp__shape {
    int64_t cpu;
    int gpus, milli;
    uint8_t type_mask;
    double weight;        /* count (observed) or weight (set); p = weight / total */
} gp__shape;

#define GP__MIX_MAX 256

typedef struct gp__mix {
    bool fixed;           /* set by the caller, not learned */
    gp__shape shapes[GP__MIX_MAX];
    size_t n;
    gp__shape typical[GP__MIX_MAX]; /* the most frequent shapes covering 95 %, p normalised */
    size_t n_typical;
    bool dirty;
    uint64_t observed, refresh_at; /* jobs seen; typical is recomputed at refresh_at */
    uint32_t version;     /* bumped when typical changes (remembered scores expire) */
} gp__mix;


/* One share shape's score on every MPS node of one GPU type
 * (fragmentation.c, "Scores of a share shape"): at[c] is node
 * mps_nodes[type][c]'s, as of touch_seq == seen. */
#define GP__SHARE_SCORES 32
typedef struct gp__share_score {
    double score;
    uint64_t draw;        /* the node's place in the fixed tie order */
    int8_t gpu;           /* the GPU within the node */
    bool ok;              /* usable and fits */
} gp__share_score;

typedef struct gp__share_scores {
    bool valid;
    uint8_t type;
    int16_t milli;        /* the shape: share, CPU, memory, GPU memory, trust domain */
    uint32_t org;
    uint32_t mix_version;
    int64_t cpu, mem, share_mem;
    uint64_t seen;        /* fleet.touch_seq when at[] was last brought up to date */
    uint64_t used;        /* share_scores_used at its last use (the least recent is replaced) */
    gp__share_score *at;  /* owned; n_mps_nodes[type] entries */
    size_t n, cap;
} gp__share_scores;

/* A preemption still inside the cool-down: its victim may not take its
 * reclaimer's GPUs back in turn (reclaim.c). */
typedef struct gp__preemption {
    uint64_t by, victim;  /* job ids */
    int64_t time;
} gp__preemption;

/* The reservation of one GPU type for the head job of this pass. */
typedef struct gp__reservation {
    bool active;
    uint32_t job;
    int64_t start;        /* expected start, GP__START_UNKNOWN when unbounded jobs must end first */
    uint32_t *nodes;
    size_t n_nodes, cap_nodes;
    bool head_guaranteed; /* the head runs guaranteed: it can reclaim burstable work lent its nodes */
} gp__reservation;

/* Per-pass scratch for placement (never shared between calls): books.c
 * sizes it, fleet.c keeps its undo log. */
typedef struct gp__scratch {
    int8_t *slot;         /* shared: chosen MIG start per replica */
    /* tentative changes of a placement look, rolled back at its end */
    struct gp__saved_gpu {
        uint32_t index;
        gp__gpu copy;
    } *saved_gpus;
    size_t n_saved_gpus, cap_saved_gpus;
    struct gp__saved_node {
        uint32_t index;
        int64_t cpu_used, mem_used;
        uint32_t replicas;
        uint32_t ded_domain, ded_replicas;
    } *saved_nodes;
    size_t n_saved_nodes, cap_saved_nodes;
    uint32_t *out;        /* chosen GPUs */
    size_t cap_out;
} gp__scratch;

/* A pointer added here or to the structs above is an array that
 * snapshot.c must write and read too.  Derived state (what the engine can
 * find again, such as the remembered reclaim failures) is not restored:
 * snapshot.c clears it on read. */
struct gp_engine {
    gp_engine_config cfg;
    int64_t now;
    gp__fleet fleet;

    gp__tenant *tenants;
    size_t n_tenants, cap_tenants;
    gp_strmap tenant_by_path;
    uint32_t *roots;
    size_t n_roots, cap_roots;

    gp__user *users;
    size_t n_users, cap_users;
    gp_strmap user_by_key;

    gp__job *jobs;
    size_t n_jobs, cap_jobs;
    gp__history *histories; /* one per job slot, cap_histories >= n_jobs */
    size_t cap_histories;
    uint32_t *free_slots;
    size_t n_free_slots, cap_free_slots;
    gp_u64map job_by_id;
    uint32_t *running;    /* running and preempting job indexes */
    size_t n_running, cap_running;
    /* per entry of running: when the tick must look at its job
     * (gp__running_due, jobs.c); derived, rebuilt when a snapshot is read */
    int64_t *running_due;
    size_t cap_running_due;
    /* the whole-GPU jobs of running, per bound type, in no order: what a
     * reservation sweep reads (backfill.c); derived, rebuilt when a
     * snapshot is read */
    uint32_t *type_running[GP_MAX_GPU_TYPES];
    size_t n_type_running[GP_MAX_GPU_TYPES], cap_type_running[GP_MAX_GPU_TYPES];
    size_t n_pending;

    gp_decision *decisions;
    size_t n_decisions, cap_decisions;
    uint64_t next_interval;

    gp__mix mix;          /* workload mix of the fragmentation measure */
    /* fragmentation.c: every MPS node's score for the last share shapes
     * looked at, brought up to date from fleet.touched; derived */
    gp__share_scores share_scores[GP__SHARE_SCORES];
    uint64_t share_scores_used;
    gp__reservation reservation[GP_MAX_GPU_TYPES];
    gp__scratch scratch;
    uint64_t pass;
    uint64_t changes;     /* see gp_engine_changes */
    uint64_t shares_updated; /* tenant shares recomputed (tenants.c), ever */
    /* fairshare.c: the leaf the last descent of the fair order reached, and
     * shares_updated then; GP__NONE at each phase's start */
    uint32_t fair_leaf;
    uint64_t fair_leaf_shares;
    gp__preemption *recent; /* owned: preemptions of the last cool-down */
    size_t n_recent, cap_recent;
    uint32_t last_placed_tenant;
    int reclaim_searches;
    int reserve_tries[GP_MAX_GPU_TYPES]; /* reservation sweeps this pass, per type */
    /* job shapes that found no room in this pass (forgotten when anything
     * is released): a job of the same kind needing as much or more fails
     * at once */
    struct gp__miss {
        uint8_t isolation, type, topology;
        uint32_t trust;   /* trust domain the miss was for (shares) */
        int milli;        /* per replica: GPU milli (a share, or gpus x 1000) */
        int replicas;
        int64_t cpu, mem; /* per replica; mem includes an MPS memory limit */
    } miss[GP__MISSES];
    size_t n_miss;
    /* GPUs per type that running burstable jobs not preemption-capped hold
     * (kept during a pass): the most that reclaim could free */
    int64_t borrowed[GP_MAX_GPU_TYPES];
    gp_engine_stats stats;
    unsigned char *reclaim_buf; /* reclaim.c: the arrays of one victim search, reused (owned) */
    size_t cap_reclaim_buf;
    /* reclaim.c: the running burstable jobs not capped when a search of
     * the pass made the list (owned; derived state: snapshot.c restores it
     * empty); a burstable bind (bind in engine.c) makes it stale, so it
     * holds every possible victim whenever a search reads it */
    uint32_t *pool;
    size_t n_pool, cap_pool;
    uint64_t pool_pass;   /* the pass it was made in (0: none or stale) */
    double *ent;          /* reclaim.c: each tenant's entitlement (fraction of the fleet DRF
                             gives it), worked out once in ent_pass (owned; derived) */
    size_t cap_ent;
    uint64_t ent_pass;
    /* reclaim.c: reclaim_buf holds the sorted capacity candidates of this
     * type and isolation, built when nothing had changed that they depend
     * on (pass, changes, shares_updated); a remembered failure reuses them
     * (derived state: snapshot.c restores it invalid) */
    struct gp__cand_memo {
        bool valid;
        int type;
        uint8_t isolation;
        uint64_t pass, changes, shares;
        size_t n;
        bool replayed;    /* the lists are as a failed search of the list left them, */
        uint64_t moves;   /* if fleet.moves is still this */
        bool front_known; /* replay_front holds n_front nodes: the list's replay order, */
        size_t n_front;
        uint64_t recounts; /* if fleet.recounts is still this */
        bool nodes_known;  /* cand_nodes holds n_nodes: the nodes of the list's GPUs, */
        size_t n_nodes;
        uint64_t nodes_recounts; /* if fleet.recounts is still this */
    } cand_memo;
    uint32_t *replay_front; /* reclaim.c: the nodes a replay moves to the front, in order (owned; derived) */
    size_t cap_replay_front;
    gp__cand_node *cand_nodes; /* reclaim.c: per node of the candidates, GPUs they would free (owned; derived) */
    size_t cap_cand_nodes;
    /* tenants.c: per tenant, gp_engine_tenant_entitlement's answer, worked
     * out again at every change of the tree (owned; derived: when not
     * known, the answer is walked) */
    double *entitlement;
    size_t cap_entitlement;
    bool entitlements_known;
    gp_res *reclaiming;   /* reclaim.c: per tenant, demand of jobs waiting for victims (owned) */
    size_t cap_reclaiming;
    uint64_t reclaiming_pass; /* the pass it was counted for (0: never) */
    /* reclaim.c: whole-GPU capacity reclaims that found nothing, kept
     * across passes until room may have come (derived state: snapshot.c
     * restores it empty) */
    struct gp__nofit {
        uint8_t type, topology;
        int gpus, replicas;
        int64_t cpu, mem;     /* per replica */
        uint64_t room;        /* room[type] when it found nothing */
        uint64_t held;        /* the type's held nodes then (reclaim.c: held_signature) */
    } nofit[GP__NOFITS];
    size_t n_nofit, nofit_next;
    uint64_t room[GP_MAX_GPU_TYPES]; /* bumped by whatever may give a reclaim of the type more room */
    /* dedicated.c: a tenant is dedicated or a node runs a dedicated
     * domain's replicas (set at each pass's start), and the nodes fenced
     * off for the job being looked at (owned; empty between jobs) */
    bool fenced;
    size_t n_idle_open;   /* metering.c: nodes with an open dedicated-idle interval */
    uint32_t *barred;
    size_t n_barred, cap_barred;
    bool fence_up;        /* the barred nodes stand for fence_domain as of changes == fence_changes */
    uint32_t fence_domain;
    uint64_t fence_changes;
    /* dedicated.c: the nodes that ran a domain's replicas at the pass's
     * start or got some since (owned; derived, a superset: a shared job's
     * fence looks at these only) */
    uint32_t *ded_nodes;
    size_t n_ded_nodes, cap_ded_nodes;
    /* dedicated.c: the nodes of pools with an owner, listed at each pass's
     * start (owned; derived); none: no pool is owned */
    uint32_t *owned_nodes;
    size_t n_owned_nodes, cap_owned_nodes;
    uint32_t fence_tenant; /* with owned pools: the tenant the fence stands for (GP__NONE without) */
    /* booking.c: the bookings, in the order they were made (owned, each
     * with its held GPUs); the next id; the live ones (not final) */
    gp__booking *bookings;
    size_t n_bookings, cap_bookings;
    uint64_t next_booking;
    size_t n_live_bookings;
    /* booking.c, as of the last gp__booking_tick (each tick's, before its
     * pass): the earliest start of a planned booking (INT64_MAX: none), and
     * whether a booking keeps every other job off (clearing, or active and
     * not lent); a job ending before that start meets no booking */
    int64_t book_first_start;
    bool book_any_barring;
    uint32_t *book_barred; /* booking.c: nodes barred for the job being looked at (owned; empty between jobs) */
    size_t n_book_barred, cap_book_barred;
};

/* ==== base (see "Layers" above) ==== */

/* ---- books.c ---- */
/* Generic growth of a calloc'd array to hold `need` elements (zeroed). */
bool gp__grow(void **arr, size_t *cap, size_t need, size_t elem);
/* Room for one more element in arr (n used, cap allocated). */
#define GP__GROW(arr, n, cap) gp__grow((void **)&(arr), &(cap), (n) + 1, sizeof *(arr))
/* Room in e->scratch for a look choosing `gpus` GPUs; false when out of memory. */
bool gp__scratch_reserve(gp_engine *e, size_t gpus);
void gp__scratch_free(gp__scratch *s);
/* Entries of j->placed: replicas for a shared or CPU-only job, else
 * replicas x GPUs. */
size_t gp__placed_count(const gp__job *j);

/* ---- amounts.c ---- */
/* An amount of dimension d in words: "24 H100 GPUs", "2.5 H100 GPUs" (v in
 * milli-GPUs), "4000 millicores", "1024 MiB".  Returns the length. */
size_t gp__amount_format(const gp_engine *e, int d, int64_t v, char *buf, size_t len);
/* Its parts: the number alone ("2.5"), the dimension's label ("H100",
 * "CPU", "memory") and the unit after the number (" GPUs", " millicores"). */
void gp__amount_number(char *buf, size_t len, int d, int64_t v);
const char *gp__dim_label(const gp_engine *e, int d);
const char *gp__amount_unit(int d, int64_t v);

/* ---- mig.c ---- */
typedef enum gp__mig_kind { GP__MIG_REUSE = 0, GP__MIG_CREATE, GP__MIG_DESTROY, GP__MIG_NONE } gp__mig_kind;
typedef struct gp__mig_choice {
    gp__mig_kind kind;    /* cheapest first: reuse an idle instance, create in free slices, destroy idle ones */
    uint8_t start;
    int keeps;            /* instances of all profiles still placeable afterwards (higher strands less) */
} gp__mig_choice;
int gp__mig_model_find(const char *gpu_type, int64_t gpu_mem_mib);
const char *gp__mig_models_known(void);
int gp__mig_profile_find(int model, const char *name);
bool gp__mig_profile_known(const char *name);
int gp__mig_profile_milli(int model, int profile);
int gp__mig_name_milli(const char *name);
int64_t gp__mig_profile_mem(const gp__gpu *g, int64_t gpu_mem_mib, int profile);
unsigned gp__mig_mask(const gp__gpu *g, bool busy_only);
/* Memory slices an instance of profile at start takes on g. */
unsigned gp__mig_span(const gp__gpu *g, int profile, int start);
/* Where an instance of profile goes on g (at `start`, or anywhere for -1);
 * slices claimed for others (g->claim_mig) count as busy. */
gp__mig_choice gp__mig_choose(const gp__gpu *g, int profile, int start, bool may_reconfigure);
bool gp__mig_take(gp__gpu *g, int profile, int start, uint32_t owner);
void gp__mig_give(gp__gpu *g, uint32_t owner, int start);
bool gp__mig_layout_valid(const gp__gpu *g);
void gp__mig_layout_format(const gp__gpu *g, char *buf, size_t len);

/* ==== books (see "Layers" above) ==== */

/* ---- metering.c ---- */
gp_decision *gp__decision_push(gp_engine *e, gp_decision_kind kind, uint64_t job);
void gp__usage_open(gp_engine *e, uint32_t job);
void gp__usage_close(gp_engine *e, uint32_t job);
/* Dedicated idle: per node, an interval billed to the dedicated domain
 * whose replicas run there for the node's free GPUs (nobody else may use
 * them), closed and opened again when the domain or the count changes.
 * The pass calls it at its end. */
void gp__dedicated_idle_sync(gp_engine *e);

/* ---- restart.c: restart_policy ---- */
/* The spec's policy and limit with the defaults filled in (by kind);
 * GP_ERR_INVALID naming max_restarts when out of range or given to a job
 * that never restarts. */
gp_err gp__restart_resolve(const gp_job_spec *s, gp_restart_policy *policy, int *max_restarts, gp_error *err);
/* Does a failure of this running job requeue it (restarts left)? */
bool gp__restart_wanted(const gp__job *j);
/* Seconds a job waits before its n-th restart (n >= 1). */
int64_t gp__restart_backoff(int n);

/* ---- fleet.c ---- */
/* The type's index (names match without regard to case), or -1. */
int gp__fleet_type_find(const gp__fleet *f, const char *name);
/* "H100, A100, L40S": the known types into buf (cut to len); its length. */
size_t gp__fleet_types_format(const gp__fleet *f, char *buf, size_t len);
/* The type's index, registering the name if new; -1 when the table is full. */
int gp__fleet_type_intern(gp__fleet *f, const char *name);
void gp__node_reindex(gp__fleet *f, uint32_t node);
/* Move an indexed node to the head of its list, as a change of its free
 * count and the change's undo leave it (reclaim.c). */
void gp__node_to_front(gp__fleet *f, uint32_t node);
void gp__node_hold(gp__fleet *f, uint32_t node, bool held);
/* The same for a node fenced off for one job (dedicated.c): out of the
 * index and out of the briefs while barred. */
void gp__node_bar(gp__fleet *f, uint32_t node, bool barred);
/* One replica of a job of dedicated domain `domain` (GP__NONE: shared, nothing
 * counted) comes onto the node (sign +1) or leaves it (-1). */
void gp__node_dedicate(gp__fleet *f, uint32_t node, uint32_t domain, int sign);
/* Something a share's node score reads changed on the node (its GPUs, CPU
 * or memory in use, up, drain, held): bumps node->stamp (the node's
 * remembered scores) and stamps touched[] (the share shapes' tables);
 * fragmentation.c looks at it again. */
void gp__node_touch(gp__fleet *f, uint32_t node);
/* The node's brief as its fields say now (gp__node_reindex keeps it). */
gp__node_brief gp__node_brief_of(const gp__node *node);
/* Free for a whole-GPU job once its owner, if any, is gone: healthy,
 * unclaimed, and exclusive or an MPS GPU with no shares on it or claimed. */
static inline bool gp__gpu_free_if_unowned(const gp__gpu *g)
{
    return g->healthy && g->claim == 0 &&
           (g->sharing == GP_SHARING_EXCLUSIVE || (g->sharing == GP_SHARING_MPS && g->jobs == 0 && g->claim_jobs == 0));
}
/* Free for a whole-GPU job now (what the index counts). */
static inline bool gp__gpu_is_free(const gp__gpu *g)
{
    return g->owner == 0 && gp__gpu_free_if_unowned(g);
}
/* Replicas of `gpus` GPUs that fit in the index of `type` (optionally one block). */
int64_t gp__replica_capacity(const uint32_t hist[GP_MAX_GPUS_PER_NODE + 1], int gpus);
/* gp__replica_capacity(hist, gpus) >= replicas, with `free` the index's free
 * GPUs (sum of hist[k] * k): answered without the sum when free is short. */
bool gp__replicas_fit(const uint32_t hist[GP_MAX_GPUS_PER_NODE + 1], int64_t free, int gpus, int replicas);
void gp__fleet_free(gp__fleet *f);
void gp__fleet_recount(gp__fleet *f);
/* The shape of every registered node (up or not, drained or not, every GPU
 * healthy or not) into *out; false when out of memory. */
bool gp__fleet_registered_shape(const gp__fleet *f, gp__fleet_shape *out);
void gp__fleet_init(gp__fleet *f);
void gp__node_check_drained(gp_engine *e, uint32_t node);
/* The fleet's side of the fleet events (engine.c owns the events and what
 * they mean for jobs).  gp__node_event: the checks every event about an
 * existing node starts with; on success the engine's clock moves to now. */
gp_err gp__node_event(gp_engine *e, const char *name, int64_t now, uint32_t *node, gp_error *err);
/* Register a node or bring it back; *up: it came up (false when a live
 * node registers again, where nothing changes). */
gp_err gp__fleet_node_add(gp_engine *e, const gp_node_spec *spec, bool *up, gp_error *err);
/* Mark a node down / a GPU's health: capacity only, the index is left for
 * gp__fleet_node_settle once its jobs are gone; false when nothing changed. */
bool gp__fleet_node_down(gp__fleet *f, uint32_t node);
bool gp__fleet_gpu_health(gp__fleet *f, uint32_t node, int gpu_index, bool healthy);
/* Reindex a node after an event and mark the fleet's shape for recount. */
void gp__fleet_node_settle(gp__fleet *f, uint32_t node);
void gp__fleet_node_drain(gp_engine *e, uint32_t node, bool drain);
/* Pools: the pool's index, registering the name if new (NULL or "" is
 * "default"; GP__NONE when out of memory); its time-slice factor; set its
 * settings (gp_engine_pool_set's books: validation, the factor kept while
 * time-sliced replicas run, fleet.all_spread and all_paper_scores). */
uint32_t gp__pool_get(gp_engine *e, const char *name);
int gp__pool_timeslice(const gp_engine *e, uint32_t pool);
gp_err gp__pool_set(gp_engine *e, const char *pool, const gp_pool_spec *spec, gp_error *err);
/* Put a shared GPU in the fullness list its state calls for. */
void gp__gpu_relevel(gp__fleet *f, uint32_t gpu);
/* The undo log of a placement look: save a GPU / a node's CPU, memory and
 * replica count before the look changes it (the first save counts); undo
 * every saved change and empty the log. */
void gp__tx_save_gpu(gp_engine *e, uint32_t gpu);
void gp__tx_save_node(gp_engine *e, uint32_t node);
void gp__tx_rollback(gp_engine *e);

/* ---- resources (tenants.c) ---- */
void gp__res_zero(gp_res *r);
void gp__res_fill(gp_res *r, int64_t v);
void gp__res_add(gp_res *a, const gp_res *b);
/* First dim where a + b > limit (limit GP_UNLIMITED never), or -1. */
int gp__res_exceeds(const gp_res *a, const gp_res *b, const gp_res *limit);
/* The same for a job's demand on GPU type `type` (gp__job_demand: zero
 * outside that type, CPU and memory); type < GP_MAX_GPU_TYPES. */
int gp__res_exceeds_job(const gp_res *a, const gp_res *demand, const gp_res *limit, int type);

/* ---- tenants.c ---- */
uint32_t gp__tenant_lookup(const gp_engine *e, const char *path);
void gp__tenant_charge(gp_engine *e, uint32_t tenant, const gp_res *demand, gp_class cls, int sign);
void gp__tenant_update_share(gp_engine *e, uint32_t tenant);
/* The default time limit of a job of `kind` in tenant: its own, else the
 * nearest ancestor's; 0 when none sets one. */
int64_t gp__tenant_time_limit(const gp_engine *e, uint32_t tenant, gp_job_kind kind);
/* A job's time limit from its own time_limit_s (0 = its tenant's default for
 * kind): GP_ERR_INVALID "time_limit_s" when out of range or above that
 * default (jobs.c; submit and hold.c's update share it). */
gp_err gp__time_limit_resolve(const gp_engine *e, gp_job_kind kind, int64_t own, uint32_t tenant, int64_t *limit,
                              gp_error *err);
bool gp__tenant_is_leaf(const gp_engine *e, uint32_t tenant);
/* job_limits.c: a tenant's effective job defaults and maximums (own, else
 * the nearest ancestor's; a default left unset is the maximum); the range
 * of a spec's values; the rules over t's subtree after tenant `set`
 * changed; a job's values against its tenant's maximums. */
void gp__tenant_job_limits(const gp_engine *e, uint32_t t, gp_job_limits *defaults, gp_job_limits *max);
gp_err gp__job_limits_spec_check(const gp_tenant_spec *s, gp_error *err);
gp_err gp__job_limits_tree_check(const gp_engine *e, uint32_t t, uint32_t set, gp_error *err);
gp_err gp__job_limits_check(const gp_engine *e, const gp_job_spec *s, uint32_t tenant, gp_error *err);
/* gp_engine_job_defaults' books: s's cpu_millis, mem_mib and pids_max
 * left 0 get tenant's effective defaults. */
void gp__job_limits_fill(const gp_engine *e, uint32_t tenant, gp_job_spec *s);
/* Its fair-share weight: as set, else its guaranteed GPUs (at least 1; 1
 * without a guarantee). */
double gp__tenant_weight(const gp_engine *e, const gp__tenant *t);
/* Tenant t's entitlement walked up its path (hierarchical DRF): at each
 * level its weight over the weights of it and its siblings. */
double gp__tenant_entitlement_walk(const gp_engine *e, uint32_t t);
/* gp_engine_tenant_entitlement's answer: kept in e->entitlement, walked
 * when not known; 0 for a removed or unknown tenant. */
double gp__tenant_entitlement(const gp_engine *e, uint32_t tenant);
/* Every tenant's entitlement into e->entitlement, after a change of the
 * tree, a weight or a guarantee (tenants.c, snapshot.c). */
void gp__entitlements_update(gp_engine *e);
void gp__tenants_free(gp_engine *e);
/* gp_engine_tenant_set without its consequences for jobs (engine.c). */
gp_err gp__tenant_set(gp_engine *e, const char *path, const gp_tenant_spec *spec, int64_t now, gp_error *err);
/* The tenant whose own "untrusted" makes t untrusted (t itself or an
 * ancestor); t when t is trusted. */
uint32_t gp__trust_source(const gp_engine *e, uint32_t tenant);

/* ---- jobs.c ---- */
/* A job on shared GPUs (MIG, MPS, time-slicing). */
static inline bool gp__job_shared(const gp__job *j)
{
    return j->isolation != GP_ISO_EXCLUSIVE;
}
/* Whole GPUs (not shared, at least one): the jobs of engine->type_running. */
static inline bool gp__job_whole_gpus(const gp__job *j)
{
    return !gp__job_shared(j) && j->gpus > 0;
}
uint32_t gp__job_lookup(const gp_engine *e, uint64_t id);
void gp__job_demand(const gp_engine *e, const gp__job *j, int type, gp_res *out);
/* Milli-GPUs one replica of j takes on GPU g (or, g NULL, at most). */
int gp__replica_milli(const gp_engine *e, const gp__job *j, const gp__gpu *g);
/* MiB of GPU memory one replica of j holds on GPU g (MPS limits; 0 otherwise). */
int64_t gp__replica_mem(const gp_engine *e, const gp__job *j, const gp__gpu *g);
/* The org (top-level tenant) of j's tenant. */
uint32_t gp__job_org(const gp_engine *e, const gp__job *j);
/* The trust domain a replica of j gives a shared GPU: its org for MPS and
 * time-slicing, its tenant for an untrusted MIG tenant, else GP__NONE. */
uint32_t gp__share_domain(const gp_engine *e, const gp__job *j);
void gp__job_transition(gp_engine *e, uint32_t job, gp_job_state to, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A history line without a state change (promotion, demotion). */
void gp__job_note(gp_engine *e, uint32_t job, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool gp__queue_insert(gp_engine *e, uint32_t job);
void gp__queue_remove(gp_engine *e, uint32_t job);
/* A job whose demand on every GPU type is 0 (CPU-only work; jobs.c). */
bool gp__job_asks_no_gpu(const gp_engine *e, const gp__job *j);
/* Releases t's queue array (whose start lies pending_front before pending). */
void gp__queue_free(gp__tenant *t);
/* List a job as running on GPU type `type` (also in type_running when it
 * holds whole GPUs); false, nothing listed, when out of memory. */
bool gp__running_add(gp_engine *e, uint32_t job, int type);
void gp__running_remove(gp_engine *e, uint32_t job);
/* Rebuild type_running and running_due from running (snapshot.c); false
 * when out of memory. */
bool gp__running_derived_rebuild(gp_engine *e);
/* When the tick must look at a running or preempting job: at its time
 * limit while running, at the end of its grace while preempting;
 * INT64_MAX when neither applies.  engine->running_due keeps it per entry
 * of engine->running: gp__job_transition and gp__job_grace_begin update it. */
int64_t gp__running_due(const gp__job *j);
void gp__job_release_slot(gp_engine *e, uint32_t job);
void gp__jobs_free(gp_engine *e);
/* gp_engine_job_submit's books (engine.c owns the event): validate the
 * spec, take a slot, queue the job pending; *job is its slot. */
gp_err gp__job_create(gp_engine *e, const gp_job_spec *s, int64_t now, uint32_t *job, gp_error *err);
/* The accepted types of a checked spec, a bit per type (0xff: any). */
uint8_t gp__job_type_mask(const gp__fleet *f, const gp_job_spec *s);

/* ---- jobs.c: grace ---- */
/* When a job told now to stop within `grace` seconds frees its GPUs: now +
 * grace, made conservative by the config's clock_resolution_s; now for
 * grace 0.  Every deadline after which a job's GPUs go to others uses it. */
int64_t gp__grace_deadline(const gp_engine *e, int64_t grace);
/* The job is told now to stop within its grace: its deadline is set (and
 * its entry of engine->running_due with it). */
void gp__job_grace_begin(gp_engine *e, uint32_t job);

/* ---- claims.c ---- */
/* Claim the planned GPUs (n of them; for a shared job, MIG start slot[i])
 * for reclaiming job while its victims' grace runs; the MPS covers are
 * counted (victims in grace for it cover them). */
void gp__claims_plan(gp_engine *e, uint32_t job, const uint32_t *plan, const int8_t *slot, size_t n);
/* Set the covers of job's MPS claims to what its victims hold now. */
void gp__claims_cover_recount(gp_engine *e, uint32_t job);
/* A victim whose shares covered an MPS claim leaves its GPUs (released):
 * the claim no longer counts on them. */
void gp__claims_uncover(gp_engine *e, uint32_t victim);
/* Release job's claims for a placement attempt / take them back after a
 * failed one / give them up for good (placed, cancelled, victims gone). */
void gp__claims_drop(gp_engine *e, uint32_t job);
void gp__claims_retake(gp_engine *e, uint32_t job);
void gp__claims_forget(gp_engine *e, uint32_t job);
/* Room may have come for reclaims of `type` (-1: every type): GPUs, CPU or
 * memory freed, a running job became a possible victim, a claim given up,
 * a node back: the searches that found nothing there are forgotten. */
void gp__reclaim_room(gp_engine *e, int type);

/* ==== policies (see "Layers" above) ==== */

/* ---- dedicated.c ---- */
/* At each pass's start: e->fenced (is any tenant dedicated, or does any
 * node run a dedicated domain's replicas?  No fence otherwise) and the
 * list of nodes that run a domain's replicas. */
void gp__fence_begin(gp_engine *e);
/* A job just placed (placement.c): a dedicated one's nodes join the list. */
void gp__fence_note(gp_engine *e, uint32_t job);
/* Bar the nodes job may not share (another dedicated domain runs there; or
 * job's own domain is dedicated and others run there) for its looks / put
 * them back (the pass does at its end).  Only while e->fenced.  A fence up
 * for the same domain with no decision since is kept as it is.  False
 * when out of memory: the fence is not whole, and the job must not be
 * looked at (put it down). */
bool gp__fence_up(gp_engine *e, uint32_t job);
void gp__fence_down(gp_engine *e);
/* The wait of a job that found no room while fenced: GP_WAIT_DEDICATED
 * when the barred nodes hold free GPUs of an accepted type, else *w as is;
 * pools_only: only for the free GPUs of owned pools (c = 2). */
void gp__fence_wait(const gp_engine *e, const gp__job *j, uint8_t types, bool pools_only, gp_wait *w);
/* Owned pools (the same fence): the owner of the pool `pool` that is
 * tenant or one of its ancestors, GP__NONE when tenant owns no such pool. */
uint32_t gp__pool_owned_by(const gp_engine *e, uint32_t pool, uint32_t tenant);
/* The nearest of tenant and its ancestors that owns a pool, GP__NONE. */
uint32_t gp__pool_owner_of(const gp_engine *e, uint32_t tenant);
/* Is running job v a borrower on a pool that tenant owns (v is from
 * outside that pool's owner's subtree)? */
bool gp__pool_borrower(const gp_engine *e, uint32_t tenant, const gp__job *v);
/* Narrow the fence: to_own, to the nodes of the pools tenant owns (the
 * owner's reclaim, reclaim.c); else off every owned pool tenant is outside
 * of, lent or not (a reservation never holds nodes its owner may take
 * back, backfill.c).  Returns the mark to widen back to, SIZE_MAX when out
 * of memory (nothing narrowed). */
size_t gp__fence_narrow(gp_engine *e, uint32_t tenant, bool to_own);
void gp__fence_widen(gp_engine *e, size_t mark);

/* ---- sharing.c ---- */
/* Whether one MPS share of j fits GPU g now: beside the shares and the
 * claims on it, in the same trust domain. */
bool gp__mps_fits(const gp_engine *e, const gp__job *j, const gp__gpu *g);
/* A shared job binds on what it claimed: its claimed GPUs and slices, if
 * they hold it now (GPUs in e->scratch.out, *type their type). */
bool gp__place_claimed(gp_engine *e, const gp__job *j, uint8_t types, int *type);
bool gp__place_shared(gp_engine *e, const gp__job *j, int type);
/* One replica of a shared job onto GPU gpu (MIG start slice or -1): counts
 * on the GPU and its node; true when a MIG layout changed. */
bool gp__share_take_one(gp_engine *e, const gp__job *j, uint32_t owner, uint32_t gpu, int start);
/* Take / give back the slices of a placed shared job (real or pretend). */
void gp__shared_take(gp_engine *e, uint32_t job, bool emit);
void gp__shared_give(gp_engine *e, uint32_t job);
gp_err gp__shared_check(const gp_engine *e, gp_error *err);
/* The job asks for a level its tenant's trust forbids now (mps or
 * timeslice for an untrusted tenant): no placement may take it. */
bool gp__trust_forbids(const gp_engine *e, const gp__job *j);
/* A running MIG job whose tenant became untrusted: where its GPUs host only
 * that tenant's instances they become the tenant's own (true); false, and
 * nothing changed, when one hosts anybody else's. */
bool gp__mig_keep_untrusted(gp_engine *e, uint32_t job);

/* ---- fragmentation.c ---- */
/* Whether a job is placed by node score: MPS shares always; CPU-only and
 * single-node whole-GPU work when every pool uses one of the paper's
 * scores.  Topology any only. */
bool gp__scored_applies(const gp_engine *e, const gp__job *j);
/* Place by node score over every node of the accepted `types`; on success
 * the GPUs are in e->scratch.out and *type is the chosen GPU type. */
bool gp__place_scored(gp_engine *e, const gp__job *j, uint8_t types, int *type);
void gp__workload_observe(gp_engine *e, const gp__job *j);
int gp__job_tag(const gp__job *j);
void gp__node_tag(gp_engine *e, const gp__job *j, int sign);
/* Forget every share shape's scores (a pool's score changed) and free them. */
void gp__share_scores_forget(gp_engine *e);

/* ---- placement.c ---- */
/* Find GPUs for job on type (held nodes usable when use_held); on success the
 * chosen GPUs are in e->scratch.out and true is returned.  Changes nothing. */
bool gp__place_find(gp_engine *e, const gp__job *j, int type, bool use_held);
/* The same for a job gp__scored_applies turned down (the caller asked it once
 * for all its types and passes; engine.c's look). */
bool gp__place_find_unscored(gp_engine *e, const gp__job *j, int type, bool use_held);
/* Why a job of this shape can never fit the fleet as it is (wait code) or NONE. */
gp_wait gp__place_possible(const gp_engine *e, const gp__job *j);
/* The same against a shape (the fleet's own, or its registered one). */
gp_wait gp__place_possible_in(const gp__fleet *f, const gp__fleet_shape *s, const gp__job *j);
/* Take the GPUs in j->placed (CPU and memory too) / give them back and
 * free j->placed.  Only fleet bookkeeping; engine.c does the rest. */
void gp__place_commit(gp_engine *e, uint32_t job, int type);
void gp__place_release(gp_engine *e, uint32_t job);

/* ---- backfill.c ---- */
/* A reservation's start when it waits on running jobs with neither an
 * expected runtime nor a time limit: no time is known. */
#define GP__START_UNKNOWN INT64_MAX
/* How long a job runs once bound, as far as the engine knows: its expected
 * runtime, capped by its time limit plus grace; else the limit plus grace;
 * 0 when neither bounds it. */
int64_t gp__job_duration(const gp__job *j);
void gp__reservations_clear(gp_engine *e);
/* Try to hold capacity for job on one of its types; true if it now holds it.
 * guaranteed: the job would run guaranteed (it can reclaim burstable work). */
bool gp__reserve(gp_engine *e, uint32_t job, uint8_t types, bool guaranteed);
/* The reservation this job would delay if placed on held nodes, or NULL. */
const gp__reservation *gp__reservation_for(const gp_engine *e, int type);

/* ---- admission.c ---- */
/* GP_WAIT_NONE when admissible (cls set), else the wait (LIMIT, USER_LIMIT). */
/* *borrowed_limit: refused at a limit only because of borrowed usage (the
 * job fits its guarantees, and guaranteed usage + demand fits the limit). */
gp_wait gp__admit(gp_engine *e, const gp__job *j, int type, gp_class *cls, bool *borrowed_limit);
bool gp__fits_guarantee(const gp_engine *e, uint32_t tenant, const gp_res *demand, int type);
void gp__lending_reserve(const gp_engine *e, int64_t out[GP_MAX_GPU_TYPES]);
/* The part of that reserve (GPUs of `type`) held by tenant's own outermost
 * non-lending ancestor (or itself): it never blocks the tenant. */
int64_t gp__lending_reserve_own(const gp_engine *e, uint32_t tenant, int type);
void gp__promote(gp_engine *e);
void gp__demote_over_guarantee(gp_engine *e);

/* ---- fairshare.c ---- */
void gp__fair_begin(gp_engine *e);
/* Next job in fair order for this pass, or GP__NONE when all were seen. */
uint32_t gp__fair_next(gp_engine *e, bool guaranteed_phase);

/* ---- reclaim.c ---- */
/* Try to preempt borrowers of `type` so that job fits; true if victims
 * were chosen (they are PREEMPTING, their GPUs claimed for job). */
bool gp__reclaim(gp_engine *e, uint32_t job, int type);
/* Owned pools: preempt jobs from outside the owner's subtree on the pools
 * job's tenant owns so that job fits there; true if victims were chosen
 * (PREEMPTING, their GPUs claimed for job).  False at once when no pool is
 * owned. */
bool gp__reclaim_pool(gp_engine *e, uint32_t job, int type);
/* Preempt borrowers under a full ancestor limit that keeps a guaranteed
 * job out; true if victims were chosen (no claims: it frees quota). */
bool gp__reclaim_limit(gp_engine *e, uint32_t job, int type);
/* Fair share: a burstable job of a leaf below its fair share preempts
 * borrowers of tenants that stay at least as far above theirs; true if
 * victims were chosen (PREEMPTING, their GPUs claimed for job). */
bool gp__reclaim_fair(gp_engine *e, uint32_t job, int type);
/* GPU-seconds of j's work since its last checkpoint (or bind): what a
 * preemption now would lose. */
int64_t gp__work_lost(const gp_engine *e, const gp__job *j);
/* May running job j be a reclaim victim (burstable, not preempted
 * max_preemptions times)?  e->borrowed counts the GPUs of those: a
 * whole-GPU reclaim that needs more than they and the free GPUs hold is
 * not searched. */
bool gp__borrows_reclaimably(const gp_engine *e, const gp__job *j);
/* The reclaiming job no longer needs its victims still in grace (`why`
 * completes "job N ..."): they go back to running, with a TRANSITION that
 * says why; a victim cancelled meanwhile keeps stopping. */
void gp__reclaim_withdraw(gp_engine *e, uint32_t job, const char *why);

/* ---- booking.c ---- */
/* Bookings before the pass: state changes due at e->now (clearing,
 * active, no-show, ended), borrowers preempted off booked GPUs, jobs of
 * each booking counted. */
void gp__booking_tick(gp_engine *e);
/* The booking of that name or id that is live (not final), GP__NONE. */
uint32_t gp__booking_live(const gp_engine *e, const char *name);
uint32_t gp__booking_by_id(const gp_engine *e, uint64_t id);
/* Around one job's looks: bar the nodes it may not use because of
 * bookings (booked for others and clearing, active and not lent, or
 * planned and starting before the job could end; a job naming a booking:
 * every node but the booking's).  False: the job is not looked at now
 * (its booking is not active; j->wait says so), nothing barred. */
bool gp__booking_fence_up(gp_engine *e, uint32_t job);
void gp__booking_fence_down(gp_engine *e);
/* A node is lost or a GPU failed: substitute the bookings' GPUs there. */
void gp__booking_gpus_lost(gp_engine *e);
/* Invariants of the bookings (invariants.c): GP_OK or the first violation. */
gp_err gp__booking_check(const gp_engine *e, gp_error *err);
void gp__bookings_free(gp_engine *e);

/* ==== top (see "Layers" above) ==== */

/* ---- engine.c ---- */
/* The caller's settings (NULL: the defaults) with out-of-range values
 * brought into range, as gp_engine_new keeps them. */
gp_engine_config gp__config_resolve(const gp_engine_config *cfg);

#endif

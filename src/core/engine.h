/* engine.h - the scheduling engine: events in, decisions out.
 *
 * The engine is a pure state machine.  It never reads a clock, a file, a
 * socket or a random source: every event carries `now` (seconds on the
 * caller's clock, never decreasing), and the engine answers with decisions
 * that the caller carries out (bind a job to GPUs, preempt a job with a
 * grace period, stop a job, report a drained node, open and close metering
 * intervals).  The daemon feeds it real events, the simulator trace events,
 * the tests hand-written ones: the same code everywhere, so every
 * scheduling result reproduces from an event log.
 *
 * One call = one event.  Events change state and may emit decisions at
 * once (a cancel emits a STOP); placement happens only in gp_engine_tick(),
 * which runs timers (grace periods that ended) and one scheduling pass.
 *
 * Ownership: gp_engine_new() allocates, gp_engine_free() frees.  Strings
 * in specs are copied.  Pointers returned by the engine (decisions, paths,
 * names) stay valid until the next call that changes the engine.
 * Not thread-safe: one thread owns an engine (the daemon's engine thread).
 */
#ifndef GP_CORE_ENGINE_H
#define GP_CORE_ENGINE_H

#include "core/booking.h"
#include "core/types.h"
#include "util/error.h"

typedef struct gp_engine gp_engine;

typedef struct gp_engine_config {
    int64_t preempt_cooldown_s;    /* a job preempted less than this ago is a victim of last resort (default 600) */
    int max_preemptions;           /* a job the engine already preempted this often is no reclaim victim:
                                      it runs to its end (default 3; 0 = no cap) */
    bool fair_share_reclaim;       /* a burstable job of a tenant below its fair share preempts borrowers
                                      of tenants that stay above it (docs/scheduling.md; default false: opt-in) */
    int max_reclaim_searches;      /* reclaim searches per pass, bounds pass time (default 256) */
    int64_t overdue_grace_s;       /* a running job past its expected runtime is assumed to end this soon (default 300) */
    int64_t mig_reconfigure_interval_s; /* a MIG GPU's layout changes at most this often (default 60) */
    int64_t clock_resolution_s;    /* `now` lags the caller's true time by up to this much (whole-second
                                      clocks: 1): added to every grace deadline after which a job's GPUs
                                      are freed, so no grace ends early in true time (default 0) */
} gp_engine_config;

/* Defaults for every field. */
gp_engine_config gp_engine_config_default(void);

/* cfg may be NULL for defaults.  Returns NULL only when out of memory. */
gp_engine *gp_engine_new(const gp_engine_config *cfg);
void gp_engine_free(gp_engine *e);

/* ---- fleet events ---- */

/* A node registers (or comes back up with the same shape).  A returning
 * node keeps its GPUs' health. */
gp_err gp_engine_node_add(gp_engine *e, const gp_node_spec *spec, int64_t now, gp_error *err);
/* The node is gone: its jobs are stopped and requeued, its GPUs leave the
 * schedulable fleet until it is added again. */
gp_err gp_engine_node_lost(gp_engine *e, const char *node, int64_t now, gp_error *err);
/* Drain (no new work; DRAINED decision once empty) or undrain. */
gp_err gp_engine_node_drain(gp_engine *e, const char *node, bool drain, int64_t now, gp_error *err);
/* A GPU's health changed.  A job on a GPU that turns unhealthy is stopped
 * and requeued; an unhealthy GPU is never chosen. */
gp_err gp_engine_gpu_health(gp_engine *e, const char *node, int gpu_index, bool healthy, int64_t now,
                            gp_error *err);

/* An admin declared a GPU type before its nodes arrive: the engine knows
 * the name from now on (jobs and quotas may name it, in any case; the
 * first spelling the engine learnt is the one kept), with no GPU of it
 * until a node registers one.  A type already known changes nothing.
 * GP_ERR_INVALID "name" for an empty or over-long name, GP_ERR_CONFLICT
 * "name" when the engine knows GP_MAX_GPU_TYPES types already. */
gp_err gp_engine_gpu_type_declare(gp_engine *e, const char *name, int64_t now, gp_error *err);

/* Configure a placement pool (created on first use; nodes name their pool).
 * spec->owner may name a tenant that does not exist (yet): the pool is
 * then closed to every job until it does (see dedicated.c). */
gp_err gp_engine_pool_set(gp_engine *e, const char *pool, const gp_pool_spec *spec, gp_error *err);

/* Set the workload mix of the fragmentation measure (copied). n = 0 goes
 * back to learning it from submitted jobs. */
gp_err gp_engine_workload_set(gp_engine *e, const gp_workload_shape *shapes, size_t n, gp_error *err);
/* The fleet's fragmentation now: expected milli-GPUs the workload mix could
 * not use (FGD's measure), summed over schedulable nodes. */
double gp_engine_fragmentation(gp_engine *e);

/* The caller's clock resolution changed (see gp_engine_config's
 * clock_resolution_s, 0..60): graces that start from now on end this much
 * later.  An event, so that an event log written under one resolution
 * replays under it. */
gp_err gp_engine_clock_resolution_set(gp_engine *e, int64_t seconds, int64_t now, gp_error *err);
int64_t gp_engine_clock_resolution(const gp_engine *e);

/* ---- tenant events ---- */

/* Create or update the tenant at path ("org", "org/team", ...).  Its parent
 * must exist.  Rejected (nothing changed) when children's guarantees would
 * not fit in the parent's, or the top level's in the healthy fleet, and
 * (GP_ERR_INVALID, field "trust") when it asks for trusted below an
 * untrusted ancestor: trust is a floor.  A change that makes tenants
 * untrusted preempts their running mps/timeslice work (and MIG work that
 * shares a GPU with another tenant) with its grace: PREEMPT decisions with
 * by_job 0; their pending mps/timeslice jobs wait with GP_WAIT_TRUST. */
gp_err gp_engine_tenant_set(gp_engine *e, const char *path, const gp_tenant_spec *spec, int64_t now,
                            gp_error *err);
/* Remove a tenant with no children and no live jobs. */
gp_err gp_engine_tenant_remove(gp_engine *e, const char *path, int64_t now, gp_error *err);

/* ---- job events ---- */

gp_err gp_engine_job_submit(gp_engine *e, const gp_job_spec *spec, int64_t now, gp_error *err);
/* Would gp_engine_job_submit take this spec now?  The same checks, nothing
 * changed (for callers that must check many jobs before submitting any). */
gp_err gp_engine_job_check(const gp_engine *e, const gp_job_spec *spec, gp_error *err);
/* Could a node or block of the fleet ever hold a job of this (checked)
 * spec: its registered nodes, whatever their state now, as if empty (GPUs
 * per node, NVLink domains, blocks, CPU and memory per node, sharing modes
 * and MIG profiles)?  GP_OK when yes, or when the job takes any GPU type
 * and no GPU node is registered at all (a fleet being brought up: it waits
 * for one); else GP_ERR_NEVER_FITS with the field to change and why, e.g.
 * field "gpus", "16 H100 GPUs in one replica, but the largest H100 node
 * has 8; ...", or field "gpu_types", "no node of GPU type H200 has joined
 * the fleet yet" for types it names (declared) that no node has.  Changes nothing
 * (why.c: the same judgement the pass makes, GP_WAIT_TOPOLOGY,
 * GP_WAIT_NODE_SHAPE, GP_WAIT_SHARING_MODE). */
gp_err gp_engine_job_fits(const gp_engine *e, const gp_job_spec *spec, gp_error *err);
/* Fills the spec's cpu_millis, mem_mib and pids_max left 0 with its
 * tenant's job defaults (job_limits.c), changing nothing in the engine:
 * the daemon calls it before it logs a submit, so the log holds the values
 * the job runs with.  GP_ERR_NOT_FOUND "tenant" for an unknown tenant. */
gp_err gp_engine_job_defaults(const gp_engine *e, gp_job_spec *spec, gp_error *err);
/* Pending: cancelled at once.  Running: STOP with its grace, cancelled once
 * the grace ends or the node reports it stopped. */
gp_err gp_engine_job_cancel(gp_engine *e, uint64_t id, int64_t now, gp_error *err);
/* What a pending job may still change (gp_engine_job_update): each field
 * only when its has_ flag is set.  `by` (copied) names who holds it. */
typedef struct gp_job_update {
    bool has_hold, hold;
    const char *by;
    bool has_priority;
    int priority;                /* GP_PRIORITY_MIN..GP_PRIORITY_MAX */
    bool has_time_limit;
    int64_t time_limit_s;        /* as at submit: 0 = its tenant's default, never above that default */
} gp_job_update;
/* Change a pending job (hold.c).  A held job is never placed; its wait
 * is GP_WAIT_HELD ("held by BY") until a release, which puts it back in
 * its queue as new.  Refused, nothing changed: GP_ERR_CONFLICT naming the
 * first field given when the job is no longer pending, GP_ERR_INVALID
 * naming a bad value, GP_ERR_NOT_FOUND "id".  Emits no decision. */
gp_err gp_engine_job_update(gp_engine *e, uint64_t id, const gp_job_update *u, int64_t now, gp_error *err);
/* The node reports the job's processes ended. */
gp_err gp_engine_job_finished(gp_engine *e, uint64_t id, gp_exit how, int64_t now, gp_error *err);
/* The job saved a checkpoint: work before now is not lost on preemption. */
gp_err gp_engine_job_checkpointed(gp_engine *e, uint64_t id, int64_t now, gp_error *err);
/* Forget a job in a final state (succeeded, failed, cancelled). */
gp_err gp_engine_job_forget(gp_engine *e, uint64_t id, gp_error *err);

/* Time passes: end grace periods that are over, promote burstable jobs
 * whose tenant has guarantee free again, and run one scheduling pass. */
gp_err gp_engine_tick(gp_engine *e, int64_t now, gp_error *err);

/* ---- decisions ---- */

/* Decisions emitted since the last clear, oldest first.  The engine owns
 * the array; it is valid until the next event or clear. */
const gp_decision *gp_engine_decisions(const gp_engine *e, size_t *count);
void gp_engine_decisions_clear(gp_engine *e);

/* ---- queries (read-only) ---- */

int64_t gp_engine_now(const gp_engine *e);
/* How many times the engine's state changed in a way a later event can
 * see: every decision, plus the few silent changes (claims given up).  A
 * tick that leaves it unchanged changed nothing that matters, so an event
 * log may leave that tick out and a replay still reaches the same state. */
uint64_t gp_engine_changes(const gp_engine *e);
void gp_engine_stats_get(const gp_engine *e, gp_engine_stats *out);

gp_err gp_engine_job_info(const gp_engine *e, uint64_t id, gp_job_info *out, gp_error *err);
/* The user the job was submitted with: the engine's string, valid until
 * the engine changes; NULL when it has none or there is no such job. */
const char *gp_engine_job_user(const gp_engine *e, uint64_t id);
/* The fraction of the fleet hierarchical DRF gives the tenant: at each
 * level of its path, its weight / the weights of it and its siblings
 * (fair-share reclaim's entitlement; the simulator's fairness index).
 * Example: org o (weight 8) beside team z (weight 2), o's teams p (3) and
 * q (1): p gets 8/10 x 3/4 = 0.6.  0 when there is no such tenant. */
double gp_engine_tenant_entitlement(const gp_engine *e, uint32_t tenant);
/* The job's GPUs (global GPU indexes), replica by replica (gpus per replica
 * consecutive).  Returns how many were written (<= cap), 0 when not placed. */
size_t gp_engine_job_gpus(const gp_engine *e, uint64_t id, uint32_t *out, size_t cap);
/* For mig/mps/timeslice jobs: one slice per replica.  Returns the number
 * written (<= cap), 0 when not placed or exclusive. */
size_t gp_engine_job_slices(const gp_engine *e, uint64_t id, gp_slice *out, size_t cap);
/* The node replica r of the job runs on: its name, valid until the engine
 * changes; NULL when the job holds no GPU (not placed, or CPU-only) or has
 * no replica r.  The nodes of a placement without copying its GPUs. */
const char *gp_engine_job_node(const gp_engine *e, uint64_t id, int replica);
/* Why the job is where it is, as one sentence: the wait reason while
 * pending, otherwise the reason of its last transition.  Returns the length
 * (like snprintf). */
size_t gp_engine_why(const gp_engine *e, uint64_t id, char *buf, size_t len);
/* Every blocker of a pending job, not only the first the pass met (that
 * one is its wait, gp_engine_why's sentence): untrusted isolation, the
 * fleet's shapes, the limit of every tenant on its path and the nearest
 * per-user limit on every accepted GPU type, then the wait the pass left
 * when it is none of these (capacity, a reservation, a fence...).  Reads
 * only: the pass decides nothing from it.  Writes up to cap into out (the
 * caller's array) and returns how many there are (0: not pending or no
 * job). */
size_t gp_engine_blockers(const gp_engine *e, uint64_t id, gp_wait *out, size_t cap);
/* The job's recent state changes, oldest first (the engine keeps the last
 * few; decisions carry all of them).  Returns the number written. */
size_t gp_engine_job_history(const gp_engine *e, uint64_t id, gp_history_entry *out, size_t cap);

size_t gp_engine_tenant_count(const gp_engine *e);       /* indexes 0..count-1, some may be removed */
gp_err gp_engine_tenant_find(const gp_engine *e, const char *path, uint32_t *index, gp_error *err);
/* Returns false for a removed or out-of-range index. */
bool gp_engine_tenant_get(const gp_engine *e, uint32_t index, gp_tenant_info *out);
const char *gp_engine_tenant_path(const gp_engine *e, uint32_t index); /* "" when unknown */

size_t gp_engine_pool_count(const gp_engine *e);
/* Pool `index` (0 = "default"), its nodes and what outsiders borrow there;
 * false when out of range. */
bool gp_engine_pool_get(const gp_engine *e, uint32_t index, gp_pool_info *out);
/* The index of the pool called name, UINT32_MAX when none; the name of
 * pool `index`, "" when none. */
uint32_t gp_engine_pool_find(const gp_engine *e, const char *name);
const char *gp_engine_pool_name(const gp_engine *e, uint32_t index);
size_t gp_engine_node_count(const gp_engine *e);
bool gp_engine_node_get(const gp_engine *e, uint32_t index, gp_node_info *out);
size_t gp_engine_gpu_count(const gp_engine *e);
bool gp_engine_gpu_get(const gp_engine *e, uint32_t gpu, gp_gpu_info *out);

int gp_engine_gpu_type_count(const gp_engine *e);
const char *gp_engine_gpu_type_name(const gp_engine *e, int type); /* NULL when out of range */
/* Healthy, schedulable capacity of the fleet per dimension. */
void gp_engine_fleet_capacity(const gp_engine *e, gp_res *out);
/* GPUs of every node, up or not, per GPU type (out[type], the caller's
 * GP_MAX_GPU_TYPES entries): the capacity the ledger records.  One pass
 * without copying each node (gp_engine_node_get), as cheap as the fleet. */
void gp_engine_gpus_by_type(const gp_engine *e, int64_t out[GP_MAX_GPU_TYPES]);

/* ---- snapshots (snapshot.c) ---- */

/* The format this build writes and reads (bumped when a field of the
 * engine's state changes meaning). */
#define GP_ENGINE_SNAPSHOT_VERSION 4

/* The whole state of e (fleet, tenants, jobs, reservations, usage and
 * fair-share books, cool-downs, counters and ids) into *buf, *len bytes;
 * the caller frees *buf with free().  Taken between events: refused
 * (GP_ERR_CONFLICT, field "decisions") while decisions are pending.
 * The format is this build's own and carries no checksum: seal it
 * (eventlog/snapshot.h) before it leaves memory. */
gp_err gp_engine_snapshot_write(const gp_engine *e, unsigned char **buf, size_t *len, gp_error *err);
/* A new engine from a snapshot, the same state machine as the one written:
 * the same events give the same decisions.  cfg (NULL: defaults) must be
 * the settings it was taken under (else GP_ERR_CONFLICT, field "config").
 * Refused with GP_ERR_INVALID: another format version (field "version"),
 * another build's layout ("layout"), a truncated, over-long or malformed
 * buffer ("snapshot").  *out is the caller's (gp_engine_free); NULL on
 * error. */
gp_err gp_engine_snapshot_read(const unsigned char *buf, size_t len, const gp_engine_config *cfg, gp_engine **out,
                               gp_error *err);

/* Recompute every invariant from first principles (GPU ownership, usage
 * sums, quotas, gang completeness).  GP_OK, or the first violation found.
 * For tests and the daemon's self-check; O(fleet + jobs). */
gp_err gp_engine_check_invariants(const gp_engine *e, gp_error *err);

#endif

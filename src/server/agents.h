/* agents.h - the node agents as gpupoold sees them: which nodes have one,
 * when each was last heard, what each should run (its assignment version),
 * the long-poll waits on those versions, and the job spec fields each
 * node's last long-poll answer carried (gp_agents_specs).
 *
 * Assignment versions: every node has a version that only grows; it starts
 * at epoch << 32 (the controller epoch, +1 at every start), so it also
 * grows across restarts.  The engine thread bumps a node's version after
 * each commit whose events or decisions touch the node (a job bound,
 * preempted, stopped, finished or checkpointed with a replica there, the
 * node added, lost, drained or a GPU's health changed), then wakes that
 * node's long-polls (a condition per node: a bind on n1 wakes n1's waiting
 * thread, not the thousands of other nodes'); GET /v1/agents/{node}/assignments?after=V answers as soon as
 * the node's version passes V.
 *
 * How it learns what a commit touched: gp_agents_observe sees every event
 * the journal applies (live and during the start-up replay) with the
 * decisions it caused, and keeps, per live placed job, the nodes its
 * replicas are on and why it is being stopped (preempt, cancel,
 * time_limit), so a job that leaves its nodes (requeued, finished) still
 * marks the nodes it left.  Because the start-up replay feeds it the same
 * events, all of it is rebuilt at every start.
 *
 * Liveness: a node whose agent has registered (it holds a live node
 * credential: the tokens table, so it survives restarts) is lost once
 * silent for --node-lost-after seconds; last-seen is in memory only and
 * starts at gpupoold's start.  Heartbeats (API threads) note last-seen,
 * the replicas the node runs and its GPUs' telemetry (opaque JSON, kept in
 * memory for GET /v1/nodes/{name}).
 *
 * Threads: the job map and the dirty list are the engine thread's; the
 * node table is shared: the engine thread writes it under `lock` (and may
 * read it without, being its only writer), API threads read and note
 * heartbeats under `lock`.  gp_agents_stop wakes every long-poll (shutdown).
 *
 * Ownership: gp_agents owns everything in it; views are new references.
 */
#ifndef GP_SERVER_AGENTS_H
#define GP_SERVER_AGENTS_H

#include "eventlog/event.h"
#include "store/store.h"
#include "util/hashmap.h"

#include <jansson.h>
#include <pthread.h>

typedef struct gp__agent_node gp__agent_node;
typedef struct gp__agent_job gp__agent_job;

typedef struct gp_agents {
    pthread_mutex_t lock;
    bool stopping;
    uint64_t wakeups;          /* long-polls woken before their wait ended */
    int64_t epoch;
    int64_t lost_after_s;
    gp_strmap node_index;      /* name -> index into nodes */
    gp__agent_node *nodes;
    size_t n_nodes, cap_nodes;
    /* engine thread only */
    gp_u64map job_index;       /* job id -> index into jobs */
    gp__agent_job *jobs;
    size_t n_jobs, cap_jobs;
    uint32_t *dirty;           /* nodes touched since the last publish: the first n_sealed by */
    size_t n_dirty, cap_dirty; /* the commit in flight (gp_agents_seal), the rest by the batch after it */
    size_t n_sealed;
} gp_agents;

/* Why a job's replicas are told to stop ("" = they run). */
typedef struct gp_agent_stop {
    char reason[16];           /* preempt, cancel, time_limit */
    int64_t since;             /* when the engine decided it (engine time, s) */
    int64_t since_ms;          /* the same in wall-clock ms; -1 when not known
                                * (a decision of an earlier second: replayed) */
    int64_t grace_s;           /* the grace it was given */
} gp_agent_stop;

void gp_agents_init(gp_agents *a, int64_t epoch, int64_t lost_after_s);
/* A follower that takes the lead (server/lease.h): its epoch from now on;
 * every node's version moves up to epoch << 32. */
void gp_agents_set_epoch(gp_agents *a, int64_t epoch);
void gp_agents_free(gp_agents *a);
/* Marks the nodes that hold a live node credential as agent nodes, last
 * seen now (start-up). */
gp_err gp_agents_load(gp_agents *a, gp_store *store, int64_t now_ms, gp_error *err);

/* ---- the engine thread ---- */

/* One event the engine accepted, with its decisions still pending in e. */
void gp_agents_observe(void *agents, const gp_engine *e, const gp_event *ev);
/* Snapshots (server/snapshots.h): what the job map holds that the engine
 * does not (which jobs it lists, why and since when each is stopped), a
 * new reference; gp_agents_restore fills the table from a restored engine
 * and that object (before the log's tail is observed), and
 * gp_agents_reset_jobs empties the job map for a full replay.  The void *
 * is a gp_agents * (the journal's hooks). */
json_t *gp_agents_saved(const gp_agents *a);
void gp_agents_restore(void *agents, const gp_engine *e, const json_t *saved);
void gp_agents_reset_jobs(void *agents);

/* gp_agents_seal when a commit is sent: the nodes touched so far are its.
 * gp_agents_publish once it is durable: bumps those nodes' versions and
 * wakes their waits (nodes the next batch touched meanwhile wait for its
 * commit). */
void gp_agents_seal(gp_agents *a);
void gp_agents_publish(gp_agents *a);
/* Registered: an agent node, seen now. */
void gp_agents_registered(gp_agents *a, const char *node, int64_t now_ms);
/* The agent nodes silent longer than lost_after_s and still up: calls
 * lost(ctx, name) for each. */
void gp_agents_silent(gp_agents *a, int64_t now_ms, void (*lost)(void *ctx, const char *node), void *ctx);
/* The node's version (0 when unknown) and the live jobs with a replica
 * there (ids written up to cap; returns how many there are). */
uint64_t gp_agents_version(const gp_agents *a, const char *node);
size_t gp_agents_jobs_on(const gp_agents *a, const char *node, uint64_t *ids, size_t cap);
/* Why job id is being stopped; false when it is not. */
bool gp_agents_stop_of(const gp_agents *a, uint64_t id, gp_agent_stop *out);

/* ---- any thread ---- */

/* Blocks until the node's version is past `after`, wait_ms passed or
 * gp_agents_stop; returns the version then (0 when the node is unknown). */
uint64_t gp_agents_wait(gp_agents *a, const char *node, uint64_t after, int64_t wait_ms);
void gp_agents_stop(gp_agents *a);
/* How many times a waiting long-poll was woken (a commit touched its node,
 * or the stop): gpupool_agent_poll_wakeups_total in /metrics. */
uint64_t gp_agents_wakeups(gp_agents *a);

typedef enum gp_agent_beat { GP_AGENT_BEAT_OK = 0, GP_AGENT_BEAT_UNKNOWN, GP_AGENT_BEAT_LOST } gp_agent_beat;
/* Notes a heartbeat (steals running and gpus) and gives the node's
 * assignment version; UNKNOWN: not an agent node; LOST: the node is not
 * up (it must register again). */
gp_agent_beat gp_agents_heartbeat(gp_agents *a, const char *node, json_t *running, json_t *gpus, int64_t now_ms,
                                  uint64_t *version);
/* Calls seen(ctx, name, last_seen_ms) for every agent node that is up
 * (under the lock: seen must not call back in). */
void gp_agents_each_seen(gp_agents *a, void (*seen)(void *ctx, const char *node, int64_t last_seen_ms), void *ctx);
/* Has the node an agent? */
bool gp_agents_has_agent(gp_agents *a, const char *node);
/* {"last_seen": epoch s, "running": [...], "gpus": [...]} of an agent
 * node, NULL for another. */
json_t *gp_agents_view(gp_agents *a, const char *node);

/* The job spec fields the node's last long-poll answer carried, so the
 * next one need not read the job rows again (api_agents.c): {"<job id>":
 * {spec fields}}.  A job's spec never changes after its submit, so an
 * entry is right for as long as the job lives; the object is replaced
 * whole by each answer (only the jobs it names), never changed.
 * gp_agents_specs: a new reference ({} when none); gp_agents_specs_keep
 * steals specs (dropped when the node is unknown). */
json_t *gp_agents_specs(gp_agents *a, const char *node);
void gp_agents_specs_keep(gp_agents *a, const char *node, json_t *specs);

#endif

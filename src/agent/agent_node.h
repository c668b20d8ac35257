/* agent_node.h - one node as `gpupool-agent run` drives it: its calls to
 * gpupoold (register, long-poll, heartbeat, reports, logs) and its
 * replicas, as a state machine stepped by the agent's one event loop
 * (agent.c).  No thread per node: a process drives thousands of them.
 *
 * A node's life:
 *   no credential -> POST /v1/agents:register (join token) -> credential
 *   stored 0600 -> GET assignments?after=V&wait=30 in a loop, each answer
 *   reconciled (agent_plan.h) -> replicas started, stopped, killed
 *   (agent_replica.c) -> their events queued as reports, POSTed until
 *   answered 200.  Heartbeats every heartbeat_s.  401 on any call, 409 on
 *   a heartbeat or `up: false` in a poll: register again, with the stored
 *   credential while there is one (gpupoold lets a join token alone
 *   register no existing node), else with the join token.  No answer or
 *   5xx: the next server URL after a back-off (agent_plan.h), running work
 *   untouched.  A follower's 307: every call goes to the leader it names
 *   from then on, at once (until a call to it fails); its 503 with
 *   Retry-After (no leader yet): the next URL after that many seconds.
 *
 * Ownership: the agent (agent.c) owns its nodes (gp_node_open/gp_node_close);
 * a node owns its replicas, its GPU backend handle and its JSON.
 */
#ifndef GP_AGENT_NODE_H
#define GP_AGENT_NODE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent_cert.h"
#include "agent/agent_ckpt_watch.h"
#include "agent/supervise/agent_clock.h"
#include "agent/agent_health.h"
#include "agent/agent_http.h"
#include "agent/agent_metrics.h"
#include "agent/supervise/agent_state.h"
#include "agent/gpu/gpu.h"
#include "agent/launch/launch.h"
#include "agent/gpu/node_file.h"
#include "agent/image/image_store.h"
#include "agent/xid.h"
#include "spec/assignment.h"

#define GP_AGENT_URLS_MAX 8
#define GP_AGENT_TOKEN_MAX 256
#define GP_AGENT_DIAGNOSTICS_MAX 8 /* --health-check NAME=CMD */
#define GP_AGENT_REGISTERING_MAX 32 /* registrations in flight per agent: a restart of 6,250 nodes
                                       is a queue, not a storm on gpupoold */

/* The command line of `gpupool-agent run` (agent.c parses it). */
typedef struct gp_agent_options {
    const char *urls[GP_AGENT_URLS_MAX];
    size_t n_urls;
    char join_token[GP_AGENT_TOKEN_MAX];
    const char *node_file;
    const char *state_dir;
    char work_root[GP_STATE_PATH_MAX];       /* "" = STATE/NODE/work */
    char checkpoint_root[GP_STATE_PATH_MAX]; /* default STATE/checkpoints */
    const char *cgroup_parent;               /* NULL: "gpupool" */
    bool no_cgroups;
    bool isolate_devices;                    /* default on; --no-isolate-devices */
    bool no_network_fence;                   /* --no-network-fence (agent_netfence.c) */
    const char *nft;                         /* --nft PATH; NULL: /usr/sbin/nft, else nft on PATH */
    unsigned min_job_uid;                    /* --min-job-uid (default 1000) */
    unsigned job_uid_base, job_uid_span;     /* a job without a user: base + id % span */
    unsigned default_pids_max;               /* --default-pids-max (default 1024) */
    int64_t log_max_bytes;                   /* --log-max-mib, per replica run (default 64 MiB) */
    int keep_scratch_s;                      /* --keep-scratch-s: work and /tmp folders kept (default 0) */
    bool private_tmp;                        /* a replica's own /tmp, /var/tmp: no folder of the agent's lies
                                                there (its own /dev/shm always, as root) */
    const char *oci_runtime;                 /* --oci-runtime PATH; NULL: the agent chooses */
    const char *seccomp_profile;             /* --seccomp-profile PATH; NULL: GP_CONTAINER_SECCOMP_PROFILE */
    char runtime[GP_STATE_PATH_MAX];         /* the OCI runtime replicas with an image run under; "" none */
    char runtime_note[GP_STATE_PATH_MAX + 160]; /* why that one (or why none), logged once the nodes are open */
    bool containers_optional;                /* --containers optional: an untrusted replica may run bare */
    const char *device_dir;
    int heartbeat_s;                         /* 0: what register answered */
    bool stop_on_exit;                       /* --on-exit stop */
    const char *cacert;
    const char *fault_file;
    uint64_t seed;
    char self_exe[GP_STATE_PATH_MAX];        /* this binary, for `supervise` */
    char supervise_exe[GP_STATE_PATH_MAX];   /* gpupool-supervise beside it, "" none (self_exe then) */
    const char *mps_control;                 /* --mps-control; NULL: nvidia-cuda-mps-control (agent_mps.h) */
    const char *dcgm_job_map;                /* --dcgm-job-map DIR; NULL: none (agent_dcgm.h) */
    /* health (agent_checks.c) */
    int health_every_s;                      /* periodic checks (default 300) */
    int health_timeout_s;                    /* a diagnostic's or the repair's limit (default 600) */
    const char *repair_command;              /* NULL: none (re-validate one period later) */
    int repair_attempts;                     /* default 3 */
    struct {
        char name[32];
        const char *command;                 /* points into argv */
    } diagnostics[GP_AGENT_DIAGNOSTICS_MAX];
    int n_diagnostics;
    gp_xid_table xid;                        /* the catalog's, with --xid-actions applied */
    bool nvml;                               /* --backend nvml: this host, one node */
    const char *nvml_library;                /* --nvml-library (NULL: the driver's) */
    const char *zone, *block, *pool;         /* nvml: the node's place in the fleet */
    gp_sharing sharing;                      /* nvml: --sharing, the mode of GPUs not in MIG mode */
    /* images (src/agent/image): where replicas' images are pulled to, and how */
    char image_store[GP_STATE_PATH_MAX];     /* --image-store DIR (default STATE/images) */
    int64_t image_store_bytes;               /* --image-store-gib N; 0: unbounded (the default) */
    gp_image_pull_options image_pull;        /* --pull-timeout-s (default 900), --insecure-registry HOST... */
    bool no_image_hints;                     /* --no-image-hints: gpupoold's hints are not pre-pulled */
} gp_agent_options;

typedef struct gp_node gp_node;

/* A health check or repair command running for one GPU (agent_checks.c):
 * a child of the agent in its own process group, its pidfd in the loop
 * (tag &gp_node_child_tag: a wake only; its status comes through
 * gp_node_child_reaped). */
typedef struct gp_health_child {
    pid_t pid;                           /* 0: none runs */
    int pidfd;
    gp_http_fd watch;
    bool repair;                         /* the repair command, else diagnostic `name` */
    char name[32];
    int64_t started_ms, deadline_ms;     /* mono */
    bool timed_out;                      /* killed at its deadline */
    char log[GP_STATE_PATH_MAX];         /* its stdout and stderr */
} gp_health_child;

extern char gp_node_child_tag;

/* One run of one replica (agent_replica.c). */
typedef struct gp_replica {
    uint64_t job;
    unsigned replica;
    char tenant[GP_PATH_MAX];            /* its job's tenant path, as the assignment says */
    int64_t bind_time;
    char name[96];                       /* "job7-r1-1795523111" */
    char dir[GP_STATE_PATH_MAX];         /* STATE/NODE/replicas/NAME */
    char log_path[GP_STATE_PATH_MAX];
    char checkpoint_dir[GP_STATE_PATH_MAX];
    int checkpoint_wd;                   /* its inotify watch from its stop to its end, -1 none */
    size_t n_gpus;
    char gpus[GP_MAX_GPUS_PER_NODE][GP_UUID_MAX];  /* as assigned */
    int share;                           /* how it uses them (agent_plan.h gp_plan_gpu) */
    gp_sharing slice;                    /* its slice's kind: exclusive (whole GPUs), mig, mps, timeslice */
    int milli_gpus;                      /* its slice's share of its GPU, 0 for whole GPUs */
    int64_t slice_mem_mib;               /* its slice's GPU memory as the engine counts it (an MPS job's own
                                            limit, else its share of the GPU's); 0 = not said */
    char mig_uuid[GP_UUID_MAX];          /* a MIG instance this agent made, "" none */
    struct gp_node *node;
    pid_t supervisor;
    int pidfd;                           /* the supervisor's; -1 once ended */
    gp_http_fd watch;                    /* the pidfd in the loop (tag: this replica) */
    bool ended;
    gp_proc_exit exit;
    bool exit_in_flight, exit_acked;
    bool listed;                         /* in the last assignments */
    int64_t stop_deadline;               /* what was sent, epoch ms (agent_plan.h markers) */
    gp_stop_cause stop_cause;            /* why, with a deadline */
    int64_t log_sent;                    /* bytes gpupoold has of the log, -1 unknown (ask) */
    int64_t log_skipped;                 /* the log's stream bytes never sent (rotated away first,
                                            replica_log.h): stream offset = log_sent + log_skipped;
                                            kept in DIR/log_skipped */
    bool log_eof_sent;                   /* gpupoold has all of it */
    bool log_in_flight, log_eof_in_flight;
    char image[GP_IMAGE_REF_MAX + 1];    /* its assignment's image, "" none */
    int64_t ordered_ms;                  /* epoch ms this agent took the order to run it; 0 adopted */
    bool start_reported;                 /* it exec'd and its `started` report is queued */
    bool exit_held;                      /* its exit waits one batch: its `started` goes first */
    bool keep_when_partitioned;          /* its job opted out of the partition fence (agent_partition.c) */
    int stop_signal;                     /* its job's stop signal (a signal number) */
    int64_t grace_ms;                    /* its job's checkpoint grace, -1 not said */
} gp_replica;

struct gp_node {
    const gp_agent_options *opt;
    gp_http *http;
    unsigned *registering;               /* the agent's registrations in flight (shared) */
    size_t index;                        /* in the agent, salts the back-off */
    char name[GP_NAME_MAX];
    char dir[GP_STATE_PATH_MAX];         /* STATE/NODE */
    gp_gpu gpu;
    gp_node_inventory inventory;
    char token[GP_AGENT_TOKEN_MAX];      /* "" until registered */
    int64_t epoch_max;
    int64_t server_ms, server_at_mono_ms; /* gpupoold's clock in its last poll answer (0: none said), our monotonic then */
    long long version;
    int heartbeat_s;
    size_t url;                          /* index in opt->urls */
    char leader[512];                    /* the leader a follower's 307 named, "" none: calls go there
                                            until one fails */
    unsigned hops;                       /* 307s followed since the last answer */
    unsigned waits;                      /* 503s (no leader) waited out since the last answer */
    unsigned failures;
    int64_t next_try_ms;                 /* no call before (back-off) */
    int64_t next_heartbeat_ms, next_events_ms, next_checkpoint_ms, next_logs_ms, next_memory_ms, next_sweep_ms;
    bool logs_missing;                   /* gpupoold has no logs endpoint (404): not yet */
    int64_t log_call_bytes;              /* log bytes per call; 0: the default, halved at a 413 */
    gp_http_call reg, poll, heartbeat, reports, logs, renew;
    gp_node_cert cert;                   /* its key and client certificate over HTTPS (agent_cert.h) */
    gp_assignment *assignments;          /* the last accepted answer's list, decoded (spec/assignment.h) */
    size_t n_assignments;
    bool has_assignments;                /* an answer was accepted */
    json_t *queue;                       /* reports waiting to be sent (array) */
    json_t *in_flight;                   /* reports sent, not yet answered */
    gp_replica **replicas;
    size_t n_replicas, cap_replicas;
    int fatal;                           /* != 0: the agent must exit with it */
    bool shutting_down;                  /* --on-exit stop: kill, report, start nothing */
    gp_health_gpu health[GP_MAX_GPUS_PER_NODE];
    gp_health_child checks[GP_MAX_GPUS_PER_NODE];
    int last_xid[GP_MAX_GPUS_PER_NODE];  /* the last XID each GPU raised, 0 none (DCGM_FI_DEV_XID_ERRORS) */
    gp_ckpt_watch *ckpt_watch;           /* the agent's (shared): checkpoint folders in a grace; NULL none */
    struct gp_image_warmer *warmer;      /* the agent's pre-pulls of gpupoold's image hints (agent_image_hints.h) */
    gp_agent_metrics *metrics;           /* --metrics-listen: where each heartbeat's sample goes (the agent's,
                                            shared); NULL none */
    struct gp_netfence *fence;           /* the network fence (agent_netfence.c); NULL: off, fence_off says why */
    char fence_off[GP_ERROR_MESSAGE_MAX];
    int64_t partition_after_ms;          /* the partition fence's terms from gpupoold (agent_partition.c); */
    int64_t partition_grace_ms;          /* 0: none said, no fence */
    int64_t heard_ms;                    /* mono ms the last call gpupoold answered was sent */
    int64_t heard_stored_ms;             /* the heard_ms STATE/NODE/partition holds */
    bool terms_unstored;                 /* the terms changed since the file was written */
    int64_t heartbeat_sent_ms, register_sent_ms; /* mono ms those calls in flight were sent */
    bool partitioned;                    /* the fence stopped its replicas; heard of again: logged, cleared */
    int64_t silent_until_ms;             /* mono ms: having fenced a replica, it calls gpupoold no more before
                                            (agent_partition.c); 0 none in this partition */
};

/* Opens the node (the sim backend on node_file's node index) and adopts
 * what its state folder says is running. */
gp_err gp_node_open(gp_node *n, const gp_agent_options *opt, gp_http *http, unsigned *registering,
                    const gp_node_file *f, size_t file_index, size_t index, gp_error *err);
/* The same with a GPU backend already open (nvml): the node takes gpu
 * (closes it, also when the open fails) and is named as its inventory. */
gp_err gp_node_open_gpu(gp_node *n, const gp_agent_options *opt, gp_http *http, unsigned *registering, gp_gpu *gpu,
                        size_t index, gp_error *err);
void gp_node_close(gp_node *n);

/* Starts what is due; returns when the node next wants a step (mono ms). */
int64_t gp_node_step(gp_node *n, int64_t now_ms);
/* The replica's supervisor ended (its pidfd polled readable; the tag of
 * its gp_http_fd is the replica). */
void gp_node_replica_ended(gp_node *n, gp_replica *r);
/* The checkpoint watch saw a `.done` change under watches wds: the node
 * looks for it at its next step when one of its live replicas holds one. */
void gp_node_checkpoint_changed(gp_node *n, const int *wds, size_t count);
/* --on-exit stop: kill every live replica now; from then on the node
 * only reports (no poll, no start). */
void gp_node_kill_all(gp_node *n);
bool gp_node_has_live_replicas(const gp_node *n);

/* The base URL the node's calls go to: the leader a 307 named, else its
 * --server URL in turn. */
const char *gp_node_url(const gp_node *n);
/* A follower's answer to a call of the node: 307 (the leader its JSON
 * error names, an http(s) URL, at most 5 in a row) -> calls go there at
 * once; 503 with Retry-After (no leader yet) -> the next URL after that
 * wait.  False for any other answer (the caller backs off). */
bool gp_node_leader_moved(gp_node *n, const gp_http_call *call, long status, const char *body);

/* One line to stderr: "2026-11-24T14:00:01Z node=h100-1 " + text. */
void gp_agent_log(const gp_node *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* agent_partition.c: the partition fence (agent_plan.h gp_plan_partitioned,
 * docs/operations.md "Partitions").  open loads STATE/NODE/partition (the
 * terms and when gpupoold last answered, wall clock: an agent restarted
 * during a partition keeps counting); terms takes them from a register or
 * heartbeat answer; heard: gpupoold answered a call sent at sent_ms
 * (mono); step stops the replicas of a node cut off too long and returns
 * when it next wants a step (mono ms). */
void gp_node_partition_open(gp_node *n);
void gp_node_partition_terms(gp_node *n, const json_t *answer);
void gp_node_partition_heard(gp_node *n, int64_t sent_ms);
int64_t gp_node_partition_step(gp_node *n, int64_t now_ms);
/* True while a fenced node keeps silent (its calls cancelled, none made),
 * until gpupoold has surely counted it lost. */
bool gp_node_partition_silent(const gp_node *n, int64_t now_ms);
/* The replica's fence terms from its assignment (its job's opt-out, stop
 * signal and grace). */
void gp_replica_partition_terms(gp_replica *r, const gp_assignment *a);

/* agent_replica.c: a replica's life on the node. */
gp_err gp_replica_start(gp_node *n, const gp_assignment *assignment, gp_replica **out, gp_error *err);
void gp_replica_adopt_all(gp_node *n);

/* The network fence between tenants (agent_netfence.c, launch/netfence.h):
 * on when the agent is root, nft works and --no-network-fence is not
 * given; off, it is logged once, and an untrusted tenant's replica is
 * refused unless --no-network-fence was given.  open before adoption,
 * sync after it (the table then holds exactly the running replicas). */
void gp_node_fence_open(gp_node *n);
/* A replica about to start (launch: its launch.json, for its uid): its
 * rules are loaded before it runs.  GP_ERR_CONFLICT (field "network")
 * when they cannot be, or when an untrusted replica would run unfenced. */
gp_err gp_node_fence_start(gp_node *n, const gp_replica *r, const gp_assignment *a, const json_t *launch,
                           gp_error *err);
/* An adopted live replica (its launch.json read again): kept in the
 * fence, loaded at sync. */
void gp_node_fence_adopt(gp_node *n, const gp_replica *r);
void gp_node_fence_sync(gp_node *n);
/* After each poll answer: the running replicas' reach_from nodes as the
 * answer names them now (the nodes where the tenants concerned run move),
 * looked up only when the names differ from the previous answer's
 * (before, n_before) and loaded when the addresses changed; the rest of
 * their rules stay as started. */
void gp_node_fence_refresh(gp_node *n, const gp_assignment *before, size_t n_before);
/* The replica ended: its rules go. */
void gp_node_fence_end(gp_node *n, const gp_replica *r);
void gp_node_fence_close(gp_node *n);
/* Signals r's supervisor: signal now, the tree killed grace_ms later (on
 * the monotonic clock: a step of this node's clock moves nothing). */
void gp_replica_stop_within(gp_node *n, gp_replica *r, int signal, int64_t grace_ms, gp_stop_cause cause);
void gp_replica_collect_exit(gp_node *n, gp_replica *r);
/* Queues `started` once the supervisor says the replica exec'd
 * (DIR/started): its pid, the time from bind and the part its image pull
 * took; the agent's start metrics count it. */
void gp_replica_check_started(gp_node *n, gp_replica *r);
/* The pull of a replica that has not started (DIR/pull) as the heartbeat
 * sends it, NULL when none runs: a new reference. */
json_t *gp_replica_pull(const gp_replica *r);
/* Queues `checkpointed` when CHECKPOINT_DIR/.done appeared. */
void gp_replica_check_checkpoint(gp_node *n, gp_replica *r);
pid_t gp_replica_pid(const gp_replica *r);
void gp_replica_free(gp_replica *r);

/* agent_logs.c: ships new bytes of the replicas' logs (at most every
 * 500 ms); returns when it next wants to. */
int64_t gp_node_ship_logs(gp_node *n, int64_t now_ms);
/* The replica's log is all with gpupoold, or gpupoold keeps none. */
bool gp_replica_log_done(const gp_node *n, const gp_replica *r);

/* agent_scratch.c: removes the working and private /tmp folders no live
 * replica holds, --keep-scratch-s after their end (every 10 s); returns
 * when it next wants to. */
int64_t gp_node_sweep_scratch(gp_node *n, int64_t now_ms);

/* agent_checks.c: health checks, repair and return (agent_health.h). */
void gp_node_health_open(gp_node *n, int64_t now_ms);
/* A health event of the backend (XID, ECC, lost). */
void gp_node_health_event(gp_node *n, const gp_gpu_event *ev);
/* Runs what is due; returns when it next wants a step (mono ms). */
int64_t gp_node_health_step(gp_node *n, int64_t now_ms);
/* The agent reaped pid with status: true when it was one of n's checks. */
bool gp_node_child_reaped(gp_node *n, pid_t pid, int status);
/* Kills the checks still running (the agent stops). */
void gp_node_health_close(gp_node *n);

/* Forgets (state folder and memory) the runs that ended, whose exit and
 * log gpupoold has, and that the last assignments no longer list. */
void gp_node_forget_finished(gp_node *n);

/* How an assignment uses its GPUs: GP_PLAN_WHOLE_GPU, GP_PLAN_SHARED_GPU
 * or its MIG instance's start (agent_plan.h). */
int gp_assignment_share(const gp_assignment *assignment);

/* agent_node_shares.c: MPS daemons, GPU memory shares, the dcgm job map. */
/* Quits the daemon of each MPS GPU that no live MPS replica uses. */
void gp_node_mps_sweep(gp_node *n);
/* Kills (reason gpu_memory) each MPS or time-slice replica whose processes
 * in sample t hold more than its share. */
void gp_node_watch_memory(gp_node *n, const gp_telemetry *t);
/* Samples telemetry and watches when shared replicas run and it is due
 * (every 2 s); returns when it next wants to. */
int64_t gp_node_memory_step(gp_node *n, int64_t now_ms);
/* Rewrites the dcgm job map (--dcgm-job-map) from the live replicas. */
void gp_node_dcgm_update(gp_node *n);
/* The GPU memory (MiB) of uuid on this node, 0 when unknown. */
int64_t gp_node_gpu_memory_mib(const gp_node *n, const char *uuid);
/* An MPS or time-slice replica's GPU memory share: its slice's memory as
 * the assignment says, else milli_gpus of its GPU's memory. */
int64_t gp_replica_share_mib(const gp_node *n, const gp_replica *r);

/* agent_node_metrics.c: publishes the node's GPUs, as sample t and its
 * replicas show them, to n->metrics (agent_metrics.h); nothing without. */
void gp_node_metrics_publish(gp_node *n, const gp_telemetry *t);

/* Adds r to the node's replicas (takes it); false when out of memory. */
bool gp_node_add_replica(gp_node *n, gp_replica *r);
/* Appends a report to the node's queue (takes it). */
void gp_node_queue_report(gp_node *n, json_t *report);

#endif

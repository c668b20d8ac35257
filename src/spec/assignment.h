/* assignment.h - one replica a node agent must run or stop, as gpupoold's
 * GET /v1/agents/{node}/assignments lists it (docs/api.md), decoded once
 * into a typed struct, and written back as JSON in the same form.
 *
 * The agent decodes each poll answer's list here (agent_node.c), passes
 * the structs to its reconcile and its replicas (agent_replica.c), and
 * writes the assignment into the replica's launch.json with
 * gp_assignment_to_json; an agent restarted later reads it back with
 * gp_assignment_parse (the replica's GPUs, slice and tenant).
 *
 * Reading is lenient, as the agent always read these fields: a field that
 * is missing or of another type reads as its default (a number 0, a string
 * "", no slice, action run, stop signal SIGTERM, trust trusted; uid_min
 * and kill deadlines say whether they were given), a GPU or peer that is
 * not a string is "" (peers) or left out (gpus), a job variable or secret
 * whose value is not a string is left out.  Only running out of memory is
 * an error.  `kill_deadline_ms` falls back to `kill_deadline` * 1000 (a
 * gpupoold that predates it).
 *
 * secrets ("secrets": {"NAME": "value"}, action run only) are the job's
 * secret variables: kept in the struct for the replica's environment,
 * never logged and never written by gp_assignment_to_json (the replica's
 * environment in launch.json is what carries them to it).
 *
 * The container fields (image, mounts, shm_mib, read_only_root, network,
 * allow_userns) come from the job's spec and its tenant's policy; image_auth
 * ({"username", "password"}) is a secret like secrets: kept for the image
 * pull, never written back.
 *
 * Ownership: the struct is the caller's; gp_assignment_parse fills its
 * heap lists (peers, command, env, secrets, mounts, image_auth, egress, reach_from and its nodes),
 * gp_assignment_free releases
 * them (and zeroes the struct; a zeroed struct is fine).
 * gp_assignments_parse allocates the array too; gp_assignments_free frees
 * it and every entry.  gp_assignment_to_json returns a new reference.
 */
#ifndef GP_SPEC_ASSIGNMENT_H
#define GP_SPEC_ASSIGNMENT_H

#include "core/types.h"
#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A variable of the job's environment: NAME=value. */
typedef struct gp_assignment_var {
    char *name;
    char *value;
} gp_assignment_var;

/* A host folder bound into the replica's container (already resolved
 * against its tenant's volumes by gpupoold). */
typedef struct gp_assignment_mount {
    char *source; /* absolute, on the host */
    char *target; /* absolute, in the container */
    bool read_only;
} gp_assignment_mount;

/* A shared replica's slice of its GPU (has_slice false: whole GPUs). */
typedef struct gp_assignment_slice {
    bool has_kind;               /* "kind" given (a mig, mps or timeslice slice) */
    char kind[16];               /* as sent: "mig", "mps", "timeslice" */
    int milli_gpus;
    char mig_profile[GP_NAME_MAX]; /* mig: "1g.10gb" */
    int64_t mig_start;           /* mig: the instance's start */
    int64_t gpu_mem_mib;         /* mps: the GPU memory the engine counts for it */
} gp_assignment_slice;

typedef struct gp_assignment {
    uint64_t job;
    unsigned replica, replicas;
    int64_t bind_time;
    char gpus[GP_MAX_GPUS_PER_NODE][GP_UUID_MAX];
    size_t n_gpus;
    bool has_slice;
    gp_assignment_slice slice;
    char **peers;                /* the node of every replica, in replica order */
    size_t n_peers;
    bool stop;                   /* action "stop", else "run" */
    char stop_reason[32];        /* with stop: "preempt", "cancel", "time_limit"; "" none */
    bool has_kill_deadline;      /* kill_deadline_ms or kill_deadline given */
    int64_t kill_deadline_ms;    /* epoch ms */
    unsigned restart_count;
    bool has_time_limit;
    int64_t time_limit_s;
    bool has_last_checkpoint;
    int64_t last_checkpoint;
    char name[GP_NAME_MAX];      /* the job's spec, as submitted */
    char tenant[GP_PATH_MAX];
    char user[GP_NAME_MAX];      /* "" none */
    char kind[16];               /* "training", ...; "" not given */
    char **command;              /* argv; has_command false: none sent */
    size_t n_command;
    bool has_command;
    gp_assignment_var *env;      /* in the order sent */
    size_t n_env;
    gp_assignment_var *secrets;  /* never logged, never written back */
    size_t n_secrets;
    int64_t cpu_millis, mem_mib, pids_max; /* 0: not set */
    bool has_checkpoint_grace;
    int64_t checkpoint_grace_s;
    bool has_stop_signal;
    gp_stop_signal stop_signal;  /* SIGTERM when not given or unknown */
    bool has_uid_min;
    int64_t uid_min;
    bool has_trust;
    bool untrusted;              /* trust given and not "trusted" */
    bool keep_running_when_partitioned; /* the job opted out of the partition fence (docs/operations.md) */              /* trust given and not "trusted" */
    char image[1024];            /* "docker://...", "oci:/...", "dir:/..."; "" a bare process */
    char *image_auth_user;       /* registry credential for the pull: never logged, never written back */
    char *image_auth_password;
    gp_assignment_mount *mounts; /* in the order sent */
    size_t n_mounts;
    int64_t shm_mib;             /* 0: the agent's default */
    bool read_only_root;
    bool private_network;        /* "network": "private" */
    bool allow_userns;           /* the job may make user namespaces inside its container */
    char **egress;               /* the tenant's allowed destinations, "CIDR[:port]" (netfence.h); none: [] */
    size_t n_egress;
    char **reach_from;           /* tenant subtrees whose replicas may connect to it (net_dest.h); none: [] */
    size_t n_reach_from;
    char **reach_from_nodes;     /* nodes where the replicas of those subtrees run: answered (per node) */
    size_t n_reach_from_nodes;
    char **reach_to_nodes;       /* nodes where replicas of tenants that let it in run: reached (per node) */
    size_t n_reach_to_nodes;
} gp_assignment;

/* One assignment from its JSON object. */
gp_err gp_assignment_parse(const json_t *o, gp_assignment *out, gp_error *err);
/* Every assignment of a poll answer's list (*out NULL and *n 0 for an empty one). */
gp_err gp_assignments_parse(const json_t *list, gp_assignment **out, size_t *n, gp_error *err);
/* The same JSON as gpupoold sent (secrets left out). */
json_t *gp_assignment_to_json(const gp_assignment *a);
void gp_assignment_free(gp_assignment *a);
void gp_assignments_free(gp_assignment *list, size_t n);

#endif

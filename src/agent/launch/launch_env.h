/* launch_env.h - what a replica's environment holds: the job's variables
 * plus the ones the agent defines, all defined in one place.
 *
 * The agent sets, for replica 1 of job 42 (tenant research/nlp, 2
 * replicas on hosts node-a and node-b, restart 0):
 *
 *   CUDA_VISIBLE_DEVICES   GPU-aaa,GPU-bbb      (GPU or MIG UUIDs, as given)
 *   GPUPOOL_JOB_ID         42
 *   GPUPOOL_TENANT         research/nlp
 *   GPUPOOL_REPLICA        1                    (0-based index)
 *   GPUPOOL_REPLICAS       2
 *   GPUPOOL_PEERS          node-a,node-b        (every replica's host, by index)
 *   GPUPOOL_CHECKPOINT_DIR /var/lib/gpupool/ckpt/42
 *   GPUPOOL_RESTART_COUNT  0
 *   MASTER_ADDR            node-a               (replica 0's host)
 *   MASTER_PORT            20042                (gp_master_port(42))
 *   NNODES                 2                    (one replica per node)
 *   NODE_RANK              1                    (= GPUPOOL_REPLICA)
 *   WORLD_SIZE             2                    (= GPUPOOL_REPLICAS)
 *   RANK                   1                    (= GPUPOOL_REPLICA)
 *   LOCAL_RANK             0                    (one process per replica)
 *
 * so that an unmodified `torchrun` or PyTorch job runs as a gang: RANK and
 * LOCAL_RANK let a job of one process per node call
 * init_process_group("nccl") directly (torchrun sets its workers' own).  The
 * agent's values win over a job variable of the same name (a job cannot
 * widen its CUDA_VISIBLE_DEVICES or claim another job id).
 *
 * MASTER_PORT is 20000 + job_id % 10000: the same on every replica without
 * talking, below Linux's ephemeral range (32768-60999), and distinct for
 * 10,000 consecutive job ids that share a master host.
 *
 * Ownership: a gp_env is a caller-owned struct whose array and strings it
 * allocates; gp_env_free releases them.  vars is always NULL-terminated,
 * ready for execve.
 */
#ifndef GP_AGENT_LAUNCH_ENV_H
#define GP_AGENT_LAUNCH_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct gp_env {
    char **vars; /* "NAME=value", NULL-terminated (NULL while empty) */
    size_t count;
    size_t cap;
} gp_env;

/* One replica of a job, as the agent was told to run it. */
typedef struct gp_replica_desc {
    uint64_t job_id;
    const char *tenant;          /* "research/nlp" */
    unsigned replica;            /* 0-based index, < replicas */
    unsigned replicas;           /* >= 1 */
    const char *const *hosts;    /* replicas entries: host of each replica, by index */
    const char *visible_devices; /* "GPU-...,GPU-..." or MIG UUIDs; "" for none */
    const char *checkpoint_dir;
    unsigned restart_count;
} gp_replica_desc;

#define GP_MASTER_PORT_BASE 20000u
#define GP_MASTER_PORT_SPAN 10000u

/* The torchrun rendezvous port of a job: 20000 + job_id % 10000. */
unsigned gp_master_port(uint64_t job_id);

/* Sets NAME to value, replacing an earlier NAME.  GP_ERR_INVALID when the
 * name is empty or holds '=', GP_ERR_NOMEM. */
gp_err gp_env_set(gp_env *env, const char *name, const char *value, gp_error *err);
/* Sets NAME only when it is not set yet. */
gp_err gp_env_set_default(gp_env *env, const char *name, const char *value, gp_error *err);
/* Adds a "NAME=value" entry (replacing NAME); GP_ERR_INVALID without '=' or
 * with an empty name, field "env". */
gp_err gp_env_put(gp_env *env, const char *entry, gp_error *err);
/* The value of NAME, or NULL. */
const char *gp_env_get(const gp_env *env, const char *name);

/* The environment of one replica: job_env ("NAME=value" entries,
 * NULL-terminated; NULL for none), then the variables above.  env must be
 * empty ({0}); on failure it is left empty and err names the field
 * ("env", "replica", "hosts"). */
gp_err gp_env_for_replica(gp_env *env, const char *const *job_env, const gp_replica_desc *desc, gp_error *err);

void gp_env_free(gp_env *env);

#endif

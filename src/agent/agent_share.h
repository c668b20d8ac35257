/* agent_share.h - GPU memory shares on the node: whose GPU processes are
 * whose, how much each replica uses, who is over its share.
 *
 * An MPS or time-sliced GPU hosts several replicas (of one org: the
 * engine's rule, docs/sharing.md).  MPS's own limit
 * (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, agent_mps.h) holds per client
 * process, and time slicing has none at all, so the agent adds them up:
 * at every telemetry sample it maps each GPU process to its replica and
 * stops a replica whose processes together hold more than its share.
 *
 * A process belongs to a replica when
 *   - its cgroup (/proc/PID/cgroup, v1 or v2) has the replica's cgroup as a
 *     path component ("0::/gpupool/job7-r0-1795523111"), or else
 *   - the replica's main process is among its ancestors (or is it), read
 *     from /proc/PID/stat's parent pid, at most 64 generations up.
 * The /proc root is an argument, so tests give a folder of their own.
 *
 * The share, for a replica given milli_gpus of a GPU with M MiB:
 * floor(milli_gpus x M / 1000) MiB.  Whole GPUs and MIG instances have no
 * cap here (the GPU or the instance is the limit).
 *
 * Worked example: an H100 (81,559 MiB) in MPS mode holds job 7 (500 mGPU,
 * share 40,779 MiB) and job 8 (250 mGPU, share 20,389 MiB).  Telemetry
 * lists pid 4242 (job 7's python, 30,000 MiB), pid 4250 (its
 * DataLoader worker, a child of 4242, 12,000 MiB) and pid 5100 (job 8's,
 * 9,000 MiB).  Job 7 uses 42,000 MiB > 40,779: over, and killed; job 8
 * uses 9,000 MiB: under.  Each of job 7's processes alone was under the
 * pinned limit MPS enforces, which is why the sum is watched.
 *
 * Ownership: callers own every array; nothing here allocates what it
 * returns.
 */
#ifndef GP_AGENT_SHARE_H
#define GP_AGENT_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/gpu/gpu.h"

#define GP_SHARE_NO_CAP (-1)

/* One live replica as the watch sees it. */
typedef struct gp_share_replica {
    const char *cgroup;       /* its cgroup's name ("job7-r0-1795523111"); NULL or "": none */
    pid_t pid;                /* its main process; <= 1: unknown */
    const char *uuid;         /* the GPU (or MIG instance) its cap is on */
    int64_t cap_mib;          /* GP_SHARE_NO_CAP: none */
    int64_t used_mib;         /* out: what its processes on uuid hold */
} gp_share_replica;

/* floor(milli_gpus x gpu_memory_mib / 1000); 0 for nonsense input. */
int64_t gp_share_memory_mib(int milli_gpus, int64_t gpu_memory_mib);

/* The index in r[] of the replica process pid belongs to, or -1. */
int gp_share_owner(const char *proc_root, pid_t pid, const gp_share_replica *r, size_t n);

/* Sets each replica's used_mib: the memory of the sample's processes on
 * its uuid that belong to it (a process the backend cannot size, -1,
 * counts 0). */
void gp_share_sum(const char *proc_root, const gp_telemetry *t, gp_share_replica *r, size_t n);

/* Holds it more than its cap? */
bool gp_share_over(const gp_share_replica *r);

#endif

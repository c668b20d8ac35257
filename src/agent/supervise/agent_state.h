/* agent_state.h - what the agent keeps on disk, per node, so that a
 * restarted agent neither starts a replica twice nor loses how one ended.
 *
 *   STATE/NODE/credential         the node token, one line, 0600
 *   STATE/NODE/epoch              the highest controller epoch seen (fsync'd)
 *   STATE/NODE/replicas/job7-r1-1795523111/   one run of one replica:
 *       launch.json   the assignment and what the supervisor starts
 *                     (argv, env, user, workdir, log, cgroup, devices)
 *       supervisor    "PID STARTTIME": the supervisor (the agent writes it
 *                     right after the fork; STARTTIME from /proc/PID/stat
 *                     tells a live supervisor from a recycled pid)
 *       pull          {"image", "done_bytes", "total_bytes", "started_at"}:
 *                     the supervisor, while it pulls the replica's image
 *                     (rewritten at most every 0.5 s, removed at the
 *                     pull's end; total_bytes 0: not known yet)
 *       started       "EXEC_MS PULL_MS": the supervisor, once the replica
 *                     runs (epoch ms of the exec, ms its image pull took,
 *                     0 none), just before pid
 *       pid           the replica's pid (the supervisor, after the launch)
 *       stop          "SIGNAL DEADLINE_MS CAUSE": the agent writes it, then
 *                     SIGUSR1s the supervisor (DEADLINE_MS epoch ms; CAUSE
 *                     requested, time_limit or gpu_memory)
 *       gpu_memory    "USED_MIB SHARE_MIB": the agent, when it kills the
 *                     replica for its GPU memory (its exit report says so)
 *       exit          "REASON CODE SIGNAL": the supervisor, once the
 *                     replica ended ("exited 0 0", "signalled -1 15")
 *   STATE/NODE/logs/job7-r1-1795523111.log    stdout and stderr of that run
 *
 * Every file is written whole (temporary file, fsync, rename, fsync of
 * the folder), so a crash leaves the old text or the new one.  A replica
 * folder is removed once gpupoold answered 200 to its exit report and no
 * longer lists the run.
 *
 * Ownership: callers pass buffers; nothing here allocates what it returns.
 */
#ifndef GP_AGENT_STATE_H
#define GP_AGENT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/launch/launch.h"
#include "util/error.h"

#define GP_STATE_PATH_MAX 1024

/* Writes text to path whole (see above) with mode.  GP_ERR_CONFLICT
 * naming the path and errno on failure. */
gp_err gp_state_write(const char *path, const char *text, unsigned mode, gp_error *err);
/* Reads up to cap-1 bytes of path into buf (NUL-terminated); false when
 * it cannot be read. */
bool gp_state_read(const char *path, char *buf, size_t cap);
/* mkdir -p with mode for each folder made.  GP_ERR_CONFLICT on failure. */
gp_err gp_state_mkdirs(const char *path, unsigned mode, gp_error *err);
/* Removes the plain files of folder dir, then dir (one level only). */
void gp_state_remove_dir(const char *dir);

/* The highest epoch in STATE/NODE/epoch, 0 when none was stored. */
int64_t gp_state_epoch_load(const char *node_dir);
gp_err gp_state_epoch_store(const char *node_dir, int64_t epoch, gp_error *err);

/* STATE/NODE/partition, "AFTER_MS GRACE_MS HEARD_BOOT_MS": the partition
 * fence's terms from gpupoold and when the last call it answered was sent,
 * in ms since boot (agent_clock.h: a wall clock's steps move it not; a
 * time above now is an earlier boot's).  The agent writes it (agent_partition.c); the agent
 * after a restart and each replica's supervisor read it (a replica is
 * stopped by its supervisor when no agent runs to do it). */
typedef struct gp_partition_clock {
    int64_t after_ms;      /* > 0: the fence is on */
    int64_t grace_ms;
    int64_t heard_boot_ms;
} gp_partition_clock;
/* false (and *out zero) when there is none or it is not one. */
bool gp_state_partition_load(const char *node_dir, gp_partition_clock *out);
gp_err gp_state_partition_store(const char *node_dir, const gp_partition_clock *c, gp_error *err);

/* "job7-r1-1795523111" and back (false when name is not one). */
void gp_state_replica_name(uint64_t job, unsigned replica, int64_t bind_time, char *out, size_t cap);
bool gp_state_replica_parse(const char *name, uint64_t *job, unsigned *replica, int64_t *bind_time);

/* The exit file's text and back. */
void gp_state_exit_format(const gp_proc_exit *e, char *out, size_t cap);
bool gp_state_exit_parse(const char *text, gp_proc_exit *e);

typedef struct gp_stop_order {
    int signal;
    int64_t deadline_ms;      /* epoch ms; kill the tree then (what a supervisor older than mono_deadline_ms reads) */
    gp_stop_cause cause;
    int64_t mono_deadline_ms; /* the same on CLOCK_MONOTONIC, which no clock step moves; 0 = none (an older agent's) */
} gp_stop_order;

void gp_state_stop_format(const gp_stop_order *s, char *out, size_t cap);
bool gp_state_stop_parse(const char *text, gp_stop_order *s);

/* "PID STARTTIME" and back. */
void gp_state_supervisor_format(pid_t pid, uint64_t start_time, char *out, size_t cap);
bool gp_state_supervisor_parse(const char *text, pid_t *pid, uint64_t *start_time);

/* Field 22 of /proc/PID/stat (clock ticks since boot), 0 when the process
 * is gone. */
uint64_t gp_state_process_start_time(pid_t pid);

#endif

/* supervise.h - `gpupool-supervise DIR`: the parent of one replica.
 *
 * The agent forks and execs `gpupool-supervise DIR` (supervise_main.c;
 * itself as `gpupool-agent supervise DIR` when that binary is not beside
 * it) for each replica it starts (DIR is the replica's folder, agent_state.h).
 * The supervisor reads DIR/launch.json, pulls its image if it names one
 * (DIR/pull says how far while it does), starts the replica with gp_launch
 * (launch.h), writes DIR/started and DIR/pid, and waits for it: on SIGUSR1 it reads
 * DIR/stop and stops the replica (signal now, kill the tree at the
 * deadline); when the replica ended it writes DIR/exit and exits 0.
 * Because the supervisor, not the agent, is the replica's parent, an agent
 * killed with -9 loses nothing: the replica runs on, its exit status is
 * written, and the next agent adopts the supervisor by its pid.
 *
 * launch.json (the agent writes it, agent_replica.c):
 *   {"env": ["GPUPOOL_JOB_ID=7", ...],
 *    "user": "alice" | null, "job_uid": 2000000007, "job_name": "job7" (no user, root agent),
 *    "uid_min": 1000, "workdir": "/abs", "tmp_dir": "/abs/scratch/job7-r0-5" | null (no private /tmp),
 *    "keep_scratch": false, "log": "/abs/job7-r0-5.log", "log_max_bytes": 67108864,
 *    "cgroup_parent": "gpupool" | null (no cgroups), "cgroup_name": "job7-r0-5",
 *    "cpu_millis": 16000, "mem_mib": 65536, "shm_mib": 32768, "pids_max": 1024,
 *    "isolate_devices": true, "devices": ["/dev/nvidia0"], "visible": "GPU-...,GPU-...",
 *    "assignment": {... gp_assignment_to_json (spec/assignment.h): what
 *                   gpupoold sent, without secrets}}
 * The agent writes the assignment from its decoded struct; the supervisor
 * reads it back into one with the same codec and takes the replica's
 * command and its tenant's trust from it (an agent adopting the replica
 * after a restart reads its GPUs, slice and tenant the same way).  The
 * other fields are what the agent worked out for this node: the
 * environment, folders, limits and devices.
 * The replica's stdout and stderr are a pipe the supervisor copies into the
 * log, capped (replica_log.h).  When the replica ended the supervisor
 * removes its working folder and tmp_dir (scratch.h), unless keep_scratch
 * (then it stamps them and the agent sweeps them later).
 * A launch that fails (no such user or program, a refused user, an
 * untrusted tenant without isolation) is an exit "exited 127 0" with the
 * reason in DIR/error and in the log ("gpupool: the replica was not
 * started: ...").
 *
 * SIGUSR1 is blocked by the agent before the exec, so a stop sent before
 * the supervisor listens waits instead of killing it.
 */
#ifndef GP_AGENT_SUPERVISE_H
#define GP_AGENT_SUPERVISE_H

/* Runs the supervisor of DIR; returns the process's exit status. */
int gp_supervise_main(const char *dir);

#endif

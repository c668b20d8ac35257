/* supervise.h - `gpupool-supervise DIR`: the parent of one replica.
 *
 * The agent forks and execs `gpupool-supervise DIR` (supervise_main.c;
 * itself as `gpupool-agent supervise DIR` when that binary is not beside
 * it) for each replica it starts (DIR is the replica's folder, agent_state.h).
 * The supervisor reads DIR/launch.json, starts the replica with gp_launch
 * (launch.h), writes DIR/pid, and waits for it: on SIGUSR1 it reads
 * DIR/stop and stops the replica (signal now, kill the tree at the
 * deadline); when the replica ended it writes DIR/exit and exits 0.
 * Because the supervisor, not the agent, is the replica's parent, an agent
 * killed with -9 loses nothing: the replica runs on, its exit status is
 * written, and the next agent adopts the supervisor by its pid.
 *
 * launch.json (the agent writes it, agent_node.c):
 *   {"argv": ["python3", "train.py"], "env": ["GPUPOOL_JOB_ID=7", ...],
 *    "user": "alice" | null, "workdir": "/abs", "log": "/abs/job7-r0-5.log",
 *    "cgroup_parent": "gpupool" | null (no cgroups), "cgroup_name": "job7-r0-5",
 *    "cpu_millis": 16000, "mem_mib": 65536, "isolate_devices": false,
 *    "devices": ["/dev/nvidia0"], "assignment": {... as gpupoold sent it}}
 * A launch that fails (no such user or program) is an exit "exited 127 0"
 * with the reason in DIR/error.
 *
 * SIGUSR1 is blocked by the agent before the exec, so a stop sent before
 * the supervisor listens waits instead of killing it.
 */
#ifndef GP_AGENT_SUPERVISE_H
#define GP_AGENT_SUPERVISE_H

/* Runs the supervisor of DIR; returns the process's exit status. */
int gp_supervise_main(const char *dir);

#endif

/* agent.h - `gpupool-agent run`: the agent's main loop.
 *
 *   gpupool-agent run --server URL[,URL...] --join-token-file FILE (or $GPUPOOL_JOIN_TOKEN)
 *                     --backend sim --node-file FILE [--node NAME]... --state-dir DIR [...]
 *                   | --backend nvml [--node NAME] [--nvml-library PATH] [--zone Z --block B --pool P]
 *
 * parses the options (docs/agent.md lists them), opens every node (sim:
 * one --node each, none: every node of the file; nvml: this host as one
 * node, by default named as the host), and drives them all from one
 * thread: libcurl's multi interface waits on the HTTP calls and on the
 * pidfds of the replicas' supervisors at once (agent_http.h), and each
 * node's state machine (agent_node.h) takes its steps.  SIGTERM or SIGINT
 * ends it; the replicas keep running (--on-exit keep, the default: a
 * restarted agent adopts them, and the MPS daemons they use) or are killed
 * first and the MPS daemons quit (--on-exit stop).
 *
 * Exit status: 0 stopped by a signal, 1 a node's registration was refused
 * (bad or expired join token: the message says so), the node file or
 * state folder is unusable, or (nvml) there is no NVIDIA driver (one line
 * says so), 2 a bad command line.
 */
#ifndef GP_AGENT_AGENT_H
#define GP_AGENT_AGENT_H

/* argv[0] is "run". */
int gp_agent_run_main(int argc, char **argv);

#endif

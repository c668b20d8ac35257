/* agent_mps.h - one CUDA MPS control daemon per MPS-mode GPU, and what an
 * MPS client replica is told about it.
 *
 * For each GPU in MPS mode that runs MPS replicas the agent runs one
 * control daemon with folders of its own, so that the GPUs' daemons never
 * meet:
 *
 *   STATE/NODE/mps/<key>/pipe    CUDA_MPS_PIPE_DIRECTORY
 *   STATE/NODE/mps/<key>/log     CUDA_MPS_LOG_DIRECTORY
 *
 * <key> is the UUID's last group (at most 12 characters: GPU-6643670c-
 * 0bbc-0df0-4a6f-c79480238824 -> c79480238824; random, so two GPUs of a
 * node do not share it).  It is short because the daemon makes UNIX
 * sockets in PIPE (control, control_privileged), and a socket's path holds
 * at most 107 bytes: the daemon dies at start when PIPE is longer than
 * GP_MPS_PIPE_MAX (found on an H100, driver 580: a 91-byte PIPE failed, an
 * 84-byte one worked).  A longer PIPE is refused before the daemon starts,
 * with an error that says to shorten --state-dir.
 *
 * started as `CMD -d` (CMD: --mps-control, default nvidia-cuda-mps-control;
 * `-d` daemonizes and returns) with CUDA_VISIBLE_DEVICES=<uuid> and those
 * two variables, when the GPU's first MPS replica starts; stopped with
 * `echo quit | CMD` (same environment) once the last one has ended, and by
 * `--on-exit stop`.  A daemon answers when a connection to its UNIX
 * socket PIPE/control is accepted; a restarted agent adopts a daemon that
 * answers instead of starting a second (a second `-d` fails, exit status
 * 1).  `-d` may return before the daemon listens, so a start waits until
 * it answers.
 *
 * Each MPS client replica's environment gains, for milli_gpus of a GPU and
 * a memory share of S MiB (the job's own MPS memory limit, else milli_gpus
 * of the GPU's memory: job 7 with 250 mGPU of an 81,559 MiB H100, S =
 * 20,389):
 *
 *   CUDA_MPS_PIPE_DIRECTORY            STATE/NODE/mps/<key>/pipe
 *   CUDA_MPS_LOG_DIRECTORY             STATE/NODE/mps/<key>/log
 *   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE  25      (ceil(milli_gpus / 10))
 *   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT   0=20389M (S; device 0: its only visible GPU)
 *
 * The pinned limit holds per client process; the sum over a replica's
 * processes is the agent's watch (agent_share.h).
 *
 * Running CMD blocks the caller until CMD returns (`-d` forks and
 * returns at once) and, for a start, until the daemon answers; a CMD still
 * running after 10 s is killed and the call fails, as does a daemon that
 * does not answer within 10 s.  Errors: GP_ERR_CONFLICT naming
 * "mps_control" with CMD's exit status or the errno, or with PIPE's length
 * when it is over GP_MPS_PIPE_MAX.
 *
 * Ownership: callers pass buffers; nothing here allocates what it returns.
 */
#ifndef GP_AGENT_MPS_H
#define GP_AGENT_MPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/launch/launch_env.h"
#include "util/error.h"

#define GP_MPS_CONTROL_DEFAULT "nvidia-cuda-mps-control"

/* The longest PIPE whose sockets fit a socket path (107 bytes, without
 * the terminating NUL) with "/control_privileged", the longest name the
 * daemon makes there. */
#define GP_MPS_PIPE_MAX (107 - 19)

/* The daemon's folders for GPU uuid under the node's state folder; the
 * pipe folder may be over GP_MPS_PIPE_MAX (gp_mps_start and
 * gp_mps_client_env refuse it). */
void gp_mps_dirs(const char *node_dir, const char *uuid, char *pipe, char *log, size_t cap);

/* Does a control daemon listen on pipe_dir/control? */
bool gp_mps_answers(const char *pipe_dir);

/* Makes the folders and starts GPU uuid's daemon, unless one answers
 * (adopted: GP_OK).  control NULL: the default. */
gp_err gp_mps_start(const char *control, const char *node_dir, const char *uuid, gp_error *err);

/* Sends `quit` to GPU uuid's daemon when one answers (none: GP_OK). */
gp_err gp_mps_quit(const char *control, const char *node_dir, const char *uuid, gp_error *err);

/* ceil(milli_gpus / 10), 1..100. */
int gp_mps_thread_percentage(int milli_gpus);

/* Adds the four client variables above to env. */
gp_err gp_mps_client_env(gp_env *env, const char *node_dir, const char *uuid, int milli_gpus, int64_t share_mib,
                         gp_error *err);

#endif

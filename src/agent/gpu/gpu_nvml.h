/* gpu_nvml.h - the nvml GPU backend: the node's real NVIDIA GPUs through
 * NVML (libnvidia-ml.so.1, loaded with dlopen when the backend opens).
 *
 * gp_gpu_open("nvml", &opt, ...) opens this host as one node: opt.node its
 * name (NULL: the host name), opt.zone/block/pool its place in the fleet
 * (NULL: "default", as the node codec has it),
 * opt.nvml_library the library (NULL: $GPUPOOL_NVML_LIBRARY, else
 * libnvidia-ml.so.1), opt.device_dir and opt.proc_dir the /dev and /proc
 * roots (tests point them at a temp tree).  Without a driver the open
 * fails with GP_ERR_NOT_FOUND field "nvml_library", the message starting
 * "no NVIDIA driver: " and giving dlopen's reason.  docs/agent.md "The
 * nvml backend" lists what each call reads.
 *
 * Ownership: as gpu.h.
 */
#ifndef GP_AGENT_GPU_NVML_H
#define GP_AGENT_GPU_NVML_H

#include "agent/gpu/gpu.h"

extern const gp_gpu_ops gp_gpu_nvml_ops;

#endif

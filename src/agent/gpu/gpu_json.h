/* gpu_json.h - a node's inventory and a telemetry sample as JSON: what the
 * agent sends gpupoold (registration, heartbeats) and what `gpupool-agent
 * inventory` / `telemetry` print.
 *
 * Inventory (docs/agent.md has the fields):
 *
 *   {"backend": "sim", "driver_version": "sim",
 *    "node": {"name": "h100-a", "gpu_type": "H100", "gpu_count": 8, ...},
 *    "gpus": [{"index": 0, "uuid": "GPU-...", "memory_mib": 81920, "minor": 0,
 *              "device": "/dev/nvidia0", "pci_bus_id": "00000000:18:00.0",
 *              "nvlink_domain": 0, "block": "blk-a", "sharing": "mig",
 *              "mig": [{"uuid": "MIG-...", "profile": "3g.40gb", "start": 4, ...}]}, ...]}
 *
 * "node" is the node exactly as the spec codec writes it
 * (gp_node_spec_to_json), so gpupoold decodes it with gp_node_request_parse
 * as it decodes POST /v1/nodes; "gpus" adds what only the agent knows.
 * Values a backend cannot tell (-1, "") are null.
 *
 * Ownership: both return a new reference (NULL when out of memory).
 */
#ifndef GP_AGENT_GPU_JSON_H
#define GP_AGENT_GPU_JSON_H

#include "agent/gpu/gpu.h"

#include <jansson.h>

json_t *gp_inventory_to_json(const gp_node_inventory *inv);
json_t *gp_telemetry_to_json(const gp_telemetry *t);
/* One process's use of a GPU or MIG instance: {"pid", "uuid", "memory_used_mib", "sm_active_pct"}. */
json_t *gp_gpu_process_to_json(const gp_gpu_process *p);

#endif

/* node_file.h - the sim backend's node file: the simulated nodes and their
 * GPUs, as YAML or JSON.
 *
 * A node entry is a fleet-file node entry (docs/fleet-file.md: name, zone,
 * block, gpu_type, gpus, nvlink_domains, gpu_mem_mib, cpu_millis, mem_mib,
 * sharing, gpu_sharing, gpu_uuids, pool), decoded by the same spec codec
 * (gp_fleet_node_parse), plus what only the simulator needs:
 *
 *   nodes:
 *     - name: h100-a        # with count: h100-a-0, h100-a-1
 *       count: 2
 *       block: blk-a
 *       gpu_type: H100
 *       gpus: 8
 *       gpu_mem_mib: 81920
 *       device_dir: /tmp/gpudev   # sim only: DIR/nvidia0.., DIR/nvidiactl, DIR/nvidia-uvm, DIR/nvidia-caps/
 *
 * `count` expands an entry into NAME-0 .. NAME-(count-1) as the fleet file
 * does (not with gpu_uuids); `device_dir` (optional) is where the GPUs'
 * device nodes are (stand-ins in tests; /dev on a real host).  Names are
 * unique; unknown fields are errors.  Errors name the file, the line and
 * the field path ("nodes.yaml:5: nodes[0]: gpus must be an integer", field
 * "nodes[0].gpus").
 *
 * Ownership: gp_node_file_load fills a caller-owned gp_node_file whose
 * nodes array it allocates; gp_node_file_free releases it.
 */
#ifndef GP_AGENT_NODE_FILE_H
#define GP_AGENT_NODE_FILE_H

#include "agent/gpu/gpu.h"

typedef struct gp_sim_node {
    char name[GP_NAME_MAX], zone[GP_NAME_MAX], block[GP_NAME_MAX], gpu_type[GP_NAME_MAX], pool[GP_NAME_MAX];
    int gpu_count, nvlink_domains;
    int64_t gpu_mem_mib, cpu_millis, mem_mib;
    gp_sharing sharing[GP_MAX_GPUS_PER_NODE];        /* per GPU (`sharing` or `gpu_sharing`) */
    char uuids[GP_MAX_GPUS_PER_NODE][GP_UUID_MAX];   /* as given in gpu_uuids; "" when not given */
    char device_dir[GP_GPU_PATH_MAX];                /* "" when not given */
} gp_sim_node;

typedef struct gp_node_file {
    gp_sim_node *nodes;
    size_t n_nodes;
} gp_node_file;

gp_err gp_node_file_load(const char *path, gp_node_file *out, gp_error *err);
/* Same, from a buffer; name is what messages call it. */
gp_err gp_node_file_parse(const char *text, size_t len, const char *name, gp_node_file *out, gp_error *err);
void gp_node_file_free(gp_node_file *f);

/* The node called name, or, for a NULL name, the file's only node.
 * GP_ERR_NOT_FOUND / GP_ERR_INVALID with field "node" otherwise. */
gp_err gp_node_file_find(const gp_node_file *f, const char *name, size_t *index, gp_error *err);

#endif

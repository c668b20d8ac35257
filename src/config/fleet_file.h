/* fleet_file.h - the fleet file: nodes and pools, as YAML or JSON.
 *
 * One format for the daemon (--fleet FILE, until agents register nodes)
 * and the simulator (--fleet FILE).  Example (docs/fleet-file.md has all
 * fields and their defaults):
 *
 *   pools:
 *     - name: default
 *       score: default        # default|bestfit|fgd|random|dotprod|clustering|packing|spread
 *       timeslice_replicas: 4
 *   nodes:
 *     - name: h100-a          # with count: h100-a-0 .. h100-a-3
 *       count: 4
 *       zone: us-east-1a
 *       block: blk-a
 *       gpu_type: H100
 *       gpus: 8
 *       nvlink_domains: 1
 *       gpu_mem_mib: 81920
 *       cpu_millis: 192000
 *       mem_mib: 2097152
 *       sharing: exclusive     # exclusive|mig|mps|timeslice
 *       pool: default
 *
 * A pool entry and a node entry (less `count`) are decoded by the spec
 * codec (spec/spec_json.h: gp_pool_parse, gp_fleet_node_parse), as the
 * event log's are.  Errors name the file, the line, the entry and the
 * field ("fleet.yaml:4: nodes[0]: gpus must be an integer, got the string
 * \"8\"", field "nodes[0].gpus").  Unknown fields are errors.
 *
 * Ownership: gp_fleet_file_load fills a caller-owned gp_fleet_file whose
 * arrays and strings it allocates; gp_fleet_file_free releases them.
 */
#ifndef GP_CONFIG_FLEET_FILE_H
#define GP_CONFIG_FLEET_FILE_H

#include "core/engine.h"

typedef struct gp_fleet_pool {
    char name[GP_NAME_MAX];
    gp_pool_spec spec;
    bool owner_given;          /* the file says `owner` (else the owner set by the API stays) */
} gp_fleet_pool;

typedef struct gp_fleet_file {
    gp_node_spec *nodes;       /* strings inside point into storage owned by the file */
    size_t n_nodes;
    gp_fleet_pool *pools;
    size_t n_pools;
    void *storage;             /* private */
} gp_fleet_file;

gp_err gp_fleet_file_load(const char *path, gp_fleet_file *out, gp_error *err);
/* Same, from a buffer (used by the fuzz target and the API). */
gp_err gp_fleet_file_parse(const char *text, size_t len, const char *name, gp_fleet_file *out, gp_error *err);
void gp_fleet_file_free(gp_fleet_file *f);
/* Configure the pools and add the nodes to an engine, in file order. */
gp_err gp_fleet_file_apply(const gp_fleet_file *f, gp_engine *e, int64_t now, gp_error *err);

#endif

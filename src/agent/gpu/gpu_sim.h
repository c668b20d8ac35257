/* gpu_sim.h - what the sim backend offers besides gp_gpu_ops: many nodes
 * from one node file, and the fault file's writer.
 *
 * gp_gpu_open("sim", ...) opens one node of a node file (node_file.h).  A
 * process that simulates many nodes (the scale benchmark) loads the file
 * once and opens each node from it with gp_gpu_sim_open_node.
 *
 * The fault file holds one JSON object a line, appended by
 * gp_gpu_sim_fault_append (`gpupool-agent fault`) or by hand:
 *
 *   {"node": "h100-a-0", "gpu": 3, "xid": 79}
 *   {"node": "h100-a-0", "gpu": 2, "ecc_uncorrected": 1}
 *   {"gpu": 0, "lost": true}               (no node: every node of the file)
 *   {"node": "h100-a-0", "gpu": 0, "reset": true}   (a repair: back on the bus, volatile ECC cleared)
 *
 * A line holds `gpu` and exactly one of `xid` (1..999), `ecc_corrected` /
 * `ecc_uncorrected` (1..1e9 errors, both may be given), `lost` (true) or
 * `reset` (true); or it is a memory line, state rather than an event:
 *
 *   {"node": "h100-a-0", "gpu": 0, "pid": 4242, "memory_mib": 9000}
 *   {"gpu": 3, "pid": 4242, "memory_mib": 5000, "uuid": "MIG-..."}
 *
 * from which telemetry lists process `pid` on that GPU (or on the MIG
 * instance `uuid`) with `memory_mib` MiB, until a later line gives it 0 or
 * the process is gone (`gpupool-agent fault --gpu N --pid P --memory-mib M`:
 * a test job "allocates" GPU memory by running it with its own pid).
 * An open backend takes up the lines appended after it opened on its next
 * poll, each once, as health events; the lines already there when it
 * opened count in its state (ECC totals, lost GPUs) but are not delivered
 * again.  A line without its newline yet waits for it.  A bad line is
 * skipped by the poll that meets it, which fails naming the line ("F:4:
 * gpu must be an integer 0..7", field "gpu"); the next poll goes on after
 * it.  At open a bad line fails the open.
 *
 * Ownership: as gpu.h; the node file is read during the call only.
 */
#ifndef GP_AGENT_GPU_SIM_H
#define GP_AGENT_GPU_SIM_H

#include "agent/gpu/gpu.h"
#include "agent/gpu/node_file.h"

extern const gp_gpu_ops gp_gpu_sim_ops;

/* Opens node `index` of an already loaded node file.  fault_file NULL:
 * the node file's path + ".faults" (node_file_path may then not be NULL). */
gp_err gp_gpu_sim_open_node(const gp_node_file *f, size_t index, const char *node_file_path, const char *fault_file,
                            uint64_t seed, gp_gpu *out, gp_error *err);

/* The fault file of opt: opt->fault_file, or opt->node_file + ".faults". */
void gp_gpu_sim_fault_path(const char *node_file, const char *fault_file, char *out, size_t cap);

/* Appends one fault for node `node` (as a gp_gpu_event: kind, gpu, xid or
 * ECC counts) to the fault file, after checking it as a poll would:
 * GP_ERR_INVALID naming "gpu", "xid", "ecc_corrected" or "ecc_uncorrected";
 * GP_ERR_NOT_FOUND field "fault_file" when the file cannot be written. */
gp_err gp_gpu_sim_fault_append(const gp_sim_node *node, const char *fault_file, const gp_gpu_event *fault,
                               gp_error *err);

/* Appends a memory line (uuid NULL or "": the GPU's own), checked as a
 * poll would: GP_ERR_INVALID naming "gpu", "pid", "memory_mib" or "uuid". */
gp_err gp_gpu_sim_memory_append(const gp_sim_node *node, const char *fault_file, int gpu, int pid,
                                int64_t memory_mib, const char *uuid, gp_error *err);

#endif

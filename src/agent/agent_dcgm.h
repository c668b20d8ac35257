/* agent_dcgm.h - dcgm-exporter's HPC job-mapping files, so that a site
 * that already runs dcgm-exporter (--hpc-job-mapping-dir DIR, or
 * DCGM_HPC_JOB_MAPPING_DIR) gets a job label on every GPU metric.
 *
 * The format (dcgm-exporter's docs, "Include HPC Job Information in Metric
 * Labels"): in DIR, one file per GPU named by its index ("0", "1", ...;
 * a MIG instance "GPU.GI", e.g. "2.1"), holding the ids of the jobs on it,
 * one per line.  `gpupool-agent run --dcgm-job-map DIR` keeps them: for a
 * node whose GPU 0 runs jobs 7 and 8 (MPS) and whose GPU 1 is idle,
 *
 *   DIR/0   "7\n8\n"
 *   DIR/1   ""          (a GPU with no job: an empty file)
 *
 * Every file is written whole (temporary file and rename), when a replica
 * starts or ends; a MIG instance's file that no longer has a job is
 * emptied.
 *
 * Ownership: callers own the arrays.
 */
#ifndef GP_AGENT_DCGM_H
#define GP_AGENT_DCGM_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* One job on one GPU or MIG instance. */
typedef struct gp_dcgm_use {
    int gpu;          /* index */
    int gi;           /* the MIG GPU instance id, -1 for the whole GPU */
    uint64_t job;
} gp_dcgm_use;

/* Writes DIR/0..gpu_count-1 and DIR/GPU.GI from uses (each job once per
 * file, in the order given), and empties the other GPU.GI files.
 * GP_ERR_CONFLICT naming "dcgm_job_map" when DIR cannot be written. */
gp_err gp_dcgm_job_map_write(const char *dir, int gpu_count, const gp_dcgm_use *uses, size_t n, gp_error *err);

#endif

/* fuzz_slurm.c - libFuzzer target: the Slurm readers (src/sim/trace_slurm.c).
 *
 * A site feeds gpupool-sim its own sacct and scontrol output, whatever
 * its Slurm version wrote.  The input is read both as a sacct history
 * and as a node list (the readers take a path: the input is written to
 * one temporary file, rewritten each time).  Nothing may crash, and the
 * history must add up: every data row is a job, a job that never ran, or
 * a malformed row; every job has a size the engine can take and times in
 * order (submit <= start <= end, duration >= 0).  gp_fuzz_reached_engine()
 * reports whether the last input gave at least one job (every seed must).
 */
#include "fuzz_harness.h"
#include "sim/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool reached;
static char path[64];

bool gp_fuzz_reached_engine(void)
{
    return reached;
}

static bool write_input(const unsigned char *data, size_t size)
{
    if (path[0] == '\0') {
        snprintf(path, sizeof path, "/tmp/gp_fuzz_slurm_XXXXXX");
        int fd = mkstemp(path);
        if (fd < 0)
            return false;
        close(fd);
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok;
}

static void check_history(const gp_trace *t)
{
    if (t->n_jobs + t->not_run + t->malformed != t->rows)
        abort();
    for (size_t i = 0; i < t->n_jobs; i++) {
        const gp_trace_job *j = &t->jobs[i];
        if (j->replicas < 1 || j->replicas > GP_MAX_REPLICAS || j->gpus < 0 || j->gpus > GP_MAX_GPUS_PER_NODE ||
            j->duration < 0 || j->observed_start < j->submit || j->observed_end < j->observed_start ||
            j->tenant >= t->n_tenants || (j->type_mask >> t->n_types) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    reached = false;
    if (size > 65536 || !write_input(data, size))
        return 0;
    gp_trace t;
    gp_trace_init(&t);
    gp_error err;
    gp_trace_read_opts opts = {.time_scale = 1};
    if (gp_trace_read_slurm(&t, path, &opts, &err) == GP_OK) {
        check_history(&t);
        reached = t.n_jobs > 0;
    }
    gp_trace_free(&t);
    char *yaml = NULL;
    if (gp_trace_slurm_fleet_yaml(path, &opts, &yaml, NULL, &err) == GP_OK)
        free(yaml);
    return 0;
}

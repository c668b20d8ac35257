/* store_use.c - the job_use table: allocated vs used, per job (store.h).
 *
 * One row per job that ran: its tenant, GPU type and milli-GPUs on each
 * of its GPUs (written with the decision that opened its usage interval),
 * the GPU-seconds its preemptions lost (with the preempt decisions), and
 * the counters gpupoold accumulates from the agents' heartbeats (busy
 * GPU-seconds, peak SM % and memory, since when it has been below each
 * SM level), which server/use.c flushes every few seconds.  Driven
 * GPU-seconds = busy_gpu_s x milli_per_gpu / 1000: a 250-milli MPS share
 * whose GPU reported 80 % SM for 100 s drove 0.8 x 100 x 0.25 = 20.
 * below_since is GP_STORE_USE_LEVELS int64 in the host's byte order.
 */
#include "store/store_internal.h"

#include <string.h>

gp_err gp_store_job_use_open(gp_store *s, uint64_t job, const char *tenant, const char *gpu_type,
                             int64_t milli_per_gpu, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_USE_OPEN, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)job);
    gp_db_bind_text(st, 2, tenant);
    gp_db_bind_text(st, 3, gpu_type);
    gp_db_bind_int64(st, 4, milli_per_gpu);
    return gp__store_exec_stmt(st, "job use open", err);
}

gp_err gp_store_job_use_lost(gp_store *s, uint64_t job, int64_t gpu_s, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_USE_LOST, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)job);
    gp_db_bind_int64(st, 2, gpu_s);
    return gp__store_exec_stmt(st, "job use lost", err);
}

gp_err gp_store_job_use_sample(gp_store *s, const gp_store_job_use *u, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_USE_SAMPLE, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)u->job_id);
    gp_db_bind_double(st, 2, u->busy_gpu_s);
    gp_db_bind_int64(st, 3, u->peak_sm);
    gp_db_bind_int64(st, 4, u->peak_memory_mib);
    gp_db_bind_blob(st, 5, u->below_since, sizeof u->below_since);
    gp_db_bind_int64(st, 6, u->updated);
    return gp__store_exec_stmt(st, "job use sample", err);
}

gp_err gp_store_job_use_scan(gp_store *s, gp_store_job_use_fn fn, void *ctx, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT job_id, busy_gpu_s, peak_sm, peak_memory_mib, below_since,"
                                       " COALESCE(updated, 0) FROM job_use WHERE updated IS NOT NULL ORDER BY job_id",
                                       GP_DB_STREAM, "job use scan", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW) {
        gp_store_job_use u = {.job_id = (uint64_t)gp_db_column_int64(st, 0),
                              .busy_gpu_s = gp_db_column_double(st, 1),
                              .peak_sm = (int)gp_db_column_int64(st, 2),
                              .peak_memory_mib = gp_db_column_int64(st, 3),
                              .updated = gp_db_column_int64(st, 5)};
        size_t len;
        const void *below = gp_db_column_blob(st, 4, &len);
        if (len == sizeof u.below_since)
            memcpy(u.below_since, below, sizeof u.below_since);
        fn(ctx, &u);
    }
    gp_err rc = step == GP_DB_DONE ? GP_OK : gp__store_failed(err, "job use scan");
    gp_db_finalize(st);
    return rc;
}

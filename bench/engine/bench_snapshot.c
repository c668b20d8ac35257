/* bench_snapshot.c - what an engine snapshot costs the daemon's engine
 * thread at fleet scale: the stall (gp_replayer_snapshot_fork, what
 * gpupoold's engine thread pays: the fork of a child that copies the state
 * from its copy-on-write image, server/snapshots.h), the child's time
 * until its copy is read back in the parent (gp_snapshot_child_collect),
 * the copy itself in-process (gp_engine_snapshot_write) and the restore at
 * start (gp_engine_snapshot_read), with the snapshot's size.
 *
 * The world: --gpus / 8 nodes of 8 H100 in blocks of 32 nodes, one tenant
 * per 1,000 GPUs, --jobs 1-GPU jobs (expected runtime 1 h) submitted and
 * ticked until the fleet is full, so the engine holds --gpus running jobs
 * and the rest pending (defaults: 50,000 GPUs, 100,000 live jobs).  Each
 * figure is the median of --rounds; the last line is JSON.
 *
 *     build/bin/bench_snapshot [--gpus N] [--jobs N] [--rounds N]
 */
#include "core/engine.h"
#include "eventlog/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static gp_engine *build(long gpus, long jobs)
{
    gp_engine *e = gp_engine_new(NULL);
    gp_error err;
    char name[64], block[64], path[64];
    for (long n = 0; n < gpus / 8; n++) {
        snprintf(name, sizeof name, "n%ld", n);
        snprintf(block, sizeof block, "b%ld", n / 32);
        gp_node_spec s = {.name = name, .zone = "z0", .block = block, .gpu_type = "H100", .gpu_count = 8,
                          .nvlink_domains = 1, .gpu_mem_mib = 81920, .cpu_millis = 128000, .mem_mib = 1048576};
        if (gp_engine_node_add(e, &s, 0, &err) != GP_OK)
            return NULL;
    }
    long tenants = gpus / 1000 > 0 ? gpus / 1000 : 1;
    gp_tenant_spec none = {.weight = 1, .lend = -1};
    none.limit.cpu_millis = none.limit.mem_mib = GP_UNLIMITED;
    none.user_limit = none.limit;
    gp_engine_tenant_set(e, "org", &none, 0, &err);
    for (long t = 0; t < tenants; t++) {
        snprintf(path, sizeof path, "org/t%ld", t);
        if (gp_engine_tenant_set(e, path, &none, 0, &err) != GP_OK)
            return NULL;
    }
    for (long j = 0; j < jobs; j++) {
        snprintf(path, sizeof path, "org/t%ld", j % tenants);
        gp_job_spec s = {.id = (uint64_t)j + 1, .tenant = path, .replicas = 1, .gpus = 1, .cpu_millis = 1000,
                         .mem_mib = 1024, .expected_runtime_s = 3600};
        if (gp_engine_job_submit(e, &s, 1, &err) != GP_OK)
            return NULL;
        if ((j + 1) % 10000 == 0) {
            gp_engine_tick(e, 1, &err);
            gp_engine_decisions_clear(e);
        }
    }
    gp_engine_tick(e, 2, &err);
    gp_engine_decisions_clear(e);
    return e;
}

/* One snapshot as gpupoold takes it: *stall the fork (the engine
 * thread's part), *child until the parts are read back. */
static int fork_round(const gp_replayer *rp, double *stall, double *child)
{
    gp_snapshot_child c;
    gp_snapshot_parts p;
    gp_error err;
    double t0 = now_ms();
    gp_err rc = gp_replayer_snapshot_fork(rp, 1, NULL, &c, &err);
    double t1 = now_ms();
    if (rc == GP_OK)
        rc = gp_snapshot_child_collect(&c, &p, &err);
    if (rc != GP_OK) {
        fprintf(stderr, "bench_snapshot: %s\n", err.message);
        return 1;
    }
    *stall = t1 - t0;
    *child = now_ms() - t1;
    gp_snapshot_parts_free(&p);
    return 0;
}

int main(int argc, char **argv)
{
    long gpus = 50000, jobs = 100000, rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--gpus") == 0)
            gpus = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--jobs") == 0)
            jobs = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atol(argv[i + 1]);
    }
    if (rounds < 1 || rounds > 100 || gpus < 8 || jobs < 0) {
        fprintf(stderr, "usage: %s [--gpus N] [--jobs N] [--rounds 1..100]\n", argv[0]);
        return 2;
    }
    gp_engine *e = build(gpus, jobs);
    if (!e) {
        fprintf(stderr, "bench_snapshot: building the engine failed\n");
        return 1;
    }
    gp_engine_stats st;
    gp_engine_stats_get(e, &st);
    gp_replayer rp;
    gp_error err;
    if (gp_replayer_init(&rp, NULL, &err) != GP_OK)
        return 1;
    gp_engine_free(rp.engine);
    rp.engine = e; /* the replayer owns it now */
    double w[100], r[100], stall[100], child[100];
    size_t len = 0;
    for (long k = 0; k < rounds; k++) {
        if (fork_round(&rp, &stall[k], &child[k]) != 0)
            return 1;
        unsigned char *buf;
        double t0 = now_ms();
        if (gp_engine_snapshot_write(e, &buf, &len, &err) != GP_OK)
            return 1;
        double t1 = now_ms();
        gp_engine *back;
        if (gp_engine_snapshot_read(buf, len, NULL, &back, &err) != GP_OK)
            return 1;
        double t2 = now_ms();
        w[k] = t1 - t0;
        r[k] = t2 - t1;
        gp_engine_free(back);
        free(buf);
    }
    qsort(w, (size_t)rounds, sizeof w[0], cmp);
    qsort(r, (size_t)rounds, sizeof r[0], cmp);
    qsort(stall, (size_t)rounds, sizeof stall[0], cmp);
    qsort(child, (size_t)rounds, sizeof child[0], cmp);
    printf("{\"bench\":\"snapshot\",\"gpus\":%ld,\"live_jobs\":%zu,\"running\":%zu,\"bytes\":%zu,"
           "\"stall_ms\":%.2f,\"stall_max_ms\":%.2f,\"child_ms\":%.1f,\"write_ms\":%.1f,\"read_ms\":%.1f}\n",
           gpus, st.jobs, st.running, len, stall[rounds / 2], stall[rounds - 1], child[rounds / 2], w[rounds / 2],
           r[rounds / 2]);
    gp_replayer_free(&rp);
    return 0;
}

/* prop_steps.c - the fence property tests' common steps (prop_steps.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "support/prop_steps.h"

static void ok(gp_err rc, const gp_error *err, const char *where, const char *what)
{
    if (rc != GP_OK)
        fail_msg("%s: %s: %s (%s: %s)", where, what, gp_err_name(rc), err->field, err->message);
}

void gp_prop_tick(gp_engine *e, int64_t now, const char *where)
{
    gp_error err;
    ok(gp_engine_tick(e, now, &err), &err, where, "tick");
    gp_engine_decisions_clear(e);
}

void gp_prop_finish_if_running(gp_engine *e, uint64_t id, int64_t now, const char *where)
{
    gp_job_info info;
    gp_error err;
    ok(gp_engine_job_info(e, id, &info, &err), &err, where, "info");
    if (info.state == GP_JOB_RUNNING)
        ok(gp_engine_job_finished(e, id, GP_EXIT_SUCCEEDED, now, &err), &err, where, "finish");
}

void gp_prop_snapshot_swap(gp_engine **e, const gp_engine_config *cfg, const char *where)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    gp_error err;
    gp_engine *back = NULL;
    ok(gp_engine_snapshot_write(*e, &buf, &len, &err), &err, where, "snapshot write");
    ok(gp_engine_snapshot_read(buf, len, cfg, &back, &err), &err, where, "snapshot read");
    free(buf);
    gp_engine_free(*e);
    *e = back;
}

/* Jobs still pending or in their grace. */
static size_t waiting(gp_engine *e, const uint64_t *ids, size_t n, const char *where)
{
    size_t count = 0;
    for (size_t k = 0; k < n; k++) {
        gp_job_info info;
        gp_error err;
        ok(gp_engine_job_info(e, ids[k], &info, &err), &err, where, "info");
        count += info.state == GP_JOB_PENDING || info.state == GP_JOB_PREEMPTING;
    }
    return count;
}

void gp_prop_progress(gp_engine *e, const uint64_t *ids, size_t n, int64_t *now, int64_t step,
                      void (*check)(void *ctx), void *ctx, const char *where)
{
    for (size_t round = 0; round <= n + 2 && waiting(e, ids, n, where) > 0; round++) {
        for (size_t k = 0; k < n; k++)
            gp_prop_finish_if_running(e, ids[k], *now, where);
        *now += step;
        gp_prop_tick(e, *now, where);
        check(ctx);
    }
    for (size_t k = 0; k < n; k++) {
        gp_job_info info;
        gp_error err;
        ok(gp_engine_job_info(e, ids[k], &info, &err), &err, where, "info");
        if (info.state == GP_JOB_PENDING) {
            char why[256];
            gp_engine_why(e, ids[k], why, sizeof why);
            fail_msg("%s: job %llu never placed on an empty fleet: %s", where, (unsigned long long)ids[k], why);
        }
    }
}

/* test_inflate.c - the FGD inflation sampler (sim/inflate.h) and the RNG.
 *
 * Semantics under test: the same seed gives the same submission sequence,
 * another seed another one; every trace pod appears (the trace asks for
 * less than the target), samples stop by FGD's rule (total + next pod's
 * per-GPU share <= ratio x capacity), pods arrive one per second with no
 * departures; a trace above the target is tuned down below it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sim/inflate.h"
#include "sim/rng.h"

/* Pods of 0.5, 1 and 8 GPUs and a CPU-only one. */
static void small_trace(gp_trace *t)
{
    gp_trace_init(t);
    uint16_t tenant;
    assert_true(gp_trace_tenant(t, "openb", &tenant));
    const int gpus[4] = {1, 1, 8, 0}, milli[4] = {500, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        gp_trace_job j;
        memset(&j, 0, sizeof j);
        j.replicas = 1;
        j.gpus = gpus[i];
        j.gpu_milli = milli[i];
        j.isolation = milli[i] ? GP_ISO_MPS : GP_ISO_EXCLUSIVE;
        j.submit = 1000 + i;
        j.duration = 50;
        j.cpu_millis = 1000 * (i + 1); /* tells the pods apart */
        assert_int_equal(gp_trace_add(t, &j, NULL), GP_OK);
    }
}

static int64_t total_milli(const gp_trace *t)
{
    int64_t sum = 0;
    for (size_t i = 0; i < t->n_jobs; i++)
        sum += gp_trace_job_milli(&t->jobs[i]);
    return sum;
}

static void same_seed_same_sequence(void **state)
{
    (void)state;
    gp_trace src, a, b, c;
    small_trace(&src);
    gp_trace_init(&a);
    gp_trace_init(&b);
    gp_trace_init(&c);
    gp_error err;
    assert_int_equal(gp_trace_inflate(&src, 1.3, 100000, 42, &a, &err), GP_OK);
    assert_int_equal(gp_trace_inflate(&src, 1.3, 100000, 42, &b, &err), GP_OK);
    assert_int_equal(gp_trace_inflate(&src, 1.3, 100000, 43, &c, &err), GP_OK);
    assert_int_equal(a.n_jobs, b.n_jobs);
    bool differs = a.n_jobs != c.n_jobs;
    for (size_t i = 0; i < a.n_jobs; i++) {
        assert_int_equal(a.jobs[i].cpu_millis, b.jobs[i].cpu_millis);
        differs = differs || (i < c.n_jobs && a.jobs[i].cpu_millis != c.jobs[i].cpu_millis);
    }
    assert_true(differs);
    gp_trace_free(&src);
    gp_trace_free(&a);
    gp_trace_free(&b);
    gp_trace_free(&c);
}

static void fgd_stopping_rule(void **state)
{
    (void)state;
    gp_trace src, out;
    small_trace(&src);
    gp_trace_init(&out);
    gp_error err;
    int64_t capacity = 100000, target = 130000; /* 100 GPUs, ratio 1.3 */
    assert_int_equal(gp_trace_inflate(&src, 1.3, capacity, 7, &out, &err), GP_OK);
    /* the four trace pods come first (shuffled), then the samples */
    int seen[4] = {0};
    for (size_t i = 0; i < 4; i++)
        seen[out.jobs[i].cpu_millis / 1000 - 1]++;
    for (int i = 0; i < 4; i++)
        assert_int_equal(seen[i], 1);
    /* total before the last GPU pod + its per-GPU share was <= target */
    int64_t total = total_milli(&out);
    const gp_trace_job *last = &out.jobs[out.n_jobs - 1];
    int64_t per_gpu = last->gpus == 0 ? 0 : last->gpu_milli ? last->gpu_milli : 1000;
    assert_true(total - gp_trace_job_milli(last) + per_gpu <= target);
    assert_true(total > target - 8000); /* it went on until close to the target */
    for (size_t i = 0; i < out.n_jobs; i++) {
        assert_int_equal(out.jobs[i].submit, (int64_t)i + 1);
        assert_int_equal(out.jobs[i].duration, -1);
        assert_int_equal(out.jobs[i].id, i + 1);
    }
    gp_trace_free(&src);
    gp_trace_free(&out);
}

static void tunes_down(void **state)
{
    (void)state;
    gp_trace src, out;
    small_trace(&src); /* 9.5 GPUs */
    gp_trace_init(&out);
    gp_error err;
    assert_int_equal(gp_trace_inflate(&src, 1.0, 5000, 1, &out, &err), GP_OK);
    assert_true(total_milli(&out) <= 5000);
    assert_true(out.n_jobs < 4);
    assert_int_equal(gp_trace_inflate(&src, 0, 5000, 1, &out, &err), GP_ERR_INVALID);
    gp_trace_free(&src);
    gp_trace_free(&out);
}

static void rng_is_reproducible(void **state)
{
    (void)state;
    gp_rng a = gp_rng_new(5), b = gp_rng_new(5);
    for (int i = 0; i < 100; i++)
        assert_int_equal(gp_rng_next(&a), gp_rng_next(&b));
    gp_rng r = gp_rng_new(9);
    for (int i = 0; i < 1000; i++) {
        double u = gp_rng_uniform(&r);
        assert_true(u >= 0 && u < 1);
        assert_true(gp_rng_below(&r, 7) < 7);
    }
    assert_true(gp_rng_derive(1, 1) != gp_rng_derive(1, 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_seed_same_sequence),
        cmocka_unit_test(fgd_stopping_rule),
        cmocka_unit_test(tunes_down),
        cmocka_unit_test(rng_is_reproducible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

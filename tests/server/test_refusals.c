/* test_refusals.c - refused requests into the audit chain (refusals.h):
 * the rows a flood leaves are bounded whatever its shape, every refusal
 * is a row or counted in a summary row, and the chain still verifies.
 */
#include "world.h"

#include "server/refusals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T0_MS = 1000000, MINUTE_MS = 60000 };

static gp_refusals refusals; /* big: not on the stack */

static void note(int status, const char *source, int64_t now_ms)
{
    gp_refusal x = {.request_id = "r1", .actor = "-", .role = "-", .status = status, .target = "GET /v1/jobs",
                    .reason = "unauthorized: unknown or revoked token"};
    snprintf(x.source, sizeof x.source, "%s", source);
    gp_refusals_note(&refusals, &x, now_ms);
}

static void flush(world *w, int64_t now_ms, bool ending)
{
    gp_error err;
    gp_err rc = gp_store_begin(w->store, &err);
    if (rc == GP_OK)
        rc = gp_refusals_flush(&refusals, w->store, now_ms, now_ms / 1000, ending, &err);
    commit(w, rc, &err, "flush");
}

/* The request.refused rows: how many, and how many refusals they stand
 * for (a summary "N more refusals suppressed" for N). */
static void count_rows(world *w, int *rows, int64_t *refused)
{
    json_t *out = NULL;
    gp_error err;
    check(gp_store_audit_list(w->store, 0, 1000, &out, &err), &err, "audit list");
    *rows = 0;
    *refused = 0;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(out, "audit"), i, row) {
        const char *result = json_string_value(json_object_get(row, "result"));
        const char *more = strstr(result, " more refusals suppressed");
        if (strcmp(json_string_value(json_object_get(row, "action")), "request.refused") != 0)
            continue;
        (*rows)++;
        while (more && more > result && more[-1] >= '0' && more[-1] <= '9')
            more--;
        *refused += more ? strtoll(more, NULL, 10) : 1;
    }
    json_decref(out);
}

static void one_source_gets_per_min_rows_then_one_that_counts_the_rest(void **state)
{
    world *w = *state;
    gp_refusals_init(&refusals, 10);
    for (int i = 0; i < 5000; i++)
        note(401, "10.0.0.9", T0_MS + i);
    flush(w, T0_MS + 5000, false);
    int rows;
    int64_t refused;
    count_rows(w, &rows, &refused);
    assert_int_equal(rows, 10);
    flush(w, T0_MS + MINUTE_MS, false); /* the minute is over: its summary */
    count_rows(w, &rows, &refused);
    assert_int_equal(rows, 11);
    assert_int_equal(refused, 5000);
    gp_refusals_destroy(&refusals);
}

static void many_sources_stay_bounded_and_every_refusal_is_counted(void **state)
{
    world *w = *state;
    gp_refusals_init(&refusals, 10);
    char source[32];
    for (int s = 0; s < 1000; s++)
        for (int i = 0; i < 100; i++) {
            snprintf(source, sizeof source, "10.0.%d.%d", s / 256, s % 256);
            note(i % 2 ? 401 : 403, source, T0_MS + s);
        }
    flush(w, T0_MS + 2000, true); /* gpupoold stops: the counts now */
    int rows;
    int64_t refused;
    count_rows(w, &rows, &refused);
    assert_true(rows <= 20 * 10 + GP_REFUSAL_SOURCES + 1);
    assert_int_equal(refused, 100000);
    int64_t checked = 0, first_broken = 0;
    gp_error err;
    check(gp_store_audit_verify(w->store, &checked, &first_broken, &err), &err, "verify");
    assert_true(checked >= rows);
    assert_int_equal(first_broken, 0); /* 0: none broken */
    gp_refusals_destroy(&refusals);
}

static void zero_per_minute_writes_nothing(void **state)
{
    world *w = *state;
    gp_refusals_init(&refusals, 0);
    note(403, "10.0.0.9", T0_MS);
    flush(w, T0_MS + MINUTE_MS, true);
    int rows;
    int64_t refused;
    count_rows(w, &rows, &refused);
    assert_int_equal(rows, 0);
    gp_refusals_destroy(&refusals);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(one_source_gets_per_min_rows_then_one_that_counts_the_rest, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(many_sources_stay_bounded_and_every_refusal_is_counted, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(zero_per_minute_writes_nothing, world_setup, world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_snapshot_cadence.c - how many events gpupoold lets pass between
 * two engine snapshots (snapshots.h): --snapshot-every-events, or one
 * event per GP_SNAPSHOT_BYTES_PER_EVENT bytes of the last snapshot when
 * that is more, so a big state is not rewritten every few seconds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "server/snapshots.h"

static void before_the_first_snapshot_the_event_count_alone_decides(void **state)
{
    (void)state;
    assert_int_equal(gp_snapshots_events_between(10000, 0), 10000);
}

static void a_small_snapshot_keeps_the_event_count(void **state)
{
    (void)state;
    /* 1 MB / 128 = 8,192 events: fewer than the 10,000 asked for */
    assert_int_equal(gp_snapshots_events_between(10000, 1u << 20), 10000);
}

static void a_big_snapshot_waits_one_event_per_128_bytes(void **state)
{
    (void)state;
    /* the 16 MB snapshot of bench_api's 50,000 GPUs and 16,000 live jobs */
    assert_int_equal(gp_snapshots_events_between(10000, 16358355), 127799);
    assert_int_equal(gp_snapshots_events_between(5, 12800), 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(before_the_first_snapshot_the_event_count_alone_decides),
        cmocka_unit_test(a_small_snapshot_keeps_the_event_count),
        cmocka_unit_test(a_big_snapshot_waits_one_event_per_128_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

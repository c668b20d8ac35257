/* test_grow.c - the growable array (util/grow.h).
 *
 * Rule: the capacity doubles (16 items first) until it holds what is
 * needed, the items already there survive, and a
 * request that cannot be met (need * item_size overflows) returns NULL
 * with the array and its capacity left as they were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/grow.h"

static void appends_double_the_capacity_and_keep_the_items(void **state)
{
    (void)state;
    int64_t *v = NULL;
    size_t n = 0, cap = 0;
    for (int64_t i = 0; i < 100; i++) {
        int64_t *grown = gp_grow(v, &cap, n + 1, sizeof *grown);
        assert_non_null(grown);
        v = grown;
        v[n++] = i;
        if (n == 1)
            assert_int_equal(cap, 16);
    }
    assert_int_equal(cap, 128);
    for (int64_t i = 0; i < 100; i++)
        assert_int_equal(v[i], i);
    free(v);
}

static void room_already_there_returns_the_same_array(void **state)
{
    (void)state;
    size_t cap = 0;
    char *v = gp_grow(NULL, &cap, 10, 1);
    assert_non_null(v);
    assert_int_equal(cap, 16);
    assert_ptr_equal(gp_grow(v, &cap, 16, 1), v);
    assert_int_equal(cap, 16);
    free(v);
}

static void a_large_need_doubles_until_it_fits(void **state)
{
    (void)state;
    size_t cap = 0;
    uint32_t *v = gp_grow(NULL, &cap, 1, sizeof *v);
    assert_non_null(v);
    v[0] = 7;
    v = gp_grow(v, &cap, 1000, sizeof *v);
    assert_non_null(v);
    assert_int_equal(cap, 1024);
    assert_int_equal(v[0], 7);
    v[cap - 1] = 9; /* the whole capacity is usable */
    free(v);
}

static void an_overflowing_need_fails_and_leaves_the_array(void **state)
{
    (void)state;
    size_t cap = 0;
    uint64_t *v = gp_grow(NULL, &cap, 4, sizeof *v);
    assert_non_null(v);
    v[3] = 42;
    assert_null(gp_grow(v, &cap, SIZE_MAX / 4, sizeof *v));
    assert_null(gp_grow(v, &cap, SIZE_MAX, 1));
    assert_int_equal(cap, 16);
    assert_int_equal(v[3], 42);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(appends_double_the_capacity_and_keep_the_items),
        cmocka_unit_test(room_already_there_returns_the_same_array),
        cmocka_unit_test(a_large_need_doubles_until_it_fits),
        cmocka_unit_test(an_overflowing_need_fails_and_leaves_the_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

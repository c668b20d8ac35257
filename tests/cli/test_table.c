/* test_table.c - aligned tables fitted to a width (cli/table.h, gp_table_fit and gp_table_width: `gpupool top`,
 * `gpupool nodes`). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const HEAD[] = {"JOB", "TENANT", "NOTE", "REASON"};
static const char *const ROW[] = {"12", "research/vision", "checkpointed",
                                  "held for the reservation of job 2 (research/vision)"};

/* The table printed (and freed) after gp_table_fit(width, drop); the caller frees the text. */
static char *fitted(size_t width, const int *drop)
{
    gp_table t;
    gp_table_init(&t, 4, HEAD);
    gp_table_add(&t, ROW);
    gp_table_fit(&t, width, drop);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    gp_table_print(&t, out);
    fclose(out);
    return text;
}

static void a_table_that_fits_is_printed_as_it_is(void **state)
{
    (void)state;
    char *text = fitted(0, NULL);
    assert_string_equal(text, "JOB  TENANT           NOTE          REASON\n"
                              "12   research/vision  checkpointed  held for the reservation of job 2 (research/vision)\n");
    free(text);
}

static void the_least_needed_column_goes_first_then_the_last_is_cut(void **state)
{
    (void)state;
    static const int drop[] = {2, -1};
    char *text = fitted(50, drop);
    assert_string_equal(text, "JOB  TENANT           REASON\n"
                              "12   research/vision  held for the reservation ...\n");
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        assert_true(strlen(line) <= 50);
    free(text);
}

static void without_columns_to_drop_only_the_last_is_cut(void **state)
{
    (void)state;
    char *text = fitted(40, NULL);
    assert_string_equal(text, "JOB  TENANT           NOTE          R...\n"
                              "12   research/vision  checkpointed  h...\n");
    free(text);
}

/* Off a terminal (ctest's pipe) the width is $COLUMNS, and no limit without it. */
static void off_a_terminal_the_width_is_columns_or_none(void **state)
{
    (void)state;
    if (isatty(STDOUT_FILENO))
        skip();
    setenv("COLUMNS", "72", 1);
    assert_int_equal(gp_table_width(), 72);
    setenv("COLUMNS", "wide", 1);
    assert_int_equal(gp_table_width(), 0);
    unsetenv("COLUMNS");
    assert_int_equal(gp_table_width(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_table_that_fits_is_printed_as_it_is),
        cmocka_unit_test(the_least_needed_column_goes_first_then_the_last_is_cut),
        cmocka_unit_test(without_columns_to_drop_only_the_last_is_cut),
        cmocka_unit_test(off_a_terminal_the_width_is_columns_or_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_help_lists.c - the CLI's help lists the names of util's tables,
 * not names of its own: `gpupool submit --help` spells the stop signals
 * exactly as util/stop_signal.h has them (the CLI's usage text is a
 * literal; this is what keeps it equal to the one table).
 *
 * Run as: test_help_lists PATH_TO_GPUPOOL */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/stop_signal.h"

#include <stdio.h>
#include <string.h>

static const char *gpupool;

static void submit_help_lists_every_stop_signal_in_table_order(void **state)
{
    (void)state;
    char cmd[4096], help[16384] = "", list[256], want[300];
    snprintf(cmd, sizeof cmd, "'%s' submit --help", gpupool);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(help, 1, sizeof help - 1, p);
    help[n] = '\0';
    pclose(p);
    gp_stop_signal_list(list, sizeof list, "|");
    snprintf(want, sizeof want, "[--stop-signal %s]", list);
    if (!strstr(help, want))
        fail_msg("submit --help lacks \"%s\"", want);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_help_lists PATH_TO_GPUPOOL\n");
        return 2;
    }
    gpupool = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(submit_help_lists_every_stop_signal_in_table_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_scratch.c - a replica's folders removed as their owner, never
 * through a link the job planted (src/agent/launch/scratch.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/launch/scratch.h"

#define JOB_UID 2000000042

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    close(fd);
}

/* ROOT (0711, root's) / run (the job's) holding a file, a folder and links
 * to a file and a folder of root's outside: run goes, the targets stay. */
static void a_folder_goes_and_what_its_links_point_at_stays(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        skip();
    }
    char root[64] = "/run/gp-scratch-XXXXXX", run[96], path[160], outside[96], kept[128];
    assert_non_null(mkdtemp(root));
    chmod(root, 0711);
    snprintf(outside, sizeof outside, "%s-outside", root);
    assert_int_equal(mkdir(outside, 0755), 0);
    snprintf(kept, sizeof kept, "%s/precious", outside);
    touch(kept);
    snprintf(run, sizeof run, "%s/job42-r0-1", root);
    assert_int_equal(mkdir(run, 0700), 0);
    snprintf(path, sizeof path, "%s/sub", run);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/sub/file", run);
    touch(path);
    snprintf(path, sizeof path, "%s/link-to-file", run);
    assert_int_equal(symlink(kept, path), 0);
    snprintf(path, sizeof path, "%s/link-to-folder", run);
    assert_int_equal(symlink(outside, path), 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "chown -hR %d:%d %s", JOB_UID, JOB_UID, run);
    assert_int_equal(system(cmd), 0);

    assert_true(gp_scratch_remove(run));
    assert_int_not_equal(access(run, F_OK), 0);
    assert_int_equal(access(kept, F_OK), 0);
    assert_true(gp_scratch_remove(run)); /* gone already: fine */
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", root, outside);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_folder_goes_and_what_its_links_point_at_stays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

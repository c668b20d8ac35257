/* test_replica_log.c - the capped log a replica's supervisor writes and
 * the agent reads at stream offsets (src/agent/launch/replica_log.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/launch/replica_log.h"

typedef struct fixture {
    char dir[64];
    char path[128];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/gp-rlog-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/job1-r0-1.log", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* 100 lines of 1 KiB ("line NNN" padded) into a log capped at 16 KiB. */
static void write_lines(gp_replica_log *log, int count)
{
    char line[1024];
    for (int i = 0; i < count; i++) {
        memset(line, '.', sizeof line);
        int n = snprintf(line, sizeof line, "line %03d ", i);
        line[n] = '.';
        line[sizeof line - 1] = '\n';
        assert_true(gp_replica_log_append(log, line, sizeof line));
    }
}

static void a_log_past_its_cap_keeps_its_newest_bytes_and_says_what_went(void **state)
{
    fixture *f = *state;
    gp_replica_log log;
    assert_int_equal(gp_replica_log_open(&log, f->path, 16 * 1024, NULL), GP_OK);
    write_lines(&log, 100);
    gp_replica_log_close(&log);
    assert_true(file_size(f->path) <= 16 * 1024);
    char *text = calloc(1, 32 * 1024);
    int fd = open(f->path, O_RDONLY);
    assert_true(read(fd, text, 32 * 1024 - 1) > 0);
    close(fd);
    assert_non_null(strstr(text, "line 099 "));                  /* the newest kept */
    assert_null(strstr(text, "line 000 "));                      /* the oldest dropped */
    assert_non_null(strstr(text, "gpupool: dropped ")); /* said, each time */
    assert_non_null(strstr(text, " bytes of output (the log keeps its newest 0 MiB)"));
    free(text);
    assert_true(log.dropped > 80 * 1024);
}

/* The reader's stream offsets: base + file offset names the same byte
 * before and after a rotation. */
static void the_reader_finds_each_byte_at_its_stream_offset_across_rotations(void **state)
{
    fixture *f = *state;
    gp_replica_log log;
    assert_int_equal(gp_replica_log_open(&log, f->path, 16 * 1024, NULL), GP_OK);
    write_lines(&log, 10); /* 10 KiB: not rotated yet */
    int64_t base = -1;
    int fd = gp_replica_log_open_read(f->path, &base);
    assert_true(fd >= 0);
    assert_int_equal(base, 0);
    char want[9], got[9] = "";
    assert_int_equal(pread(fd, want, 8, 9 * 1024), 8); /* "line 009" at stream 9216 */
    close(fd);
    write_lines(&log, 10);
    fd = gp_replica_log_open_read(f->path, &base);
    assert_true(fd >= 0 && base > 0 && base <= 9 * 1024);
    assert_int_equal(pread(fd, got, 8, 9 * 1024 - base), 8);
    close(fd);
    assert_memory_equal(got, want, 8);
    gp_replica_log_close(&log);
    /* the supervisor of an adopted run opens it again: the stream goes on */
    assert_int_equal(gp_replica_log_open(&log, f->path, 16 * 1024, NULL), GP_OK);
    assert_int_equal(log.base, base);
    gp_replica_log_close(&log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_log_past_its_cap_keeps_its_newest_bytes_and_says_what_went, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_reader_finds_each_byte_at_its_stream_offset_across_rotations, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

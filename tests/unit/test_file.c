/* test_file.c - reading a whole file into memory (util/file.h).
 *
 * Rule: the config readers, the daemon's TLS files and the CLI share one
 * reader.  It returns every byte (NUL bytes included, *len counts them),
 * terminated by a NUL past the end, whatever the file's size; a file that
 * cannot be opened is an error naming the field "file" and the path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/file.h"

/* A temporary file holding len bytes of data; its path goes to path. */
static void write_temp(char path[64], const char *data, size_t len)
{
    snprintf(path, 64, "/tmp/gp_test_file_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void a_file_larger_than_the_first_buffer_is_read_whole(void **state)
{
    (void)state;
    size_t n = 10000; /* past 4096 and 8192: the buffer grows twice */
    char *data = malloc(n);
    assert_non_null(data);
    for (size_t i = 0; i < n; i++)
        data[i] = (char)('a' + i % 26);
    data[5000] = '\0'; /* a NUL inside is data, not the end */
    char path[64];
    write_temp(path, data, n);
    char *text = NULL;
    size_t len = 0;
    gp_error err;
    assert_int_equal(gp_file_read_all(path, &text, &len, &err), GP_OK);
    assert_int_equal(len, n);
    assert_memory_equal(text, data, n);
    assert_int_equal(text[n], '\0');
    free(text);
    free(data);
    unlink(path);
}

static void a_file_of_exactly_one_buffer_less_its_nul_is_read_whole(void **state)
{
    (void)state;
    char data[4095];
    memset(data, 'x', sizeof data);
    char path[64];
    write_temp(path, data, sizeof data);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(gp_file_read_all(path, &text, &len, NULL), GP_OK);
    assert_int_equal(len, sizeof data);
    assert_int_equal(strlen(text), sizeof data);
    free(text);
    unlink(path);
}

static void an_empty_file_reads_as_empty_text(void **state)
{
    (void)state;
    char path[64];
    write_temp(path, "", 0);
    char *text = NULL;
    size_t len = 99;
    assert_int_equal(gp_file_read_all(path, &text, &len, NULL), GP_OK);
    assert_int_equal(len, 0);
    assert_string_equal(text, "");
    free(text);
    unlink(path);
}

static void a_missing_file_is_not_found_naming_the_path(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    gp_error err;
    assert_int_equal(gp_file_read_all("/nonexistent/gp/fleet.yaml", &text, &len, &err), GP_ERR_NOT_FOUND);
    assert_null(text);
    assert_string_equal(err.field, "file");
    assert_non_null(strstr(err.message, "/nonexistent/gp/fleet.yaml"));
}

static void a_stream_is_read_from_where_it_stands_to_its_end(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    fputs("skipped|kept", f);
    assert_int_equal(fseek(f, 8, SEEK_SET), 0);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(gp_file_read_stream(f, "stdin", &text, &len, NULL), GP_OK);
    assert_int_equal(len, 4);
    assert_string_equal(text, "kept");
    free(text);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_file_larger_than_the_first_buffer_is_read_whole),
        cmocka_unit_test(a_file_of_exactly_one_buffer_less_its_nul_is_read_whole),
        cmocka_unit_test(an_empty_file_reads_as_empty_text),
        cmocka_unit_test(a_missing_file_is_not_found_naming_the_path),
        cmocka_unit_test(a_stream_is_read_from_where_it_stands_to_its_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

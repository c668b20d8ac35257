/* test_image_store.c - the image store's holds, eviction order and hint
 * hook without a registry (src/agent/image/image_store.c); pulls from real
 * registries are test_image_store.py's. */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/image/image_store.h"

#define HEX_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static char root[64];

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/gp-imgstore-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* images/HEX as a pull leaves it: rootfs and image.json, last used at `at`. */
static void fake_image(const char *hex, int64_t bytes, time_t at)
{
    char path[256];
    snprintf(path, sizeof path, "%s/images/%s", root, hex);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/images/%s/rootfs", root, hex);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/images/%s/image.json", root, hex);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"digest\":\"sha256:%s\",\"ref\":\"oci:/x:%c\",\"bytes\":%lld,\"config\":{}}", hex, hex[0],
            (long long)bytes);
    fclose(f);
    struct timespec times[2] = {{at, 0}, {at, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

static bool image_present(const char *hex)
{
    char path[256];
    snprintf(path, sizeof path, "%s/images/%s", root, hex);
    return access(path, F_OK) == 0;
}

static size_t images_in(gp_image_store *s)
{
    gp_image *images;
    size_t n;
    int64_t used;
    gp_error err;
    assert_int_equal(gp_image_store_list(s, &images, &n, &used, &err), GP_OK);
    free(images);
    return n;
}

/* An OCI layout ROOT/lay with one empty image, tagged v1: its reference. */
static void empty_layout(char *ref, size_t cap)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "umoci init --layout %s/lay && umoci new --image %s/lay:v1", root, root);
    assert_int_equal(system(cmd), 0);
    snprintf(ref, cap, "oci:%s/lay:v1", root);
}

static void a_hold_names_a_digest_and_a_replica_id(void **state)
{
    (void)state;
    gp_image_store *s;
    gp_error err;
    assert_int_equal(gp_image_store_open(root, 0, &s, &err), GP_OK);
    fake_image(HEX_A, 1000, 1000);
    const char *bad_holders[] = {"", "../escape", "a/b", ".hidden", "sp ace", "x\n"};
    for (size_t i = 0; i < sizeof bad_holders / sizeof *bad_holders; i++) {
        assert_int_equal(gp_image_store_hold(s, "sha256:" HEX_A, bad_holders[i], &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "holder");
    }
    assert_int_equal(gp_image_store_hold(s, "sha256:ABC", "r1", &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "digest");
    assert_int_equal(gp_image_store_hold(s, "sha256:../../../../etc/passwd", "r1", &err), GP_ERR_INVALID);
    assert_int_equal(gp_image_store_hold(s, "sha256:" HEX_B, "r1", &err), GP_ERR_NOT_FOUND);
    char path[256];
    snprintf(path, sizeof path, "%s/../escape", root);
    assert_int_not_equal(access(path, F_OK), 0);
    gp_image_store_close(s);
}

static void holds_count_once_per_replica_and_release_is_idempotent(void **state)
{
    (void)state;
    gp_image_store *s;
    gp_error err;
    gp_image *images;
    size_t n;
    int64_t used;
    assert_int_equal(gp_image_store_open(root, 0, &s, &err), GP_OK);
    fake_image(HEX_A, 1000, 1000);
    assert_int_equal(gp_image_store_hold(s, "sha256:" HEX_A, "job7-r0", &err), GP_OK);
    assert_int_equal(gp_image_store_hold(s, "sha256:" HEX_A, "job7-r0", &err), GP_OK);
    assert_int_equal(gp_image_store_hold(s, "sha256:" HEX_A, "job8-r0", &err), GP_OK);
    assert_int_equal(gp_image_store_list(s, &images, &n, &used, &err), GP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(images[0].holders, 2);
    free(images);
    assert_int_equal(gp_image_store_release(s, "sha256:" HEX_A, "job7-r0", &err), GP_OK);
    assert_int_equal(gp_image_store_release(s, "sha256:" HEX_A, "job7-r0", &err), GP_OK);
    assert_int_equal(gp_image_store_release(s, "sha256:" HEX_A, "job8-r0", &err), GP_OK);
    assert_int_equal(gp_image_store_list(s, &images, &n, &used, &err), GP_OK);
    assert_int_equal(images[0].holders, 0);
    free(images);
    gp_image_store_close(s);
}

/* A (used at 1000, held) is older than B (2000): a bound B alone meets
 * evicts B, never A; a store reopened (an agent restart) still sees A's hold. */
static void eviction_takes_the_oldest_unheld_and_holds_outlive_the_store(void **state)
{
    (void)state;
    gp_image_store *s;
    gp_error err;
    size_t removed = 0;
    assert_int_equal(gp_image_store_open(root, 0, &s, &err), GP_OK);
    fake_image(HEX_A, 1 << 20, 1000);
    fake_image(HEX_B, 1 << 20, 2000);
    assert_int_equal(gp_image_store_hold(s, "sha256:" HEX_A, "job7-r0", &err), GP_OK);
    gp_image_store_close(s);
    assert_int_equal(gp_image_store_open(root, 0, &s, &err), GP_OK);
    assert_int_equal(gp_image_store_prune(s, (3 << 20) / 2, &removed, &err), GP_OK);
    assert_int_equal(removed, 1);
    assert_true(image_present(HEX_A));
    assert_false(image_present(HEX_B));
    assert_int_equal(gp_image_store_prune(s, 0, &removed, &err), GP_OK);
    assert_true(image_present(HEX_A));
    assert_int_equal(gp_image_store_prune(s, 1000, &removed, &err), GP_ERR_CONFLICT);
    gp_image_store_close(s);
}

/* The agent's pull child: credentials on its stdin, lines parsed back to
 * ready, the image held for the replica named. */
static void a_spawned_pull_speaks_lines_the_agent_parses(void **state)
{
    (void)state;
    if (system("command -v skopeo >/dev/null && command -v umoci >/dev/null") != 0) {
        skip();
    }
    char ref[160], store[128];
    empty_layout(ref, sizeof ref);
    snprintf(store, sizeof store, "%s/store", root);
    gp_image_store *s;
    gp_error err;
    assert_int_equal(gp_image_store_open(store, 0, &s, &err), GP_OK);
    gp_image_pull_options o = {.username = "u", .password = "p", .holder = "job9-r0", .timeout_s = 60};
    pid_t pid;
    int fd;
    assert_int_equal(gp_image_pull_spawn(s, GP_AGENT_BIN, ref, &o, &pid, &fd, &err), GP_OK);
    FILE *f = fdopen(fd, "r");
    char line[8192];
    gp_image_pull_line last = {0};
    while (fgets(line, sizeof line, f))
        assert_int_equal(gp_image_pull_line_parse(line, &last, &err), GP_OK);
    fclose(f);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(last.phase, GP_IMAGE_PHASE_READY);
    assert_int_equal(gp_image_store_release(s, last.digest, "job9-r0", &err), GP_OK);
    assert_int_equal(images_in(s), 1);
    gp_image_store_close(s);
}

static void pull_lines_that_are_not_ones_are_refused(void **state)
{
    (void)state;
    gp_image_pull_line l;
    gp_error err;
    assert_int_equal(gp_image_pull_line_parse("not json", &l, &err), GP_ERR_INVALID);
    assert_int_equal(gp_image_pull_line_parse("{\"phase\":\"done\"}", &l, &err), GP_ERR_INVALID);
    assert_int_equal(gp_image_pull_line_parse("{\"phase\":\"ready\",\"digest\":\"sha256:../x\",\"rootfs\":\"/r\"}", &l,
                                              &err),
                     GP_ERR_INVALID);
    assert_int_equal(gp_image_pull_line_parse("{\"phase\":\"failed\",\"reason\":\"no_space\",\"message\":\"m\"}", &l,
                                              &err),
                     GP_OK);
    assert_int_equal(l.reason, GP_IMAGE_NO_SPACE);
    assert_int_equal(gp_image_pull_line_parse("{\"phase\":\"failed\",\"reason\":\"weird\"}", &l, &err), GP_OK);
    assert_int_equal(l.reason, GP_IMAGE_OTHER);
    assert_int_equal(gp_image_pull_line_parse("{\"phase\":\"pulling\",\"done_bytes\":5,\"total_bytes\":9}", &l, &err),
                     GP_OK);
    assert_int_equal(l.done_bytes, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_hold_names_a_digest_and_a_replica_id, setup, teardown),
        cmocka_unit_test_setup_teardown(holds_count_once_per_replica_and_release_is_idempotent, setup, teardown),
        cmocka_unit_test_setup_teardown(eviction_takes_the_oldest_unheld_and_holds_outlive_the_store, setup, teardown),
        cmocka_unit_test_setup_teardown(a_spawned_pull_speaks_lines_the_agent_parses, setup, teardown),
        cmocka_unit_test(pull_lines_that_are_not_ones_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

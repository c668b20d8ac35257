/* test_secret_box.c - tenants' secrets sealed at rest (secret_box.h):
 * the round trip, and every way a sealed value must fail to open (a byte
 * changed, another tenant's or name's row, another key), and the key
 * file's rules (created 0600 with 32 bytes, refused when others may read
 * it or its size is wrong).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "server/secret_box.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[] = "/tmp/gp-secret-box-XXXXXX";

static void key_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", g_dir, name);
}

static gp_secret_key fresh_key(const char *name)
{
    char path[256];
    key_path(path, sizeof path, name);
    gp_secret_key key;
    bool created = false;
    gp_error err = {0};
    assert_int_equal(gp_secret_key_load(path, &key, &created, &err), GP_OK);
    assert_true(created);
    return key;
}

static char *seal(const gp_secret_key *key, const char *tenant, const char *name, const char *value)
{
    char *sealed = NULL;
    gp_error err = {0};
    assert_int_equal(gp_secret_seal(key, tenant, name, value, strlen(value), &sealed, &err), GP_OK);
    return sealed;
}

static gp_err open_it(const gp_secret_key *key, const char *tenant, const char *name, const char *sealed, char **out)
{
    size_t len = 0;
    gp_error err = {0};
    return gp_secret_open(key, tenant, name, sealed, out, &len, &err);
}

static void a_sealed_value_opens_to_itself_and_does_not_show_it(void **state)
{
    (void)state;
    gp_secret_key key = fresh_key("round.key");
    char *sealed = seal(&key, "research/nlp", "HF_TOKEN", "hf_abc123");
    assert_null(strstr(sealed, "hf_abc123"));
    assert_memory_equal(sealed, "v1:", 3);
    char *plain = NULL;
    size_t len = 0;
    gp_error err = {0};
    assert_int_equal(gp_secret_open(&key, "research/nlp", "HF_TOKEN", sealed, &plain, &len, &err), GP_OK);
    assert_int_equal(len, 9);
    assert_string_equal(plain, "hf_abc123");
    char *again = seal(&key, "research/nlp", "HF_TOKEN", "hf_abc123");
    assert_string_not_equal(again, sealed); /* a fresh nonce each time */
    free(again);
    free(plain);
    free(sealed);
}

static void a_changed_byte_does_not_open(void **state)
{
    (void)state;
    gp_secret_key key = fresh_key("tamper.key");
    char *sealed = seal(&key, "research/nlp", "HF_TOKEN", "hf_abc123");
    /* each fifth base64 digit before the last group (whose last digit may
     * carry unused bits) */
    for (size_t i = 3; i + 4 < strlen(sealed); i += 5) {
        char was = sealed[i];
        sealed[i] = was == 'A' ? 'B' : 'A';
        char *plain = NULL;
        assert_int_equal(open_it(&key, "research/nlp", "HF_TOKEN", sealed, &plain), GP_ERR_INVALID);
        assert_null(plain);
        sealed[i] = was;
    }
    char *plain = NULL;
    assert_int_equal(open_it(&key, "research/nlp", "HF_TOKEN", "v1:AAAA", &plain), GP_ERR_INVALID);
    assert_int_equal(open_it(&key, "research/nlp", "HF_TOKEN", "hf_abc123", &plain), GP_ERR_INVALID);
    free(sealed);
}

static void another_tenant_name_or_key_does_not_open(void **state)
{
    (void)state;
    gp_secret_key key = fresh_key("bound.key"), other = fresh_key("other.key");
    char *sealed = seal(&key, "research/nlp", "HF_TOKEN", "hf_abc123");
    char *plain = NULL;
    assert_int_equal(open_it(&key, "product/ads", "HF_TOKEN", sealed, &plain), GP_ERR_INVALID);
    assert_int_equal(open_it(&key, "research/nlp", "OTHER", sealed, &plain), GP_ERR_INVALID);
    assert_int_equal(open_it(&key, "research", "nlp\nHF_TOKEN", sealed, &plain), GP_ERR_INVALID);
    assert_int_equal(open_it(&other, "research/nlp", "HF_TOKEN", sealed, &plain), GP_ERR_INVALID);
    assert_null(plain);
    free(sealed);
}

static void the_key_file_is_made_0600_once_and_read_back(void **state)
{
    (void)state;
    char path[256];
    key_path(path, sizeof path, "kept.key");
    gp_secret_key a = fresh_key("kept.key"), b;
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, GP_SECRET_KEY_LEN);
    bool created = true;
    gp_error err = {0};
    assert_int_equal(gp_secret_key_load(path, &b, &created, &err), GP_OK);
    assert_false(created);
    assert_memory_equal(a.bytes, b.bytes, GP_SECRET_KEY_LEN);
}

static void a_key_others_may_read_or_of_another_size_is_refused(void **state)
{
    (void)state;
    char path[256];
    key_path(path, sizeof path, "loose.key");
    fresh_key("loose.key");
    assert_int_equal(chmod(path, 0644), 0);
    gp_secret_key key;
    bool created;
    gp_error err = {0};
    assert_int_equal(gp_secret_key_load(path, &key, &created, &err), GP_ERR_INVALID);
    assert_non_null(strstr(err.message, "chmod 600"));
    key_path(path, sizeof path, "short.key");
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    assert_int_equal(write(fd, "short", 5), 5);
    close(fd);
    assert_int_equal(gp_secret_key_load(path, &key, &created, &err), GP_ERR_INVALID);
    assert_non_null(strstr(err.message, "exactly 32 bytes"));
}

static int make_dir(void **state)
{
    (void)state;
    return mkdtemp(g_dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_sealed_value_opens_to_itself_and_does_not_show_it),
        cmocka_unit_test(a_changed_byte_does_not_open),
        cmocka_unit_test(another_tenant_name_or_key_does_not_open),
        cmocka_unit_test(the_key_file_is_made_0600_once_and_read_back),
        cmocka_unit_test(a_key_others_may_read_or_of_another_size_is_refused),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}

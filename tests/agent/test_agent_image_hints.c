/* test_agent_image_hints.c - the agent's pre-pulls of gpupoold's image
 * hints (src/agent/agent_image_hints.c): what is queued, what is skipped,
 * one pull at a time counted warm, and --no-image-hints doing nothing. */
#include "agent/agent_image_hints.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define HEX_HELD "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static char root[64];
static gp_agent_options opt;

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/gp-imghints-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    memset(&opt, 0, sizeof opt);
    snprintf(opt.image_store, sizeof opt.image_store, "%s/store", root);
    snprintf(opt.self_exe, sizeof opt.self_exe, "%s", GP_AGENT_BIN);
    opt.image_pull.timeout_s = 60;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : -1;
}

static json_t *hints(const char *a, const char *b, const char *c)
{
    json_t *list = json_array();
    const char *refs[] = {a, b, c};
    for (size_t i = 0; i < 3; i++)
        if (refs[i])
            json_array_append_new(list, json_string(refs[i]));
    return list;
}

static void no_image_hints_queues_nothing(void **state)
{
    (void)state;
    gp_image_warmer w;
    gp_image_warmer_init(&w, NULL);
    json_t *list = hints("docker://reg.example/a:1", NULL, NULL);
    gp_image_warmer_offer(&w, list);
    gp_image_warmer_step(&w, gp_agent_mono_ms());
    assert_int_equal(w.n_queue, 0);
    assert_int_equal(w.pid, 0);
    json_decref(list);
}

static void a_hint_is_queued_once_and_at_most_eight(void **state)
{
    (void)state;
    gp_image_warmer w;
    gp_image_warmer_init(&w, &opt);
    json_t *list = hints("docker://reg.example/a:1", "docker://reg.example/a:1", "");
    json_array_append_new(list, json_integer(7)); /* not a reference: ignored */
    gp_image_warmer_offer(&w, list);
    gp_image_warmer_offer(&w, list);
    assert_int_equal(w.n_queue, 1);
    for (int i = 0; i < 20; i++) {
        char ref[64];
        snprintf(ref, sizeof ref, "docker://reg.example/n%d:1", i);
        json_t *one = hints(ref, NULL, NULL);
        gp_image_warmer_offer(&w, one);
        json_decref(one);
    }
    assert_int_equal(w.n_queue, GP_IMAGE_WARM_QUEUE);
    json_decref(list);
}

/* An image of `bytes` held by replica r1, as a pull and a hold leave it. */
static void held_image(int64_t bytes)
{
    char path[512];
    const char *dirs[] = {"images", "images/" HEX_HELD, "images/" HEX_HELD "/rootfs", "holds", "holds/" HEX_HELD};
    snprintf(path, sizeof path, "%s/store", root);
    mkdir(path, 0700);
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(path, sizeof path, "%s/store/%s", root, dirs[i]);
        mkdir(path, 0700);
    }
    snprintf(path, sizeof path, "%s/store/images/%s/image.json", root, HEX_HELD);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"digest\":\"sha256:%s\",\"ref\":\"docker://reg.example/held:1\",\"bytes\":%lld}", HEX_HELD,
            (long long)bytes);
    fclose(f);
    snprintf(path, sizeof path, "%s/store/holds/%s/r1", root, HEX_HELD);
    fclose(fopen(path, "w"));
}

static void a_store_its_held_images_fill_is_not_pulled_into(void **state)
{
    (void)state;
    opt.image_store_bytes = 1LL << 30;
    held_image((1LL << 30) - (1LL << 20)); /* 1 GiB less 1 MiB: past 90 % */
    gp_image_warmer w;
    gp_image_warmer_init(&w, &opt);
    json_t *list = hints("docker://reg.example/a:1", NULL, NULL);
    gp_image_warmer_offer(&w, list);
    gp_image_warmer_step(&w, gp_agent_mono_ms());
    assert_int_equal(w.pid, 0);      /* skipped */
    assert_int_equal(w.n_queue, 0);  /* and tried: */
    gp_image_warmer_offer(&w, list); /* not queued again for 10 minutes */
    assert_int_equal(w.n_queue, 0);
    json_decref(list);
}

/* One pull at a time, in the background, counted warm; then the image is
 * in the store and a later hint of it is not pulled again. */
static void a_hint_is_pulled_warm_in_the_background(void **state)
{
    (void)state;
    if (system("command -v skopeo >/dev/null && command -v umoci >/dev/null") != 0) {
        skip();
    }
    char cmd[512], ref[160];
    snprintf(cmd, sizeof cmd, "umoci init --layout %s/lay && umoci new --image %s/lay:v1", root, root);
    assert_int_equal(system(cmd), 0);
    snprintf(ref, sizeof ref, "oci:%s/lay:v1", root);
    gp_image_warmer w;
    gp_image_warmer_init(&w, &opt);
    json_t *list = hints(ref, NULL, NULL);
    gp_image_warmer_offer(&w, list);
    gp_image_warmer_step(&w, gp_agent_mono_ms());
    assert_true(w.pid > 0);
    int status;
    pid_t pid = w.pid;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_false(gp_image_warmer_reaped(&w, pid + 1, status, gp_agent_mono_ms()));
    assert_true(gp_image_warmer_reaped(&w, pid, status, gp_agent_mono_ms()));
    assert_int_equal(w.pid, 0);
    assert_non_null(strstr(w.outcome, "ready sha256:"));
    gp_image_store *s;
    gp_image_counters c;
    gp_error err;
    assert_int_equal(gp_image_store_open(opt.image_store, 0, &s, &err), GP_OK);
    assert_int_equal(gp_image_store_counters(s, &c, &err), GP_OK);
    assert_int_equal(c.warm, 1);
    assert_int_equal(c.hits + c.misses, 0);
    gp_image_store_close(s);
    memset(w.tried, 0, sizeof w.tried); /* as if 10 minutes passed: in the store now, so skipped */
    gp_image_warmer_offer(&w, list);
    gp_image_warmer_step(&w, gp_agent_mono_ms());
    assert_int_equal(w.pid, 0);
    json_decref(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_image_hints_queues_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(a_hint_is_queued_once_and_at_most_eight, setup, teardown),
        cmocka_unit_test_setup_teardown(a_store_its_held_images_fill_is_not_pulled_into, setup, teardown),
        cmocka_unit_test_setup_teardown(a_hint_is_pulled_warm_in_the_background, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

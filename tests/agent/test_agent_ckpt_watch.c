/* test_agent_ckpt_watch.c - the checkpoint watch (agent/agent_ckpt_watch.h):
 * a `.done` in a watched folder wakes the agent's loop and names its
 * watch, other files do not, a removed watch is quiet, and a node looks at
 * once only for the watches its live replicas hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_ckpt_watch.h"
#include "agent/agent_node.h"

static void touch(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    close(fd);
}

static void a_done_file_wakes_the_loop_and_names_its_watch(void **state)
{
    (void)state;
    char dir[] = "/tmp/gp-ckpt-watch-XXXXXX", other[] = "/tmp/gp-ckpt-watch-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_non_null(mkdtemp(other));
    gp_http *h;
    gp_error err;
    assert_int_equal(gp_http_open(NULL, 4, &h, &err), GP_OK);
    gp_ckpt_watch w;
    assert_int_equal(gp_ckpt_watch_open(&w, h, &err), GP_OK);
    int wd = gp_ckpt_watch_add(&w, dir), wd_other = gp_ckpt_watch_add(&w, other);
    assert_true(wd >= 0 && wd_other >= 0 && wd != wd_other);
    int wds[8];

    touch(dir, "model.pt"); /* not the handshake */
    assert_int_equal(gp_ckpt_watch_read(&w, wds, 8), 0);

    touch(dir, ".done"); /* created, then closed: two events, one watch */
    void *ready[4];
    assert_int_equal(gp_http_wait(h, 1000, ready, 4), 1);
    assert_ptr_equal(ready[0], &w);
    assert_int_equal(gp_ckpt_watch_read(&w, wds, 8), 1);
    assert_int_equal(wds[0], wd);

    gp_ckpt_watch_remove(&w, wd);
    gp_ckpt_watch_read(&w, wds, 8); /* the removal's own event */
    touch(dir, ".done");
    assert_int_equal(gp_ckpt_watch_read(&w, wds, 8), 0);
    touch(other, ".done");
    assert_int_equal(gp_ckpt_watch_read(&w, wds, 8), 1);
    assert_int_equal(wds[0], wd_other);

    assert_int_equal(gp_ckpt_watch_add(&w, "/nonexistent/gp-ckpt-watch"), -1);
    gp_ckpt_watch_close(&w, h);
    assert_int_equal(w.fd, -1);
    assert_int_equal(gp_ckpt_watch_add(&w, dir), -1); /* no descriptor: the 20 ms look only */
    gp_http_close(h);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, other);
    assert_int_equal(system(cmd), 0);
}

static void a_node_looks_at_once_only_for_its_live_replicas_watches(void **state)
{
    (void)state;
    static gp_node n;
    gp_replica live = {.checkpoint_wd = 3}, ended = {.checkpoint_wd = 5, .ended = true},
               unwatched = {.checkpoint_wd = -1};
    gp_replica *replicas[] = {&live, &ended, &unwatched};
    n.replicas = replicas;
    n.n_replicas = 3;
    int other[] = {4, -1}, of_ended[] = {5}, of_live[] = {4, 3};

    n.next_checkpoint_ms = 1000;
    gp_node_checkpoint_changed(&n, other, 2);
    assert_int_equal(n.next_checkpoint_ms, 1000);
    gp_node_checkpoint_changed(&n, of_ended, 1);
    assert_int_equal(n.next_checkpoint_ms, 1000);
    gp_node_checkpoint_changed(&n, of_live, 2);
    assert_int_equal(n.next_checkpoint_ms, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_done_file_wakes_the_loop_and_names_its_watch),
        cmocka_unit_test(a_node_looks_at_once_only_for_its_live_replicas_watches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

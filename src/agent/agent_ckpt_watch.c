/* agent_ckpt_watch.c - inotify on the checkpoint folders of replicas in
 * their stop grace (agent_ckpt_watch.h). */
#include "agent/agent_ckpt_watch.h"

#include <errno.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define GP__DONE_EVENTS (IN_CREATE | IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_TO)

gp_err gp_ckpt_watch_open(gp_ckpt_watch *w, gp_http *h, gp_error *err)
{
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "inotify", "inotify_init1: %s", strerror(errno));
    w->watch = (gp_http_fd){.fd = w->fd, .tag = w};
    gp_err rc = gp_http_watch(h, &w->watch, err);
    if (rc != GP_OK) {
        close(w->fd);
        w->fd = -1;
    }
    return rc;
}

void gp_ckpt_watch_close(gp_ckpt_watch *w, gp_http *h)
{
    if (w->fd < 0)
        return;
    gp_http_unwatch(h, &w->watch);
    close(w->fd);
    w->fd = -1;
}

int gp_ckpt_watch_add(gp_ckpt_watch *w, const char *dir)
{
    return w->fd < 0 ? -1 : inotify_add_watch(w->fd, dir, GP__DONE_EVENTS | IN_ONLYDIR);
}

void gp_ckpt_watch_remove(gp_ckpt_watch *w, int wd)
{
    if (w->fd >= 0 && wd >= 0)
        inotify_rm_watch(w->fd, wd); /* gone already (its folder removed): nothing to do */
}

static size_t gp__add_once(int *wds, size_t n, size_t cap, int wd)
{
    for (size_t i = 0; i < n; i++)
        if (wds[i] == wd)
            return n;
    if (n < cap)
        wds[n++] = wd;
    return n;
}

size_t gp_ckpt_watch_read(gp_ckpt_watch *w, int *wds, size_t cap)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    size_t n = 0;
    ssize_t len;
    while (w->fd >= 0 && (len = read(w->fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if (ev->len > 0 && strcmp(ev->name, ".done") == 0)
                n = gp__add_once(wds, n, cap, ev->wd);
            p += sizeof *ev + ev->len;
        }
    }
    return n;
}

/* agent_image_hints.c - pre-pulls of the images gpupoold hints, one at a
 * time, in the background of the agent's loop (agent_image_hints.h).
 *
 * Example: an answer hints ["docker://reg:5000/ml/torch:2", "oci:/srv/oci/base"];
 * neither is in the store, nothing pulls them, the store (bound 100 GiB)
 * holds 20 GiB of replicas' images: the agent logs "image hint: pulling
 * docker://reg:5000/ml/torch:2", its child pulls it (counted warm, not
 * a hit or miss), the agent logs "image hint: docker://reg:5000/ml/torch:2
 * ready sha256:... in 41200 ms", then starts the second.  A job that binds
 * later and pulls torch:2 finds it unpacked: a hit.
 */
#define _GNU_SOURCE
#include "agent/agent_image_hints.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

void gp_image_warmer_init(gp_image_warmer *w, const gp_agent_options *opt)
{
    memset(w, 0, sizeof *w);
    w->opt = opt;
    w->fd = -1;
}

static bool gp__tried_lately(const gp_image_warmer *w, const char *ref, int64_t now_ms)
{
    for (size_t i = 0; i < GP_IMAGE_WARM_TRIED; i++)
        if (w->tried[i].at_ms && strcmp(w->tried[i].ref, ref) == 0 &&
            now_ms - w->tried[i].at_ms < GP_IMAGE_WARM_RETRY_MS)
            return true;
    return false;
}

static void gp__note_tried(gp_image_warmer *w, const char *ref, int64_t now_ms)
{
    snprintf(w->tried[w->next_tried].ref, sizeof w->tried[0].ref, "%s", ref);
    w->tried[w->next_tried].at_ms = now_ms;
    w->next_tried = (w->next_tried + 1) % GP_IMAGE_WARM_TRIED;
}

static bool gp__queued(const gp_image_warmer *w, const char *ref)
{
    for (size_t i = 0; i < w->n_queue; i++)
        if (strcmp(w->queue[i], ref) == 0)
            return true;
    return w->pid > 0 && strcmp(w->ref, ref) == 0;
}

void gp_image_warmer_offer(gp_image_warmer *w, const json_t *hints)
{
    size_t i;
    const json_t *h;
    int64_t now = gp_agent_mono_ms();
    if (!w->opt)
        return;
    json_array_foreach(hints, i, h) {
        const char *ref = json_string_value(h);
        if (!ref || !ref[0] || strlen(ref) > GP_IMAGE_REF_MAX || gp__queued(w, ref) || gp__tried_lately(w, ref, now) ||
            w->n_queue == GP_IMAGE_WARM_QUEUE)
            continue;
        snprintf(w->queue[w->n_queue++], sizeof w->queue[0], "%s", ref);
    }
}

/* The store has room for an image no replica holds (the header says what room is). */
static bool gp__room(gp_image_store *s, const gp_agent_options *o)
{
    if (!o->image_store_bytes) {
        struct statvfs v;
        return statvfs(o->image_store, &v) != 0 || v.f_bavail * 10 >= v.f_blocks;
    }
    gp_image *images = NULL;
    size_t n = 0;
    int64_t used = 0, held = 0;
    if (gp_image_store_list(s, &images, &n, &used, NULL) != GP_OK)
        return false;
    for (size_t i = 0; i < n; i++)
        held += images[i].holders > 0 ? images[i].bytes : 0;
    free(images);
    return held * 10 < o->image_store_bytes * 9;
}

/* Whether image ref is in the store already, by the reference it was pulled by. */
static bool gp__in_store(gp_image_store *s, const char *ref)
{
    gp_image *images = NULL;
    size_t n = 0;
    int64_t used = 0;
    bool found = false;
    if (gp_image_store_list(s, &images, &n, &used, NULL) == GP_OK)
        for (size_t i = 0; i < n && !found; i++)
            found = strcmp(images[i].ref, ref) == 0;
    free(images);
    return found;
}

/* Why ref is not pulled now, NULL when it may be. */
static const char *gp__skip(gp_image_store *s, const gp_agent_options *o, const char *ref)
{
    if (gp__in_store(s, ref))
        return "";
    if (gp_image_store_pulling(s, ref))
        return "a replica's pull of it runs";
    if (!gp__room(s, o))
        return o->image_store_bytes ? "the images replicas hold fill the store" : "the store's disk is nearly full";
    return NULL;
}

static void gp__start(gp_image_warmer *w, gp_image_store *s, const char *ref, int64_t now_ms)
{
    gp_image_pull_options po = w->opt->image_pull;
    po.username = po.password = NULL;
    po.holder = NULL;
    po.warm = true;
    po.progress = NULL;
    gp_error err;
    pid_t pid;
    int fd;
    if (gp_image_pull_spawn(s, w->opt->self_exe, ref, &po, &pid, &fd, &err) != GP_OK) {
        fprintf(stderr, "gpupool-agent: image hint: %s not pulled: %s\n", ref, err.message);
        return;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    w->pid = pid;
    w->fd = fd;
    w->started_ms = now_ms;
    w->n_partial = 0;
    w->outcome[0] = '\0';
    snprintf(w->ref, sizeof w->ref, "%s", ref);
    fprintf(stderr, "gpupool-agent: image hint: pulling %s\n", ref);
}

/* The next queued reference that may be pulled, started. */
static void gp__next(gp_image_warmer *w, int64_t now_ms)
{
    gp_image_store *s;
    gp_error err;
    if (w->n_queue == 0 || gp_image_store_open(w->opt->image_store, w->opt->image_store_bytes, &s, &err) != GP_OK)
        return;
    while (w->n_queue > 0 && w->pid == 0) {
        char ref[GP_IMAGE_REF_MAX + 1];
        snprintf(ref, sizeof ref, "%s", w->queue[0]);
        memmove(w->queue[0], w->queue[1], (--w->n_queue) * sizeof w->queue[0]);
        gp__note_tried(w, ref, now_ms);
        const char *why = gp__skip(s, w->opt, ref);
        if (why && why[0])
            fprintf(stderr, "gpupool-agent: image hint: %s skipped: %s\n", ref, why);
        if (!why)
            gp__start(w, s, ref, now_ms);
    }
    gp_image_store_close(s);
}

/* One complete line of the child's: the last ready or failed one is kept. */
static void gp__line(gp_image_warmer *w, const char *line)
{
    gp_image_pull_line pl;
    gp_error err;
    if (gp_image_pull_line_parse(line, &pl, &err) != GP_OK || pl.phase == GP_IMAGE_PHASE_PULLING)
        return;
    if (pl.phase == GP_IMAGE_PHASE_READY)
        snprintf(w->outcome, sizeof w->outcome, "ready %s", pl.digest);
    else
        snprintf(w->outcome, sizeof w->outcome, "failed (%s): %s", gp_image_failure_name(pl.reason), pl.message);
}

static void gp__drain(gp_image_warmer *w)
{
    char buf[4096];
    ssize_t got;
    while (w->fd >= 0 && (got = read(w->fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] != '\n' && w->n_partial < sizeof w->partial - 1) {
                w->partial[w->n_partial++] = buf[i];
                continue;
            }
            w->partial[w->n_partial] = '\0';
            if (buf[i] == '\n')
                gp__line(w, w->partial);
            w->n_partial = buf[i] == '\n' ? 0 : w->n_partial;
        }
}

void gp_image_warmer_step(gp_image_warmer *w, int64_t now_ms)
{
    if (!w->opt)
        return;
    if (w->pid > 0)
        gp__drain(w);
    else
        gp__next(w, now_ms);
}

bool gp_image_warmer_reaped(gp_image_warmer *w, pid_t pid, int status, int64_t now_ms)
{
    if (w->pid <= 0 || pid != w->pid)
        return false;
    gp__drain(w);
    close(w->fd);
    w->fd = -1;
    w->pid = 0;
    if (!w->outcome[0])
        snprintf(w->outcome, sizeof w->outcome, "ended with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    fprintf(stderr, "gpupool-agent: image hint: %s %s in %lld ms\n", w->ref, w->outcome,
            (long long)(now_ms - w->started_ms));
    return true;
}

/* image_child.c - the pull as the agent runs it: `gpupool-agent image pull`
 * started as a child (credentials written to its stdin, never argv), its
 * JSON lines parsed back, and the hint hook's detached pull
 * (image_store.h). */
#define _GNU_SOURCE
#include "agent/image/image_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define GP__ARGV_MAX (16 + 2 * GP_IMAGE_INSECURE_MAX)

typedef struct gp__pull_argv {
    char *argv[GP__ARGV_MAX];
    char bound[32], timeout[32];
} gp__pull_argv;

/* AGENT image pull --store ROOT --max-gib B --pull-timeout-s T
 * [--insecure-registry H]... [--hold R] [--warm] [--creds-stdin] REF */
static void gp__argv(gp_image_store *s, const char *exe, const char *ref, const gp_image_pull_options *o, bool creds,
                     gp__pull_argv *a)
{
    size_t n = 0;
    snprintf(a->bound, sizeof a->bound, "%.9g", (double)s->max_bytes / (1 << 30));
    snprintf(a->timeout, sizeof a->timeout, "%d", o && o->timeout_s > 0 ? o->timeout_s : GP_IMAGE_PULL_TIMEOUT_S);
    const char *head[] = {exe, "image", "pull", "--store", s->root, "--max-gib", a->bound, "--pull-timeout-s",
                          a->timeout};
    for (size_t i = 0; i < sizeof head / sizeof *head; i++)
        a->argv[n++] = (char *)head[i];
    for (size_t i = 0; o && i < o->n_insecure && i < GP_IMAGE_INSECURE_MAX; i++) {
        a->argv[n++] = "--insecure-registry";
        a->argv[n++] = (char *)o->insecure[i];
    }
    if (o && o->holder) {
        a->argv[n++] = "--hold";
        a->argv[n++] = (char *)o->holder;
    }
    if (o && o->warm)
        a->argv[n++] = "--warm";
    if (creds)
        a->argv[n++] = "--creds-stdin";
    a->argv[n++] = (char *)ref;
    a->argv[n] = NULL;
}

static gp_err gp__ref_arg(const char *ref, gp_error *err)
{
    if (!ref || !ref[0] || strlen(ref) > GP_IMAGE_REF_MAX)
        return gp_error_set(err, GP_ERR_INVALID, "image", "must be a reference of at most %d bytes",
                            GP_IMAGE_REF_MAX);
    return GP_OK;
}

/* {"username", "password"} into fd, then closed; the text wiped. */
static void gp__write_creds(int fd, const gp_image_pull_options *o)
{
    json_t *c = json_pack("{s:s, s:s}", "username", o->username, "password", o->password);
    char *text = c ? json_dumps(c, JSON_COMPACT) : NULL;
    json_decref(c);
    size_t len = text ? strlen(text) : 0, off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w <= 0 && errno != EINTR)
            break;
        off += w > 0 ? (size_t)w : 0;
    }
    if (text) {
        explicit_bzero(text, len);
        free(text);
    }
    close(fd);
}

gp_err gp_image_pull_spawn(gp_image_store *s, const char *agent_exe, const char *ref, const gp_image_pull_options *o,
                           pid_t *pid, int *out_fd, gp_error *err)
{
    gp_err bad = gp__ref_arg(ref, err);
    if (bad != GP_OK)
        return bad;
    bool creds = o && o->username && o->password;
    gp__pull_argv a;
    gp__argv(s, agent_exe ? agent_exe : "/proc/self/exe", ref, o, creds, &a);
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return gp_error_set(err, GP_ERR_NOMEM, "image", "pipe: %s", strerror(errno));
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return gp_error_set(err, GP_ERR_NOMEM, "image", "pipe: %s", strerror(errno));
    }
    *pid = fork();
    if (*pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execv(a.argv[0], a.argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (*pid < 0) {
        close(in[1]);
        close(out[0]);
        return gp_error_set(err, GP_ERR_NOMEM, "image", "fork: %s", strerror(errno));
    }
    if (creds)
        gp__write_creds(in[1], o);
    else
        close(in[1]);
    *out_fd = out[0];
    return GP_OK;
}

static void gp__copy_string(json_t *o, const char *key, char *out, size_t cap)
{
    snprintf(out, cap, "%s", json_string_value(json_object_get(o, key)) ?: "");
}

gp_err gp_image_pull_line_parse(const char *line, gp_image_pull_line *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *o = json_loads(line, 0, NULL);
    const char *phase = json_string_value(json_object_get(o, "phase"));
    gp_err rc = GP_OK;
    if (phase && strcmp(phase, "pulling") == 0) {
        out->phase = GP_IMAGE_PHASE_PULLING;
        out->done_bytes = json_integer_value(json_object_get(o, "done_bytes"));
        out->total_bytes = json_integer_value(json_object_get(o, "total_bytes"));
    } else if (phase && strcmp(phase, "ready") == 0) {
        out->phase = GP_IMAGE_PHASE_READY;
        gp__copy_string(o, "digest", out->digest, sizeof out->digest);
        gp__copy_string(o, "rootfs", out->rootfs, sizeof out->rootfs);
        out->hit = json_is_true(json_object_get(o, "hit"));
        if (!gp__image_digest_valid(out->digest, NULL) || out->rootfs[0] != '/')
            rc = gp_error_set(err, GP_ERR_INVALID, "digest", "a ready line needs a digest and an absolute rootfs");
    } else if (phase && strcmp(phase, "failed") == 0) {
        out->phase = GP_IMAGE_PHASE_FAILED;
        const char *reason = json_string_value(json_object_get(o, "reason"));
        out->reason = GP_IMAGE_OTHER;
        for (gp_image_failure f = GP_IMAGE_NOT_FOUND; reason && f < GP_IMAGE_OTHER; f++)
            if (strcmp(reason, gp_image_failure_name(f)) == 0)
                out->reason = f;
        gp__copy_string(o, "message", out->message, sizeof out->message);
    } else {
        rc = gp_error_set(err, GP_ERR_INVALID, "phase", "not a pull line: a JSON object with phase "
                                                        "pulling, ready or failed");
    }
    json_decref(o);
    return rc;
}


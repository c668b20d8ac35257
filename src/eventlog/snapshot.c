/* snapshot.c - sealed replayer snapshots (see snapshot.h for the format). */
#define _GNU_SOURCE /* pipe2, close_range */
#include "eventlog/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAGIC "gpupool-snapshot"
#define HEADER_LEN 80

gp_err gp_replayer_snapshot_take(const gp_replayer *r, int64_t seq, const json_t *daemon, gp_snapshot_parts *out,
                                 gp_error *err)
{
    memset(out, 0, sizeof *out);
    out->seq = seq;
    gp_err rc = gp_engine_snapshot_write(r->engine, &out->engine, &out->engine_len, err);
    if (rc)
        return rc;
    json_t *extras = json_pack("{s:I, s:O, s:o, s:O?}", "next_job_id", (json_int_t)r->next_job_id, "pools",
                               r->pools, "exits", gp_exits_to_json(&r->exits), "daemon", daemon);
    out->extras = extras ? json_dumps(extras, JSON_COMPACT) : NULL;
    json_decref(extras);
    if (!out->extras) {
        gp_snapshot_parts_free(out);
        return gp_error_set(err, GP_ERR_NOMEM, "snapshot", "out of memory");
    }
    return GP_OK;
}

void gp_snapshot_parts_free(gp_snapshot_parts *p)
{
    free(p->engine);
    free(p->extras);
    memset(p, 0, sizeof *p);
}

/* ---- taking the parts in a child process ---- */

/* What the child writes first down the pipe; the engine and the extras
 * follow. */
typedef struct child_head {
    int64_t seq;
    uint64_t engine_len, extras_len;
} child_head;

enum { CHILD_REFUSED = 2, CHILD_SHORT_WRITE = 3 };

static bool write_all(int fd, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n > 0) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        b += k;
        n -= (size_t)k;
    }
    return true;
}

static bool read_all(int fd, void *p, size_t n)
{
    unsigned char *b = p;
    while (n > 0) {
        ssize_t k = read(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        b += k;
        n -= (size_t)k;
    }
    return true;
}

/* The child: the parts down the pipe, then _exit (no atexit handler, no
 * stdio buffer of the parent's flushed twice). */
static void child_take(const gp_replayer *r, int64_t seq, const json_t *daemon, int fd)
{
    gp_snapshot_parts p;
    gp_error err;
    if (gp_replayer_snapshot_take(r, seq, daemon, &p, &err) != GP_OK)
        _exit(CHILD_REFUSED);
    child_head h = {.seq = seq, .engine_len = p.engine_len, .extras_len = strlen(p.extras)};
    bool ok = write_all(fd, &h, sizeof h) && write_all(fd, p.engine, p.engine_len) &&
              write_all(fd, p.extras, h.extras_len);
    _exit(ok ? 0 : CHILD_SHORT_WRITE);
}

gp_err gp_replayer_snapshot_fork(const gp_replayer *r, int64_t seq, const json_t *daemon, gp_snapshot_child *out,
                                 gp_error *err)
{
    int fds[2];
    out->pid = -1;
    out->fd = -1;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return gp_error_set(err, GP_ERR_NOMEM, "snapshot", "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return gp_error_set(err, GP_ERR_NOMEM, "snapshot", "fork: %s", strerror(e));
    }
    if (pid == 0) {
        /* keep only the pipe: a child still writing must not hold the
         * daemon's listening socket (a restart would find the port in use)
         * or its store files open */
        close(fds[0]);
        close_range(3, (unsigned)fds[1] - 1, 0);
        close_range((unsigned)fds[1] + 1, ~0U, 0);
        child_take(r, seq, daemon, fds[1]);
    }
    close(fds[1]);
    out->pid = pid;
    out->fd = fds[0];
    return GP_OK;
}

/* The parts as the child wrote them; false when short or out of memory. */
static bool parts_read(int fd, gp_snapshot_parts *out, bool *nomem)
{
    child_head h;
    if (!read_all(fd, &h, sizeof h))
        return false;
    out->seq = h.seq;
    out->engine_len = (size_t)h.engine_len;
    out->engine = malloc(h.engine_len ? (size_t)h.engine_len : 1);
    out->extras = malloc((size_t)h.extras_len + 1);
    if (!out->engine || !out->extras)
        return !(*nomem = true);
    out->extras[h.extras_len] = '\0';
    return read_all(fd, out->engine, out->engine_len) && read_all(fd, out->extras, (size_t)h.extras_len);
}

gp_err gp_snapshot_child_collect(gp_snapshot_child *c, gp_snapshot_parts *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    bool nomem = false, ok = parts_read(c->fd, out, &nomem);
    close(c->fd); /* a child still writing (we ran out of memory) gets EPIPE and ends */
    int status = 0;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
        ;
    c->pid = -1;
    c->fd = -1;
    if (ok && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return GP_OK;
    gp_snapshot_parts_free(out);
    if (nomem)
        return gp_error_set(err, GP_ERR_NOMEM, "snapshot", "out of memory");
    if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_REFUSED)
        return gp_error_set(err, GP_ERR_CONFLICT, "snapshot", "the engine refused the snapshot (decisions pending)");
    return gp_error_set(err, GP_ERR_CONFLICT, "snapshot", "the snapshot child failed (%s %d)",
                        WIFSIGNALED(status) ? "signal" : "exit status",
                        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

gp_err gp_snapshot_seal(const gp_snapshot_parts *p, unsigned char **out, size_t *len, gp_error *err)
{
    uint64_t engine_len = p->engine_len, extras_len = strlen(p->extras);
    uint32_t version = GP_SNAPSHOT_VERSION, reserved = 0;
    *len = HEADER_LEN + engine_len + extras_len;
    unsigned char *b = *out = malloc(*len);
    if (!b)
        return gp_error_set(err, GP_ERR_NOMEM, "snapshot", "out of memory");
    memcpy(b, MAGIC, 16);
    memcpy(b + 16, &version, 4);
    memcpy(b + 20, &reserved, 4);
    memcpy(b + 24, &p->seq, 8);
    memcpy(b + 32, &engine_len, 8);
    memcpy(b + 40, &extras_len, 8);
    memcpy(b + HEADER_LEN, p->engine, engine_len);
    memcpy(b + HEADER_LEN + engine_len, p->extras, extras_len);
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, b + HEADER_LEN, *len - HEADER_LEN, b + 40 + 8) < 0) {
        free(b);
        *out = NULL;
        return gp_error_set(err, GP_ERR_NOMEM, "snapshot", "SHA-256 failed");
    }
    return GP_OK;
}

/* The header's parts, checked against the buffer: lengths and checksum. */
static gp_err unseal(const unsigned char *b, size_t len, int64_t *seq, size_t *engine_len, size_t *extras_len,
                     gp_error *err)
{
    uint32_t version;
    uint64_t el, xl;
    unsigned char sum[32];
    if (len < HEADER_LEN || memcmp(b, MAGIC, 16) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "snapshot", "not a snapshot (%zu bytes)", len);
    memcpy(&version, b + 16, 4);
    memcpy(seq, b + 24, 8);
    memcpy(&el, b + 32, 8);
    memcpy(&xl, b + 40, 8);
    if (version != GP_SNAPSHOT_VERSION)
        return gp_error_set(err, GP_ERR_INVALID, "version", "snapshot version %u, this build reads %d", version,
                            GP_SNAPSHOT_VERSION);
    if (el > len - HEADER_LEN || xl != len - HEADER_LEN - el)
        return gp_error_set(err, GP_ERR_INVALID, "snapshot", "snapshot is truncated or too long: %zu bytes, header"
                            " says %llu", len, (unsigned long long)(HEADER_LEN + el + xl));
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, b + HEADER_LEN, len - HEADER_LEN, sum) < 0 ||
        memcmp(sum, b + 48, sizeof sum) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "checksum", "snapshot of event %lld does not match its SHA-256",
                            (long long)*seq);
    *engine_len = (size_t)el;
    *extras_len = (size_t)xl;
    return GP_OK;
}

/* next_job_id, pools and exits from the extras into r. */
static gp_err extras_apply(gp_replayer *r, const json_t *x, gp_error *err)
{
    const json_t *next = json_object_get(x, "next_job_id"), *pools = json_object_get(x, "pools");
    if (!json_is_integer(next) || json_integer_value(next) < 1 || !json_is_object(pools))
        return gp_error_set(err, GP_ERR_INVALID, "snapshot", "snapshot's replayer state is malformed");
    r->next_job_id = (uint64_t)json_integer_value(next);
    json_decref(r->pools);
    r->pools = json_deep_copy(pools);
    return gp_exits_from_json(&r->exits, json_object_get(x, "exits"), err);
}

gp_err gp_replayer_snapshot_restore(gp_replayer *r, const unsigned char *buf, size_t len, const gp_engine_config *cfg,
                                    int64_t *seq, json_t **daemon, gp_error *err)
{
    size_t engine_len = 0, extras_len = 0;
    *daemon = NULL;
    gp_err rc = unseal(buf, len, seq, &engine_len, &extras_len, err);
    if (rc)
        return rc;
    json_error_t jerr;
    json_t *x = json_loadb((const char *)buf + HEADER_LEN + engine_len, extras_len, 0, &jerr);
    if (!x)
        return gp_error_set(err, GP_ERR_INVALID, "snapshot", "snapshot's replayer state: %s", jerr.text);
    gp_engine *e;
    rc = gp_engine_snapshot_read(buf + HEADER_LEN, engine_len, cfg, &e, err);
    if (rc == GP_OK) {
        gp_engine_free(r->engine);
        r->engine = e;
        rc = extras_apply(r, x, err);
    }
    if (rc == GP_OK && json_is_object(json_object_get(x, "daemon")))
        *daemon = json_incref(json_object_get(x, "daemon"));
    json_decref(x);
    return rc;
}

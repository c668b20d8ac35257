/* agent_logs.c - shipping the replicas' log files to gpupoold.
 *
 *   POST /v1/agents/{node}/logs
 *     {"logs": [{"job": 7, "replica": 0, "bind_time": 1795523111,
 *                "offset": 0, "data": "<base64>", "eof": false}]}
 *   -> 200 {"results": [{"size": N}]}   N: the bytes gpupoold now has
 *
 * Each replica run's log (STATE/NODE/logs/job7-r0-1795523111.log) is sent
 * from the size gpupoold last said it has: new bytes at most every 500 ms,
 * at most 256 KiB per entry, 64 entries and 512 KiB of bytes per call (as
 * base64 in JSON it stays under gpupoold's default 1 MiB --max-body; a
 * call refused 413 halves it, down to 4 KiB, for a smaller --max-body),
 * and `eof: true` once
 * the replica ended and the entry reaches the end of the file.  gpupoold
 * skips bytes it has (offset < size), so a resend after a failure counts
 * once.  A run whose size is unknown (an adopted replica after an agent
 * restart, or a 409 "offset past the end") first sends no bytes at offset
 * 0 to learn it.  A 404 naming an entry (the run is not this node's) gives
 * that run up; a 404 for the call itself means this gpupoold has no logs
 * endpoint yet: the bytes stay in the file and the agent asks again later.
 *
 * The file is capped and rotates (replica_log.h): the agent reads it at
 * stream offsets.  When the bytes gpupoold would get next were rotated
 * away before they were sent, the agent skips to the file's first byte
 * and counts the skip (DIR/log_skipped, read again on adoption), so that
 * gpupoold's offsets stay contiguous; the supervisor's line "gpupool:
 * dropped N bytes of output" in the stream says what went.
 */
#include "agent/agent_node.h"
#include "agent/launch/replica_log.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GP__LOGS_EVERY_MS 500
#define GP__LOGS_MISSING_EVERY_MS 5000
#define GP__LOG_CHUNK (256 * 1024)
#define GP__LOG_ENTRIES 64
#define GP__LOG_CALL_BYTES (512 * 1024)
#define GP__LOG_CALL_BYTES_MIN (4 * 1024)

bool gp_replica_log_done(const gp_node *n, const gp_replica *r)
{
    return r->log_eof_sent || n->logs_missing;
}

/* Up to max (<= GP__LOG_CHUNK) bytes of the log from file offset at, as base64. */
static json_t *gp__chunk(int fd, int64_t at, int64_t max, int64_t *len)
{
    static unsigned char buf[GP__LOG_CHUNK];
    ssize_t got = fd >= 0 && max > 0 ? pread(fd, buf, (size_t)max, at) : 0;
    *len = got > 0 ? got : 0;
    if (*len == 0)
        return json_string("");
    gnutls_datum_t in = {buf, (unsigned)*len}, out = {NULL, 0};
    if (gnutls_base64_encode2(&in, &out) != 0)
        return NULL;
    json_t *s = json_stringn((const char *)out.data, out.size);
    gnutls_free(out.data);
    return s;
}

/* Bytes rotated away before they were sent: skip to the file's first
 * byte, and say so where an adopting agent finds it. */
static void gp__skip_to(gp_replica *r, int64_t base)
{
    char path[GP_STATE_PATH_MAX], text[32];
    r->log_skipped = base - r->log_sent;
    snprintf(path, sizeof path, "%s/log_skipped", r->dir);
    snprintf(text, sizeof text, "%lld\n", (long long)r->log_skipped);
    gp_state_write(path, text, 0600, NULL);
}

/* The replica's entry of at most *budget bytes (taken from it), or NULL
 * when it has nothing to send. */
static json_t *gp__entry(gp_replica *r, int64_t *budget)
{
    if (r->log_eof_sent)
        return NULL;
    int64_t base = 0;
    int fd = gp_replica_log_open_read(r->log_path, &base);
    if (fd < 0 && errno == EAGAIN)
        return NULL; /* mid-rotation: next time */
    struct stat st;
    int64_t end = base + (fd >= 0 && fstat(fd, &st) == 0 ? (int64_t)st.st_size : 0); /* stream offsets */
    bool probe = r->log_sent < 0;
    if (!probe && r->log_sent + r->log_skipped < base)
        gp__skip_to(r, base);
    int64_t offset = probe ? 0 : r->log_sent, at = offset + r->log_skipped, len = 0;
    json_t *data = NULL;
    if (probe || at < end || r->ended)
        data = probe ? json_string("") : gp__chunk(fd, at - base, *budget < GP__LOG_CHUNK ? *budget : GP__LOG_CHUNK, &len);
    if (fd >= 0)
        close(fd);
    if (!data)
        return NULL;
    *budget -= len;
    r->log_eof_in_flight = !probe && r->ended && at + len >= end;
    r->log_in_flight = true;
    return json_pack("{s:I, s:i, s:I, s:I, s:o, s:b}", "job", (json_int_t)r->job, "replica", (int)r->replica,
                     "bind_time", (json_int_t)r->bind_time, "offset", (json_int_t)offset, "data", data, "eof",
                     r->log_eof_in_flight);
}

/* The index i of an error's field "logs[i]...", or -1. */
static long gp__entry_of(const char *body, char *field, size_t cap)
{
    json_t *o = json_loads(body, 0, NULL);
    const char *f = json_string_value(json_object_get(json_object_get(o, "error"), "field"));
    long i = -1;
    snprintf(field, cap, "%s", f ? f : "");
    if (f && sscanf(f, "logs[%ld]", &i) != 1)
        i = -1;
    json_decref(o);
    return i;
}

/* A refused call: the one entry it names is given up (404) or asked its
 * size again (409); a 404 for the call is a gpupoold without logs. */
static void gp__refused(gp_node *n, long status, const char *body)
{
    char field[64];
    long bad = gp__entry_of(body, field, sizeof field), i = 0;
    n->logs_missing = status == 404 && bad < 0;
    for (size_t j = 0; j < n->n_replicas; j++) {
        gp_replica *r = n->replicas[j];
        if (!r->log_in_flight)
            continue;
        if (i++ != bad)
            continue;
        if (status == 409)
            r->log_sent = -1;
        else
            r->log_eof_sent = true;
        gp_agent_log(n, "job=%llu replica=%u log refused (%ld, %s)", (unsigned long long)r->job, r->replica, status,
                     field);
    }
}

/* gpupoold's --max-body is below the call: send half as much from now on. */
static void gp__too_large(gp_node *n)
{
    int64_t now = n->log_call_bytes ? n->log_call_bytes : GP__LOG_CALL_BYTES;
    n->log_call_bytes = now / 2 > GP__LOG_CALL_BYTES_MIN ? now / 2 : GP__LOG_CALL_BYTES_MIN;
    gp_agent_log(n, "log call refused 413 (gpupoold's --max-body): %lld bytes per call from now on",
                 (long long)n->log_call_bytes);
}

static void gp__on_logs(gp_http_call *call, long status, const char *body, size_t len, const char *why, void *ctx)
{
    (void)len, (void)why;
    gp_node *n = ctx;
    json_t *o = status == 200 ? json_loads(body, 0, NULL) : NULL;
    json_t *results = json_object_get(o, "results");
    if (status == 200)
        n->logs_missing = false;
    else if (status == 404 || status == 409)
        gp__refused(n, status, body);
    else if (status == 413)
        gp__too_large(n);
    else if (gp_node_leader_moved(n, call, status, body))
        n->next_logs_ms = n->next_try_ms; /* the same bytes go again, to the leader */
    size_t i = 0;
    for (size_t j = 0; j < n->n_replicas; j++) {
        gp_replica *r = n->replicas[j];
        if (!r->log_in_flight)
            continue;
        json_t *size = json_object_get(json_array_get(results, i++), "size");
        if (json_is_integer(size)) {
            r->log_sent = json_integer_value(size);
            r->log_eof_sent = r->log_eof_in_flight;
        }
        r->log_in_flight = r->log_eof_in_flight = false;
    }
    json_decref(o);
    gp_node_forget_finished(n);
    if (n->logs_missing)
        n->next_logs_ms = gp_agent_mono_ms() + GP__LOGS_MISSING_EVERY_MS;
}

int64_t gp_node_ship_logs(gp_node *n, int64_t now)
{
    if (gp_http_call_busy(&n->logs) || now < n->next_logs_ms)
        return n->next_logs_ms;
    json_t *list = json_array();
    int64_t budget = n->log_call_bytes ? n->log_call_bytes : GP__LOG_CALL_BYTES;
    for (size_t j = 0; j < n->n_replicas && json_array_size(list) < GP__LOG_ENTRIES && budget > 0; j++) {
        json_t *e = gp__entry(n->replicas[j], &budget);
        if (e)
            json_array_append_new(list, e);
    }
    n->next_logs_ms = now + GP__LOGS_EVERY_MS;
    if (json_array_size(list) > 0) {
        json_t *body = json_pack("{s:o}", "logs", list);
        char *text = json_dumps(body, JSON_COMPACT), url[GP_STATE_PATH_MAX];
        snprintf(url, sizeof url, "%s/v1/agents/%s/logs", gp_node_url(n), n->name);
        gp_error err;
        if (!text || gp_http_call_start(n->http, &n->logs, "POST", url, n->token, text, 30, gp__on_logs, n, &err))
            gp__on_logs(&n->logs, 0, "", 0, "cannot start the call", n);
        free(text);
        json_decref(body);
    } else {
        json_decref(list);
    }
    return n->next_logs_ms;
}

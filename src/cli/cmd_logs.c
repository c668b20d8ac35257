/* cmd_logs.c - `gpupool logs` (a replica's output, through gpupoold) and
 * `gpupool checkpoint` (a job tells gpupoold it saved a checkpoint).
 *
 * logs reads GET /v1/jobs/{id}/logs page by page from offset 0 of the
 * replica's latest run (pinned once seen: a requeued job's next run has
 * offsets of its own) and writes the bytes to stdout as they are.
 * --follow goes on long-polling from the next offset (wait=30) until the
 * run ended and everything was shipped (eof), or the job ended and a last
 * wait brought nothing.
 *
 * checkpoint runs inside a job: it creates $GPUPOOL_CHECKPOINT_DIR/.done
 * (a temporary file renamed into place, so the agent never sees half of
 * it); the node agent reports it and gpupoold ends a preemption's grace
 * early.  It needs no server.
 *
 * Example: `gpupool logs 7 --replica 1 --follow` prints what replica 1 of
 * job 7 wrote so far, then each new line within about a second of the
 * agent shipping it, and exits 0 once the replica ended.
 */
#include "cli/commands.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FOLLOW_WAIT_S = 30, LAST_WAIT_S = 2 };

static bool job_final(const json_t *reply)
{
    const char *s = json_string_value(json_object_get(reply, "job_state"));
    return s && (strcmp(s, "succeeded") == 0 || strcmp(s, "failed") == 0 || strcmp(s, "cancelled") == 0);
}

/* Writes the reply's bytes to stdout (the JSON itself with --json). */
static int print_bytes(const gp_client *c, const json_t *reply)
{
    const char *data = json_string_value(json_object_get(reply, "data"));
    if (c->json || !data || !data[0])
        return GP_EXIT_OK;
    gnutls_datum_t in = {(unsigned char *)data, (unsigned int)strlen(data)}, out = {NULL, 0};
    if (gnutls_base64_decode2(&in, &out) != 0) {
        fprintf(stderr, "gpupool logs: the server sent bytes that are not base64\n");
        return GP_EXIT_ERROR;
    }
    fwrite(out.data, 1, out.size, stdout);
    fflush(stdout);
    gnutls_free(out.data);
    return GP_EXIT_OK;
}

/* One page of run `run` (-1: the latest) from `offset`, waiting up to
 * wait s for bytes. */
static int fetch(gp_client *c, const char *id, const char *replica, long long run, long long offset, int wait,
                 gp_response *resp)
{
    char path[256], which[40] = "latest";
    if (run >= 0)
        snprintf(which, sizeof which, "%lld", run);
    snprintf(path, sizeof path, "/v1/jobs/%.40s/logs?replica=%.12s&run=%s&offset=%lld&wait=%d", id, replica, which,
             offset, wait);
    return gp_client_run(c, "GET", path, NULL, resp);
}

/* Is there nothing more to wait for? */
static bool done(const json_t *reply, bool follow, int waited)
{
    long long next = json_integer_value(json_object_get(reply, "next"));
    long long size = json_integer_value(json_object_get(reply, "size"));
    bool got = json_string_length(json_object_get(reply, "data")) > 0;
    if (!follow)
        return next >= size;
    if (json_is_true(json_object_get(reply, "eof")) && next >= size)
        return true;
    return job_final(reply) && !got && waited == LAST_WAIT_S;
}

/* Pages through one run: the latest when the first answer came (a requeue
 * later starts another run, with offsets of its own). */
static int logs_loop(gp_client *c, const char *id, const char *replica, bool follow)
{
    long long offset = 0, run = -1;
    int wait = 0;
    for (;;) {
        gp_response resp;
        int rc = fetch(c, id, replica, run, offset, wait, &resp);
        if (rc == GP_EXIT_OK)
            rc = print_bytes(c, resp.body);
        bool stop = rc != GP_EXIT_OK || done(resp.body, follow, wait);
        bool no_run = rc == GP_EXIT_OK && json_is_null(json_object_get(resp.body, "run"));
        if (rc == GP_EXIT_OK && !no_run)
            run = json_integer_value(json_object_get(resp.body, "run"));
        if (rc == GP_EXIT_OK) {
            offset = json_integer_value(json_object_get(resp.body, "next"));
            wait = job_final(resp.body) ? LAST_WAIT_S : FOLLOW_WAIT_S;
        }
        gp_response_free(&resp);
        if (stop)
            return rc;
        if (no_run)
            sleep(1); /* not placed yet: nothing to wait on at the server */
    }
}

int gp_cmd_logs(gp_client *c, int argc, char **argv)
{
    const char *id = NULL, *replica = "0";
    bool follow = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--follow") == 0 || strcmp(argv[i], "-f") == 0)
            follow = true;
        else if (strcmp(argv[i], "--replica") == 0 && i + 1 < argc)
            replica = argv[++i];
        else if (strncmp(argv[i], "--replica=", 10) == 0)
            replica = argv[i] + 10;
        else if (argv[i][0] != '-' && !id)
            id = argv[i];
        else
            return gp_usage_error("logs", "usage: gpupool logs ID|ID_N [--replica N] [--follow]");
    }
    if (!id)
        return gp_usage_error("logs", "usage: gpupool logs ID|ID_N [--replica N] [--follow]");
    uint64_t job;
    int rc;
    char text[24];
    if (!gp_one_job_id(c, "logs", id, &job, &rc))
        return rc;
    snprintf(text, sizeof text, "%llu", (unsigned long long)job);
    return logs_loop(c, text, replica, follow);
}

int gp_cmd_checkpoint(gp_client *c, int argc, char **argv)
{
    (void)c;
    if (argc > 1)
        return gp_usage_error("checkpoint", "unexpected argument %s; usage: gpupool checkpoint", argv[1]);
    const char *dir = getenv("GPUPOOL_CHECKPOINT_DIR");
    if (!dir || !dir[0]) {
        fprintf(stderr, "gpupool checkpoint: not inside a gpupool job (GPUPOOL_CHECKPOINT_DIR is not set)\n");
        return GP_EXIT_ERROR;
    }
    char tmp[4096], done_path[4096];
    snprintf(tmp, sizeof tmp, "%s/.done.%ld.tmp", dir, (long)getpid());
    snprintf(done_path, sizeof done_path, "%s/.done", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || close(fd) != 0 || rename(tmp, done_path) != 0) {
        fprintf(stderr, "gpupool checkpoint: cannot create %s: %s\n", done_path, strerror(errno));
        unlink(tmp);
        return GP_EXIT_ERROR;
    }
    return GP_EXIT_OK;
}

/* replay.c - gpupool-replay: replay a daemon's event log anywhere and check
 * that the engine decides the same.
 *
 *     gpupool-replay PATH
 *
 * PATH is a gpupoold SQLite store (opened read-only: never migrated or
 * written) or a file written by `gpupool admin export-log` (JSON lines: a
 * header {"format": "gpupool-event-log", "version": 1}, then one event per
 * line as GET /v1/log answers it).  Every event is decoded
 * (eventlog/event.h) and applied to a fresh engine with the default
 * configuration, as gpupoold runs it (the log carries its clock
 * resolution); the count and digest of each event's decisions
 * (eventlog/decisions.h) are compared with the recorded ones.  Events
 * logged before decisions were recorded are replayed but not compared; for
 * a store, the final state is also checked against its job table.
 *
 * Example, an event that decides differently:
 *
 *     gpupool-replay: event 41 (tick, t=1795517790) decided differently:
 *       expected 4 decisions, digest 3f2a...
 *       got      4 decisions, digest 9c1e...
 *       replayed decisions:
 *         bind t=1795517790 job=9 gpus=8,9
 *         ...
 *     events 41 (40 compared, 0 not compared), decisions 97: different at event 41
 *
 * Exit status: 0 every compared decision equal and the state agrees, 1 a
 * difference (decisions, a refused event, the job table), 2 bad input.
 */
#include "eventlog/decisions.h"
#include "eventlog/replayer.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_EQUAL = 0, EXIT_DIFFERENT = 1, EXIT_BAD_INPUT = 2 };

typedef struct replay_run {
    gp_replayer r;
    int64_t events, compared, not_compared, decisions;
    int outcome;        /* EXIT_* once known; EXIT_EQUAL while all agree */
} replay_run;

/* ---- one event ---- */

static void print_decisions(const replay_run *run)
{
    size_t n;
    const gp_decision *ds = gp_engine_decisions(run->r.engine, &n);
    printf("  replayed decisions:%s\n", n == 0 ? " none" : "");
    for (size_t i = 0; i < n; i++) {
        char line[2048];
        gp_decision_text(run->r.engine, &ds[i], line, sizeof line);
        printf("    %s", line);
    }
}

static gp_err compare(replay_run *run, const gp_store_event *row, gp_error *err)
{
    int64_t count;
    char digest[65];
    gp_err rc = gp_replayer_digest(&run->r, &count, digest, err);
    if (rc)
        return rc;
    run->compared++;
    run->decisions += count;
    if (count == row->decisions && strcmp(digest, row->digest) == 0)
        return GP_OK;
    printf("gpupool-replay: event %lld (%s, t=%lld) decided differently:\n", (long long)row->seq, row->kind,
           (long long)row->time);
    printf("  expected %lld decisions, digest %s\n", (long long)row->decisions, row->digest);
    printf("  got      %lld decisions, digest %s\n", (long long)count, digest);
    print_decisions(run);
    run->outcome = EXIT_DIFFERENT;
    return gp_error_set(err, GP_ERR_CONFLICT, "decisions", "event %lld decided differently", (long long)row->seq);
}

static gp_err replay_event(void *ctx, const gp_store_event *row, gp_error *err)
{
    replay_run *run = ctx;
    gp_event ev;
    bool logged;
    run->events++;
    gp_err rc = gp_event_decode(row->kind, row->version, row->payload, row->time, &ev, err);
    if (rc) {
        printf("gpupool-replay: event %lld (%s, t=%lld) cannot be read: %s (field %s)\n", (long long)row->seq,
               row->kind ? row->kind : "?", (long long)row->time, err->message, err->field);
        run->outcome = EXIT_BAD_INPUT;
        return rc;
    }
    rc = gp_replayer_apply(&run->r, &ev, GP_APPLY_REPLAY, &logged, err);
    if (rc) {
        printf("gpupool-replay: event %lld (%s, t=%lld) was refused on replay, the daemon had accepted it: %s\n",
               (long long)row->seq, row->kind, (long long)row->time, err->message);
        run->outcome = EXIT_DIFFERENT;
    } else if (run->r.trust_floor_applied) {
        printf("gpupool-replay: event %lld: %s asked for trusted below an untrusted ancestor; replayed as inherit\n",
               (long long)row->seq, ev.path);
    }
    if (rc == GP_OK && row->digest)
        rc = compare(run, row, err);
    else if (rc == GP_OK)
        run->not_compared++;
    gp_replayer_settle(&run->r);
    gp_event_free(&ev);
    return rc;
}

/* ---- a store ---- */

static gp_err replay_store(replay_run *run, const char *path, gp_error *err)
{
    char url[4200];
    gp_store *s;
    snprintf(url, sizeof url, "sqlite:%s", path);
    gp_err rc = gp_store_open(url, true, &s, err);
    if (rc) {
        run->outcome = EXIT_BAD_INPUT;
        return rc;
    }
    rc = gp_store_events_scan(s, replay_event, run, err);
    if (rc == GP_OK) {
        rc = gp_store_live_jobs_scan(s, gp_replayer_check_job, &run->r, err);
        if (rc == GP_OK)
            rc = gp_replayer_check_totals(&run->r, err);
        if (rc == GP_OK)
            printf("final state: %zu live jobs, as the store's job table has them\n", run->r.rows_checked);
        else if (run->outcome == EXIT_EQUAL)
            run->outcome = EXIT_DIFFERENT;
    }
    gp_store_close(s);
    return rc;
}

/* ---- an export ---- */

/* One line of an export as a store row; the payload is written back as
 * text (the object decodes to the same event as the logged text). */
static gp_err export_line(replay_run *run, const char *line, int64_t lineno, gp_error *err)
{
    json_error_t jerr;
    json_t *o = json_loads(line, 0, &jerr);
    json_t *decisions = json_object_get(o, "decisions"), *digest = json_object_get(o, "digest");
    if (!o || !json_is_integer(json_object_get(o, "seq")) || !json_is_integer(json_object_get(o, "time")) ||
        !json_is_string(json_object_get(o, "kind")) || !json_is_integer(json_object_get(o, "version")) ||
        !json_object_get(o, "payload") || !(json_is_null(decisions) || json_is_integer(decisions)) ||
        !(json_is_null(digest) || json_is_string(digest))) {
        json_decref(o);
        run->outcome = EXIT_BAD_INPUT;
        return gp_error_set(err, GP_ERR_INVALID, "line", "line %lld is not an event (seq, time, kind, version, payload,"
                            " decisions, digest)", (long long)lineno);
    }
    char *payload = json_dumps(json_object_get(o, "payload"), GP_EVENT_JSON_FLAGS | JSON_ENCODE_ANY);
    gp_store_event row = {.seq = json_integer_value(json_object_get(o, "seq")),
                          .time = json_integer_value(json_object_get(o, "time")),
                          .kind = json_string_value(json_object_get(o, "kind")),
                          .payload = payload,
                          .version = (int)json_integer_value(json_object_get(o, "version")),
                          .decisions = json_is_integer(decisions) ? json_integer_value(decisions) : -1,
                          .digest = json_string_value(digest)};
    gp_err rc = replay_event(run, &row, err);
    free(payload);
    json_decref(o);
    return rc;
}

static gp_err check_header(replay_run *run, const char *line, gp_error *err)
{
    json_t *h = json_loads(line, 0, NULL);
    const char *format = json_string_value(json_object_get(h, "format"));
    json_int_t version = json_integer_value(json_object_get(h, "version"));
    gp_err rc = GP_OK;
    if (!format || strcmp(format, "gpupool-event-log") != 0 || version != 1) {
        run->outcome = EXIT_BAD_INPUT;
        rc = gp_error_set(err, GP_ERR_INVALID, "header",
                          "not a gpupool event log (the first line must be {\"format\": \"gpupool-event-log\","
                          " \"version\": 1})");
    }
    json_decref(h);
    return rc;
}

static gp_err replay_export(replay_run *run, FILE *f, gp_error *err)
{
    char *line = NULL;
    size_t cap = 0;
    int64_t lineno = 0;
    gp_err rc = GP_OK;
    while (rc == GP_OK && getline(&line, &cap, f) > 0) {
        lineno++;
        if (lineno == 1)
            rc = check_header(run, line, err);
        else if (line[0] != '\n')
            rc = export_line(run, line, lineno, err);
    }
    if (rc == GP_OK && lineno == 0) {
        run->outcome = EXIT_BAD_INPUT;
        rc = gp_error_set(err, GP_ERR_INVALID, "file", "the file is empty");
    }
    if (rc == GP_OK && (rc = gp_engine_check_invariants(run->r.engine, err)) != GP_OK)
        run->outcome = EXIT_DIFFERENT;
    free(line);
    return rc;
}

/* ---- main ---- */

static bool is_sqlite(FILE *f)
{
    char magic[16] = {0};
    size_t n = fread(magic, 1, sizeof magic, f);
    rewind(f);
    return n == sizeof magic && memcmp(magic, "SQLite format 3", 16) == 0;
}

static void summary(const replay_run *run)
{
    const char *verdict = run->outcome == EXIT_DIFFERENT ? "different"
                          : run->outcome != EXIT_EQUAL   ? "bad input"
                          : run->compared == 0           ? "none recorded to compare (replayed without error)"
                                                         : "all equal";
    printf("events %lld (%lld compared, %lld not compared: logged before decisions were recorded), decisions %lld: %s\n",
           (long long)run->events, (long long)run->compared, (long long)run->not_compared, (long long)run->decisions,
           verdict);
}

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: gpupool-replay PATH   (a gpupoold SQLite store or a gpupool admin export-log file)\n");
        return EXIT_BAD_INPUT;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        fprintf(stderr, "gpupool-replay: cannot open %s\n", argv[1]);
        return EXIT_BAD_INPUT;
    }
    replay_run run = {.outcome = EXIT_EQUAL};
    gp_error err = {0};
    gp_engine_config cfg = gp_engine_config_default();
    gp_err rc = gp_replayer_init(&run.r, &cfg, &err);
    if (rc == GP_OK)
        rc = is_sqlite(f) ? replay_store(&run, argv[1], &err) : replay_export(&run, f, &err);
    fclose(f);
    if (rc != GP_OK && run.outcome == EXIT_EQUAL)
        run.outcome = EXIT_BAD_INPUT;
    if (rc != GP_OK && err.code != GP_ERR_CONFLICT)
        fprintf(stderr, "gpupool-replay: %s\n", err.message);
    else if (rc != GP_OK && strcmp(err.field, "decisions") != 0)
        fprintf(stderr, "gpupool-replay: %s\n", err.message);
    summary(&run);
    gp_replayer_free(&run.r);
    return run.outcome;
}

/* cmd_jobs.c - gpupool submit, jobs, job, cancel.
 *
 * submit builds the job JSON from flags (or takes it from -f FILE, YAML or
 * JSON) and leaves every check to the server, so the CLI never disagrees
 * with it about what a valid job is -- the tenant too: a member token's
 * job without one goes to the token's tenant, others are told to name it.  A file holding a list of jobs, or
 * --array N, goes as one POST /v1/jobs:batch (all or none).
 *
 * Human output shows times as local date-times and ages (timefmt.h),
 * never epoch seconds; --json prints the server's answer as it is.
 */
#include "cli/commands.h"

#include "cli/table.h"
#include "cli/timefmt.h"
#include "cli/watch.h"
#include "spec/yaml_json.h"
#include "util/duration.h"
#include "util/index_set.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The job fields that hold a span of time, in seconds on the wire. */
static const char *const duration_fields[] = {"time_limit_s", "checkpoint_grace_s", "expected_runtime_s"};

/* One of duration_fields given as text (a flag, or a string in a job
 * file): util/duration.h's forms or plain seconds, set as integer seconds;
 * what names it in an error ("--time-limit", "job.yaml: time_limit_s"). */
static int set_duration(json_t *job, const char *field, const char *text, const char *what)
{
    int64_t seconds;
    if (!gp_duration_parse_seconds(text, &seconds))
        return gp_usage_error("submit", "%s: expected %s; got %s", what, GP_DURATION_SECONDS_FORMS, text);
    json_object_set_new(job, field, json_integer(seconds));
    return GP_EXIT_OK;
}

/* A job file's durations written as text ("time_limit_s: 2h") as seconds,
 * in one job or each job of a list; other values go as they are. */
static int file_durations(json_t *doc, const char *path)
{
    size_t i, n = json_is_array(doc) ? json_array_size(doc) : 1;
    char what[512];
    for (i = 0; i < n; i++) {
        json_t *job = json_is_array(doc) ? json_array_get(doc, i) : doc;
        for (size_t f = 0; f < sizeof duration_fields / sizeof duration_fields[0]; f++) {
            const char *text = json_string_value(json_object_get(job, duration_fields[f]));
            if (json_is_array(doc))
                snprintf(what, sizeof what, "%s: [%zu].%s", path, i, duration_fields[f]);
            else
                snprintf(what, sizeof what, "%s: %s", path, duration_fields[f]);
            if (text && set_duration(job, duration_fields[f], text, what) != GP_EXIT_OK)
                return GP_EXIT_USAGE;
        }
    }
    return GP_EXIT_OK;
}

/* lines: the line of each of the file's values, for errors (caller-owned). */
static int submit_from_file(const char *path, json_t **out, gp_yaml_lines *lines)
{
    size_t len;
    char *text = gp_read_file(path, &len);
    if (!text)
        return GP_EXIT_USAGE;
    gp_error err;
    gp_err rc = gp_yaml_to_json(text, len, path, out, lines, &err);
    free(text);
    if (rc != GP_OK)
        return gp_usage_error("submit", "%s", err.message);
    if (!*out)
        return gp_usage_error("submit", "%s: the file is empty", path);
    return file_durations(*out, path);
}

/* A server error about a field the job file gave, told at the file's line:
 * "job.yaml:4: unknown field gpu; did you mean gpus?".  The server names
 * the field "gpu" (one job), "job.gpu" (--array) or "jobs[3].gpu" (a list,
 * the file's "[3].gpu"); a field the flags gave (flags win) stays as it is. */
static void error_at_file_line(gp_response *resp, const gp_yaml_lines *lines, const json_t *doc, const json_t *flags)
{
    json_t *e = json_object_get(resp->body, "error");
    const char *field = json_string_value(json_object_get(e, "field")), *rest = field;
    const char *msg = json_string_value(json_object_get(e, "message"));
    const json_t *item = doc;
    char path[GP_ERROR_FIELD_MAX + 32], key[GP_ERROR_FIELD_MAX];
    unsigned long i = 0;
    int used = 0;
    if (!field || !msg)
        return;
    if (json_is_array(doc)) {
        if (sscanf(field, "jobs[%lu]%n", &i, &used) != 1 || used == 0 || !(item = json_array_get(doc, i)))
            return;
        rest = field + used + (field[used] == '.');
        snprintf(path, sizeof path, "[%lu]%s%s", i, rest[0] ? "." : "", rest);
    } else {
        rest = strncmp(field, "job.", 4) == 0 ? field + 4 : field;
        snprintf(path, sizeof path, "%s", rest);
    }
    snprintf(key, sizeof key, "%.*s", (int)strcspn(rest, ".["), rest);
    if (!json_object_get(item, key) || json_object_get(flags, key))
        return;
    size_t cap = strlen(lines->name) + strlen(msg) + 32;
    char *text = malloc(cap);
    if (!text)
        return;
    snprintf(text, cap, "%s:%d: %s", lines->name, gp_yaml_line(lines, path), msg);
    json_object_set_new(e, "message", json_string(text));
    free(text);
}

static const char *const job_head[] = {"ID",  "TENANT", "USER", "NAME",  "GPUS",  "STATE",
                                      "CLASS", "AGE", "TIME", "NODES", "REASON"};
enum { JOB_COLS = 11 };


/* What a job asks for: "2x8" (replicas x whole GPUs), or its share of one
 * GPU per replica: "mps 25%", "mig 1g.10gb", "timeslice" ("3x mps 25%"). */
static const char *gpus_text(const json_t *j, char *buf, size_t cap)
{
    long long replicas = json_integer_value(json_object_get(j, "replicas"));
    json_t *share = json_object_get(j, "share");
    char one[64];
    if (json_is_integer(json_object_get(share, "mps")))
        snprintf(one, sizeof one, "mps %lld%%", (long long)json_integer_value(json_object_get(share, "mps")));
    else if (json_is_string(json_object_get(share, "mig")))
        snprintf(one, sizeof one, "mig %s", json_string_value(json_object_get(share, "mig")));
    else if (json_object_get(share, "timeslice"))
        snprintf(one, sizeof one, "timeslice");
    else {
        snprintf(buf, cap, "%lldx%lld", replicas, (long long)json_integer_value(json_object_get(j, "gpus")));
        return buf;
    }
    if (replicas > 1)
        snprintf(buf, cap, "%lldx %s", replicas, one);
    else
        snprintf(buf, cap, "%s", one);
    return buf;
}

/* How long it has run: from bind to end (or now); "-" if it never ran. */
static const char *run_time(const json_t *j, int64_t now, char *buf, size_t cap)
{
    json_t *bind = json_object_get(j, "bind_time"), *end = json_object_get(j, "end_time");
    if (!json_is_integer(bind))
        return NULL;
    int64_t until = json_is_integer(end) ? json_integer_value(end) : now;
    return gp_duration(until - json_integer_value(bind), buf, cap);
}

/* The distinct nodes of its placement, "a,b" ("-" when not placed). */
static const char *nodes_text(const json_t *j, char *buf, size_t cap)
{
    size_t used = 0, i;
    json_t *rep;
    buf[0] = '\0';
    json_array_foreach(json_object_get(j, "placement"), i, rep) {
        const char *node = json_string_value(json_object_get(rep, "node"));
        if (!node || strstr(buf, node)) /* replicas often share a node; names are distinct words */
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s", used ? "," : "", node);
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
    }
    return buf[0] ? buf : NULL;
}

/* bytes as "1.2 GiB": the largest of B, KiB, MiB, GiB, TiB it is 1 of. */
static const char *bytes_text(int64_t n, char *buf, size_t cap)
{
    static const char *const UNITS[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    size_t u = 0;
    for (; v >= 1024 && u + 1 < sizeof UNITS / sizeof UNITS[0]; u++)
        v /= 1024;
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, UNITS[u]);
    return buf;
}

/* A running job's image pull (GET /v1/jobs/{id} "pull"): "pulling image
 * docker://..., 1.2 GiB of 4.0 GiB"; NULL when it pulls none. */
static const char *pull_text(const json_t *j, char *buf, size_t cap)
{
    json_t *pull = json_object_get(j, "pull");
    const char *image = json_string_value(json_object_get(pull, "image"));
    char done[32], total[32];
    if (!image)
        return NULL;
    int64_t of = json_integer_value(json_object_get(pull, "total_bytes"));
    bytes_text(json_integer_value(json_object_get(pull, "done_bytes")), done, sizeof done);
    if (of > 0)
        snprintf(buf, cap, "pulling image %s, %s of %s", image, done, bytes_text(of, total, sizeof total));
    else
        snprintf(buf, cap, "pulling image %s, %s (total not known yet)", image, done);
    return buf;
}

/* Its state as a person reads it: "pulling image" while a replica's image
 * is pulled (the job is running for gpupoold). */
static const char *state_text(const json_t *j)
{
    return json_object_get(j, "pull") ? "pulling image" : json_string_value(json_object_get(j, "state"));
}

/* The ID cell: "17", "13_4" for member 4 of array 13, or "13_[5-19]" for
 * the members of array 13 in folded (NULL: the job alone). */
static const char *id_text(const json_t *j, const gp_index_set *folded, char *buf, size_t cap)
{
    long long id = (long long)json_integer_value(json_object_get(j, "id"));
    long long array = (long long)json_integer_value(json_object_get(j, "array_id"));
    char set[256];
    if (array <= 0)
        snprintf(buf, cap, "%lld", id);
    else if (folded && gp_index_set_count(folded) > 1)
        snprintf(buf, cap, "%lld_[%s]", array, gp_index_set_format(folded, set, sizeof set));
    else
        snprintf(buf, cap, "%lld_%lld", array, (long long)json_integer_value(json_object_get(j, "array_index")));
    return buf;
}

/* One row of the job table (job_head's columns) from a job's JSON; folded
 * as for id_text. */
static void add_job_row(gp_table *t, const json_t *j, const gp_index_set *folded)
{
    char id[300], gpus[96], age[32], ran[32], nodes[256], reason[512];
    int64_t now = (int64_t)time(NULL);
    json_t *submit = json_object_get(j, "submit_time");
    const char *cells[] = {id_text(j, folded, id, sizeof id),
                           json_string_value(json_object_get(j, "tenant")),
                           json_string_value(json_object_get(j, "user")),
                           json_string_value(json_object_get(j, "name")),
                           gpus_text(j, gpus, sizeof gpus),
                           state_text(j),
                           json_string_value(json_object_get(j, "class")),
                           json_is_integer(submit) ? gp_duration(now - json_integer_value(submit), age, sizeof age) : NULL,
                           run_time(j, now, ran, sizeof ran),
                           nodes_text(j, nodes, sizeof nodes),
                           gp_reason_text(j, (int64_t)time(NULL), reason, sizeof reason)};
    gp_table_add(t, cells);
}

/* Is b a pending member of a's array waiting for the same reason? */
static bool folds_with(const json_t *a, const json_t *b)
{
    const char *ra = json_string_value(json_object_get(a, "reason"));
    const char *rb = json_string_value(json_object_get(b, "reason"));
    return json_integer_value(json_object_get(b, "array_id")) == json_integer_value(json_object_get(a, "array_id")) &&
           strcmp(json_string_value(json_object_get(b, "state")) ? json_string_value(json_object_get(b, "state")) : "",
                  "pending") == 0 &&
           ra && rb && strcmp(ra, rb) == 0;
}

/* squeue's fold: the pending members of jobs[from]'s array that wait for
 * the same reason, from `from` on, into set (each marked in done); set
 * stays empty when jobs[from] is no pending member. */
static void fold_pending(const json_t *jobs, size_t from, bool *done, gp_index_set *set)
{
    const json_t *first = json_array_get(jobs, from);
    if (json_integer_value(json_object_get(first, "array_id")) <= 0 || !folds_with(first, first))
        return;
    for (size_t k = from; k < json_array_size(jobs); k++) {
        const json_t *j = json_array_get(jobs, k);
        uint32_t index = (uint32_t)json_integer_value(json_object_get(j, "array_index"));
        if (!done[k] && folds_with(first, j) && gp_index_set_add(set, index, index))
            done[k] = true;
    }
}

/* The rows of jobs, an array's pending members folded into one row. */
static void add_job_rows(gp_table *t, const json_t *jobs)
{
    size_t n = json_array_size(jobs);
    bool *done = calloc(n + 1, sizeof *done);
    for (size_t i = 0; i < n; i++) {
        gp_index_set set = {0};
        if (done && done[i])
            continue;
        if (done)
            fold_pending(jobs, i, done, &set);
        add_job_row(t, json_array_get(jobs, i), &set);
    }
    free(done);
}

static void print_job_line(const json_t *j)
{
    gp_table t;
    gp_table_init(&t, JOB_COLS, job_head);
    add_job_row(&t, j, NULL);
    gp_table_print(&t, stdout);
}

/* The table of a batch's jobs (POST /v1/jobs:batch answers {"ids", "jobs"}). */
static void print_job_lines(const json_t *jobs)
{
    gp_table t;
    gp_table_init(&t, JOB_COLS, job_head);
    add_job_rows(&t, jobs);
    gp_table_print(&t, stdout);
}

/* The request for what was given: one job (POST /v1/jobs), a file's list
 * of jobs or an --array of one (POST /v1/jobs:batch, one request that the
 * daemon commits all or none).  flags: the job the flags describe; they
 * win over every job of the file.  array: 0 = no --array. */
static int submit_send(gp_client *c, json_t *flags, json_t *from_file, const gp_yaml_lines *lines, long long array,
                       gp_response *resp)
{
    const char *path = "/v1/jobs";
    json_t *body = NULL;
    if (json_is_array(from_file)) {
        if (array)
            return gp_usage_error("submit", "--array takes one job; the file holds a list");
        json_t *jobs = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(from_file, i, item) {
            /* a non-mapping goes as it is: the server names the item */
            json_t *job = json_is_object(item) ? json_deep_copy(flags) : json_incref(item);
            if (json_is_object(item))
                json_object_update_missing(job, item);
            json_array_append_new(jobs, job);
        }
        body = json_pack("{s:o}", "jobs", jobs);
        path = "/v1/jobs:batch";
    } else if (from_file && !json_is_object(from_file)) {
        return gp_usage_error("submit", "the file must hold one job (a mapping) or a list of jobs");
    } else {
        json_t *job = json_deep_copy(flags);
        json_object_update_missing(job, from_file);
        body = array ? json_pack("{s:o, s:I}", "job", job, "array", (json_int_t)array) : job;
        path = array ? "/v1/jobs:batch" : path;
    }
    int rc = gp_client_send(c, "POST", path, body, resp);
    json_decref(body);
    if (rc == GP_EXIT_OK && from_file)
        error_at_file_line(resp, lines, from_file, flags);
    return rc == GP_EXIT_OK ? gp_client_finish(c, resp) : rc;
}

/* --mount VOLUME:TARGET[:ro|:rw] as a mount object (the server checks the
 * parts; without :ro or :rw, the volume's own mode). */
static json_t *mount_json(const char *arg)
{
    const char *colon = strchr(arg, ':'), *last = strrchr(arg, ':');
    json_t *m = json_object();
    json_object_set_new(m, "volume", json_stringn(arg, colon ? (size_t)(colon - arg) : strlen(arg)));
    bool mode = last && last != colon && (strcmp(last, ":ro") == 0 || strcmp(last, ":rw") == 0);
    const char *target = colon ? colon + 1 : "";
    json_object_set_new(m, "target", json_stringn(target, mode ? (size_t)(last - target) : strlen(target)));
    if (mode)
        json_object_set_new(m, "read_only", json_boolean(strcmp(last, ":ro") == 0));
    return m;
}

int gp_cmd_submit(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"file", required_argument, NULL, 'f'},      {"tenant", required_argument, NULL, 't'},
        {"name", required_argument, NULL, 'n'},      {"gpus", required_argument, NULL, 'g'},
        {"replicas", required_argument, NULL, 'r'},  {"gpu-type", required_argument, NULL, 'T'},
        {"cpu-millis", required_argument, NULL, 'C'}, {"mem-mib", required_argument, NULL, 'M'},
        {"topology", required_argument, NULL, 'o'},  {"isolation", required_argument, NULL, 'i'},
        {"priority", required_argument, NULL, 'p'},  {"grace", required_argument, NULL, 'G'},
        {"runtime", required_argument, NULL, 'R'},   {"kind", required_argument, NULL, 'k'},
        {"user", required_argument, NULL, 'u'},      {"mig", required_argument, NULL, 'm'},
        {"mps", required_argument, NULL, 'P'},       {"timeslice", no_argument, NULL, 'S'},
        {"array", required_argument, NULL, 'A'},     {"time-limit", required_argument, NULL, 'L'},
        {"restart-policy", required_argument, NULL, 'Y'}, {"max-restarts", required_argument, NULL, 'X'},
        {"stop-signal", required_argument, NULL, 'Z'},   {"pids-max", required_argument, NULL, 'K'},
        {"image", required_argument, NULL, 'I'},     {"mount", required_argument, NULL, 'V'},
        {"shm-mib", required_argument, NULL, 'H'},   {"read-only-root", no_argument, NULL, 'O'},
        {"network", required_argument, NULL, 'N'},   {"hold-until-fit", no_argument, NULL, 'W'},
        {"booking", required_argument, NULL, 'B'},
        {NULL, 0, NULL, 0},
    };
    json_t *job = json_object(), *types = json_array(), *mounts = json_array(), *from_file = NULL;
    gp_yaml_lines lines = {0};
    const char *file = NULL;
    long long array = 0;
    char *end;
    int ch, rc = GP_EXIT_OK;
    optind = 0;
    while (rc == GP_EXIT_OK && (ch = getopt_long(argc, argv, "f:", opts, NULL)) != -1) {
        switch (ch) {
        case 'f': file = optarg; break;
        case 't': json_object_set_new(job, "tenant", json_string(optarg)); break;
        case 'n': json_object_set_new(job, "name", json_string(optarg)); break;
        case 'g': json_object_set_new(job, "gpus", gp_json_number_or_string(optarg)); break;
        case 'r': json_object_set_new(job, "replicas", gp_json_number_or_string(optarg)); break;
        case 'T': json_array_append_new(types, json_string(optarg)); break;
        case 'C': json_object_set_new(job, "cpu_millis", gp_json_number_or_string(optarg)); break;
        case 'M': json_object_set_new(job, "mem_mib", gp_json_number_or_string(optarg)); break;
        case 'K': json_object_set_new(job, "pids_max", gp_json_number_or_string(optarg)); break;
        case 'o': json_object_set_new(job, "topology", json_string(optarg)); break;
        case 'i': json_object_set_new(job, "isolation", json_string(optarg)); break;
        case 'p': json_object_set_new(job, "priority", gp_json_number_or_string(optarg)); break;
        case 'G': rc = set_duration(job, "checkpoint_grace_s", optarg, "--grace"); break;
        case 'R': rc = set_duration(job, "expected_runtime_s", optarg, "--runtime"); break;
        case 'L': rc = set_duration(job, "time_limit_s", optarg, "--time-limit"); break;
        case 'W': json_object_set_new(job, "wait_for_fleet", json_true()); break;
        case 'k': json_object_set_new(job, "kind", json_string(optarg)); break;
        case 'Y': json_object_set_new(job, "restart_policy", json_string(optarg)); break;
        case 'Z': json_object_set_new(job, "stop_signal", json_string(optarg)); break;
        case 'X': json_object_set_new(job, "max_restarts", gp_json_number_or_string(optarg)); break;
        case 'u': json_object_set_new(job, "user", json_string(optarg)); break;
        case 'm': json_object_set_new(job, "share", json_pack("{s:s}", "mig", optarg)); break;
        case 'P': json_object_set_new(job, "share", json_pack("{s:o}", "mps", gp_json_number_or_string(optarg))); break;
        case 'S': json_object_set_new(job, "share", json_pack("{s:b}", "timeslice", 1)); break;
        case 'I': json_object_set_new(job, "image", json_string(optarg)); break;
        case 'V': json_array_append_new(mounts, mount_json(optarg)); break;
        case 'H': json_object_set_new(job, "shm_mib", gp_json_number_or_string(optarg)); break;
        case 'O': json_object_set_new(job, "read_only_root", json_true()); break;
        case 'N': json_object_set_new(job, "network", json_string(optarg)); break;
        case 'B': json_object_set_new(job, "booking", json_string(optarg)); break;
        case 'A':
            array = strtoll(optarg, &end, 10);
            if (!optarg[0] || *end || array < 1) /* the server checks the upper bound */
                rc = gp_usage_error("submit", "--array takes a count of jobs (1 or more), got %s", optarg);
            break;
        default: rc = gp_usage_error("submit", "see gpupool submit --help");
        }
    }
    if (json_array_size(types) > 0)
        json_object_set(job, "gpu_types", types);
    if (json_array_size(mounts) > 0)
        json_object_set(job, "mounts", mounts);
    if (optind < argc) {
        json_t *cmd = json_array();
        for (int i = optind; i < argc; i++)
            json_array_append_new(cmd, json_string(argv[i]));
        json_object_set_new(job, "command", cmd);
    }
    if (rc == GP_EXIT_OK && file)
        rc = submit_from_file(file, &from_file, &lines);
    gp_response resp = {0};
    if (rc == GP_EXIT_OK)
        rc = submit_send(c, job, from_file, &lines, array, &resp);
    if (rc == GP_EXIT_OK && !c->json && json_object_get(resp.body, "ids"))
        print_job_lines(json_object_get(resp.body, "jobs"));
    else if (rc == GP_EXIT_OK && !c->json)
        print_job_line(resp.body);
    gp_response_free(&resp);
    gp_yaml_lines_free(&lines);
    json_decref(from_file);
    json_decref(job);
    json_decref(types);
    json_decref(mounts);
    return rc;
}

/* `gpupool jobs`: the request and how its answer is printed. */
typedef struct jobs_view {
    char path[1024];
    const char *output; /* "table", "csv" or "json" */
} jobs_view;

static const char *const job_csv_head[] = {"id",       "tenant",    "user",     "name",      "gpus",
                                           "state",    "class",     "submit",   "start",     "end",
                                           "elapsed_s", "nodes",    "reason",    "last_exit"};
enum { JOB_CSV_COLS = 14 };

static const char *iso_cell(const json_t *v, char *buf, size_t cap)
{
    return json_is_integer(v) ? gp_time_iso(json_integer_value(v), buf, cap) : "";
}

/* One CSV row (job_csv_head): ISO 8601 UTC times, elapsed whole seconds. */
static void add_job_csv_row(gp_table *t, const json_t *j, int64_t now)
{
    char id[32], gpus[96], sub[32], start[32], end[32], ran[32] = "", nodes[256];
    json_t *bind = json_object_get(j, "bind_time"), *stop = json_object_get(j, "end_time");
    snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(j, "id")));
    if (json_is_integer(bind))
        snprintf(ran, sizeof ran, "%lld",
                 (long long)((json_is_integer(stop) ? json_integer_value(stop) : now) - json_integer_value(bind)));
    const char *reason = json_string_value(json_object_get(j, "reason"));
    const char *cells[] = {id,
                           json_string_value(json_object_get(j, "tenant")),
                           json_string_value(json_object_get(j, "user")),
                           json_string_value(json_object_get(j, "name")),
                           gpus_text(j, gpus, sizeof gpus),
                           json_string_value(json_object_get(j, "state")),
                           json_string_value(json_object_get(j, "class")),
                           iso_cell(json_object_get(j, "submit_time"), sub, sizeof sub),
                           iso_cell(bind, start, sizeof start),
                           iso_cell(stop, end, sizeof end),
                           ran,
                           nodes_text(j, nodes, sizeof nodes) ? nodes : "",
                           reason ? reason : "",
                           json_string_value(json_object_get(j, "last_exit"))};
    for (size_t i = 0; i < JOB_CSV_COLS; i++)
        if (!cells[i])
            cells[i] = "";
    gp_table_add(t, cells);
}

static void print_jobs(const json_t *body, const char *output)
{
    bool csv = strcmp(output, "csv") == 0;
    int64_t now = (int64_t)time(NULL);
    gp_table t;
    gp_table_init(&t, csv ? JOB_CSV_COLS : JOB_COLS, csv ? job_csv_head : job_head);
    size_t i;
    json_t *j;
    json_array_foreach(csv ? json_object_get(body, "jobs") : NULL, i, j)
        add_job_csv_row(&t, j, now);
    if (!csv)
        add_job_rows(&t, json_object_get(body, "jobs"));
    if (csv) {
        gp_table_print_csv(&t, stdout);
        return;
    }
    gp_table_print(&t, stdout);
    json_t *next = json_object_get(body, "next");
    if (json_is_integer(next))
        printf("(more: gpupool jobs --before %lld)\n", (long long)json_integer_value(next));
}

/* One refresh of `gpupool jobs`: arg is its jobs_view. */
static int draw_jobs(gp_client *c, void *arg, bool *done)
{
    (void)done;
    const jobs_view *v = arg;
    gp_response resp;
    int rc = gp_client_run(c, "GET", v->path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        print_jobs(resp.body, v->output);
    gp_response_free(&resp);
    return rc;
}

/* --from / --to: a time a person types (timefmt.h), sent as epoch seconds. */
static bool jobs_time_arg(gp_client *c, jobs_view *v, const char *key, const char *text)
{
    int64_t t;
    char epoch[32];
    if (!gp_time_parse(text, (int64_t)time(NULL), &t))
        return false;
    snprintf(epoch, sizeof epoch, "%lld", (long long)t);
    gp_query_add(c, v->path, sizeof v->path, key, epoch);
    return true;
}

int gp_cmd_jobs(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"tenant", required_argument, NULL, 't'},
                                         {"state", required_argument, NULL, 's'},
                                         {"user", required_argument, NULL, 'u'},
                                         {"limit", required_argument, NULL, 'l'},
                                         {"before", required_argument, NULL, 'b'},
                                         {"from", required_argument, NULL, 'f'},
                                         {"to", required_argument, NULL, 'T'},
                                         {"all", no_argument, NULL, 'a'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"watch", no_argument, NULL, 'w'},
                                         {"interval", required_argument, NULL, 'i'},
                                         {NULL, 0, NULL, 0}};
    jobs_view v = {.path = "/v1/jobs", .output = "table"};
    bool watch = false, all = false;
    int ch, interval = 2;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
        const char *key = ch == 't'   ? "tenant"
                          : ch == 's' ? "state"
                          : ch == 'u' ? "user"
                          : ch == 'l' ? "limit"
                          : ch == 'b' ? "before"
                                      : NULL;
        all = all || ch == 'a' || ch == 's' || ch == 'f' || ch == 'T';
        if (ch == 'w')
            watch = true;
        else if (ch == 'i' && !gp_watch_interval(optarg, &interval))
            return gp_usage_error("jobs", "--interval takes 1..3600 seconds, got %s", optarg);
        else if (ch == 'o' && strcmp(optarg, "table") && strcmp(optarg, "csv") && strcmp(optarg, "json"))
            return gp_usage_error("jobs", "-o takes table, csv or json, got %s", optarg);
        else if (ch == 'o')
            v.output = optarg;
        else if ((ch == 'f' || ch == 'T') && !jobs_time_arg(c, &v, ch == 'f' ? "from" : "to", optarg))
            return gp_usage_error("jobs", "--%s: expected YYYY-MM-DD[ HH:MM[:SS]], ISO 8601 with a zone, a relative"
                                          " time like -24h, or epoch seconds; got %s",
                                  ch == 'f' ? "from" : "to", optarg);
        else if (key)
            gp_query_add(c, v.path, sizeof v.path, key, optarg);
        else if (ch == '?')
            return gp_usage_error("jobs", "see gpupool jobs --help");
    }
    if (optind < argc)
        return gp_usage_error("jobs", "unexpected argument %s", argv[optind]);
    c->json = c->json || strcmp(v.output, "json") == 0; /* -o json: the server's answer as it is */
    if (!all) /* live jobs unless --all, a --state or a time window asks for finished ones */
        gp_query_add(c, v.path, sizeof v.path, "state", "live");
    return watch ? gp_watch(c, "gpupool jobs", interval, draw_jobs, &v) : draw_jobs(c, &v, &watch);
}

/* Times (the keys ending in _time) as local date-time and age, never epoch seconds. */
static void print_job(const json_t *j)
{
    char buf[512], reason[512];
    const char *keys[] = {"id", "name", "tenant", "user", "kind", "state", "class", "reason", "replicas", "gpus",
                          "topology", "isolation", "priority", "image", "shm_mib", "network", "read_only_root",
                          "booking", "submit_time", "bind_time", "end_time", "execution"};
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(j, keys[i]);
        bool is_time = strstr(keys[i], "_time") != NULL;
        if (v && is_time && json_is_integer(v))
            printf("%-12s %s\n", keys[i], gp_time_human(json_integer_value(v), now, buf, sizeof buf));
        else if (v && strcmp(keys[i], "reason") == 0)
            printf("%-12s %s\n", keys[i], gp_reason_text(j, (int64_t)time(NULL), buf, sizeof buf));
        else if (v && !json_is_null(v))
            printf("%-12s %s\n", keys[i], gp_cell(v, buf, sizeof buf));
        if (i == 0 && json_integer_value(json_object_get(j, "array_id")) > 0) /* after the id */
            printf("%-12s %s (member %lld of array %lld)\n", "array", id_text(j, NULL, buf, sizeof buf),
                   (long long)json_integer_value(json_object_get(j, "array_index")),
                   (long long)json_integer_value(json_object_get(j, "array_id")));
    }
    if (pull_text(j, buf, sizeof buf))
        printf("%-12s %s\n", "pull", buf);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(j, "mounts"), i, p) {
        const json_t *ro = json_object_get(p, "read_only");
        printf("mount        %s at %s%s\n", json_string_value(json_object_get(p, "volume")),
               json_string_value(json_object_get(p, "target")),
               json_is_true(ro) ? " (read-only)" : json_is_false(ro) ? " (read-write)" : "");
    }
    json_array_foreach(json_object_get(j, "placement"), i, p) {
        char *gpus = json_dumps(json_object_get(p, "gpus"), JSON_COMPACT);
        printf("replica %-4zu node %s gpus %s\n", i, json_string_value(json_object_get(p, "node")), gpus ? gpus : "");
        free(gpus);
    }
    printf("history:\n");
    json_array_foreach(json_object_get(j, "history"), i, p) {
        const char *from = json_string_value(json_object_get(p, "from"));
        int64_t t = json_integer_value(json_object_get(p, "time"));
        char step[64] = "";
        if (from)
            snprintf(step, sizeof step, "%s->%s ", from, json_string_value(json_object_get(p, "to")));
        printf("  %s  %-10s %s%s\n", gp_time_local(t, buf, sizeof buf), json_string_value(json_object_get(p, "kind")),
               step, gp_reason_text(p, (int64_t)time(NULL), reason, sizeof reason));
    }
}

static bool is_final(const char *state)
{
    return state && (strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
                     strcmp(state, "cancelled") == 0);
}

/* One refresh of `gpupool job ID`: arg is the request path; done once the
 * job has ended. */
static int draw_job(gp_client *c, void *arg, bool *done)
{
    gp_response resp;
    int rc = gp_client_run(c, "GET", arg, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        print_job(resp.body);
    if (rc == GP_EXIT_OK)
        *done = is_final(json_string_value(json_object_get(resp.body, "state")));
    gp_response_free(&resp);
    return rc;
}

int gp_cmd_job(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"watch", no_argument, NULL, 'w'},
                                         {"interval", required_argument, NULL, 'i'},
                                         {NULL, 0, NULL, 0}};
    bool watch = false;
    int ch, interval = 2;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch == 'w')
            watch = true;
        else if (ch != 'i' || !gp_watch_interval(optarg, &interval))
            return gp_usage_error("job", "usage: gpupool job ID [--watch [--interval 1..3600]]");
    }
    if (optind != argc - 1)
        return gp_usage_error("job", "usage: gpupool job ID|ID_N [--watch [--interval S]]");
    char path[256], title[160];
    uint64_t id;
    int rc;
    if (!gp_one_job_id(c, "job", argv[optind], &id, &rc))
        return rc;
    snprintf(path, sizeof path, "/v1/jobs/%llu", (unsigned long long)id);
    snprintf(title, sizeof title, "gpupool job %.100s", argv[optind]);
    bool done = false;
    return watch ? gp_watch(c, title, interval, draw_job, path) : draw_job(c, path, &done);
}

/* Cancels each handle in turn (a job, array members, a whole array:
 * gp_each_handle), all of them even when one fails; the exit code is the
 * first failure's. */
int gp_cmd_cancel(gp_client *c, int argc, char **argv)
{
    if (argc >= 2 && argv[1][0] == '-' && argv[1][1] == '-') /* by filter (cmd_control.c) */
        return gp_cancel_matching(c, argc, argv);
    if (argc < 2)
        return gp_usage_error("cancel", "usage: gpupool cancel ID|ID_N|ID_[RANGE]... | [--user U] [--name N] [--state S]"
                                        " [--tenant T]");
    return gp_each_handle(c, "cancel", "DELETE", argv + 1, argc - 1, NULL, print_job_line);
}

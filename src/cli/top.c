/* top.c - `gpupool top`: the fleet at a glance, live.
 *
 * Four tables from the JSON API, each one call:
 *   GPUS         occupancy per GPU type (GET /v1/nodes): GPUs, allocated
 *                (whole GPUs held plus the used share of shared GPUs, in
 *                GPUs), free, unhealthy, nodes up
 *   TENANTS      the top tenants by GPUs in use against their guarantee
 *                (GET /v1/tenants): "H100=12  H100=8  150%"
 *   QUEUE        the oldest pending jobs with why they wait (GET /v1/jobs)
 *   PREEMPTIONS  the newest preemptions with why (GET /v1/preemptions)
 * On a terminal it redraws every --interval seconds (watch.c) until q or
 * Ctrl-C; when stdout is not a terminal it prints one snapshot and exits.
 * With --json the snapshot is one JSON object with the four lists.
 */
#include "cli/commands.h"

#include "cli/table.h"
#include "cli/timefmt.h"
#include "cli/watch.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TOP_ROWS = 8 };

/* GET path's body (a new reference), NULL with the error printed. */
static json_t *fetch(gp_client *c, const char *path, int *rc)
{
    gp_response resp;
    *rc = gp_client_call(c, "GET", path, NULL, NULL, 0, &resp);
    if (*rc == GP_EXIT_OK)
        *rc = gp_client_check(&resp);
    json_t *body = *rc == GP_EXIT_OK ? json_incref(resp.body) : NULL;
    gp_response_free(&resp);
    return body;
}

/* One GPU's allocated milli-GPUs: a whole GPU held is 1000, a shared GPU its used share. */
static int64_t gpu_allocated_milli(const json_t *g)
{
    const char *sharing = json_string_value(json_object_get(g, "sharing"));
    if (sharing && strcmp(sharing, "exclusive") != 0)
        return json_integer_value(json_object_get(g, "used_milli_gpus"));
    bool held = json_is_integer(json_object_get(g, "job")) || json_is_true(json_object_get(g, "allocated"));
    return held ? 1000 : 0;
}

/* Adds node n to its type's row of types ({"H100": {...}}). */
static void occupancy_add(json_t *types, const json_t *n)
{
    const char *type = json_string_value(json_object_get(n, "gpu_type"));
    json_t *row = json_object_get(types, type ? type : "-");
    if (!row) {
        row = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "gpu_type", type ? type : "-", "gpus", (json_int_t)0,
                        "allocated_milli_gpus", (json_int_t)0, "unhealthy", (json_int_t)0, "nodes", (json_int_t)0,
                        "nodes_up", (json_int_t)0);
        json_object_set_new(types, type ? type : "-", row);
    }
    int64_t milli = 0, unhealthy = 0;
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(n, "gpus"), i, g) {
        milli += gpu_allocated_milli(g);
        unhealthy += json_is_true(json_object_get(g, "healthy")) ? 0 : 1;
    }
    const char *keys[] = {"gpus", "allocated_milli_gpus", "unhealthy", "nodes", "nodes_up"};
    int64_t add[] = {(int64_t)json_array_size(json_object_get(n, "gpus")), milli, unhealthy, 1,
                     json_is_true(json_object_get(n, "up")) ? 1 : 0};
    for (size_t k = 0; k < 5; k++)
        json_object_set_new(row, keys[k], json_integer(json_integer_value(json_object_get(row, keys[k])) + add[k]));
}

static json_t *occupancy(const json_t *nodes)
{
    json_t *types = json_object(), *list = json_array();
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(nodes, "nodes"), i, n)
        occupancy_add(types, n);
    const char *key;
    json_t *row;
    json_object_foreach(types, key, row)
        json_array_append(list, row);
    json_decref(types);
    return list;
}

static double gpu_total(const json_t *res)
{
    double sum = 0;
    const char *type;
    json_t *v;
    json_object_foreach(json_object_get(res, "gpu"), type, v)
        sum += json_number_value(v);
    return sum;
}

static int by_usage_desc(const void *a, const void *b)
{
    double x = gpu_total(json_object_get(*(json_t *const *)a, "usage"));
    double y = gpu_total(json_object_get(*(json_t *const *)b, "usage"));
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The TOP_ROWS tenants using the most GPUs (tenants with none left out). */
static json_t *top_tenants(const json_t *tenants)
{
    const json_t *all = json_object_get(tenants, "tenants");
    size_t n = json_array_size(all), kept = 0;
    json_t **rows = calloc(n ? n : 1, sizeof *rows), *list = json_array();
    for (size_t i = 0; rows && i < n; i++)
        if (gpu_total(json_object_get(json_array_get(all, i), "usage")) > 0)
            rows[kept++] = json_array_get(all, i);
    if (rows)
        qsort(rows, kept, sizeof *rows, by_usage_desc);
    for (size_t i = 0; rows && i < kept && i < TOP_ROWS; i++) {
        const json_t *t = rows[i];
        json_array_append_new(list, json_pack("{s:O, s:O, s:O, s:O, s:O}", "path", json_object_get(t, "path"),
                                              "usage", json_object_get(t, "usage"), "guarantee",
                                              json_object_get(t, "guarantee"), "pending_jobs",
                                              json_object_get(t, "pending_jobs"), "running_jobs",
                                              json_object_get(t, "running_jobs")));
    }
    free(rows);
    return list;
}

/* The oldest TOP_ROWS pending jobs (the list comes newest first), oldest first. */
static json_t *queue_heads(const json_t *jobs)
{
    const json_t *all = json_object_get(jobs, "jobs");
    json_t *list = json_array();
    size_t n = json_array_size(all);
    for (size_t i = n; i > 0 && json_array_size(list) < TOP_ROWS; i--) {
        const json_t *j = json_array_get(all, i - 1);
        json_array_append_new(list, json_pack("{s:O, s:O, s:O, s:O, s:O, s:O}", "id", json_object_get(j, "id"),
                                              "tenant", json_object_get(j, "tenant"), "gpus",
                                              json_object_get(j, "gpus"), "replicas", json_object_get(j, "replicas"),
                                              "submit_time", json_object_get(j, "submit_time"), "reason",
                                              json_object_get(j, "reason")));
    }
    return list;
}

/* The four lists (a new reference), NULL with the error printed. */
static json_t *snapshot(gp_client *c, int *rc)
{
    json_t *nodes = fetch(c, "/v1/nodes", rc);
    json_t *tenants = *rc == GP_EXIT_OK ? fetch(c, "/v1/tenants", rc) : NULL;
    json_t *jobs = *rc == GP_EXIT_OK ? fetch(c, "/v1/jobs?state=pending&limit=1000", rc) : NULL;
    char path[64];
    snprintf(path, sizeof path, "/v1/preemptions?limit=%d", TOP_ROWS);
    json_t *preemptions = *rc == GP_EXIT_OK ? fetch(c, path, rc) : NULL;
    json_t *out = NULL;
    if (*rc == GP_EXIT_OK)
        out = json_pack("{s:o, s:o, s:o, s:O}", "gpu_types", occupancy(nodes), "tenants", top_tenants(tenants),
                        "queue", queue_heads(jobs), "preemptions", json_object_get(preemptions, "preemptions"));
    json_decref(nodes);
    json_decref(tenants);
    json_decref(jobs);
    json_decref(preemptions);
    return out;
}

/* Milli-GPUs as GPUs: 12500 -> "12.5", 3000 -> "3". */
static const char *milli_cell(int64_t milli, char *buf, size_t cap)
{
    snprintf(buf, cap, "%g", (double)milli / 1000.0);
    return buf;
}

static void print_gpu_types(const json_t *types)
{
    static const char *const head[] = {"GPU", "GPUS", "ALLOCATED", "FREE", "USE", "UNHEALTHY", "NODES-UP"};
    gp_table t;
    gp_table_init(&t, 7, head);
    size_t i;
    json_t *r;
    json_array_foreach(types, i, r) {
        int64_t gpus = json_integer_value(json_object_get(r, "gpus"));
        int64_t milli = json_integer_value(json_object_get(r, "allocated_milli_gpus"));
        char n[16], alloc[32], free_[32], use[16], bad[16], up[32];
        snprintf(n, sizeof n, "%lld", (long long)gpus);
        snprintf(use, sizeof use, "%lld%%", gpus ? (long long)(milli / 10 / gpus) : 0LL);
        snprintf(up, sizeof up, "%lld/%lld", (long long)json_integer_value(json_object_get(r, "nodes_up")),
                 (long long)json_integer_value(json_object_get(r, "nodes")));
        const char *cells[] = {json_string_value(json_object_get(r, "gpu_type")),
                               n,
                               milli_cell(milli, alloc, sizeof alloc),
                               milli_cell(gpus * 1000 - milli, free_, sizeof free_),
                               use,
                               gp_cell(json_object_get(r, "unhealthy"), bad, sizeof bad),
                               up};
        gp_table_add(&t, cells);
    }
    gp_table_print(&t, stdout);
}

static void print_tenants(const json_t *tenants)
{
    static const char *const head[] = {"TENANT", "IN-USE", "GUARANTEE", "OF-GUARANTEE", "PENDING", "RUNNING"};
    gp_table t;
    gp_table_init(&t, 6, head);
    size_t i;
    json_t *r;
    json_array_foreach(tenants, i, r) {
        char use[256], g[256], pct[16], p[16], run[16];
        double floor = gpu_total(json_object_get(r, "guarantee"));
        if (floor > 0)
            snprintf(pct, sizeof pct, "%.0f%%", 100.0 * gpu_total(json_object_get(r, "usage")) / floor);
        else
            snprintf(pct, sizeof pct, "-");
        const char *cells[] = {json_string_value(json_object_get(r, "path")),
                               gp_gpu_summary(json_object_get(r, "usage"), use, sizeof use),
                               gp_gpu_summary(json_object_get(r, "guarantee"), g, sizeof g),
                               pct,
                               gp_cell(json_object_get(r, "pending_jobs"), p, sizeof p),
                               gp_cell(json_object_get(r, "running_jobs"), run, sizeof run)};
        gp_table_add(&t, cells);
    }
    gp_table_print(&t, stdout);
}

static void print_queue(const json_t *queue, int64_t now)
{
    static const char *const head[] = {"JOB", "TENANT", "GPUS", "WAITING", "REASON"};
    gp_table t;
    gp_table_init(&t, 5, head);
    size_t i;
    json_t *r;
    json_array_foreach(queue, i, r) {
        char id[32], gpus[32], waiting[48], reason[512];
        snprintf(gpus, sizeof gpus, "%lldx%lld", (long long)json_integer_value(json_object_get(r, "replicas")),
                 (long long)json_integer_value(json_object_get(r, "gpus")));
        const char *cells[] = {gp_cell(json_object_get(r, "id"), id, sizeof id),
                               json_string_value(json_object_get(r, "tenant")), gpus,
                               gp_duration(now - json_integer_value(json_object_get(r, "submit_time")), waiting,
                                           sizeof waiting),
                               gp_reason_text(r, now, reason, sizeof reason)};
        gp_table_add(&t, cells);
    }
    gp_table_print(&t, stdout);
}

static void print_preemptions(const json_t *list, int64_t now)
{
    static const char *const head[] = {"WHEN", "JOB", "TENANT", "REASON"};
    gp_table t;
    gp_table_init(&t, 4, head);
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r) {
        char when[48], id[32], reason[512];
        const char *cells[] = {gp_time_age(json_integer_value(json_object_get(r, "time")), now, when, sizeof when),
                               gp_cell(json_object_get(r, "job"), id, sizeof id),
                               json_string_value(json_object_get(r, "tenant")),
                               gp_reason_text(r, now, reason, sizeof reason)};
        gp_table_add(&t, cells);
    }
    gp_table_print(&t, stdout);
}

static int draw_top(gp_client *c, void *arg, bool *done)
{
    (void)arg;
    (void)done;
    int rc;
    json_t *snap = snapshot(c, &rc);
    if (!snap)
        return rc;
    int64_t now = (int64_t)time(NULL);
    if (c->json) {
        json_dumpf(snap, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    } else {
        print_gpu_types(json_object_get(snap, "gpu_types"));
        printf("\nTop tenants by GPUs in use\n");
        print_tenants(json_object_get(snap, "tenants"));
        printf("\nQueue (oldest pending first)\n");
        print_queue(json_object_get(snap, "queue"), now);
        printf("\nRecent preemptions\n");
        print_preemptions(json_object_get(snap, "preemptions"), now);
    }
    json_decref(snap);
    return GP_EXIT_OK;
}

int gp_cmd_top(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"interval", required_argument, NULL, 'i'}, {NULL, 0, NULL, 0}};
    int interval = 2, ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch != 'i' || !gp_watch_interval(optarg, &interval))
            return gp_usage_error("top", "usage: gpupool top [--interval S] (S: 1..3600 seconds)");
    }
    if (optind != argc)
        return gp_usage_error("top", "usage: gpupool top [--interval S]");
    bool done = false;
    if (isatty(STDOUT_FILENO) != 1 || c->json)
        return draw_top(c, NULL, &done);
    return gp_watch(c, "gpupool top", interval, draw_top, NULL);
}

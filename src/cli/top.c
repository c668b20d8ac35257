/* top.c - `gpupool top`: the fleet at a glance, live.
 *
 * Four tables from the JSON API, each one call:
 *   GPUS         occupancy per GPU type (GET /v1/nodes): GPUs, free, ALLOC
 *                (whole GPUs held plus the used share of shared GPUs, as a
 *                share of the type's GPUs), USE (the mean SM activity the
 *                agents sent for the type's GPUs; "-" where none sent
 *                any), unhealthy, nodes up
 *   TENANTS      the top tenants by GPUs in use, OF-GUARANTEE per GPU type
 *                (the type whose use stands highest against its own
 *                guarantee: types are never added together), a parent's
 *                PENDING and RUNNING counting its whole subtree
 *                (GET /v1/tenants)
 *   QUEUE        the oldest pending jobs with why they wait (GET /v1/jobs)
 *   PREEMPTIONS  the newest preemptions with why (GET /v1/preemptions)
 * On a terminal it redraws every --interval seconds (watch.c) until q or
 * Ctrl-C; when stdout is not a terminal it prints one snapshot and exits.
 * With --json the snapshot is one JSON object with the four lists.
 *
 * A frame fits its screen: the terminal's size (or, off a terminal,
 * $COLUMNS and $LINES when set; else no limit).  Each table drops its least
 * needed columns and cuts its last (the reasons) to the width; the rows
 * left below the watch header and the tables' fixed lines are shared
 * between the three lists one at a time, so on 80 x 24 with 4 GPU types
 * each list keeps 2 or 3 rows and nothing wraps or scrolls the header away.
 */
#include "cli/commands.h"

#include "cli/table.h"
#include "cli/timefmt.h"
#include "cli/watch.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

enum { TOP_ROWS = 8, TOP_LISTS = 3 };

/* What a frame may fill, in characters and lines; 0 is no limit. */
typedef struct top_screen {
    size_t width, lines;
} top_screen;

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
        row = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "gpu_type", type ? type : "-", "gpus",
                        (json_int_t)0, "allocated_milli_gpus", (json_int_t)0, "unhealthy", (json_int_t)0, "nodes",
                        (json_int_t)0, "nodes_up", (json_int_t)0, "sm_active_pct_sum", (json_int_t)0,
                        "sm_reporting_gpus", (json_int_t)0);
        json_object_set_new(types, type ? type : "-", row);
    }
    int64_t milli = 0, unhealthy = 0, sm = 0, reporting = 0;
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(n, "gpus"), i, g) {
        milli += gpu_allocated_milli(g);
        unhealthy += json_is_true(json_object_get(g, "healthy")) ? 0 : 1;
        if (json_is_integer(json_object_get(g, "sm_active_pct"))) {
            sm += json_integer_value(json_object_get(g, "sm_active_pct"));
            reporting++;
        }
    }
    const char *keys[] = {"gpus",     "allocated_milli_gpus", "unhealthy",        "nodes",
                          "nodes_up", "sm_active_pct_sum",    "sm_reporting_gpus"};
    int64_t add[] = {(int64_t)json_array_size(json_object_get(n, "gpus")), milli, unhealthy, 1,
                     json_is_true(json_object_get(n, "up")) ? 1 : 0, sm, reporting};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
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

/* The sum of key over path's subtree in the tenant list all. */
static json_int_t subtree_sum(const json_t *all, const char *path, const char *key)
{
    size_t len = strlen(path), i;
    json_int_t sum = 0;
    json_t *t;
    json_array_foreach(all, i, t) {
        const char *p = json_string_value(json_object_get(t, "path"));
        if (p && strncmp(p, path, len) == 0 && (p[len] == '\0' || p[len] == '/'))
            sum += json_integer_value(json_object_get(t, key));
    }
    return sum;
}

/* The TOP_ROWS tenants using the most GPUs (tenants with none left out),
 * each with its subtree's pending and running jobs. */
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
        const char *path = json_string_value(json_object_get(t, "path"));
        json_array_append_new(list, json_pack("{s:O, s:O, s:O, s:O, s:O, s:I, s:I}", "path", json_object_get(t, "path"),
                                              "usage", json_object_get(t, "usage"), "guarantee",
                                              json_object_get(t, "guarantee"), "pending_jobs",
                                              json_object_get(t, "pending_jobs"), "running_jobs",
                                              json_object_get(t, "running_jobs"), "subtree_pending_jobs",
                                              subtree_sum(all, path ? path : "", "pending_jobs"),
                                              "subtree_running_jobs",
                                              subtree_sum(all, path ? path : "", "running_jobs")));
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

static void print_gpu_types(const json_t *types, size_t width, FILE *out)
{
    static const char *const head[] = {"GPU", "GPUS", "FREE", "ALLOC", "USE", "UNHEALTHY", "NODES-UP"};
    static const int drop[] = {6, 5, -1};
    gp_table t;
    gp_table_init(&t, 7, head);
    size_t i;
    json_t *r;
    json_array_foreach(types, i, r) {
        int64_t gpus = json_integer_value(json_object_get(r, "gpus"));
        int64_t milli = json_integer_value(json_object_get(r, "allocated_milli_gpus"));
        int64_t reporting = json_integer_value(json_object_get(r, "sm_reporting_gpus"));
        char n[16], free_[32], alloc[16], use[16], bad[16], up[32];
        snprintf(n, sizeof n, "%lld", (long long)gpus);
        snprintf(alloc, sizeof alloc, "%lld%%", gpus ? (long long)(milli / 10 / gpus) : 0LL);
        if (reporting)
            snprintf(use, sizeof use, "%lld%%",
                     (long long)(json_integer_value(json_object_get(r, "sm_active_pct_sum")) / reporting));
        else
            snprintf(use, sizeof use, "-");
        snprintf(up, sizeof up, "%lld/%lld", (long long)json_integer_value(json_object_get(r, "nodes_up")),
                 (long long)json_integer_value(json_object_get(r, "nodes")));
        const char *cells[] = {json_string_value(json_object_get(r, "gpu_type")),
                               n,
                               milli_cell(gpus * 1000 - milli, free_, sizeof free_),
                               alloc,
                               use,
                               gp_cell(json_object_get(r, "unhealthy"), bad, sizeof bad),
                               up};
        gp_table_add(&t, cells);
    }
    gp_table_fit(&t, width, drop);
    gp_table_print(&t, out);
}

/* OF-GUARANTEE, per GPU type and never summed across types: the type whose
 * use stands highest against its own guarantee ("H100 150%"); a type in use
 * with no guarantee is all burst and comes first ("L40S burst"); "-" when
 * nothing is guaranteed.  H100=8,L40S=0.25 in use against H100=8 is
 * "L40S burst", not 103 %. */
static const char *of_guarantee(const json_t *usage, const json_t *guarantee, char *buf, size_t cap)
{
    const json_t *floor = json_object_get(guarantee, "gpu");
    const char *type, *worst = NULL;
    double worst_pct = -1;
    json_t *v;
    snprintf(buf, cap, "-");
    json_object_foreach((json_t *)json_object_get(usage, "gpu"), type, v) {
        double g = json_number_value(json_object_get(floor, type));
        if (json_number_value(v) > 0 && g <= 0) {
            snprintf(buf, cap, "%s burst", type);
            return buf;
        }
    }
    json_object_foreach((json_t *)floor, type, v) {
        double pct = json_number_value(v) > 0
                         ? 100.0 * json_number_value(json_object_get(json_object_get(usage, "gpu"), type)) /
                               json_number_value(v)
                         : -1;
        if (pct > worst_pct) {
            worst_pct = pct;
            worst = type;
        }
    }
    if (worst)
        snprintf(buf, cap, "%s %.0f%%", worst, worst_pct);
    return buf;
}

static void print_tenants(const json_t *tenants, size_t rows, size_t width, FILE *out)
{
    static const char *const head[] = {"TENANT", "OF-GUARANTEE", "PENDING", "RUNNING", "IN-USE", "GUARANTEE"};
    static const int drop[] = {5, 3, -1};
    gp_table t;
    gp_table_init(&t, 6, head);
    size_t i;
    json_t *r;
    json_array_foreach(tenants, i, r) {
        if (i >= rows)
            break;
        char use[256], g[256], pct[64], p[16], run[16];
        const char *cells[] = {
            json_string_value(json_object_get(r, "path")),
            of_guarantee(json_object_get(r, "usage"), json_object_get(r, "guarantee"), pct, sizeof pct),
            gp_cell(json_object_get(r, "subtree_pending_jobs"), p, sizeof p),
            gp_cell(json_object_get(r, "subtree_running_jobs"), run, sizeof run),
            gp_gpu_summary(json_object_get(r, "usage"), use, sizeof use),
            gp_gpu_summary(json_object_get(r, "guarantee"), g, sizeof g)};
        gp_table_add(&t, cells);
    }
    gp_table_fit(&t, width, drop);
    gp_table_print(&t, out);
}

static void print_queue(const json_t *queue, int64_t now, size_t rows, size_t width, FILE *out)
{
    static const char *const head[] = {"JOB", "TENANT", "GPUS", "WAITING", "REASON"};
    gp_table t;
    gp_table_init(&t, 5, head);
    size_t i;
    json_t *r;
    json_array_foreach(queue, i, r) {
        if (i >= rows)
            break;
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
    gp_table_fit(&t, width, NULL);
    gp_table_print(&t, out);
}

static void print_preemptions(const json_t *list, int64_t now, size_t rows, size_t width, FILE *out)
{
    static const char *const head[] = {"WHEN", "JOB", "TENANT", "REASON"};
    gp_table t;
    gp_table_init(&t, 4, head);
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r) {
        if (i >= rows)
            break;
        char when[48], id[32], reason[512];
        const char *cells[] = {gp_time_age(json_integer_value(json_object_get(r, "time")), now, when, sizeof when),
                               gp_cell(json_object_get(r, "job"), id, sizeof id),
                               json_string_value(json_object_get(r, "tenant")),
                               gp_reason_text(r, now, reason, sizeof reason)};
        gp_table_add(&t, cells);
    }
    gp_table_fit(&t, width, NULL);
    gp_table_print(&t, out);
}

/* $NAME as a positive number, else 0. */
static size_t env_size(const char *name)
{
    const char *v = getenv(name);
    long n = v ? strtol(v, NULL, 10) : 0;
    return n > 0 ? (size_t)n : 0;
}

/* What a frame may fill: on a terminal its size less the watch header's two
 * lines and the cursor's last line; off one $COLUMNS and $LINES (0: no limit). */
static top_screen screen_size(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0)
        return (top_screen){.width = ws.ws_col, .lines = ws.ws_row > 3 ? (size_t)ws.ws_row - 3 : 1};
    return (top_screen){.width = env_size("COLUMNS"), .lines = env_size("LINES")};
}

/* Rows for the three lists: each wants want[i] (at most TOP_ROWS); the
 * lines left after the fixed ones are handed out one at a time in turn. */
static void share_rows(size_t left, const size_t *want, size_t *got)
{
    memset(got, 0, TOP_LISTS * sizeof *got);
    for (bool gave = true; gave && left > 0;) {
        gave = false;
        for (int i = 0; i < TOP_LISTS && left > 0; i++)
            if (got[i] < want[i]) {
                got[i]++;
                left--;
                gave = true;
            }
    }
}

/* The four tables into out, fitted to screen. */
static void print_frame(const json_t *snap, top_screen screen, int64_t now, FILE *out)
{
    const json_t *types = json_object_get(snap, "gpu_types");
    const json_t *lists[] = {json_object_get(snap, "tenants"), json_object_get(snap, "queue"),
                             json_object_get(snap, "preemptions")};
    size_t want[TOP_LISTS], got[TOP_LISTS];
    for (int i = 0; i < TOP_LISTS; i++)
        want[i] = json_array_size(lists[i]) < TOP_ROWS ? json_array_size(lists[i]) : TOP_ROWS;
    size_t fixed = 1 + json_array_size(types) + 3 * TOP_LISTS; /* a header each; a blank, a title, a header */
    if (screen.lines)
        share_rows(screen.lines > fixed ? screen.lines - fixed : 0, want, got);
    else
        memcpy(got, want, sizeof got);
    print_gpu_types(types, screen.width, out);
    fprintf(out, "\nTop tenants by GPUs in use\n");
    print_tenants(lists[0], got[0], screen.width, out);
    fprintf(out, "\nQueue (oldest pending first)\n");
    print_queue(lists[1], now, got[1], screen.width, out);
    fprintf(out, "\nRecent preemptions\n");
    print_preemptions(lists[2], now, got[2], screen.width, out);
}

/* Writes text's lines to stdout, at most screen.lines of them, each cut to screen.width. */
static void print_fitted(const char *text, top_screen screen)
{
    size_t lines = 0;
    for (const char *p = text; *p && (!screen.lines || lines < screen.lines); lines++) {
        size_t len = strcspn(p, "\n");
        fwrite(p, 1, screen.width && len > screen.width ? screen.width : len, stdout);
        fputc('\n', stdout);
        p += len + (p[len] == '\n');
    }
}

static int draw_top(gp_client *c, void *arg, bool *done)
{
    (void)arg;
    (void)done;
    int rc;
    json_t *snap = snapshot(c, &rc);
    if (!snap)
        return rc;
    if (c->json) {
        json_dumpf(snap, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(snap);
        return GP_EXIT_OK;
    }
    char *text = NULL;
    size_t size = 0;
    FILE *frame = open_memstream(&text, &size);
    if (!frame) {
        json_decref(snap);
        fprintf(stderr, "gpupool top: out of memory\n");
        return GP_EXIT_ERROR;
    }
    top_screen screen = screen_size();
    print_frame(snap, screen, (int64_t)time(NULL), frame);
    fclose(frame);
    print_fitted(text, screen);
    free(text);
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

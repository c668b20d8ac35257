/* cmd_control.c - gpupool hold, release, update: change pending jobs
 * (PATCH /v1/jobs/{id}, server/api_job_patch.c); jobs named by handle,
 * job arrays among them (PATCH and DELETE /v1/arrays/{id}, api_arrays.c).
 *
 *   gpupool hold 12 13          not placed until released
 *   gpupool release 12 13       back in its queue
 *   gpupool update 12 --time-limit 2h --priority 5
 *   gpupool hold '40_[3-9]'     members 3..9 of array 40 (cli/job_handle.h)
 *   gpupool cancel 40           the whole array when 40 is an array's id
 *
 *   gpupool cancel --user bob --state pending --tenant research/nlp
 *                               every job that matches (gp_cancel_matching)
 *
 * Each job in turn, all of them even when one fails; the exit code is the
 * first failure's.  Each changed job prints one line: its id, state and
 * reason ("job 12: pending, held by alice: ...").
 */
#include "cli/commands.h"
#include "cli/job_handle.h"
#include "util/duration.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_changed(const json_t *job)
{
    printf("job %lld: %s, %s\n", (long long)json_integer_value(json_object_get(job, "id")),
           json_string_value(json_object_get(job, "state")) ? json_string_value(json_object_get(job, "state")) : "?",
           json_string_value(json_object_get(job, "reason")) ? json_string_value(json_object_get(job, "reason")) : "");
}

/* method (PATCH with body, or DELETE) on each id as it is (a job, never
 * its array: the ids of a filter); the first failure's exit code. */
static int each_job(gp_client *c, const char *method, char **ids, int n, json_t *body)
{
    int first = GP_EXIT_OK;
    for (int i = 0; i < n; i++) {
        char path[256];
        snprintf(path, sizeof path, "/v1/jobs/%.100s", ids[i]);
        gp_response resp;
        int rc = gp_client_run(c, method, path, body, &resp);
        if (rc == GP_EXIT_OK && !c->json)
            print_changed(resp.body);
        if (rc != GP_EXIT_OK && first == GP_EXIT_OK)
            first = rc;
        gp_response_free(&resp);
    }
    return first;
}

/* Is job id an array's id (its first member)?  *is false too when the job
 * cannot be read (acting on it then says why); a failed call's exit code
 * (printed) otherwise. */
static int is_array_id(gp_client *c, uint64_t id, bool *is)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%llu", (unsigned long long)id);
    gp_response resp;
    int rc = gp_client_call(c, "GET", path, NULL, NULL, 0, &resp);
    *is = rc == GP_EXIT_OK && resp.status == 200 &&
          (uint64_t)json_integer_value(json_object_get(resp.body, "array_id")) == id;
    gp_response_free(&resp);
    return rc;
}

/* "job 13_5 (id 18): pending, held by alice: ..." for each member changed,
 * "job 13_0 (id 13): skipped, running" for each left as it was. */
static void print_members(const json_t *body)
{
    long long array = (long long)json_integer_value(json_object_get(body, "array_id"));
    const char *keys[] = {"changed", "skipped"};
    for (size_t k = 0; k < 2; k++) {
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(body, keys[k]), i, m) {
            const char *state = json_string_value(json_object_get(m, "state"));
            const char *reason = json_string_value(json_object_get(m, "reason"));
            printf("job %lld_%lld (id %lld): %s%s%s%s\n", array, (long long)json_integer_value(json_object_get(m, "array_index")),
                   (long long)json_integer_value(json_object_get(m, "id")), k ? "skipped, " : "", state ? state : "?",
                   k == 0 && reason ? ", " : "", k == 0 && reason ? reason : "");
        }
    }
}

/* method on the members of array h->id that h names (all when it names none). */
static int act_on_array(gp_client *c, const gp_job_handle *h, const char *method, json_t *body)
{
    char path[512], set[400];
    snprintf(path, sizeof path, "/v1/arrays/%llu", (unsigned long long)h->id);
    if (h->members)
        gp_query_add(c, path, sizeof path, "index", gp_index_set_format(&h->index, set, sizeof set));
    gp_response resp;
    int rc = gp_client_run(c, method, path, body, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        print_members(resp.body);
    gp_response_free(&resp);
    return rc;
}

int gp_each_handle(gp_client *c, const char *command, const char *method, char **args, int n, json_t *body,
                   void (*print_one)(const json_t *job))
{
    gp_job_handle *hs = calloc((size_t)n, sizeof *hs);
    char why[256];
    if (!hs)
        return gp_usage_error(command, "out of memory");
    for (int i = 0; i < n; i++)
        if (!gp_job_handle_parse(args[i], &hs[i], why, sizeof why)) {
            free(hs);
            return gp_usage_error(command, "%s", why);
        }
    int first = GP_EXIT_OK;
    for (int i = 0; i < n; i++) {
        bool array = hs[i].members;
        int rc = array ? GP_EXIT_OK : is_array_id(c, hs[i].id, &array);
        if (rc == GP_EXIT_OK && array) {
            rc = act_on_array(c, &hs[i], method, body);
        } else if (rc == GP_EXIT_OK) {
            char path[64];
            snprintf(path, sizeof path, "/v1/jobs/%llu", (unsigned long long)hs[i].id);
            gp_response resp;
            rc = gp_client_run(c, method, path, body, &resp);
            if (rc == GP_EXIT_OK && !c->json)
                print_one(resp.body);
            gp_response_free(&resp);
        }
        if (rc != GP_EXIT_OK && first == GP_EXIT_OK)
            first = rc;
    }
    free(hs);
    return first;
}

/* The id of member index of array_id, asked of gpupoold; 0 with the
 * error printed (exit code in *rc) when there is none. */
static uint64_t member_id(gp_client *c, uint64_t array_id, uint32_t index, int *rc)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/arrays/%llu?index=%u", (unsigned long long)array_id, index);
    gp_response resp;
    *rc = gp_client_call(c, "GET", path, NULL, NULL, 0, &resp);
    *rc = *rc == GP_EXIT_OK ? gp_client_check(&resp) : *rc;
    const json_t *first = json_array_get(json_object_get(resp.body, "members"), 0);
    uint64_t id = *rc == GP_EXIT_OK ? (uint64_t)json_integer_value(json_object_get(first, "id")) : 0;
    gp_response_free(&resp);
    return id;
}

bool gp_one_job_id(gp_client *c, const char *command, const char *text, uint64_t *id, int *rc)
{
    gp_job_handle h;
    char why[256];
    *rc = GP_EXIT_OK;
    if (!gp_job_handle_parse(text, &h, why, sizeof why))
        *rc = gp_usage_error(command, "%s", why);
    else if (h.members && gp_index_set_count(&h.index) != 1)
        *rc = gp_usage_error(command, "%s: %s takes one job; name one member (%llu_%u)", text, command,
                             (unsigned long long)h.id, h.index.r[0].lo);
    *id = *rc != GP_EXIT_OK ? 0 : h.members ? member_id(c, h.id, h.index.r[0].lo, rc) : h.id;
    return *id > 0;
}

static int hold_or_release(gp_client *c, int argc, char **argv, bool hold)
{
    const char *name = hold ? "hold" : "release";
    if (argc < 2 || argv[1][0] == '-')
        return gp_usage_error(name, "usage: gpupool %s ID|ID_N|ID_[RANGE]...", name);
    json_t *body = json_pack("{s:b}", "hold", hold);
    int rc = gp_each_handle(c, name, "PATCH", argv + 1, argc - 1, body, print_changed);
    json_decref(body);
    return rc;
}

int gp_cmd_hold(gp_client *c, int argc, char **argv)
{
    return hold_or_release(c, argc, argv, true);
}

int gp_cmd_release(gp_client *c, int argc, char **argv)
{
    return hold_or_release(c, argc, argv, false);
}

static const char UPDATE_USAGE[] = "usage: gpupool update ID|ID_N|ID_[RANGE]... [--time-limit D] [--priority N]"
                                   " [--hold|--release]";

/* "2h", "90m" (util/duration.h) or plain seconds, "7200". */
static bool time_limit_parse(const char *arg, int64_t *seconds)
{
    char *end;
    if (gp_duration_parse(arg, seconds))
        return true;
    *seconds = strtoll(arg, &end, 10);
    return arg[0] && !*end;
}

/* One option of update into body; false for a bad value (message printed). */
static bool update_option(int ch, const char *arg, json_t *body)
{
    int64_t seconds = 0;
    char *end = NULL;
    long priority = 0;
    switch (ch) {
    case 'L':
        if (!time_limit_parse(arg, &seconds)) {
            gp_usage_error("update", "--time-limit takes a duration (%s) or seconds, got %s", GP_DURATION_FORMS, arg);
            return false;
        }
        json_object_set_new(body, "time_limit_s", json_integer(seconds));
        return true;
    case 'p':
        priority = strtol(arg, &end, 10);
        if (!arg[0] || *end) {
            gp_usage_error("update", "--priority takes an integer, got %s", arg);
            return false;
        }
        json_object_set_new(body, "priority", json_integer(priority));
        return true;
    case 'H': json_object_set_new(body, "hold", json_true()); return true;
    case 'R': json_object_set_new(body, "hold", json_false()); return true;
    default: gp_usage_error("update", "%s", UPDATE_USAGE); return false;
    }
}

int gp_cmd_update(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"time-limit", required_argument, NULL, 'L'},
                                         {"priority", required_argument, NULL, 'p'},
                                         {"hold", no_argument, NULL, 'H'},
                                         {"release", no_argument, NULL, 'R'},
                                         {NULL, 0, NULL, 0}};
    json_t *body = json_object();
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
        if (!update_option(ch, optarg, body)) {
            json_decref(body);
            return GP_EXIT_USAGE;
        }
    int rc = optind < argc && json_object_size(body) > 0
                 ? gp_each_handle(c, "update", "PATCH", argv + optind, argc - optind, body, print_changed)
                 : gp_usage_error("update", "%s", UPDATE_USAGE);
    json_decref(body);
    return rc;
}

/* ---- cancel by filter ---- */

static const char CANCEL_USAGE[] = "usage: gpupool cancel ID|ID_N|ID_[RANGE]...\n"
                                   "       gpupool cancel [--user U] [--name N] [--state S] [--tenant T]";

/* The ids of the jobs that match (name compared here, the rest by the
 * server), page by page, into ids (strings the caller frees). */
static int matching_ids(gp_client *c, const char *query, const char *name, json_t *ids)
{
    long long before = 0;
    for (;;) {
        char path[768];
        snprintf(path, sizeof path, "/v1/jobs%s", query);
        if (before > 0)
            snprintf(path + strlen(path), sizeof path - strlen(path), "&before=%lld", before);
        gp_response resp;
        int rc = gp_client_call(c, "GET", path, NULL, NULL, 0, &resp);
        rc = rc == GP_EXIT_OK ? gp_client_check(&resp) : rc;
        size_t i;
        json_t *job;
        json_array_foreach(rc == GP_EXIT_OK ? json_object_get(resp.body, "jobs") : NULL, i, job) {
            const char *n = json_string_value(json_object_get(job, "name"));
            if (!name || (n && strcmp(n, name) == 0))
                json_array_append_new(ids, json_sprintf("%lld", (long long)json_integer_value(json_object_get(job, "id"))));
        }
        before = rc == GP_EXIT_OK ? (long long)json_integer_value(json_object_get(resp.body, "next")) : 0;
        gp_response_free(&resp);
        if (rc != GP_EXIT_OK || before <= 0)
            return rc;
    }
}

int gp_cancel_matching(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"user", required_argument, NULL, 'u'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"state", required_argument, NULL, 's'},
                                         {"tenant", required_argument, NULL, 't'},
                                         {NULL, 0, NULL, 0}};
    char query[512] = "?limit=1000";
    const char *name = NULL, *state = "live";
    bool narrowed = false; /* by something but the state: a filter of only a state would take every job */
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        narrowed = narrowed || ch == 'u' || ch == 't' || ch == 'n';
        if (ch == 'u')
            gp_query_add(c, query, sizeof query, "user", optarg);
        else if (ch == 't')
            gp_query_add(c, query, sizeof query, "tenant", optarg);
        else if (ch == 'n')
            name = optarg;
        else if (ch == 's')
            state = optarg;
        else
            return gp_usage_error("cancel", "%s", CANCEL_USAGE);
    }
    if (optind < argc || !narrowed)
        return gp_usage_error("cancel", "name ids or at least one of --user, --name, --tenant\n%s", CANCEL_USAGE);
    gp_query_add(c, query, sizeof query, "state", state);
    json_t *ids = json_array();
    int rc = matching_ids(c, query, name, ids);
    size_t n = json_array_size(ids);
    char **argv_ids = calloc(n + 1, sizeof *argv_ids);
    for (size_t i = 0; argv_ids && i < n; i++)
        argv_ids[i] = (char *)json_string_value(json_array_get(ids, i));
    if (rc == GP_EXIT_OK && !argv_ids)
        rc = gp_usage_error("cancel", "out of memory");
    if (rc == GP_EXIT_OK && n == 0 && !c->json)
        printf("no job matches\n");
    if (rc == GP_EXIT_OK)
        rc = each_job(c, "DELETE", argv_ids, (int)n, NULL);
    free(argv_ids);
    json_decref(ids);
    return rc;
}

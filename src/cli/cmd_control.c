/* cmd_control.c - gpupool hold, release, update: change pending jobs
 * (PATCH /v1/jobs/{id}, server/api_job_patch.c).
 *
 *   gpupool hold 12 13          not placed until released
 *   gpupool release 12 13       back in its queue
 *   gpupool update 12 --time-limit 2h --priority 5
 *
 * Each job in turn, all of them even when one fails; the exit code is the
 * first failure's.  Each changed job prints one line: its id, state and
 * reason ("job 12: pending, held by alice: ...").
 */
#include "cli/commands.h"
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

/* PATCH each id with body; the first failure's exit code. */
static int patch_each(gp_client *c, char **ids, int n, json_t *body)
{
    int first = GP_EXIT_OK;
    for (int i = 0; i < n; i++) {
        char path[256];
        snprintf(path, sizeof path, "/v1/jobs/%.100s", ids[i]);
        gp_response resp;
        int rc = gp_client_run(c, "PATCH", path, body, &resp);
        if (rc == GP_EXIT_OK && !c->json)
            print_changed(resp.body);
        if (rc != GP_EXIT_OK && first == GP_EXIT_OK)
            first = rc;
        gp_response_free(&resp);
    }
    return first;
}

static int hold_or_release(gp_client *c, int argc, char **argv, bool hold)
{
    const char *name = hold ? "hold" : "release";
    if (argc < 2 || argv[1][0] == '-')
        return gp_usage_error(name, "usage: gpupool %s ID [ID...]", name);
    json_t *body = json_pack("{s:b}", "hold", hold);
    int rc = patch_each(c, argv + 1, argc - 1, body);
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

static const char UPDATE_USAGE[] = "usage: gpupool update ID [ID...] [--time-limit D] [--priority N] [--hold|--release]";

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
                 ? patch_each(c, argv + optind, argc - optind, body)
                 : gp_usage_error("update", "%s", UPDATE_USAGE);
    json_decref(body);
    return rc;
}

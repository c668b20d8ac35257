/* cmd_bookings.c - `gpupool book` (book capacity ahead: POST /v1/bookings)
 * and `gpupool bookings` (the calendar, one booking, cancel, extend,
 * shorten: GET, PATCH and DELETE /v1/bookings[/NAME]).
 *
 * The API speaks epoch seconds; here a person types local times
 * (timefmt.h: "2026-12-01T09:00", ISO 8601 with a zone, "+2h") and
 * durations (duration.h: "48h"), and reads the calendar in local time.
 * A refusal (409) prints the server's reason and, when the engine found
 * one, the earliest start of the same shape that it could honour:
 *
 *     $ gpupool book --type H100 --gpus 16 --start 2026-12-01T09:00 --duration 48h --name pretrain
 *     gpupool: error 409 conflict (field start): ...
 *     suggested start: 2026-12-03 09:00:00 (in 2d); book again with --start 2026-12-03T09:00:00
 *
 * `extend` and `shorten` read the booking first, so that a shorten never
 * moves the end later (or an extend earlier) by a typing slip.
 */
#include "cli/commands.h"
#include "cli/table.h"
#include "cli/timefmt.h"
#include "util/duration.h"

#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char BOOK_USAGE[] =
    "usage: gpupool book --type TYPE --gpus N --start TIME (--duration D | --end TIME) --name NAME\n"
    "                    [--topology any|block|nvlink] [--replica-gpus N] [--tenant PATH] [--no-lend]\n"
    "                    [--repeat daily|weekdays|weekly --until TIME]";
static const char BOOKINGS_USAGE[] = "usage: gpupool bookings [--tenant PATH] [--from TIME] [--to TIME]\n"
                                     "       gpupool bookings show|cancel NAME\n"
                                     "       gpupool bookings extend|shorten NAME --end TIME";

/* A time a person typed, as epoch seconds in body[key]; false with the
 * usage error printed. */
static bool time_field(const char *command, const char *flag, const char *text, json_t *body, const char *key)
{
    int64_t t;
    if (!gp_time_parse(text, (int64_t)time(NULL), &t)) {
        gp_usage_error(command, "--%s: expected YYYY-MM-DD[THH:MM[:SS]] (local time), ISO 8601 with a zone, +2h or"
                                " epoch seconds; got %s", flag, text);
        return false;
    }
    json_object_set_new(body, key, json_integer(t));
    return true;
}

static bool count_field(const char *flag, const char *text, json_t *body, const char *key)
{
    char *end;
    long long v = strtoll(text, &end, 10);
    if (!text[0] || *end || v < 1 || v > 1000000) {
        gp_usage_error("book", "--%s: expected a whole number 1..1000000; got %s", flag, text);
        return false;
    }
    json_object_set_new(body, key, json_integer(v));
    return true;
}

/* One book option into body; false with the usage error printed. */
static bool book_option(int ch, const char *arg, json_t *body)
{
    int64_t d;
    switch (ch) {
    case 'y': json_object_set_new(body, "gpu_type", json_string(arg)); return true;
    case 'g': return count_field("gpus", arg, body, "gpus");
    case 'r': return count_field("replica-gpus", arg, body, "replica_gpus");
    case 'p': json_object_set_new(body, "topology", json_string(arg)); return true;
    case 's': return time_field("book", "start", arg, body, "start");
    case 'e': return time_field("book", "end", arg, body, "end");
    case 'u': return time_field("book", "until", arg, body, "until");
    case 'n': json_object_set_new(body, "name", json_string(arg)); return true;
    case 't': json_object_set_new(body, "tenant", json_string(arg)); return true;
    case 'L': json_object_set_new(body, "lend", json_false()); return true;
    case 'R': json_object_set_new(body, "repeat", json_string(arg)); return true;
    case 'd':
        if (gp_duration_parse(arg, &d) && d > 0) {
            json_object_set_new(body, "duration_s", json_integer(d));
            return true;
        }
        gp_usage_error("book", "--duration: expected %s; got %s", GP_DURATION_FORMS, arg);
        return false;
    default: gp_usage_error("book", "%s", BOOK_USAGE); return false;
    }
}

static const char *local_minutes(const json_t *v, char *buf, size_t cap)
{
    if (!json_is_integer(v))
        return "-";
    gp_time_local(json_integer_value(v), buf, cap);
    if (strlen(buf) > 16)
        buf[16] = '\0'; /* "YYYY-MM-DD HH:MM": a calendar needs no seconds */
    return buf;
}

/* The refusal's suggestion, after the error line gp_client_check printed. */
static void print_suggestion(const json_t *reply)
{
    const json_t *s = json_object_get(reply, "suggested_start");
    if (!json_is_integer(s))
        return;
    char human[96], iso[32];
    gp_time_human(json_integer_value(s), (int64_t)time(NULL), human, sizeof human);
    gp_time_local(json_integer_value(s), iso, sizeof iso);
    iso[10] = 'T';
    fprintf(stderr, "suggested start: %s; book again with --start %s\n", human, iso);
}

static void print_booked(const json_t *b)
{
    char from[32], to[32];
    printf("booked %s: %lld %s %s for %s, %s .. %s (%s)\n", json_string_value(json_object_get(b, "name")),
           (long long)json_integer_value(json_object_get(b, "gpus")), json_string_value(json_object_get(b, "gpu_type")),
           json_string_value(json_object_get(b, "topology")), json_string_value(json_object_get(b, "tenant")),
           local_minutes(json_object_get(b, "start"), from, sizeof from),
           local_minutes(json_object_get(b, "end"), to, sizeof to), json_string_value(json_object_get(b, "state")));
}

/* A recurring booking's answer: each occurrence booked or refused. */
static void print_occurrences(const json_t *reply)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(reply, "occurrences"), i, o) {
        char when[32];
        const char *state = json_string_value(json_object_get(o, "state"));
        if (!state || strcmp(state, "refused") != 0) {
            print_booked(o);
            continue;
        }
        printf("refused %s at %s: %s\n", json_string_value(json_object_get(o, "name")),
               local_minutes(json_object_get(o, "start"), when, sizeof when),
               json_string_value(json_object_get(o, "reason")));
    }
}

int gp_cmd_book(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"type", required_argument, NULL, 'y'},   {"gpus", required_argument, NULL, 'g'},
        {"replica-gpus", required_argument, NULL, 'r'}, {"topology", required_argument, NULL, 'p'},
        {"start", required_argument, NULL, 's'},  {"end", required_argument, NULL, 'e'},
        {"duration", required_argument, NULL, 'd'}, {"name", required_argument, NULL, 'n'},
        {"tenant", required_argument, NULL, 't'}, {"no-lend", no_argument, NULL, 'L'},
        {"repeat", required_argument, NULL, 'R'}, {"until", required_argument, NULL, 'u'},
        {NULL, 0, NULL, 0}};
    json_t *body = json_object();
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (!book_option(ch, optarg, body)) {
            json_decref(body);
            return GP_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        json_decref(body);
        return gp_usage_error("book", "%s", BOOK_USAGE);
    }
    gp_response resp;
    int rc = gp_client_send(c, "POST", "/v1/bookings", body, &resp);
    json_decref(body);
    if (rc)
        return rc;
    rc = gp_client_finish(c, &resp);
    if (rc == GP_EXIT_CONFLICT)
        print_suggestion(resp.body);
    else if (rc == GP_EXIT_OK && !c->json && json_object_get(resp.body, "occurrences"))
        print_occurrences(resp.body);
    else if (rc == GP_EXIT_OK && !c->json)
        print_booked(resp.body);
    gp_response_free(&resp);
    return rc;
}

/* ---- the calendar ---- */

static void calendar_row(gp_table *t, const json_t *b)
{
    char day[16], start[32], end[32], gpus[24];
    time_t at = (time_t)json_integer_value(json_object_get(b, "start"));
    struct tm tm;
    localtime_r(&at, &tm);
    strftime(day, sizeof day, "%a", &tm);
    snprintf(gpus, sizeof gpus, "%lld", (long long)json_integer_value(json_object_get(b, "gpus")));
    const char *cells[] = {day,
                           local_minutes(json_object_get(b, "start"), start, sizeof start),
                           local_minutes(json_object_get(b, "end"), end, sizeof end),
                           json_string_value(json_object_get(b, "name")),
                           json_string_value(json_object_get(b, "tenant")),
                           json_string_value(json_object_get(b, "gpu_type")),
                           gpus,
                           json_string_value(json_object_get(b, "topology")),
                           json_is_false(json_object_get(b, "lend")) ? "no" : "yes",
                           json_string_value(json_object_get(b, "state"))};
    gp_table_add(t, cells);
}

/* The allowances the caller sees: "allowance /org: 40 of 100 GPU-hours left this week". */
static void print_allowances(const json_t *reply)
{
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(reply, "allowances"), i, a) {
        printf("allowance /%s: %.1f of %.1f GPU-hours left this week\n", json_string_value(json_object_get(a, "org")),
               json_number_value(json_object_get(a, "gpu_hours_left")),
               json_number_value(json_object_get(a, "gpu_hours_per_week")));
    }
}

static int bookings_list(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"tenant", required_argument, NULL, 't'},
                                         {"from", required_argument, NULL, 'f'},
                                         {"to", required_argument, NULL, 'T'},
                                         {NULL, 0, NULL, 0}};
    char path[1024] = "/v1/bookings";
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int64_t t;
        char epoch[32];
        if (ch == 't') {
            gp_query_add(c, path, sizeof path, "tenant", optarg);
            continue;
        }
        if (ch == '?' || !gp_time_parse(optarg, (int64_t)time(NULL), &t))
            return gp_usage_error("bookings", ch == '?' ? "%s" : "expected a time (YYYY-MM-DD[THH:MM], +2h, ...); got %s",
                                  ch == '?' ? BOOKINGS_USAGE : optarg);
        snprintf(epoch, sizeof epoch, "%lld", (long long)t);
        gp_query_add(c, path, sizeof path, ch == 'f' ? "from" : "to", epoch);
    }
    if (optind < argc)
        return gp_usage_error("bookings", "%s", BOOKINGS_USAGE);
    gp_response resp;
    int rc = gp_client_run(c, "GET", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        static const char *const head[] = {"DAY", "START", "END", "NAME", "TENANT", "TYPE", "GPUS", "TOPOLOGY",
                                           "LENDS", "STATE"};
        gp_table t;
        gp_table_init(&t, 10, head);
        size_t i;
        json_t *b;
        json_array_foreach(json_object_get(resp.body, "bookings"), i, b)
            calendar_row(&t, b);
        gp_table_print(&t, stdout);
        print_allowances(resp.body);
    }
    gp_response_free(&resp);
    return rc;
}

/* ---- one booking ---- */

static void print_placement(const json_t *b)
{
    size_t i;
    json_t *p;
    printf("placement:\n");
    if (json_array_size(json_object_get(b, "placement")) == 0)
        printf("  (none yet: GPUs are chosen and cleared before the start)\n");
    json_array_foreach(json_object_get(b, "placement"), i, p) {
        printf("  %s: %lld GPUs\n", json_string_value(json_object_get(p, "node")),
               (long long)json_integer_value(json_object_get(p, "gpus")));
    }
}

static void print_cleared(const json_t *b)
{
    size_t i;
    json_t *x;
    if (json_array_size(json_object_get(b, "cleared")) == 0)
        return;
    printf("cleared for it:\n");
    json_array_foreach(json_object_get(b, "cleared"), i, x) {
        printf("  job %lld: %s\n", (long long)json_integer_value(json_object_get(x, "job")),
               json_string_value(json_object_get(x, "how")));
    }
}

static void print_booking(const json_t *b)
{
    char start[96], end[96];
    int64_t now = (int64_t)time(NULL);
    printf("booking:   %s\n", json_string_value(json_object_get(b, "name")));
    printf("tenant:    %s (booked by %s)\n", json_string_value(json_object_get(b, "tenant")),
           json_string_value(json_object_get(b, "created_by")) ? json_string_value(json_object_get(b, "created_by"))
                                                               : "-");
    printf("gpus:      %lld %s, topology %s\n", (long long)json_integer_value(json_object_get(b, "gpus")),
           json_string_value(json_object_get(b, "gpu_type")), json_string_value(json_object_get(b, "topology")));
    printf("start:     %s\n", gp_time_human(json_integer_value(json_object_get(b, "start")), now, start, sizeof start));
    printf("end:       %s\n", gp_time_human(json_integer_value(json_object_get(b, "end")), now, end, sizeof end));
    printf("lends:     %s\n", json_is_false(json_object_get(b, "lend")) ? "no (held idle when unused)"
                                                                        : "yes (idle GPUs lent, taken back on demand)");
    printf("state:     %s\n", json_string_value(json_object_get(b, "state")));
    const char *reason = json_string_value(json_object_get(b, "reason"));
    if (reason && reason[0])
        printf("reason:    %s\n", reason);
    print_placement(b);
    print_cleared(b);
}

static int booking_path(const char *command, const char *name, char *path, size_t cap)
{
    if (!name[0] || strchr(name, '/') || strchr(name, '?') || strlen(name) > 63)
        return gp_usage_error(command, "a booking name is 1..63 characters without / or ?; got %s", name);
    snprintf(path, cap, "/v1/bookings/%s", name);
    return GP_EXIT_OK;
}

static int bookings_show(gp_client *c, const char *name, const char *method)
{
    char path[128];
    int rc = booking_path("bookings", name, path, sizeof path);
    gp_response resp;
    if (rc || (rc = gp_client_run(c, method, path, NULL, &resp)) != GP_EXIT_OK)
        return rc;
    if (!c->json && strcmp(method, "GET") == 0)
        print_booking(resp.body);
    else if (!c->json)
        printf("cancelled booking %s\n", name);
    gp_response_free(&resp);
    return rc;
}

/* extend (later == true) or shorten NAME --end TIME. */
static int bookings_move_end(gp_client *c, int argc, char **argv, bool later)
{
    static const struct option opts[] = {{"end", required_argument, NULL, 'e'}, {NULL, 0, NULL, 0}};
    json_t *body = json_object();
    int ch, rc = GP_EXIT_OK;
    optind = 0;
    while (rc == GP_EXIT_OK && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
        rc = ch == 'e' && time_field("bookings", "end", optarg, body, "end") ? GP_EXIT_OK : GP_EXIT_USAGE;
    char path[128];
    if (rc == GP_EXIT_OK && (optind != argc - 1 || !json_object_get(body, "end")))
        rc = gp_usage_error("bookings", "%s", BOOKINGS_USAGE);
    if (rc == GP_EXIT_OK)
        rc = booking_path("bookings", argv[optind], path, sizeof path);
    gp_response have = {0}, resp = {0};
    bool quiet = c->json;
    c->json = false; /* the first read is ours, not the answer */
    if (rc == GP_EXIT_OK)
        rc = gp_client_run(c, "GET", path, NULL, &have);
    c->json = quiet;
    int64_t end = json_integer_value(json_object_get(body, "end")),
            old = json_integer_value(json_object_get(have.body, "end"));
    if (rc == GP_EXIT_OK && (later ? end <= old : end >= old))
        rc = gp_usage_error("bookings", "%s moves the end %s; the booking ends at %lld, --end says %lld",
                            later ? "extend" : "shorten", later ? "later" : "earlier", (long long)old, (long long)end);
    if (rc == GP_EXIT_OK)
        rc = gp_client_run(c, "PATCH", path, body, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        print_booking(resp.body);
    json_decref(body);
    gp_response_free(&have);
    gp_response_free(&resp);
    return rc;
}

int gp_cmd_bookings(gp_client *c, int argc, char **argv)
{
    const char *verb = argc > 1 ? argv[1] : "";
    if ((strcmp(verb, "show") == 0 || strcmp(verb, "cancel") == 0) && argc == 3)
        return bookings_show(c, argv[2], verb[0] == 's' ? "GET" : "DELETE");
    if (strcmp(verb, "extend") == 0 || strcmp(verb, "shorten") == 0)
        return bookings_move_end(c, argc - 1, argv + 1, verb[0] == 'e');
    if (argc > 1 && verb[0] != '-')
        return gp_usage_error("bookings", "%s", BOOKINGS_USAGE);
    return bookings_list(c, argc, argv);
}

/* cmd_why.c - gpupool why ID: why a job is where it is, and what would
 * change it.
 *
 * The server says why in a sentence ("reason") and, for a pending job, as
 * data: "wait" (the blocker the pass met first: the code, the tenant, the
 * resource, the amounts, the other job) and "blockers" (every one of them;
 * docs/api.md).  This command prints the reason and each blocker with what
 * a person can do about it, e.g. for a job above its team's and its org's
 * limits, on a fleet whose free blocks are too small for it anyway:
 *
 *     job 42 (platform/eval, alice): pending
 *     reason:    cannot run while the limit stands: it needs 16 GPUs ...
 *     blocked:   the shape of the fleet: no node or domain can ever hold it
 *     to change: ask for fewer GPUs per replica, a looser topology, ...
 *     blocked:   the limit of platform/eval on H100: 0 in use + 16 asked > 8
 *     to change: raising it alone starts nothing: the fleet's shape above
 *                blocks it at any limit; ask for less, or lift that first
 *     blocked:   the limit of platform on H100: 0 in use + 16 asked > 12
 *     to change: ...
 *
 * The advice is presentation only: the server decides nothing from it.
 */
#include "cli/commands.h"

#include "cli/timefmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *field(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "?";
}

/* Whether a wait is the fleet's shape: no node, block or mode of the
 * fleet could hold the job whatever the limits say. */
static bool is_shape(const json_t *w)
{
    static const char *const codes[] = {"topology", "node_shape", "no_gpu_type", "sharing_mode"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(field(w, "code"), codes[i]) == 0)
            return true;
    return false;
}

/* A limit's lines.  Waiting for jobs to end is advice only when some are
 * running and the job fits the limit by itself; raising it is advice only
 * when the fleet's shape does not block the job anyway (shape). */
static void print_limit(const json_t *w, const char *flag, const char *what, bool shape)
{
    char usage[32], demand[32], limit[32], need[32];
    gp_cell(json_object_get(w, "usage"), usage, sizeof usage);
    gp_cell(json_object_get(w, "demand"), demand, sizeof demand);
    gp_cell(json_object_get(w, "limit"), limit, sizeof limit);
    double in_use = json_number_value(json_object_get(w, "usage"));
    bool alone = json_number_value(json_object_get(w, "demand")) > json_number_value(json_object_get(w, "limit"));
    snprintf(need, sizeof need, "%g", in_use + json_number_value(json_object_get(w, "demand")));
    printf("blocked:   the %s of %s on %s: %s in use + %s asked > %s\n", what, field(w, "tenant"), field(w, "resource"),
           usage, demand, limit);
    if (shape) {
        printf("to change: raising it alone starts nothing: the fleet's shape above blocks it at any limit;\n"
               "           ask for less, or lift that first\n");
        return;
    }
    if (in_use > 0 && !alone)
        printf("to change: wait for the %s in use under %s to end, ask for less, or have an admin raise it:\n", usage,
               field(w, "tenant"));
    else
        printf("to change: ask for at most %s, or have an admin raise it (waiting does not help):\n", limit);
    printf("           gpupool quota set %s %s %s=%s\n", field(w, "tenant"), flag, field(w, "resource"), need);
}

/* The "blocked" and "to change" lines for one wait code. */
static void print_advice(const json_t *job, const json_t *w, bool shape, int64_t now)
{
    const char *code = field(w, "code");
    char when[96];
    json_t *t = json_object_get(w, "time");
    const char *at = json_is_integer(t) ? gp_time_human(json_integer_value(t), now, when, sizeof when) : "unknown";
    if (strcmp(code, "limit") == 0)
        print_limit(w, "--limit", "limit", shape);
    else if (strcmp(code, "user_limit") == 0)
        print_limit(w, "--user-limit", "per-user limit", shape);
    else if (strcmp(code, "capacity") == 0)
        printf("blocked:   the fleet: no room of the kind it asks for right now\n"
               "to change: nothing needed, it starts when room frees up; to start sooner ask for fewer GPUs,\n"
               "           more GPU types (--gpu-type), or a looser topology\n");
    else if (strcmp(code, "reservation") == 0)
        printf("blocked:   job %lld, which holds the reservation (starts %s)\n"
               "to change: give the job an expected runtime or time limit short enough to finish first\n"
               "           (--runtime / --time-limit), so it can backfill\n",
               (long long)json_integer_value(json_object_get(w, "job")), at);
    else if (strcmp(code, "reserved") == 0)
        printf("blocked:   nothing: it is first in line, expected to start %s\n", at);
    else if (strcmp(code, "reclaim") == 0)
        printf("blocked:   borrowed GPUs being returned to %s; their grace ends %s\n"
               "to change: nothing: it starts when the borrowers have stopped\n", field(w, "tenant"), at);
    else if (strcmp(code, "lending") == 0)
        printf("blocked:   idle GPUs kept for tenants that do not lend their guarantee\n"
               "to change: wait, or ask those tenants' admins to set lend: true\n");
    else if (strcmp(code, "trust") == 0)
        printf("blocked:   %s is untrusted, and %s is shared with other tenants\n"
               "to change: cancel and resubmit as exclusive or mig, or have an admin trust %s\n",
               field(w, "tenant"), field(job, "isolation"), field(w, "tenant"));
    else if (strcmp(code, "dedicated") == 0 && strcmp(field(w, "by"), "pool") == 0)
        printf("blocked:   its free GPUs are in pool %s owned by tenant %s, which does not lend them\n"
               "to change: nothing: it starts once other nodes have room, or when %s lends (lend: true)\n",
               field(w, "pool"), field(w, "tenant"), field(w, "tenant"));
    else if (strcmp(code, "dedicated") == 0 && strcmp(field(w, "by"), "own") == 0)
        printf("blocked:   %s has dedicated nodes, and the free GPUs that would hold it are on nodes running\n"
               "           other tenants' jobs\n"
               "to change: nothing: it starts once a node with room runs nothing from outside %s\n",
               field(w, "tenant"), field(w, "tenant"));
    else if (strcmp(code, "dedicated") == 0)
        printf("blocked:   %lld free GPUs are on nodes dedicated to %s, which shares a node with no one\n"
               "to change: nothing: it starts once other nodes have room or %s's jobs there end\n",
               (long long)json_integer_value(json_object_get(w, "free")), field(w, "tenant"), field(w, "tenant"));
    else if (strcmp(code, "topology") == 0 || strcmp(code, "node_shape") == 0)
        printf("blocked:   the shape of the fleet: no node or domain can ever hold it\n"
               "to change: ask for fewer GPUs per replica or fewer replicas%s, or less CPU/memory;\n"
               "           or wait for bigger nodes\n",
               strcmp(field(job, "topology"), "any") == 0 ? "" : ", a looser topology");
    else if (strcmp(code, "no_gpu_type") == 0 && json_array_size(json_object_get(job, "no_node_yet")) > 0)
        printf("blocked:   no node of its GPU types has joined the fleet yet (declared by an admin)\n"
               "to change: nothing: it starts once such a node registers; or accept other GPU types\n"
               "           (gpupool gpu-types lists them)\n");
    else if (strcmp(code, "no_gpu_type") == 0 || strcmp(code, "sharing_mode") == 0)
        printf("blocked:   the fleet has no usable GPU of the accepted types in this sharing mode\n"
               "to change: accept other GPU types (gpupool nodes lists them) or another isolation\n");
    else if (strcmp(code, "new") == 0)
        printf("blocked:   nothing yet: the next scheduling pass looks at it (within a second)\n");
    else if (strcmp(code, "backoff") == 0)
        printf("blocked:   its restart after a failure waits out a back-off (restart %lld of %lld): %s\n"
               "to change: nothing: it is placed again then; gpupool logs %lld shows why it failed\n",
               (long long)json_integer_value(json_object_get(w, "restarts")),
               (long long)json_integer_value(json_object_get(w, "max_restarts")), at,
               (long long)json_integer_value(json_object_get(job, "id")));
}

/* Every blocker the server found (`blockers`), else the one it waits
 * for (`wait`), each with its advice. */
static void print_blockers(const json_t *job, int64_t now)
{
    json_t *list = json_object_get(job, "blockers"), *w;
    if (!json_is_array(list) || json_array_size(list) == 0)
        list = json_object_get(job, "wait");
    if (json_is_object(list)) {
        print_advice(job, list, is_shape(list), now);
        return;
    }
    bool shape = false;
    size_t i;
    json_array_foreach(list, i, w)
        shape |= is_shape(w);
    json_array_foreach(list, i, w)
        print_advice(job, w, shape, now);
}

int gp_cmd_why(gp_client *c, int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-')
        return gp_usage_error("why", "usage: gpupool why ID|ID_N");
    char path[256];
    uint64_t id;
    int rc;
    if (!gp_one_job_id(c, "why", argv[1], &id, &rc))
        return rc;
    snprintf(path, sizeof path, "/v1/jobs/%llu", (unsigned long long)id);
    gp_response resp;
    rc = gp_client_run(c, "GET", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        const json_t *j = resp.body;
        char reason[512];
        int64_t now = (int64_t)time(NULL);
        const char *r = json_string_value(json_object_get(j, "reason"));
        printf("job %lld (%s, %s): %s\n", (long long)json_integer_value(json_object_get(j, "id")), field(j, "tenant"),
               json_string_value(json_object_get(j, "user")) ? field(j, "user") : "no user", field(j, "state"));
        printf("reason:    %s\n", r ? gp_time_in_text(r, now, reason, sizeof reason) : "-");
        print_blockers(j, now);
    }
    gp_response_free(&resp);
    return rc;
}

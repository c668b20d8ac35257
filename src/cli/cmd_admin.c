/* cmd_admin.c - gpupool nodes [show NAME | approve NAME | remove NAME] (drain: cmd_drain.c), tenants, quota set, apply, usage,
 * token create|list|revoke, audit [verify], admin export-log.
 */
#include "cli/commands.h"

#include "cli/suggest.h"
#include "cli/table.h"
#include "cli/timefmt.h"
#include "util/duration.h"
#include "spec/yaml_json.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- nodes ---- */

/* A node's sharing mode ("mixed" when its GPUs differ) and, for shared
 * GPUs, how much of them is in use: "0.428/8" (GPUs of share in use, of
 * the node's shared GPUs); "-" for whole-GPU nodes. */
static void shared_use(const json_t *node, char *mode, size_t mode_cap, char *use, size_t use_cap)
{
    size_t i, shared = 0;
    json_t *g;
    int64_t milli = 0;
    const char *first = NULL;
    bool mixed = false;
    json_array_foreach(json_object_get(node, "gpus"), i, g) {
        const char *m = json_string_value(json_object_get(g, "sharing"));
        if (!m)
            continue;
        mixed = mixed || (first && strcmp(first, m) != 0);
        first = first ? first : m;
        if (strcmp(m, "exclusive") != 0) {
            shared++;
            milli += json_integer_value(json_object_get(g, "used_milli_gpus"));
        }
    }
    snprintf(mode, mode_cap, "%s", mixed ? "mixed" : first ? first : "-");
    if (shared == 0)
        snprintf(use, use_cap, "-");
    else
        snprintf(use, use_cap, "%lld.%03lld/%zu", (long long)(milli / 1000), (long long)(milli % 1000), shared);
}

/* One GPU's row of `nodes show`: index, uuid, health, since, last check, reason. */
static void gpu_health_row(gp_table *t, const json_t *g, int64_t now)
{
    const json_t *h = json_object_get(g, "health"), *last = json_object_get(h, "last_check");
    char index[16], since[48] = "-", check[160] = "-";
    snprintf(index, sizeof index, "%lld", (long long)json_integer_value(json_object_get(g, "index")));
    if (json_is_integer(json_object_get(h, "since")))
        gp_time_human(json_integer_value(json_object_get(h, "since")), now, since, sizeof since);
    if (json_is_object(last)) {
        char at[48];
        gp_time_age(json_integer_value(json_object_get(last, "at")), now, at, sizeof at);
        snprintf(check, sizeof check, "%s %s %s", json_string_value(json_object_get(last, "check")),
                 json_is_true(json_object_get(last, "passed")) ? "passed" : "failed", at);
    }
    const char *reason = json_string_value(json_object_get(h, "reason"));
    bool healthy = json_is_true(json_object_get(g, "healthy"));
    const char *cells[] = {index, json_string_value(json_object_get(g, "uuid")), healthy ? "healthy" : "unhealthy",
                           since, check, healthy || !reason ? "-" : reason};
    gp_table_add(t, cells);
}

/* Each GPU's XIDs, newest first: "GPU 1: XID 79 reboot_node 2 minutes ago, ...". */
static void gpu_xids(const json_t *gpus, int64_t now)
{
    size_t i, k;
    json_t *g, *x;
    json_array_foreach(gpus, i, g) {
        const json_t *xids = json_object_get(json_object_get(g, "health"), "xids");
        if (json_array_size(xids) == 0)
            continue;
        printf("GPU %lld XIDs:", (long long)json_integer_value(json_object_get(g, "index")));
        json_array_foreach(xids, k, x) {
            char at[48];
            gp_time_age(json_integer_value(json_object_get(x, "at")), now, at, sizeof at);
            printf("%s XID %lld %s %s", k ? "," : "", (long long)json_integer_value(json_object_get(x, "xid")),
                   json_string_value(json_object_get(x, "action")) ? json_string_value(json_object_get(x, "action"))
                                                                   : "-",
                   at);
        }
        printf("\n");
    }
}

/* A node's drain as REASON shows it, "kernel 6.19 (alice)" or "by alice"
 * when none was said; "-" for a node that does not drain. */
static const char *drain_reason(const json_t *drain, char *out, size_t cap)
{
    const char *reason = json_string_value(json_object_get(drain, "reason"));
    const char *by = json_string_value(json_object_get(drain, "by"));
    if (!json_is_object(drain))
        snprintf(out, cap, "-");
    else if (reason && reason[0])
        snprintf(out, cap, "%s (%s)", reason, by ? by : "-");
    else
        snprintf(out, cap, "by %s", by ? by : "-");
    return out;
}

/* `nodes show`'s line of a drain: "drain: kernel 6.19; by alice since
 * 2026-12-08 01:02:03 (5m ago)"; nothing for a node that does not drain. */
static void drain_line(const json_t *drain, int64_t now)
{
    if (!json_is_object(drain))
        return;
    const char *reason = json_string_value(json_object_get(drain, "reason"));
    char since[64];
    gp_time_human(json_integer_value(json_object_get(drain, "since")), now, since, sizeof since);
    printf("drain: %s; by %s since %s\n", reason && reason[0] ? reason : "no reason given",
           json_string_value(json_object_get(drain, "by")), since);
}

/* gpupool nodes show NAME: the node and, per GPU, its health. */
static int nodes_show(gp_client *c, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/nodes/%.100s", name);
    gp_response resp;
    int rc = gp_client_run(c, "GET", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        const json_t *n = resp.body;
        int64_t now = (int64_t)time(NULL);
        printf("node %s: %s x%lld, block %s, %s%s, %lld/%lld GPUs healthy\n", json_string_value(json_object_get(n, "name")),
               json_string_value(json_object_get(n, "gpu_type")), (long long)json_integer_value(json_object_get(n, "gpu_count")),
               json_string_value(json_object_get(n, "block")), json_is_true(json_object_get(n, "up")) ? "up" : "down",
               json_is_true(json_object_get(n, "drained"))    ? ", drained"
               : json_is_true(json_object_get(n, "draining")) ? ", draining"
                                                              : "",
               (long long)json_integer_value(json_object_get(n, "gpus_healthy")),
               (long long)json_integer_value(json_object_get(n, "gpu_count")));
        drain_line(json_object_get(n, "drain"), now);
        static const char *const head[] = {"GPU", "UUID", "HEALTH", "SINCE", "LAST-CHECK", "REASON"};
        gp_table t;
        gp_table_init(&t, 6, head);
        size_t i;
        json_t *g;
        json_array_foreach(json_object_get(n, "gpus"), i, g)
            gpu_health_row(&t, g, now);
        gp_table_print(&t, stdout);
        gpu_xids(json_object_get(n, "gpus"), now);
        printf("jobs:");
        json_array_foreach(json_object_get(n, "jobs"), i, g)
            printf(" %lld", (long long)json_integer_value(g));
        printf("%s\n", json_array_size(json_object_get(n, "jobs")) ? "" : " none you may see");
    }
    gp_response_free(&resp);
    return rc;
}

/* gpupool nodes approve NAME: a node awaiting approval takes work; any
 * other node's next join-token registration is let in, once.  gpupool
 * nodes remove NAME (admin, issue 33): its credentials and certificates
 * refused from now on, its jobs requeued.  Both print the answer's note. */
static int nodes_act(gp_client *c, const char *method, const char *suffix, const char *name, const char *done)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/nodes/%.100s%s", name, suffix);
    gp_response resp;
    int rc = gp_client_run(c, method, path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        printf("node %s %s: %s\n", name, done, json_string_value(json_object_get(resp.body, "note")));
    gp_response_free(&resp);
    return rc;
}

int gp_cmd_nodes(gp_client *c, int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "show") == 0)
        return nodes_show(c, argv[2]);
    if (argc == 3 && strcmp(argv[1], "approve") == 0)
        return nodes_act(c, "POST", "/approve", argv[2], "approved");
    if (argc == 3 && strcmp(argv[1], "remove") == 0)
        return nodes_act(c, "DELETE", "", argv[2], "removed");
    if (argc > 1 && (strcmp(argv[1], "drain") == 0 || strcmp(argv[1], "undrain") == 0 ||
                     strcmp(argv[1], "resume") == 0))
        return gp_cmd_nodes_drain(c, argc - 1, argv + 1);
    if (argc > 1)
        return gp_usage_error(argv[0], "usage: gpupool nodes [show NAME | approve NAME | remove NAME | drain|undrain NODE...]");
    gp_response resp;
    int rc = gp_client_run(c, "GET", "/v1/nodes", NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        static const char *const head[] = {"NAME", "BLOCK", "TYPE", "GPUS", "FREE", "SHARING", "SHARED-USE", "HEALTH",
                                           "STATE", "REASON"};
        static const int drop[] = {6, 5, 1, -1}; /* the least needed first; then REASON is cut */
        gp_table t;
        gp_table_init(&t, 10, head);
        size_t i;
        json_t *n;
        json_array_foreach(json_object_get(resp.body, "nodes"), i, n) {
            char gpus[16], free_[16], mode[16], use[32], health[32], reason[320];
            snprintf(gpus, sizeof gpus, "%lld", (long long)json_integer_value(json_object_get(n, "gpu_count")));
            snprintf(free_, sizeof free_, "%lld", (long long)json_integer_value(json_object_get(n, "gpus_free")));
            snprintf(health, sizeof health, "%lld/%lld", (long long)json_integer_value(json_object_get(n, "gpus_healthy")),
                     (long long)json_integer_value(json_object_get(n, "gpu_count")));
            shared_use(n, mode, sizeof mode, use, sizeof use);
            const char *state = !json_is_true(json_object_get(n, "up"))        ? "down"
                                : json_is_true(json_object_get(n, "drained"))  ? "drained"
                                : json_is_true(json_object_get(n, "draining")) ? "draining"
                                                                                : "up";
            const char *cells[] = {json_string_value(json_object_get(n, "name")),
                                   json_string_value(json_object_get(n, "block")),
                                   json_string_value(json_object_get(n, "gpu_type")), gpus, free_, mode, use, health,
                                   state, drain_reason(json_object_get(n, "drain"), reason, sizeof reason)};
            gp_table_add(&t, cells);
        }
        gp_table_fit(&t, gp_table_width(), drop);
        gp_table_print(&t, stdout);
    }
    gp_response_free(&resp);
    return rc;
}

/* ---- tenants ---- */

static bool in_subtree(const char *root, const char *path)
{
    size_t n = strlen(root);
    return !root[0] || (strncmp(root, path, n) == 0 && (path[n] == '\0' || path[n] == '/'));
}

/* The volumes' names, "a,b" ("-" when none), into out. */
static const char *volume_names(const json_t *volumes, char *out, size_t cap)
{
    size_t i, used = 0;
    json_t *v;
    snprintf(out, cap, "-");
    json_array_foreach(volumes, i, v) {
        int n = snprintf(out + used, cap - used, "%s%s", i ? "," : "", json_string_value(json_object_get(v, "name")));
        used = n < 0 || (size_t)n >= cap - used ? cap - 1 : used + (size_t)n;
    }
    return out;
}

static void add_tenant_row(gp_table *t, const json_t *n)
{
    char g[256], l[256], u[256], pending[16], running[16], images[32], volumes[256];
    const json_t *sources = json_object_get(n, "image_sources");
    if (json_is_array(sources))
        snprintf(images, sizeof images, "%zu sources", json_array_size(sources));
    else
        snprintf(images, sizeof images, "any");
    snprintf(pending, sizeof pending, "%lld", (long long)json_integer_value(json_object_get(n, "pending_jobs")));
    snprintf(running, sizeof running, "%lld", (long long)json_integer_value(json_object_get(n, "running_jobs")));
    const char *cells[] = {json_string_value(json_object_get(n, "path")),
                           gp_gpu_summary(json_object_get(n, "guarantee"), g, sizeof g),
                           gp_gpu_summary(json_object_get(n, "limit"), l, sizeof l),
                           gp_gpu_summary(json_object_get(n, "usage"), u, sizeof u),
                           pending,
                           running,
                           json_string_value(json_object_get(n, "trust")),
                           json_string_value(json_object_get(n, "container")),
                           images,
                           volume_names(json_object_get(n, "volumes"), volumes, sizeof volumes)};
    gp_table_add(t, cells);
}

/* No tenant at root among those the caller sees: exit 5, with the nearest path. */
static int no_such_tenant(const char *root, const json_t *tenants)
{
    const char *paths[512];
    size_t n = 0, i;
    json_t *t;
    json_array_foreach(tenants, i, t) {
        if (n < 512 && json_is_string(json_object_get(t, "path")))
            paths[n++] = json_string_value(json_object_get(t, "path"));
    }
    const char *near = gp_suggest(root, paths, n);
    fprintf(stderr, "gpupool: no tenant %s%s%s%s\n", root, near ? " (did you mean " : "", near ? near : "",
            near ? "?)" : "");
    return GP_EXIT_NOT_FOUND;
}

static int tenant_spec_command(gp_client *c, int argc, char **argv, const char *verb);

/* DELETE path; prints "WHAT NAME DONE" ("token 1a2b revoked") on success. */
static int delete_one(gp_client *c, const char *path, const char *what, const char *name, const char *done)
{
    gp_response resp;
    int rc = gp_client_run(c, "DELETE", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        printf("%s %s %s\n", what, name, done);
    gp_response_free(&resp);
    return rc;
}

static int tenant_delete(gp_client *c, int argc, char **argv)
{
    if (argc != 3 || argv[2][0] == '-')
        return gp_usage_error(argv[0], "usage: gpupool tenants delete PATH");
    char path[512];
    snprintf(path, sizeof path, "/v1/tenants/%.300s", argv[2]);
    return delete_one(c, path, "tenant", argv[2], "deleted");
}

int gp_cmd_tenants(gp_client *c, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "create") == 0)
        return tenant_spec_command(c, argc, argv, "create");
    if (argc >= 2 && strcmp(argv[1], "delete") == 0)
        return tenant_delete(c, argc, argv);
    if (argc > 2 || (argc == 2 && argv[1][0] == '-'))
        return gp_usage_error(argv[0], "usage: gpupool tenants [PATH]");
    const char *root = argc == 2 ? argv[1] : "";
    gp_response resp;
    int rc = gp_client_call(c, "GET", "/v1/tenants", NULL, NULL, 0, &resp);
    if (rc == GP_EXIT_OK)
        rc = gp_client_check(&resp);
    json_t *all = rc == GP_EXIT_OK ? json_object_get(resp.body, "tenants") : NULL, *shown = json_array();
    size_t i;
    json_t *n;
    json_array_foreach(all, i, n) {
        const char *path = json_string_value(json_object_get(n, "path"));
        if (path && in_subtree(root, path))
            json_array_append(shown, n);
    }
    if (rc == GP_EXIT_OK && root[0] && json_array_size(shown) == 0)
        rc = no_such_tenant(root, all);
    if (rc == GP_EXIT_OK && c->json) {
        json_t *out = json_pack("{s:O}", "tenants", shown);
        json_dumpf(out, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(out);
    } else if (rc == GP_EXIT_OK) {
        static const char *const head[] = {"PATH",    "GUARANTEE", "LIMIT",     "USAGE",  "PENDING",
                                           "RUNNING", "TRUST",     "CONTAINER", "IMAGES", "VOLUMES"};
        gp_table t;
        gp_table_init(&t, 10, head);
        json_array_foreach(shown, i, n)
            add_tenant_row(&t, n);
        gp_table_print(&t, stdout);
    }
    json_decref(shown);
    gp_response_free(&resp);
    return rc;
}

/* "H100=16,A100=0.5,cpu_millis=1000,mem_mib=4096" -> {"gpu": {...}, ...} */
static json_t *parse_quota(const char *text)
{
    json_t *q = json_object(), *gpu = json_object();
    char *copy = strdup(text), *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            json_decref(q);
            json_decref(gpu);
            free(copy);
            return NULL;
        }
        *eq = '\0';
        json_t *num = gp_json_number_or_string(eq + 1); /* the server checks the amount, naming the field */
        if (strcmp(item, "cpu_millis") == 0 || strcmp(item, "mem_mib") == 0)
            json_object_set_new(q, item, num);
        else
            json_object_set_new(gpu, item, num);
    }
    free(copy);
    json_object_set_new(q, "gpu", gpu);
    return q;
}

/* "pids_max=4096,mem_mib=65536" -> {"pids_max": 4096, "mem_mib": 65536}
 * (job_defaults, job_max: the server names a bad field); NULL without '='. */
static json_t *parse_job_limits(const char *text)
{
    json_t *o = json_object();
    char *copy = strdup(text), *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); o && item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (eq) {
            *eq = '\0';
            json_object_set_new(o, item, gp_json_number_or_string(eq + 1));
        } else {
            json_decref(o);
            o = NULL;
        }
    }
    free(copy);
    return o;
}

/* --lend yes|no (or true|false) as a boolean; anything else goes as the
 * text, for the server to refuse naming `lend`. */
static json_t *lend_value(const char *text)
{
    if (strcmp(text, "yes") == 0 || strcmp(text, "true") == 0)
        return json_true();
    if (strcmp(text, "no") == 0 || strcmp(text, "false") == 0)
        return json_false();
    return json_string(text);
}

static const char QUOTA_USAGE[] = "usage: gpupool quota set PATH [--guarantee TYPE=N,...] [--limit TYPE=N,...]"
                                  " [--user-limit TYPE=N,...] [--weight W] [--lend yes|no] [--trust trusted|untrusted]"
                                  " [--job-defaults FIELD=N,...] [--job-max FIELD=N,...] [--nodes shared|dedicated]";
static const char TENANTS_CREATE_USAGE[] = "usage: gpupool tenants create PATH [--guarantee TYPE=N,...] [--limit ...]"
                                           " [--user-limit ...] [--weight W] [--lend yes|no] [--trust ...]"
                                           " [--job-defaults FIELD=N,...] [--job-max FIELD=N,...] [--nodes shared|dedicated]";

/* A value of a change as a person reads it: null is "(none)". */
static const char *change_value(const json_t *v, char *buf, size_t cap)
{
    if (json_is_null(v) || !v)
        return "(none)";
    if (json_is_object(v) || json_is_array(v)) {
        char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        snprintf(buf, cap, "%s", text ? text : "?");
        free(text);
        return buf;
    }
    return gp_cell(v, buf, cap);
}

/* The server's "changes" as a diff: "+ ml/eval", "+ ml/eval  guarantee.gpu.H100: (none) -> 4",
 * "~ ml  limit.gpu.L40S: 8 -> (none)", "- ml/old". */
static void print_changes(const json_t *changes)
{
    size_t i;
    json_t *ch;
    json_array_foreach(changes, i, ch) {
        const char *op = json_string_value(json_object_get(ch, "op")), *field;
        char sign = !op ? '?' : strcmp(op, "create") == 0 ? '+' : strcmp(op, "delete") == 0 ? '-' : '~';
        char from[256], to[256];
        field = json_string_value(json_object_get(ch, "field"));
        if (!field)
            printf("%c %s\n", sign, json_string_value(json_object_get(ch, "path")));
        else
            printf("%c %s  %s: %s -> %s\n", sign, json_string_value(json_object_get(ch, "path")), field,
                   change_value(json_object_get(ch, "from"), from, sizeof from),
                   change_value(json_object_get(ch, "to"), to, sizeof to));
    }
}

int gp_cmd_quota(gp_client *c, int argc, char **argv)
{
    return tenant_spec_command(c, argc, argv, "set");
}

/* `quota set PATH` and `tenants create PATH`: the flags become a spec with
 * only the fields given; set sends it as a merge patch (PATCH: the other
 * fields stay as they are, and a tenant that does not exist is an error),
 * create as a PUT with If-None-Match: * (refused if the tenant exists). */
static int tenant_spec_command(gp_client *c, int argc, char **argv, const char *verb)
{
    static const struct option opts[] = {
        {"guarantee", required_argument, NULL, 'g'}, {"limit", required_argument, NULL, 'l'},
        {"user-limit", required_argument, NULL, 'u'}, {"weight", required_argument, NULL, 'w'},
        {"lend", required_argument, NULL, 'L'},      {"trust", required_argument, NULL, 't'},
        {"job-defaults", required_argument, NULL, 'd'}, {"job-max", required_argument, NULL, 'm'},
        {"nodes", required_argument, NULL, 'n'},     {NULL, 0, NULL, 0}};
    json_t *spec = json_object();
    int ch, rc = GP_EXIT_OK;
    optind = 0;
    while (rc == GP_EXIT_OK && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        const char *key = ch == 'g' ? "guarantee" : ch == 'l' ? "limit" : ch == 'u' ? "user_limit" : NULL;
        if (key) {
            json_t *q = parse_quota(optarg);
            if (!q)
                rc = gp_usage_error("quota", "%s: expected TYPE=N,... got %s", key, optarg);
            else
                json_object_set_new(spec, key, q);
        } else if (ch == 'w') {
            json_object_set_new(spec, "weight", gp_json_number_or_string(optarg));
        } else if (ch == 'L') {
            json_object_set_new(spec, "lend", lend_value(optarg));
        } else if (ch == 't') {
            json_object_set_new(spec, "trust", json_string(optarg));
        } else if (ch == 'n') {
            json_object_set_new(spec, "nodes", json_string(optarg));
        } else if (ch == 'd' || ch == 'm') {
            const char *field = ch == 'd' ? "job_defaults" : "job_max";
            json_t *limits = parse_job_limits(optarg);
            if (!limits)
                rc = gp_usage_error("quota", "%s: expected FIELD=N,... (cpu_millis, mem_mib, pids_max), got %s", field,
                                    optarg);
            else
                json_object_set_new(spec, field, limits);
        } else {
            rc = gp_usage_error("quota", "%s", QUOTA_USAGE);
        }
    }
    bool create = strcmp(verb, "create") == 0;
    if (rc == GP_EXIT_OK && (optind != argc - 2 || strcmp(argv[optind], verb) != 0))
        rc = gp_usage_error(argv[0], "%s", create ? TENANTS_CREATE_USAGE : QUOTA_USAGE);
    gp_response resp = {0};
    if (rc == GP_EXIT_OK) {
        const char *tenant = argv[optind + 1];
        char path[512];
        snprintf(path, sizeof path, "/v1/tenants/%.300s", tenant);
        c->header = create ? "If-None-Match: *" : NULL;
        rc = gp_client_run(c, create ? "PUT" : "PATCH", path, spec, &resp);
        c->header = NULL;
        const json_t *changes = json_object_get(resp.body, "changes");
        if (rc == GP_EXIT_OK && !c->json)
            printf("tenant %s %s\n", tenant, create ? "created" : json_array_size(changes) ? "updated" : "unchanged");
        if (rc == GP_EXIT_OK && !c->json)
            print_changes(changes);
    }
    gp_response_free(&resp);
    json_decref(spec);
    return rc;
}

static const char APPLY_USAGE[] = "usage: gpupool apply -f FILE [--dry-run] [--prune]";

/* What an apply did (or, dry, would do): one line per tenant, then the diff. */
static void print_apply(const json_t *body)
{
    const char *keys[] = {"created", "updated", "unchanged", "deleted"};
    for (int k = 0; k < 4; k++) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(body, keys[k]), i, p)
            printf("%-10s %s\n", keys[k], json_string_value(p));
    }
    print_changes(json_object_get(body, "changes"));
    if (json_is_true(json_object_get(body, "dry_run")))
        printf("dry run: nothing was changed.  Note: %s\n", json_string_value(json_object_get(body, "not_checked")));
}

/* The server names the YAML it parsed "body" ("body:3: unknown key
 * guarantees"); the person wrote FILE: the error says FILE:3. */
static void error_names_file(gp_response *resp, const char *file)
{
    json_t *e = json_object_get(resp->body, "error");
    const char *m = json_string_value(json_object_get(e, "message"));
    if (!m || strncmp(m, "body:", 5) != 0 || m[5] < '0' || m[5] > '9')
        return;
    size_t len = strlen(file) + strlen(m);
    char *text = malloc(len);
    if (!text)
        return;
    snprintf(text, len, "%s%s", file, m + 4);
    json_object_set_new(e, "message", json_string(text));
    free(text);
}

int gp_cmd_apply(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"file", required_argument, NULL, 'f'},
                                         {"dry-run", no_argument, NULL, 'd'},
                                         {"prune", no_argument, NULL, 'p'},
                                         {NULL, 0, NULL, 0}};
    const char *file = NULL;
    char path[128] = "/v1/tenants:apply";
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "f:", opts, NULL)) != -1) {
        if (ch == 'f')
            file = optarg;
        else if (ch == 'd' || ch == 'p')
            gp_query_add(c, path, sizeof path, ch == 'd' ? "dry_run" : "prune", "true");
        else
            return gp_usage_error("apply", "%s", APPLY_USAGE);
    }
    if (!file || optind != argc)
        return gp_usage_error("apply", "%s", APPLY_USAGE);
    size_t len;
    char *text = gp_read_file(file, &len);
    if (!text)
        return GP_EXIT_USAGE;
    gp_response resp;
    int rc = gp_client_call(c, "POST", path, "application/yaml", text, len, &resp);
    free(text);
    if (rc == GP_EXIT_OK)
        error_names_file(&resp, file);
    if (rc == GP_EXIT_OK)
        rc = gp_client_check(&resp);
    if (rc == GP_EXIT_OK && c->json) {
        json_dumpf(resp.body, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    } else if (rc == GP_EXIT_OK) {
        print_apply(resp.body);
    }
    gp_response_free(&resp);
    return rc;
}

/* Allocated, used (driven), lost-to-preemption and idle-held GPU-hours
 * per tenant and type (GET /v1/usage's allocated_vs_used). */
static void usage_used_table(const json_t *rows)
{
    static const char *const head[] = {"TENANT", "GPU", "ALLOCATED", "USED", "LOST", "IDLE-HELD"};
    static const char *const keys[] = {"allocated_gpu_hours", "used_gpu_hours", "lost_gpu_hours",
                                       "idle_held_gpu_hours"};
    gp_table t;
    gp_table_init(&t, 6, head);
    size_t i;
    json_t *u;
    json_array_foreach(rows, i, u) {
        char cells_h[4][32];
        for (int k = 0; k < 4; k++)
            snprintf(cells_h[k], sizeof cells_h[k], "%.3f", json_number_value(json_object_get(u, keys[k])));
        const char *cells[] = {json_string_value(json_object_get(u, "tenant")),
                               json_string_value(json_object_get(u, "gpu_type")), cells_h[0], cells_h[1], cells_h[2],
                               cells_h[3]};
        gp_table_add(&t, cells);
    }
    printf("\nallocated vs used (GPU-hours):\n");
    gp_table_print(&t, stdout);
}

/* The under-driven jobs (GET /v1/usage/underdriven) with their suggestion. */
static void usage_under_table(const json_t *out)
{
    static const char *const head[] = {"JOB", "TENANT", "GPU", "GPUS", "PEAK-SM", "PEAK-MEM", "BELOW-FOR", "SUGGEST"};
    gp_table t;
    gp_table_init(&t, 8, head);
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(out, "jobs"), i, j) {
        char id[24], gpus[16], sm[16], mem[24], below[24], suggest[64];
        const json_t *s = json_object_get(j, "suggest");
        snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(j, "job")));
        snprintf(gpus, sizeof gpus, "%lld", (long long)json_integer_value(json_object_get(j, "gpus")));
        snprintf(sm, sizeof sm, "%lld%%", (long long)json_integer_value(json_object_get(j, "peak_sm_pct")));
        snprintf(mem, sizeof mem, "%lld MiB", (long long)json_integer_value(json_object_get(j, "peak_memory_mib")));
        snprintf(below, sizeof below, "%llds", (long long)json_integer_value(json_object_get(j, "below_s")));
        if (json_is_string(json_object_get(s, "mig")))
            snprintf(suggest, sizeof suggest, "MIG %s or MPS %lld%%", json_string_value(json_object_get(s, "mig")),
                     (long long)json_integer_value(json_object_get(s, "mps_pct")));
        else
            snprintf(suggest, sizeof suggest, s && !json_is_null(s) ? "MPS %lld%%" : "-",
                     (long long)json_integer_value(json_object_get(s, "mps_pct")));
        const char *cells[] = {id, json_string_value(json_object_get(j, "tenant")),
                               json_string_value(json_object_get(j, "gpu_type")), gpus, sm, mem, below, suggest};
        gp_table_add(&t, cells);
    }
    printf("\nunder-driven (below %lld%% SM for %llds or more):\n",
           (long long)json_integer_value(json_object_get(out, "sm")),
           (long long)json_integer_value(json_object_get(out, "for")));
    gp_table_print(&t, stdout);
}

static const char *gpu_hours_cell(const json_t *seconds, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.3f", json_number_value(seconds) / 3600.0);
    return buf;
}

/* The usage rows (by_user: with USER), then each tenant's subtree and the total. */
static void usage_table(const json_t *body, bool by_user)
{
    static const char *const head[] = {"TENANT", "USER", "GPU", "CLASS", "GPU-HOURS"};
    static const char *const tree_head[] = {"SUBTREE", "GPU-HOURS"};
    int skip = by_user ? 0 : 1; /* the USER column */
    gp_table t, tree;
    const char *no_user[] = {head[0], head[2], head[3], head[4]};
    gp_table_init(&t, 5 - skip, by_user ? head : no_user);
    size_t i;
    json_t *u;
    char hours[32];
    json_array_foreach(json_object_get(body, "usage"), i, u) {
        const char *cells[] = {json_string_value(json_object_get(u, "tenant")),
                               json_string_value(json_object_get(u, "user")),
                               json_string_value(json_object_get(u, "gpu_type")),
                               json_string_value(json_object_get(u, "class")),
                               gpu_hours_cell(json_object_get(u, "gpu_seconds"), hours, sizeof hours)};
        const char *short_cells[] = {cells[0], cells[2], cells[3], cells[4]};
        gp_table_add(&t, by_user ? cells : short_cells);
    }
    gp_table_print(&t, stdout);
    gp_table_init(&tree, 2, tree_head);
    json_array_foreach(json_object_get(body, "subtrees"), i, u) {
        const char *cells[] = {json_string_value(json_object_get(u, "tenant")),
                               gpu_hours_cell(json_object_get(u, "gpu_seconds"), hours, sizeof hours)};
        gp_table_add(&tree, cells);
    }
    const char *total[] = {"TOTAL", gpu_hours_cell(json_object_get(body, "total_gpu_seconds"), hours, sizeof hours)};
    gp_table_add(&tree, total);
    putchar('\n');
    gp_table_print(&tree, stdout);
    if (json_array_size(json_object_get(body, "allocated_vs_used")))
        usage_used_table(json_object_get(body, "allocated_vs_used"));
}

/* One CSV line per usage row (kind "usage"), subtree ("subtree") and the
 * total ("total"): GPU-hours, the window in ISO 8601 UTC. */
static void usage_csv(const json_t *body)
{
    static const char *const head[] = {"kind", "tenant", "user", "gpu_type", "class", "gpu_hours", "from", "to"};
    gp_table t;
    gp_table_init(&t, 8, head);
    char from[32], to[32], hours[32];
    gp_time_iso(json_integer_value(json_object_get(body, "from")), from, sizeof from);
    gp_time_iso(json_integer_value(json_object_get(body, "to")), to, sizeof to);
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(body, "usage"), i, u) {
        const char *user = json_string_value(json_object_get(u, "user"));
        const char *cells[] = {"usage", json_string_value(json_object_get(u, "tenant")), user ? user : "",
                               json_string_value(json_object_get(u, "gpu_type")),
                               json_string_value(json_object_get(u, "class")),
                               gpu_hours_cell(json_object_get(u, "gpu_seconds"), hours, sizeof hours), from, to};
        gp_table_add(&t, cells);
    }
    json_array_foreach(json_object_get(body, "subtrees"), i, u) {
        const char *cells[] = {"subtree", json_string_value(json_object_get(u, "tenant")), "", "", "",
                               gpu_hours_cell(json_object_get(u, "gpu_seconds"), hours, sizeof hours), from, to};
        gp_table_add(&t, cells);
    }
    const char *total[] = {"total", "", "", "", "",
                           gpu_hours_cell(json_object_get(body, "total_gpu_seconds"), hours, sizeof hours), from, to};
    gp_table_add(&t, total);
    gp_table_print_csv(&t, stdout);
}

static const char USAGE_USAGE[] = "usage: gpupool usage [--tenant PATH] [--from TIME] [--to TIME] [--by tenant|user]"
                                  " [-o table|csv|json] [--under-sm PCT] [--under-for DURATION]";

/* --under-sm / --under-for: the under-driven query; false on a bad value. */
static bool usage_under_arg(gp_client *c, int ch, const char *arg, char *under, size_t cap)
{
    int64_t v;
    char *end;
    char num[32];
    if (ch == 'S') {
        v = strtoll(arg, &end, 10);
        if (*arg == '\0' || *end != '\0' || v < 1 || v > 100)
            return false;
    } else if (!gp_duration_parse(arg, &v)) {
        return false;
    }
    snprintf(num, sizeof num, "%lld", (long long)v);
    gp_query_add(c, under, cap, ch == 'S' ? "sm" : "for", num);
    return true;
}

int gp_cmd_usage(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"tenant", required_argument, NULL, 't'},
                                         {"from", required_argument, NULL, 'f'},
                                         {"to", required_argument, NULL, 'T'},
                                         {"under-sm", required_argument, NULL, 'S'},
                                         {"under-for", required_argument, NULL, 'F'},
                                         {"by", required_argument, NULL, 'b'},
                                         {"output", required_argument, NULL, 'o'},
                                         {NULL, 0, NULL, 0}};
    char path[1024] = "/v1/usage", under[256] = "/v1/usage/underdriven";
    const char *output = "table";
    bool by_user = false;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
        const char *key = ch == 't' ? "tenant" : ch == 'f' ? "from" : ch == 'T' ? "to" : NULL;
        int64_t t;
        char epoch[32];
        if (ch == 'b' && strcmp(optarg, "tenant") != 0 && strcmp(optarg, "user") != 0)
            return gp_usage_error("usage", "--by takes tenant or user, got %s", optarg);
        if (ch == 'o' && strcmp(optarg, "table") != 0 && strcmp(optarg, "csv") != 0 && strcmp(optarg, "json") != 0)
            return gp_usage_error("usage", "-o takes table, csv or json, got %s", optarg);
        if (ch == 'b' || ch == 'o') {
            by_user = by_user || (ch == 'b' && strcmp(optarg, "user") == 0);
            output = ch == 'o' ? optarg : output;
            continue;
        }
        if (ch == 'S' || ch == 'F') {
            if (!usage_under_arg(c, ch, optarg, under, sizeof under))
                return gp_usage_error("usage", ch == 'S' ? "--under-sm: expected a percent 1..100; got %s"
                                                         : "--under-for: expected a duration like 30m; got %s",
                                      optarg);
            continue;
        }
        if (!key)
            return gp_usage_error("usage", "%s", USAGE_USAGE);
        if (ch == 't') {
            gp_query_add(c, path, sizeof path, key, optarg);
            continue;
        }
        /* the API takes epoch seconds; a person may type a date, a date-time or an age */
        if (!gp_time_parse(optarg, (int64_t)time(NULL), &t))
            return gp_usage_error("usage", "--%s: expected YYYY-MM-DD[ HH:MM[:SS]], ISO 8601 with a zone, a relative"
                                           " time like -24h or +2h, or epoch seconds; got %s", key, optarg);
        snprintf(epoch, sizeof epoch, "%lld", (long long)t);
        gp_query_add(c, path, sizeof path, key, epoch);
    }
    bool want_under = strcmp(under, "/v1/usage/underdriven") != 0;
    if (by_user)
        gp_query_add(c, path, sizeof path, "by", "user");
    if (strcmp(output, "table") != 0 && want_under)
        return gp_usage_error("usage", "-o %s prints the usage only: leave out --under-sm/--under-for", output);
    c->json = c->json || strcmp(output, "json") == 0; /* -o json: the server's answer as it is */
    gp_response resp, uresp = {0};
    int rc = gp_client_run(c, "GET", path, NULL, &resp);
    if (rc == GP_EXIT_OK && want_under)
        rc = gp_client_run(c, "GET", under, NULL, &uresp);
    if (rc == GP_EXIT_OK && !c->json && strcmp(output, "csv") == 0)
        usage_csv(resp.body);
    else if (rc == GP_EXIT_OK && !c->json) {
        usage_table(resp.body, by_user);
        if (want_under)
            usage_under_table(uresp.body);
    }
    gp_response_free(&resp);
    if (want_under)
        gp_response_free(&uresp);
    return rc;
}

/* ---- tokens ---- */

static const char TOKEN_USAGE[] = "usage: gpupool token create --name N --role R [--scope TENANT] [--user U]"
                                  " [--ttl DURATION]\n"
                                  "       gpupool token create --name N --role join --nodes PATTERNS [--single-use]"
                                  " [--ttl DURATION]\n"
                                  "       gpupool token list\n"
                                  "       gpupool token revoke ID|NAME";

/* An epoch-seconds field as "2026-11-24 06:53:54 (in 29d)", or when_null. */
static const char *time_cell(const json_t *v, const char *when_null, char *buf, size_t cap)
{
    if (!json_is_integer(v))
        return when_null;
    return gp_time_human(json_integer_value(v), (int64_t)time(NULL), buf, cap);
}

static int token_create(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"name", required_argument, NULL, 'n'},
                                         {"role", required_argument, NULL, 'r'},
                                         {"scope", required_argument, NULL, 's'},
                                         {"user", required_argument, NULL, 'u'},
                                         {"ttl", required_argument, NULL, 'T'},
                                         {"nodes", required_argument, NULL, 'N'},
                                         {"single-use", no_argument, NULL, '1'},
                                         {NULL, 0, NULL, 0}};
    json_t *body = json_object();
    int ch;
    int64_t ttl;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        const char *key = ch == 'n'   ? "name"
                          : ch == 'r' ? "role"
                          : ch == 's' ? "scope"
                          : ch == 'u' ? "user"
                          : ch == 'N' ? "nodes"
                                      : NULL;
        if (ch == '1') {
            json_object_set_new(body, "single_use", json_true());
        } else if (ch == 'T' && gp_duration_parse(optarg, &ttl)) {
            json_object_set_new(body, "ttl_s", json_integer(ttl));
        } else if (key) {
            json_object_set_new(body, key, json_string(optarg));
        } else {
            json_decref(body);
            return ch == 'T' ? gp_usage_error("token", "--ttl: expected %s; got %s", GP_DURATION_FORMS, optarg)
                             : gp_usage_error("token", "%s", TOKEN_USAGE);
        }
    }
    gp_response resp;
    int rc = gp_client_run(c, "POST", "/v1/tokens", body, &resp);
    json_decref(body);
    if (rc == GP_EXIT_OK && !c->json) {
        char expires[96];
        const char *user = json_string_value(json_object_get(resp.body, "user"));
        printf("id %s\ntoken %s\nuser %s\nexpires %s\n(shown once: gpupoold keeps only its hash)\n",
               json_string_value(json_object_get(resp.body, "id")),
               json_string_value(json_object_get(resp.body, "token")), user && user[0] ? user : "-",
               time_cell(json_object_get(resp.body, "expires"), "never", expires, sizeof expires));
    }
    gp_response_free(&resp);
    return rc;
}

static int token_list(gp_client *c)
{
    gp_response resp;
    int rc = gp_client_run(c, "GET", "/v1/tokens", NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        static const char *const head[] = {"ID", "NAME", "ROLE", "SCOPE", "USER", "EXPIRES", "LAST USED", "REVOKED"};
        gp_table t;
        gp_table_init(&t, 8, head);
        size_t i;
        json_t *k;
        json_array_foreach(json_object_get(resp.body, "tokens"), i, k) {
            char expires[96], used[96], rev[96];
            const char *cells[] = {json_string_value(json_object_get(k, "id")),
                                   json_string_value(json_object_get(k, "name")),
                                   json_string_value(json_object_get(k, "role")),
                                   json_string_value(json_object_get(k, "scope")),
                                   json_string_value(json_object_get(k, "user")),
                                   time_cell(json_object_get(k, "expires"), "never", expires, sizeof expires),
                                   time_cell(json_object_get(k, "last_used"), "never", used, sizeof used),
                                   time_cell(json_object_get(k, "revoked"), "-", rev, sizeof rev)};
            gp_table_add(&t, cells);
        }
        gp_table_print(&t, stdout);
    }
    gp_response_free(&resp);
    return rc;
}

static bool token_revoked(const json_t *k)
{
    const json_t *v = json_object_get(k, "revoked");
    return v && !json_is_null(v);
}

/* The id of the live token whose id or name is `given` into id[cap]:
 * GP_EXIT_OK; no such token: exit 5 with the nearest name or id; a name
 * that several live tokens share: exit 7 listing their ids. */
static int token_id_of(const json_t *tokens, const char *given, char *id, size_t cap)
{
    const char *names[1024], *match = NULL;
    size_t n = 0, matches = 0, i;
    json_t *k;
    json_array_foreach(tokens, i, k) {
        const char *kid = json_string_value(json_object_get(k, "id"));
        const char *name = json_string_value(json_object_get(k, "name"));
        if (!kid || token_revoked(k))
            continue;
        if (strcmp(kid, given) == 0) {
            snprintf(id, cap, "%s", kid);
            return GP_EXIT_OK;
        }
        if (name && strcmp(name, given) == 0) {
            match = kid;
            matches++;
        }
        for (size_t w = 0; w < 2 && n < 1024; w++)
            if ((w ? name : kid) && (w ? name : kid)[0])
                names[n++] = w ? name : kid;
    }
    if (matches == 1) {
        snprintf(id, cap, "%s", match);
        return GP_EXIT_OK;
    }
    if (matches > 1) {
        fprintf(stderr, "gpupool: %zu live tokens are named %s; revoke one by its id:", matches, given);
        json_array_foreach(tokens, i, k) {
            const char *name = json_string_value(json_object_get(k, "name"));
            if (name && strcmp(name, given) == 0 && !token_revoked(k))
                fprintf(stderr, " %s", json_string_value(json_object_get(k, "id")));
        }
        fputc('\n', stderr);
        return GP_EXIT_CONFLICT;
    }
    const char *near = gp_suggest(given, names, n);
    fprintf(stderr, "gpupool: no live token with id or name %s%s%s%s\n", given, near ? " (did you mean " : "",
            near ? near : "", near ? "?)" : "");
    return GP_EXIT_NOT_FOUND;
}

/* token revoke ID|NAME: a name is looked up among the live tokens first. */
static int token_revoke(gp_client *c, const char *given)
{
    gp_response resp;
    char id[96], path[256];
    int rc = gp_client_run(c, "GET", "/v1/tokens", NULL, &resp);
    if (rc == GP_EXIT_OK)
        rc = token_id_of(json_object_get(resp.body, "tokens"), given, id, sizeof id);
    gp_response_free(&resp);
    if (rc != GP_EXIT_OK)
        return rc;
    snprintf(path, sizeof path, "/v1/tokens/%.64s", id);
    return delete_one(c, path, "token", id, "revoked");
}

int gp_cmd_token(gp_client *c, int argc, char **argv)
{
    if (argc < 2)
        return gp_usage_error("token", "%s", TOKEN_USAGE);
    if (strcmp(argv[1], "create") == 0)
        return token_create(c, argc - 1, argv + 1);
    if (strcmp(argv[1], "list") == 0 && argc == 2)
        return token_list(c);
    if (strcmp(argv[1], "revoke") == 0 && argc == 3)
        return token_revoke(c, argv[2]);
    return gp_usage_error("token", "%s", TOKEN_USAGE);
}

/* ---- job users (server/users.h) ---- */

static const char USERS_USAGE[] = "usage: gpupool users | gpupool users bind NAME TENANT | gpupool users unbind NAME";

static int users_list(gp_client *c)
{
    gp_response resp;
    int rc = gp_client_run(c, "GET", "/v1/users", NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        static const char *const head[] = {"USER", "TENANT", "BOUND", "BY TOKEN"};
        gp_table t;
        gp_table_init(&t, 4, head);
        size_t i;
        json_t *u;
        json_array_foreach(json_object_get(resp.body, "users"), i, u) {
            char bound[96];
            const char *cells[] = {json_string_value(json_object_get(u, "name")),
                                   json_string_value(json_object_get(u, "tenant")),
                                   time_cell(json_object_get(u, "bound"), "-", bound, sizeof bound),
                                   json_string_value(json_object_get(u, "bound_by"))};
            gp_table_add(&t, cells);
        }
        gp_table_print(&t, stdout);
    }
    gp_response_free(&resp);
    return rc;
}

static int users_bind(gp_client *c, const char *name, const char *tenant)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/users/%.64s", name);
    json_t *body = json_pack("{s:s}", "tenant", tenant);
    gp_response resp;
    int rc = gp_client_run(c, "PUT", path, body, &resp);
    json_decref(body);
    if (rc == GP_EXIT_OK && !c->json)
        printf("user %s bound to %s\n", name, tenant);
    gp_response_free(&resp);
    return rc;
}

int gp_cmd_users(gp_client *c, int argc, char **argv)
{
    if (argc == 1)
        return users_list(c);
    if (argc == 4 && strcmp(argv[1], "bind") == 0)
        return users_bind(c, argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "unbind") == 0) {
        char path[256];
        snprintf(path, sizeof path, "/v1/users/%.64s", argv[2]);
        return delete_one(c, path, "user", argv[2], "unbound");
    }
    return gp_usage_error("users", "%s", USERS_USAGE);
}

/* ---- audit ---- */

/* --after SEQ and --limit N onto path's query; false on anything else. */
static bool page_query(gp_client *c, int argc, char **argv, char *path, size_t cap)
{
    static const struct option opts[] = {{"after", required_argument, NULL, 'a'},
                                         {"limit", required_argument, NULL, 'l'},
                                         {NULL, 0, NULL, 0}};
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch != 'a' && ch != 'l')
            return false;
        gp_query_add(c, path, cap, ch == 'a' ? "after" : "limit", optarg);
    }
    return optind == argc;
}

int gp_cmd_audit(gp_client *c, int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "verify") == 0) {
        gp_response resp;
        int rc = gp_client_run(c, "GET", "/v1/audit/verify", NULL, &resp);
        if (rc == GP_EXIT_OK && !json_is_true(json_object_get(resp.body, "ok"))) {
            fprintf(stderr, "gpupool: audit chain broken at seq %lld\n",
                    (long long)json_integer_value(json_object_get(resp.body, "first_broken")));
            rc = GP_EXIT_ERROR;
        } else if (rc == GP_EXIT_OK && !c->json) {
            printf("audit chain ok: %lld rows verified\n",
                   (long long)json_integer_value(json_object_get(resp.body, "checked")));
        }
        gp_response_free(&resp);
        return rc;
    }
    char path[512] = "/v1/audit";
    if (!page_query(c, argc, argv, path, sizeof path))
        return gp_usage_error("audit", "usage: gpupool audit [--after SEQ] [--limit N] | gpupool audit verify");
    gp_response resp;
    int rc = gp_client_run(c, "GET", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        static const char *const head[] = {"SEQ", "TIME", "ACTOR", "ROLE", "ACTION", "TARGET", "RESULT"};
        gp_table t;
        gp_table_init(&t, 7, head);
        size_t i;
        json_t *a;
        json_array_foreach(json_object_get(resp.body, "audit"), i, a) {
            char seq[32], time[64];
            const char *cells[] = {gp_cell(json_object_get(a, "seq"), seq, sizeof seq),
                                   gp_time_local(json_integer_value(json_object_get(a, "time")), time, sizeof time),
                                   json_string_value(json_object_get(a, "actor")),
                                   json_string_value(json_object_get(a, "role")),
                                   json_string_value(json_object_get(a, "action")),
                                   json_string_value(json_object_get(a, "target")),
                                   json_string_value(json_object_get(a, "result"))};
            gp_table_add(&t, cells);
        }
        gp_table_print(&t, stdout);
    }
    gp_response_free(&resp);
    return rc;
}

/* ---- ledger ---- */

static const char LEDGER_USAGE[] = "usage: gpupool ledger verify | gpupool ledger [--after SEQ] [--limit N]";

static int ledger_verify(gp_client *c)
{
    gp_response resp;
    int rc = gp_client_run(c, "GET", "/v1/ledger/verify", NULL, &resp);
    json_t *b = resp.body;
    if (rc == GP_EXIT_OK && !json_is_true(json_object_get(b, "ok"))) {
        fprintf(stderr, "gpupool: usage ledger broken at record %lld: %s\n",
                (long long)json_integer_value(json_object_get(b, "first_bad")),
                json_string_value(json_object_get(b, "why")));
        rc = GP_EXIT_ERROR;
    } else if (rc == GP_EXIT_OK && !c->json) {
        json_t *head = json_object_get(b, "head");
        printf("usage ledger ok: %lld records verified; head seq %lld hash %s\n",
               (long long)json_integer_value(json_object_get(b, "records")),
               (long long)json_integer_value(json_object_get(head, "seq")),
               json_string_value(json_object_get(head, "hash")));
    }
    gp_response_free(&resp);
    return rc;
}

/* The records as JSON, one per line (for export); --json prints the page as the API answers it. */
int gp_cmd_ledger(gp_client *c, int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "verify") == 0)
        return ledger_verify(c);
    char path[512] = "/v1/ledger";
    if (!page_query(c, argc, argv, path, sizeof path))
        return gp_usage_error("ledger", "%s", LEDGER_USAGE);
    gp_response resp;
    int rc = gp_client_run(c, "GET", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(resp.body, "records"), i, r) {
            char *line = json_dumps(json_object_get(r, "record"), JSON_COMPACT | JSON_SORT_KEYS);
            if (line)
                puts(line);
            free(line);
        }
    }
    gp_response_free(&resp);
    return rc;
}

/* ---- admin export-log ---- */

static const char ADMIN_USAGE[] = "usage: gpupool admin export-log --out FILE";

/* Writes the event log page by page: a header line, then one event per
 * line as GET /v1/log answers it (the file gpupool-replay reads). */
static int export_log(gp_client *c, FILE *out, long long *events)
{
    long long after = 0;
    int rc = GP_EXIT_OK;
    fputs("{\"format\":\"gpupool-event-log\",\"version\":1}\n", out);
    for (bool more = true; more && rc == GP_EXIT_OK;) {
        char path[128];
        snprintf(path, sizeof path, "/v1/log?after=%lld&limit=1000", after);
        gp_response resp;
        rc = gp_client_call(c, "GET", path, NULL, NULL, 0, &resp);
        if (rc == GP_EXIT_OK)
            rc = gp_client_check(&resp);
        size_t i;
        json_t *ev;
        json_array_foreach(rc == GP_EXIT_OK ? json_object_get(resp.body, "events") : NULL, i, ev) {
            json_dumpf(ev, out, JSON_COMPACT | JSON_SORT_KEYS);
            fputc('\n', out);
            (*events)++;
        }
        json_t *next = rc == GP_EXIT_OK ? json_object_get(resp.body, "next") : NULL;
        more = json_is_integer(next);
        after = more ? (long long)json_integer_value(next) : after;
        gp_response_free(&resp);
    }
    return rc;
}

int gp_cmd_admin(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"out", required_argument, NULL, 'o'}, {NULL, 0, NULL, 0}};
    if (argc < 2 || strcmp(argv[1], "export-log") != 0)
        return gp_usage_error("admin", "%s", ADMIN_USAGE);
    const char *file = NULL;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc - 1, argv + 1, "", opts, NULL)) != -1) {
        if (ch != 'o')
            return gp_usage_error("admin", "%s", ADMIN_USAGE);
        file = optarg;
    }
    if (!file || optind != argc - 1)
        return gp_usage_error("admin", "%s", ADMIN_USAGE);
    FILE *out = fopen(file, "w");
    if (!out) {
        fprintf(stderr, "gpupool admin: cannot write %s\n", file);
        return GP_EXIT_ERROR;
    }
    long long events = 0;
    int rc = export_log(c, out, &events);
    if (fclose(out) != 0 && rc == GP_EXIT_OK) {
        fprintf(stderr, "gpupool admin: cannot write %s\n", file);
        rc = GP_EXIT_ERROR;
    }
    if (rc != GP_EXIT_OK)
        remove(file);
    else if (!c->json)
        printf("exported %lld events to %s (replay it: gpupool-replay %s)\n", events, file, file);
    return rc;
}

/* main.c - gpupool, the command line client of gpupoold.
 *
 * gpupool [GLOBAL FLAGS] COMMAND [ARGS] [GLOBAL FLAGS]
 *   global flags: --server URL, --token T | --token-file F, --cacert F, --json
 *
 * Global flags may stand before or after the command, as with kubectl
 * (`gpupool jobs --json` = `gpupool --json jobs`): they are taken out of
 * the arguments wherever they are, up to a "--" (what follows it belongs
 * to the job's command), and the command parses the rest.  A value may be
 * the next argument or follow '=' (--server=URL).
 * The CLI speaks only HTTP to the daemon (no engine code is linked in).
 */
#include "cli/commands.h"
#include "util/file.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const gp_command GP_COMMANDS[] = {
    {"submit", gp_cmd_submit,
     "usage: gpupool submit [-f job.yaml|job.json] [--tenant PATH] [--name N] [--gpus N] [--replicas N]\n"
     "                      [--gpu-type T]... [--cpu-millis N] [--mem-mib N] [--topology any|block|nvlink]\n"
     "                      [--isolation exclusive|mig|mps|timeslice] [--mig PROFILE | --mps PERCENT | --timeslice]\n"
     "                      [--priority P] [--grace S] [--runtime S] [--time-limit S]\n"
     "                      [--kind training|inference|interactive] [--user U] [--array N] [-- COMMAND ARGS...]\n"
     "Submit a job; flags override the file's fields.  Prints the job with its state and reason.\n"
     "A file may hold a list of jobs (YAML sequence or JSON array), and --array N submits N copies of the\n"
     "job, each with GPUPOOL_ARRAY_INDEX=0..N-1 and GPUPOOL_ARRAY_SIZE=N in its env: either way in one\n"
     "request that gpupoold takes whole or refuses whole (at most 10000 jobs).\n"},
    {"jobs", gp_cmd_jobs,
     "usage: gpupool jobs [--tenant PATH] [--state STATE|live] [--limit N] [--before ID]\n"
     "List jobs you may see, newest first.\n"},
    {"job", gp_cmd_job, "usage: gpupool job ID\nOne job with its placement and history.\n"},
    {"cancel", gp_cmd_cancel, "usage: gpupool cancel ID\nCancel a job (running jobs get their grace).\n"},
    {"nodes", gp_cmd_nodes, "usage: gpupool nodes\nThe fleet: nodes, GPUs free, state.\n"},
    {"drain", gp_cmd_drain, "usage: gpupool drain NODE [--undo]\nDrain a node (no new work), or undrain it.\n"},
    {"tenants", gp_cmd_tenants, "usage: gpupool tenants\nThe tenant tree with guarantees, limits and usage.\n"},
    {"quota", gp_cmd_quota,
     "usage: gpupool quota set PATH [--guarantee TYPE=N,...,cpu_millis=N,mem_mib=N] [--limit ...]\n"
     "                       [--user-limit ...] [--weight W] [--lend yes|no] [--trust trusted|untrusted]\n"
     "Create or replace a tenant's spec (fields not given take their defaults).\n"},
    {"apply", gp_cmd_apply,
     "usage: gpupool apply -f tenants.yaml\nApply a tenant tree (YAML or JSON); idempotent, all or nothing.\n"},
    {"usage", gp_cmd_usage,
     "usage: gpupool usage [--tenant PATH] [--from TIME] [--to TIME]\nGPU-hours by tenant, GPU type, class.\n"
     "TIME is a local date (2024-11-24), date-time (2024-11-24 06:30), an age (7d, 12h, 30m: that long ago)\n"
     "or epoch seconds.\n"},
    {"token", gp_cmd_token,
     "usage: gpupool token create --name N --role admin|operator|auditor|tenant-admin|member [--scope TENANT]"
     " [--user U]\n       gpupool token list\n       gpupool token revoke ID\n"},
    {"audit", gp_cmd_audit,
     "usage: gpupool audit [--after SEQ] [--limit N]\n       gpupool audit verify\n"
     "Read the audit log, or recompute its hash chain (exit 1 and the first broken link if it is broken).\n"},
    {"admin", gp_cmd_admin,
     "usage: gpupool admin export-log --out FILE\n"
     "Write the daemon's event log to FILE (admin and auditor), for a bug report: gpupool-replay FILE re-runs\n"
     "it through a fresh engine and checks every decision.\n"},
    {NULL, NULL, NULL},
};

static const char USAGE[] =
    "usage: gpupool [--server URL] [--token TOKEN | --token-file FILE] [--cacert FILE] [--json] COMMAND [ARGS]\n"
    "(the flags above may also follow the command: gpupool jobs --json)\n"
    "\n"
    "Commands: submit, jobs, job, cancel, nodes, drain, tenants, quota set, apply, usage,\n"
    "          token create|list|revoke, audit [verify], admin export-log.   gpupool COMMAND --help for each.\n"
    "\n"
    "Server and token: flags, else GPUPOOL_SERVER / GPUPOOL_TOKEN (or GPUPOOL_TOKEN_FILE),\n"
    "else ~/.config/gpupool/config (server = URL, token = TOKEN, token_file = FILE, cacert = FILE).\n"
    "\n"
    "Exit codes: 0 ok, 1 error, 2 bad command line, 3 cannot connect, 4 not authenticated/allowed,\n"
    "            5 not found, 6 invalid request, 7 conflict, 8 rate limited or server error.\n";

int gp_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "gpupool %s: ", command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return GP_EXIT_USAGE;
}

char *gp_read_file(const char *path, size_t *len)
{
    char *text = NULL;
    gp_error err;
    gp_err rc = strcmp(path, "-") == 0 ? gp_file_read_stream(stdin, "stdin", &text, len, &err)
                                       : gp_file_read_all(path, &text, len, &err);
    if (rc) {
        fprintf(stderr, "gpupool: cannot read %s\n", err.message);
        return NULL;
    }
    return text;
}

const char *gp_cell(const json_t *v, char *buf, size_t cap)
{
    if (json_is_string(v))
        snprintf(buf, cap, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, cap, "%g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, cap, "%s", json_is_true(v) ? "yes" : "no");
    else
        snprintf(buf, cap, "-");
    return buf;
}

const char *gp_gpu_summary(const json_t *res, char *buf, size_t cap)
{
    size_t used = 0;
    const char *type;
    json_t *v;
    buf[0] = '\0';
    json_object_foreach(json_object_get(res, "gpu"), type, v) {
        if (json_number_value(v) == 0)
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s=%g", used ? "," : "", type, json_number_value(v));
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
    }
    if (!buf[0])
        snprintf(buf, cap, "-");
    return buf;
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    }
    return false;
}

/* The global flags, as found anywhere on the command line. */
typedef struct globals {
    const char *server, *token, *token_file, *cacert;
    bool json, help;
} globals;

/* Where the value of a global flag that takes one goes ("--server"), or
 * NULL when name (len bytes, without "=VALUE") is no such flag. */
static const char **value_slot(globals *g, const char *name, size_t len)
{
    const struct {
        const char *name;
        const char **slot;
    } flags[] = {{"--server", &g->server}, {"--token", &g->token}, {"--token-file", &g->token_file},
                 {"--cacert", &g->cacert}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
            return flags[i].slot;
    return NULL;
}

/* Takes the global flags out of argv (keeping the order of the rest) and
 * leaves argc/argv as "gpupool COMMAND ARGS...".  Before the command, any
 * other dash argument is an error (or --help); after it, the command's. */
static int take_global_flags(int *argc, char **argv, globals *g)
{
    int kept = 1;
    bool command_seen = false, after_dashes = false;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        const char *eq = strchr(a, '=');
        const char **slot = after_dashes ? NULL : value_slot(g, a, eq ? (size_t)(eq - a) : strlen(a));
        after_dashes = after_dashes || strcmp(a, "--") == 0;
        if (slot && eq) {
            *slot = eq + 1;
        } else if (slot) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "gpupool: %s needs a value\n", a);
                return GP_EXIT_USAGE;
            }
            *slot = argv[++i];
        } else if (!after_dashes && strcmp(a, "--json") == 0) {
            g->json = true;
        } else if (!command_seen && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            g->help = true;
        } else if (!command_seen && a[0] == '-') {
            fprintf(stderr, "gpupool: unknown option %s\n%s", a, USAGE);
            return GP_EXIT_USAGE;
        } else {
            command_seen = true;
            argv[kept++] = argv[i];
        }
    }
    argv[kept] = NULL;
    *argc = kept;
    return GP_EXIT_OK;
}

int main(int argc, char **argv)
{
    globals g = {0};
    gp_client c;
    memset(&c, 0, sizeof c);
    int rc = take_global_flags(&argc, argv, &g);
    if (rc != GP_EXIT_OK)
        return rc;
    if (g.help) {
        fputs(USAGE, stdout);
        return GP_EXIT_OK;
    }
    if (argc < 2) {
        fputs(USAGE, stderr);
        return GP_EXIT_USAGE;
    }
    c.json = g.json;
    const gp_command *cmd = NULL;
    for (const gp_command *k = GP_COMMANDS; k->name && !cmd; k++)
        if (strcmp(k->name, argv[1]) == 0)
            cmd = k;
    if (!cmd) {
        fprintf(stderr, "gpupool: unknown command %s\n%s", argv[1], USAGE);
        return GP_EXIT_USAGE;
    }
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    if (wants_help(sub_argc, sub_argv)) {
        fputs(cmd->usage, stdout);
        return GP_EXIT_OK;
    }
    rc = gp_client_configure(&c, g.server, g.token, g.token_file, g.cacert);
    if (rc == GP_EXIT_OK)
        rc = cmd->run(&c, sub_argc, sub_argv);
    gp_client_close(&c);
    return rc;
}

/* main.c - gpupool, the command line client of gpupoold.
 *
 * gpupool [--server URL] [--token T | --token-file F] [--cacert F] [--json] COMMAND [ARGS]
 *
 * Global options come before the command; each command parses its own.
 * The CLI speaks only HTTP to the daemon (no engine code is linked in).
 */
#include "cli/commands.h"

#include <getopt.h>
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
     "                      [--kind training|inference|interactive] [--user U] [-- COMMAND ARGS...]\n"
     "Submit a job; flags override the file's fields.  Prints the job with its state and reason.\n"},
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
     "usage: gpupool usage [--tenant PATH] [--from EPOCH] [--to EPOCH]\nGPU-hours by tenant, GPU type, class.\n"},
    {"token", gp_cmd_token,
     "usage: gpupool token create --name N --role admin|operator|auditor|tenant-admin|member [--scope TENANT]"
     " [--user U]\n       gpupool token list\n       gpupool token revoke ID\n"},
    {"audit", gp_cmd_audit,
     "usage: gpupool audit [--after SEQ] [--limit N]\n       gpupool audit verify\n"
     "Read the audit log, or recompute its hash chain (exit 1 and the first broken link if it is broken).\n"},
    {NULL, NULL, NULL},
};

static const char USAGE[] =
    "usage: gpupool [--server URL] [--token TOKEN | --token-file FILE] [--cacert FILE] [--json] COMMAND [ARGS]\n"
    "\n"
    "Commands: submit, jobs, job, cancel, nodes, drain, tenants, quota set, apply, usage,\n"
    "          token create|list|revoke, audit [verify].   gpupool COMMAND --help for each.\n"
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
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "gpupool: cannot read %s\n", path);
        return NULL;
    }
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    if (f != stdin)
        fclose(f);
    if (!buf) {
        fprintf(stderr, "gpupool: out of memory reading %s\n", path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
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

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"server", required_argument, NULL, 's'}, {"token", required_argument, NULL, 't'},
        {"token-file", required_argument, NULL, 'T'}, {"cacert", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *server = NULL, *token = NULL, *token_file = NULL, *cacert = NULL;
    gp_client c;
    memset(&c, 0, sizeof c);
    int ch;
    while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (ch) {
        case 's': server = optarg; break;
        case 't': token = optarg; break;
        case 'T': token_file = optarg; break;
        case 'c': cacert = optarg; break;
        case 'j': c.json = true; break;
        case 'h': fputs(USAGE, stdout); return GP_EXIT_OK;
        default: fputs(USAGE, stderr); return GP_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fputs(USAGE, stderr);
        return GP_EXIT_USAGE;
    }
    const gp_command *cmd = NULL;
    for (const gp_command *k = GP_COMMANDS; k->name && !cmd; k++)
        if (strcmp(k->name, argv[optind]) == 0)
            cmd = k;
    if (!cmd) {
        fprintf(stderr, "gpupool: unknown command %s\n%s", argv[optind], USAGE);
        return GP_EXIT_USAGE;
    }
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    if (wants_help(sub_argc, sub_argv)) {
        fputs(cmd->usage, stdout);
        return GP_EXIT_OK;
    }
    int rc = gp_client_configure(&c, server, token, token_file, cacert);
    if (rc == GP_EXIT_OK)
        rc = cmd->run(&c, sub_argc, sub_argv);
    gp_client_close(&c);
    return rc;
}

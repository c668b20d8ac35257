/* agent.c - `gpupool-agent run`: the options, the nodes and the one
 * event loop that drives them (agent.h). */
#define _GNU_SOURCE
#include "agent/agent.h"

#include "agent/agent_image_hints.h"
#include "agent/agent_node.h"
#include "util/server_url.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define GP__SHUTDOWN_MS 10000

static const char USAGE[] =
    "usage: gpupool-agent run --server URL[,URL...] --join-token-file FILE (or $GPUPOOL_JOIN_TOKEN)\n"
    "                         --backend sim --node-file FILE [--node NAME]... --state-dir DIR [options]\n"
    "       gpupool-agent run ... --backend nvml [--node NAME] --state-dir DIR [options]\n"
    "\n"
    "  --nvml-library PATH     nvml: the NVML library (default $GPUPOOL_NVML_LIBRARY, else libnvidia-ml.so.1)\n"
    "  --zone Z, --block B, --pool P   nvml: the node's place in the fleet (the sim's come from its file)\n"
    "  --sharing MODE          nvml: exclusive (default), mps or timeslice for GPUs not in MIG mode\n"
    "  --work-root DIR         replicas' working folders DIR/NODE/<RUN> (default STATE/NODE/work)\n"
    "  --checkpoint-root DIR   GPUPOOL_CHECKPOINT_DIR = DIR/job<ID> (default STATE/checkpoints)\n"
    "  --cgroup-parent NAME    replicas' cgroups under NAME (default gpupool)\n"
    "  --no-cgroups            no cgroups: no CPU, memory or pids limits, no device isolation\n"
    "  --no-isolate-devices    replicas may open every GPU's device node (an untrusted tenant's are refused);\n"
    "                          default: a replica opens only its own GPUs' device nodes\n"
    "  --no-network-fence      run replicas without the nftables fence between tenants (an untrusted tenant's\n"
    "                          run too); default: fenced when root with nft, else untrusted ones refused\n"
    "  --nft PATH              the nft program of the fence (default /usr/sbin/nft, else nft on PATH)\n"
    "  --min-job-uid N         a job's user below uid N (and root) is refused (default 1000)\n"
    "  --job-uid-base N, --job-uid-span N  a job naming no user runs as uid = gid = N + job id % SPAN\n"
    "                          (default 2000000000 and 100000000)\n"
    "  --default-pids-max N    pids.max of a replica whose job sets no pids_max (default 1024)\n"
    "  --log-max-mib N         a replica's log keeps its newest N MiB (default 64)\n"
    "  --image-store DIR       the image store replicas' images are pulled to (default STATE/images)\n"
    "  --image-store-gib N     its bound: least recently used images no replica holds are evicted (default: none)\n"
    "  --pull-timeout-s S      a pull's limit; skopeo is killed past it (default 900)\n"
    "  --insecure-registry HOST  pull from HOST (HOST:PORT as images name it) without TLS verification (repeatable)\n"
    "  --no-image-hints        do not pre-pull the images gpupoold hints (default: one at a time, in the background)\n"
    "  --keep-scratch-s N      keep a replica's working folder and private /tmp N seconds after it ends\n"
    "  --oci-runtime PATH      the OCI runtime for replicas with an image (default: crun where the cgroups\n"
    "                          allow it, else runc)\n"
    "  --seccomp-profile PATH  the seccomp profile (Docker format) containers run under (default\n"
    "                          /usr/share/containers/seccomp.json, podman's default profile)\n"
    "  --containers MODE       required (default): an untrusted tenant's replica without an image is refused;\n"
    "                          optional: it may run as a bare process\n"
    "                          (default 0: removed at once)\n"
    "  --device-dir DIR        the GPUs' device nodes are DIR/nvidiaN (nvml default /dev)\n"
    "  --heartbeat-s N         heartbeat period (default: what register answered)\n"
    "  --on-exit keep|stop     on SIGTERM: leave replicas running (default) or kill them\n"
    "  --cacert FILE           CA bundle for https servers\n"
    "  --fault-file FILE       sim: the fault file (default NODE_FILE.faults)\n"
    "  --seed N                sim telemetry and back-off jitter seed (default 0)\n"
    "  --mps-control CMD       the MPS control command (default nvidia-cuda-mps-control)\n"
    "  --dcgm-job-map DIR      keep dcgm-exporter's HPC job-mapping files in DIR (one node only)\n"
    "  --health-every S        check every GPU every S seconds (default 300)\n"
    "  --health-check NAME=CMD an operator diagnostic run on idle GPUs at each check and at re-validation\n"
    "                          (repeatable; e.g. gpu-diag='dcgmi diag -r 1'); exit 0 passes\n"
    "  --health-timeout S      a diagnostic or the repair command is killed (failed) after S seconds (default 600)\n"
    "  --repair-command CMD    run on an unhealthy GPU once no replica holds it (GPUPOOL_GPU_INDEX, GPUPOOL_GPU_UUID,\n"
    "                          GPUPOOL_NODE); then re-validation returns the GPU (default: none, re-validate later)\n"
    "  --repair-attempts N     failed repairs before a GPU stays out for an operator (default 3)\n"
    "  --xid-actions FILE      JSON or YAML map XID -> ignore|restart_app|reset_gpu|reboot_node|drain over the\n"
    "                          catalog's table (docs/agent.md)\n"
    "  --metrics-listen HOST:PORT|:PORT|unix:PATH  serve GET /metrics: the nodes' GPUs under dcgm-exporter's\n"
    "                          names and labels, with tenant and job (docs/metrics.md); default: not served.\n"
    "                          :PORT is 127.0.0.1:PORT; a TCP address needs --metrics-token-file; unix:PATH\n"
    "                          is a socket only root may open (0600)\n"
    "  --metrics-token-file FILE  /metrics answers only Authorization: Bearer <FILE's first line>\n";

typedef struct gp_agent {
    gp_agent_options opt;
    const char *only[64]; /* --node names */
    size_t n_only;
    gp_http *http;
    gp_node *nodes;
    size_t n_nodes;
    unsigned registering; /* registrations in flight, of all nodes */
    const char *metrics_listen; /* --metrics-listen HOST:PORT, :PORT or unix:PATH, NULL none */
    const char *metrics_token_file; /* --metrics-token-file, NULL none */
    gp_agent_metrics *metrics;
    gp_ckpt_watch ckpt_watch; /* the nodes' checkpoint folders in a grace */
    gp_image_warmer warmer;   /* pre-pulls of gpupoold's image hints, shared by the nodes (one store) */
} gp_agent;

static int gp__sigpipe[2] = {-1, -1};

static void gp__on_signal(int sig)
{
    unsigned char c = (unsigned char)sig;
    if (write(gp__sigpipe[1], &c, 1) < 0)
        return;
}

/* ---- options ---- */

static int gp__bad(const char *name, const char *value)
{
    fprintf(stderr, "gpupool-agent run: bad value for --%s: %s\n", name, value);
    return 2;
}

/* --server URL[,URL...] (repeatable): the URLs add up. */
static int gp__split_urls(gp_agent_options *o, char *list)
{
    char *urls[GP_AGENT_URLS_MAX];
    int n = gp_server_urls_split(list, urls, GP_AGENT_URLS_MAX - o->n_urls);
    if (n < 0)
        return gp__bad("server", "too many URLs");
    for (int i = 0; i < n; i++)
        o->urls[o->n_urls++] = urls[i];
    return o->n_urls ? -1 : gp__bad("server", "no URL");
}

static int gp__token_file(gp_agent_options *o, const char *path)
{
    char text[GP_AGENT_TOKEN_MAX + 2];
    if (!gp_state_read(path, text, sizeof text)) {
        fprintf(stderr, "gpupool-agent run: cannot read --join-token-file %s: %s\n", path, strerror(errno));
        return 1;
    }
    text[strcspn(text, "\r\n")] = '\0';
    snprintf(o->join_token, sizeof o->join_token, "%s", text);
    return -1;
}

/* --health-check NAME=CMD */
static int gp__diagnostic(gp_agent_options *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : 0;
    if (!eq || len == 0 || len >= sizeof o->diagnostics[0].name || !eq[1] || strspn(arg, "abcdefghijklmnopqrstuvwxyz"
                                                                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                                                      "0123456789_-") != len)
        return gp__bad("health-check", "NAME=COMMAND, NAME of letters, digits, _ and - (at most 31)");
    if (o->n_diagnostics == GP_AGENT_DIAGNOSTICS_MAX)
        return gp__bad("health-check", "too many (at most 8)");
    snprintf(o->diagnostics[o->n_diagnostics].name, sizeof o->diagnostics[0].name, "%.*s", (int)len, arg);
    o->diagnostics[o->n_diagnostics++].command = eq + 1;
    return -1;
}

static int gp__seconds(const char *name, const char *value, int min, int max, int *out)
{
    char *end = NULL;
    long v = strtol(value, &end, 10);
    if (!value[0] || *end || v < min || v > max)
        return gp__bad(name, value);
    *out = (int)v;
    return -1;
}

static int gp__xid_actions(gp_agent_options *o, const char *path)
{
    gp_error err;
    if (gp_xid_table_load(&o->xid, path, &err) == GP_OK)
        return -1;
    fprintf(stderr, "gpupool-agent run: --xid-actions %s\n", err.message);
    return 2;
}

/* Options without a short letter. */
enum { GP__OPT_NVML_LIBRARY = 1400, GP__OPT_ZONE, GP__OPT_BLOCK, GP__OPT_POOL, GP__OPT_SHARING, GP__OPT_METRICS_LISTEN,
       GP__OPT_METRICS_TOKEN_FILE };
/* The node runtime's options (who a job runs as, its limits, its files). */
enum {
    GP__OPT_NO_ISOLATE = 1500,
    GP__OPT_MIN_JOB_UID,
    GP__OPT_JOB_UID_BASE,
    GP__OPT_JOB_UID_SPAN,
    GP__OPT_PIDS_MAX,
    GP__OPT_LOG_MAX_MIB,
    GP__OPT_KEEP_SCRATCH,
    GP__OPT_OCI_RUNTIME,
    GP__OPT_SECCOMP_PROFILE,
    GP__OPT_CONTAINERS,
    GP__OPT_NO_NETWORK_FENCE,
    GP__OPT_NFT
};
/* The image store's options (docs/agent.md "Images"). */
enum { GP__OPT_IMAGE_STORE = 1600, GP__OPT_IMAGE_STORE_GIB, GP__OPT_PULL_TIMEOUT, GP__OPT_INSECURE_REGISTRY,
       GP__OPT_NO_IMAGE_HINTS };

/* --sharing exclusive|mps|timeslice (nvml: GPUs not in MIG mode). */
static int gp__sharing(gp_agent_options *o, const char *name)
{
    int v = 0;
    if (!gp_enum_value(GP_ENUM_SHARING, name, &v) || v == GP_SHARING_MIG)
        return gp__bad("sharing", "exclusive, mps or timeslice (a GPU in MIG mode is mig by itself)");
    o->sharing = (gp_sharing)v;
    return -1;
}

static int gp__backend(gp_agent_options *o, const char *name)
{
    o->nvml = strcmp(name, "nvml") == 0;
    return o->nvml || strcmp(name, "sim") == 0 ? -1 : gp__bad("backend", "sim or nvml");
}

/* --metrics-listen with --metrics-token-file: checked once both are
 * known, served once the nodes are open. */
static int gp__metrics_options(const gp_agent *a)
{
    gp_error err;
    if (!a->metrics_listen || gp_agent_metrics_check(a->metrics_listen, a->metrics_token_file, &err) == GP_OK)
        return -1;
    return gp__bad(err.field, err.message);
}

static int gp__unsigned(const char *name, const char *value, unsigned long min, unsigned long max, unsigned *out)
{
    char *end = NULL;
    unsigned long v = strtoul(value, &end, 10);
    if (!value[0] || value[0] == '-' || *end || v < min || v > max)
        return gp__bad(name, value);
    *out = (unsigned)v;
    return -1;
}

static int gp__runtime_option(gp_agent_options *o, int c)
{
    unsigned mib = 0;
    int rc;
    switch (c) {
    case GP__OPT_NO_ISOLATE: o->isolate_devices = false; return -1;
    case GP__OPT_MIN_JOB_UID: return gp__unsigned("min-job-uid", optarg, 1, 4000000000ul, &o->min_job_uid);
    case GP__OPT_JOB_UID_BASE: return gp__unsigned("job-uid-base", optarg, 1000, 4000000000ul, &o->job_uid_base);
    case GP__OPT_JOB_UID_SPAN: return gp__unsigned("job-uid-span", optarg, 1, 4000000000ul, &o->job_uid_span);
    case GP__OPT_PIDS_MAX: return gp__unsigned("default-pids-max", optarg, 16, 4194304, &o->default_pids_max);
    case GP__OPT_LOG_MAX_MIB:
        rc = gp__unsigned("log-max-mib", optarg, 1, 1048576, &mib);
        o->log_max_bytes = (int64_t)mib << 20;
        return rc;
    case GP__OPT_KEEP_SCRATCH: return gp__seconds("keep-scratch-s", optarg, 0, 30 * 86400, &o->keep_scratch_s);
    case GP__OPT_OCI_RUNTIME: o->oci_runtime = optarg; return -1;
    case GP__OPT_SECCOMP_PROFILE: o->seccomp_profile = optarg; return -1;
    case GP__OPT_CONTAINERS:
        o->containers_optional = strcmp(optarg, "optional") == 0;
        return o->containers_optional || strcmp(optarg, "required") == 0 ? -1 : gp__bad("containers", "required or optional");
    case GP__OPT_NO_NETWORK_FENCE: o->no_network_fence = true; return -1;
    case GP__OPT_NFT: o->nft = optarg; return -1;
    default: return 2;
    }
}

static int gp__image_option(gp_agent_options *o, int c)
{
    unsigned v = 0;
    int rc;
    switch (c) {
    case GP__OPT_IMAGE_STORE: snprintf(o->image_store, sizeof o->image_store, "%s", optarg); return -1;
    case GP__OPT_IMAGE_STORE_GIB:
        rc = gp__unsigned("image-store-gib", optarg, 1, 1048576, &v);
        o->image_store_bytes = (int64_t)v << 30;
        return rc;
    case GP__OPT_PULL_TIMEOUT: return gp__seconds("pull-timeout-s", optarg, 1, 86400, &o->image_pull.timeout_s);
    case GP__OPT_INSECURE_REGISTRY:
        if (o->image_pull.n_insecure == GP_IMAGE_INSECURE_MAX)
            return gp__bad("insecure-registry", "too many (at most 8)");
        o->image_pull.insecure[o->image_pull.n_insecure++] = optarg;
        return -1;
    case GP__OPT_NO_IMAGE_HINTS: o->no_image_hints = true; return -1;
    default: return 2;
    }
}

static int gp__option(gp_agent *a, int c)
{
    if (c >= GP__OPT_NO_ISOLATE && c <= GP__OPT_NFT)
        return gp__runtime_option(&a->opt, c);
    if (c >= GP__OPT_IMAGE_STORE && c <= GP__OPT_NO_IMAGE_HINTS)
        return gp__image_option(&a->opt, c);
    gp_agent_options *o = &a->opt;
    char *end = NULL;
    switch (c) {
    case 'S': return gp__split_urls(o, optarg);
    case 'j':
        fputs("gpupool-agent run: --join-token is gone (a command line is in every process's view: ps); give"
              " --join-token-file FILE or the environment variable GPUPOOL_JOIN_TOKEN\n", stderr);
        return 2;
    case 'J': return gp__token_file(o, optarg);
    case 'b': return gp__backend(o, optarg);
    case GP__OPT_NVML_LIBRARY: o->nvml_library = optarg; return -1;
    case GP__OPT_ZONE: o->zone = optarg; return -1;
    case GP__OPT_BLOCK: o->block = optarg; return -1;
    case GP__OPT_POOL: o->pool = optarg; return -1;
    case GP__OPT_SHARING: return gp__sharing(o, optarg);
    case GP__OPT_METRICS_LISTEN: a->metrics_listen = optarg; return -1;
    case GP__OPT_METRICS_TOKEN_FILE: a->metrics_token_file = optarg; return -1;
    case 'f': o->node_file = optarg; return -1;
    case 'n':
        if (a->n_only == sizeof a->only / sizeof a->only[0])
            return gp__bad("node", "too many; give none to run every node of the file");
        a->only[a->n_only++] = optarg;
        return -1;
    case 'd': o->state_dir = optarg; return -1;
    case 'w': snprintf(o->work_root, sizeof o->work_root, "%s", optarg); return -1;
    case 'c': snprintf(o->checkpoint_root, sizeof o->checkpoint_root, "%s", optarg); return -1;
    case 'g': o->cgroup_parent = optarg; return -1;
    case 'G': o->no_cgroups = true; return -1;
    case 'i': o->isolate_devices = true; return -1; /* the default; accepted for old scripts */
    case 'D': o->device_dir = optarg; return -1;
    case 'H':
        o->heartbeat_s = (int)strtol(optarg, &end, 10);
        return *end || o->heartbeat_s < 1 || o->heartbeat_s > 3600 ? gp__bad("heartbeat-s", optarg) : -1;
    case 'e':
        o->stop_on_exit = strcmp(optarg, "stop") == 0;
        return o->stop_on_exit || strcmp(optarg, "keep") == 0 ? -1 : gp__bad("on-exit", optarg);
    case 'C': o->cacert = optarg; return -1;
    case 'F': o->fault_file = optarg; return -1;
    case 's':
        o->seed = strtoull(optarg, &end, 10);
        return *end ? gp__bad("seed", optarg) : -1;
    case 'M': o->mps_control = optarg; return -1;
    case 'm': o->dcgm_job_map = optarg; return -1;
    case 'E': return gp__seconds("health-every", optarg, 1, 86400, &o->health_every_s);
    case 'K': return gp__diagnostic(o, optarg);
    case 'T': return gp__seconds("health-timeout", optarg, 1, 86400, &o->health_timeout_s);
    case 'r': o->repair_command = optarg[0] ? optarg : NULL; return -1;
    case 'A': return gp__seconds("repair-attempts", optarg, 1, 1000, &o->repair_attempts);
    case 'X': return gp__xid_actions(o, optarg);
    case 'h': fputs(USAGE, stdout); return 0;
    default: fputs(USAGE, stderr); return 2;
    }
}

/* No --join-token-file: the environment's GPUPOOL_JOIN_TOKEN, if set; it
 * leaves the environment either way, so no child (a health check, the
 * repair command) inherits it. */
static void gp__token_from_env(gp_agent_options *o)
{
    const char *env = getenv("GPUPOOL_JOIN_TOKEN");
    if (!o->join_token[0] && env)
        snprintf(o->join_token, sizeof o->join_token, "%s", env);
    unsetenv("GPUPOOL_JOIN_TOKEN");
}

static int gp__required(gp_agent *a)
{
    gp_agent_options *o = &a->opt;
    gp__token_from_env(o);
    const char *missing = !o->n_urls ? "--server" : !o->join_token[0] ? "--join-token-file or GPUPOOL_JOIN_TOKEN"
                          : !o->node_file && !o->nvml ? "--node-file" : !o->state_dir ? "--state-dir" : NULL;
    if (missing) {
        fprintf(stderr, "gpupool-agent run: %s is required\n%s", missing, USAGE);
        return 2;
    }
    if (o->nvml && a->n_only > 1) {
        fputs("gpupool-agent run: --backend nvml runs this host as one node: give at most one --node\n", stderr);
        return 2;
    }
    if ((unsigned long long)o->job_uid_base + o->job_uid_span > 4294967294ull) {
        fputs("gpupool-agent run: --job-uid-base + --job-uid-span must stay below 4294967295\n", stderr);
        return 2;
    }
    return -1;
}

static int gp__parse(int argc, char **argv, gp_agent *a)
{
    static const struct option opts[] = {
        {"server", required_argument, NULL, 'S'},        {"join-token", required_argument, NULL, 'j'},
        {"join-token-file", required_argument, NULL, 'J'}, {"backend", required_argument, NULL, 'b'},
        {"node-file", required_argument, NULL, 'f'},     {"node", required_argument, NULL, 'n'},
        {"state-dir", required_argument, NULL, 'd'},     {"work-root", required_argument, NULL, 'w'},
        {"checkpoint-root", required_argument, NULL, 'c'}, {"cgroup-parent", required_argument, NULL, 'g'},
        {"no-cgroups", no_argument, NULL, 'G'},          {"isolate-devices", no_argument, NULL, 'i'},
        {"device-dir", required_argument, NULL, 'D'},    {"heartbeat-s", required_argument, NULL, 'H'},
        {"on-exit", required_argument, NULL, 'e'},       {"cacert", required_argument, NULL, 'C'},
        {"fault-file", required_argument, NULL, 'F'},    {"seed", required_argument, NULL, 's'},
        {"mps-control", required_argument, NULL, 'M'},   {"dcgm-job-map", required_argument, NULL, 'm'},
        {"health-every", required_argument, NULL, 'E'},  {"health-check", required_argument, NULL, 'K'},
        {"health-timeout", required_argument, NULL, 'T'}, {"repair-command", required_argument, NULL, 'r'},
        {"repair-attempts", required_argument, NULL, 'A'}, {"xid-actions", required_argument, NULL, 'X'},
        {"nvml-library", required_argument, NULL, GP__OPT_NVML_LIBRARY},
        {"zone", required_argument, NULL, GP__OPT_ZONE},  {"block", required_argument, NULL, GP__OPT_BLOCK},
        {"pool", required_argument, NULL, GP__OPT_POOL}, {"sharing", required_argument, NULL, GP__OPT_SHARING},
        {"metrics-listen", required_argument, NULL, GP__OPT_METRICS_LISTEN},
        {"metrics-token-file", required_argument, NULL, GP__OPT_METRICS_TOKEN_FILE},
        {"no-isolate-devices", no_argument, NULL, GP__OPT_NO_ISOLATE},
        {"no-network-fence", no_argument, NULL, GP__OPT_NO_NETWORK_FENCE},
        {"nft", required_argument, NULL, GP__OPT_NFT},
        {"min-job-uid", required_argument, NULL, GP__OPT_MIN_JOB_UID},
        {"job-uid-base", required_argument, NULL, GP__OPT_JOB_UID_BASE},
        {"job-uid-span", required_argument, NULL, GP__OPT_JOB_UID_SPAN},
        {"default-pids-max", required_argument, NULL, GP__OPT_PIDS_MAX},
        {"log-max-mib", required_argument, NULL, GP__OPT_LOG_MAX_MIB},
        {"keep-scratch-s", required_argument, NULL, GP__OPT_KEEP_SCRATCH},
        {"oci-runtime", required_argument, NULL, GP__OPT_OCI_RUNTIME},
        {"seccomp-profile", required_argument, NULL, GP__OPT_SECCOMP_PROFILE},
        {"containers", required_argument, NULL, GP__OPT_CONTAINERS},
        {"image-store", required_argument, NULL, GP__OPT_IMAGE_STORE},
        {"image-store-gib", required_argument, NULL, GP__OPT_IMAGE_STORE_GIB},
        {"pull-timeout-s", required_argument, NULL, GP__OPT_PULL_TIMEOUT},
        {"insecure-registry", required_argument, NULL, GP__OPT_INSECURE_REGISTRY},
        {"no-image-hints", no_argument, NULL, GP__OPT_NO_IMAGE_HINTS},
        {"help", no_argument, NULL, 'h'},                {NULL, 0, NULL, 0},
    };
    int c, rc = -1;
    optind = 1;
    a->opt.health_every_s = 300;
    a->opt.health_timeout_s = 600;
    a->opt.repair_attempts = 3;
    a->opt.isolate_devices = true;
    a->opt.min_job_uid = 1000;
    a->opt.job_uid_base = 2000000000u;
    a->opt.job_uid_span = 100000000u;
    a->opt.default_pids_max = 1024;
    a->opt.log_max_bytes = 64ll << 20;
    gp_xid_table_default(&a->opt.xid);
    while (rc == -1 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
        rc = gp__option(a, c);
    if (rc == -1 && optind < argc) {
        fprintf(stderr, "gpupool-agent run: unexpected argument %s\n", argv[optind]);
        rc = 2;
    }
    if (rc == -1)
        rc = gp__required(a);
    return rc == -1 ? gp__metrics_options(a) : rc;
}

/* ---- setting up ---- */

/* path (absolute, resolved) is /tmp or /var/tmp or lies in one. */
static bool gp__under_tmp(const char *path)
{
    const char *tmps[] = {"/tmp", "/var/tmp"};
    for (size_t i = 0; i < 2; i++) {
        size_t len = strlen(tmps[i]);
        if (strncmp(path, tmps[i], len) == 0 && (path[len] == '/' || path[len] == '\0'))
            return true;
    }
    return false;
}

/* The seccomp profile containers run under loads and resolves now: a bad
 * --seccomp-profile stops the agent at start; the default one missing
 * (a host without golang-github-containers-common) leaves the agent
 * without containers, said in its log. */
static gp_err gp__seccomp_check(const gp_agent_options *o, gp_error *err)
{
    const char *path = o->seccomp_profile ? o->seccomp_profile : GP_CONTAINER_SECCOMP_PROFILE;
    json_error_t jerr;
    json_t *profile = json_load_file(path, 0, &jerr), *resolved = NULL;
    if (!profile)
        return gp_error_set(err, GP_ERR_INVALID, "seccomp_profile", "%s: %s", path, jerr.text);
    gp_err rc = gp_seccomp_resolve(profile, gp_seccomp_native_arch(), NULL, false, &resolved, err);
    json_decref(resolved);
    json_decref(profile);
    return rc;
}

/* The OCI runtime for replicas with an image, chosen once (container.h);
 * the choice is logged once the nodes are open (gp__start), so a start
 * that fails says only why.  None installed: those replicas fail with that
 * reason. */
static int gp__choose_runtime(gp_agent_options *o)
{
    gp_cgroup_host host;
    gp_error err;
    char why[GP_STATE_PATH_MAX + 128];
    if (gp_cgroup_host_detect(&host, NULL, &err) != GP_OK)
        host.layout = GP_CGROUP_NONE;
    if (gp__seccomp_check(o, &err) != GP_OK) {
        if (o->seccomp_profile)
            return gp__bad("seccomp-profile", err.message);
        o->runtime[0] = '\0';
        snprintf(o->runtime_note, sizeof o->runtime_note,
                 "gpupool-agent: WARNING: containers: %s: replicas with an image cannot start (--seccomp-profile)",
                 err.message);
        return -1;
    }
    if (gp_container_runtime_choose(o->oci_runtime, host.layout, o->runtime, sizeof o->runtime, why, sizeof why,
                                    &err) == GP_OK) {
        snprintf(o->runtime_note, sizeof o->runtime_note, "gpupool-agent: containers: %s", why);
        return -1;
    }
    if (o->oci_runtime)
        return gp__bad("oci-runtime", err.message);
    snprintf(o->runtime_note, sizeof o->runtime_note,
             "gpupool-agent: WARNING: containers: %s: replicas with an image cannot start", err.message);
    return -1;
}

/* The image store's folder (default STATE/images), made and checked now:
 * a bad --image-store stops the agent at start, not a replica's pull. */
static int gp__image_store_path(gp_agent_options *o)
{
    gp_image_store *store;
    gp_error err;
    if (!o->image_store[0])
        snprintf(o->image_store, sizeof o->image_store, "%s/images", o->state_dir);
    if (gp_image_store_open(o->image_store, o->image_store_bytes, &store, &err) != GP_OK) {
        fprintf(stderr, "gpupool-agent run: --image-store %s: %s\n", o->image_store, err.message);
        return 1;
    }
    gp_image_store_close(store);
    return -1;
}

/* Absolute state and checkpoint folders, and this binary's path. */
static int gp__paths(gp_agent_options *o)
{
    static char state[GP_STATE_PATH_MAX];
    gp_error err;
    if (gp_state_mkdirs(o->state_dir, 0711, &err) != GP_OK || !realpath(o->state_dir, state)) {
        fprintf(stderr, "gpupool-agent run: --state-dir %s: %s\n", o->state_dir, err.message);
        return 1;
    }
    o->state_dir = state;
    char ckpt[GP_STATE_PATH_MAX];
    if (!o->checkpoint_root[0])
        snprintf(o->checkpoint_root, sizeof o->checkpoint_root, "%s/checkpoints", state);
    /* 0711: a job reaches its own folder (0700, its uid's) and lists none */
    if (gp_state_mkdirs(o->checkpoint_root, 0711, &err) != GP_OK || !realpath(o->checkpoint_root, ckpt)) {
        fprintf(stderr, "gpupool-agent run: --checkpoint-root %s: %s\n", o->checkpoint_root, err.message);
        return 1;
    }
    snprintf(o->checkpoint_root, sizeof o->checkpoint_root, "%s", ckpt);
    if (chmod(ckpt, 0711) != 0)
        fprintf(stderr, "gpupool-agent: WARNING: cannot make --checkpoint-root %s 0711: %s\n", ckpt, strerror(errno));
    if (gp__image_store_path(o) != -1)
        return 1;
    char work[GP_STATE_PATH_MAX];
    if (o->work_root[0] && gp_state_mkdirs(o->work_root, 0755, &err) == GP_OK && realpath(o->work_root, work))
        snprintf(o->work_root, sizeof o->work_root, "%s", work);
    o->private_tmp = geteuid() == 0 && !gp__under_tmp(o->state_dir) && !gp__under_tmp(o->checkpoint_root) &&
                     !gp__under_tmp(o->work_root);
    ssize_t len = readlink("/proc/self/exe", o->self_exe, sizeof o->self_exe - 1);
    if (len <= 0) {
        fprintf(stderr, "gpupool-agent run: cannot find its own binary: %s\n", strerror(errno));
        return 1;
    }
    o->self_exe[len] = '\0';
    const char *slash = strrchr(o->self_exe, '/');
    int dir_len = slash ? (int)(slash - o->self_exe) : 0;
    snprintf(o->supervise_exe, sizeof o->supervise_exe, "%.*s/gpupool-supervise", dir_len, o->self_exe);
    if (access(o->supervise_exe, X_OK) != 0)
        o->supervise_exe[0] = '\0'; /* an older install: the agent supervises as itself */
    return gp__choose_runtime(o);
}

static bool gp__chosen(const gp_agent *a, const char *name)
{
    if (a->n_only == 0)
        return true;
    for (size_t i = 0; i < a->n_only; i++)
        if (strcmp(a->only[i], name) == 0)
            return true;
    return false;
}

static int gp__open_nodes(gp_agent *a, gp_node_file *f)
{
    gp_error err;
    if (a->opt.dcgm_job_map && (a->n_only ? a->n_only : f->n_nodes) != 1) {
        fputs("gpupool-agent run: --dcgm-job-map keeps one node's GPUs: give one --node NAME\n", stderr);
        return 2;
    }
    for (size_t i = 0; i < a->n_only; i++) {
        size_t index;
        if (gp_node_file_find(f, a->only[i], &index, &err) != GP_OK) {
            fprintf(stderr, "gpupool-agent run: %s\n", err.message);
            return 1;
        }
    }
    a->nodes = calloc(f->n_nodes ? f->n_nodes : 1, sizeof *a->nodes);
    if (!a->nodes)
        return 1;
    for (size_t i = 0; i < f->n_nodes; i++) {
        if (!gp__chosen(a, f->nodes[i].name))
            continue;
        if (a->opt.device_dir)
            snprintf(f->nodes[i].device_dir, sizeof f->nodes[i].device_dir, "%s", a->opt.device_dir);
        if (gp_node_open(&a->nodes[a->n_nodes], &a->opt, a->http, &a->registering, f, i, a->n_nodes, &err) != GP_OK) {
            fprintf(stderr, "gpupool-agent run: node %s: %s (field %s)\n", f->nodes[i].name, err.message, err.field);
            gp_node_close(&a->nodes[a->n_nodes]);
            return 1;
        }
        a->n_nodes++;
    }
    return -1;
}

/* --backend nvml: this host as one node. */
static int gp__open_nvml_node(gp_agent *a)
{
    const gp_agent_options *o = &a->opt;
    gp_gpu_options go = {.node = a->n_only ? a->only[0] : NULL, .nvml_library = o->nvml_library,
                         .device_dir = o->device_dir, .zone = o->zone, .block = o->block, .pool = o->pool,
                         .sharing = o->sharing};
    gp_gpu gpu;
    gp_error err;
    a->nodes = calloc(1, sizeof *a->nodes);
    if (!a->nodes)
        return 1;
    if (gp_gpu_open("nvml", &go, &gpu, &err) != GP_OK) {
        fprintf(stderr, "gpupool-agent run: %s\n", err.message);
        return 1;
    }
    if (gp_node_open_gpu(&a->nodes[0], &a->opt, a->http, &a->registering, &gpu, 0, &err) != GP_OK) {
        fprintf(stderr, "gpupool-agent run: node %s: %s (field %s)\n", a->nodes[0].name, err.message, err.field);
        gp_node_close(&a->nodes[0]);
        return 1;
    }
    a->n_nodes = 1;
    return -1;
}

/* Each node holds one connection in its long-poll; its other calls are
 * short and share a pool of a quarter as many, so that gpupoold (a
 * thread per connection) holds n + n/4 + 16 of them, not 2n or more. */
static long gp__connections(size_t nodes)
{
    return (long)(nodes + nodes / 4 + 16);
}

/* Many nodes, many sockets: the soft limit of open files up to the hard one. */
static void gp__raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int gp__signals(void)
{
    if (pipe2(gp__sigpipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return 1;
    struct sigaction sa = {.sa_handler = gp__on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return -1;
}

/* ---- the loop ---- */

#define GP__READY_MAX 256

static gp_http_fd gp__signal_watch;

/* A `.done` appeared in a watched checkpoint folder: its nodes look now. */
static void gp__checkpoints_changed(gp_agent *a)
{
    int wds[64];
    size_t count = gp_ckpt_watch_read(&a->ckpt_watch, wds, sizeof wds / sizeof wds[0]);
    for (size_t i = 0; i < a->n_nodes && count > 0; i++)
        gp_node_checkpoint_changed(&a->nodes[i], wds, count);
}

/* One turn: step the nodes, wait, handle what woke us.  false: stop. */
static bool gp__turn(gp_agent *a, int *status)
{
    int64_t now = gp_agent_mono_ms(), next = now + 1000;
    for (size_t i = 0; i < a->n_nodes; i++) {
        int64_t due = gp_node_step(&a->nodes[i], now);
        next = due < next ? due : next;
        if (a->nodes[i].fatal)
            *status = a->nodes[i].fatal;
    }
    if (*status)
        return false;
    gp_image_warmer_step(&a->warmer, now);
    void *ready[GP__READY_MAX];
    int64_t wait = next - gp_agent_mono_ms();
    size_t n = gp_http_wait(a->http, wait < 0 ? 0 : wait > 1000 ? 1000 : (int)wait, ready, GP__READY_MAX);
    bool go_on = true;
    for (size_t i = 0; i < n; i++) {
        if (ready[i] == &gp__signal_watch) {
            unsigned char c[16];
            go_on = read(gp__sigpipe[0], c, sizeof c) <= 0;
            continue;
        }
        if (ready[i] == &gp_node_child_tag)
            continue; /* a health check ended: reaped below */
        if (ready[i] == &a->ckpt_watch) {
            gp__checkpoints_changed(a);
            continue;
        }
        gp_replica *r = ready[i];
        if (r->pidfd >= 0)
            gp_node_replica_ended(r->node, r);
    }
    pid_t pid;
    int child_status;
    while ((pid = waitpid(-1, &child_status, WNOHANG)) > 0) {
        if (gp_image_warmer_reaped(&a->warmer, pid, child_status, gp_agent_mono_ms()))
            continue;
        for (size_t i = 0; i < a->n_nodes && !gp_node_child_reaped(&a->nodes[i], pid, child_status); i++)
            ;
    }
    return go_on;
}

/* --on-exit stop: kill every replica, wait for their ends, send them. */
static void gp__stop_all(gp_agent *a)
{
    for (size_t i = 0; i < a->n_nodes; i++)
        gp_node_kill_all(&a->nodes[i]);
    int64_t until = gp_agent_mono_ms() + GP__SHUTDOWN_MS;
    int status = 0;
    bool live = true;
    while (live && gp_agent_mono_ms() < until) {
        gp__turn(a, &status);
        live = false;
        for (size_t i = 0; i < a->n_nodes; i++)
            live |= gp_node_has_live_replicas(&a->nodes[i]);
    }
    for (size_t i = 0; i < a->n_nodes; i++)
        gp_node_mps_sweep(&a->nodes[i]); /* the MPS daemons of the replicas that ended */
}

static int gp__run(gp_agent *a)
{
    int status = 0;
    gp_error err;
    gp__signal_watch = (gp_http_fd){.fd = gp__sigpipe[0], .tag = &gp__signal_watch};
    if (gp_http_watch(a->http, &gp__signal_watch, &err) != GP_OK) {
        fprintf(stderr, "gpupool-agent run: %s\n", err.message);
        return 1;
    }
    while (gp__turn(a, &status))
        ;
    if (a->opt.stop_on_exit)
        gp__stop_all(a);
    return status;
}

/* Opens the node file's nodes (sim) or this host (nvml). */
static int gp__open(gp_agent *a)
{
    gp_error err;
    if (a->opt.nvml)
        return gp_http_open(a->opt.cacert, gp__connections(1), &a->http, &err) != GP_OK ? 1 : gp__open_nvml_node(a);
    gp_node_file f;
    if (gp_node_file_load(a->opt.node_file, &f, &err) != GP_OK) {
        fprintf(stderr, "gpupool-agent run: %s (field %s)\n", err.message, err.field);
        return 1;
    }
    int rc = -1;
    if (gp_http_open(a->opt.cacert, gp__connections(a->n_only ? a->n_only : f.n_nodes), &a->http, &err) != GP_OK)
        rc = 1;
    if (rc == -1)
        rc = gp__open_nodes(a, &f);
    gp_node_file_free(&f);
    return rc;
}

/* The checkpoint watch, shared by the nodes; without one (no inotify
 * instance left) they look every 20 ms in a grace, as before. */
static void gp__watch_checkpoints(gp_agent *a)
{
    gp_error err;
    if (gp_ckpt_watch_open(&a->ckpt_watch, a->http, &err) != GP_OK) {
        fprintf(stderr, "gpupool-agent: no checkpoint watch (%s): looking every 20 ms in a grace\n", err.message);
        return;
    }
    for (size_t i = 0; i < a->n_nodes; i++)
        a->nodes[i].ckpt_watch = &a->ckpt_watch;
}

/* The nodes offer their image hints to the one warmer (--no-image-hints: none). */
static void gp__warm_hinted_images(gp_agent *a)
{
    gp_image_warmer_init(&a->warmer, a->opt.no_image_hints ? NULL : &a->opt);
    for (size_t i = 0; i < a->n_nodes && !a->opt.no_image_hints; i++)
        a->nodes[i].warmer = &a->warmer;
}

/* --metrics-listen: the server, and each node publishing to it. */
static int gp__serve_metrics(gp_agent *a)
{
    gp_error err;
    if (!a->metrics_listen)
        return -1;
    if (gp_agent_metrics_start(a->metrics_listen, a->metrics_token_file, a->n_nodes, &a->metrics, &err) != GP_OK) {
        fprintf(stderr, "gpupool-agent run: %s\n", err.message);
        return 1;
    }
    gp_agent_metrics_image_store(a->metrics, a->opt.image_store);
    for (size_t i = 0; i < a->n_nodes; i++)
        a->nodes[i].metrics = a->metrics;
    return -1;
}

/* What this agent does not fence, loudly, once at start. */
static void gp__warn_isolation(const gp_agent_options *o)
{
    if (!o->isolate_devices)
        fputs("gpupool-agent: WARNING: --no-isolate-devices: every replica can open every GPU device node of its "
              "node; replicas of untrusted tenants are refused\n",
              stderr);
    if (o->no_network_fence)
        fputs("gpupool-agent: WARNING: --no-network-fence: replicas reach any address, other tenants' replicas "
              "included; replicas of untrusted tenants run unfenced\n",
              stderr);
    if (o->no_cgroups)
        fputs("gpupool-agent: WARNING: --no-cgroups: no CPU, memory or pids limits and no device isolation; "
              "replicas of untrusted tenants are refused\n",
              stderr);
    if (o->containers_optional)
        fputs("gpupool-agent: WARNING: --containers optional: an untrusted tenant's job without an image runs as a "
              "bare host process\n",
              stderr);
    if (geteuid() != 0)
        fputs("gpupool-agent: WARNING: not root: every replica runs as this agent's user, with no private /tmp\n",
              stderr);
    else if (!o->private_tmp)
        fputs("gpupool-agent: WARNING: replicas share the host's /tmp and /var/tmp (their /dev/shm is their own): "
              "--state-dir, --work-root or --checkpoint-root lies under one, which a private one would hide\n",
              stderr);
}

static int gp__start(gp_agent *a)
{
    int rc = gp__paths(&a->opt);
    if (rc != -1)
        return rc;
    gp__raise_fd_limit();
    rc = gp__open(a);
    if (rc == -1)
        gp__watch_checkpoints(a);
    if (rc == -1)
        gp__warm_hinted_images(a);
    if (rc == -1)
        rc = gp__serve_metrics(a);
    if (rc == -1)
        rc = gp__signals();
    if (rc == -1) {
        gp__warn_isolation(&a->opt);
        fprintf(stderr, "%s\n", a->opt.runtime_note);
        fprintf(stderr, "gpupool-agent: running %zu node(s) against %s\n", a->n_nodes, a->opt.urls[0]);
        rc = gp__run(a);
    }
    gp_agent_metrics_stop(a->metrics); /* its thread ends before the nodes close */
    for (size_t i = 0; i < a->n_nodes; i++)
        gp_node_close(&a->nodes[i]);
    free(a->nodes);
    gp_ckpt_watch_close(&a->ckpt_watch, a->http);
    gp_http_close(a->http);
    return rc;
}

int gp_agent_run_main(int argc, char **argv)
{
    static gp_agent a;
    memset(&a, 0, sizeof a);
    a.ckpt_watch.fd = -1; /* none until gp__watch_checkpoints */
    int rc = gp__parse(argc, argv, &a);
    if (rc != -1)
        return rc;
    return gp__start(&a);
}

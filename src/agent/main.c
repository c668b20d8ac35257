/* main.c - gpupool-agent: the node agent's command line.
 *
 * The commands that look at a node through the GPU interface (gpu.h):
 * `inventory` prints what registration will send, `telemetry` one sample
 * (sim or nvml; nvml without a driver: "no NVIDIA driver: ...", exit 1),
 * and `fault` appends a fault to a sim node's fault file.  Joining
 * gpupoold and running work come later (docs/agent.md).
 *
 * Exit status: 0 done, 1 the node, its file or the backend refused
 * (the message names the field), 2 a bad command line.
 */
#include "agent/agent.h"
#include "agent/gpu/gpu.h"
#include "agent/gpu/gpu_json.h"
#include "agent/gpu/gpu_sim.h"
#include "agent/image/image_store.h"
#include "agent/supervise/supervise.h"
#include "spec/spec_json.h"
#include "version.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char USAGE[] =
    "usage: gpupool-agent COMMAND [options]\n"
    "\n"
    "The gpupool node agent.\n"
    "\n"
    "commands:\n"
    "  run         join gpupoold and run what it assigns (gpupool-agent run --help)\n"
    "  inventory   print the node's GPUs as JSON (what registration sends)\n"
    "  telemetry   print one telemetry sample as JSON\n"
    "  fault       inject a fault into a sim node (appends to its fault file)\n"
    "  image       pull, list and prune the node's image store (gpupool-agent image --help)\n"
    "\n"
    "options:\n"
    "  --backend NAME          GPU backend: sim or nvml (inventory, telemetry)\n"
    "  --node-file FILE        sim: the node file (YAML or JSON)\n"
    "  --node NAME             sim: the node of the file (needed when it lists several);\n"
    "                          nvml: the node's name (default: the host name)\n"
    "  --nvml-library PATH     nvml: the NVML library (default $GPUPOOL_NVML_LIBRARY, else libnvidia-ml.so.1)\n"
    "  --fault-file FILE       sim: the fault file (default NODE_FILE.faults)\n"
    "  --seed N                sim: telemetry seed (default 0)\n"
    "  --at-ms MS              telemetry: the time of the sample, ms (default: now)\n"
    "  --gpu N                 fault: the GPU index\n"
    "  --xid CODE              fault: an XID error (e.g. 79: fell off the bus)\n"
    "  --ecc-corrected N       fault: N corrected ECC errors\n"
    "  --ecc-uncorrected N     fault: N uncorrected ECC errors\n"
    "  --lost                  fault: the GPU is lost\n"
    "  --reset                 fault: the GPU is reset (a repair: back on the bus, volatile ECC cleared)\n"
    "  --memory-mib M --pid P  fault: process P holds M MiB of the GPU (0: none); state, not an event\n"
    "  --uuid MIG-...          fault: with --memory-mib, on that MIG instance of the GPU\n"
    "  --version               the version and git commit\n"
    "  -h, --help              this text\n";

typedef struct agent_args {
    const char *command;
    const char *backend;
    gp_gpu_options gpu;
    int64_t at_ms;
    bool at_given;
    gp_gpu_event fault;
    int fault_kinds;
    int64_t pid, memory_mib;             /* a memory line: --pid, --memory-mib (-1: not given) */
    const char *uuid;
} agent_args;

static bool parse_int(const char *text, long long min, long long max, int64_t *out)
{
    char *end;
    long long v = strtoll(text, &end, 10);
    if (!text[0] || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static int bad_option(const char *name, const char *value)
{
    fprintf(stderr, "gpupool-agent: bad value for --%s: %s\n", name, value);
    return 2;
}

/* A fault option: the kind and its number. */
static int fault_option(agent_args *a, gp_gpu_event_kind kind, const char *name, const char *value, int64_t *out)
{
    a->fault.kind = kind;
    a->fault_kinds += kind != GP_GPU_EVENT_ECC || (!a->fault.ecc_corrected && !a->fault.ecc_uncorrected);
    if (value && !parse_int(value, 1, 1000000000, out))
        return bad_option(name, value);
    return -1;
}

enum { OPT_NVML_LIBRARY = 1400 };

static int parse_option(agent_args *a, int c)
{
    int64_t v = 0;
    switch (c) {
    case 'b': a->backend = optarg; return -1;
    case 'f': a->gpu.node_file = optarg; return -1;
    case 'n': a->gpu.node = optarg; return -1;
    case 'F': a->gpu.fault_file = optarg; return -1;
    case OPT_NVML_LIBRARY: a->gpu.nvml_library = optarg; return -1;
    case 's':
        if (!parse_int(optarg, 0, INT64_MAX, &v))
            return bad_option("seed", optarg);
        a->gpu.seed = (uint64_t)v;
        return -1;
    case 'a':
        a->at_given = true;
        return parse_int(optarg, 0, INT64_MAX, &a->at_ms) ? -1 : bad_option("at-ms", optarg);
    case 'g':
        if (!parse_int(optarg, 0, GP_MAX_GPUS_PER_NODE - 1, &v))
            return bad_option("gpu", optarg);
        a->fault.gpu = (int)v;
        return -1;
    case 'x':
        if (fault_option(a, GP_GPU_EVENT_XID, "xid", optarg, &v) != -1)
            return 2;
        a->fault.xid = (int)v;
        return -1;
    case 'c': return fault_option(a, GP_GPU_EVENT_ECC, "ecc-corrected", optarg, &a->fault.ecc_corrected);
    case 'u': return fault_option(a, GP_GPU_EVENT_ECC, "ecc-uncorrected", optarg, &a->fault.ecc_uncorrected);
    case 'L': return fault_option(a, GP_GPU_EVENT_LOST, "lost", NULL, NULL);
    case 'R': return fault_option(a, GP_GPU_EVENT_RESET, "reset", NULL, NULL);
    case 'P': return parse_int(optarg, 1, INT32_MAX, &a->pid) ? -1 : bad_option("pid", optarg);
    case 'M':
        a->fault_kinds++;
        return parse_int(optarg, 0, INT64_C(1) << 40, &a->memory_mib) ? -1 : bad_option("memory-mib", optarg);
    case 'U': a->uuid = optarg; return -1;
    case 'V': printf("gpupool-agent %s (commit %s)\n", GP_VERSION, GP_GIT_COMMIT); return 0;
    case 'h': fputs(USAGE, stdout); return 0;
    default: fputs(USAGE, stderr); return 2;
    }
}

/* -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, agent_args *a)
{
    static const struct option opts[] = {
        {"backend", required_argument, NULL, 'b'},  {"node-file", required_argument, NULL, 'f'},
        {"node", required_argument, NULL, 'n'},     {"fault-file", required_argument, NULL, 'F'},
        {"seed", required_argument, NULL, 's'},     {"at-ms", required_argument, NULL, 'a'},
        {"gpu", required_argument, NULL, 'g'},      {"xid", required_argument, NULL, 'x'},
        {"ecc-corrected", required_argument, NULL, 'c'}, {"ecc-uncorrected", required_argument, NULL, 'u'},
        {"lost", no_argument, NULL, 'L'},           {"reset", no_argument, NULL, 'R'},           {"version", no_argument, NULL, 'V'},
        {"pid", required_argument, NULL, 'P'},      {"memory-mib", required_argument, NULL, 'M'},
        {"uuid", required_argument, NULL, 'U'},
        {"nvml-library", required_argument, NULL, OPT_NVML_LIBRARY},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    int c, rc = -1;
    a->fault.gpu = -1;
    a->pid = a->memory_mib = -1;
    while (rc == -1 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
        rc = parse_option(a, c);
    if (rc != -1)
        return rc;
    if (optind >= argc) {
        fputs(USAGE, stderr);
        return 2;
    }
    a->command = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "gpupool-agent: unexpected argument %s\n", argv[optind]);
        return 2;
    }
    return -1;
}

static int fail(const gp_error *err)
{
    fprintf(stderr, "gpupool-agent: %s (field %s)\n", err->message, err->field);
    return 1;
}

static int print_json(json_t *o)
{
    char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (!text) {
        fputs("gpupool-agent: out of memory\n", stderr);
        return 1;
    }
    puts(text);
    free(text);
    return 0;
}

static int64_t clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* inventory and telemetry: open the node, print, close. */
static int cmd_look(const agent_args *a)
{
    if (!a->backend) {
        fputs("gpupool-agent: --backend is required (sim or nvml)\n", stderr);
        return 2;
    }
    gp_gpu g;
    gp_error err;
    if (gp_gpu_open(a->backend, &a->gpu, &g, &err))
        return fail(&err);
    static gp_node_inventory inv;
    static gp_telemetry t;
    json_t *o = NULL;
    bool inventory = strcmp(a->command, "inventory") == 0;
    gp_err rc = inventory ? gp_gpu_inventory(&g, &inv, &err)
                          : gp_gpu_telemetry(&g, a->at_given ? a->at_ms : clock_ms(), &t, &err);
    if (rc == GP_OK)
        o = inventory ? gp_inventory_to_json(&inv) : gp_telemetry_to_json(&t);
    gp_gpu_close(&g);
    return rc ? fail(&err) : print_json(o);
}

static int cmd_fault(const agent_args *a)
{
    if (a->fault.gpu < 0 || a->fault_kinds != 1 || (a->memory_mib >= 0) != (a->pid > 0)) {
        fputs("gpupool-agent: fault needs --gpu N and one of --xid, --ecc-corrected/--ecc-uncorrected, --lost, --reset,"
              " --memory-mib M --pid P\n",
              stderr);
        return 2;
    }
    gp_node_file f;
    gp_error err;
    size_t index;
    char path[GP_GPU_PATH_MAX];
    if (!a->gpu.node_file) {
        fputs("gpupool-agent: fault needs --node-file\n", stderr);
        return 2;
    }
    if (gp_node_file_load(a->gpu.node_file, &f, &err))
        return fail(&err);
    gp_err rc = gp_node_file_find(&f, a->gpu.node, &index, &err);
    gp_gpu_sim_fault_path(a->gpu.node_file, a->gpu.fault_file, path, sizeof path);
    if (rc == GP_OK && a->memory_mib >= 0)
        rc = gp_gpu_sim_memory_append(&f.nodes[index], path, a->fault.gpu, (int)a->pid, a->memory_mib, a->uuid, &err);
    else if (rc == GP_OK)
        rc = gp_gpu_sim_fault_append(&f.nodes[index], path, &a->fault, &err);
    gp_node_file_free(&f);
    return rc ? fail(&err) : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "run") == 0)
        return gp_agent_run_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "image") == 0)
        return gp_image_main(argc - 1, argv + 1);
    if (argc == 3 && strcmp(argv[1], "supervise") == 0)
        return gp_supervise_main(argv[2]);
    agent_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc != -1)
        return rc;
    if (strcmp(a.command, "inventory") == 0 || strcmp(a.command, "telemetry") == 0)
        return cmd_look(&a);
    if (strcmp(a.command, "fault") == 0)
        return cmd_fault(&a);
    fprintf(stderr, "gpupool-agent: unknown command %s (run, inventory, telemetry, fault)\n", a.command);
    return 2;
}

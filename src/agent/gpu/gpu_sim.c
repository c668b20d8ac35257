/* gpu_sim.c - the sim GPU backend: GPUs from a node file, telemetry from a
 * seed and the clock passed in, faults from a fault file, a real MIG
 * instance table.
 *
 * For tests, the demo and large fake fleets: nothing here touches a GPU,
 * reads a clock or draws a random number.  Every "random" value is a hash
 * of (seed, node name, GPU, what, time in whole seconds), so the same seed
 * and the same calls give the same answers.
 *
 * Telemetry.  A GPU's load is 1 while a process runs on it (the launcher
 * says so with set_busy), on a MIG GPU the compute share of its busy
 * instances (3g + 1g busy = 4/7), else 0.  SM activity and memory move
 * from where they were when the load last changed towards the load's
 * target over RAMP_MS, linearly:
 *
 *   target SM %    = load x (82 + 14 u)       (idle: 0..1 %)
 *   target memory  = load x memory x (0.3 + 0.5 u'),  u' fixed per busy period
 *   power W        = idle + (max - idle) x SM / 100 (+ 2 % jitter), per model
 *   temperature C  = 28 + 50 x (power - idle) / (max - idle) + 0..3
 *
 * Example: an idle H100 at t = 0 reads SM 0-1 %, 0 MiB, ~70 W, ~28 C;
 * set_busy(GPU 2, pid 42, true, t = 10 s) and at t = 11.5 s it reads about
 * 45 %, at t >= 13 s 82-96 %, ~650 W, ~75 C; set_busy(false) at 20 s and it
 * falls back to idle by 23 s.
 *
 * Faults (format in gpu_sim.h): the fault file is read from the offset
 * where the last read stopped, complete lines only; each line for this
 * node updates the state (ECC totals, lost; a reset clears lost and the
 * volatile ECC count) and, after open, becomes one event.  Health: a GPU
 * is unhealthy while lost or holding uncorrected ECC errors since its last
 * reset.  A memory line ({"gpu": 0, "pid": 4242, "memory_mib": 9000}) is
 * state, not an event: from the poll that reads it, telemetry lists
 * process 4242 on GPU 0 (or on the line's MIG "uuid") holding 9000 MiB,
 * until a line gives it 0 MiB or the process is gone (kill(pid, 0): the
 * one look outside the sim, so a job's end ends its use as with NVML).
 *
 * MIG: the profile table below is NVIDIA's (the engine's src/core/mig.c
 * has the same, docs/sharing.md shows it; the agent does not link the
 * engine's geometry).  An instance takes `size` memory slices from its
 * start; two instances never share a slice.  Example (H100-80GB): 3g.40gb
 * at 4 holds slices 4-7; then 4g.40gb (start 0 only, 4 slices) fits, 7g.80gb
 * does not; 2g.20gb at 3 is refused (starts 0, 2, 4 only).
 */
#include "agent/gpu/gpu_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec/json_input.h"
#include "spec/spec_json.h"

#define RAMP_MS 3000

/* ---- deterministic noise ---- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t hash_text(uint64_t h, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    return mix(h);
}

/* "PREFIX-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the text, stable. */
static void make_uuid(const char *prefix, const char *text, char out[GP_UUID_MAX])
{
    uint64_t a = hash_text(0xcbf29ce484222325ULL, text), b = mix(a ^ 0x5555555555555555ULL);
    snprintf(out, GP_UUID_MAX, "%s-%08x-%04x-%04x-%04x-%012llx", prefix, (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffffu, (unsigned)a & 0xffffu, (unsigned)(b >> 48),
             (unsigned long long)(b & 0xffffffffffffULL));
}

/* ---- MIG profiles ---- */

typedef struct mig_profile {
    const char *name;
    int compute, size;
    unsigned starts; /* bit s: may start at memory slice s */
} mig_profile;

#define MIG_PROFILES 6
#define MIG_SLICES 8

typedef struct mig_model {
    const char *type_hint;
    int64_t mem_min, mem_max;
    mig_profile profiles[MIG_PROFILES];
} mig_model;

static const mig_model mig_models[] = {
    {"A100", 30000, 45000,
     {{"1g.5gb", 1, 1, 0x7f}, {"1g.10gb", 1, 2, 0x55}, {"2g.10gb", 2, 2, 0x15},
      {"3g.20gb", 3, 4, 0x11}, {"4g.20gb", 4, 4, 0x01}, {"7g.40gb", 7, 8, 0x01}}},
    {"A100", 45001, 90000,
     {{"1g.10gb", 1, 1, 0x7f}, {"1g.20gb", 1, 2, 0x55}, {"2g.20gb", 2, 2, 0x15},
      {"3g.40gb", 3, 4, 0x11}, {"4g.40gb", 4, 4, 0x01}, {"7g.80gb", 7, 8, 0x01}}},
    {"H100", 70000, 90000,
     {{"1g.10gb", 1, 1, 0x7f}, {"1g.20gb", 1, 2, 0x55}, {"2g.20gb", 2, 2, 0x15},
      {"3g.40gb", 3, 4, 0x11}, {"4g.40gb", 4, 4, 0x01}, {"7g.80gb", 7, 8, 0x01}}},
    {"H200", 130000, 150000,
     {{"1g.18gb", 1, 1, 0x7f}, {"1g.35gb", 1, 2, 0x55}, {"2g.35gb", 2, 2, 0x15},
      {"3g.71gb", 3, 4, 0x11}, {"4g.71gb", 4, 4, 0x01}, {"7g.141gb", 7, 8, 0x01}}},
};

#define N_MIG_MODELS ((int)(sizeof mig_models / sizeof *mig_models))

static const mig_model *mig_model_find(const char *gpu_type, int64_t mem_mib)
{
    for (int m = 0; m < N_MIG_MODELS; m++)
        if (strstr(gpu_type, mig_models[m].type_hint) && mem_mib >= mig_models[m].mem_min &&
            mem_mib <= mig_models[m].mem_max)
            return &mig_models[m];
    return NULL;
}

static const mig_profile *mig_profile_find(const mig_model *m, const char *name)
{
    for (int p = 0; p < MIG_PROFILES; p++)
        if (strcmp(m->profiles[p].name, name) == 0)
            return &m->profiles[p];
    return NULL;
}

static unsigned slices(int start, int size)
{
    return ((1u << size) - 1u) << start;
}

/* ---- power and temperature per model ---- */

typedef struct power_model {
    const char *type_hint;
    int idle_w, max_w;
} power_model;

static const power_model power_models[] = {
    {"H100", 70, 700}, {"H200", 75, 700}, {"A100", 55, 400}, {"L40S", 35, 350}, {"L4", 16, 72}, {"", 50, 300},
};

static const power_model *power_model_find(const char *gpu_type)
{
    const power_model *p = power_models;
    while (p->type_hint[0] && !strstr(gpu_type, p->type_hint))
        p++;
    return p;
}

/* ---- state ---- */

typedef struct sim_gpu {
    char uuid[GP_UUID_MAX];
    double load;             /* 0..1 */
    int64_t changed_ms;      /* when load last changed */
    double from_sm, from_mem; /* SM % and MiB then */
    bool lost;
    int64_t ecc_corrected, ecc_uncorrected;
    int64_t ecc_volatile;    /* uncorrected errors since the last reset */
    int n_mig;
    gp_mig_instance mig[GP_GPU_MIG_MAX];
} sim_gpu;

typedef struct sim_process {
    int pid;
    int gpu;
    char uuid[GP_UUID_MAX];
} sim_process;

/* A memory line: process pid holds memory_mib on GPU gpu (or MIG instance uuid). */
typedef struct sim_memory {
    int pid;
    int gpu;
    char uuid[GP_UUID_MAX];              /* "" = the GPU's */
    int64_t memory_mib;
} sim_memory;

typedef struct sim_state {
    gp_sim_node node;
    uint64_t seed; /* the caller's seed mixed with the node name */
    const mig_model *mig;
    const power_model *power;
    char fault_file[GP_GPU_PATH_MAX];
    long fault_offset;
    int fault_line;
    uint64_t mig_created;
    sim_gpu gpus[GP_MAX_GPUS_PER_NODE];
    int n_procs;
    sim_process procs[GP_GPU_PROCS_MAX];
    int n_memory;
    sim_memory memory[GP_GPU_PROCS_MAX];
} sim_state;

enum noise_kind { NOISE_SM = 1, NOISE_MEM, NOISE_POWER, NOISE_TEMP };

/* A number in [0, 1) from the state's seed, the GPU, the kind and t. */
static double noise(const sim_state *s, int gpu, enum noise_kind kind, int64_t t)
{
    uint64_t h = mix(s->seed ^ mix((uint64_t)gpu * 0x10001ULL + (uint64_t)kind) ^ mix((uint64_t)t));
    return (double)(h >> 11) / 9007199254740992.0;
}

/* ---- telemetry model ---- */

static double ramp(const sim_gpu *g, int64_t now_ms)
{
    double r = (double)(now_ms - g->changed_ms) / RAMP_MS;
    return r < 0 ? 0 : r > 1 ? 1 : r;
}

static double sm_at(const sim_state *s, int gpu, int64_t now_ms)
{
    const sim_gpu *g = &s->gpus[gpu];
    double u = noise(s, gpu, NOISE_SM, now_ms / 1000);
    double target = g->load > 0 ? g->load * (82 + 14 * u) : u;
    return g->from_sm + (target - g->from_sm) * ramp(g, now_ms);
}

static double mem_at(const sim_state *s, int gpu, int64_t now_ms)
{
    const sim_gpu *g = &s->gpus[gpu];
    double u = noise(s, gpu, NOISE_MEM, g->changed_ms);
    double target = g->load * (double)s->node.gpu_mem_mib * (0.3 + 0.5 * u);
    return g->from_mem + (target - g->from_mem) * ramp(g, now_ms);
}

/* The load the processes put on GPU gpu: 1 for a whole GPU, the compute
 * share of the busy MIG instances otherwise. */
static double load_of(const sim_state *s, int gpu)
{
    const sim_gpu *g = &s->gpus[gpu];
    int compute = 0;
    for (int p = 0; p < s->n_procs; p++)
        if (s->procs[p].gpu == gpu && strcmp(s->procs[p].uuid, g->uuid) == 0)
            return 1;
    for (int i = 0; i < g->n_mig; i++) {
        bool busy = false;
        for (int p = 0; p < s->n_procs && !busy; p++)
            busy = strcmp(s->procs[p].uuid, g->mig[i].uuid) == 0;
        const mig_profile *prof = busy ? mig_profile_find(s->mig, g->mig[i].profile) : NULL;
        compute += prof ? prof->compute : 0;
    }
    return compute / 7.0;
}

/* The load changed (or may have): SM and memory go on from where they are. */
static void load_update(sim_state *s, int gpu, int64_t now_ms)
{
    sim_gpu *g = &s->gpus[gpu];
    double load = load_of(s, gpu);
    if (load == g->load)
        return;
    g->from_sm = sm_at(s, gpu, now_ms);
    g->from_mem = mem_at(s, gpu, now_ms);
    g->changed_ms = now_ms;
    g->load = load;
}

static void sample_gpu(const sim_state *s, int gpu, int64_t now_ms, gp_gpu_sample *out)
{
    const sim_gpu *g = &s->gpus[gpu];
    memset(out, 0, sizeof *out);
    out->index = gpu;
    snprintf(out->uuid, sizeof out->uuid, "%s", g->uuid);
    out->ecc_corrected = g->ecc_corrected;
    out->ecc_uncorrected = g->ecc_uncorrected;
    out->lost = g->lost;
    if (g->lost) {
        out->sm_active_pct = out->power_w = out->temperature_c = -1;
        out->memory_used_mib = -1;
        return;
    }
    int64_t second = now_ms / 1000;
    double sm = sm_at(s, gpu, now_ms);
    double span = s->power->max_w - s->power->idle_w;
    double power = (s->power->idle_w + span * sm / 100) * (0.99 + 0.02 * noise(s, gpu, NOISE_POWER, second));
    out->sm_active_pct = (int)(sm + 0.5);
    out->memory_used_mib = (int64_t)(mem_at(s, gpu, now_ms) + 0.5);
    out->power_w = (int)(power + 0.5);
    out->temperature_c = (int)(28 + 50 * (power - s->power->idle_w) / span + 3 * noise(s, gpu, NOISE_TEMP, second));
}

static int procs_on(const sim_state *s, int gpu)
{
    int n = 0;
    for (int p = 0; p < s->n_procs; p++)
        n += s->procs[p].gpu == gpu;
    return n;
}

static bool process_alive(int pid)
{
    return kill(pid, 0) == 0 || errno == EPERM;
}

/* The memory lines' processes that still run, as their lines say. */
static void sample_memory(const sim_state *s, gp_telemetry *t)
{
    for (int m = 0; m < s->n_memory && t->n_processes < GP_GPU_PROCS_MAX; m++) {
        const sim_memory *mem = &s->memory[m];
        if (!process_alive(mem->pid))
            continue;
        gp_gpu_process *out = &t->processes[t->n_processes++];
        out->pid = mem->pid;
        snprintf(out->uuid, sizeof out->uuid, "%s", mem->uuid[0] ? mem->uuid : s->gpus[mem->gpu].uuid);
        out->memory_used_mib = mem->memory_mib;
        out->sm_active_pct = -1;
    }
}

/* Each process gets an equal part of its GPU's activity and memory. */
static void sample_processes(const sim_state *s, gp_telemetry *t)
{
    for (int p = 0; p < s->n_procs; p++) {
        const gp_gpu_sample *g = &t->gpus[s->procs[p].gpu];
        int n = procs_on(s, s->procs[p].gpu);
        gp_gpu_process *out = &t->processes[t->n_processes++];
        out->pid = s->procs[p].pid;
        snprintf(out->uuid, sizeof out->uuid, "%s", s->procs[p].uuid);
        out->memory_used_mib = g->lost ? -1 : g->memory_used_mib / n;
        out->sm_active_pct = g->lost ? -1 : g->sm_active_pct / n;
    }
}

/* ---- faults ---- */

/* The GPU index of v: an integer 0..count-1. */
static gp_err fault_gpu(const json_t *v, int count, int *gpu, gp_error *err)
{
    int64_t g = 0;
    if (!v)
        return gp_error_set(err, GP_ERR_INVALID, "gpu", "gpu is required");
    gp_err rc = gp_json_int(v, "gpu", 0, count - 1, &g, err);
    *gpu = (int)g;
    return rc;
}

/* A flag field that must be true ("lost", "reset"). */
static gp_err fault_flag(const json_t *v, const char *field, gp_error *err)
{
    bool yes = false;
    gp_err rc = gp_json_bool(v, field, &yes, err);
    if (rc == GP_OK && !yes)
        rc = gp_error_set(err, GP_ERR_INVALID, field, "%s must be true", field);
    return rc;
}

/* The fault itself: exactly one of xid, ecc_*, lost or reset. */
static gp_err fault_kind(const json_t *o, gp_gpu_event *ev, gp_error *err)
{
    const json_t *xid = json_object_get(o, "xid"), *lost = json_object_get(o, "lost");
    const json_t *reset = json_object_get(o, "reset");
    const json_t *corrected = json_object_get(o, "ecc_corrected"), *uncorrected = json_object_get(o, "ecc_uncorrected");
    int kinds = (xid != NULL) + (corrected || uncorrected) + (lost != NULL) + (reset != NULL);
    if (kinds != 1)
        return gp_error_set(err, GP_ERR_INVALID, "xid",
                            "a fault is exactly one of xid, ecc_corrected/ecc_uncorrected, lost or reset");
    int64_t v = 0;
    gp_err rc = GP_OK;
    if (xid) {
        ev->kind = GP_GPU_EVENT_XID;
        rc = gp_json_int(xid, "xid", 1, 999, &v, err);
        ev->xid = (int)v;
    } else if (lost) {
        ev->kind = GP_GPU_EVENT_LOST;
        rc = fault_flag(lost, "lost", err);
    } else if (reset) {
        ev->kind = GP_GPU_EVENT_RESET;
        rc = fault_flag(reset, "reset", err);
    } else {
        ev->kind = GP_GPU_EVENT_ECC;
        if (corrected)
            rc = gp_json_int(corrected, "ecc_corrected", 1, 1000000000, &ev->ecc_corrected, err);
        if (rc == GP_OK && uncorrected)
            rc = gp_json_int(uncorrected, "ecc_uncorrected", 1, 1000000000, &ev->ecc_uncorrected, err);
    }
    return rc;
}

/* A memory line: pid (1..2^31-1), memory_mib (0..2^40; 0 ends the use),
 * optional uuid; nothing else. */
static gp_err memory_line(const json_t *o, sim_memory *mem, gp_error *err)
{
    const json_t *pid = json_object_get(o, "pid"), *mib = json_object_get(o, "memory_mib");
    const json_t *uuid = json_object_get(o, "uuid");
    if (json_object_get(o, "xid") || json_object_get(o, "ecc_corrected") || json_object_get(o, "ecc_uncorrected") ||
        json_object_get(o, "lost") || json_object_get(o, "reset"))
        return gp_error_set(err, GP_ERR_INVALID, "pid", "a memory line (pid, memory_mib) is not also a fault");
    int64_t v = 0;
    gp_err rc = pid ? gp_json_int(pid, "pid", 1, INT32_MAX, &v, err)
                    : gp_error_set(err, GP_ERR_INVALID, "pid", "a memory line needs pid");
    mem->pid = (int)v;
    if (rc == GP_OK)
        rc = mib ? gp_json_int(mib, "memory_mib", 0, INT64_C(1) << 40, &mem->memory_mib, err)
                 : gp_error_set(err, GP_ERR_INVALID, "memory_mib", "a memory line needs memory_mib");
    if (rc == GP_OK && uuid)
        rc = gp_json_string(uuid, "uuid", GP_UUID_MAX - 1, mem->uuid, sizeof mem->uuid, err);
    return rc;
}

static gp_err fault_known_fields(const json_t *o, gp_error *err)
{
    static const char *const known[] = {"node", "gpu", "xid", "ecc_corrected", "ecc_uncorrected", "lost", "reset",
                                        "pid", "memory_mib", "uuid"};
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        size_t k = 0;
        while (k < sizeof known / sizeof *known && strcmp(key, known[k]) != 0)
            k++;
        if (k == sizeof known / sizeof *known)
            return gp_json_unknown_field("", key, err);
    }
    return GP_OK;
}

/* One line: *mine false when it names another node; a memory line fills
 * *mem (mem->pid > 0), any other *ev. */
static gp_err fault_parse(const char *text, size_t len, const gp_sim_node *node, bool *mine, gp_gpu_event *ev,
                          sim_memory *mem, gp_error *err)
{
    memset(ev, 0, sizeof *ev);
    memset(mem, 0, sizeof *mem);
    *mine = false;
    json_t *o = json_loadb(text, len, 0, NULL);
    gp_err rc = json_is_object(o) ? fault_known_fields(o, err)
                                  : gp_error_set(err, GP_ERR_INVALID, "fault_file", "not a JSON object");
    json_t *v;
    char name[GP_NAME_MAX] = "";
    if (rc == GP_OK && (v = json_object_get(o, "node")))
        rc = gp_json_string(v, "node", GP_NAME_MAX - 1, name, sizeof name, err);
    *mine = rc == GP_OK && (!name[0] || strcmp(name, node->name) == 0);
    bool memory = rc == GP_OK && (json_object_get(o, "pid") || json_object_get(o, "memory_mib"));
    if (*mine && (rc = fault_gpu(json_object_get(o, "gpu"), node->gpu_count, &ev->gpu, err)) == GP_OK)
        rc = memory ? memory_line(o, mem, err) : fault_kind(o, ev, err);
    mem->gpu = ev->gpu;
    json_decref(o);
    return rc;
}

/* A memory line replaces the process's earlier one (0 MiB: removes it). */
static void memory_apply(sim_state *s, const sim_memory *mem)
{
    int m = 0;
    while (m < s->n_memory && (s->memory[m].pid != mem->pid || s->memory[m].gpu != mem->gpu ||
                               strcmp(s->memory[m].uuid, mem->uuid) != 0))
        m++;
    if (m == s->n_memory && (mem->memory_mib == 0 || s->n_memory == GP_GPU_PROCS_MAX))
        return;
    if (m == s->n_memory)
        s->n_memory++;
    s->memory[m] = *mem;
    if (mem->memory_mib == 0)
        s->memory[m] = s->memory[--s->n_memory];
}

static void fault_apply(sim_state *s, gp_gpu_event *ev, int64_t now_ms)
{
    sim_gpu *g = &s->gpus[ev->gpu];
    snprintf(ev->uuid, sizeof ev->uuid, "%s", g->uuid);
    ev->at_ms = now_ms;
    g->ecc_corrected += ev->ecc_corrected;
    g->ecc_uncorrected += ev->ecc_uncorrected;
    g->ecc_volatile += ev->ecc_uncorrected;
    if (ev->kind == GP_GPU_EVENT_LOST)
        g->lost = true;
    if (ev->kind == GP_GPU_EVENT_RESET) {
        g->lost = false;
        g->ecc_volatile = 0;
    }
}

/* A fault line's error as "FILE:LINE: message". */
static gp_err fault_locate(const sim_state *s, gp_err rc, gp_error *err)
{
    if (err) {
        char msg[GP_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s:%d: %s", s->fault_file, s->fault_line, err->message);
        snprintf(err->message, sizeof err->message, "%s", msg);
    }
    return rc;
}

/* Reads the complete lines after fault_offset.  With out, each fault of
 * this node becomes an event (at most cap); without, faults only update
 * the state (at open). */
static gp_err faults_read(sim_state *s, int64_t now_ms, gp_gpu_event *out, size_t cap, size_t *n, gp_error *err)
{
    *n = 0;
    FILE *f = fopen(s->fault_file, "r");
    if (!f)
        return errno == ENOENT ? GP_OK
                               : gp_error_set(err, GP_ERR_NOT_FOUND, "fault_file", "%s: %s", s->fault_file,
                                              strerror(errno));
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    gp_err rc = fseek(f, s->fault_offset, SEEK_SET) == 0
                    ? GP_OK
                    : gp_error_set(err, GP_ERR_INVALID, "fault_file", "%s: cannot seek", s->fault_file);
    while (rc == GP_OK && (len = getline(&line, &line_cap, f)) > 0 && line[len - 1] == '\n') {
        gp_gpu_event ev;
        sim_memory mem;
        bool mine = false;
        bool blank = strspn(line, " \t\r\n") == (size_t)len;
        gp_err line_rc = blank ? GP_OK : fault_parse(line, (size_t)len, &s->node, &mine, &ev, &mem, err);
        if (out && mine && line_rc == GP_OK && mem.pid == 0 && *n == cap)
            break;
        s->fault_offset += len;
        s->fault_line++;
        if (line_rc) {
            rc = fault_locate(s, line_rc, err);
        } else if (mine && mem.pid > 0) {
            memory_apply(s, &mem);
        } else if (mine) {
            fault_apply(s, &ev, now_ms);
            if (out)
                out[(*n)++] = ev;
        }
    }
    free(line);
    fclose(f);
    return rc;
}

void gp_gpu_sim_fault_path(const char *node_file, const char *fault_file, char *out, size_t cap)
{
    if (fault_file)
        snprintf(out, cap, "%s", fault_file);
    else
        snprintf(out, cap, "%s.faults", node_file ? node_file : "");
}

/* The fault as its line in the fault file (a new reference). */
static json_t *fault_to_json(const gp_sim_node *node, const gp_gpu_event *fault)
{
    json_t *o = json_pack("{s:s, s:i}", "node", node->name, "gpu", fault->gpu);
    if (!o)
        return NULL;
    if (fault->kind == GP_GPU_EVENT_XID)
        json_object_set_new(o, "xid", json_integer(fault->xid));
    else if (fault->kind == GP_GPU_EVENT_LOST)
        json_object_set_new(o, "lost", json_true());
    else if (fault->kind == GP_GPU_EVENT_RESET)
        json_object_set_new(o, "reset", json_true());
    if (fault->kind == GP_GPU_EVENT_ECC && fault->ecc_corrected)
        json_object_set_new(o, "ecc_corrected", json_integer(fault->ecc_corrected));
    if (fault->kind == GP_GPU_EVENT_ECC && (fault->ecc_uncorrected || !fault->ecc_corrected))
        json_object_set_new(o, "ecc_uncorrected", json_integer(fault->ecc_uncorrected));
    return o;
}

/* Checks the line o as a poll would, then appends it (takes o). */
static gp_err append_line(const gp_sim_node *node, const char *fault_file, json_t *o, gp_error *err)
{
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (!text)
        return gp_error_set(err, GP_ERR_NOMEM, "fault_file", "out of memory");
    gp_gpu_event check;
    sim_memory mem;
    bool mine;
    gp_err rc = fault_parse(text, strlen(text), node, &mine, &check, &mem, err);
    size_t len = strlen(text);
    text[len] = '\n'; /* the line: the NUL becomes its newline */
    int fd = rc ? -1 : open(fault_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (rc == GP_OK && (fd < 0 || write(fd, text, len + 1) != (ssize_t)(len + 1)))
        rc = gp_error_set(err, GP_ERR_NOT_FOUND, "fault_file", "%s: %s", fault_file, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(text);
    return rc;
}

gp_err gp_gpu_sim_fault_append(const gp_sim_node *node, const char *fault_file, const gp_gpu_event *fault,
                               gp_error *err)
{
    return append_line(node, fault_file, fault_to_json(node, fault), err);
}

gp_err gp_gpu_sim_memory_append(const gp_sim_node *node, const char *fault_file, int gpu, int pid,
                                int64_t memory_mib, const char *uuid, gp_error *err)
{
    json_t *o = json_pack("{s:s, s:i, s:i, s:I}", "node", node->name, "gpu", gpu, "pid", pid, "memory_mib",
                          (json_int_t)memory_mib);
    if (o && uuid && uuid[0])
        json_object_set_new(o, "uuid", json_string(uuid));
    return append_line(node, fault_file, o, err);
}

/* ---- open and close ---- */

static gp_err check_mig_model(const sim_state *s, gp_error *err)
{
    for (int g = 0; g < s->node.gpu_count; g++)
        if (s->node.sharing[g] == GP_SHARING_MIG && !s->mig)
            return gp_error_set(err, GP_ERR_INVALID, "sharing",
                                "node %s: %s with %lld MiB has no MIG profiles (MIG needs A100-40GB, A100-80GB, "
                                "H100-80GB or H200-141GB; set gpu_mem_mib)",
                                s->node.name, s->node.gpu_type, (long long)s->node.gpu_mem_mib);
    return GP_OK;
}

gp_err gp_gpu_sim_open_node(const gp_node_file *f, size_t index, const char *node_file_path, const char *fault_file,
                            uint64_t seed, gp_gpu *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    if (index >= f->n_nodes)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "node", "the node file has %zu nodes", f->n_nodes);
    sim_state *s = calloc(1, sizeof *s);
    if (!s)
        return gp_error_set(err, GP_ERR_NOMEM, "node", "out of memory");
    s->node = f->nodes[index];
    s->seed = hash_text(mix(seed), s->node.name);
    s->mig = mig_model_find(s->node.gpu_type, s->node.gpu_mem_mib);
    s->power = power_model_find(s->node.gpu_type);
    gp_gpu_sim_fault_path(node_file_path, fault_file, s->fault_file, sizeof s->fault_file);
    for (int g = 0; g < s->node.gpu_count; g++) {
        char key[GP_NAME_MAX + 16];
        snprintf(key, sizeof key, "%s/%d", s->node.name, g);
        if (s->node.uuids[g][0])
            snprintf(s->gpus[g].uuid, sizeof s->gpus[g].uuid, "%s", s->node.uuids[g]);
        else
            make_uuid("GPU", key, s->gpus[g].uuid);
        s->gpus[g].changed_ms = INT64_MIN / 4;
    }
    size_t n;
    gp_err rc = check_mig_model(s, err);
    if (rc == GP_OK)
        rc = faults_read(s, 0, NULL, 0, &n, err);
    if (rc) {
        free(s);
        return rc;
    }
    out->ops = &gp_gpu_sim_ops;
    out->state = s;
    return GP_OK;
}

static gp_err sim_open(const gp_gpu_options *opt, void **state, gp_error *err)
{
    if (!opt || !opt->node_file)
        return gp_error_set(err, GP_ERR_INVALID, "node_file", "the sim backend needs a node file");
    gp_node_file f;
    size_t index = 0;
    gp_gpu g = {0};
    gp_err rc = gp_node_file_load(opt->node_file, &f, err);
    if (rc)
        return rc;
    rc = gp_node_file_find(&f, opt->node, &index, err);
    if (rc == GP_OK)
        rc = gp_gpu_sim_open_node(&f, index, opt->node_file, opt->fault_file, opt->seed, &g, err);
    gp_node_file_free(&f);
    *state = g.state;
    return rc;
}

static void sim_close(void *state)
{
    free(state);
}

/* ---- inventory and telemetry ---- */

static gp_err sim_inventory(void *state, gp_node_inventory *out, gp_error *err)
{
    (void)err;
    const sim_state *s = state;
    const gp_sim_node *n = &s->node;
    memset(out, 0, sizeof *out);
    snprintf(out->backend, sizeof out->backend, "sim");
    snprintf(out->driver_version, sizeof out->driver_version, "sim");
    snprintf(out->name, sizeof out->name, "%s", n->name);
    snprintf(out->model, sizeof out->model, "%s", n->gpu_type);
    snprintf(out->zone, sizeof out->zone, "%s", n->zone);
    snprintf(out->block, sizeof out->block, "%s", n->block);
    snprintf(out->pool, sizeof out->pool, "%s", n->pool);
    out->nvlink_domains = n->nvlink_domains;
    out->cpu_millis = n->cpu_millis;
    out->mem_mib = n->mem_mib;
    out->gpu_count = n->gpu_count;
    for (int g = 0; g < n->gpu_count; g++) {
        gp_node_gpu *i = &out->gpus[g];
        i->index = i->minor = g;
        snprintf(i->uuid, sizeof i->uuid, "%s", s->gpus[g].uuid);
        i->memory_mib = n->gpu_mem_mib;
        if (n->device_dir[0])
            snprintf(i->device_path, sizeof i->device_path, "%s/nvidia%d", n->device_dir, g);
        snprintf(i->pci_bus_id, sizeof i->pci_bus_id, "00000000:%02X:00.0", 0x18 + g);
        i->nvlink_domain = g / (n->gpu_count / n->nvlink_domains);
        snprintf(i->block, sizeof i->block, "%s", n->block);
        i->sharing = n->sharing[g];
        i->n_mig = s->gpus[g].n_mig;
        memcpy(i->mig, s->gpus[g].mig, sizeof i->mig);
    }
    return GP_OK;
}

static gp_err sim_telemetry(void *state, int64_t now_ms, gp_telemetry *out, gp_error *err)
{
    (void)err;
    const sim_state *s = state;
    memset(out, 0, sizeof *out);
    out->at_ms = now_ms;
    out->n_gpus = s->node.gpu_count;
    for (int g = 0; g < s->node.gpu_count; g++)
        sample_gpu(s, g, now_ms, &out->gpus[g]);
    sample_processes(s, out);
    sample_memory(s, out);
    return GP_OK;
}

static gp_err sim_poll_events(void *state, int64_t now_ms, int timeout_ms, gp_gpu_event *out, size_t cap, size_t *n,
                              gp_error *err)
{
    (void)timeout_ms;
    return faults_read(state, now_ms, out, cap, n, err);
}

/* ---- MIG ---- */

static unsigned mig_taken(const sim_gpu *g)
{
    unsigned mask = 0;
    for (int i = 0; i < g->n_mig; i++)
        mask |= slices(g->mig[i].start, g->mig[i].size);
    return mask;
}

static gp_err mig_check_gpu(const sim_state *s, int gpu, gp_error *err)
{
    if (gpu < 0 || gpu >= s->node.gpu_count)
        return gp_error_set(err, GP_ERR_INVALID, "gpu", "gpu must be 0..%d, got %d", s->node.gpu_count - 1, gpu);
    if (s->gpus[gpu].lost)
        return gp_error_set(err, GP_ERR_CONFLICT, "gpu", "GPU %d is lost", gpu);
    if (s->node.sharing[gpu] != GP_SHARING_MIG)
        return gp_error_set(err, GP_ERR_CONFLICT, "gpu", "GPU %d is not in MIG mode (sharing %s)", gpu,
                            gp_sharing_name(s->node.sharing[gpu]));
    return GP_OK;
}

static gp_err mig_unknown_profile(const sim_state *s, const char *profile, gp_error *err)
{
    char names[128] = "";
    for (int p = 0; p < MIG_PROFILES; p++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", p ? ", " : "", s->mig->profiles[p].name);
    return gp_error_set(err, GP_ERR_INVALID, "profile", "%s has no MIG profile %s (it has %s)", s->node.gpu_type,
                        profile ? profile : "(none)", names);
}

/* The start to use: the one asked for if the profile allows it and its
 * slices are free, else (start -1) the lowest such start. */
static gp_err mig_choose_start(const mig_profile *p, unsigned taken, int start, int *out, gp_error *err)
{
    if (start >= MIG_SLICES || (start >= 0 && !(p->starts & (1u << start))) || start < -1)
        return gp_error_set(err, GP_ERR_INVALID, "start", "%s cannot start at slice %d", p->name, start);
    for (int s = start < 0 ? 0 : start; s <= (start < 0 ? MIG_SLICES - 1 : start); s++)
        if ((p->starts & (1u << s)) && !(slices(s, p->size) & taken)) {
            *out = s;
            return GP_OK;
        }
    return start < 0 ? gp_error_set(err, GP_ERR_CONFLICT, "start", "no free placement for %s", p->name)
                     : gp_error_set(err, GP_ERR_CONFLICT, "start", "%s at slice %d overlaps an instance", p->name,
                                    start);
}

static int mig_free_gi_id(const sim_gpu *g)
{
    for (int id = 1;; id++) {
        bool used = false;
        for (int i = 0; i < g->n_mig; i++)
            used = used || g->mig[i].gi_id == id;
        if (!used)
            return id;
    }
}

static gp_err sim_mig_create(void *state, int gpu, const char *profile, int start, gp_mig_instance *out,
                             gp_error *err)
{
    sim_state *s = state;
    gp_err rc = mig_check_gpu(s, gpu, err);
    if (rc)
        return rc;
    const mig_profile *p = profile ? mig_profile_find(s->mig, profile) : NULL;
    if (!p)
        return mig_unknown_profile(s, profile, err);
    sim_gpu *g = &s->gpus[gpu];
    int at = 0;
    if ((rc = mig_choose_start(p, mig_taken(g), start, &at, err)))
        return rc;
    gp_mig_instance mi = {.start = at, .size = p->size, .gi_id = mig_free_gi_id(g), .ci_id = 0};
    snprintf(mi.profile, sizeof mi.profile, "%s", p->name);
    mi.memory_mib = s->node.gpu_mem_mib * p->size / MIG_SLICES;
    char key[GP_UUID_MAX + 32];
    snprintf(key, sizeof key, "%s/mig/%llu", g->uuid, (unsigned long long)++s->mig_created);
    make_uuid("MIG", key, mi.uuid);
    int i = g->n_mig;
    while (i > 0 && g->mig[i - 1].start > at) {
        g->mig[i] = g->mig[i - 1];
        i--;
    }
    g->mig[i] = mi;
    g->n_mig++;
    *out = mi;
    return GP_OK;
}

/* The GPU (and the MIG instance, -1 for the whole GPU) a UUID names. */
static gp_err find_uuid(const sim_state *s, const char *uuid, int *gpu, int *mig, gp_error *err)
{
    for (int g = 0; uuid && g < s->node.gpu_count; g++) {
        *gpu = g;
        *mig = -1;
        if (strcmp(s->gpus[g].uuid, uuid) == 0)
            return GP_OK;
        for (*mig = 0; *mig < s->gpus[g].n_mig; (*mig)++)
            if (strcmp(s->gpus[g].mig[*mig].uuid, uuid) == 0)
                return GP_OK;
    }
    return gp_error_set(err, GP_ERR_NOT_FOUND, "uuid", "node %s has no GPU or MIG instance %s", s->node.name,
                        uuid ? uuid : "(none)");
}

static gp_err sim_mig_destroy(void *state, const char *uuid, gp_error *err)
{
    sim_state *s = state;
    int gpu, mig;
    gp_err rc = find_uuid(s, uuid, &gpu, &mig, err);
    if (rc == GP_OK && mig < 0)
        rc = gp_error_set(err, GP_ERR_NOT_FOUND, "uuid", "%s is a GPU, not a MIG instance", uuid);
    for (int p = 0; rc == GP_OK && p < s->n_procs; p++)
        if (strcmp(s->procs[p].uuid, uuid) == 0)
            rc = gp_error_set(err, GP_ERR_CONFLICT, "uuid", "MIG instance %s is in use by process %d", uuid,
                              s->procs[p].pid);
    if (rc)
        return rc;
    sim_gpu *g = &s->gpus[gpu];
    memmove(&g->mig[mig], &g->mig[mig + 1], (size_t)(g->n_mig - mig - 1) * sizeof g->mig[0]);
    g->n_mig--;
    return GP_OK;
}

/* ---- device nodes ---- */

/* The minors the driver gives MIG access files
 * (/proc/driver/nvidia-caps/mig-minors: config 1, monitor 2, then per GPU
 * 15 GPU instances of 1 + 8 compute instances each). */
static unsigned cap_minor_gi(int gpu_minor, int gi_id)
{
    return 3u + (unsigned)gpu_minor * 135u + (unsigned)gi_id * 9u;
}

static gp_err add_device(const sim_state *s, const char *name, gp_device_node *out, size_t cap, size_t *n,
                         gp_error *err)
{
    return gp_gpu_add_device_node(s->node.device_dir, name, out, cap, n, err);
}

static gp_err add_devices_of(const sim_state *s, const char *uuid, gp_device_node *out, size_t cap, size_t *n,
                             gp_error *err)
{
    int gpu, mig;
    char name[64];
    gp_err rc = find_uuid(s, uuid, &gpu, &mig, err);
    if (rc)
        return rc;
    snprintf(name, sizeof name, "nvidia%d", gpu);
    rc = add_device(s, name, out, cap, n, err);
    if (rc || mig < 0)
        return rc;
    const gp_mig_instance *mi = &s->gpus[gpu].mig[mig];
    unsigned gi = cap_minor_gi(gpu, mi->gi_id);
    snprintf(name, sizeof name, "nvidia-caps/nvidia-cap%u", gi);
    if ((rc = add_device(s, name, out, cap, n, err)))
        return rc;
    snprintf(name, sizeof name, "nvidia-caps/nvidia-cap%u", gi + 1u + (unsigned)mi->ci_id);
    return add_device(s, name, out, cap, n, err);
}

static gp_err sim_device_nodes(void *state, const char *const *uuids, size_t n_uuids, gp_device_node *out,
                               size_t cap, size_t *n, gp_error *err)
{
    const sim_state *s = state;
    gp_err rc = GP_OK;
    *n = 0;
    if (!s->node.device_dir[0])
        return GP_OK;
    for (size_t u = 0; rc == GP_OK && u < n_uuids; u++)
        rc = add_devices_of(s, uuids[u], out, cap, n, err);
    if (rc == GP_OK && n_uuids > 0)
        rc = add_device(s, "nvidiactl", out, cap, n, err);
    if (rc == GP_OK && n_uuids > 0)
        rc = add_device(s, "nvidia-uvm", out, cap, n, err);
    return rc;
}

/* ---- processes ---- */

static gp_err sim_set_busy(void *state, const char *uuid, int pid, bool busy, int64_t now_ms, gp_error *err)
{
    sim_state *s = state;
    int gpu, mig, p = 0;
    gp_err rc = find_uuid(s, uuid, &gpu, &mig, err);
    if (rc)
        return rc;
    if (pid <= 0)
        return gp_error_set(err, GP_ERR_INVALID, "pid", "pid must be positive, got %d", pid);
    while (p < s->n_procs && !(s->procs[p].pid == pid && strcmp(s->procs[p].uuid, uuid) == 0))
        p++;
    if (busy && p == s->n_procs) {
        if (s->n_procs == GP_GPU_PROCS_MAX)
            return gp_error_set(err, GP_ERR_CONFLICT, "pid", "node %s already has %d processes on its GPUs",
                                s->node.name, GP_GPU_PROCS_MAX);
        s->procs[s->n_procs++] = (sim_process){.pid = pid, .gpu = gpu};
        snprintf(s->procs[p].uuid, sizeof s->procs[p].uuid, "%s", uuid);
    } else if (!busy && p < s->n_procs) {
        s->procs[p] = s->procs[--s->n_procs];
    }
    load_update(s, gpu, now_ms);
    return GP_OK;
}

/* ---- health ---- */

/* Unhealthy while lost or holding uncorrected ECC errors since its last
 * reset; the sim has no row remapping, retired pages or recovery action. */
static gp_err sim_health(void *state, int gpu, int64_t now_ms, gp_gpu_health *out, gp_error *err)
{
    (void)now_ms;
    const sim_state *s = state;
    if (gpu < 0 || gpu >= s->node.gpu_count)
        return gp_error_set(err, GP_ERR_INVALID, "gpu", "gpu must be 0..%d, got %d", s->node.gpu_count - 1, gpu);
    const sim_gpu *g = &s->gpus[gpu];
    *out = (gp_gpu_health){.gpu = gpu, .healthy = !g->lost && g->ecc_volatile == 0, .ecc_uncorrected = g->ecc_volatile,
                           .remap_pending = -1, .remap_failed = -1, .retired_pages_pending = -1,
                           .recovery_action = -1};
    if (g->lost)
        snprintf(out->reason, sizeof out->reason, "fell off the bus");
    else if (g->ecc_volatile > 0)
        snprintf(out->reason, sizeof out->reason, "%lld uncorrected ECC errors (volatile)",
                 (long long)g->ecc_volatile);
    return GP_OK;
}

const gp_gpu_ops gp_gpu_sim_ops = {
    .name = "sim",
    .open = sim_open,
    .close = sim_close,
    .inventory = sim_inventory,
    .telemetry = sim_telemetry,
    .poll_events = sim_poll_events,
    .mig_create = sim_mig_create,
    .mig_destroy = sim_mig_destroy,
    .device_nodes = sim_device_nodes,
    .set_busy = sim_set_busy,
    .health = sim_health,
};

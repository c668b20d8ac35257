/* nvml_stub.c - a stand-in libnvidia-ml.so.1 for the tests: the NVML
 * functions the nvml backend uses (src/agent/gpu/nvml_api.h), with NVIDIA's
 * signatures and return codes, answering from files in a folder.
 *
 * Built as ${CMAKE_BINARY_DIR}/nvml-stub/libnvidia-ml.so.1 (CMake target
 * nvml_stub).  The folder is $GPUPOOL_NVML_STUB:
 *
 *   gpus.json   read at nvmlInit_v2 (missing: NVML_ERROR_DRIVER_NOT_LOADED):
 *               [{"uuid", "name", "memory_mib", "pci_bus_id", "minor",
 *                 "mig_mode": 0|1, "nvlink_peers": [index...],
 *                 "cpus": [cpu...] (its CPU affinity; none: NOT_SUPPORTED),
 *                 "ecc_volatile_uncorrected", "ecc_volatile_corrected",
 *                 "remap_pending", "remap_failed", "retired_pending",
 *                 "recovery_action" (-1: the field is NOT_SUPPORTED),
 *                 "lost": bool}]
 *               every key optional: GPU i defaults to "NVIDIA H100 80GB
 *               HBM3", 81559 MiB, bus 00000000:(18+i):00.0, minor i, a UUID
 *               from i, healthy, MIG off, no NVLink (NOT_SUPPORTED).
 *   processes   re-read at every process query: lines
 *               "GPU PID MEMORY_MIB [SM_PCT [GI_ID]]" (GI_ID: the MIG GPU
 *               instance it runs on).  A process with SM_PCT has a fresh
 *               utilization sample at every query; without, none
 *               (nvmlDeviceGetProcessUtilization answers NOT_FOUND when no
 *               process of the GPU has one).
 *   events      lines "GPU XID", "GPU ecc_double" or "GPU ecc_single",
 *               delivered in order, each once, by nvmlEventSetWait_v2 (to a
 *               set the GPU registered that event type with); none left:
 *               NVML_ERROR_TIMEOUT at once.
 *   errors      re-read at every call: lines "FUNCTION NVML_ERROR_NAME
 *               [GPU]": that function answers that error (for that GPU
 *               only, when given), e.g.
 *               "nvmlDeviceCreateGpuInstanceWithPlacement NVML_ERROR_NO_PERMISSION".
 *   health      re-read at every call: lines "GPU KEY VALUE" overriding
 *               gpus.json's health keys (the ecc_*, remap_*, retired_pending,
 *               recovery_action, lost), so a test breaks and mends a GPU
 *               while the agent runs.  A lost GPU answers
 *               NVML_ERROR_GPU_IS_LOST to every call about it.
 *   mig.json    written by the stub: the MIG instances, so that a second
 *               process (or a second open) sees what the first created.
 *
 * MIG: the H100-80GB profiles (index: name, compute slices, memory slices,
 * starts): 0 1g.10gb 1 1 any of 0-6; 9 1g.20gb 1 2 {0,2,4,6}; 1 2g.20gb 2 2
 * {0,2,4}; 2 3g.40gb 3 4 {0,4}; 3 4g.40gb 4 4 {0}; 4 7g.80gb 7 8 {0};
 * 7 1g.10gb+me 1 1 any of 0-6.  Overlapping slices: INSUFFICIENT_RESOURCES;
 * destroying an instance a process runs on: IN_USE.
 */
#define _GNU_SOURCE
#include "agent/gpu/nvml_api.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define STUB_GPUS 16
#define STUB_MIG 7
#define MIB (1024ULL * 1024ULL)

/* Exported with NVIDIA's names; declared here for -Wmissing-prototypes. */
#define STUB_API __attribute__((visibility("default")))

struct nvmlDevice_st {
    int gpu;
    int slot; /* -1: the GPU; else its MIG device in that instance slot */
};
struct nvmlGpuInstance_st {
    int gpu, slot;
};
struct nvmlComputeInstance_st {
    int gpu, slot;
};
struct nvmlEventSet_st {
    unsigned long long types[STUB_GPUS];
};

typedef struct stub_instance {
    bool used, has_ci;
    unsigned gi_id, ci_id, profile, start, size;
    char uuid[48];
} stub_instance;

enum health_key { ECC_UNCORRECTED, ECC_CORRECTED, REMAP_PENDING, REMAP_FAILED, RETIRED_PENDING, RECOVERY, LOST, N_HEALTH };
static const char *const health_names[N_HEALTH] = {"ecc_volatile_uncorrected", "ecc_volatile_corrected", "remap_pending",
                                                    "remap_failed", "retired_pending", "recovery_action", "lost"};

typedef struct stub_gpu {
    char uuid[96], name[96], bus_id[32];
    unsigned minor;
    unsigned long long memory_mib;
    unsigned mig_mode;
    int peers[NVML_NVLINK_MAX_LINKS], n_peers;
    int cpus[256], n_cpus;
    long long health[N_HEALTH];
    stub_instance inst[STUB_MIG];
} stub_gpu;

static struct {
    bool ready;
    char dir[512];
    int count;
    unsigned created;
    stub_gpu gpus[STUB_GPUS];
    struct nvmlDevice_st dev[STUB_GPUS], mig_dev[STUB_GPUS][STUB_MIG];
    struct nvmlGpuInstance_st gi[STUB_GPUS][STUB_MIG];
    struct nvmlComputeInstance_st ci[STUB_GPUS][STUB_MIG];
    struct nvmlEventSet_st set;
    long events_read;
} stub;

typedef struct gi_profile {
    unsigned index, slices, size, starts;
    unsigned long long memory_mb;
} gi_profile;

static const gi_profile profiles[] = {
    {0, 1, 1, 0x7f, 9984},  {9, 1, 2, 0x55, 20096}, {1, 2, 2, 0x15, 20096}, {2, 3, 4, 0x11, 40448},
    {3, 4, 4, 0x01, 40448}, {4, 7, 8, 0x01, 81152}, {7, 1, 1, 0x7f, 9984},
};

static const gi_profile *profile_find(unsigned index)
{
    for (size_t p = 0; p < sizeof profiles / sizeof *profiles; p++)
        if (profiles[p].index == index)
            return &profiles[p];
    return NULL;
}

/* ---- return codes ---- */

static const struct {
    nvmlReturn_t code;
    const char *name, *text;
} returns[] = {
    {NVML_SUCCESS, "NVML_SUCCESS", "Success"},
    {NVML_ERROR_UNINITIALIZED, "NVML_ERROR_UNINITIALIZED", "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "NVML_ERROR_INVALID_ARGUMENT", "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "NVML_ERROR_NOT_SUPPORTED", "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "NVML_ERROR_NO_PERMISSION", "Insufficient Permissions"},
    {NVML_ERROR_NOT_FOUND, "NVML_ERROR_NOT_FOUND", "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "NVML_ERROR_INSUFFICIENT_SIZE", "Insufficient Size"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "NVML_ERROR_DRIVER_NOT_LOADED", "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "NVML_ERROR_TIMEOUT", "Timeout"},
    {NVML_ERROR_GPU_IS_LOST, "NVML_ERROR_GPU_IS_LOST", "GPU is lost"},
    {NVML_ERROR_IN_USE, "NVML_ERROR_IN_USE", "In use by another client"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "NVML_ERROR_INSUFFICIENT_RESOURCES", "Insufficient resources"},
    {NVML_ERROR_INVALID_STATE, "NVML_ERROR_INVALID_STATE", "Invalid state"},
    {NVML_ERROR_UNKNOWN, "NVML_ERROR_UNKNOWN", "Unknown Error"},
};

STUB_API const char *nvmlErrorString(nvmlReturn_t result);
const char *nvmlErrorString(nvmlReturn_t result)
{
    for (size_t i = 0; i < sizeof returns / sizeof *returns; i++)
        if (returns[i].code == result)
            return returns[i].text;
    return "Unknown Error";
}

/* ---- the folder's files ---- */

static FILE *open_file(const char *name, const char *mode)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", stub.dir, name);
    return fopen(path, mode);
}

/* The `errors` file's answer for fn on gpu (-1: a call about no GPU). */
static nvmlReturn_t injected(const char *fn, int gpu)
{
    FILE *f = open_file("errors", "r");
    char line[256], name[128], code[64];
    nvmlReturn_t rc = NVML_SUCCESS;
    while (f && rc == NVML_SUCCESS && fgets(line, sizeof line, f)) {
        int for_gpu = -1;
        if (sscanf(line, "%127s %63s %d", name, code, &for_gpu) < 2 || strcmp(name, fn) != 0 ||
            (for_gpu >= 0 && for_gpu != gpu))
            continue;
        for (size_t i = 0; i < sizeof returns / sizeof *returns; i++)
            if (strcmp(returns[i].name, code) == 0)
                rc = returns[i].code;
    }
    if (f)
        fclose(f);
    return rc;
}

/* gpus.json's health values with the `health` file's lines over them. */
static long long health_of(int gpu, enum health_key key)
{
    long long value = stub.gpus[gpu].health[key];
    FILE *f = open_file("health", "r");
    char line[256], name[64];
    int g;
    long long v;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%d %63s %lld", &g, name, &v) == 3 && g == gpu && strcmp(name, health_names[key]) == 0)
            value = v;
    if (f)
        fclose(f);
    return value;
}

typedef struct stub_process {
    int gpu, pid, sm, gi;
    unsigned long long memory_mib;
} stub_process;

static int read_processes(stub_process *out, int cap)
{
    FILE *f = open_file("processes", "r");
    char line[256];
    int n = 0;
    while (f && n < cap && fgets(line, sizeof line, f)) {
        stub_process p = {.sm = -1, .gi = -1};
        if (sscanf(line, "%d %d %llu %d %d", &p.gpu, &p.pid, &p.memory_mib, &p.sm, &p.gi) >= 3)
            out[n++] = p;
    }
    if (f)
        fclose(f);
    return n;
}

/* ---- MIG state in mig.json ---- */

static void mig_save(void)
{
    json_t *all = json_object();
    for (int g = 0; g < stub.count; g++) {
        json_t *list = json_array();
        for (int i = 0; i < STUB_MIG; i++) {
            const stub_instance *in = &stub.gpus[g].inst[i];
            if (in->used)
                json_array_append_new(list, json_pack("{s:i, s:i, s:i, s:i, s:b, s:i, s:s}", "gi", in->gi_id, "profile",
                                                      in->profile, "start", in->start, "size", in->size, "has_ci",
                                                      in->has_ci, "ci", in->ci_id, "uuid", in->uuid));
        }
        json_object_set_new(all, stub.gpus[g].uuid, list);
    }
    char path[600];
    snprintf(path, sizeof path, "%s/mig.json", stub.dir);
    json_dump_file(all, path, JSON_INDENT(1));
    json_decref(all);
}

static void mig_load(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/mig.json", stub.dir);
    json_t *all = json_load_file(path, 0, NULL);
    for (int g = 0; all && g < stub.count; g++) {
        json_t *list = json_object_get(all, stub.gpus[g].uuid), *o;
        size_t i;
        json_array_foreach(list, i, o) {
            stub_instance *in = &stub.gpus[g].inst[i < STUB_MIG ? i : STUB_MIG - 1];
            int has_ci = 0;
            const char *uuid = "";
            json_unpack(o, "{s:i, s:i, s:i, s:i, s:b, s:i, s:s}", "gi", &in->gi_id, "profile", &in->profile, "start",
                        &in->start, "size", &in->size, "has_ci", &has_ci, "ci", &in->ci_id, "uuid", &uuid);
            in->used = true;
            in->has_ci = has_ci;
            snprintf(in->uuid, sizeof in->uuid, "%s", uuid);
            stub.created++;
        }
    }
    json_decref(all);
}

/* ---- gpus.json ---- */

static long long int_or(const json_t *o, const char *key, long long otherwise)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : json_is_true(v) ? 1 : otherwise;
}

static void string_or(const json_t *o, const char *key, char *out, size_t cap, const char *otherwise)
{
    const json_t *v = json_object_get(o, key);
    snprintf(out, cap, "%s", json_is_string(v) ? json_string_value(v) : otherwise);
}

static void gpu_load(int g, const json_t *o)
{
    stub_gpu *gpu = &stub.gpus[g];
    char text[96];
    memset(gpu, 0, sizeof *gpu);
    snprintf(text, sizeof text, "GPU-5eed%04x-0000-4000-8000-%012d", g, g);
    string_or(o, "uuid", gpu->uuid, sizeof gpu->uuid, text);
    string_or(o, "name", gpu->name, sizeof gpu->name, "NVIDIA H100 80GB HBM3");
    snprintf(text, sizeof text, "00000000:%02X:00.0", 0x18 + g);
    string_or(o, "pci_bus_id", gpu->bus_id, sizeof gpu->bus_id, text);
    gpu->memory_mib = (unsigned long long)int_or(o, "memory_mib", 81559);
    gpu->minor = (unsigned)int_or(o, "minor", g);
    gpu->mig_mode = (unsigned)int_or(o, "mig_mode", 0);
    for (int k = 0; k < N_HEALTH; k++)
        gpu->health[k] = int_or(o, health_names[k], 0);
    const json_t *peers = json_object_get(o, "nvlink_peers"), *p;
    size_t i;
    json_array_foreach(peers, i, p) {
        if (gpu->n_peers < NVML_NVLINK_MAX_LINKS)
            gpu->peers[gpu->n_peers++] = (int)json_integer_value(p);
    }
    json_array_foreach(json_object_get(o, "cpus"), i, p) {
        if (gpu->n_cpus < 256)
            gpu->cpus[gpu->n_cpus++] = (int)json_integer_value(p);
    }
    stub.dev[g] = (struct nvmlDevice_st){.gpu = g, .slot = -1};
    for (int s = 0; s < STUB_MIG; s++) {
        stub.mig_dev[g][s] = (struct nvmlDevice_st){.gpu = g, .slot = s};
        stub.gi[g][s] = (struct nvmlGpuInstance_st){.gpu = g, .slot = s};
        stub.ci[g][s] = (struct nvmlComputeInstance_st){.gpu = g, .slot = s};
    }
}

STUB_API nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit_v2(void)
{
    const char *dir = getenv("GPUPOOL_NVML_STUB");
    memset(&stub, 0, sizeof stub);
    snprintf(stub.dir, sizeof stub.dir, "%s", dir ? dir : ".");
    nvmlReturn_t rc = injected("nvmlInit_v2", -1);
    char path[600];
    snprintf(path, sizeof path, "%s/gpus.json", stub.dir);
    json_t *gpus = rc == NVML_SUCCESS ? json_load_file(path, 0, NULL) : NULL;
    if (rc == NVML_SUCCESS && !json_is_array(gpus))
        rc = NVML_ERROR_DRIVER_NOT_LOADED;
    size_t i;
    json_t *o;
    json_array_foreach(gpus, i, o) {
        if (stub.count < STUB_GPUS)
            gpu_load(stub.count++, o);
    }
    json_decref(gpus);
    if (rc == NVML_SUCCESS) {
        mig_load();
        stub.ready = true;
    }
    return rc;
}

STUB_API nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlShutdown(void)
{
    bool was = stub.ready;
    stub.ready = false;
    return was ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

/* Every call about a device starts here: initialised, a known handle, an
 * injected error, a lost GPU. */
static nvmlReturn_t enter(const char *fn, nvmlDevice_t d)
{
    if (!stub.ready)
        return NVML_ERROR_UNINITIALIZED;
    if (!d || d->gpu < 0 || d->gpu >= stub.count)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t rc = injected(fn, d->gpu);
    if (rc == NVML_SUCCESS && health_of(d->gpu, LOST))
        rc = NVML_ERROR_GPU_IS_LOST;
    return rc;
}

static stub_instance *instance_of(nvmlDevice_t d)
{
    return d->slot >= 0 && stub.gpus[d->gpu].inst[d->slot].used ? &stub.gpus[d->gpu].inst[d->slot] : NULL;
}

/* ---- system and enumeration ---- */

STUB_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    nvmlReturn_t rc = stub.ready ? injected("nvmlSystemGetDriverVersion", -1) : NVML_ERROR_UNINITIALIZED;
    if (rc == NVML_SUCCESS)
        snprintf(version, length, "580.159.04-stub");
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    nvmlReturn_t rc = stub.ready ? injected("nvmlDeviceGetCount_v2", -1) : NVML_ERROR_UNINITIALIZED;
    if (rc == NVML_SUCCESS)
        *deviceCount = (unsigned)stub.count;
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (index >= (unsigned)stub.count)
        return stub.ready ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t rc = enter("nvmlDeviceGetHandleByIndex_v2", &stub.dev[index]);
    if (rc == NVML_SUCCESS)
        *device = &stub.dev[index];
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetUUID", device);
    const stub_instance *in = rc == NVML_SUCCESS ? instance_of(device) : NULL;
    if (rc == NVML_SUCCESS)
        snprintf(uuid, length, "%s", in ? in->uuid : stub.gpus[device->gpu].uuid);
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetName", device);
    if (rc == NVML_SUCCESS)
        snprintf(name, length, "%s", stub.gpus[device->gpu].name);
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetPciInfo_v3", device);
    if (rc == NVML_SUCCESS) {
        memset(pci, 0, sizeof *pci);
        snprintf(pci->busId, sizeof pci->busId, "%s", stub.gpus[device->gpu].bus_id);
    }
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetMinorNumber", device);
    if (rc == NVML_SUCCESS)
        *minorNumber = stub.gpus[device->gpu].minor;
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet);
nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetCpuAffinity", device);
    const stub_gpu *gpu = rc == NVML_SUCCESS ? &stub.gpus[device->gpu] : NULL;
    if (gpu && gpu->n_cpus == 0)
        rc = NVML_ERROR_NOT_SUPPORTED;
    const unsigned bits = 8 * sizeof *cpuSet;
    for (unsigned w = 0; rc == NVML_SUCCESS && w < cpuSetSize; w++)
        cpuSet[w] = 0;
    for (int i = 0; rc == NVML_SUCCESS && i < gpu->n_cpus; i++)
        if ((unsigned)gpu->cpus[i] < cpuSetSize * bits)
            cpuSet[gpu->cpus[i] / bits] |= 1UL << (gpu->cpus[i] % bits);
    return rc;
}

/* ---- telemetry ---- */

/* The sum over the GPU's processes: memory MiB (what = 0) or SM % (1). */
static unsigned long long process_sum(int gpu, int what)
{
    stub_process procs[64];
    int n = read_processes(procs, 64);
    unsigned long long sum = 0;
    for (int p = 0; p < n; p++)
        if (procs[p].gpu == gpu)
            sum += what == 0 ? procs[p].memory_mib : procs[p].sm > 0 ? (unsigned long long)procs[p].sm : 0;
    return sum;
}

STUB_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetMemoryInfo", device);
    const stub_instance *in = rc == NVML_SUCCESS ? instance_of(device) : NULL;
    const gi_profile *p = in ? profile_find(in->profile) : NULL;
    if (rc == NVML_SUCCESS) {
        memory->total = (p ? p->memory_mb : stub.gpus[device->gpu].memory_mib) * MIB;
        memory->used = in ? 0 : process_sum(device->gpu, 0) * MIB;
        memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
    }
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetUtilizationRates", device);
    unsigned long long sm = rc == NVML_SUCCESS ? process_sum(device->gpu, 1) : 0;
    if (rc == NVML_SUCCESS)
        *utilization = (nvmlUtilization_t){.gpu = sm > 100 ? 100 : (unsigned)sm, .memory = 0};
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetPowerUsage", device);
    if (rc == NVML_SUCCESS)
        *power = 78000;
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                               unsigned int *temp);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int *temp)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetTemperature", device);
    if (rc == NVML_SUCCESS && sensorType != NVML_TEMPERATURE_GPU)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *temp = 31;
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                  nvmlEccCounterType_t counterType, unsigned long long *eccCounts);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType, unsigned long long *eccCounts)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetTotalEccErrors", device);
    if (rc == NVML_SUCCESS)
        *eccCounts = counterType != NVML_VOLATILE_ECC ? 0
                     : (unsigned long long)health_of(device->gpu, errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED
                                                                       ? ECC_UNCORRECTED
                                                                       : ECC_CORRECTED);
    return rc;
}

static nvmlReturn_t list_processes(const char *fn, nvmlDevice_t device, unsigned int *infoCount,
                                   nvmlProcessInfo_t *infos)
{
    nvmlReturn_t rc = enter(fn, device);
    stub_process procs[64];
    int n = rc == NVML_SUCCESS ? read_processes(procs, 64) : 0;
    unsigned found = 0, cap = *infoCount;
    for (int p = 0; p < n; p++) {
        if (procs[p].gpu != device->gpu)
            continue;
        if (infos && found < cap)
            infos[found] = (nvmlProcessInfo_t){.pid = (unsigned)procs[p].pid,
                                               .usedGpuMemory = procs[p].memory_mib * MIB,
                                               .gpuInstanceId = procs[p].gi < 0 ? 0xFFFFFFFFu : (unsigned)procs[p].gi,
                                               .computeInstanceId = procs[p].gi < 0 ? 0xFFFFFFFFu : 0};
        found++;
    }
    if (rc == NVML_SUCCESS)
        *infoCount = found;
    return rc == NVML_SUCCESS && (found > cap || (!infos && found)) ? NVML_ERROR_INSUFFICIENT_SIZE : rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                              nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    return list_processes("nvmlDeviceGetComputeRunningProcesses_v3", device, infoCount, infos);
}

STUB_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                              nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    return list_processes("nvmlDeviceGetComputeRunningProcesses_v2", device, infoCount, infos);
}

STUB_API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
                                                      unsigned int *processSamplesCount,
                                                      unsigned long long lastSeenTimeStamp);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetProcessUtilization", device);
    stub_process procs[64];
    int n = rc == NVML_SUCCESS ? read_processes(procs, 64) : 0;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    unsigned long long now = (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
    if (now <= lastSeenTimeStamp)
        now = lastSeenTimeStamp + 1;
    unsigned found = 0;
    for (int p = 0; p < n; p++)
        if (procs[p].gpu == device->gpu && procs[p].sm >= 0 && found < *processSamplesCount)
            utilization[found++] = (nvmlProcessUtilizationSample_t){
                .pid = (unsigned)procs[p].pid, .timeStamp = now, .smUtil = (unsigned)procs[p].sm};
    if (rc == NVML_SUCCESS)
        *processSamplesCount = found;
    return rc == NVML_SUCCESS && found == 0 ? NVML_ERROR_NOT_FOUND : rc;
}

/* ---- NVLink ---- */

STUB_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetNvLinkState", device);
    if (rc == NVML_SUCCESS && stub.gpus[device->gpu].n_peers == 0)
        rc = NVML_ERROR_NOT_SUPPORTED;
    if (rc == NVML_SUCCESS && link >= NVML_NVLINK_MAX_LINKS)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *isActive = (int)link < stub.gpus[device->gpu].n_peers ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetNvLinkRemotePciInfo_v2", device);
    const stub_gpu *gpu = rc == NVML_SUCCESS ? &stub.gpus[device->gpu] : NULL;
    if (gpu && ((int)link >= gpu->n_peers || gpu->peers[link] < 0 || gpu->peers[link] >= stub.count))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS) {
        memset(pci, 0, sizeof *pci);
        snprintf(pci->busId, sizeof pci->busId, "%s", stub.gpus[gpu->peers[link]].bus_id);
    }
    return rc;
}

/* ---- health ---- */

STUB_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                                unsigned int *isPending, unsigned int *failureOccurred);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                       unsigned int *isPending, unsigned int *failureOccurred)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetRemappedRows", device);
    if (rc == NVML_SUCCESS) {
        *corrRows = *uncRows = 0;
        *isPending = (unsigned)health_of(device->gpu, REMAP_PENDING);
        *failureOccurred = (unsigned)health_of(device->gpu, REMAP_FAILED);
    }
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *isPending);
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *isPending)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetRetiredPagesPendingStatus", device);
    if (rc == NVML_SUCCESS)
        *isPending = health_of(device->gpu, RETIRED_PENDING) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetFieldValues", device);
    for (int i = 0; rc == NVML_SUCCESS && i < valuesCount; i++) {
        long long action = health_of(device->gpu, RECOVERY);
        bool known = values[i].fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION && action >= 0;
        values[i].nvmlReturn = known ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
        values[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        values[i].value.uiVal = known ? (unsigned)action : 0;
    }
    return rc;
}

/* ---- events ---- */

STUB_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    nvmlReturn_t rc = stub.ready ? injected("nvmlEventSetCreate", -1) : NVML_ERROR_UNINITIALIZED;
    if (rc == NVML_SUCCESS) {
        memset(&stub.set, 0, sizeof stub.set);
        *set = &stub.set;
    }
    return rc;
}

STUB_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    return set == &stub.set ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

STUB_API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetSupportedEventTypes", device);
    if (rc == NVML_SUCCESS)
        *eventTypes = nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeSingleBitEccError;
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)
{
    nvmlReturn_t rc = enter("nvmlDeviceRegisterEvents", device);
    if (rc == NVML_SUCCESS && set != &stub.set)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        set->types[device->gpu] |= eventTypes;
    return rc;
}

STUB_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    (void)timeoutms; /* never waits: the next line or TIMEOUT */
    nvmlReturn_t rc = stub.ready ? injected("nvmlEventSetWait_v2", -1) : NVML_ERROR_UNINITIALIZED;
    FILE *f = rc == NVML_SUCCESS ? open_file("events", "r") : NULL;
    char line[128];
    long number = 0;
    bool delivered = false;
    while (f && !delivered && fgets(line, sizeof line, f)) {
        int gpu;
        char what[32];
        if (number++ < stub.events_read)
            continue;
        stub.events_read++;
        unsigned long long type = nvmlEventTypeXidCriticalError, xid = 0;
        if (sscanf(line, "%d %31s", &gpu, what) != 2 || gpu < 0 || gpu >= stub.count)
            continue;
        if (strcmp(what, "ecc_double") == 0)
            type = nvmlEventTypeDoubleBitEccError;
        else if (strcmp(what, "ecc_single") == 0)
            type = nvmlEventTypeSingleBitEccError;
        else
            xid = strtoull(what, NULL, 10);
        if (!(set->types[gpu] & type))
            continue;
        *data = (nvmlEventData_t){.device = &stub.dev[gpu], .eventType = type, .eventData = xid,
                                  .gpuInstanceId = 0xFFFFFFFFu, .computeInstanceId = 0xFFFFFFFFu};
        delivered = true;
    }
    if (f)
        fclose(f);
    return rc == NVML_SUCCESS && !delivered ? NVML_ERROR_TIMEOUT : rc;
}

/* ---- MIG ---- */

STUB_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetMigMode", device);
    if (rc == NVML_SUCCESS)
        *currentMode = *pendingMode = stub.gpus[device->gpu].mig_mode;
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetMaxMigDeviceCount", device);
    if (rc == NVML_SUCCESS)
        *count = stub.gpus[device->gpu].mig_mode ? STUB_MIG : 0;
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                          nvmlDevice_t *migDevice);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetMigDeviceHandleByIndex", device);
    if (rc == NVML_SUCCESS && !stub.gpus[device->gpu].mig_mode)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    unsigned seen = 0;
    for (int s = 0; rc == NVML_SUCCESS && s < STUB_MIG; s++) {
        const stub_instance *in = &stub.gpus[device->gpu].inst[s];
        if (in->used && in->has_ci && seen++ == index) {
            *migDevice = &stub.mig_dev[device->gpu][s];
            return NVML_SUCCESS;
        }
    }
    return rc == NVML_SUCCESS ? NVML_ERROR_NOT_FOUND : rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetGpuInstanceId", device);
    const stub_instance *in = rc == NVML_SUCCESS ? instance_of(device) : NULL;
    if (in)
        *id = in->gi_id;
    return rc == NVML_SUCCESS && !in ? NVML_ERROR_NOT_SUPPORTED : rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetComputeInstanceId", device);
    const stub_instance *in = rc == NVML_SUCCESS ? instance_of(device) : NULL;
    if (in)
        *id = in->ci_id;
    return rc == NVML_SUCCESS && !in ? NVML_ERROR_NOT_SUPPORTED : rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                          nvmlGpuInstanceProfileInfo_t *info);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t *info)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetGpuInstanceProfileInfo", device);
    const gi_profile *p = profile_find(profile);
    if (rc == NVML_SUCCESS && !p)
        rc = profile > NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
    if (rc == NVML_SUCCESS)
        *info = (nvmlGpuInstanceProfileInfo_t){.id = p->index, .sliceCount = p->slices,
                                               .instanceCount = 8 / p->size - (p->size == 1),
                                               .memorySizeMB = p->memory_mb,
                                               .ofaCount = p->index == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1};
    return rc;
}

STUB_API nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                                    nvmlGpuInstancePlacement_t *placements,
                                                                    unsigned int *count);
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t *placements, unsigned int *count)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetGpuInstancePossiblePlacements_v2", device);
    const gi_profile *p = profile_find(profileId);
    if (rc == NVML_SUCCESS && !stub.gpus[device->gpu].mig_mode)
        rc = NVML_ERROR_NOT_SUPPORTED;
    if (rc == NVML_SUCCESS && !p)
        rc = NVML_ERROR_INVALID_ARGUMENT;
    unsigned n = 0;
    for (unsigned s = 0; rc == NVML_SUCCESS && s < 8; s++)
        if (p->starts & (1u << s)) {
            if (placements && n < *count)
                placements[n] = (nvmlGpuInstancePlacement_t){.start = s, .size = p->size};
            n++;
        }
    if (rc == NVML_SUCCESS && placements && n > *count)
        rc = NVML_ERROR_INSUFFICIENT_SIZE;
    if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE)
        *count = n;
    return rc;
}

static unsigned slices_taken(const stub_gpu *gpu)
{
    unsigned mask = 0;
    for (int s = 0; s < STUB_MIG; s++)
        if (gpu->inst[s].used)
            mask |= ((1u << gpu->inst[s].size) - 1u) << gpu->inst[s].start;
    return mask;
}

static unsigned free_gi_id(const stub_gpu *gpu)
{
    for (unsigned id = 1;; id++) {
        bool used = false;
        for (int s = 0; s < STUB_MIG; s++)
            used = used || (gpu->inst[s].used && gpu->inst[s].gi_id == id);
        if (!used)
            return id;
    }
}

STUB_API nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                               const nvmlGpuInstancePlacement_t *placement,
                                                               nvmlGpuInstance_t *gpuInstance);
nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t *placement,
                                                      nvmlGpuInstance_t *gpuInstance)
{
    nvmlReturn_t rc = enter("nvmlDeviceCreateGpuInstanceWithPlacement", device);
    const gi_profile *p = profile_find(profileId);
    stub_gpu *gpu = rc == NVML_SUCCESS ? &stub.gpus[device->gpu] : NULL;
    if (gpu && !gpu->mig_mode)
        rc = NVML_ERROR_NOT_SUPPORTED;
    if (rc == NVML_SUCCESS && (!p || placement->start >= 8 || !(p->starts & (1u << placement->start)) ||
                               placement->size != p->size))
        rc = NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS && (slices_taken(gpu) & (((1u << p->size) - 1u) << placement->start)))
        rc = NVML_ERROR_INSUFFICIENT_RESOURCES;
    int slot = 0;
    while (rc == NVML_SUCCESS && slot < STUB_MIG && gpu->inst[slot].used)
        slot++;
    if (rc == NVML_SUCCESS && slot == STUB_MIG)
        rc = NVML_ERROR_INSUFFICIENT_RESOURCES;
    if (rc != NVML_SUCCESS)
        return rc;
    stub_instance *in = &gpu->inst[slot];
    *in = (stub_instance){.used = true, .gi_id = free_gi_id(gpu), .profile = p->index, .start = placement->start,
                          .size = p->size};
    stub.created++;
    snprintf(in->uuid, sizeof in->uuid, "MIG-%08x-%04x-4%03x-8000-%012x", 0x5eed0000u + (unsigned)device->gpu, in->gi_id,
             stub.created & 0xfffu, stub.created);
    *gpuInstance = &stub.gi[device->gpu][slot];
    mig_save();
    return NVML_SUCCESS;
}

static stub_instance *gi_of(nvmlGpuInstance_t gi)
{
    if (!stub.ready || !gi || gi->gpu < 0 || gi->gpu >= stub.count || gi->slot < 0 || gi->slot >= STUB_MIG)
        return NULL;
    stub_instance *in = &stub.gpus[gi->gpu].inst[gi->slot];
    return in->used ? in : NULL;
}

STUB_API nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                   nvmlGpuInstance_t *gpuInstance);
nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance)
{
    nvmlReturn_t rc = enter("nvmlDeviceGetGpuInstanceById", device);
    for (int s = 0; rc == NVML_SUCCESS && s < STUB_MIG; s++)
        if (stub.gpus[device->gpu].inst[s].used && stub.gpus[device->gpu].inst[s].gi_id == id) {
            *gpuInstance = &stub.gi[device->gpu][s];
            return NVML_SUCCESS;
        }
    return rc == NVML_SUCCESS ? NVML_ERROR_NOT_FOUND : rc;
}

STUB_API nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info);
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info)
{
    const stub_instance *in = gi_of(gpuInstance);
    if (!in)
        return NVML_ERROR_INVALID_ARGUMENT;
    *info = (nvmlGpuInstanceInfo_t){.device = &stub.dev[gpuInstance->gpu], .id = in->gi_id, .profileId = in->profile,
                                    .placement = {.start = in->start, .size = in->size}};
    return NVML_SUCCESS;
}

/* Compute instance profile index -> compute slices. */
static const unsigned ci_slices[] = {1, 2, 3, 4, 7, 8, 6};

STUB_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                                   unsigned int engProfile,
                                                                   nvmlComputeInstanceProfileInfo_t *info);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t *info)
{
    const stub_instance *in = gi_of(gpuInstance);
    if (!in || engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED ||
        profile >= sizeof ci_slices / sizeof *ci_slices)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (ci_slices[profile] > profile_find(in->profile)->slices)
        return NVML_ERROR_NOT_SUPPORTED;
    *info = (nvmlComputeInstanceProfileInfo_t){.id = profile, .sliceCount = ci_slices[profile], .instanceCount = 1};
    return NVML_SUCCESS;
}

STUB_API nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                           nvmlComputeInstance_t *computeInstance);
nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                  nvmlComputeInstance_t *computeInstance)
{
    stub_instance *in = gi_of(gpuInstance);
    nvmlReturn_t rc = in ? injected("nvmlGpuInstanceCreateComputeInstance", gpuInstance->gpu)
                         : NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS && (profileId >= sizeof ci_slices / sizeof *ci_slices ||
                               ci_slices[profileId] != profile_find(in->profile)->slices))
        rc = NVML_ERROR_NOT_SUPPORTED; /* the stub makes full-size compute instances only */
    if (rc == NVML_SUCCESS && in->has_ci)
        rc = NVML_ERROR_INSUFFICIENT_RESOURCES;
    if (rc != NVML_SUCCESS)
        return rc;
    in->has_ci = true;
    in->ci_id = 0;
    *computeInstance = &stub.ci[gpuInstance->gpu][gpuInstance->slot];
    mig_save();
    return NVML_SUCCESS;
}

STUB_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                            nvmlComputeInstance_t *computeInstance);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                   nvmlComputeInstance_t *computeInstance)
{
    const stub_instance *in = gi_of(gpuInstance);
    if (!in)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!in->has_ci || in->ci_id != id)
        return NVML_ERROR_NOT_FOUND;
    *computeInstance = &stub.ci[gpuInstance->gpu][gpuInstance->slot];
    return NVML_SUCCESS;
}

/* A process of the `processes` file runs on the instance. */
static bool instance_in_use(int gpu, const stub_instance *in)
{
    stub_process procs[64];
    int n = read_processes(procs, 64);
    for (int p = 0; p < n; p++)
        if (procs[p].gpu == gpu && procs[p].gi == (int)in->gi_id)
            return true;
    return false;
}

STUB_API nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance);
nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
    stub_instance *in = computeInstance ? gi_of(&stub.gi[computeInstance->gpu][computeInstance->slot]) : NULL;
    nvmlReturn_t rc = in && in->has_ci ? injected("nvmlComputeInstanceDestroy", computeInstance->gpu)
                                       : NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS && instance_in_use(computeInstance->gpu, in))
        rc = NVML_ERROR_IN_USE;
    if (rc == NVML_SUCCESS) {
        in->has_ci = false;
        mig_save();
    }
    return rc;
}

STUB_API nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance);
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
    stub_instance *in = gi_of(gpuInstance);
    nvmlReturn_t rc = in ? injected("nvmlGpuInstanceDestroy", gpuInstance->gpu) : NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS && (in->has_ci || instance_in_use(gpuInstance->gpu, in)))
        rc = NVML_ERROR_IN_USE;
    if (rc == NVML_SUCCESS) {
        memset(in, 0, sizeof *in);
        mig_save();
    }
    return rc;
}

/* gpu_nvml.c - the nvml GPU backend: the node's NVIDIA GPUs through NVML,
 * loaded with dlopen at open (no build dependency on the driver).
 *
 * Open: dlopen the library, dlsym every function of nvml_api.h (a missing
 * required one fails the open naming it; a missing optional one makes its
 * feature "not supported": -1 in a reading, no events, no MIG), nvmlInit_v2,
 * then per GPU the facts that do not change while the driver runs: handle,
 * UUID, name, PCI bus id, minor number, memory.  Close: nvmlShutdown,
 * dlclose.
 *
 * What each call reads (docs/agent.md "The nvml backend"):
 *   inventory   the above, the model from the name (the table below), MIG
 *               mode (current) -> sharing "mig" and the MIG devices that
 *               exist (UUID, GPU/compute instance ids, placement, profile
 *               name from the profile info), NVLink state and remote PCI
 *               ids -> NVLink domains, the driver version, the host's CPUs
 *               and memory;
 *   telemetry   utilization (the "gpu" rate, the share of time a kernel ran,
 *               as SM activity), memory used, power, temperature, volatile
 *               ECC totals, and the compute processes (pid, memory, the MIG
 *               instance from gpuInstanceId) with their SM % from the
 *               process utilization samples (none yet: -1);
 *   poll_events XIDs and ECC errors from an event set, and one LOST event
 *               for a GPU once any call answered NVML_ERROR_GPU_IS_LOST;
 *   health      volatile uncorrected ECC, remapped rows (pending, failed),
 *               retired pages pending, NVML_FI_DEV_GET_GPU_RECOVERY_ACTION,
 *               lost; NOT_SUPPORTED leaves a reading at -1, not a failure;
 *   mig_create  the profile by name, the placement asked for (or the lowest
 *               free one NVML offers), a GPU instance there and one compute
 *               instance over all of it; destroy takes both down.
 *
 * Example: one "NVIDIA H100 80GB HBM3", MIG off, no NVLink: inventory says
 * model "H100", 1 GPU of 81559 MiB, sharing exclusive, 1 NVLink domain; a
 * PyTorch process shows in telemetry with its pid and memory, and with its
 * SM % about a second after its kernels start.
 *
 * Profile names: NVML gives a profile's compute slices and memory, not
 * its name; the name is "<slices>g.<memory GB, rounded up>gb" ("+me" for
 * the media-extension profiles): 3 slices and 40448 MB -> "3g.40gb", as
 * nvidia-smi and the engine's MIG table (src/core/mig.c) spell it.
 */
#define _GNU_SOURCE
#include "agent/gpu/gpu_nvml.h"

#include "agent/gpu/nvml_api.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MIB (1024ULL * 1024ULL)
#define NOT_ON_MIG 0xFFFFFFFFu
#define PROFILES_MAX (NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 + 1)
#define PLACEMENTS_MAX 8
#define UTIL_SAMPLES_MAX 256

/* ---- the functions ---- */

typedef struct nvml_fns {
    gp_nvml_fn_nvmlInit_v2 nvmlInit_v2;
    gp_nvml_fn_nvmlShutdown nvmlShutdown;
    gp_nvml_fn_nvmlErrorString nvmlErrorString;
    gp_nvml_fn_nvmlSystemGetDriverVersion nvmlSystemGetDriverVersion;
    gp_nvml_fn_nvmlDeviceGetCount_v2 nvmlDeviceGetCount_v2;
    gp_nvml_fn_nvmlDeviceGetHandleByIndex_v2 nvmlDeviceGetHandleByIndex_v2;
    gp_nvml_fn_nvmlDeviceGetUUID nvmlDeviceGetUUID;
    gp_nvml_fn_nvmlDeviceGetName nvmlDeviceGetName;
    gp_nvml_fn_nvmlDeviceGetPciInfo_v3 nvmlDeviceGetPciInfo_v3;
    gp_nvml_fn_nvmlDeviceGetMinorNumber nvmlDeviceGetMinorNumber;
    gp_nvml_fn_nvmlDeviceGetMemoryInfo nvmlDeviceGetMemoryInfo;
    gp_nvml_fn_nvmlDeviceGetCpuAffinity nvmlDeviceGetCpuAffinity;
    gp_nvml_fn_nvmlDeviceGetNvLinkState nvmlDeviceGetNvLinkState;
    gp_nvml_fn_nvmlDeviceGetNvLinkRemotePciInfo_v2 nvmlDeviceGetNvLinkRemotePciInfo_v2;
    gp_nvml_fn_nvmlDeviceGetUtilizationRates nvmlDeviceGetUtilizationRates;
    gp_nvml_fn_nvmlDeviceGetPowerUsage nvmlDeviceGetPowerUsage;
    gp_nvml_fn_nvmlDeviceGetTemperature nvmlDeviceGetTemperature;
    gp_nvml_fn_nvmlDeviceGetTotalEccErrors nvmlDeviceGetTotalEccErrors;
    gp_nvml_fn_nvmlDeviceGetComputeRunningProcesses_v3 nvmlDeviceGetComputeRunningProcesses_v3;
    gp_nvml_fn_nvmlDeviceGetComputeRunningProcesses_v2 nvmlDeviceGetComputeRunningProcesses_v2;
    gp_nvml_fn_nvmlDeviceGetProcessUtilization nvmlDeviceGetProcessUtilization;
    gp_nvml_fn_nvmlDeviceGetRemappedRows nvmlDeviceGetRemappedRows;
    gp_nvml_fn_nvmlDeviceGetRetiredPagesPendingStatus nvmlDeviceGetRetiredPagesPendingStatus;
    gp_nvml_fn_nvmlDeviceGetFieldValues nvmlDeviceGetFieldValues;
    gp_nvml_fn_nvmlEventSetCreate nvmlEventSetCreate;
    gp_nvml_fn_nvmlEventSetFree nvmlEventSetFree;
    gp_nvml_fn_nvmlDeviceGetSupportedEventTypes nvmlDeviceGetSupportedEventTypes;
    gp_nvml_fn_nvmlDeviceRegisterEvents nvmlDeviceRegisterEvents;
    gp_nvml_fn_nvmlEventSetWait_v2 nvmlEventSetWait_v2;
    gp_nvml_fn_nvmlDeviceGetMigMode nvmlDeviceGetMigMode;
    gp_nvml_fn_nvmlDeviceGetMaxMigDeviceCount nvmlDeviceGetMaxMigDeviceCount;
    gp_nvml_fn_nvmlDeviceGetMigDeviceHandleByIndex nvmlDeviceGetMigDeviceHandleByIndex;
    gp_nvml_fn_nvmlDeviceGetGpuInstanceId nvmlDeviceGetGpuInstanceId;
    gp_nvml_fn_nvmlDeviceGetComputeInstanceId nvmlDeviceGetComputeInstanceId;
    gp_nvml_fn_nvmlDeviceGetGpuInstanceById nvmlDeviceGetGpuInstanceById;
    gp_nvml_fn_nvmlGpuInstanceGetInfo nvmlGpuInstanceGetInfo;
    gp_nvml_fn_nvmlDeviceGetGpuInstanceProfileInfo nvmlDeviceGetGpuInstanceProfileInfo;
    gp_nvml_fn_nvmlDeviceGetGpuInstancePossiblePlacements_v2 nvmlDeviceGetGpuInstancePossiblePlacements_v2;
    gp_nvml_fn_nvmlDeviceCreateGpuInstanceWithPlacement nvmlDeviceCreateGpuInstanceWithPlacement;
    gp_nvml_fn_nvmlGpuInstanceGetComputeInstanceProfileInfo nvmlGpuInstanceGetComputeInstanceProfileInfo;
    gp_nvml_fn_nvmlGpuInstanceCreateComputeInstance nvmlGpuInstanceCreateComputeInstance;
    gp_nvml_fn_nvmlGpuInstanceGetComputeInstanceById nvmlGpuInstanceGetComputeInstanceById;
    gp_nvml_fn_nvmlComputeInstanceDestroy nvmlComputeInstanceDestroy;
    gp_nvml_fn_nvmlGpuInstanceDestroy nvmlGpuInstanceDestroy;
} nvml_fns;

typedef enum { OPTIONAL = 0, REQUIRED = 1 } need;

typedef struct nvml_symbol {
    const char *name;
    size_t offset;
    need need;
} nvml_symbol;

#define SYMBOL(fn, need) {#fn, offsetof(nvml_fns, fn), need}

static const nvml_symbol symbols[] = {
    SYMBOL(nvmlInit_v2, REQUIRED),
    SYMBOL(nvmlShutdown, REQUIRED),
    SYMBOL(nvmlErrorString, REQUIRED),
    SYMBOL(nvmlSystemGetDriverVersion, REQUIRED),
    SYMBOL(nvmlDeviceGetCount_v2, REQUIRED),
    SYMBOL(nvmlDeviceGetHandleByIndex_v2, REQUIRED),
    SYMBOL(nvmlDeviceGetUUID, REQUIRED),
    SYMBOL(nvmlDeviceGetName, REQUIRED),
    SYMBOL(nvmlDeviceGetPciInfo_v3, REQUIRED),
    SYMBOL(nvmlDeviceGetMinorNumber, REQUIRED),
    SYMBOL(nvmlDeviceGetMemoryInfo, REQUIRED),
    SYMBOL(nvmlDeviceGetCpuAffinity, OPTIONAL),
    SYMBOL(nvmlDeviceGetNvLinkState, OPTIONAL),
    SYMBOL(nvmlDeviceGetNvLinkRemotePciInfo_v2, OPTIONAL),
    SYMBOL(nvmlDeviceGetUtilizationRates, OPTIONAL),
    SYMBOL(nvmlDeviceGetPowerUsage, OPTIONAL),
    SYMBOL(nvmlDeviceGetTemperature, OPTIONAL),
    SYMBOL(nvmlDeviceGetTotalEccErrors, OPTIONAL),
    SYMBOL(nvmlDeviceGetComputeRunningProcesses_v3, OPTIONAL),
    SYMBOL(nvmlDeviceGetComputeRunningProcesses_v2, OPTIONAL),
    SYMBOL(nvmlDeviceGetProcessUtilization, OPTIONAL),
    SYMBOL(nvmlDeviceGetRemappedRows, OPTIONAL),
    SYMBOL(nvmlDeviceGetRetiredPagesPendingStatus, OPTIONAL),
    SYMBOL(nvmlDeviceGetFieldValues, OPTIONAL),
    SYMBOL(nvmlEventSetCreate, OPTIONAL),
    SYMBOL(nvmlEventSetFree, OPTIONAL),
    SYMBOL(nvmlDeviceGetSupportedEventTypes, OPTIONAL),
    SYMBOL(nvmlDeviceRegisterEvents, OPTIONAL),
    SYMBOL(nvmlEventSetWait_v2, OPTIONAL),
    SYMBOL(nvmlDeviceGetMigMode, OPTIONAL),
    SYMBOL(nvmlDeviceGetMaxMigDeviceCount, OPTIONAL),
    SYMBOL(nvmlDeviceGetMigDeviceHandleByIndex, OPTIONAL),
    SYMBOL(nvmlDeviceGetGpuInstanceId, OPTIONAL),
    SYMBOL(nvmlDeviceGetComputeInstanceId, OPTIONAL),
    SYMBOL(nvmlDeviceGetGpuInstanceById, OPTIONAL),
    SYMBOL(nvmlGpuInstanceGetInfo, OPTIONAL),
    SYMBOL(nvmlDeviceGetGpuInstanceProfileInfo, OPTIONAL),
    SYMBOL(nvmlDeviceGetGpuInstancePossiblePlacements_v2, OPTIONAL),
    SYMBOL(nvmlDeviceCreateGpuInstanceWithPlacement, OPTIONAL),
    SYMBOL(nvmlGpuInstanceGetComputeInstanceProfileInfo, OPTIONAL),
    SYMBOL(nvmlGpuInstanceCreateComputeInstance, OPTIONAL),
    SYMBOL(nvmlGpuInstanceGetComputeInstanceById, OPTIONAL),
    SYMBOL(nvmlComputeInstanceDestroy, OPTIONAL),
    SYMBOL(nvmlGpuInstanceDestroy, OPTIONAL),
};

/* ---- state ---- */

typedef struct nvml_gpu {
    nvmlDevice_t dev;
    char uuid[GP_UUID_MAX];
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    int minor;
    int64_t memory_mib;
    char cpus[GP_GPU_CPULIST_MAX];   /* its CPU affinity as a CPU list, "" unknown */
    unsigned long long util_seen_us; /* the newest process utilization sample read */
    bool lost, lost_told;            /* a call answered GPU_IS_LOST; the LOST event went out */
} nvml_gpu;

typedef struct nvml_state {
    void *lib;
    nvml_fns f;
    bool initialised;
    char node[GP_NAME_MAX], zone[GP_NAME_MAX], block[GP_NAME_MAX], pool[GP_NAME_MAX];
    char device_dir[GP_GPU_PATH_MAX], proc_dir[GP_GPU_PATH_MAX];
    gp_sharing sharing; /* of GPUs not in MIG mode */
    int count;
    nvml_gpu gpus[GP_MAX_GPUS_PER_NODE];
    nvmlEventSet_t events; /* NULL: no event support */
} nvml_state;

/* A call's answer about GPU g: a lost GPU is remembered. */
static nvmlReturn_t seen(nvml_state *s, int g, nvmlReturn_t rc)
{
    if (rc == NVML_ERROR_GPU_IS_LOST)
        s->gpus[g].lost = true;
    return rc;
}

/* A failed call as a gp_error: "WHAT: NVML's text (NVML error N)". */
static gp_err nvml_fail(const nvml_state *s, nvmlReturn_t rc, const char *field, const char *what, gp_error *err)
{
    gp_err code = rc == NVML_ERROR_INVALID_ARGUMENT ? GP_ERR_INVALID
                  : rc == NVML_ERROR_NOT_FOUND      ? GP_ERR_NOT_FOUND
                  : rc == NVML_ERROR_MEMORY         ? GP_ERR_NOMEM
                                                    : GP_ERR_CONFLICT;
    return gp_error_set(err, code, field, "%s: %s (NVML error %d)", what, s->f.nvmlErrorString(rc), (int)rc);
}

static gp_err check_gpu(const nvml_state *s, int gpu, gp_error *err)
{
    if (gpu < 0 || gpu >= s->count)
        return gp_error_set(err, GP_ERR_INVALID, "gpu", "gpu must be 0..%d, got %d", s->count - 1, gpu);
    return GP_OK;
}

/* ---- the model a GPU name names ---- */

/* The fleet's GPU types, as a word of NVML's name: "NVIDIA H100 80GB HBM3"
 * -> H100, "NVIDIA A100-SXM4-80GB" -> A100, "Tesla T4" -> T4. */
static const char *const models[] = {"B200", "GB200", "GH200", "H200", "H100", "H800", "H20", "A100", "A800",
                                     "A30",  "A40",   "A10G",  "A10",  "L40S", "L40",  "L4",  "T4",   "V100"};

static void model_of(const char *name, char *out, size_t cap)
{
    char words[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    snprintf(words, sizeof words, "%s", name);
    char *save = NULL;
    for (char *w = strtok_r(words, " -", &save); w; w = strtok_r(NULL, " -", &save))
        for (size_t m = 0; m < sizeof models / sizeof *models; m++)
            if (strcmp(w, models[m]) == 0) {
                snprintf(out, cap, "%s", models[m]);
                return;
            }
    /* Unknown: the name without the vendor, spaces as dashes ("RTX-A4000"). */
    const char *rest = strncmp(name, "NVIDIA ", 7) == 0 ? name + 7 : strncmp(name, "Tesla ", 6) == 0 ? name + 6 : name;
    snprintf(out, cap, "%s", rest);
    for (char *p = out; *p; p++)
        *p = *p == ' ' ? '-' : *p;
}

/* ---- open and close ---- */

static gp_err load_symbols(nvml_state *s, gp_error *err)
{
    for (size_t i = 0; i < sizeof symbols / sizeof *symbols; i++) {
        void *fn = dlsym(s->lib, symbols[i].name);
        if (!fn && symbols[i].need == REQUIRED)
            return gp_error_set(err, GP_ERR_NOT_FOUND, "nvml_library", "the NVML library lacks %s", symbols[i].name);
        memcpy((char *)&s->f + symbols[i].offset, &fn, sizeof fn);
    }
    return GP_OK;
}

/* The set bits of a CPU mask as a CPU list ("0-47,96-143"), as the kernel
 * writes cpusets; "" when it does not fit. */
static void cpu_list(const unsigned long *mask, unsigned words, char *out, size_t cap)
{
    const unsigned bits = words * 8 * sizeof *mask;
    size_t used = 0;
    out[0] = '\0';
    for (unsigned cpu = 0; cpu < bits; cpu++) {
        if (!(mask[cpu / (8 * sizeof *mask)] >> (cpu % (8 * sizeof *mask)) & 1UL))
            continue;
        unsigned last = cpu;
        while (last + 1 < bits && mask[(last + 1) / (8 * sizeof *mask)] >> ((last + 1) % (8 * sizeof *mask)) & 1UL)
            last++;
        int n = last > cpu ? snprintf(out + used, cap - used, "%s%u-%u", used ? "," : "", cpu, last)
                           : snprintf(out + used, cap - used, "%s%u", used ? "," : "", cpu);
        if (n < 0 || (size_t)n >= cap - used) {
            out[0] = '\0';
            return;
        }
        used += (size_t)n;
        cpu = last;
    }
}

/* The CPUs NVML says are near the GPU (nvmlDeviceGetCpuAffinity), up to
 * 1024 CPUs; unknown ("") where the driver cannot tell. */
static void read_cpu_affinity(const nvml_state *s, nvml_gpu *gpu)
{
    unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
    const unsigned words = sizeof mask / sizeof *mask;
    gpu->cpus[0] = '\0';
    if (s->f.nvmlDeviceGetCpuAffinity && s->f.nvmlDeviceGetCpuAffinity(gpu->dev, words, mask) == NVML_SUCCESS)
        cpu_list(mask, words, gpu->cpus, sizeof gpu->cpus);
}

static gp_err open_gpu(nvml_state *s, int g, gp_error *err)
{
    nvml_gpu *gpu = &s->gpus[g];
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
    nvmlPciInfo_t pci;
    nvmlMemory_t mem;
    unsigned minor = 0;
    const char *what = "nvmlDeviceGetHandleByIndex_v2";
    nvmlReturn_t rc = s->f.nvmlDeviceGetHandleByIndex_v2((unsigned)g, &gpu->dev);
    if (rc == NVML_SUCCESS && (rc = s->f.nvmlDeviceGetUUID(gpu->dev, uuid, sizeof uuid)) != NVML_SUCCESS)
        what = "nvmlDeviceGetUUID";
    if (rc == NVML_SUCCESS && (rc = s->f.nvmlDeviceGetName(gpu->dev, gpu->name, sizeof gpu->name)) != NVML_SUCCESS)
        what = "nvmlDeviceGetName";
    if (rc == NVML_SUCCESS && (rc = s->f.nvmlDeviceGetPciInfo_v3(gpu->dev, &pci)) != NVML_SUCCESS)
        what = "nvmlDeviceGetPciInfo_v3";
    if (rc == NVML_SUCCESS && (rc = s->f.nvmlDeviceGetMinorNumber(gpu->dev, &minor)) != NVML_SUCCESS)
        what = "nvmlDeviceGetMinorNumber";
    if (rc == NVML_SUCCESS && (rc = s->f.nvmlDeviceGetMemoryInfo(gpu->dev, &mem)) != NVML_SUCCESS)
        what = "nvmlDeviceGetMemoryInfo";
    if (rc != NVML_SUCCESS) {
        char message[96];
        snprintf(message, sizeof message, "GPU %d: %s", g, what);
        return nvml_fail(s, rc, "gpu", message, err);
    }
    if (strlen(uuid) >= sizeof gpu->uuid)
        return gp_error_set(err, GP_ERR_INVALID, "gpu", "GPU %d: UUID %s is too long", g, uuid);
    snprintf(gpu->uuid, sizeof gpu->uuid, "%s", uuid);
    snprintf(gpu->bus_id, sizeof gpu->bus_id, "%s", pci.busId);
    gpu->minor = (int)minor;
    gpu->memory_mib = (int64_t)(mem.total / MIB);
    read_cpu_affinity(s, gpu);
    return GP_OK;
}

/* An event set with each GPU's XID and ECC events, where supported. */
static void open_events(nvml_state *s)
{
    if (!s->f.nvmlEventSetCreate || !s->f.nvmlDeviceRegisterEvents || !s->f.nvmlEventSetWait_v2 ||
        s->f.nvmlEventSetCreate(&s->events) != NVML_SUCCESS) {
        s->events = NULL;
        return;
    }
    const unsigned long long wanted =
        nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeSingleBitEccError;
    for (int g = 0; g < s->count; g++) {
        unsigned long long supported = wanted;
        if (s->f.nvmlDeviceGetSupportedEventTypes &&
            s->f.nvmlDeviceGetSupportedEventTypes(s->gpus[g].dev, &supported) != NVML_SUCCESS)
            continue;
        if (supported & wanted)
            s->f.nvmlDeviceRegisterEvents(s->gpus[g].dev, supported & wanted, s->events);
    }
}

static void nvml_close(void *state)
{
    nvml_state *s = state;
    if (!s)
        return;
    if (s->events && s->f.nvmlEventSetFree)
        s->f.nvmlEventSetFree(s->events);
    if (s->initialised)
        s->f.nvmlShutdown();
    if (s->lib)
        dlclose(s->lib);
    free(s);
}

static void copy_option(char *out, size_t cap, const char *value, const char *otherwise)
{
    snprintf(out, cap, "%s", value ? value : otherwise);
}

static gp_err open_library(nvml_state *s, const gp_gpu_options *opt, gp_error *err)
{
    const char *path = opt->nvml_library ? opt->nvml_library : getenv("GPUPOOL_NVML_LIBRARY");
    s->lib = dlopen(path && path[0] ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!s->lib)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "nvml_library", "no NVIDIA driver: %s", dlerror());
    gp_err rc = load_symbols(s, err);
    if (rc)
        return rc;
    nvmlReturn_t nrc = s->f.nvmlInit_v2();
    if (nrc != NVML_SUCCESS)
        return nvml_fail(s, nrc, "nvml_library", "no NVIDIA driver: nvmlInit_v2", err);
    s->initialised = true;
    unsigned count = 0;
    if ((nrc = s->f.nvmlDeviceGetCount_v2(&count)) != NVML_SUCCESS)
        return nvml_fail(s, nrc, "gpu", "nvmlDeviceGetCount_v2", err);
    if (count == 0 || count > GP_MAX_GPUS_PER_NODE)
        return gp_error_set(err, GP_ERR_INVALID, "gpu", "the driver sees %u GPUs (a node has 1..%d)", count,
                            GP_MAX_GPUS_PER_NODE);
    s->count = (int)count;
    return GP_OK;
}

static gp_err nvml_open(const gp_gpu_options *opt, void **state, gp_error *err)
{
    nvml_state *s = calloc(1, sizeof *s);
    if (!s)
        return gp_error_set(err, GP_ERR_NOMEM, "gpu", "out of memory");
    char host[GP_NAME_MAX] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "localhost");
    copy_option(s->node, sizeof s->node, opt->node, host);
    copy_option(s->zone, sizeof s->zone, opt->zone, "default"); /* the node codec's defaults */
    copy_option(s->block, sizeof s->block, opt->block, "default");
    copy_option(s->pool, sizeof s->pool, opt->pool, "default");
    copy_option(s->device_dir, sizeof s->device_dir, opt->device_dir, "/dev");
    copy_option(s->proc_dir, sizeof s->proc_dir, opt->proc_dir, "/proc");
    s->sharing = opt->sharing;
    gp_err rc = s->sharing == GP_SHARING_MIG
                    ? gp_error_set(err, GP_ERR_INVALID, "sharing",
                                   "sharing mig comes from the GPU's MIG mode; give exclusive, mps or timeslice")
                    : open_library(s, opt, err);
    for (int g = 0; rc == GP_OK && g < s->count; g++)
        rc = open_gpu(s, g, err);
    if (rc) {
        nvml_close(s);
        return rc;
    }
    open_events(s);
    *state = s;
    return GP_OK;
}

/* ---- MIG: profiles and the instances that exist ---- */

typedef struct mig_profile {
    nvmlGpuInstanceProfileInfo_t info;
    char name[GP_GPU_PROFILE_MAX];
} mig_profile;

/* The GPU instance profiles GPU g offers (at most PROFILES_MAX). */
static int mig_profiles(nvml_state *s, int g, mig_profile *out)
{
    int n = 0;
    for (unsigned index = 0; s->f.nvmlDeviceGetGpuInstanceProfileInfo && index < PROFILES_MAX; index++) {
        mig_profile *p = &out[n];
        if (seen(s, g, s->f.nvmlDeviceGetGpuInstanceProfileInfo(s->gpus[g].dev, index, &p->info)) != NVML_SUCCESS)
            continue;
        bool media = index == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 || index == NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1;
        snprintf(p->name, sizeof p->name, "%ug.%llugb%s", p->info.sliceCount, (p->info.memorySizeMB + 1023) / 1024,
                 media ? "+me" : "");
        n++;
    }
    return n;
}

static bool mig_enabled(nvml_state *s, int g)
{
    unsigned current = 0, pending = 0;
    return s->f.nvmlDeviceGetMigMode && s->f.nvmlDeviceGetMaxMigDeviceCount &&
           seen(s, g, s->f.nvmlDeviceGetMigMode(s->gpus[g].dev, &current, &pending)) == NVML_SUCCESS &&
           current == NVML_DEVICE_MIG_ENABLE;
}

/* One MIG device (a GPU instance with its compute instance) as an instance. */
static nvmlReturn_t mig_read(nvml_state *s, int g, nvmlDevice_t mig, const mig_profile *profiles, int n_profiles,
                             gp_mig_instance *out)
{
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
    unsigned gi_id = 0, ci_id = 0;
    nvmlMemory_t mem = {0};
    nvmlGpuInstance_t gi;
    nvmlGpuInstanceInfo_t info = {0};
    nvmlReturn_t rc = s->f.nvmlDeviceGetUUID(mig, uuid, sizeof uuid);
    if (rc == NVML_SUCCESS)
        rc = s->f.nvmlDeviceGetGpuInstanceId(mig, &gi_id);
    if (rc == NVML_SUCCESS)
        rc = s->f.nvmlDeviceGetComputeInstanceId(mig, &ci_id);
    if (rc == NVML_SUCCESS)
        rc = s->f.nvmlDeviceGetMemoryInfo(mig, &mem);
    if (rc == NVML_SUCCESS)
        rc = s->f.nvmlDeviceGetGpuInstanceById(s->gpus[g].dev, gi_id, &gi);
    if (rc == NVML_SUCCESS)
        rc = s->f.nvmlGpuInstanceGetInfo(gi, &info);
    memset(out, 0, sizeof *out);
    snprintf(out->uuid, sizeof out->uuid, "%s", uuid);
    out->gi_id = (int)gi_id;
    out->ci_id = (int)ci_id;
    out->memory_mib = (int64_t)(mem.total / MIB);
    out->start = (int)info.placement.start;
    out->size = (int)info.placement.size;
    for (int p = 0; p < n_profiles; p++)
        if (profiles[p].info.id == info.profileId)
            snprintf(out->profile, sizeof out->profile, "%s", profiles[p].name);
    return seen(s, g, rc);
}

static bool mig_functions(const nvml_state *s)
{
    return s->f.nvmlDeviceGetMigDeviceHandleByIndex && s->f.nvmlDeviceGetGpuInstanceId &&
           s->f.nvmlDeviceGetComputeInstanceId && s->f.nvmlDeviceGetGpuInstanceById && s->f.nvmlGpuInstanceGetInfo;
}

/* GPU g's MIG instances now, ordered by start (none when MIG is off). */
static gp_err mig_list(nvml_state *s, int g, gp_mig_instance *out, int *n, gp_error *err)
{
    *n = 0;
    unsigned max = 0;
    if (!mig_enabled(s, g) || !mig_functions(s))
        return GP_OK;
    mig_profile profiles[PROFILES_MAX];
    int n_profiles = mig_profiles(s, g, profiles);
    nvmlReturn_t rc = seen(s, g, s->f.nvmlDeviceGetMaxMigDeviceCount(s->gpus[g].dev, &max));
    for (unsigned i = 0; rc == NVML_SUCCESS && i < max && *n < GP_GPU_MIG_MAX; i++) {
        nvmlDevice_t mig;
        nvmlReturn_t found = seen(s, g, s->f.nvmlDeviceGetMigDeviceHandleByIndex(s->gpus[g].dev, i, &mig));
        if (found == NVML_ERROR_NOT_FOUND || found == NVML_ERROR_INVALID_ARGUMENT)
            continue; /* an empty slot */
        gp_mig_instance mi;
        if ((rc = found) != NVML_SUCCESS || (rc = mig_read(s, g, mig, profiles, n_profiles, &mi)) != NVML_SUCCESS)
            break;
        int at = *n;
        while (at > 0 && out[at - 1].start > mi.start) {
            out[at] = out[at - 1];
            at--;
        }
        out[at] = mi;
        (*n)++;
    }
    if (rc != NVML_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "GPU %d: listing its MIG devices", g);
        return nvml_fail(s, rc, "gpu", what, err);
    }
    return GP_OK;
}

/* The GPU a UUID names and, for a MIG instance's UUID, the instance. */
static gp_err find_uuid(nvml_state *s, const char *uuid, int *gpu, gp_mig_instance *mig, bool *is_mig, gp_error *err)
{
    for (int g = 0; uuid && g < s->count; g++) {
        *gpu = g;
        *is_mig = false;
        if (strcmp(s->gpus[g].uuid, uuid) == 0)
            return GP_OK;
    }
    for (int g = 0; uuid && strncmp(uuid, "MIG-", 4) == 0 && g < s->count; g++) {
        gp_mig_instance list[GP_GPU_MIG_MAX];
        int n = 0;
        gp_err rc = mig_list(s, g, list, &n, err);
        if (rc)
            return rc;
        for (int i = 0; i < n; i++)
            if (strcmp(list[i].uuid, uuid) == 0) {
                *gpu = g;
                *mig = list[i];
                *is_mig = true;
                return GP_OK;
            }
    }
    return gp_error_set(err, GP_ERR_NOT_FOUND, "uuid", "node %s has no GPU or MIG instance %s", s->node,
                        uuid ? uuid : "(none)");
}

/* ---- inventory ---- */

/* Union-find over GPUs joined by an active NVLink, to a GPU or to the
 * same remote device (an NVSwitch). */
static int domain_root(int *parent, int g)
{
    while (parent[g] != g)
        g = parent[g] = parent[parent[g]];
    return g;
}

static void nvlink_join(nvml_state *s, int g, int *parent, char remotes[][NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE],
                        int *remote_gpu, int *n_remotes)
{
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
        nvmlEnableState_t active = NVML_FEATURE_DISABLED;
        nvmlPciInfo_t pci;
        if (s->f.nvmlDeviceGetNvLinkState(s->gpus[g].dev, link, &active) != NVML_SUCCESS)
            return; /* NOT_SUPPORTED (no NVLink) or INVALID_ARGUMENT (no more links) */
        if (active != NVML_FEATURE_ENABLED ||
            s->f.nvmlDeviceGetNvLinkRemotePciInfo_v2(s->gpus[g].dev, link, &pci) != NVML_SUCCESS)
            continue;
        int other = -1;
        for (int h = 0; h < s->count && other < 0; h++)
            other = strcasecmp(s->gpus[h].bus_id, pci.busId) == 0 ? h : -1;
        for (int r = 0; r < *n_remotes && other < 0; r++)
            other = strcasecmp(remotes[r], pci.busId) == 0 ? remote_gpu[r] : -1;
        if (other < 0 && *n_remotes < GP_MAX_GPUS_PER_NODE * NVML_NVLINK_MAX_LINKS) {
            snprintf(remotes[*n_remotes], sizeof remotes[0], "%s", pci.busId);
            remote_gpu[(*n_remotes)++] = g;
        }
        if (other >= 0)
            parent[domain_root(parent, g)] = domain_root(parent, other);
    }
}

/* Numbers the domains in GPU order.  The fleet's model has equal domains
 * of consecutive GPUs (GPU g in domain g / (count / domains)); NVLinks
 * that do not fit it count as none: each GPU its own domain. */
static int nvlink_domains(nvml_state *s, gp_node_inventory *inv)
{
    int parent[GP_MAX_GPUS_PER_NODE], root_domain[GP_MAX_GPUS_PER_NODE], domains = 0;
    char remotes[GP_MAX_GPUS_PER_NODE * NVML_NVLINK_MAX_LINKS][NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    int remote_gpu[GP_MAX_GPUS_PER_NODE * NVML_NVLINK_MAX_LINKS], n_remotes = 0;
    for (int g = 0; g < s->count; g++)
        parent[g] = g;
    for (int g = 0; s->f.nvmlDeviceGetNvLinkState && s->f.nvmlDeviceGetNvLinkRemotePciInfo_v2 && g < s->count; g++)
        nvlink_join(s, g, parent, remotes, remote_gpu, &n_remotes);
    for (int g = 0; g < s->count; g++)
        root_domain[g] = -1;
    for (int g = 0; g < s->count; g++) {
        int r = domain_root(parent, g);
        if (root_domain[r] < 0)
            root_domain[r] = domains++;
        inv->gpus[g].nvlink_domain = root_domain[r];
    }
    bool regular = s->count % domains == 0;
    for (int g = 0; regular && g < s->count; g++)
        regular = inv->gpus[g].nvlink_domain == g / (s->count / domains);
    for (int g = 0; !regular && g < s->count; g++)
        inv->gpus[g].nvlink_domain = g;
    return regular ? domains : s->count;
}

static gp_err inventory_gpu(nvml_state *s, int g, gp_node_gpu *out, gp_error *err)
{
    const nvml_gpu *gpu = &s->gpus[g];
    memset(out, 0, sizeof *out);
    out->index = g;
    snprintf(out->uuid, sizeof out->uuid, "%s", gpu->uuid);
    out->memory_mib = gpu->memory_mib;
    out->minor = gpu->minor;
    snprintf(out->device_path, sizeof out->device_path, "%s/nvidia%d", s->device_dir, gpu->minor);
    snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%s", gpu->bus_id);
    snprintf(out->cpu_affinity, sizeof out->cpu_affinity, "%s", gpu->cpus);
    snprintf(out->block, sizeof out->block, "%s", s->block);
    out->sharing = mig_enabled(s, g) ? GP_SHARING_MIG : s->sharing;
    return mig_list(s, g, out->mig, &out->n_mig, err);
}

static gp_err nvml_inventory(void *state, gp_node_inventory *out, gp_error *err)
{
    nvml_state *s = state;
    memset(out, 0, sizeof *out);
    snprintf(out->backend, sizeof out->backend, "nvml");
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
    if (s->f.nvmlSystemGetDriverVersion(version, sizeof version) == NVML_SUCCESS)
        snprintf(out->driver_version, sizeof out->driver_version, "%s", version);
    snprintf(out->name, sizeof out->name, "%s", s->node);
    model_of(s->gpus[0].name, out->model, sizeof out->model);
    snprintf(out->zone, sizeof out->zone, "%s", s->zone);
    snprintf(out->block, sizeof out->block, "%s", s->block);
    snprintf(out->pool, sizeof out->pool, "%s", s->pool);
    out->cpu_millis = sysconf(_SC_NPROCESSORS_ONLN) * 1000L;
    out->mem_mib = (int64_t)((unsigned long long)sysconf(_SC_PHYS_PAGES) * (unsigned long long)sysconf(_SC_PAGESIZE) / MIB);
    out->gpu_count = s->count;
    gp_err rc = GP_OK;
    for (int g = 0; rc == GP_OK && g < s->count; g++)
        rc = inventory_gpu(s, g, &out->gpus[g], err);
    if (rc == GP_OK)
        out->nvlink_domains = nvlink_domains(s, out);
    return rc;
}

/* ---- telemetry ---- */

/* A reading that NVML may not give: -1 unless the call succeeded (the
 * call is made before: C leaves the order of arguments open). */
static int64_t reading(nvml_state *s, int g, nvmlReturn_t rc, int64_t value)
{
    return seen(s, g, rc) == NVML_SUCCESS ? value : -1;
}

static int64_t ecc_total(nvml_state *s, int g, nvmlMemoryErrorType_t type)
{
    unsigned long long count = 0;
    if (!s->f.nvmlDeviceGetTotalEccErrors)
        return -1;
    nvmlReturn_t rc = s->f.nvmlDeviceGetTotalEccErrors(s->gpus[g].dev, type, NVML_VOLATILE_ECC, &count);
    return reading(s, g, rc, (int64_t)count);
}

static void sample_gpu(nvml_state *s, int g, gp_gpu_sample *out)
{
    nvml_gpu *gpu = &s->gpus[g];
    nvmlUtilization_t util = {0};
    nvmlMemory_t mem = {0};
    unsigned power = 0, temp = 0;
    nvmlReturn_t rc;
    memset(out, 0, sizeof *out);
    out->index = g;
    snprintf(out->uuid, sizeof out->uuid, "%s", gpu->uuid);
    rc = s->f.nvmlDeviceGetUtilizationRates ? s->f.nvmlDeviceGetUtilizationRates(gpu->dev, &util)
                                            : NVML_ERROR_NOT_SUPPORTED;
    out->sm_active_pct = (int)reading(s, g, rc, util.gpu);
    rc = s->f.nvmlDeviceGetMemoryInfo(gpu->dev, &mem);
    out->memory_used_mib = reading(s, g, rc, (int64_t)(mem.used / MIB));
    rc = s->f.nvmlDeviceGetPowerUsage ? s->f.nvmlDeviceGetPowerUsage(gpu->dev, &power) : NVML_ERROR_NOT_SUPPORTED;
    out->power_w = (int)reading(s, g, rc, (power + 500) / 1000);
    rc = s->f.nvmlDeviceGetTemperature ? s->f.nvmlDeviceGetTemperature(gpu->dev, NVML_TEMPERATURE_GPU, &temp)
                                       : NVML_ERROR_NOT_SUPPORTED;
    out->temperature_c = (int)reading(s, g, rc, temp);
    out->ecc_corrected = ecc_total(s, g, NVML_MEMORY_ERROR_TYPE_CORRECTED);
    out->ecc_uncorrected = ecc_total(s, g, NVML_MEMORY_ERROR_TYPE_UNCORRECTED);
    out->lost = gpu->lost;
    if (gpu->lost) {
        out->sm_active_pct = out->power_w = out->temperature_c = -1;
        out->memory_used_mib = -1;
    }
}

/* SM % per pid from the samples newer than the last read (-1: none). */
static int sm_of(const nvmlProcessUtilizationSample_t *samples, unsigned n, unsigned pid)
{
    int sm = -1;
    unsigned long long newest = 0;
    for (unsigned i = 0; i < n; i++)
        if (samples[i].pid == pid && samples[i].timeStamp >= newest) {
            newest = samples[i].timeStamp;
            sm = (int)samples[i].smUtil;
        }
    return sm;
}

static unsigned util_samples(nvml_state *s, int g, nvmlProcessUtilizationSample_t *samples)
{
    unsigned n = UTIL_SAMPLES_MAX;
    nvml_gpu *gpu = &s->gpus[g];
    if (!s->f.nvmlDeviceGetProcessUtilization ||
        seen(s, g, s->f.nvmlDeviceGetProcessUtilization(gpu->dev, samples, &n, gpu->util_seen_us)) != NVML_SUCCESS)
        return 0; /* NOT_FOUND: no sample since then */
    for (unsigned i = 0; i < n; i++)
        gpu->util_seen_us = samples[i].timeStamp > gpu->util_seen_us ? samples[i].timeStamp : gpu->util_seen_us;
    return n;
}

static nvmlReturn_t running_processes(nvml_state *s, int g, nvmlProcessInfo_t *procs, unsigned *n)
{
    gp_nvml_fn_nvmlDeviceGetComputeRunningProcesses_v3 list = s->f.nvmlDeviceGetComputeRunningProcesses_v3
                                                                  ? s->f.nvmlDeviceGetComputeRunningProcesses_v3
                                                                  : s->f.nvmlDeviceGetComputeRunningProcesses_v2;
    return list ? seen(s, g, list(s->gpus[g].dev, n, procs)) : NVML_ERROR_NOT_SUPPORTED;
}

static void sample_processes(nvml_state *s, int g, gp_telemetry *t)
{
    nvmlProcessInfo_t procs[GP_GPU_PROCS_MAX];
    nvmlProcessUtilizationSample_t samples[UTIL_SAMPLES_MAX];
    unsigned n = GP_GPU_PROCS_MAX;
    if (running_processes(s, g, procs, &n) != NVML_SUCCESS)
        return;
    unsigned n_samples = util_samples(s, g, samples);
    gp_mig_instance mig[GP_GPU_MIG_MAX];
    int n_mig = 0;
    mig_list(s, g, mig, &n_mig, NULL);
    for (unsigned p = 0; p < n && t->n_processes < GP_GPU_PROCS_MAX; p++) {
        gp_gpu_process *out = &t->processes[t->n_processes++];
        out->pid = (int)procs[p].pid;
        snprintf(out->uuid, sizeof out->uuid, "%s", s->gpus[g].uuid);
        for (int i = 0; procs[p].gpuInstanceId != NOT_ON_MIG && i < n_mig; i++)
            if ((unsigned)mig[i].gi_id == procs[p].gpuInstanceId)
                snprintf(out->uuid, sizeof out->uuid, "%s", mig[i].uuid);
        out->memory_used_mib = procs[p].usedGpuMemory == (unsigned long long)NVML_VALUE_NOT_AVAILABLE
                                   ? -1
                                   : (int64_t)(procs[p].usedGpuMemory / MIB);
        out->sm_active_pct = sm_of(samples, n_samples, procs[p].pid);
    }
}

static gp_err nvml_telemetry(void *state, int64_t now_ms, gp_telemetry *out, gp_error *err)
{
    (void)err;
    nvml_state *s = state;
    memset(out, 0, sizeof *out);
    out->at_ms = now_ms;
    out->n_gpus = s->count;
    for (int g = 0; g < s->count; g++) {
        sample_gpu(s, g, &out->gpus[g]);
        if (!s->gpus[g].lost)
            sample_processes(s, g, out);
    }
    return GP_OK;
}

/* ---- events ---- */

static int gpu_of_device(const nvml_state *s, nvmlDevice_t dev)
{
    for (int g = 0; g < s->count; g++)
        if (s->gpus[g].dev == dev)
            return g;
    return -1;
}

static void event_of(const nvml_state *s, const nvmlEventData_t *data, int g, int64_t now_ms, gp_gpu_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->gpu = g;
    snprintf(ev->uuid, sizeof ev->uuid, "%s", s->gpus[g].uuid);
    ev->at_ms = now_ms;
    if (data->eventType == (unsigned long long)nvmlEventTypeXidCriticalError) {
        ev->kind = GP_GPU_EVENT_XID;
        ev->xid = (int)data->eventData;
    } else {
        ev->kind = GP_GPU_EVENT_ECC;
        ev->ecc_corrected = data->eventType == (unsigned long long)nvmlEventTypeSingleBitEccError;
        ev->ecc_uncorrected = !ev->ecc_corrected;
    }
}

/* One LOST event per GPU that a call found lost and was not told yet;
 * every GPU is asked (its memory) so that a lost one is found. */
static void lost_events(nvml_state *s, int64_t now_ms, gp_gpu_event *out, size_t cap, size_t *n)
{
    nvmlMemory_t mem;
    for (int g = 0; g < s->count && *n < cap; g++) {
        if (!s->gpus[g].lost)
            seen(s, g, s->f.nvmlDeviceGetMemoryInfo(s->gpus[g].dev, &mem));
        if (!s->gpus[g].lost || s->gpus[g].lost_told)
            continue;
        s->gpus[g].lost_told = true;
        out[(*n)++] = (gp_gpu_event){.kind = GP_GPU_EVENT_LOST, .gpu = g, .at_ms = now_ms};
        snprintf(out[*n - 1].uuid, sizeof out[*n - 1].uuid, "%s", s->gpus[g].uuid);
    }
}

static gp_err nvml_poll_events(void *state, int64_t now_ms, int timeout_ms, gp_gpu_event *out, size_t cap, size_t *n,
                               gp_error *err)
{
    nvml_state *s = state;
    *n = 0;
    lost_events(s, now_ms, out, cap, n);
    while (s->events && *n < cap) {
        nvmlEventData_t data;
        memset(&data, 0, sizeof data);
        unsigned wait = *n == 0 && timeout_ms > 0 ? (unsigned)timeout_ms : 0;
        nvmlReturn_t rc = s->f.nvmlEventSetWait_v2(s->events, &data, wait);
        if (rc == NVML_ERROR_TIMEOUT)
            break;
        int g = rc == NVML_SUCCESS || rc == NVML_ERROR_GPU_IS_LOST ? gpu_of_device(s, data.device) : -1;
        if (rc == NVML_ERROR_GPU_IS_LOST && g >= 0) {
            s->gpus[g].lost = true;
            lost_events(s, now_ms, out, cap, n);
            continue;
        }
        if (rc != NVML_SUCCESS)
            return nvml_fail(s, rc, "events", "nvmlEventSetWait_v2", err);
        if (g >= 0)
            event_of(s, &data, g, now_ms, &out[(*n)++]);
    }
    return GP_OK;
}

/* ---- health ---- */

static void read_health(nvml_state *s, int g, gp_gpu_health *out)
{
    nvmlDevice_t dev = s->gpus[g].dev;
    unsigned corr = 0, unc = 0, pending = 0, failed = 0;
    nvmlEnableState_t retired = NVML_FEATURE_DISABLED;
    nvmlFieldValue_t field = {.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION};
    nvmlMemory_t mem;
    nvmlReturn_t rc;
    if (!s->gpus[g].lost)
        seen(s, g, s->f.nvmlDeviceGetMemoryInfo(dev, &mem));
    out->ecc_uncorrected = ecc_total(s, g, NVML_MEMORY_ERROR_TYPE_UNCORRECTED);
    rc = s->f.nvmlDeviceGetRemappedRows ? s->f.nvmlDeviceGetRemappedRows(dev, &corr, &unc, &pending, &failed)
                                        : NVML_ERROR_NOT_SUPPORTED;
    out->remap_pending = (int)reading(s, g, rc, pending != 0);
    out->remap_failed = (int)reading(s, g, rc, failed != 0);
    rc = s->f.nvmlDeviceGetRetiredPagesPendingStatus ? s->f.nvmlDeviceGetRetiredPagesPendingStatus(dev, &retired)
                                                     : NVML_ERROR_NOT_SUPPORTED;
    out->retired_pages_pending = (int)reading(s, g, rc, retired == NVML_FEATURE_ENABLED);
    rc = s->f.nvmlDeviceGetFieldValues ? s->f.nvmlDeviceGetFieldValues(dev, 1, &field) : NVML_ERROR_NOT_SUPPORTED;
    out->recovery_action = (int)reading(s, g, rc == NVML_SUCCESS ? field.nvmlReturn : rc, field.value.uiVal);
}

static const char *recovery_name(int action)
{
    switch (action) {
    case NVML_GPU_RECOVERY_ACTION_GPU_RESET: return "reset";
    case NVML_GPU_RECOVERY_ACTION_NODE_REBOOT: return "reboot the node";
    case NVML_GPU_RECOVERY_ACTION_DRAIN_P2P: return "drain peer-to-peer traffic";
    case NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET: return "drain and reset";
    default: return "unknown";
    }
}

/* The first reason the readings give, most severe first. */
static void health_reason(bool lost, gp_gpu_health *h)
{
    if (lost)
        snprintf(h->reason, sizeof h->reason, "fell off the bus");
    else if (h->recovery_action > 0)
        snprintf(h->reason, sizeof h->reason, "recovery action: %s", recovery_name(h->recovery_action));
    else if (h->remap_failed > 0)
        snprintf(h->reason, sizeof h->reason, "row remapping failed");
    else if (h->remap_pending > 0)
        snprintf(h->reason, sizeof h->reason, "row remapping pending (a reset applies it)");
    else if (h->ecc_uncorrected > 0)
        snprintf(h->reason, sizeof h->reason, "%lld uncorrected ECC errors (volatile)", (long long)h->ecc_uncorrected);
    else if (h->retired_pages_pending > 0)
        snprintf(h->reason, sizeof h->reason, "page retirement pending (a reset applies it)");
    h->healthy = h->reason[0] == '\0';
}

static gp_err nvml_health(void *state, int gpu, int64_t now_ms, gp_gpu_health *out, gp_error *err)
{
    (void)now_ms;
    nvml_state *s = state;
    gp_err rc = check_gpu(s, gpu, err);
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    out->gpu = gpu;
    read_health(s, gpu, out);
    health_reason(s->gpus[gpu].lost, out);
    return GP_OK;
}

/* ---- MIG create and destroy ---- */

static gp_err mig_unknown_profile(const mig_profile *profiles, int n, const char *profile, gp_error *err)
{
    char names[128] = "";
    for (int p = 0; p < n; p++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", p ? ", " : "", profiles[p].name);
    return gp_error_set(err, GP_ERR_INVALID, "profile", "the GPU has no MIG profile %s (it has %s)",
                        profile ? profile : "(none)", names);
}

static gp_err mig_check(nvml_state *s, int gpu, gp_error *err)
{
    gp_err rc = check_gpu(s, gpu, err);
    if (rc == GP_OK && s->gpus[gpu].lost)
        rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "GPU %d is lost", gpu);
    if (rc == GP_OK && (!mig_enabled(s, gpu) || !mig_functions(s) || !s->f.nvmlDeviceCreateGpuInstanceWithPlacement))
        rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "GPU %d is not in MIG mode", gpu);
    return rc;
}

/* A compute instance over all of the GPU instance (the CI profile with
 * as many slices as the GI's). */
static nvmlReturn_t mig_compute_instance(nvml_state *s, nvmlGpuInstance_t gi, unsigned slices)
{
    nvmlComputeInstanceProfileInfo_t ci_info;
    nvmlComputeInstance_t ci;
    if (!s->f.nvmlGpuInstanceGetComputeInstanceProfileInfo || !s->f.nvmlGpuInstanceCreateComputeInstance)
        return NVML_ERROR_NOT_SUPPORTED;
    for (unsigned index = NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE; index <= NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE; index++)
        if (s->f.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
                                                              &ci_info) == NVML_SUCCESS &&
            ci_info.sliceCount == slices)
            return s->f.nvmlGpuInstanceCreateComputeInstance(gi, ci_info.id, &ci);
    return NVML_ERROR_NOT_SUPPORTED;
}

/* Creates the GPU instance at the first of the placements that is free. */
static gp_err mig_place(nvml_state *s, int g, const mig_profile *p, int start, nvmlGpuInstance_t *gi, gp_error *err)
{
    nvmlGpuInstancePlacement_t placements[PLACEMENTS_MAX];
    unsigned n = PLACEMENTS_MAX;
    nvmlReturn_t rc = s->f.nvmlDeviceGetGpuInstancePossiblePlacements_v2
                          ? seen(s, g, s->f.nvmlDeviceGetGpuInstancePossiblePlacements_v2(s->gpus[g].dev, p->info.id,
                                                                                          placements, &n))
                          : NVML_ERROR_NOT_SUPPORTED;
    if (rc != NVML_SUCCESS)
        return nvml_fail(s, rc, "profile", "nvmlDeviceGetGpuInstancePossiblePlacements_v2", err);
    bool allowed = start < 0;
    for (unsigned i = 0; i < n; i++) {
        if (start >= 0 && placements[i].start != (unsigned)start)
            continue;
        allowed = true;
        rc = seen(s, g, s->f.nvmlDeviceCreateGpuInstanceWithPlacement(s->gpus[g].dev, p->info.id, &placements[i], gi));
        if (rc != NVML_ERROR_INSUFFICIENT_RESOURCES)
            break;
    }
    if (!allowed)
        return gp_error_set(err, GP_ERR_INVALID, "start", "%s cannot start at slice %d", p->name, start);
    if (rc == NVML_ERROR_INSUFFICIENT_RESOURCES || (rc == NVML_SUCCESS && n == 0))
        return start < 0 ? gp_error_set(err, GP_ERR_CONFLICT, "start", "no free placement for %s", p->name)
                         : gp_error_set(err, GP_ERR_CONFLICT, "start", "%s at slice %d overlaps an instance", p->name,
                                        start);
    return rc == NVML_SUCCESS ? GP_OK : nvml_fail(s, rc, "gpu", "nvmlDeviceCreateGpuInstanceWithPlacement", err);
}

static gp_err nvml_mig_create(void *state, int gpu, const char *profile, int start, gp_mig_instance *out,
                              gp_error *err)
{
    nvml_state *s = state;
    gp_err rc = mig_check(s, gpu, err);
    if (rc)
        return rc;
    mig_profile profiles[PROFILES_MAX];
    int n_profiles = mig_profiles(s, gpu, profiles), p = 0;
    while (p < n_profiles && (!profile || strcmp(profiles[p].name, profile) != 0))
        p++;
    if (p == n_profiles)
        return mig_unknown_profile(profiles, n_profiles, profile, err);
    nvmlGpuInstance_t gi;
    nvmlGpuInstanceInfo_t info;
    if ((rc = mig_place(s, gpu, &profiles[p], start, &gi, err)))
        return rc;
    nvmlReturn_t nrc = seen(s, gpu, mig_compute_instance(s, gi, profiles[p].info.sliceCount));
    if (nrc == NVML_SUCCESS)
        nrc = seen(s, gpu, s->f.nvmlGpuInstanceGetInfo(gi, &info));
    if (nrc != NVML_SUCCESS) {
        if (s->f.nvmlGpuInstanceDestroy)
            s->f.nvmlGpuInstanceDestroy(gi);
        return nvml_fail(s, nrc, "profile", "creating the compute instance", err);
    }
    gp_mig_instance list[GP_GPU_MIG_MAX];
    int n = 0;
    if ((rc = mig_list(s, gpu, list, &n, err)))
        return rc;
    for (int i = 0; i < n; i++)
        if ((unsigned)list[i].gi_id == info.id) {
            *out = list[i];
            return GP_OK;
        }
    return gp_error_set(err, GP_ERR_NOT_FOUND, "uuid", "GPU %d: the new GPU instance %u has no MIG device", gpu, info.id);
}

static gp_err nvml_mig_destroy(void *state, const char *uuid, gp_error *err)
{
    nvml_state *s = state;
    int g = 0;
    bool is_mig = false;
    gp_mig_instance mi;
    gp_err rc = find_uuid(s, uuid, &g, &mi, &is_mig, err);
    if (rc == GP_OK && !is_mig)
        rc = gp_error_set(err, GP_ERR_NOT_FOUND, "uuid", "%s is a GPU, not a MIG instance", uuid);
    if (rc)
        return rc;
    nvmlGpuInstance_t gi;
    nvmlComputeInstance_t ci;
    nvmlReturn_t nrc = !s->f.nvmlGpuInstanceGetComputeInstanceById || !s->f.nvmlComputeInstanceDestroy ||
                               !s->f.nvmlGpuInstanceDestroy
                           ? NVML_ERROR_NOT_SUPPORTED
                           : seen(s, g, s->f.nvmlDeviceGetGpuInstanceById(s->gpus[g].dev, (unsigned)mi.gi_id, &gi));
    if (nrc == NVML_SUCCESS)
        nrc = seen(s, g, s->f.nvmlGpuInstanceGetComputeInstanceById(gi, (unsigned)mi.ci_id, &ci));
    if (nrc == NVML_SUCCESS)
        nrc = seen(s, g, s->f.nvmlComputeInstanceDestroy(ci));
    if (nrc == NVML_SUCCESS)
        nrc = seen(s, g, s->f.nvmlGpuInstanceDestroy(gi));
    if (nrc == NVML_ERROR_IN_USE)
        return gp_error_set(err, GP_ERR_CONFLICT, "uuid", "MIG instance %s is in use", uuid);
    return nrc == NVML_SUCCESS ? GP_OK : nvml_fail(s, nrc, "uuid", "destroying the MIG instance", err);
}

/* ---- device nodes ---- */

/* The minor of a MIG access file: "DeviceFileMinor: M" in
 * PROC/driver/nvidia/capabilities/gpuMINOR/mig/giG[/ciC]/access. */
static gp_err cap_minor(const nvml_state *s, const char *rel, unsigned *minor, gp_error *err)
{
    char path[GP_GPU_PATH_MAX + 96], line[128];
    snprintf(path, sizeof path, "%s/driver/nvidia/capabilities/%s/access", s->proc_dir, rel);
    FILE *f = fopen(path, "r");
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = sscanf(line, "DeviceFileMinor: %u", minor) == 1;
    if (f)
        fclose(f);
    return found ? GP_OK
                 : gp_error_set(err, GP_ERR_NOT_FOUND, "proc_dir", "%s: no DeviceFileMinor (is the MIG instance there?)",
                                path);
}

static gp_err add_cap(const nvml_state *s, const char *rel, gp_device_node *out, size_t cap, size_t *n, gp_error *err)
{
    unsigned minor = 0;
    char name[64];
    gp_err rc = cap_minor(s, rel, &minor, err);
    snprintf(name, sizeof name, "nvidia-caps/nvidia-cap%u", minor);
    return rc ? rc : gp_gpu_add_device_node(s->device_dir, name, out, cap, n, err);
}

static gp_err add_devices_of(nvml_state *s, const char *uuid, gp_device_node *out, size_t cap, size_t *n,
                             gp_error *err)
{
    int g = 0;
    bool is_mig = false;
    gp_mig_instance mi;
    char name[96];
    gp_err rc = find_uuid(s, uuid, &g, &mi, &is_mig, err);
    if (rc)
        return rc;
    snprintf(name, sizeof name, "nvidia%d", s->gpus[g].minor);
    rc = gp_gpu_add_device_node(s->device_dir, name, out, cap, n, err);
    if (rc || !is_mig)
        return rc;
    snprintf(name, sizeof name, "gpu%d/mig/gi%d", s->gpus[g].minor, mi.gi_id);
    if ((rc = add_cap(s, name, out, cap, n, err)))
        return rc;
    snprintf(name, sizeof name, "gpu%d/mig/gi%d/ci%d", s->gpus[g].minor, mi.gi_id, mi.ci_id);
    return add_cap(s, name, out, cap, n, err);
}

static gp_err nvml_device_nodes(void *state, const char *const *uuids, size_t n_uuids, gp_device_node *out,
                                size_t cap, size_t *n, gp_error *err)
{
    nvml_state *s = state;
    gp_err rc = GP_OK;
    *n = 0;
    for (size_t u = 0; rc == GP_OK && u < n_uuids; u++)
        rc = add_devices_of(s, uuids[u], out, cap, n, err);
    if (rc == GP_OK && n_uuids > 0)
        rc = gp_gpu_add_device_node(s->device_dir, "nvidiactl", out, cap, n, err);
    if (rc == GP_OK && n_uuids > 0)
        rc = gp_gpu_add_device_node(s->device_dir, "nvidia-uvm", out, cap, n, err);
    char tools[GP_GPU_PATH_MAX + 32];
    snprintf(tools, sizeof tools, "%s/nvidia-uvm-tools", s->device_dir);
    if (rc == GP_OK && n_uuids > 0 && access(tools, F_OK) == 0)
        rc = gp_gpu_add_device_node(s->device_dir, "nvidia-uvm-tools", out, cap, n, err);
    return rc;
}

/* NVML sees the processes itself: the launcher's word is not needed. */
static gp_err nvml_set_busy(void *state, const char *uuid, int pid, bool busy, int64_t now_ms, gp_error *err)
{
    (void)state, (void)uuid, (void)pid, (void)busy, (void)now_ms, (void)err;
    return GP_OK;
}

const gp_gpu_ops gp_gpu_nvml_ops = {
    .name = "nvml",
    .open = nvml_open,
    .close = nvml_close,
    .inventory = nvml_inventory,
    .telemetry = nvml_telemetry,
    .poll_events = nvml_poll_events,
    .mig_create = nvml_mig_create,
    .mig_destroy = nvml_mig_destroy,
    .device_nodes = nvml_device_nodes,
    .set_busy = nvml_set_busy,
    .health = nvml_health,
};

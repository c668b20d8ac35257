/* nvml_api.h - the part of NVIDIA's NVML that the nvml backend uses,
 * declared here so that gpupool builds without the driver or its headers.
 *
 * Source: NVIDIA's nvml.h (NVML API reference, R535-R580 headers, as
 * shipped with CUDA 12 and 13 and mirrored in NVIDIA/go-nvml gen/nvml/nvml.h).
 * Every type, constant and signature below is copied in meaning, not
 * invented: the names, the values, the field order and the versioned
 * function names (_v2, _v3) are NVIDIA's.  Only what gpu_nvml.c calls is
 * here.  The library is opened with dlopen at run time (gpu_nvml.c); each
 * function is reached through the pointer type named after it
 * (gp_nvml_fn_<function>).  The test stub (tests/agent/nvml_stub.c)
 * implements the same declarations.
 *
 * Conventions NVML keeps and the backend relies on:
 *   - every call returns an nvmlReturn_t; NVML_SUCCESS is 0;
 *   - a device handle of a MIG device (nvmlDeviceGetMigDeviceHandleByIndex)
 *     answers UUID, memory and instance-id calls like a GPU's;
 *   - NVML_VALUE_NOT_AVAILABLE in a process's usedGpuMemory: unknown;
 *   - gpuInstanceId in a process entry: 0xFFFFFFFF when not on a MIG
 *     instance.
 */
#ifndef GP_AGENT_NVML_API_H
#define GP_AGENT_NVML_API_H

/* ---- return codes (nvmlReturn_t) ---- */

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_ENABLED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/* ---- handles ---- */

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

/* ---- buffer sizes and limits ---- */

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_VALUE_NOT_AVAILABLE (-1)

/* ---- structs ---- */

typedef enum nvmlEnableState_enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 } nvmlEnableState_t;

typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:18:00.0" */
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
    unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu;    /* % of the sample period a kernel ran */
    unsigned int memory; /* % of it memory was read or written */
} nvmlUtilization_t;

/* nvmlProcessInfo_t (= nvmlProcessInfo_v2_t), as _v2 and _v3 of
 * nvmlDeviceGetComputeRunningProcesses fill it. */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes, or NVML_VALUE_NOT_AVAILABLE */
    unsigned int gpuInstanceId;       /* 0xFFFFFFFF: not on a MIG instance */
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU timestamp, microseconds */
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

typedef enum nvmlTemperatureSensors_enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;

typedef enum nvmlMemoryErrorType_enum {
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 } nvmlEccCounterType_t;

/* Field values (nvmlDeviceGetFieldValues). */
typedef enum nvmlValueType_enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5
} nvmlValueType_t;

typedef union nvmlValue_st {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    nvmlValueType_t valueType;
    nvmlReturn_t nvmlReturn; /* this field's own answer */
    nvmlValue_t value;
} nvmlFieldValue_t;

/* The driver's recommended recovery (R550+); older drivers answer
 * NOT_SUPPORTED in the field's nvmlReturn. */
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230
typedef enum nvmlDeviceGpuRecoveryAction_s {
    NVML_GPU_RECOVERY_ACTION_NONE = 0,
    NVML_GPU_RECOVERY_ACTION_GPU_RESET = 1,
    NVML_GPU_RECOVERY_ACTION_NODE_REBOOT = 2,
    NVML_GPU_RECOVERY_ACTION_DRAIN_P2P = 3,
    NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET = 4
} nvmlDeviceGpuRecoveryAction_t;

/* ---- events ---- */

#define nvmlEventTypeSingleBitEccError 0x0000000000000001LL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002LL
#define nvmlEventTypeXidCriticalError 0x0000000000000008LL

typedef struct nvmlEventData_st {
    nvmlDevice_t device;          /* the GPU (or MIG device) it happened on */
    unsigned long long eventType; /* one nvmlEventType* bit */
    unsigned long long eventData; /* the XID for nvmlEventTypeXidCriticalError (999: unknown XID) */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

/* ---- MIG ---- */

#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

/* GPU instance profile indices (nvmlDeviceGetGpuInstanceProfileInfo's
 * `profile`): 1_SLICE_REV1 and 2_SLICE_REV1 are the "+me" (media
 * extensions) variants, 1_SLICE_REV2 the 1g profile with two memory slices
 * ("1g.20gb" on an H100-80GB). */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9

/* Compute instance profile indices; the shared engine profile. */
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0

typedef struct nvmlGpuInstancePlacement_st {
    unsigned int start; /* first memory slice */
    unsigned int size;  /* memory slices */
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount; /* compute slices: the "3" of "3g.40gb" */
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceInfo_st {
    nvmlDevice_t device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct nvmlComputeInstanceProfileInfo_st {
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

/* ---- the functions, as pointer types (gp_nvml_fn_<name>) ---- */

typedef nvmlReturn_t (*gp_nvml_fn_nvmlInit_v2)(void);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlShutdown)(void);
typedef const char *(*gp_nvml_fn_nvmlErrorString)(nvmlReturn_t result);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlSystemGetDriverVersion)(char *version, unsigned int length);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetCount_v2)(unsigned int *deviceCount);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetHandleByIndex_v2)(unsigned int index, nvmlDevice_t *device);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetUUID)(nvmlDevice_t device, char *uuid, unsigned int length);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetName)(nvmlDevice_t device, char *name, unsigned int length);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetPciInfo_v3)(nvmlDevice_t device, nvmlPciInfo_t *pci);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetMinorNumber)(nvmlDevice_t device, unsigned int *minorNumber);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetCpuAffinity)(nvmlDevice_t device, unsigned int cpuSetSize,
                                                           unsigned long *cpuSet);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetMemoryInfo)(nvmlDevice_t device, nvmlMemory_t *memory);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetNvLinkState)(nvmlDevice_t device, unsigned int link,
                                                            nvmlEnableState_t *isActive);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetNvLinkRemotePciInfo_v2)(nvmlDevice_t device, unsigned int link,
                                                                       nvmlPciInfo_t *pci);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetUtilizationRates)(nvmlDevice_t device, nvmlUtilization_t *utilization);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetPowerUsage)(nvmlDevice_t device, unsigned int *power); /* mW */
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetTemperature)(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                            unsigned int *temp);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetTotalEccErrors)(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                               nvmlEccCounterType_t counterType,
                                                               unsigned long long *eccCounts);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetComputeRunningProcesses_v3)(nvmlDevice_t device, unsigned int *infoCount,
                                                                           nvmlProcessInfo_t *infos);
typedef gp_nvml_fn_nvmlDeviceGetComputeRunningProcesses_v3 gp_nvml_fn_nvmlDeviceGetComputeRunningProcesses_v2;
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetProcessUtilization)(nvmlDevice_t device,
                                                                   nvmlProcessUtilizationSample_t *utilization,
                                                                   unsigned int *processSamplesCount,
                                                                   unsigned long long lastSeenTimeStamp);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetRemappedRows)(nvmlDevice_t device, unsigned int *corrRows,
                                                             unsigned int *uncRows, unsigned int *isPending,
                                                             unsigned int *failureOccurred);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetRetiredPagesPendingStatus)(nvmlDevice_t device,
                                                                          nvmlEnableState_t *isPending);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetFieldValues)(nvmlDevice_t device, int valuesCount,
                                                            nvmlFieldValue_t *values);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlEventSetCreate)(nvmlEventSet_t *set);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlEventSetFree)(nvmlEventSet_t set);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetSupportedEventTypes)(nvmlDevice_t device,
                                                                    unsigned long long *eventTypes);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceRegisterEvents)(nvmlDevice_t device, unsigned long long eventTypes,
                                                            nvmlEventSet_t set);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlEventSetWait_v2)(nvmlEventSet_t set, nvmlEventData_t *data,
                                                       unsigned int timeoutms);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetMigMode)(nvmlDevice_t device, unsigned int *currentMode,
                                                        unsigned int *pendingMode);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetMaxMigDeviceCount)(nvmlDevice_t device, unsigned int *count);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetMigDeviceHandleByIndex)(nvmlDevice_t device, unsigned int index,
                                                                       nvmlDevice_t *migDevice);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetGpuInstanceId)(nvmlDevice_t device, unsigned int *id);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetComputeInstanceId)(nvmlDevice_t device, unsigned int *id);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetGpuInstanceById)(nvmlDevice_t device, unsigned int id,
                                                                nvmlGpuInstance_t *gpuInstance);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlGpuInstanceGetInfo)(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetGpuInstanceProfileInfo)(nvmlDevice_t device, unsigned int profile,
                                                                       nvmlGpuInstanceProfileInfo_t *info);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceGetGpuInstancePossiblePlacements_v2)(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements, unsigned int *count);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlDeviceCreateGpuInstanceWithPlacement)(
    nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,
    nvmlGpuInstance_t *gpuInstance);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlGpuInstanceGetComputeInstanceProfileInfo)(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_t *info);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlGpuInstanceCreateComputeInstance)(nvmlGpuInstance_t gpuInstance,
                                                                        unsigned int profileId,
                                                                        nvmlComputeInstance_t *computeInstance);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlGpuInstanceGetComputeInstanceById)(nvmlGpuInstance_t gpuInstance,
                                                                         unsigned int id,
                                                                         nvmlComputeInstance_t *computeInstance);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlComputeInstanceDestroy)(nvmlComputeInstance_t computeInstance);
typedef nvmlReturn_t (*gp_nvml_fn_nvmlGpuInstanceDestroy)(nvmlGpuInstance_t gpuInstance);

#endif

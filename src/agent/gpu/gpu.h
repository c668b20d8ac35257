/* gpu.h - the agent's one GPU interface: inventory, telemetry, health
 * events, MIG instances and the device nodes a replica may open.
 *
 * The agent never talks to a GPU library directly.  It opens a backend for
 * one node and calls the functions below; each backend lives in its own
 * file behind the vtable gp_gpu_ops, as libuv keeps its platforms apart:
 *
 *   gpu_sim.c   "sim": GPUs described by a node file, simulated telemetry,
 *               faults injected through a fault file (docs/agent.md)
 *   gpu_nvml.c  "nvml": the real driver through NVML, loaded with dlopen
 *               (nvml_api.h declares the part used; docs/agent.md)
 *
 * Nothing above this header knows which backend runs.  What the backend
 * cannot know it leaves at its "unknown" value (-1 for numbers, "" for
 * strings), never at an invented one.
 *
 * Example (sim, a node file with one 8 x H100 node in MIG mode):
 *
 *   gp_gpu g;
 *   gp_gpu_options o = {.node_file = "nodes.yaml", .node = "h100-a", .seed = 7};
 *   gp_gpu_open("sim", &o, &g, &err);
 *   gp_gpu_inventory(&g, &inv, &err);         // 8 GPUs, UUIDs GPU-..., no instances yet
 *   gp_gpu_mig_create(&g, 3, "3g.40gb", 4, &mi, &err);   // mi.uuid "MIG-...", slices 4-7
 *   gp_gpu_set_busy(&g, mi.uuid, 4242, true, now_ms, &err); // the launcher started pid 4242
 *   gp_gpu_telemetry(&g, now_ms + 5000, &t, &err);        // GPU 3's SM activity has risen
 *   gp_gpu_device_nodes(&g, (const char *[]){mi.uuid}, 1, dev, 16, &n, &err);
 *       // DIR/nvidia3, DIR/nvidiactl, DIR/nvidia-uvm, the instance's two nvidia-caps files
 *   gp_gpu_poll_events(&g, now_ms, 0, ev, 16, &n, &err);   // an injected XID 79 on GPU 2
 *   gp_gpu_check(&g, 2, now_ms, &h, &err);                 // h.healthy, else h.reason says why
 *   gp_gpu_close(&g);
 *
 * Time is an argument (now_ms: milliseconds on the agent's clock, any
 * epoch, never decreasing); the backends read no clock and keep no hidden
 * randomness, so the sim's answers follow from its seed and the calls made.
 *
 * Errors are gp_error values naming the field the caller gave ("gpu",
 * "profile", "start", "uuid") or the file that is wrong ("node_file",
 * "fault_file", "device_dir", or a node-file field such as "nodes[0].gpus").
 *
 * Ownership: gp_gpu_open allocates the backend state; gp_gpu_close frees
 * it (a closed or never-opened gp_gpu may be closed again).  Every result
 * is written into caller-owned structs and arrays of fixed size; nothing
 * returned points into the backend.  The strings of gp_gpu_options are read
 * during open only.  A gp_gpu is used by one thread at a time.
 */
#ifndef GP_AGENT_GPU_H
#define GP_AGENT_GPU_H

#include "core/types.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_GPU_PATH_MAX 256     /* a device path */
#define GP_GPU_PROFILE_MAX 16   /* "7g.141gb" */
#define GP_GPU_MIG_MAX 7        /* instances on one GPU */
#define GP_GPU_PROCS_MAX 64     /* processes one telemetry sample lists */
#define GP_GPU_CPULIST_MAX 128  /* a GPU's CPU affinity as a CPU list */
#define GP_GPU_DEVICES_MAX (2 * GP_MAX_GPUS_PER_NODE * GP_GPU_MIG_MAX + 8) /* device nodes one call returns */

/* One MIG instance (a GPU instance with one compute instance over all of
 * it, which is how gpupool uses MIG). */
typedef struct gp_mig_instance {
    char uuid[GP_UUID_MAX];              /* "MIG-..." */
    char profile[GP_GPU_PROFILE_MAX];    /* "3g.40gb" */
    int start;                           /* first memory slice, 0..7 */
    int size;                            /* memory slices, 1..8 */
    int gi_id, ci_id;                    /* the driver's GPU and compute instance ids */
    int64_t memory_mib;
} gp_mig_instance;

/* One GPU of the node. */
typedef struct gp_node_gpu {
    int index;                           /* 0..count-1, the driver's order */
    char uuid[GP_UUID_MAX];              /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    int64_t memory_mib;
    int minor;                           /* char minor of its device node: /dev/nvidiaMINOR */
    char device_path[GP_GPU_PATH_MAX];   /* "" when the backend has no device node for it */
    char pci_bus_id[32];                 /* "00000000:18:00.0" */
    char cpu_affinity[GP_GPU_CPULIST_MAX]; /* the CPUs near it, as a CPU list "0-47,96-143"; "" unknown */
    int nvlink_domain;                   /* 0..nvlink_domains-1: GPUs of one domain are NVLinked */
    char block[GP_NAME_MAX];             /* fabric block (InfiniBand leaf / NVLink fabric clique) */
    gp_sharing sharing;                  /* exclusive | mig | mps | timeslice */
    int n_mig;
    gp_mig_instance mig[GP_GPU_MIG_MAX]; /* ordered by start */
} gp_node_gpu;

/* What the node has: the registration call sends this (gpu_json.h). */
typedef struct gp_node_inventory {
    char backend[16];                    /* "sim", "nvml" */
    char driver_version[32];             /* "" unknown; the sim says "sim" */
    char name[GP_NAME_MAX];
    char model[GP_NAME_MAX];             /* GPU type as the fleet spells it: "H100" */
    char zone[GP_NAME_MAX], block[GP_NAME_MAX], pool[GP_NAME_MAX];
    int nvlink_domains;
    int64_t cpu_millis, mem_mib;         /* allocatable to jobs */
    int gpu_count;
    gp_node_gpu gpus[GP_MAX_GPUS_PER_NODE];
} gp_node_inventory;

/* One GPU in one telemetry sample; -1 where the backend cannot tell. */
typedef struct gp_gpu_sample {
    int index;
    char uuid[GP_UUID_MAX];
    bool lost;                           /* fell off the bus: no other value is read */
    int sm_active_pct;                   /* 0..100 */
    int64_t memory_used_mib;
    int power_w;
    int temperature_c;
    int64_t ecc_corrected, ecc_uncorrected; /* totals since the backend opened its state (nvml: the driver's
                                               volatile counts, since its last load or reset) */
} gp_gpu_sample;

/* A process using a GPU or a MIG instance. */
typedef struct gp_gpu_process {
    int pid;
    char uuid[GP_UUID_MAX];              /* the GPU's or the MIG instance's */
    int64_t memory_used_mib;
    int sm_active_pct;                   /* -1 when unknown (e.g. MPS clients under NVML) */
} gp_gpu_process;

typedef struct gp_telemetry {
    int64_t at_ms;
    int n_gpus;
    gp_gpu_sample gpus[GP_MAX_GPUS_PER_NODE];
    int n_processes;
    gp_gpu_process processes[GP_GPU_PROCS_MAX];
} gp_telemetry;

typedef enum gp_gpu_event_kind {
    GP_GPU_EVENT_XID = 0,                /* a driver XID (e.g. 79: fell off the bus, 48: double-bit ECC) */
    GP_GPU_EVENT_ECC,                    /* ECC errors counted */
    GP_GPU_EVENT_LOST,                   /* the GPU is gone */
    GP_GPU_EVENT_RESET                   /* the GPU was reset (sim: a repair): back on the bus, volatile
                                            ECC counts cleared */
} gp_gpu_event_kind;

typedef struct gp_gpu_event {
    gp_gpu_event_kind kind;
    int gpu;                             /* index */
    char uuid[GP_UUID_MAX];              /* the GPU's */
    int xid;                             /* XID: the code */
    int64_t ecc_corrected, ecc_uncorrected; /* ECC: errors added by this event */
    int64_t at_ms;                       /* now_ms of the poll that saw it */
} gp_gpu_event;

/* One GPU's health as the backend reads it now: a check, not an event.
 * The counters are -1 where the backend cannot tell (the sim knows only
 * ECC and lost; NVML may answer NOT_SUPPORTED for some). */
typedef struct gp_gpu_health {
    int gpu;                             /* index */
    bool healthy;
    char reason[160];                    /* "" when healthy, else why not: "2 uncorrected ECC errors (volatile)",
                                            "row remapping failed", "fell off the bus", "recovery action: reset" */
    int64_t ecc_uncorrected;             /* volatile uncorrected ECC errors */
    int remap_pending, remap_failed;     /* row remapping: 1 = yes, 0 = no */
    int retired_pages_pending;           /* page retirement pending: 1 = yes, 0 = no */
    int recovery_action;                 /* NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: 0 none, 1 reset, 2 reboot,
                                            3 drain P2P, 4 drain and reset */
} gp_gpu_health;

/* A device node a replica needs. */
typedef struct gp_device_node {
    char path[GP_GPU_PATH_MAX];
    bool is_char;                        /* a character device; false: a stand-in plain file (tests) */
    unsigned major, minor;               /* of the char device (0 for a stand-in file) */
} gp_device_node;

typedef struct gp_gpu_options {
    const char *node;                    /* sim: which node of the file (NULL: the file must list one);
                                            nvml: the node's name (NULL: the host name) */
    const char *node_file;               /* sim: required */
    const char *fault_file;              /* sim: NULL = NODE_FILE.faults */
    uint64_t seed;                       /* sim: telemetry seed */
    const char *nvml_library;            /* nvml: NULL = $GPUPOOL_NVML_LIBRARY, else libnvidia-ml.so.1 */
    const char *device_dir;              /* nvml: where the device nodes are (NULL: /dev) */
    const char *proc_dir;                /* nvml: the proc root (NULL: /proc), for the MIG access files */
    const char *zone, *block, *pool;     /* nvml: the node's place in the fleet (NULL: "default") */
    gp_sharing sharing;                  /* nvml: the mode of GPUs not in MIG mode (exclusive, mps, timeslice);
                                            a GPU in MIG mode is always mig */
} gp_gpu_options;

/* A backend: every function gets the state its open made. */
typedef struct gp_gpu_ops {
    const char *name;
    gp_err (*open)(const gp_gpu_options *opt, void **state, gp_error *err);
    void (*close)(void *state);
    gp_err (*inventory)(void *state, gp_node_inventory *out, gp_error *err);
    gp_err (*telemetry)(void *state, int64_t now_ms, gp_telemetry *out, gp_error *err);
    gp_err (*poll_events)(void *state, int64_t now_ms, int timeout_ms, gp_gpu_event *out, size_t cap, size_t *n,
                          gp_error *err);
    gp_err (*mig_create)(void *state, int gpu, const char *profile, int start, gp_mig_instance *out,
                         gp_error *err);
    gp_err (*mig_destroy)(void *state, const char *uuid, gp_error *err);
    gp_err (*device_nodes)(void *state, const char *const *uuids, size_t n_uuids, gp_device_node *out, size_t cap,
                           size_t *n, gp_error *err);
    gp_err (*set_busy)(void *state, const char *uuid, int pid, bool busy, int64_t now_ms, gp_error *err);
    gp_err (*health)(void *state, int gpu, int64_t now_ms, gp_gpu_health *out, gp_error *err);
} gp_gpu_ops;

typedef struct gp_gpu {
    const gp_gpu_ops *ops;
    void *state;
} gp_gpu;

/* The backend called `name` ("sim"), or NULL. */
const gp_gpu_ops *gp_gpu_backend(const char *name);

/* Opens one node with the named backend: GP_ERR_INVALID field "backend"
 * for an unknown name, else what the backend's open says. */
gp_err gp_gpu_open(const char *backend, const gp_gpu_options *opt, gp_gpu *out, gp_error *err);
/* Opens with a backend's ops directly (the sim opens nodes this way). */
gp_err gp_gpu_open_with(const gp_gpu_ops *ops, const gp_gpu_options *opt, gp_gpu *out, gp_error *err);
void gp_gpu_close(gp_gpu *g);

/* The node's GPUs and their MIG instances now. */
gp_err gp_gpu_inventory(gp_gpu *g, gp_node_inventory *out, gp_error *err);

/* One sample of every GPU, and of the processes on them where known. */
gp_err gp_gpu_telemetry(gp_gpu *g, int64_t now_ms, gp_telemetry *out, gp_error *err);

/* Health events since the last poll, oldest first, at most cap: waits up
 * to timeout_ms for the first one (the sim never waits).  Each event is
 * delivered once.  Events left over (more than cap) come with the next
 * poll.  On an error (a bad fault line in the sim) *n still counts the
 * events delivered before it, and the next poll goes on after it. */
gp_err gp_gpu_poll_events(gp_gpu *g, int64_t now_ms, int timeout_ms, gp_gpu_event *out, size_t cap, size_t *n,
                          gp_error *err);

/* Creates a MIG instance of `profile` on GPU `gpu` at memory slice `start`
 * (-1: the lowest free start the profile allows) and fills *out with it,
 * its new UUID included.  GP_ERR_INVALID: gpu out of range, a profile the
 * GPU's model lacks (field "profile"), a start the profile may not use
 * (field "start"); GP_ERR_CONFLICT: the GPU is not in MIG mode (field
 * "gpu"), or the slices are taken (field "start"). */
gp_err gp_gpu_mig_create(gp_gpu *g, int gpu, const char *profile, int start, gp_mig_instance *out, gp_error *err);
/* Destroys the instance: GP_ERR_NOT_FOUND field "uuid" when there is none,
 * GP_ERR_CONFLICT when a process still uses it. */
gp_err gp_gpu_mig_destroy(gp_gpu *g, const char *uuid, gp_error *err);

/* The device nodes a replica given these GPU and MIG instance UUIDs must be
 * able to open, each once: each GPU's /dev/nvidiaN, /dev/nvidiactl,
 * /dev/nvidia-uvm and, per MIG instance, its GPU-instance and
 * compute-instance access files under /dev/nvidia-caps.  Majors and minors
 * are read from the files (stat).  GP_ERR_NOT_FOUND field "uuid" for a
 * UUID the node lacks, field "device_dir" for a missing file.  The launcher
 * allows these and denies every other GPU device. */
gp_err gp_gpu_device_nodes(gp_gpu *g, const char *const *uuids, size_t n_uuids, gp_device_node *out, size_t cap,
                           size_t *n, gp_error *err);

/* The launcher says process pid started (busy) or ended on a GPU or MIG
 * instance (by UUID).  The sim's telemetry follows it; a backend that sees
 * processes itself (nvml) ignores it.  GP_ERR_NOT_FOUND field "uuid". */
gp_err gp_gpu_set_busy(gp_gpu *g, const char *uuid, int pid, bool busy, int64_t now_ms, gp_error *err);

/* For backends: appends DIR/NAME to out (once) after stat'ing it: a
 * character device (its major and minor) or, in tests, a plain file.
 * GP_ERR_NOT_FOUND field "device_dir" when missing, GP_ERR_INVALID field
 * "uuids" when out (cap entries, *n used) is full. */
gp_err gp_gpu_add_device_node(const char *dir, const char *name, gp_device_node *out, size_t cap, size_t *n,
                              gp_error *err);

/* Checks GPU `gpu` now (the backend's own health reading: ECC, row
 * remapping, retired pages, the driver's recovery action, lost) and fills
 * *out.  GP_ERR_INVALID field "gpu" when out of range.  An unhealthy GPU
 * is GP_OK with out->healthy false; an error means the check could not
 * be made. */
gp_err gp_gpu_check(gp_gpu *g, int gpu, int64_t now_ms, gp_gpu_health *out, gp_error *err);

#endif

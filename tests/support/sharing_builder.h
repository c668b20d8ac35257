/* sharing_builder.h - builders and checks for GPU-sharing tests (MIG, MPS, time-slicing).
 *
 * An extension of fleet_builder.h (it works on the same tb_world) for the
 * tests of src/core/sharing.c, mig.c and fragmentation.c:
 *
 *     sb_add_node(w, "m0", "H100", 1, SB_H100_MIB, GP_SHARING_MIG, NULL);
 *     sb_tenant(w, "org", GP_TRUST_TRUSTED);
 *     gp_job_spec s = sb_mig_job(1, "org", "1g.10gb");
 *     sb_submit(w, &s, 0);
 *     tb_tick(w, 0, GP_DEC_BIND);
 *     assert_int_equal(sb_slice(w, 1).mig_start, 6);
 *
 * MIG geometry.  The tests need the placement table to check what the
 * engine decides, so it is written down here a second time, transcribed
 * from NVIDIA's MIG User Guide ("Supported MIG Profiles") and the output of
 * `nvidia-smi mig -lgipp` (placements "{0,1,2,3,4,5,6}:1" etc.), not copied
 * from src/core/mig.c: a typo in either table then shows up as a failing
 * test instead of agreeing with itself.
 *
 *   profile (compute, memory slices)  starts         A100-40GB A100-80GB H100-80GB H200-141GB
 *   1g  (1, 1)                        0 1 2 3 4 5 6  1g.5gb    1g.10gb   1g.10gb   1g.18gb
 *   1g  (1, 2)                        0 2 4 6        1g.10gb   1g.20gb   1g.20gb   1g.35gb
 *   2g  (2, 2)                        0 2 4          2g.10gb   2g.20gb   2g.20gb   2g.35gb
 *   3g  (3, 4)                        0 4            3g.20gb   3g.40gb   3g.40gb   3g.71gb
 *   4g  (4, 4)                        0              4g.20gb   4g.40gb   4g.40gb   4g.71gb
 *   7g  (7, 8)                        0              7g.40gb   7g.80gb   7g.80gb   7g.141gb
 *
 * Checks fail the running cmocka test (like fleet_builder's); the geometry
 * functions (sb_mig_*) are plain and never assert, so the property tests
 * can use them for their own books.
 *
 * Ownership: specs returned by value point at the strings passed in;
 * decision pointers point into the engine's array (valid until the next
 * event or clear); model and profile pointers point at static tables.
 */
#ifndef GP_TESTS_SUPPORT_SHARING_BUILDER_H
#define GP_TESTS_SUPPORT_SHARING_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

/* GPU memory of the MIG models (MiB), as a node spec gives it. */
#define SB_A100_40_MIB 40960
#define SB_A100_80_MIB 81920
#define SB_H100_MIB 81920
#define SB_H200_MIB 143771

/* ---- MIG geometry (independent of src/core/mig.c) ---- */

#define SB_MIG_PROFILES 6
#define SB_MIG_MODELS 4
#define SB_MIG_SLICES 8      /* memory slices per GPU */
#define SB_MIG_MAX_INSTANCES 7

typedef struct sb_mig_profile {
    const char *name;
    int compute;             /* compute slices of 7 */
    int size;                /* memory slices of 8 */
    unsigned starts;         /* bit s: may start at memory slice s */
} sb_mig_profile;

typedef struct sb_mig_model {
    const char *name;        /* "H100-80GB" */
    const char *gpu_type;    /* the node's gpu_type */
    int64_t gpu_mem_mib;     /* the node's gpu_mem_mib */
    sb_mig_profile profiles[SB_MIG_PROFILES];
} sb_mig_model;

typedef struct sb_mig_instance {
    const sb_mig_profile *profile;
    int start;
} sb_mig_instance;

extern const sb_mig_model sb_mig_models[SB_MIG_MODELS];

/* The model of a GPU type and memory (docs/sharing.md: A100 up to 45,000
 * MiB = 40GB, more = 80GB; H100 70,000..90,000; H200 130,000..150,000), or
 * NULL. */
const sb_mig_model *sb_mig_model_of(const char *gpu_type, int64_t gpu_mem_mib);
const sb_mig_profile *sb_mig_profile_of(const sb_mig_model *m, const char *name); /* NULL when unknown */
/* floor(1000 x compute / 7): 1g 142, 2g 285, 3g 428, 4g 571, 7g 1000. */
int sb_mig_milli(int compute);
/* Memory slices an instance takes, as a bit mask. */
unsigned sb_mig_span(const sb_mig_profile *p, int start);
/* Parses a layout "profile@start,..." of model m.  Returns the number of
 * instances (written to out, at most cap), or -1 with a sentence in why
 * when a profile is unknown to m, a start is not allowed, two instances
 * share a memory slice, or the text is malformed.  *mask (may be NULL)
 * gets the memory slices in use. */
int sb_mig_layout_parse(const sb_mig_model *m, const char *layout, sb_mig_instance *out, int cap, unsigned *mask,
                        char *why, size_t why_len);
/* Whether layout lists "profile@start" (exact item). */
bool sb_mig_layout_has(const char *layout, const char *profile, int start);

/* ---- fleet, pools, tenants ---- */

/* One node of `gpus` GPUs of gpu_type with gpu_mem_mib each, all in mode
 * `sharing`, in `pool` (NULL = "default"), block "b0", zone "z0", the
 * TB_NODE_* CPU and memory. */
gp_node_spec sb_node_spec(const char *name, const char *gpu_type, int gpus, int64_t gpu_mem_mib, gp_sharing sharing,
                          const char *pool);
void sb_add_node(tb_world *w, const char *name, const char *gpu_type, int gpus, int64_t gpu_mem_mib,
                 gp_sharing sharing, const char *pool); /* asserts GP_OK */
/* gp_engine_pool_set; asserts GP_OK. */
void sb_pool(tb_world *w, const char *pool, gp_score score, int timeslice_replicas, uint64_t seed);
/* A tenant without guarantee or limit, with the given trust; asserts. */
void sb_tenant(tb_world *w, const char *path, gp_trust trust);

/* ---- jobs ---- */

/* One replica, training (mig/mps) or `kind` (timeslice), cpu 0 and mem 0
 * so that only the GPU share matters, grace 0. */
gp_job_spec sb_mig_job(uint64_t id, const char *tenant, const char *profile);
gp_job_spec sb_mps_job(uint64_t id, const char *tenant, int milli, int64_t gpu_mem_mib);
gp_job_spec sb_timeslice_job(uint64_t id, const char *tenant, gp_job_kind kind);
/* gpus = 0: CPU and memory only. */
gp_job_spec sb_cpu_job(uint64_t id, const char *tenant, int64_t cpu_millis, int64_t mem_mib);
/* Whole GPUs, exclusive, cpu 0, mem 0, grace 0. */
gp_job_spec sb_whole_job(uint64_t id, const char *tenant, int gpus);
void sb_submit(tb_world *w, const gp_job_spec *spec, int64_t now); /* asserts GP_OK, tracks the id */
/* Asserts the submit is refused with GP_ERR_INVALID naming `field`. */
void sb_submit_refused(tb_world *w, const gp_job_spec *spec, int64_t now, const char *field);

/* ---- queries ---- */

/* The job's only slice (asserts it has exactly one). */
gp_slice sb_slice(const tb_world *w, uint64_t id);
/* The GPU of the job's first replica (asserts it is placed). */
uint32_t sb_job_gpu(const tb_world *w, uint64_t id);
/* Name of the node of the job's first replica. */
const char *sb_job_node(const tb_world *w, uint64_t id);
/* The nth (0-based) RECONFIGURE among the decisions, or NULL. */
const gp_decision *sb_reconfigure(const tb_world *w, size_t nth);
/* The last RECONFIGURE among the decisions, or NULL. */
const gp_decision *sb_last_reconfigure(const tb_world *w);
/* Sum of milli_gpus x (end - start) over the USAGE intervals in the
 * decisions (open ones up to now). */
int64_t sb_metered_milli_seconds(const tb_world *w, int64_t now);
/* milli_gpus of the job's first USAGE_OPEN among the decisions (asserts one). */
int64_t sb_usage_open_milli(const tb_world *w, uint64_t id);
/* The tenant's usage on one GPU type (milli-GPUs). */
int64_t sb_tenant_gpu_usage(const tb_world *w, const char *path, const char *gpu_type);

/* ---- metering books ---- */

/* Usage intervals as the decisions open and close them (for tests that
 * compare metering with their own integral of allocated milli-GPUs). */
typedef struct sb_open_interval {
    uint64_t id;
    int64_t milli, start;
} sb_open_interval;

typedef struct sb_meter {
    int64_t closed;              /* sum of milli_gpus x (end - start) over closed intervals */
    sb_open_interval *open;      /* owned; sb_meter_free() frees it */
    size_t n_open, cap_open;
} sb_meter;

/* Takes one decision (only USAGE_OPEN and USAGE_CLOSE matter).  Returns
 * false, with a sentence in why, for a close of an interval that is not
 * open or whose milli_gpus differ from its open. */
bool sb_meter_take(sb_meter *m, const gp_decision *d, char *why, size_t why_len);
/* Closed milli-GPU-seconds plus the open intervals' up to now. */
int64_t sb_meter_total(const sb_meter *m, int64_t now);
void sb_meter_free(sb_meter *m);

/* ---- checks ---- */

/* The GPU's layout parses under model m with no two instances sharing a
 * memory slice; returns the instance count.  Fails the test otherwise. */
int sb_assert_mig_layout_valid(const tb_world *w, uint32_t gpu, const sb_mig_model *m);
/* From public queries over the tracked jobs: every placed shared job has
 * one slice per replica on a GPU of its mode; per GPU, the slices' milli
 * add up to used_milli (<= 1000) and their count to jobs; MPS memory
 * limits fit `gpu_mem_mib` (the GPUs' memory, 0 = skip); MPS and
 * time-sliced GPUs hold one org and show it as trust_domain; no untrusted
 * tenant runs an MPS or time-slice share, nor shares a GPU with another
 * tenant (a job in its grace is leaving and does not count); a GPU with a
 * whole-GPU owner holds no slice; then gp_engine_check_invariants(). */
void sb_assert_sharing_consistent(const tb_world *w, int64_t gpu_mem_mib);

#endif

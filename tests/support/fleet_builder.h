/* fleet_builder.h - one-line builders and checks for engine unit tests.
 *
 * The engine API (core/engine.h) is deliberately small and explicit, which
 * makes test setup long: a node spec has nine fields, a quota needs its
 * `set` flag, unit and cpu/mem sentinels right, a job spec has fifteen.
 * These helpers build the common shapes in one line so a test reads as the
 * scenario it checks:
 *
 *     tb_add_nodes(w, 2, "H100", 8, "b0", "z0");         // n00, n01
 *     tb_tenant(w, "acme", "H100", 4, -1);                // 4 GPUs floor, no ceiling
 *     tb_submit(w, 1, "acme", 1, 8, 0);                   // job 1: 1 replica x 8 GPUs at t=0
 *     assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
 *
 * A tb_world is an engine plus the ids of the jobs submitted through these
 * helpers, because the engine has no job enumeration and tests want to ask
 * "how many of tenant X's jobs are pending" or "is any GPU owned twice".
 * Submit through tb_submit()/tb_submit_spec() so the job is tracked.
 *
 * Time: setup helpers (nodes, tenants) act at the engine's current time
 * (gp_engine_now), so they can be called at any point of a scenario; job
 * and tick helpers take `now` explicitly because time is what tests check.
 *
 * Failures: helpers that must succeed (tb_add_nodes, tb_tenant, tb_submit,
 * tb_finish, tb_tick, ...) use cmocka assertions, so a broken setup fails
 * the calling test at once.  The *_try / *_spec variants return the code.
 *
 * Ownership: tb_new() allocates the world and its engine, tb_free() frees
 * both (tb_setup/tb_teardown do it as cmocka fixtures: *state is the
 * world).  Specs returned by value point at the strings passed in (string
 * literals in practice); the engine copies what it keeps.  Decision
 * pointers returned by tb_find*() point into the engine's array and are
 * valid until the next engine event or clear (engine.h).
 */
#ifndef GP_TESTS_SUPPORT_FLEET_BUILDER_H
#define GP_TESTS_SUPPORT_FLEET_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"

/* Shape of every node tb_add_nodes() makes. */
#define TB_NODE_CPU_MILLIS 128000  /* 128 cores */
#define TB_NODE_MEM_MIB 1048576    /* 1 TiB */
#define TB_GPU_MEM_MIB 81920       /* 80 GiB */

/* Defaults of tb_job(). */
#define TB_JOB_CPU_MILLIS 1000
#define TB_JOB_MEM_MIB 1024
#define TB_DEFAULT_GRACE_S 60      /* tb_submit() */

typedef struct tb_world {
    gp_engine *e;
    uint64_t *jobs;                /* ids submitted through the helpers, in order */
    size_t n_jobs, cap_jobs;
} tb_world;

/* ---- lifetime ---- */

tb_world *tb_new(void);            /* engine with the default config */
void tb_use_config(tb_world *w, const gp_engine_config *cfg); /* a new, empty engine with cfg (before the fleet is built) */
void tb_free(tb_world *w);         /* NULL allowed */
int tb_setup(void **state);        /* cmocka fixture: *state = tb_new() */
int tb_teardown(void **state);     /* cmocka fixture: tb_free(*state) */
#define TB_TEST(fn) cmocka_unit_test_setup_teardown(fn, tb_setup, tb_teardown)

/* ---- fleet ---- */

/* A node spec with the TB_* defaults and one NVLink domain. */
gp_node_spec tb_node_spec(const char *name, const char *gpu_type, int gpus, const char *block);
/* Adds `count` nodes of gpus_per_node GPUs, named "n00", "n01", ... after
 * the nodes already there; block/zone NULL = "b0"/"z0".  Asserts success. */
void tb_add_nodes(tb_world *w, int count, const char *gpu_type, int gpus_per_node, const char *block,
                  const char *zone);
/* Same with nvlink_domains domains per node. */
void tb_add_nodes_nvlink(tb_world *w, int count, const char *gpu_type, int gpus_per_node, int nvlink_domains,
                         const char *block);
uint32_t tb_node_index(const tb_world *w, const char *name); /* asserts it exists */
gp_node_info tb_node(const tb_world *w, const char *name);
gp_gpu_info tb_gpu(const tb_world *w, uint32_t gpu);       /* asserts it exists */
/* Global index of GPU `i` of node `name`. */
uint32_t tb_gpu_of(const tb_world *w, const char *name, int i);
int tb_type_index(const tb_world *w, const char *gpu_type); /* -1 when unknown */
/* Healthy GPUs on up nodes that no job holds. */
size_t tb_free_gpus(const tb_world *w);

/* ---- tenants ---- */

/* A quota of `whole_gpus` GPUs of one type (set = true, milli = whole*1000,
 * cpu/mem GP_UNLIMITED).  tb_quota_none(): set = false, nothing listed. */
gp_quota tb_quota_gpus(const char *gpu_type, int whole_gpus);
gp_quota tb_quota_none(void);
/* guarantee_gpus / limit_gpus < 0 mean "none"; weight 0 (default), lend -1
 * (default), trust INHERIT, no user limit. */
gp_tenant_spec tb_tenant_spec(const char *gpu_type, int guarantee_gpus, int limit_gpus);
void tb_tenant(tb_world *w, const char *path, const char *gpu_type, int guarantee_gpus, int limit_gpus);
gp_err tb_tenant_try(tb_world *w, const char *path, const gp_tenant_spec *spec, gp_error *err);
uint32_t tb_tenant_index(const tb_world *w, const char *path); /* asserts it exists */
gp_tenant_info tb_tenant_info(const tb_world *w, const char *path);

/* ---- jobs ---- */

/* 1 replica x 1 GPU, training, any type, topology any, exclusive,
 * cpu TB_JOB_CPU_MILLIS, mem TB_JOB_MEM_MIB, priority 0, the given grace,
 * expected runtime 0 (unknown). */
gp_job_spec tb_job(uint64_t id, const char *tenant, int64_t grace_s);
/* Submits and, on GP_OK, tracks the id. */
gp_err tb_submit_spec(tb_world *w, const gp_job_spec *spec, int64_t now, gp_error *err);
/* Submits replicas x gpus with grace TB_DEFAULT_GRACE_S; asserts GP_OK. */
void tb_submit(tb_world *w, uint64_t id, const char *tenant, int replicas, int gpus, int64_t now);
/* Submits `count` 1-GPU jobs with ids first_id, first_id+1, ...; asserts. */
void tb_submit_many(tb_world *w, uint64_t first_id, int count, const char *tenant, int64_t now);
void tb_finish(tb_world *w, uint64_t id, gp_exit how, int64_t now);   /* asserts GP_OK */

gp_job_info tb_info(const tb_world *w, uint64_t id);                  /* asserts it exists */
gp_job_state tb_state(const tb_world *w, uint64_t id);
/* Tracked jobs of `tenant` (NULL = any) in state s. */
size_t tb_jobs_in_state(const tb_world *w, const char *tenant, gp_job_state s);
/* Tracked jobs of `tenant` (NULL = any) that hold GPUs (admitted, running,
 * preempting), and the GPUs they hold. */
size_t tb_jobs_holding(const tb_world *w, const char *tenant);
size_t tb_gpus_held(const tb_world *w, const char *tenant);
/* Node index of the job's first GPU; asserts the job holds GPUs. */
uint32_t tb_job_node(const tb_world *w, uint64_t id);
/* True when every GPU of the job is on a node of `block`. */
bool tb_job_in_block(const tb_world *w, uint64_t id, const char *block);

/* ---- ticks and decisions ---- */

/* Clears the decisions, ticks at `now` (asserts GP_OK) and returns how
 * many decisions of `kind` that tick emitted; they stay readable. */
size_t tb_tick(tb_world *w, int64_t now, gp_decision_kind kind);
/* Ticks at `now` keeping earlier decisions (asserts GP_OK). */
void tb_advance(tb_world *w, int64_t now);
size_t tb_count(const tb_world *w, gp_decision_kind kind);
size_t tb_count_for_job(const tb_world *w, uint64_t job, gp_decision_kind kind);
/* First decision of `kind` for `job` at or after position `from`, or NULL;
 * *at (may be NULL) gets its position. */
const gp_decision *tb_find_from(const tb_world *w, uint64_t job, gp_decision_kind kind, size_t from, size_t *at);
const gp_decision *tb_find(const tb_world *w, uint64_t job, gp_decision_kind kind);
const gp_decision *tb_find_transition(const tb_world *w, uint64_t job, gp_job_state from, gp_job_state to);
/* Job ids of the BIND decisions, in order; returns how many (all, even
 * past cap). */
size_t tb_bound_jobs(const tb_world *w, uint64_t *out, size_t cap);

/* ---- invariants ---- */

/* No GPU owned twice: every tracked job's GPUs (gp_engine_job_gpus) are
 * distinct from every other job's, gp_engine_gpu_get agrees on the owner,
 * a placed job holds exactly replicas x gpus GPUs, no GPU is held by an
 * unknown job; then gp_engine_check_invariants().  Fails the test if not. */
void tb_assert_gpus_consistent(const tb_world *w);

#endif

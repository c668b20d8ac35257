/* fleet_builder.c - one-line builders and checks for engine unit tests.
 *
 * See fleet_builder.h for what each helper does and who owns what.  Every
 * helper that "must work" fails the running cmocka test through an
 * assertion instead of returning an error, so tests stay short.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/fleet_builder.h"

/* ---- lifetime ---- */

tb_world *tb_new(void)
{
    tb_world *w = calloc(1, sizeof *w);
    assert_non_null(w);
    w->e = gp_engine_new(NULL);
    assert_non_null(w->e);
    return w;
}

void tb_use_config(tb_world *w, const gp_engine_config *cfg)
{
    gp_engine_free(w->e);
    w->e = gp_engine_new(cfg);
    assert_non_null(w->e);
}

void tb_free(tb_world *w)
{
    if (w == NULL)
        return;
    gp_engine_free(w->e);
    free(w->jobs);
    free(w);
}

int tb_setup(void **state)
{
    *state = tb_new();
    return 0;
}

int tb_teardown(void **state)
{
    tb_free(*state);
    *state = NULL;
    return 0;
}

/* ---- fleet ---- */

gp_node_spec tb_node_spec(const char *name, const char *gpu_type, int gpus, const char *block)
{
    gp_node_spec s;
    memset(&s, 0, sizeof s);
    s.name = name;
    s.zone = "z0";
    s.block = block ? block : "b0";
    s.gpu_type = gpu_type;
    s.gpu_count = gpus;
    s.nvlink_domains = 1;
    s.gpu_mem_mib = TB_GPU_MEM_MIB;
    s.cpu_millis = TB_NODE_CPU_MILLIS;
    s.mem_mib = TB_NODE_MEM_MIB;
    s.gpu_uuids = NULL;
    return s;
}

static void add_nodes(tb_world *w, int count, const char *gpu_type, int gpus, int domains, const char *block,
                      const char *zone)
{
    for (int i = 0; i < count; i++) {
        char name[GP_NAME_MAX];
        snprintf(name, sizeof name, "n%02zu", gp_engine_node_count(w->e));
        gp_node_spec s = tb_node_spec(name, gpu_type, gpus, block);
        s.zone = zone ? zone : "z0";
        s.nvlink_domains = domains;
        gp_error err;
        gp_error_clear(&err);
        gp_err rc = gp_engine_node_add(w->e, &s, gp_engine_now(w->e), &err);
        if (rc != GP_OK)
            fail_msg("node_add %s: %s (%s: %s)", name, gp_err_name(rc), err.field, err.message);
    }
}

void tb_add_nodes(tb_world *w, int count, const char *gpu_type, int gpus_per_node, const char *block,
                  const char *zone)
{
    add_nodes(w, count, gpu_type, gpus_per_node, 1, block, zone);
}

void tb_add_nodes_nvlink(tb_world *w, int count, const char *gpu_type, int gpus_per_node, int nvlink_domains,
                         const char *block)
{
    add_nodes(w, count, gpu_type, gpus_per_node, nvlink_domains, block, NULL);
}

uint32_t tb_node_index(const tb_world *w, const char *name)
{
    size_t n = gp_engine_node_count(w->e);
    for (uint32_t i = 0; i < n; i++) {
        gp_node_info info;
        if (gp_engine_node_get(w->e, i, &info) && strcmp(info.name, name) == 0)
            return i;
    }
    fail_msg("no node named %s", name);
    return UINT32_MAX;
}

gp_node_info tb_node(const tb_world *w, const char *name)
{
    gp_node_info info;
    assert_true(gp_engine_node_get(w->e, tb_node_index(w, name), &info));
    return info;
}

gp_gpu_info tb_gpu(const tb_world *w, uint32_t gpu)
{
    gp_gpu_info info;
    if (!gp_engine_gpu_get(w->e, gpu, &info))
        fail_msg("no GPU %u", (unsigned)gpu);
    return info;
}

uint32_t tb_gpu_of(const tb_world *w, const char *name, int i)
{
    gp_node_info n = tb_node(w, name);
    assert_true(i >= 0 && i < n.gpu_count);
    return n.gpu_first + (uint32_t)i;
}

int tb_type_index(const tb_world *w, const char *gpu_type)
{
    int n = gp_engine_gpu_type_count(w->e);
    for (int i = 0; i < n; i++) {
        const char *name = gp_engine_gpu_type_name(w->e, i);
        if (name != NULL && strcmp(name, gpu_type) == 0)
            return i;
    }
    return -1;
}

size_t tb_free_gpus(const tb_world *w)
{
    size_t free_gpus = 0, n = gp_engine_gpu_count(w->e);
    for (uint32_t g = 0; g < n; g++) {
        gp_gpu_info gi = tb_gpu(w, g);
        gp_node_info ni;
        assert_true(gp_engine_node_get(w->e, gi.node, &ni));
        if (gi.healthy && ni.up && gi.job == 0)
            free_gpus++;
    }
    return free_gpus;
}

/* ---- tenants ---- */

gp_quota tb_quota_none(void)
{
    gp_quota q;
    memset(&q, 0, sizeof q);
    q.set = false;
    q.n_gpu = 0;
    q.cpu_millis = GP_UNLIMITED;
    q.mem_mib = GP_UNLIMITED;
    return q;
}

gp_quota tb_quota_gpus(const char *gpu_type, int whole_gpus)
{
    gp_quota q = tb_quota_none();
    q.set = true;
    q.n_gpu = 1;
    snprintf(q.gpu[0].type, sizeof q.gpu[0].type, "%s", gpu_type);
    q.gpu[0].milli = (int64_t)whole_gpus * 1000;
    return q;
}

gp_tenant_spec tb_tenant_spec(const char *gpu_type, int guarantee_gpus, int limit_gpus)
{
    gp_tenant_spec s;
    memset(&s, 0, sizeof s);
    s.guarantee = guarantee_gpus >= 0 ? tb_quota_gpus(gpu_type, guarantee_gpus) : tb_quota_none();
    s.limit = limit_gpus >= 0 ? tb_quota_gpus(gpu_type, limit_gpus) : tb_quota_none();
    s.user_limit = tb_quota_none();
    s.weight = 0;
    s.lend = -1;
    s.trust = GP_TRUST_INHERIT;
    return s;
}

gp_err tb_tenant_try(tb_world *w, const char *path, const gp_tenant_spec *spec, gp_error *err)
{
    return gp_engine_tenant_set(w->e, path, spec, gp_engine_now(w->e), err);
}

void tb_tenant(tb_world *w, const char *path, const char *gpu_type, int guarantee_gpus, int limit_gpus)
{
    gp_tenant_spec s = tb_tenant_spec(gpu_type, guarantee_gpus, limit_gpus);
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = tb_tenant_try(w, path, &s, &err);
    if (rc != GP_OK)
        fail_msg("tenant_set %s: %s (%s: %s)", path, gp_err_name(rc), err.field, err.message);
}

uint32_t tb_tenant_index(const tb_world *w, const char *path)
{
    uint32_t index = UINT32_MAX;
    gp_error err;
    gp_error_clear(&err);
    if (gp_engine_tenant_find(w->e, path, &index, &err) != GP_OK)
        fail_msg("no tenant %s: %s", path, err.message);
    return index;
}

gp_tenant_info tb_tenant_info(const tb_world *w, const char *path)
{
    gp_tenant_info info;
    assert_true(gp_engine_tenant_get(w->e, tb_tenant_index(w, path), &info));
    return info;
}

/* ---- jobs ---- */

gp_job_spec tb_job(uint64_t id, const char *tenant, int64_t grace_s)
{
    gp_job_spec s;
    memset(&s, 0, sizeof s);
    s.id = id;
    s.name = NULL;
    s.tenant = tenant;
    s.user = NULL;
    s.kind = GP_KIND_TRAINING;
    s.replicas = 1;
    s.gpus = 1;
    s.n_gpu_types = 0;
    s.cpu_millis = TB_JOB_CPU_MILLIS;
    s.mem_mib = TB_JOB_MEM_MIB;
    s.topology = GP_TOPO_ANY;
    s.isolation = GP_ISO_EXCLUSIVE;
    s.priority = 0;
    s.checkpoint_grace_s = grace_s;
    s.expected_runtime_s = 0;
    return s;
}

gp_err tb_submit_spec(tb_world *w, const gp_job_spec *spec, int64_t now, gp_error *err)
{
    gp_err rc = gp_engine_job_submit(w->e, spec, now, err);
    if (rc == GP_OK) {
        if (w->n_jobs == w->cap_jobs) {
            size_t cap = w->cap_jobs ? 2 * w->cap_jobs : 64;
            uint64_t *jobs = realloc(w->jobs, cap * sizeof *jobs);
            assert_non_null(jobs);
            w->jobs = jobs;
            w->cap_jobs = cap;
        }
        w->jobs[w->n_jobs++] = spec->id;
    }
    return rc;
}

void tb_submit(tb_world *w, uint64_t id, const char *tenant, int replicas, int gpus, int64_t now)
{
    gp_job_spec s = tb_job(id, tenant, TB_DEFAULT_GRACE_S);
    s.replicas = replicas;
    s.gpus = gpus;
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = tb_submit_spec(w, &s, now, &err);
    if (rc != GP_OK)
        fail_msg("submit %llu: %s (%s: %s)", (unsigned long long)id, gp_err_name(rc), err.field, err.message);
}

void tb_submit_many(tb_world *w, uint64_t first_id, int count, const char *tenant, int64_t now)
{
    for (int i = 0; i < count; i++)
        tb_submit(w, first_id + (uint64_t)i, tenant, 1, 1, now);
}

void tb_finish(tb_world *w, uint64_t id, gp_exit how, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = gp_engine_job_finished(w->e, id, how, now, &err);
    if (rc != GP_OK)
        fail_msg("finished %llu: %s (%s: %s)", (unsigned long long)id, gp_err_name(rc), err.field, err.message);
}

gp_job_info tb_info(const tb_world *w, uint64_t id)
{
    gp_job_info info;
    memset(&info, 0, sizeof info);
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = gp_engine_job_info(w->e, id, &info, &err);
    if (rc != GP_OK)
        fail_msg("job_info %llu: %s (%s)", (unsigned long long)id, gp_err_name(rc), err.message);
    return info;
}

gp_job_state tb_state(const tb_world *w, uint64_t id)
{
    return tb_info(w, id).state;
}

static bool job_of_tenant(const tb_world *w, const gp_job_info *info, const char *tenant)
{
    return tenant == NULL || info->tenant == tb_tenant_index(w, tenant);
}

size_t tb_jobs_in_state(const tb_world *w, const char *tenant, gp_job_state s)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n_jobs; i++) {
        gp_job_info info;
        if (gp_engine_job_info(w->e, w->jobs[i], &info, NULL) != GP_OK)
            continue; /* forgotten */
        if (info.state == s && job_of_tenant(w, &info, tenant))
            n++;
    }
    return n;
}

static bool holds_gpus(gp_job_state s)
{
    return s == GP_JOB_ADMITTED || s == GP_JOB_RUNNING || s == GP_JOB_PREEMPTING;
}

size_t tb_jobs_holding(const tb_world *w, const char *tenant)
{
    return tb_jobs_in_state(w, tenant, GP_JOB_ADMITTED) + tb_jobs_in_state(w, tenant, GP_JOB_RUNNING) +
           tb_jobs_in_state(w, tenant, GP_JOB_PREEMPTING);
}

size_t tb_gpus_held(const tb_world *w, const char *tenant)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n_jobs; i++) {
        gp_job_info info;
        if (gp_engine_job_info(w->e, w->jobs[i], &info, NULL) != GP_OK)
            continue;
        if (holds_gpus(info.state) && job_of_tenant(w, &info, tenant))
            n += (size_t)info.replicas * (size_t)info.gpus;
    }
    return n;
}

uint32_t tb_job_node(const tb_world *w, uint64_t id)
{
    uint32_t gpu;
    if (gp_engine_job_gpus(w->e, id, &gpu, 1) != 1)
        fail_msg("job %llu holds no GPUs", (unsigned long long)id);
    return tb_gpu(w, gpu).node;
}

bool tb_job_in_block(const tb_world *w, uint64_t id, const char *block)
{
    size_t cap = gp_engine_gpu_count(w->e);
    uint32_t *gpus = calloc(cap ? cap : 1, sizeof *gpus);
    assert_non_null(gpus);
    size_t n = gp_engine_job_gpus(w->e, id, gpus, cap);
    bool all = n > 0;
    for (size_t i = 0; i < n && all; i++) {
        gp_node_info ni;
        all = gp_engine_node_get(w->e, tb_gpu(w, gpus[i]).node, &ni) && strcmp(ni.block, block) == 0;
    }
    free(gpus);
    return all;
}

/* ---- ticks and decisions ---- */

size_t tb_tick(tb_world *w, int64_t now, gp_decision_kind kind)
{
    gp_engine_decisions_clear(w->e);
    tb_advance(w, now);
    return tb_count(w, kind);
}

void tb_advance(tb_world *w, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = gp_engine_tick(w->e, now, &err);
    if (rc != GP_OK)
        fail_msg("tick %lld: %s (%s: %s)", (long long)now, gp_err_name(rc), err.field, err.message);
}

size_t tb_count(const tb_world *w, gp_decision_kind kind)
{
    size_t n = 0, count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = 0; i < count; i++)
        n += d[i].kind == kind;
    return n;
}

size_t tb_count_for_job(const tb_world *w, uint64_t job, gp_decision_kind kind)
{
    size_t n = 0, count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = 0; i < count; i++)
        n += d[i].kind == kind && d[i].job_id == job;
    return n;
}

const gp_decision *tb_find_from(const tb_world *w, uint64_t job, gp_decision_kind kind, size_t from, size_t *at)
{
    size_t count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = from; i < count; i++) {
        if (d[i].kind == kind && d[i].job_id == job) {
            if (at != NULL)
                *at = i;
            return &d[i];
        }
    }
    return NULL;
}

const gp_decision *tb_find(const tb_world *w, uint64_t job, gp_decision_kind kind)
{
    return tb_find_from(w, job, kind, 0, NULL);
}

const gp_decision *tb_find_transition(const tb_world *w, uint64_t job, gp_job_state from, gp_job_state to)
{
    size_t count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = 0; i < count; i++)
        if (d[i].kind == GP_DEC_TRANSITION && d[i].job_id == job && d[i].from == from && d[i].to == to)
            return &d[i];
    return NULL;
}

size_t tb_bound_jobs(const tb_world *w, uint64_t *out, size_t cap)
{
    size_t n = 0, count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = 0; i < count; i++) {
        if (d[i].kind != GP_DEC_BIND)
            continue;
        if (n < cap)
            out[n] = d[i].job_id;
        n++;
    }
    return n;
}

/* ---- invariants ---- */

static bool tracked(const tb_world *w, uint64_t id)
{
    for (size_t i = 0; i < w->n_jobs; i++)
        if (w->jobs[i] == id)
            return true;
    return false;
}

void tb_assert_gpus_consistent(const tb_world *w)
{
    size_t n_gpus = gp_engine_gpu_count(w->e);
    uint64_t *owner = calloc(n_gpus + 1, sizeof *owner);
    uint32_t *gpus = calloc(n_gpus + 1, sizeof *gpus);
    assert_non_null(owner);
    assert_non_null(gpus);
    const char *problem = NULL;
    uint64_t job = 0;
    uint32_t gpu = 0;

    for (size_t j = 0; j < w->n_jobs && problem == NULL; j++) {
        gp_job_info info;
        job = w->jobs[j];
        if (gp_engine_job_info(w->e, job, &info, NULL) != GP_OK)
            continue;
        size_t n = gp_engine_job_gpus(w->e, job, gpus, n_gpus + 1);
        size_t want = holds_gpus(info.state) ? (size_t)info.replicas * (size_t)info.gpus : 0;
        if (n != want) {
            problem = "job holds a GPU count other than replicas x gpus (0 when not placed)";
            break;
        }
        for (size_t i = 0; i < n; i++) {
            gpu = gpus[i];
            gp_gpu_info gi;
            if (gpu >= n_gpus || !gp_engine_gpu_get(w->e, gpu, &gi)) {
                problem = "job lists a GPU index that does not exist";
                break;
            }
            if (owner[gpu] != 0) {
                problem = "GPU owned twice";
                break;
            }
            owner[gpu] = job;
            if (gi.job != job) {
                problem = "gp_engine_gpu_get names another owner than gp_engine_job_gpus";
                break;
            }
        }
    }
    for (uint32_t g = 0; g < n_gpus && problem == NULL; g++) {
        gp_gpu_info gi = tb_gpu(w, g);
        gpu = g;
        job = gi.job;
        if (gi.job != 0 && owner[g] != gi.job)
            problem = tracked(w, gi.job) ? "GPU names an owner whose GPU list lacks it"
                                         : "GPU held by a job the test never submitted";
    }
    free(owner);
    free(gpus);
    if (problem != NULL)
        fail_msg("%s (job %llu, gpu %u)", problem, (unsigned long long)job, (unsigned)gpu);

    gp_error err;
    gp_error_clear(&err);
    gp_err rc = gp_engine_check_invariants(w->e, &err);
    if (rc != GP_OK)
        fail_msg("gp_engine_check_invariants: %s (%s: %s)", gp_err_name(rc), err.field, err.message);
}

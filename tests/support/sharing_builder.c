/* sharing_builder.c - builders and checks for GPU-sharing tests.
 *
 * See sharing_builder.h for what each helper does and who owns what.  The
 * MIG table below is the one of NVIDIA's MIG User Guide, written out
 * independently of src/core/mig.c on purpose.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/sharing_builder.h"

/* ---- MIG geometry ---- */

/* starts as bit masks: 0-6 = 0x7f, {0,2,4,6} = 0x55, {0,2,4} = 0x15, {0,4} = 0x11, {0} = 0x01 */
#define S_0_TO_6 0x7fu
#define S_EVEN 0x55u
#define S_0_2_4 0x15u
#define S_0_4 0x11u
#define S_0 0x01u

const sb_mig_model sb_mig_models[SB_MIG_MODELS] = {
    {"A100-40GB", "A100", SB_A100_40_MIB,
     {{"1g.5gb", 1, 1, S_0_TO_6}, {"1g.10gb", 1, 2, S_EVEN}, {"2g.10gb", 2, 2, S_0_2_4},
      {"3g.20gb", 3, 4, S_0_4}, {"4g.20gb", 4, 4, S_0}, {"7g.40gb", 7, 8, S_0}}},
    {"A100-80GB", "A100", SB_A100_80_MIB,
     {{"1g.10gb", 1, 1, S_0_TO_6}, {"1g.20gb", 1, 2, S_EVEN}, {"2g.20gb", 2, 2, S_0_2_4},
      {"3g.40gb", 3, 4, S_0_4}, {"4g.40gb", 4, 4, S_0}, {"7g.80gb", 7, 8, S_0}}},
    {"H100-80GB", "H100", SB_H100_MIB,
     {{"1g.10gb", 1, 1, S_0_TO_6}, {"1g.20gb", 1, 2, S_EVEN}, {"2g.20gb", 2, 2, S_0_2_4},
      {"3g.40gb", 3, 4, S_0_4}, {"4g.40gb", 4, 4, S_0}, {"7g.80gb", 7, 8, S_0}}},
    {"H200-141GB", "H200", SB_H200_MIB,
     {{"1g.18gb", 1, 1, S_0_TO_6}, {"1g.35gb", 1, 2, S_EVEN}, {"2g.35gb", 2, 2, S_0_2_4},
      {"3g.71gb", 3, 4, S_0_4}, {"4g.71gb", 4, 4, S_0}, {"7g.141gb", 7, 8, S_0}}},
};

const sb_mig_model *sb_mig_model_of(const char *gpu_type, int64_t gpu_mem_mib)
{
    if (gpu_type == NULL)
        return NULL;
    if (strstr(gpu_type, "A100") && gpu_mem_mib >= 30000 && gpu_mem_mib <= 45000)
        return &sb_mig_models[0];
    if (strstr(gpu_type, "A100") && gpu_mem_mib > 45000 && gpu_mem_mib <= 90000)
        return &sb_mig_models[1];
    if (strstr(gpu_type, "H100") && gpu_mem_mib >= 70000 && gpu_mem_mib <= 90000)
        return &sb_mig_models[2];
    if (strstr(gpu_type, "H200") && gpu_mem_mib >= 130000 && gpu_mem_mib <= 150000)
        return &sb_mig_models[3];
    return NULL;
}

const sb_mig_profile *sb_mig_profile_of(const sb_mig_model *m, const char *name)
{
    for (int p = 0; m && name && p < SB_MIG_PROFILES; p++)
        if (strcmp(m->profiles[p].name, name) == 0)
            return &m->profiles[p];
    return NULL;
}

int sb_mig_milli(int compute)
{
    return 1000 * compute / 7;
}

unsigned sb_mig_span(const sb_mig_profile *p, int start)
{
    return ((1u << p->size) - 1u) << start;
}

int sb_mig_layout_parse(const sb_mig_model *m, const char *layout, sb_mig_instance *out, int cap, unsigned *mask,
                        char *why, size_t why_len)
{
    unsigned used = 0;
    int n = 0;
    const char *p = layout;
    if (mask)
        *mask = 0;
    if (layout == NULL || m == NULL) {
        snprintf(why, why_len, "no layout or no model");
        return -1;
    }
    while (*p) {
        char item[64];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item) {
            snprintf(why, why_len, "malformed layout \"%s\"", layout);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        p += len + (p[len] == ',');
        char *at = strchr(item, '@');
        char *end = NULL;
        long start = at ? strtol(at + 1, &end, 10) : -1;
        if (!at || end == at + 1 || *end != '\0' || start < 0 || start >= SB_MIG_SLICES) {
            snprintf(why, why_len, "malformed item \"%s\" in \"%s\"", item, layout);
            return -1;
        }
        *at = '\0';
        const sb_mig_profile *prof = sb_mig_profile_of(m, item);
        if (!prof) {
            snprintf(why, why_len, "profile %s is not one of %s (layout \"%s\")", item, m->name, layout);
            return -1;
        }
        if (!(prof->starts >> start & 1u)) {
            snprintf(why, why_len, "%s may not start at memory slice %ld (layout \"%s\")", item, start, layout);
            return -1;
        }
        unsigned span = sb_mig_span(prof, (int)start);
        if (span & used) {
            snprintf(why, why_len, "%s@%ld shares a memory slice with another instance (layout \"%s\")", item, start,
                     layout);
            return -1;
        }
        used |= span;
        if (n < cap && out)
            out[n] = (sb_mig_instance){prof, (int)start};
        n++;
    }
    if (n > SB_MIG_MAX_INSTANCES) {
        snprintf(why, why_len, "%d instances on one GPU (layout \"%s\")", n, layout);
        return -1;
    }
    if (mask)
        *mask = used;
    return n;
}

bool sb_mig_layout_has(const char *layout, const char *profile, int start)
{
    char want[64];
    snprintf(want, sizeof want, "%s@%d", profile, start);
    size_t wl = strlen(want);
    for (const char *p = layout; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == wl && strncmp(p, want, wl) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* ---- fleet, pools, tenants ---- */

gp_node_spec sb_node_spec(const char *name, const char *gpu_type, int gpus, int64_t gpu_mem_mib, gp_sharing sharing,
                          const char *pool)
{
    gp_node_spec s = tb_node_spec(name, gpu_type, gpus, "b0");
    s.gpu_mem_mib = gpu_mem_mib;
    s.sharing = sharing;
    s.pool = pool;
    return s;
}

void sb_add_node(tb_world *w, const char *name, const char *gpu_type, int gpus, int64_t gpu_mem_mib,
                 gp_sharing sharing, const char *pool)
{
    gp_node_spec s = sb_node_spec(name, gpu_type, gpus, gpu_mem_mib, sharing, pool);
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = gp_engine_node_add(w->e, &s, gp_engine_now(w->e), &err);
    if (rc != GP_OK)
        fail_msg("node_add %s: %s (%s: %s)", name, gp_err_name(rc), err.field, err.message);
}

void sb_pool(tb_world *w, const char *pool, gp_score score, int timeslice_replicas, uint64_t seed)
{
    gp_pool_spec p = {.score = score, .timeslice_replicas = timeslice_replicas, .seed = seed};
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = gp_engine_pool_set(w->e, pool, &p, &err);
    if (rc != GP_OK)
        fail_msg("pool_set %s: %s (%s: %s)", pool, gp_err_name(rc), err.field, err.message);
}

void sb_tenant(tb_world *w, const char *path, gp_trust trust)
{
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.trust = trust;
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = tb_tenant_try(w, path, &s, &err);
    if (rc != GP_OK)
        fail_msg("tenant_set %s: %s (%s: %s)", path, gp_err_name(rc), err.field, err.message);
}

/* ---- jobs ---- */

static gp_job_spec shared_job(uint64_t id, const char *tenant, gp_isolation iso)
{
    gp_job_spec s = tb_job(id, tenant, 0);
    s.isolation = iso;
    s.gpus = 1;
    s.cpu_millis = 0;
    s.mem_mib = 0;
    return s;
}

gp_job_spec sb_mig_job(uint64_t id, const char *tenant, const char *profile)
{
    gp_job_spec s = shared_job(id, tenant, GP_ISO_MIG);
    snprintf(s.share.mig_profile, sizeof s.share.mig_profile, "%s", profile);
    return s;
}

gp_job_spec sb_mps_job(uint64_t id, const char *tenant, int milli, int64_t gpu_mem_mib)
{
    gp_job_spec s = shared_job(id, tenant, GP_ISO_MPS);
    s.share.mps_milli = milli;
    s.share.gpu_mem_mib = gpu_mem_mib;
    return s;
}

gp_job_spec sb_timeslice_job(uint64_t id, const char *tenant, gp_job_kind kind)
{
    gp_job_spec s = shared_job(id, tenant, GP_ISO_TIMESLICE);
    s.kind = kind;
    return s;
}

gp_job_spec sb_cpu_job(uint64_t id, const char *tenant, int64_t cpu_millis, int64_t mem_mib)
{
    gp_job_spec s = tb_job(id, tenant, 0);
    s.gpus = 0;
    s.cpu_millis = cpu_millis;
    s.mem_mib = mem_mib;
    return s;
}

gp_job_spec sb_whole_job(uint64_t id, const char *tenant, int gpus)
{
    gp_job_spec s = tb_job(id, tenant, 0);
    s.gpus = gpus;
    s.cpu_millis = 0;
    s.mem_mib = 0;
    return s;
}

void sb_submit(tb_world *w, const gp_job_spec *spec, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = tb_submit_spec(w, spec, now, &err);
    if (rc != GP_OK)
        fail_msg("submit %llu: %s (%s: %s)", (unsigned long long)spec->id, gp_err_name(rc), err.field, err.message);
}

void sb_submit_refused(tb_world *w, const gp_job_spec *spec, int64_t now, const char *field)
{
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = tb_submit_spec(w, spec, now, &err);
    if (rc != GP_ERR_INVALID)
        fail_msg("submit %llu: expected invalid (%s), got %s", (unsigned long long)spec->id, field, gp_err_name(rc));
    assert_string_equal(err.field, field);
    assert_true(err.message[0] != '\0');
}

/* ---- queries ---- */

gp_slice sb_slice(const tb_world *w, uint64_t id)
{
    gp_slice s[2];
    memset(s, 0, sizeof s);
    size_t n = gp_engine_job_slices(w->e, id, s, 2);
    if (n != 1)
        fail_msg("job %llu has %zu slices, expected 1", (unsigned long long)id, n);
    return s[0];
}

uint32_t sb_job_gpu(const tb_world *w, uint64_t id)
{
    uint32_t gpu = UINT32_MAX;
    if (gp_engine_job_gpus(w->e, id, &gpu, 1) != 1)
        fail_msg("job %llu is not placed on a GPU", (unsigned long long)id);
    return gpu;
}

const char *sb_job_node(const tb_world *w, uint64_t id)
{
    static gp_node_info info;
    gp_gpu_info g = tb_gpu(w, sb_job_gpu(w, id));
    assert_true(gp_engine_node_get(w->e, g.node, &info));
    return info.name;
}

const gp_decision *sb_reconfigure(const tb_world *w, size_t nth)
{
    size_t count = 0, seen = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = 0; i < count; i++)
        if (d[i].kind == GP_DEC_RECONFIGURE && seen++ == nth)
            return &d[i];
    return NULL;
}

const gp_decision *sb_last_reconfigure(const tb_world *w)
{
    size_t count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = count; i-- > 0;)
        if (d[i].kind == GP_DEC_RECONFIGURE)
            return &d[i];
    return NULL;
}

int64_t sb_metered_milli_seconds(const tb_world *w, int64_t now)
{
    size_t count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    int64_t total = 0;
    for (size_t i = 0; i < count; i++) {
        if (d[i].kind == GP_DEC_USAGE_CLOSE) {
            total += d[i].usage.milli_gpus * (d[i].usage.end - d[i].usage.start);
        } else if (d[i].kind == GP_DEC_USAGE_OPEN) {
            bool closed = false;
            for (size_t k = i + 1; k < count && !closed; k++)
                closed = d[k].kind == GP_DEC_USAGE_CLOSE && d[k].usage.interval_id == d[i].usage.interval_id;
            if (!closed)
                total += d[i].usage.milli_gpus * (now - d[i].usage.start);
        }
    }
    return total;
}

int64_t sb_usage_open_milli(const tb_world *w, uint64_t id)
{
    const gp_decision *open = tb_find(w, id, GP_DEC_USAGE_OPEN);
    if (open == NULL)
        fail_msg("no USAGE_OPEN for job %llu", (unsigned long long)id);
    return open->usage.milli_gpus;
}

int64_t sb_tenant_gpu_usage(const tb_world *w, const char *path, const char *gpu_type)
{
    int type = tb_type_index(w, gpu_type);
    assert_true(type >= 0);
    return tb_tenant_info(w, path).usage.v[type];
}

/* ---- metering books ---- */

bool sb_meter_take(sb_meter *m, const gp_decision *d, char *why, size_t why_len)
{
    if (d->kind == GP_DEC_USAGE_OPEN) {
        if (m->n_open == m->cap_open) {
            size_t cap = m->cap_open ? 2 * m->cap_open : 64;
            sb_open_interval *p = realloc(m->open, cap * sizeof *p);
            if (p == NULL) {
                snprintf(why, why_len, "out of memory");
                return false;
            }
            m->open = p;
            m->cap_open = cap;
        }
        m->open[m->n_open++] = (sb_open_interval){d->usage.interval_id, d->usage.milli_gpus, d->usage.start};
    } else if (d->kind == GP_DEC_USAGE_CLOSE) {
        size_t k = 0;
        while (k < m->n_open && m->open[k].id != d->usage.interval_id)
            k++;
        if (k == m->n_open) {
            snprintf(why, why_len, "USAGE_CLOSE of interval %llu, which is not open",
                     (unsigned long long)d->usage.interval_id);
            return false;
        }
        if (m->open[k].milli != d->usage.milli_gpus) {
            snprintf(why, why_len, "interval %llu opened with %lld mGPU, closed with %lld",
                     (unsigned long long)d->usage.interval_id, (long long)m->open[k].milli,
                     (long long)d->usage.milli_gpus);
            return false;
        }
        m->closed += d->usage.milli_gpus * (d->usage.end - d->usage.start);
        m->open[k] = m->open[--m->n_open];
    }
    return true;
}

int64_t sb_meter_total(const sb_meter *m, int64_t now)
{
    int64_t total = m->closed;
    for (size_t k = 0; k < m->n_open; k++)
        total += m->open[k].milli * (now - m->open[k].start);
    return total;
}

void sb_meter_free(sb_meter *m)
{
    free(m->open);
    memset(m, 0, sizeof *m);
}

/* ---- checks ---- */

int sb_assert_mig_layout_valid(const tb_world *w, uint32_t gpu, const sb_mig_model *m)
{
    gp_gpu_info g = tb_gpu(w, gpu);
    char why[256];
    int n = sb_mig_layout_parse(m, g.mig_layout, NULL, 0, NULL, why, sizeof why);
    if (n < 0)
        fail_msg("GPU %u: %s", (unsigned)gpu, why);
    return n;
}

/* The org (first path segment) of a tenant path, into out. */
static void org_of(const char *path, char *out, size_t len)
{
    size_t n = strcspn(path, "/");
    if (n >= len)
        n = len - 1;
    memcpy(out, path, n);
    out[n] = '\0';
}

typedef struct gpu_books {
    int milli, jobs;
    int64_t mem;
    char org[GP_PATH_MAX];
    uint32_t untrusted_tenant; /* UINT32_MAX: none */
    uint32_t tenant;           /* some tenant on it */
    bool mixed_tenants;
} gpu_books;

/* Records the first problem and leaves the check (freeing before failing,
 * so that a failing test does not also report leaks under ASan). */
#define PROBLEM(...)                                          \
    do {                                                      \
        snprintf(problem, sizeof problem, __VA_ARGS__);       \
        goto done;                                            \
    } while (0)

void sb_assert_sharing_consistent(const tb_world *w, int64_t gpu_mem_mib)
{
    char problem[512] = "";
    size_t n_gpus = gp_engine_gpu_count(w->e);
    gpu_books *books = calloc(n_gpus + 1, sizeof *books);
    gp_slice *slices = calloc(GP_MAX_REPLICAS, sizeof *slices);
    assert_non_null(books);
    assert_non_null(slices);
    for (size_t g = 0; g < n_gpus; g++) {
        books[g].untrusted_tenant = UINT32_MAX;
        books[g].tenant = UINT32_MAX;
    }
    for (size_t i = 0; i < w->n_jobs; i++) {
        gp_job_info info;
        if (gp_engine_job_info(w->e, w->jobs[i], &info, NULL) != GP_OK)
            continue;
        bool holds = info.state == GP_JOB_ADMITTED || info.state == GP_JOB_RUNNING ||
                     info.state == GP_JOB_PREEMPTING;
        size_t n = gp_engine_job_slices(w->e, w->jobs[i], slices, GP_MAX_REPLICAS);
        if (!holds || n == 0)
            continue;
        if (n != (size_t)info.replicas)
            PROBLEM("job %llu: %zu slices for %d replicas", (unsigned long long)w->jobs[i], n, info.replicas);
        gp_tenant_info t;
        assert_true(gp_engine_tenant_get(w->e, info.tenant, &t));
        char org[GP_PATH_MAX];
        org_of(t.path, org, sizeof org);
        for (size_t r = 0; r < n; r++) {
            gp_gpu_info gi = tb_gpu(w, slices[r].gpu);
            gpu_books *b = &books[slices[r].gpu];
            gp_sharing want = slices[r].kind == GP_ISO_MIG   ? GP_SHARING_MIG
                              : slices[r].kind == GP_ISO_MPS ? GP_SHARING_MPS
                                                             : GP_SHARING_TIMESLICE;
            if (gi.sharing != want)
                PROBLEM("job %llu has a %s slice on a GPU in another mode", (unsigned long long)w->jobs[i],
                         gp_isolation_name(slices[r].kind));
            if (gi.job != 0)
                PROBLEM("GPU %u has a whole-GPU owner and a slice", (unsigned)slices[r].gpu);
            if (slices[r].kind != GP_ISO_MIG && b->jobs > 0 && strcmp(b->org, org) != 0)
                PROBLEM("orgs %s and %s share GPU %u", b->org, org, (unsigned)slices[r].gpu);
            if (b->tenant != UINT32_MAX && b->tenant != info.tenant)
                b->mixed_tenants = true;
            b->tenant = info.tenant;
            if (t.untrusted && info.state != GP_JOB_PREEMPTING && slices[r].kind != GP_ISO_MIG)
                PROBLEM("job %llu of untrusted %s runs a %s slice", (unsigned long long)w->jobs[i], t.path,
                         gp_isolation_name(slices[r].kind));
            if (t.untrusted && info.state != GP_JOB_PREEMPTING) /* in its grace it is leaving */
                b->untrusted_tenant = info.tenant;
            snprintf(b->org, sizeof b->org, "%s", org);
            b->milli += slices[r].milli;
            b->jobs++;
            if (slices[r].kind == GP_ISO_MPS)
                b->mem += slices[r].gpu_mem_mib;
        }
    }
    for (uint32_t g = 0; g < n_gpus; g++) {
        gp_gpu_info gi = tb_gpu(w, g);
        gpu_books *b = &books[g];
        if (gi.sharing == GP_SHARING_EXCLUSIVE) {
            if (b->jobs)
                PROBLEM("exclusive GPU %u holds slices", (unsigned)g);
            continue;
        }
        if (gi.used_milli != b->milli || gi.jobs != b->jobs)
            PROBLEM("GPU %u: used_milli %d, jobs %d; the slices on it say %d, %d", (unsigned)g, gi.used_milli,
                     gi.jobs, b->milli, b->jobs);
        if (gi.used_milli > 1000)
            PROBLEM("GPU %u is shared beyond 1000 milli (%d)", (unsigned)g, gi.used_milli);
        if (gi.sharing == GP_SHARING_MPS && gpu_mem_mib > 0 && b->mem > gpu_mem_mib)
            PROBLEM("GPU %u: MPS memory limits %lld > %lld MiB", (unsigned)g, (long long)b->mem,
                     (long long)gpu_mem_mib);
        if (b->untrusted_tenant != UINT32_MAX && b->mixed_tenants)
            PROBLEM("GPU %u: an untrusted tenant shares it with another tenant", (unsigned)g);
        if (gi.sharing == GP_SHARING_MPS || gi.sharing == GP_SHARING_TIMESLICE) {
            if (strcmp(gi.trust_domain, b->jobs ? b->org : "") != 0)
                PROBLEM("GPU %u: trust_domain \"%s\", its slices are of org \"%s\"", (unsigned)g, gi.trust_domain,
                         b->jobs ? b->org : "");
        }
    }
done:
    free(books);
    free(slices);
    if (problem[0] != '\0')
        fail_msg("%s", problem);
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = gp_engine_check_invariants(w->e, &err);
    if (rc != GP_OK)
        fail_msg("gp_engine_check_invariants: %s (%s: %s)", gp_err_name(rc), err.field, err.message);
}

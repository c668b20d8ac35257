/* tiny_world.h - the one-node world the simulator's hand-checked tests
 * run on: one node of 8 H100, an optional tenant file, a trace built job
 * by job.  Header-only (static inline) for the tests in tests/sim; the
 * caller owns the tiny and frees it with tiny_free.  Include it after
 * <cmocka.h> (it asserts).
 */
#ifndef GP_TESTS_SIM_TINY_WORLD_H
#define GP_TESTS_SIM_TINY_WORLD_H

#include <string.h>

#include "config/fleet_file.h"
#include "config/tenant_file.h"
#include "sim/trace.h"

typedef struct tiny {
    gp_fleet_file fleet;
    gp_tenant_file tenants; /* n_tenants 0: none given */
    gp_trace trace;
} tiny;

/* tenants_yaml: a tenant file, or NULL for none. */
static inline void tiny_init(tiny *w, const char *tenants_yaml)
{
    const char *fleet = "nodes: [{name: n, gpu_type: H100, gpus: 8, cpu_millis: 64000, mem_mib: 65536}]\n";
    gp_error err;
    assert_int_equal(gp_fleet_file_parse(fleet, strlen(fleet), "fleet", &w->fleet, &err), GP_OK);
    memset(&w->tenants, 0, sizeof w->tenants);
    if (tenants_yaml)
        assert_int_equal(gp_tenant_file_parse(tenants_yaml, strlen(tenants_yaml), "tenants", &w->tenants, &err),
                         GP_OK);
    gp_trace_init(&w->trace);
}

/* One job of one replica of `gpus` whole GPUs (any type), 1 CPU, 1 GiB. */
static inline void tiny_job(tiny *w, const char *tenant, int64_t submit, int gpus, int64_t duration)
{
    gp_trace_job j;
    memset(&j, 0, sizeof j);
    assert_true(gp_trace_tenant(&w->trace, tenant, &j.tenant));
    j.submit = submit;
    j.duration = duration;
    j.replicas = 1;
    j.gpus = gpus;
    j.cpu_millis = 1000;
    j.mem_mib = 1024;
    assert_int_equal(gp_trace_add(&w->trace, &j, NULL), GP_OK);
}

static inline void tiny_free(tiny *w)
{
    gp_fleet_file_free(&w->fleet);
    gp_tenant_file_free(&w->tenants);
    gp_trace_free(&w->trace);
}

#endif

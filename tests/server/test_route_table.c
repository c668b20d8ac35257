/* test_route_table.c - the one route table (router.c) as the request
 * metrics read it, and the store url read by the store alone (store.h).
 *
 * Every endpoint's path gives its own pattern (so dispatch and labels
 * cannot drift apart: both read the table); a path no route takes is
 * "unknown", never the path itself (a label per job id would grow
 * /metrics without bound).  gp_store_file names the SQLite file of a
 * "sqlite:" url and nothing for PostgreSQL; gp_store_file_beside puts
 * admin.token and secret.key in that file's folder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "server/api.h"

static void every_endpoint_is_counted_under_its_pattern(void **state)
{
    (void)state;
    static const char *const CASES[][2] = {
        {"/", "/"},
        {"/metrics", "/metrics"},
        {"/v1/health", "/v1/health"},
        {"/v1/jobs", "/v1/jobs"},
        {"/v1/jobs:batch", "/v1/jobs:batch"},
        {"/v1/jobs/42", "/v1/jobs/{id}"},
        {"/v1/jobs/42/logs", "/v1/jobs/{id}/logs"},
        {"/v1/tenants:apply", "/v1/tenants:apply"},
        {"/v1/tenants/research/nlp", "/v1/tenants/{path}"},
        {"/v1/nodes/n1", "/v1/nodes/{name}"},
        {"/v1/nodes/n1/drain", "/v1/nodes/{name}/drain"},
        {"/v1/nodes/n1/approve", "/v1/nodes/{name}/approve"},
        {"/v1/nodes/n1/checks", "/v1/nodes/{name}/checks"},
        {"/v1/agents:register", "/v1/agents:register"},
        {"/v1/agents/n1/assignments", "/v1/agents/{node}/assignments"},
        {"/v1/agents/n1/heartbeat", "/v1/agents/{node}/heartbeat"},
        {"/v1/agents/n1/reports", "/v1/agents/{node}/reports"},
        {"/v1/agents/n1/logs", "/v1/agents/{node}/logs"},
        {"/v1/usage/underdriven", "/v1/usage/underdriven"},
        {"/v1/ledger/verify", "/v1/ledger/verify"},
        {"/v1/prices/modes/acme", "/v1/prices/modes/{org}"},
        {"/v1/tokens/abc", "/v1/tokens/{id}"},
        {"/v1/users/alice", "/v1/users/{name}"},
        {"/v1/secrets/db-pass", "/v1/secrets/{name}"},
        {"/web/css/site.css", "/web/{file}"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        assert_string_equal(gp_api_route_pattern(CASES[i][0]), CASES[i][1]);
}

static void a_path_no_route_takes_is_unknown(void **state)
{
    (void)state;
    static const char *const PATHS[] = {"/v1/nothing", "/v1/jobs/42/other", "/v1/agents/n1/other", "/v1/agents",
                                        "/v1/secrets/a/b", "/v1/prices/modes/", "/v1/agents//heartbeat", "/metricsX"};
    for (size_t i = 0; i < sizeof PATHS / sizeof PATHS[0]; i++)
        assert_string_equal(gp_api_route_pattern(PATHS[i]), "unknown");
}

static void the_store_url_is_read_by_the_store(void **state)
{
    (void)state;
    char out[256];
    assert_string_equal(gp_store_file("sqlite:/var/lib/gpupool/gpupool.db"), "/var/lib/gpupool/gpupool.db");
    assert_null(gp_store_file("postgresql://gpupool@db1/gpupool"));
    assert_null(gp_store_file("host=db1 dbname=gpupool"));
    assert_true(gp_store_file_beside("sqlite:/var/lib/gpupool/gpupool.db", "admin.token", out, sizeof out));
    assert_string_equal(out, "/var/lib/gpupool/admin.token");
    assert_true(gp_store_file_beside("sqlite:gpupool.db", "secret.key", out, sizeof out));
    assert_string_equal(out, "secret.key");
    assert_false(gp_store_file_beside("postgresql://db1/gpupool", "admin.token", out, sizeof out));
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_endpoint_is_counted_under_its_pattern),
        cmocka_unit_test(a_path_no_route_takes_is_unknown),
        cmocka_unit_test(the_store_url_is_read_by_the_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* fuzz_job_json.c - libFuzzer target: POST /v1/jobs bodies.
 *
 * The bytes go through what the API does with a submit body: the body
 * parser (depth limit, UTF-8, duplicates), the strict job parser, then the
 * canonical form the event log keeps, which must parse back to the same
 * canonical form (a replay must see what the live run saw), and finally
 * the engine's own submit on a small fleet.  Any crash, sanitizer report
 * or round-trip mismatch is a finding.
 */
#include "core/engine.h"
#include "server/json_input.h"
#include "server/spec_json.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static gp_engine *fleet(void)
{
    static gp_engine *e;
    if (e)
        return e;
    e = gp_engine_new(NULL);
    gp_node_spec n = {.name = "n0", .zone = "z", .block = "b", .gpu_type = "H100", .gpu_count = 8,
                      .nvlink_domains = 1, .gpu_mem_mib = 81920, .cpu_millis = 64000, .mem_mib = 1 << 20};
    gp_engine_node_add(e, &n, 0, NULL);
    gp_tenant_spec t = {.lend = -1};
    gp_engine_tenant_set(e, "org", &t, 0, NULL);
    gp_engine_tenant_set(e, "org/team", &t, 0, NULL);
    return e;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    json_t *body;
    if (gp_json_parse_body((const char *)data, size, &body, NULL) != GP_OK)
        return 0;
    gp_job_request req;
    static uint64_t next_id = 1;
    if (gp_job_request_parse(body, true, &req, NULL) == GP_OK) {
        if (req.spec.id == 0) /* the journal sets the id before logging */
            req.spec.id = next_id++;
        json_t *canon = gp_job_request_to_json(&req);
        gp_job_request again;
        if (gp_job_request_parse(canon, true, &again, NULL) != GP_OK)
            abort();
        json_t *canon2 = gp_job_request_to_json(&again);
        if (!json_equal(canon, canon2))
            abort();
        json_decref(canon);
        json_decref(canon2);
        gp_job_request_free(&again);
        req.spec.id = next_id++; /* unique in this engine */
        gp_engine *e = fleet();
        if (gp_engine_job_submit(e, &req.spec, 1, NULL) == GP_OK) {
            gp_engine_tick(e, 1, NULL);
            gp_engine_job_cancel(e, req.spec.id, 1, NULL);
            gp_engine_tick(e, 1000000, NULL);
            gp_engine_job_forget(e, req.spec.id, NULL);
            gp_engine_decisions_clear(e);
        }
    }
    gp_job_request_free(&req);
    json_decref(body);
    return 0;
}

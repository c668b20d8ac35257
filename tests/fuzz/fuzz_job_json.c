/* fuzz_job_json.c - libFuzzer target: POST /v1/jobs bodies.
 *
 * The bytes go through what the API does with a submit body: the body
 * parser (depth limit, UTF-8, duplicates), the strict job parser, then the
 * canonical form the event log keeps, which must parse back to the same
 * canonical form (a replay must see what the live run saw), and finally
 * the engine: submit, a scheduling pass, cancel, the pass that ends the
 * grace, forget, with the engine's invariant check after each pass.  Any
 * crash, sanitizer report, round-trip mismatch or invariant violation is a
 * finding.
 *
 * Each input gets a fresh engine at t = 0 (gp_fuzz_fleet: exclusive, MPS,
 * MIG and time-sliced GPUs, so that every isolation can be placed): an
 * engine shared between inputs would carry the clock and state of the
 * inputs before it, and once its clock had passed an input's times every
 * submit was refused as "time went backwards", leaving the engine stage
 * unexercised after the first seed.  gp_fuzz_reached_engine() reports
 * whether the last input was submitted and scheduled (fuzz_replay.c
 * requires it of every seed).
 */
#include "core/engine.h"
#include "fuzz_harness.h"
#include "spec/json_input.h"
#include "spec/spec_json.h"

#include <stdlib.h>

enum { SUBMIT_T = 1, END_T = 1000000 };

static bool reached_engine;

bool gp_fuzz_reached_engine(void)
{
    return reached_engine;
}

/* The shared fleet (fuzz_fleet.c) and tenant org/team with no floor or
 * limit. */
static gp_engine *fresh_engine(void)
{
    gp_engine *e = gp_fuzz_fleet();
    gp_tenant_spec t = {.lend = -1};
    if (gp_engine_tenant_set(e, "org", &t, 0, NULL) != GP_OK ||
        gp_engine_tenant_set(e, "org/team", &t, 0, NULL) != GP_OK)
        abort();
    return e;
}

/* Submit, schedule, cancel, let the grace run out, forget.  True when the
 * engine accepted the job and every pass ran. */
static bool run_engine(const gp_job_spec *spec)
{
    gp_engine *e = fresh_engine();
    bool ok = gp_engine_job_submit(e, spec, SUBMIT_T, NULL) == GP_OK && gp_engine_tick(e, SUBMIT_T, NULL) == GP_OK;
    if (ok) {
        gp_fuzz_check_invariants(e);
        ok = gp_engine_job_cancel(e, spec->id, SUBMIT_T, NULL) == GP_OK && gp_engine_tick(e, END_T, NULL) == GP_OK;
        gp_fuzz_check_invariants(e);
        ok = ok && gp_engine_job_forget(e, spec->id, NULL) == GP_OK;
    }
    gp_engine_free(e);
    return ok;
}

/* The API's path: parse, canonical form, parse again; abort() when the
 * canonical form does not round-trip. */
static void check_round_trip(const gp_job_request *req)
{
    json_t *canon = gp_job_request_to_json(req);
    gp_job_request again;
    if (gp_job_request_parse(canon, true, &again, NULL) != GP_OK)
        abort();
    json_t *canon2 = gp_job_request_to_json(&again);
    if (!json_equal(canon, canon2))
        abort();
    json_decref(canon);
    json_decref(canon2);
    gp_job_request_free(&again);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    reached_engine = false;
    json_t *body;
    if (gp_json_parse_body((const char *)data, size, &body, NULL) != GP_OK)
        return 0;
    gp_job_request req;
    if (gp_job_request_parse(body, true, &req, NULL) == GP_OK) {
        if (req.spec.id == 0) /* the journal sets the id before logging */
            req.spec.id = 1;
        check_round_trip(&req);
        reached_engine = run_engine(&req.spec);
    }
    gp_job_request_free(&req);
    json_decref(body);
    return 0;
}

/* fuzz_event.c - libFuzzer target: the event log's decoder and apply step.
 *
 * An input is one logged event: its kind on the first line, its payload
 * after it ("cancel\n{\"id\":1}").  It goes through what a replay does with
 * a row of the log: decode (version 1), the apply step in replay mode on a
 * fresh engine, the digest of its decisions and settle, with the engine's
 * invariant check; and for an event the engine accepted (only those are
 * ever logged) the canonical encoding must decode back to the same
 * encoding (the live run and a replay feed the engine the same values).
 * A crash, sanitizer report, round-trip mismatch or invariant violation
 * is a finding.
 *
 * The engine (gp_fuzz_fleet) holds tenants org, org/team and org/empty
 * and job 1 (org/team, 1 GPU, running) at t = 1, so that every kind has a
 * seed the engine accepts; gp_fuzz_reached_engine() says whether the last
 * input was applied (fuzz_replay.c requires it of every seed).
 */
#include "eventlog/replayer.h"
#include "fuzz_harness.h"

#include <stdlib.h>
#include <string.h>

static bool reached_engine;

bool gp_fuzz_reached_engine(void)
{
    return reached_engine;
}

/* A replayer around the fuzz fleet with the tenants and job 1. */
static void fresh_replayer(gp_replayer *r)
{
    memset(r, 0, sizeof *r);
    r->engine = gp_fuzz_fleet();
    r->pools = json_object();
    r->next_job_id = 2;
    gp_tenant_spec t = {.lend = -1};
    gp_job_spec job = {.id = 1, .tenant = "org/team", .replicas = 1, .gpus = 1, .checkpoint_grace_s = 5};
    if (gp_engine_tenant_set(r->engine, "org", &t, 0, NULL) != GP_OK ||
        gp_engine_tenant_set(r->engine, "org/team", &t, 0, NULL) != GP_OK ||
        gp_engine_tenant_set(r->engine, "org/empty", &t, 0, NULL) != GP_OK ||
        gp_engine_job_submit(r->engine, &job, 1, NULL) != GP_OK || gp_engine_tick(r->engine, 1, NULL) != GP_OK)
        abort();
    gp_engine_decisions_clear(r->engine);
}

/* encode(decode(encode(ev))) == encode(ev) */
static void check_round_trip(const char *kind, const gp_event *ev)
{
    char *text = gp_event_encode(ev);
    gp_event again;
    if (!text || gp_event_decode(kind, GP_EVENT_VERSION, text, ev->time, &again, NULL) != GP_OK)
        abort();
    char *text2 = gp_event_encode(&again);
    if (!text2 || strcmp(text, text2) != 0)
        abort();
    free(text);
    free(text2);
    gp_event_free(&again);
}

static void apply(const gp_event *ev)
{
    gp_replayer r;
    bool logged;
    fresh_replayer(&r);
    if (gp_replayer_apply(&r, ev, GP_APPLY_REPLAY, &logged, NULL) == GP_OK) {
        int64_t count;
        char digest[65];
        if (gp_replayer_digest(&r, &count, digest, NULL) != GP_OK)
            abort();
        gp_replayer_settle(&r);
        gp_fuzz_check_invariants(r.engine);
        reached_engine = true;
    }
    gp_replayer_free(&r);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    reached_engine = false;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *nl = strchr(text, '\n');
    if (nl) {
        *nl = '\0';
        gp_event ev;
        if (gp_event_decode(text, 1, nl + 1, 2, &ev, NULL) == GP_OK) {
            apply(&ev);
            if (reached_engine)
                check_round_trip(text, &ev);
            gp_event_free(&ev);
        }
    }
    free(text);
    return 0;
}

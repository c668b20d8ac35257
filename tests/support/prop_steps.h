/* prop_steps.h - steps the fence property tests (dedicated nodes, owned
 * pools) take alike on an engine and the ids of the jobs they submitted:
 * a tick, finishing one job, a snapshot round trip, and the progress check
 * at the end.  Each fails the test (cmocka fail_msg, prefixed with
 * `where`) when the engine refuses.  Nothing here allocates what the
 * caller must free; gp_prop_snapshot_swap frees the engine it replaces. */
#ifndef GP_TESTS_PROP_STEPS_H
#define GP_TESTS_PROP_STEPS_H

#include "core/engine.h"

/* A pass at now, decisions dropped. */
void gp_prop_tick(gp_engine *e, int64_t now, const char *where);
/* Job id finishes (succeeded) at now if it runs; nothing otherwise. */
void gp_prop_finish_if_running(gp_engine *e, uint64_t id, int64_t now, const char *where);
/* *e replaced by its snapshot read back (cfg: the engine's settings, NULL: defaults). */
void gp_prop_snapshot_swap(gp_engine **e, const gp_engine_config *cfg, const char *where);
/* progress: finishing every running job and ticking every `step` seconds,
 * round after round, places every job of ids; check(ctx) runs after each
 * tick.  Fails naming the first job never placed and why it waits. */
void gp_prop_progress(gp_engine *e, const uint64_t *ids, size_t n, int64_t *now, int64_t step,
                      void (*check)(void *ctx), void *ctx, const char *where);

#endif

/* fuzz_harness.h - what every fuzz target in tests/fuzz exports.
 *
 * LLVMFuzzerTestOneInput() is libFuzzer's entry point; fuzz_replay.c calls
 * the same function for each corpus file when the target is built without
 * libFuzzer (gcc, the ASan tree).  gp_fuzz_reached_engine() says whether
 * the last input got through the parsers and was accepted by the engine
 * stage: the replay test requires it of every seed, so that a harness
 * whose engine stage refuses everything (as a shared engine whose clock
 * had run past the next input's time once did) fails instead of passing
 * while fuzzing only the parsers.
 *
 * fuzz_fleet.c: gp_fuzz_fleet() returns a new engine (the caller frees it)
 * holding the small fleet every target runs on; gp_fuzz_check_invariants()
 * aborts when the engine's invariant check fails (a finding).
 */
#ifndef GP_TESTS_FUZZ_HARNESS_H
#define GP_TESTS_FUZZ_HARNESS_H

#include "core/engine.h"

#include <stdbool.h>
#include <stddef.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
bool gp_fuzz_reached_engine(void);

gp_engine *gp_fuzz_fleet(void);
void gp_fuzz_check_invariants(const gp_engine *e);

#endif

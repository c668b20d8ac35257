/* world.h - gpupoold's journal (server/journal.h) over a fresh SQLite
 * store, driven in engine time, for the tests of tests/server: tenants,
 * nodes, pools, submits, ticks and agent reports at explicit `now` values,
 * each in its own transaction as gpupoold does.
 *
 * Every helper fails the running cmocka test on an error.  world_setup
 * and world_teardown are cmocka fixtures (the world is *state).
 */
#ifndef GP_TESTS_SERVER_WORLD_H
#define GP_TESTS_SERVER_WORLD_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "server/journal.h"
#include "spec/spec_json.h"

typedef struct world {
    char dir[64];
    char path[96];
    gp_store *store;
    gp_journal journal;
} world;

int world_setup(void **state);
int world_teardown(void **state);

/* Fails the test when rc is not GP_OK, with err's message. */
void check(gp_err rc, const gp_error *err, const char *what);
/* Commits (or, when rc failed, rolls back and fails the test). */
void commit(world *w, gp_err rc, gp_error *err, const char *what);
/* JSON text written in a test; a new reference. */
json_t *parse(const char *text);

void tenant(world *w, const char *path, const char *spec_text, int64_t now);
void node(world *w, const char *spec_text, int64_t now);
void pool(world *w, const char *spec_text, int64_t now);
/* Submits the job and runs the scheduling pass of its batch; its id. */
uint64_t submit(world *w, const char *job_text, int64_t now);
void tick(world *w, int64_t now);
void node_lost(world *w, const char *name, int64_t now);
void gpu_failed(world *w, const char *name, int index, int64_t now);
/* The agent reports the job's only replica exited 0 (on node). */
void exit_ok(world *w, uint64_t id, const char *node_name, int64_t now);
gp_job_state job_state(world *w, uint64_t id);

#endif

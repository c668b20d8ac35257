/* store_fixture.h - one fresh store per case for the store suites
 * (test_store.c, test_store_access.c, test_store_ledger.c), on either
 * database: GP_TEST_STORE_URL unset, a new temporary SQLite file; a
 * PostgreSQL URL, whose public schema is dropped and made again.
 *
 * fresh_store allocates the fixture and opens its store; close_store
 * closes it, removes the SQLite files and frees the fixture.
 */
#ifndef GP_TEST_STORE_FIXTURE_H
#define GP_TEST_STORE_FIXTURE_H

#include "store/store.h"

#include <stdbool.h>

typedef struct fixture {
    char url[512];
    char dir[64]; /* SQLite: the case's temporary directory, "" on PostgreSQL */
    gp_store *s;
} fixture;

bool on_postgres(const fixture *f);
/* db.h under the store, for what store.h does not offer. */
void raw_exec(const fixture *f, const char *sql);
/* The fixture's store opened again (the caller closes it). */
gp_store *open_store(const fixture *f, bool readonly);
int fresh_store(void **state);
int close_store(void **state);

/* OK(call): the call (which passes &e_ as its gp_error) must succeed;
 * else the case fails with the store's message. */
#define OK(call)                                                                                                  \
    do {                                                                                                          \
        gp_error e_ = {0};                                                                                        \
        if ((call) != GP_OK)                                                                                      \
            fail_msg("%s: %s", #call, e_.message);                                                                \
    } while (0)

/* An audit row of action (ann, admin, job 1) appended to s. */
void append_audit(gp_store *s, const char *action);
/* A ledger record packed from fmt (jansson's json_pack) appended to s. */
void append_record(gp_store *s, const char *fmt, ...);

#define CASE(name) cmocka_unit_test_setup_teardown(name, fresh_store, close_store)

#endif

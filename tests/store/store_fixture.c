/* store_fixture.c - one fresh store per case for the store suites (store_fixture.h). */
#include "store_fixture.h"

#include "dbtest.h"
#include "store/db.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

bool on_postgres(const fixture *f) { return strncmp(f->url, "sqlite:", 7) != 0; }

void raw_exec(const fixture *f, const char *sql)
{
    gp_db *db = dbtest_open(f->url, false);
    dbtest_exec(db, sql);
    gp_db_close(db);
}

gp_store *open_store(const fixture *f, bool readonly)
{
    gp_store *s = NULL;
    gp_error err = {0};
    if (gp_store_open(f->url, readonly, &s, &err) != GP_OK)
        fail_msg("store open %s: %s", f->url, err.message);
    return s;
}

int fresh_store(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *url = getenv("GP_TEST_STORE_URL");
    if (url && *url && strncmp(url, "sqlite:", 7) != 0) {
        snprintf(f->url, sizeof f->url, "%s", url);
        raw_exec(f, "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    } else {
        snprintf(f->dir, sizeof f->dir, "/tmp/gp-test-store-XXXXXX");
        if (!mkdtemp(f->dir))
            return -1;
        snprintf(f->url, sizeof f->url, "sqlite:%s/store.db", f->dir);
    }
    f->s = open_store(f, false);
    *state = f;
    return 0;
}

int close_store(void **state)
{
    fixture *f = *state;
    gp_store_close(f->s);
    if (f->dir[0]) {
        const char *suffixes[] = {"", "-wal", "-shm"};
        for (int i = 0; i < 3; i++) {
            char path[600];
            snprintf(path, sizeof path, "%s%s", f->url + 7, suffixes[i]);
            remove(path);
        }
        remove(f->dir);
    }
    free(f);
    return 0;
}

void append_audit(gp_store *s, const char *action)
{
    gp_store_audit a = {.time = 100, .request_id = "r1", .actor = "ann", .role = "admin", .action = action,
                        .target = "job 1", .result = "ok"};
    OK(gp_store_audit_append(s, &a, &e_));
}

void append_record(gp_store *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *rec = json_vpack_ex(NULL, 0, fmt, ap);
    va_end(ap);
    assert_non_null(rec);
    OK(gp_store_ledger_append(s, rec, &e_));
    json_decref(rec);
}

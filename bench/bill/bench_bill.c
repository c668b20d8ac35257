/* bench_bill.c - how long a month's bill takes (issue 15: <= 2 s for 300
 * tenants and 900,000 jobs' records).
 *
 * Builds a store fast, with direct inserts in one transaction: 10 orgs of
 * 29 teams each (300 tenants; every org and one team in three hold an
 * H100 guarantee), capacity records for 4 GPU models, and per job an open
 * and a close record in 2026-11 (1% still running: an open record only),
 * i.e. about 1.8 M ledger rows with their typed columns (the record text
 * is a stand-in: the bill reads the columns, never the text), and each
 * job's usage row (the open ones are how the store finds running
 * intervals).  Then times
 * what GET /v1/bill does on a reader connection: the price table, the
 * period's rows (store_ledger.c), the bill's JSON (metering/bill.h).
 *
 *     bench_bill [--jobs N] [--db PATH]      (default 900000, a temp file;
 *                                            a PATH that exists is billed as it is)
 *
 * Prints what it built and the time, last line JSON:
 *     {"bench":"bill","tenants":300,"jobs":900000,"ledger_rows":1800043,"build_s":...,"bill_s":...}
 */
#include "metering/bill.h"
#include "store/store.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T0 INT64_C(1793491200) /* 2026-11-01 */
#define MONTH (30 * 86400)
#define ORGS 10
#define TEAMS 29

static const char *const MODELS[] = {"H100", "A100", "L40S", "B200"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void die(const char *what, sqlite3 *db)
{
    fprintf(stderr, "bench_bill: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
    exit(1);
}

typedef struct row {
    int64_t seq, interval, job, milli, start, end;
    const char *kind, *tenant, *user, *type, *share, *cls, *topology;
} row;

static void insert(sqlite3_stmt *st, const row *r)
{
    sqlite3_bind_int64(st, 1, r->seq);
    sqlite3_bind_int64(st, 2, r->interval);
    sqlite3_bind_text(st, 3, r->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, "{}", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, "-", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, r->job);
    sqlite3_bind_text(st, 7, r->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, r->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 9, r->type, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 10, r->milli);
    sqlite3_bind_text(st, 11, r->share, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 12, r->cls, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 13, r->topology, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 14, r->start);
    if (r->end >= 0)
        sqlite3_bind_int64(st, 15, r->end);
    else
        sqlite3_bind_null(st, 15);
    if (sqlite3_step(st) != SQLITE_DONE)
        die("insert", sqlite3_db_handle(st));
    sqlite3_reset(st);
}

/* The tenants: "orgNN" and "orgNN/teamNN"; 300 paths. */
static void tenant_path(int i, char *buf, size_t cap)
{
    int org = i / (TEAMS + 1), team = i % (TEAMS + 1);
    if (team == 0)
        snprintf(buf, cap, "org%02d", org);
    else
        snprintf(buf, cap, "org%02d/team%02d", org, team - 1);
}

/* The job's usage row, as the journal keeps it beside the ledger. */
static void insert_usage(sqlite3_stmt *st, const row *r)
{
    sqlite3_bind_int64(st, 1, r->interval);
    sqlite3_bind_int64(st, 2, r->job);
    sqlite3_bind_text(st, 3, r->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->type, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, r->milli);
    sqlite3_bind_text(st, 6, r->cls, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, r->topology, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, r->start);
    if (r->end >= 0)
        sqlite3_bind_int64(st, 9, r->end);
    else
        sqlite3_bind_null(st, 9);
    if (sqlite3_step(st) != SQLITE_DONE)
        die("insert usage", sqlite3_db_handle(st));
    sqlite3_reset(st);
}

static int64_t build(sqlite3 *db, long jobs)
{
    static const char *const shares[] = {"whole", "whole", "whole", "mig", "mps", "timeslice"};
    static const int64_t share_milli[] = {1000, 2000, 8000, 142, 250, 333};
    char paths[ORGS * (TEAMS + 1)][32];
    for (int i = 0; i < ORGS * (TEAMS + 1); i++)
        tenant_path(i, paths[i], sizeof paths[i]);
    sqlite3_stmt *st, *use;
    if (sqlite3_exec(db, "PRAGMA synchronous=OFF; BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO usage(interval_id, job_id, tenant, gpu_type, milli_gpus, class, topology,"
                           " start, end_time) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                           -1, &use, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO ledger(seq, interval_id, kind, record, hash, job, tenant, user, gpu_type,"
                           " milli_gpus, share, class, topology, start, end_time)"
                           " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                           -1, &st, NULL) != SQLITE_OK)
        die("prepare", db);
    int64_t seq = 0;
    for (int m = 0; m < 4; m++)
        insert(st, &(row){.seq = ++seq, .kind = "capacity", .type = MODELS[m], .milli = 8000000, .start = T0 - 86400,
                          .end = -1});
    for (int i = 0; i < ORGS * (TEAMS + 1); i++)
        if (i % 3 == 0)
            insert(st, &(row){.seq = ++seq, .kind = "guarantee", .tenant = paths[i], .type = "H100",
                              .milli = i % (TEAMS + 1) == 0 ? 400000 : 40000, .start = T0 - 86400, .end = -1});
    for (long j = 1; j <= jobs; j++) {
        int t = (int)(next_random() % (ORGS * (TEAMS + 1)));
        int s = (int)(next_random() % 6);
        int64_t start = T0 + (int64_t)(next_random() % MONTH);
        int64_t end = start + 600 + (int64_t)(next_random() % (6 * 3600));
        row r = {.interval = j, .job = j, .tenant = paths[t], .user = "user", .type = MODELS[next_random() % 4],
                 .share = shares[s], .milli = share_milli[s], .cls = t % 3 == 0 ? "guaranteed" : "burstable",
                 .topology = j % 5 == 0 ? "nvlink" : "any", .start = start, .end = -1, .kind = "open"};
        r.seq = ++seq;
        insert(st, &r);
        if (j % 100 != 0) { /* else still running */
            r.seq = ++seq;
            r.kind = "close";
            r.end = end;
            insert(st, &r);
        }
        insert_usage(use, &r);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(use);
    if (sqlite3_exec(db,
                     "INSERT INTO prices(effective, currency, version_json, created) VALUES(1793491200, 'USD',"
                     " '{\"effective\":1793491200,\"gpu_types\":{\"A100\":\"1.20\",\"H100\":\"2.50\",\"L40S\":\"0.90\"},"
                     "\"premium\":{\"nvlink\":\"1.10\"}}', 0);"
                     "INSERT INTO bill_modes(org, mode, updated) VALUES('org00', 'chargeback', 0);"
                     "COMMIT",
                     NULL, NULL, NULL) != SQLITE_OK)
        die("commit", db);
    return seq;
}

static gp_err feed(void *ctx, const gp_bill_record *r, gp_error *err)
{
    return gp_bill_add(ctx, r, err);
}

static gp_err store_source(void *ctx, gp_bill *b, int64_t from, int64_t as_of, gp_error *err)
{
    return gp_store_bill_records(ctx, from, as_of, feed, b, err);
}

/* What GET /v1/bill does (api_bill.c), on a reader connection. */
static json_t *bill(const char *url, gp_error *err)
{
    gp_store *s;
    if (gp_store_open(url, true, &s, err) != GP_OK)
        return NULL;
    json_t *prices = NULL, *out = NULL;
    gp_bill_query q = {.period = "2026-11", .as_of = T0 + MONTH, .fleet = true};
    if (gp_store_prices_get(s, &prices, err) == GP_OK)
        gp_bill_run(prices, &q, store_source, s, &out, NULL, err);
    json_decref(prices);
    gp_store_close(s);
    return out;
}

int main(int argc, char **argv)
{
    long jobs = 900000;
    const char *path = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--jobs") == 0)
            jobs = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--db") == 0)
            path = argv[i + 1];
    }
    char tmp[] = "/tmp/bench_bill_XXXXXX", file[128], url[160];
    if (!path) {
        if (!mkdtemp(tmp))
            die("mkdtemp", NULL);
        snprintf(file, sizeof file, "%s/gpupool.db", tmp);
        path = file;
    }
    snprintf(url, sizeof url, "sqlite:%s", path);
    bool reuse = access(path, F_OK) == 0;
    gp_error err;
    gp_store *w;
    if (gp_store_open(url, false, &w, &err) != GP_OK) {
        fprintf(stderr, "bench_bill: %s\n", err.message);
        return 1;
    }
    gp_store_close(w);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        die("open", db);
    double t0 = now_s();
    int64_t rows = reuse ? 0 : build(db, jobs);
    double built = now_s() - t0;
    sqlite3_close(db);
    t0 = now_s();
    json_t *out = bill(url, &err);
    double took = now_s() - t0;
    if (!out) {
        fprintf(stderr, "bench_bill: %s\n", err.message);
        return 1;
    }
    size_t tenants = json_array_size(json_object_get(out, "tenants"));
    printf("built %lld ledger rows for %ld jobs in %.1f s; the bill of 2026-11 for %zu tenants took %.3f s\n",
           (long long)rows, jobs, built, tenants, took);
    printf("{\"bench\":\"bill\",\"tenants\":%zu,\"jobs\":%ld,\"ledger_rows\":%lld,\"build_s\":%.1f,\"bill_s\":%.3f}\n",
           tenants, jobs, (long long)rows, built, took);
    json_decref(out);
    if (path == file) {
        unlink(file);
        char side[160];
        snprintf(side, sizeof side, "%s-wal", file);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", file);
        unlink(side);
        rmdir(tmp);
    }
    return 0;
}

/* bill.h - a month's bill from the usage ledger and the price table alone.
 *
 * gpupoold (GET /v1/bill) and the offline `gpupool bill --ledger FILE
 * --prices FILE` both feed the ledger's records to the same functions, so
 * the two answer the same bill to the digit.  docs/metering.md ("Prices
 * and bills") is the specification; bill.c's header has the worked
 * example.
 *
 *     gp_bill *b;
 *     gp_bill_new(&prices, &(gp_bill_query){.period = "2026-11", .as_of = now, .fleet = true}, &b, &err);
 *     for each ledger record: gp_bill_add(b, &rec, &err);   // any order
 *     json_t *bill = gp_bill_json(b, &err);                 // or gp_bill_csv
 *     gp_bill_free(b);
 *
 * Records that cannot matter to the period (usage that ended before it,
 * anything that starts after as_of) may be left out by the caller (the
 * store does, reading typed columns) or fed in (the offline file): the
 * bill is the same.  An "open" record counts only when no "close" record
 * of its interval is fed.
 *
 * Pure: no I/O, no clock (as_of is an argument).  Ownership: the bill
 * copies what it keeps of each record; the price table must outlive the
 * bill; gp_bill_json returns a new reference, gp_bill_csv malloc'd text.
 */
#ifndef GP_METERING_BILL_H
#define GP_METERING_BILL_H

#include "metering/price.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* One ledger record, typed (docs/metering.md lists the fields).  Strings
 * are NULL where the record has none; the caller keeps them alive during
 * gp_bill_add only. */
typedef struct gp_bill_record {
    int64_t seq;
    const char *kind;          /* "open", "close", "guarantee", "capacity", "booking"; others are ignored */
    int64_t interval, job;     /* usage records */
    const char *tenant;        /* usage and guarantee records */
    const char *user, *share, *cls, *topology; /* usage records; share NULL = whole */
    const char *gpu_type;
    int64_t milli_gpus, start;
    int64_t end;               /* close and booking records */
    const char *booking;       /* booking records: the booking's name (its newest record counts) */
} gp_bill_record;

/* rec's fields (pointers into rec, which must outlive *out's use). */
gp_err gp_bill_record_from_json(const json_t *rec, gp_bill_record *out, gp_error *err);

typedef struct gp_bill_query {
    const char *period;   /* "YYYY-MM": the UTC month [from, to) */
    int64_t as_of;        /* the bill runs to min(as_of, to) (and not before from) */
    const char *tenant;   /* only this subtree is shown; NULL = every tenant */
    bool fleet;           /* the fleet section (admin, operator, auditor) */
    bool hourly;          /* and its hours */
} gp_bill_query;

typedef struct gp_bill gp_bill;

gp_err gp_bill_new(const gp_price_table *prices, const gp_bill_query *q, gp_bill **out, gp_error *err);
/* [from, as_of): what the bill covers, so a store can read only the
 * records that matter. */
void gp_bill_window(const gp_bill *b, int64_t *from, int64_t *as_of);
gp_err gp_bill_add(gp_bill *b, const gp_bill_record *r, gp_error *err);
/* THE BILL's JSON: {"period", "from", "to", "as_of", "currency",
 * "tenants": [...], "fleet": [...] (with q.fleet), "hourly": [...] (with
 * q.hourly)}.  NULL on an error (err says). */
json_t *gp_bill_json(gp_bill *b, gp_error *err);
/* The CSV: a header line, then one line per ledger record billed (split
 * where a price version changes), sorted by seq. */
char *gp_bill_csv(gp_bill *b, gp_error *err);
void gp_bill_free(gp_bill *b);

/* Where the records come from: adds to b those of [from, as_of) (at
 * least; more do no harm). */
typedef gp_err (*gp_bill_source)(void *ctx, gp_bill *b, int64_t from, int64_t as_of, gp_error *err);
/* The whole bill, as GET /v1/bill and the offline CLI make it: the price
 * table as GET /v1/prices answers it, the query, the records from source
 * -> the JSON in *json, or (csv not NULL) the CSV in *csv. */
gp_err gp_bill_run(const json_t *prices, const gp_bill_query *q, gp_bill_source source, void *ctx, json_t **json,
                   char **csv, gp_error *err);

#endif

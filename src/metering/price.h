/* price.h - the price table a bill is computed with: GPU-hour prices by
 * version, topology premiums, and each org's mode.
 *
 * The table is exactly what GET /v1/prices answers and what the offline
 * `gpupool bill --prices FILE` reads:
 *
 *     {"currency": "USD",
 *      "versions": [{"effective": 1793491200, "gpu_types": {"H100": "2.50"},
 *                    "premium": {"nvlink": "1.10", "block": "1.25"}}, ...],
 *      "modes": {"research": "chargeback"}}
 *
 * Money is exact: a price or premium is a decimal string (>= 0, at most 6
 * decimals) kept as units of 10^-6 ("2.50" -> 2500000), never a double.
 * A version is in force from its effective time (epoch seconds) until the
 * next one's; topology "any" is always 1, a missing nvlink/block premium
 * is 1; an org not in "modes" is "showback".
 *
 * Ownership: gp_price_table_parse fills a table the caller releases with
 * gp_price_table_free; strings are copied.  Pure: no I/O, no clock.
 */
#ifndef GP_METERING_PRICE_H
#define GP_METERING_PRICE_H

#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Exact sums of milli-GPU-seconds x price units x premium units. */
__extension__ typedef __int128 gp_i128;

#define GP_PRICE_UNIT INT64_C(1000000)           /* 1.000000 */
#define GP_PRICE_MAX (INT64_C(1000000) * GP_PRICE_UNIT) /* a GPU-hour at most 1,000,000 */
#define GP_PREMIUM_MAX (INT64_C(1000) * GP_PRICE_UNIT)  /* a premium at most 1000 */
#define GP_PRICE_NAME_MAX 64

typedef struct gp_price_entry {
    char name[GP_PRICE_NAME_MAX]; /* GPU model */
    int64_t units;                /* per GPU-hour, x 10^6 */
} gp_price_entry;

typedef struct gp_price_version {
    int64_t effective;            /* epoch seconds */
    gp_price_entry *types;
    size_t n_types;
    int64_t nvlink_u, block_u;    /* premium factors x 10^6 (10^6 when not set) */
} gp_price_version;

typedef struct gp_org_mode {
    char org[GP_PRICE_NAME_MAX * 3];
    bool chargeback;
} gp_org_mode;

typedef struct gp_price_table {
    char currency[16];
    gp_price_version *versions;   /* sorted by effective, distinct */
    size_t n_versions;
    gp_org_mode *modes;
    size_t n_modes;
} gp_price_table;

/* A decimal string ("2.50", "0", "12.000001") as units of 10^-6 in
 * [0, max]; field names it in the error ("gpu_types.H100"). */
gp_err gp_price_decimal_parse(const json_t *value, const char *field, int64_t max, int64_t *units, gp_error *err);

/* An epoch second (integer) or an RFC 3339 UTC time string
 * ("2026-11-01T00:00:00Z"). */
gp_err gp_price_time_parse(const json_t *value, const char *field, int64_t *out, gp_error *err);

/* One version as PUT /v1/prices takes it (and the table lists it):
 * {"effective", "gpu_types": {MODEL: PRICE}, "premium": {"nvlink"|"block":
 * FACTOR}} ("currency" is the caller's).  Errors name the field. */
gp_err gp_price_version_parse(const json_t *v, gp_price_version *out, gp_error *err);
void gp_price_version_free(gp_price_version *v);

/* The whole table (GET /v1/prices).  Versions are sorted here. */
gp_err gp_price_table_parse(const json_t *table, gp_price_table *out, gp_error *err);
void gp_price_table_free(gp_price_table *t);

/* The price units of model in v, -1 when v prices it not. */
int64_t gp_price_of(const gp_price_version *v, const char *model);
/* The premium units of a topology ("any" 10^6, "nvlink", "block"). */
int64_t gp_price_premium(const gp_price_version *v, const char *topology);
/* The index of the version in force at t, -1 before the first. */
int gp_price_version_at(const gp_price_table *t, int64_t t_s);
/* true when the org bills "chargeback" (else showback). */
bool gp_price_chargeback(const gp_price_table *t, const char *org);

/* value / den rounded once, half to even, as a decimal with 6 places;
 * value is x 10^6 of what is printed:
 *     gp_money_format(2500000, 1)          "2.500000"
 *     gp_money_format(5, 2)  (2.5 -> 2)    "0.000002"
 * buf must hold 48 bytes. */
const char *gp_money_format(gp_i128 value, gp_i128 den, char *buf);

/* The UTC calendar month "YYYY-MM" as [from, to) epoch seconds. */
gp_err gp_price_month_parse(const char *period, int64_t *from, int64_t *to, gp_error *err);

#endif

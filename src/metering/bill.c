/* bill.c - a month's bill from the ledger and the price table (bill.h).
 *
 * The rules (docs/metering.md "Prices and bills" is the long form):
 *
 *   floor       a tenant's OWN guarantee (its guarantee minus those of its
 *               nearest guaranteed descendants of the type, never below 0)
 *               x seconds x price: paid whether used or not;
 *   guaranteed  its guaranteed-class intervals: the milli-GPU-seconds, and
 *               only the topology surcharge, price x (premium - 1);
 *   burst       its burstable intervals: price x premium;
 *   dedicated_idle  the free GPUs of nodes where its dedicated domain runs
 *               and nobody else may (intervals of class dedicated_idle,
 *               core/metering.c): price, no premium; idle in the fleet
 *               section all the same (nobody uses them);
 *   unpriced    any of these before the first price version or of a model
 *               the version does not price: shown, amount 0.
 *
 * Every amount is the exact rational SUM(mgs x price_u x premium_u) / 3.6e18
 * (mgs = milli-GPU-seconds, _u = x 10^6), kept as a 128-bit numerator and
 * rounded once, half to even, when printed.  A total is the rounding of
 * the exact sum, never a sum of rounded lines.
 *
 * How: the period [from, as_of) is cut into segments at every UTC hour
 * and every guarantee, capacity or price change, so within a segment the
 * price version, every guarantee and the capacity are constant.  Pass 1
 * walks each usage interval through its segments (lines, the fleet's
 * shares per hour, guaranteed use per segment); pass 2 sweeps the
 * segments in time order applying guarantee and capacity records (floors,
 * physical capacity, the idle inside guarantees per hour).
 *
 * Worked example (tests/server/test_bill.c has it): H100 at "2.50", nvlink
 * premium "1.10".  research {guarantee 2 H100}, research/nlp {guarantee 1}
 * all month (30 days = 720 h); nlp runs a guaranteed nvlink job on 1 H100
 * for 10 h, lab a burstable nvlink job on 1 H100 for 2 h:
 *     nlp floor        1 x 720 h x 2.50           = 1800.000000
 *     nlp guaranteed   10 h x 2.50 x (1.10 - 1)   =    2.500000
 *     research floor   (2 - 1) x 720 h x 2.50     = 1800.000000 (own; subtotal 3602.500000)
 *     lab burst        2 h x 2.50 x 1.10          =    5.500000
 * With 4 H100 in the fleet: physical 2880 GPU-h, whole 12, idle 2868, of
 * it inside guarantees: research (outermost) holds 2 x 720 = 1440 GPU-h,
 * its subtree used 10 guaranteed: 1430; unowned 1438 (summed per hour).
 */
#include "metering/bill.h"

#include "util/grow.h"
#include "util/shape_names.h"
#include "util/hashmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { KIND_FLOOR, KIND_GUARANTEED, KIND_BURST, KIND_DEDICATED_IDLE, KIND_BOOKED, KIND_UNPRICED, KINDS };
static const char *const KIND_NAMES[KINDS] = {"floor", "guaranteed", "burst", "dedicated_idle", "booked", "unpriced"};
/* a share and a topology index util/shape_names.h's tables (the engine's
 * order); share 0 is a whole GPU, which the ledger calls gp_share_whole */
enum { SHARE_WHOLE, SHARE_MIG, SHARE_MPS, SHARE_TIMESLICE, SHARES };
_Static_assert((int)SHARES == (int)GP_ISOLATION_NAMES, "a share for each isolation");
enum { TOPO_ANY, TOPOS = GP_TOPOLOGY_NAMES };
/* the fleet's fields per hour and model: the shares, then these */
enum { F_PHYSICAL = SHARES, F_IDLE_GUARANTEES, F_IDLE_UNOWNED, FLEET_FIELDS };

#define NONE UINT32_MAX
#define HOUR 3600
/* an amount's numerator is x 3.6e18 of the money; printed x 10^6 */
#define AMOUNT_DEN ((gp_i128)3600000000000LL)

typedef struct names {
    gp_strmap map;
    char **v;
    size_t n, cap;
} names;

typedef struct interval {
    int64_t seq, id, job, milli, start, end; /* end -1: open, runs to as_of */
    uint32_t tenant, user, type;
    uint8_t share, guaranteed, topo;
    uint8_t idle;      /* class dedicated_idle: GPUs a dedicated tenant keeps idle, not used */
    uint8_t booked;    /* a booking's GPUs beyond its tenant's guarantee, held for its window (not used) */
} interval;

/* A booking record: its window as an interval, and its name's index. */
typedef struct booked {
    interval iv;
    uint32_t name;
} booked;

/* A guarantee (tenant) or capacity record: value from start on. */
typedef struct step {
    int64_t seq, start, value, next_start; /* next_start: the next record of the same key, -1 none */
    uint32_t tenant, type;
} step;

typedef struct line {
    int64_t mgs;
    gp_i128 amount;
} line;

/* One CSV line: a piece of an interval or of a floor in one price version. */
typedef struct csv_row {
    int64_t seq, from, to, milli;
    uint32_t which;     /* interval index, or guarantee step index for a floor */
    bool floor;
    int version;
} csv_row;

typedef struct vec {
    void *v;
    size_t n, cap;
} vec;

struct gp_bill {
    const gp_price_table *prices;
    char period[8];
    char *tenant; /* the subtree shown, NULL = all */
    bool want_fleet, hourly;
    int64_t from, to, as_of;
    names tenants, types, users, bookings;
    vec ivs, closed, guar, caps, floors, books; /* interval, int64_t, step, step, csv_row, booked */
    bool computed;
    /* computed */
    size_t n_ten, n_type, n_seg, n_hours;
    uint32_t *parent;
    bool *listed, *type_listed;
    int64_t *bounds;  /* n_seg + 1 */
    int *seg_version;
    line *lines;      /* [tenant][kind][type][topo] */
    int64_t *gused;   /* [segment][tenant][type] guaranteed-class mgs */
    int64_t *fleet;   /* [hour][type][field] */
    int64_t *price;   /* [version][type] units, -1 unpriced */
    int64_t *premium; /* [version][topo] units */
};

/* ---- small containers ---- */

static bool vec_push(vec *a, const void *item, size_t size)
{
    void *grown = gp_grow(a->v, &a->cap, a->n + 1, size);
    if (!grown)
        return false;
    a->v = grown;
    memcpy((char *)a->v + a->n * size, item, size);
    a->n++;
    return true;
}

static bool intern(names *t, const char *s, uint32_t *out)
{
    if (gp_strmap_get(&t->map, s, out))
        return true;
    char **v = gp_grow(t->v, &t->cap, t->n + 1, sizeof *v);
    if (!v)
        return false;
    t->v = v;
    char *copy = strdup(s);
    if (!copy || !gp_strmap_put(&t->map, s, (uint32_t)t->n)) {
        free(copy);
        return false;
    }
    t->v[t->n] = copy;
    *out = (uint32_t)t->n++;
    return true;
}

/* qsort, which may not be given a NULL array even of 0 items. */
static void sort_items(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(v, n, size, cmp);
}

static void names_free(names *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
    gp_strmap_free(&t->map);
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* ---- records in ---- */

static const char *str_or_null(const json_t *rec, const char *key)
{
    return json_string_value(json_object_get(rec, key));
}

static gp_err need_int(const json_t *rec, const char *key, int64_t seq, int64_t *out, gp_error *err)
{
    json_t *v = json_object_get(rec, key);
    if (!json_is_integer(v))
        return gp_error_set(err, GP_ERR_INVALID, key, "ledger record %lld has no integer %s", (long long)seq, key);
    *out = json_integer_value(v);
    return GP_OK;
}

static gp_err need_str(const json_t *rec, const char *key, int64_t seq, const char **out, gp_error *err)
{
    *out = str_or_null(rec, key);
    if (!*out)
        return gp_error_set(err, GP_ERR_INVALID, key, "ledger record %lld has no %s", (long long)seq, key);
    return GP_OK;
}

gp_err gp_bill_record_from_json(const json_t *rec, gp_bill_record *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    out->end = -1;
    if (!json_is_object(rec))
        return gp_error_set(err, GP_ERR_INVALID, "record", "a ledger record must be a JSON object");
    out->seq = json_integer_value(json_object_get(rec, "seq"));
    gp_err rc = need_str(rec, "kind", out->seq, &out->kind, err);
    bool usage = rc == GP_OK && (strcmp(out->kind, "open") == 0 || strcmp(out->kind, "close") == 0);
    bool guarantee = rc == GP_OK && strcmp(out->kind, "guarantee") == 0;
    bool booking = rc == GP_OK && strcmp(out->kind, "booking") == 0;
    if (rc || (!usage && !guarantee && !booking && strcmp(out->kind, "capacity") != 0))
        return rc;
    rc = need_str(rec, "gpu_type", out->seq, &out->gpu_type, err);
    if (rc == GP_OK)
        rc = need_int(rec, "milli_gpus", out->seq, &out->milli_gpus, err);
    if (rc == GP_OK)
        rc = need_int(rec, "start", out->seq, &out->start, err);
    if (rc == GP_OK && (usage || guarantee || booking))
        rc = need_str(rec, "tenant", out->seq, &out->tenant, err);
    if (rc == GP_OK && booking) {
        out->user = str_or_null(rec, "user");
        rc = need_str(rec, "booking", out->seq, &out->booking, err);
        if (rc == GP_OK)
            rc = need_str(rec, "topology", out->seq, &out->topology, err);
        return rc == GP_OK ? need_int(rec, "end", out->seq, &out->end, err) : rc;
    }
    if (rc || !usage)
        return rc;
    out->user = str_or_null(rec, "user");
    out->share = str_or_null(rec, "share");
    rc = need_int(rec, "interval", out->seq, &out->interval, err);
    if (rc == GP_OK)
        rc = need_int(rec, "job", out->seq, &out->job, err);
    if (rc == GP_OK)
        rc = need_str(rec, "class", out->seq, &out->cls, err);
    if (rc == GP_OK)
        rc = need_str(rec, "topology", out->seq, &out->topology, err);
    if (rc == GP_OK && out->kind[0] == 'c')
        rc = need_int(rec, "end", out->seq, &out->end, err);
    return rc;
}

gp_err gp_bill_new(const gp_price_table *prices, const gp_bill_query *q, gp_bill **out, gp_error *err)
{
    *out = NULL;
    int64_t from, to;
    gp_err rc = gp_price_month_parse(q->period, &from, &to, err);
    if (rc)
        return rc;
    gp_bill *b = calloc(1, sizeof *b);
    if (!b || (q->tenant && !(b->tenant = strdup(q->tenant)))) {
        free(b);
        return gp_error_set(err, GP_ERR_NOMEM, "bill", "out of memory");
    }
    b->prices = prices;
    snprintf(b->period, sizeof b->period, "%s", q->period);
    b->want_fleet = q->fleet;
    b->hourly = q->fleet && q->hourly;
    b->from = from;
    b->to = to;
    b->as_of = max64(from, min64(q->as_of, to));
    *out = b;
    return GP_OK;
}

void gp_bill_window(const gp_bill *b, int64_t *from, int64_t *as_of)
{
    *from = b->from;
    *as_of = b->as_of;
}

static const char *share_name(int share)
{
    return share == SHARE_WHOLE ? gp_share_whole : gp_isolation_names[share];
}

static int share_index(const char *name)
{
    return !name || strcmp(name, gp_share_whole) == 0 ? SHARE_WHOLE
                                                      : gp_shape_name_index(gp_isolation_names, SHARES, name);
}

static gp_err add_usage(gp_bill *b, const gp_bill_record *r, gp_error *err)
{
    if (!r->tenant || !r->gpu_type || !r->cls || !r->topology)
        return gp_error_set(err, GP_ERR_INVALID, "record", "ledger record %lld lacks its tenant, model, class or topology",
                            (long long)r->seq);
    bool open = r->kind[0] == 'o';
    if (!open && !vec_push(&b->closed, &r->interval, sizeof r->interval))
        return gp_error_set(err, GP_ERR_NOMEM, "bill", "out of memory");
    int64_t end = open ? b->as_of : min64(r->end, b->as_of);
    if (max64(r->start, b->from) >= end)
        return GP_OK; /* nothing of it in the period */
    int topo = gp_shape_name_index(gp_topology_names, TOPOS, r->topology);
    int share = share_index(r->share);
    if (topo < 0 || share < 0)
        return gp_error_set(err, GP_ERR_INVALID, topo < 0 ? "topology" : "share",
                            "ledger record %lld: unknown %s %s", (long long)r->seq, topo < 0 ? "topology" : "share",
                            topo < 0 ? r->topology : r->share);
    interval iv = {.seq = r->seq, .id = r->interval, .job = r->job, .milli = r->milli_gpus, .start = r->start,
                   .end = open ? -1 : r->end, .user = NONE, .share = (uint8_t)share,
                   .guaranteed = strcmp(r->cls, "guaranteed") == 0, .topo = (uint8_t)topo,
                   .idle = strcmp(r->cls, "dedicated_idle") == 0};
    if (!intern(&b->tenants, r->tenant, &iv.tenant) || !intern(&b->types, r->gpu_type, &iv.type) ||
        (r->user && !intern(&b->users, r->user, &iv.user)) || !vec_push(&b->ivs, &iv, sizeof iv))
        return gp_error_set(err, GP_ERR_NOMEM, "bill", "out of memory");
    return GP_OK;
}

/* Every booking record is kept until compute() takes each booking's
 * newest (a later one may cut the window of an earlier one to nothing). */
static gp_err add_booking(gp_bill *b, const gp_bill_record *r, gp_error *err)
{
    if (!r->tenant || !r->gpu_type || !r->booking || !r->topology)
        return gp_error_set(err, GP_ERR_INVALID, "record", "ledger record %lld lacks its booking, tenant, model or"
                            " topology", (long long)r->seq);
    int topo = gp_shape_name_index(gp_topology_names, TOPOS, r->topology);
    if (topo < 0)
        return gp_error_set(err, GP_ERR_INVALID, "topology", "ledger record %lld: unknown topology %s",
                            (long long)r->seq, r->topology);
    booked k = {.iv = {.seq = r->seq, .id = -1, .milli = r->milli_gpus, .start = r->start, .end = r->end,
                       .user = NONE, .share = SHARE_WHOLE, .topo = (uint8_t)topo, .booked = 1}};
    if (!intern(&b->bookings, r->booking, &k.name) || !intern(&b->tenants, r->tenant, &k.iv.tenant) ||
        !intern(&b->types, r->gpu_type, &k.iv.type) || (r->user && !intern(&b->users, r->user, &k.iv.user)) ||
        !vec_push(&b->books, &k, sizeof k))
        return gp_error_set(err, GP_ERR_NOMEM, "bill", "out of memory");
    return GP_OK;
}

/* Each booking's newest record, as an interval when its window (end
 * included) reaches into [from, as_of) and it holds GPUs beyond its
 * tenant's guarantee. */
static bool merge_bookings(gp_bill *b)
{
    size_t n = b->bookings.n;
    int64_t *newest = malloc((n + 1) * sizeof *newest);
    if (!newest)
        return false;
    for (size_t i = 0; i < n; i++)
        newest[i] = -1;
    const booked *k = b->books.v;
    for (size_t i = 0; i < b->books.n; i++)
        if (newest[k[i].name] < 0 || k[newest[k[i].name]].iv.seq < k[i].iv.seq)
            newest[k[i].name] = (int64_t)i;
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        const interval *iv = newest[i] >= 0 ? &k[newest[i]].iv : NULL;
        if (iv && iv->milli > 0 && max64(iv->start, b->from) < min64(iv->end, b->as_of))
            ok = vec_push(&b->ivs, iv, sizeof *iv);
    }
    free(newest);
    return ok;
}

gp_err gp_bill_add(gp_bill *b, const gp_bill_record *r, gp_error *err)
{
    if (b->computed)
        return gp_error_set(err, GP_ERR_CONFLICT, "bill", "the bill was computed already");
    if ((r->kind[0] == 'o' && strcmp(r->kind, "open") == 0) || (r->kind[0] == 'c' && strcmp(r->kind, "close") == 0))
        return add_usage(b, r, err);
    if (strcmp(r->kind, "booking") == 0)
        return add_booking(b, r, err);
    bool guarantee = strcmp(r->kind, "guarantee") == 0;
    if ((!guarantee && strcmp(r->kind, "capacity") != 0) || r->start >= b->as_of)
        return GP_OK;
    if (!r->gpu_type || (guarantee && !r->tenant))
        return gp_error_set(err, GP_ERR_INVALID, "record", "ledger record %lld lacks its %s", (long long)r->seq,
                            r->gpu_type ? "tenant" : "gpu_type");
    step s = {.seq = r->seq, .start = r->start, .value = r->milli_gpus, .next_start = -1, .tenant = NONE};
    if ((guarantee && !intern(&b->tenants, r->tenant, &s.tenant)) || !intern(&b->types, r->gpu_type, &s.type) ||
        !vec_push(guarantee ? &b->guar : &b->caps, &s, sizeof s))
        return gp_error_set(err, GP_ERR_NOMEM, "bill", "out of memory");
    return GP_OK;
}

/* ---- computing: the tree, the segments ---- */

static int by_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int by_start_seq(const void *a, const void *b)
{
    const step *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Drops the open records whose interval has a close record: the open
 * ones are few, the closed ones many, so the open ids go into a map and
 * the closed ones are looked up there, unsorted. */
static bool drop_closed_opens(gp_bill *b)
{
    gp_u64map open = {0};
    interval *iv = b->ivs.v;
    bool ok = true;
    for (size_t i = 0; ok && i < b->ivs.n; i++)
        if (iv[i].end < 0)
            ok = gp_u64map_put(&open, (uint64_t)iv[i].id + 1, 0); /* + 1: key 0 is not allowed */
    const int64_t *closed = b->closed.v;
    for (size_t i = 0; ok && open.live > 0 && i < b->closed.n; i++) {
        uint32_t ignored;
        if (gp_u64map_get(&open, (uint64_t)closed[i] + 1, &ignored))
            gp_u64map_put(&open, (uint64_t)closed[i] + 1, 1);
    }
    size_t kept = 0;
    for (size_t i = 0; ok && i < b->ivs.n; i++) {
        uint32_t was_closed = 0;
        if (iv[i].end < 0 && gp_u64map_get(&open, (uint64_t)iv[i].id + 1, &was_closed) && was_closed)
            continue;
        iv[kept++] = iv[i];
    }
    if (ok)
        b->ivs.n = kept;
    gp_u64map_free(&open);
    return ok;
}

/* Every tenant's ancestors are tenants; parent[] and which are listed: a
 * tenant with usage in the period or a guarantee > 0 in force during it,
 * and its ancestors (one deleted long ago, its last record 0, is not). */
static bool build_tree(gp_bill *b)
{
    size_t n0 = b->tenants.n;
    for (size_t i = 0; i < n0; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s", b->tenants.v[i]);
        for (char *slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) {
            uint32_t ignored;
            *slash = '\0';
            bool ok = intern(&b->tenants, path, &ignored);
            *slash = '/';
            if (!ok)
                return false;
        }
    }
    b->n_ten = b->tenants.n;
    b->parent = malloc((b->n_ten + 1) * sizeof *b->parent);
    b->listed = calloc(b->n_ten + 1, sizeof *b->listed);
    if (!b->parent || !b->listed)
        return false;
    for (size_t i = 0; i < b->n_ten; i++) {
        const char *path = b->tenants.v[i];
        const char *slash = strrchr(path, '/');
        b->parent[i] = NONE;
        if (slash) {
            char up[1024];
            snprintf(up, sizeof up, "%.*s", (int)(slash - path), path);
            gp_strmap_get(&b->tenants.map, up, &b->parent[i]);
        }
    }
    const interval *iv = b->ivs.v;
    const step *g = b->guar.v;
    for (size_t i = 0; i < b->ivs.n; i++)
        for (uint32_t t = iv[i].tenant; t != NONE && !b->listed[t]; t = b->parent[t])
            b->listed[t] = true;
    for (size_t i = 0; i < b->guar.n; i++) {
        bool in_force = g[i].value > 0 && (g[i].next_start < 0 || g[i].next_start > b->from); /* start < as_of */
        for (uint32_t t = g[i].tenant; in_force && t != NONE && !b->listed[t]; t = b->parent[t])
            b->listed[t] = true;
    }
    return true;
}

/* Cut points: from, every hour, every guarantee/capacity/price change inside, as_of. */
static bool build_segments(gp_bill *b)
{
    vec cuts = {0};
    const step *g = b->guar.v, *c = b->caps.v;
    bool ok = true;
    for (int64_t t = b->from; ok && t < b->as_of; t += HOUR)
        ok = vec_push(&cuts, &t, sizeof t);
    for (size_t i = 0; ok && i < b->guar.n; i++)
        if (g[i].start > b->from)
            ok = vec_push(&cuts, &g[i].start, sizeof g[i].start);
    for (size_t i = 0; ok && i < b->caps.n; i++)
        if (c[i].start > b->from)
            ok = vec_push(&cuts, &c[i].start, sizeof c[i].start);
    for (size_t i = 0; ok && i < b->prices->n_versions; i++) {
        int64_t e = b->prices->versions[i].effective;
        if (e > b->from && e < b->as_of)
            ok = vec_push(&cuts, &e, sizeof e);
    }
    if (ok)
        ok = vec_push(&cuts, &b->as_of, sizeof b->as_of);
    if (!ok) {
        free(cuts.v);
        return false;
    }
    int64_t *t = cuts.v;
    sort_items(t, cuts.n, sizeof *t, by_int64);
    size_t n = 0;
    for (size_t i = 0; i < cuts.n; i++)
        if (n == 0 || t[i] != t[n - 1])
            t[n++] = t[i];
    b->bounds = t;
    b->n_seg = n - 1;
    b->n_hours = (size_t)((b->as_of - b->from + HOUR - 1) / HOUR);
    b->seg_version = malloc((b->n_seg + 1) * sizeof *b->seg_version);
    if (!b->seg_version)
        return false;
    for (size_t k = 0; k < b->n_seg; k++)
        b->seg_version[k] = gp_price_version_at(b->prices, t[k]);
    return true;
}

static size_t hour_of(const gp_bill *b, size_t k)
{
    return (size_t)((b->bounds[k] - b->from) / HOUR);
}

static line *line_at(gp_bill *b, uint32_t tenant, int kind, uint32_t type, int topo)
{
    return &b->lines[((tenant * KINDS + (size_t)kind) * b->n_type + type) * TOPOS + (size_t)topo];
}

/* The price units of the type in version v, -1 when unpriced. */
static int64_t price_units(const gp_bill *b, int v, uint32_t type)
{
    return v < 0 ? -1 : b->price[(size_t)v * b->n_type + type];
}

static int64_t premium_units(const gp_bill *b, int v, int topo)
{
    return b->premium[(size_t)v * TOPOS + (size_t)topo];
}

/* Every version's price of every model and premium of every topology,
 * looked up once rather than per segment of every interval. */
static bool build_prices(gp_bill *b)
{
    size_t nv = b->prices->n_versions;
    b->price = malloc((nv * b->n_type + 1) * sizeof *b->price);
    b->premium = malloc((nv * TOPOS + 1) * sizeof *b->premium);
    if (!b->price || !b->premium)
        return false;
    for (size_t v = 0; v < nv; v++) {
        for (uint32_t t = 0; t < b->n_type; t++)
            b->price[v * b->n_type + t] = gp_price_of(&b->prices->versions[v], b->types.v[t]);
        for (int topo = 0; topo < TOPOS; topo++)
            b->premium[v * TOPOS + (size_t)topo] = gp_price_premium(&b->prices->versions[v], gp_topology_names[topo]);
    }
    return true;
}

/* What a milli-GPU-second of the kind costs, x the price: floors and
 * dedicated idle the price alone, burst its premium, guaranteed use only
 * the premium's surcharge (the floor paid for the base). */
static int64_t kind_factor(const gp_bill *b, int v, int kind, int topo)
{
    if (kind == KIND_FLOOR || kind == KIND_DEDICATED_IDLE || kind == KIND_BOOKED)
        return GP_PRICE_UNIT;
    return premium_units(b, v, topo) - (kind == KIND_GUARANTEED ? GP_PRICE_UNIT : 0);
}

static int interval_kind(const interval *iv)
{
    return iv->booked ? KIND_BOOKED : iv->idle ? KIND_DEDICATED_IDLE : iv->guaranteed ? KIND_GUARANTEED : KIND_BURST;
}

/* Adds mgs of (tenant, kind, type, topo) in version v to its line, or to
 * the unpriced line when v does not price the type. */
static void charge(gp_bill *b, uint32_t tenant, int kind, uint32_t type, int topo, int v, int64_t mgs)
{
    int64_t price = price_units(b, v, type);
    if (price < 0) {
        line_at(b, tenant, KIND_UNPRICED, type, TOPO_ANY)->mgs += mgs;
        return;
    }
    int64_t factor = kind_factor(b, v, kind, topo);
    line *l = line_at(b, tenant, kind, type, topo);
    l->mgs += mgs;
    l->amount += (gp_i128)mgs * price * factor;
}

/* Pass 1: one usage interval through its segments. */
static void pass_interval(gp_bill *b, const interval *iv)
{
    int64_t a = max64(iv->start, b->from), e = iv->end < 0 ? b->as_of : min64(iv->end, b->as_of);
    size_t lo = 0, hi = b->n_seg; /* the segment holding a: last k with bounds[k] <= a */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (b->bounds[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    for (size_t k = lo; k < b->n_seg && b->bounds[k] < e; k++) {
        int64_t mgs = iv->milli * (min64(e, b->bounds[k + 1]) - max64(a, b->bounds[k]));
        charge(b, iv->tenant, interval_kind(iv), iv->type, iv->topo, b->seg_version[k], mgs);
        if (iv->idle || iv->booked)
            continue; /* not use in the fleet section: nobody runs on it */
        b->fleet[(hour_of(b, k) * b->n_type + iv->type) * FLEET_FIELDS + iv->share] += mgs;
        if (iv->guaranteed)
            b->gused[(k * b->n_ten + iv->tenant) * b->n_type + iv->type] += mgs;
    }
}

/* ---- pass 2: the segments in time order ---- */

typedef struct sweep {
    int64_t *g;        /* [tenant][type] guarantee in force */
    size_t *g_step;    /* [tenant][type] index of its record */
    int64_t *cap;      /* [type] */
    int64_t *own;      /* [tenant] scratch */
    int64_t *held, *used; /* [tenant][type] this hour, outermost guaranteed tenants */
    csv_row *piece;    /* [tenant][type] the floor's CSV line being extended */
} sweep;

static void sweep_free(sweep *s)
{
    free(s->g);
    free(s->g_step);
    free(s->cap);
    free(s->own);
    free(s->held);
    free(s->used);
    free(s->piece);
}

static bool sweep_init(sweep *s, const gp_bill *b)
{
    size_t n = b->n_ten * b->n_type + 1;
    s->g = calloc(n, sizeof *s->g);
    s->g_step = calloc(n, sizeof *s->g_step);
    s->cap = calloc(b->n_type + 1, sizeof *s->cap);
    s->own = calloc(b->n_ten + 1, sizeof *s->own);
    s->held = calloc(n, sizeof *s->held);
    s->used = calloc(n, sizeof *s->used);
    s->piece = calloc(n, sizeof *s->piece);
    return s->g && s->g_step && s->cap && s->own && s->held && s->used && s->piece;
}

static bool flush_piece(gp_bill *b, csv_row *p)
{
    bool ok = p->milli <= 0 || p->to <= p->from || vec_push(&b->floors, p, sizeof *p);
    p->milli = 0;
    return ok;
}

/* The floor's CSV line of (tenant, type): extended while its record,
 * amount and price version stay; else the old one is kept and a new one starts. */
static bool floor_piece(gp_bill *b, sweep *s, size_t key, int64_t own, size_t k)
{
    csv_row *p = &s->piece[key];
    const step *g = b->guar.v;
    int v = b->seg_version[k];
    int64_t seq = g[s->g_step[key]].seq;
    if (p->milli == own && p->seq == seq && p->version == v && p->to == b->bounds[k]) {
        p->to = b->bounds[k + 1];
        return true;
    }
    if (!flush_piece(b, p))
        return false;
    *p = (csv_row){.seq = seq, .from = b->bounds[k], .to = b->bounds[k + 1], .milli = own,
                   .which = (uint32_t)s->g_step[key], .floor = true, .version = v};
    return true;
}

/* The floors of one type in segment k, and what the outermost guaranteed
 * tenants held and used of it. */
static bool segment_type(gp_bill *b, sweep *s, size_t k, uint32_t t)
{
    int64_t secs = b->bounds[k + 1] - b->bounds[k];
    size_t nt = b->n_type;
    for (uint32_t x = 0; x < b->n_ten; x++)
        s->own[x] = s->g[x * nt + t];
    for (uint32_t x = 0; x < b->n_ten; x++) {
        if (s->g[x * nt + t] <= 0)
            continue;
        uint32_t p = b->parent[x];
        while (p != NONE && s->g[p * nt + t] <= 0)
            p = b->parent[p];
        if (p != NONE)
            s->own[p] -= s->g[x * nt + t];
        else
            s->held[x * nt + t] += s->g[x * nt + t] * secs;
    }
    for (uint32_t x = 0; x < b->n_ten; x++) {
        int64_t own = s->g[x * nt + t] > 0 ? max64(0, s->own[x]) : 0;
        if (own > 0)
            charge(b, x, KIND_FLOOR, t, TOPO_ANY, b->seg_version[k], own * secs);
        if ((own > 0 || s->piece[x * nt + t].milli > 0) && !(own > 0 ? floor_piece(b, s, x * nt + t, own, k)
                                                                       : flush_piece(b, &s->piece[x * nt + t])))
            return false;
        int64_t used = b->gused[(k * b->n_ten + x) * nt + t];
        if (used <= 0)
            continue;
        uint32_t outer = NONE;
        for (uint32_t p = x; p != NONE; p = b->parent[p])
            if (s->g[p * nt + t] > 0)
                outer = p;
        if (outer != NONE)
            s->used[outer * nt + t] += used;
    }
    b->fleet[(hour_of(b, k) * nt + t) * FLEET_FIELDS + F_PHYSICAL] += s->cap[t] * secs;
    return true;
}

/* The idle of the hour: inside guarantees (what the outermost guaranteed
 * tenants held and did not use as guaranteed) and unowned. */
static void close_hour(gp_bill *b, sweep *s, size_t h)
{
    size_t nt = b->n_type;
    for (uint32_t t = 0; t < nt; t++) {
        int64_t *f = &b->fleet[(h * nt + t) * FLEET_FIELDS];
        int64_t idle = f[F_PHYSICAL] - (f[SHARE_WHOLE] + f[SHARE_MIG] + f[SHARE_MPS] + f[SHARE_TIMESLICE]);
        int64_t held_idle = 0;
        for (uint32_t x = 0; x < b->n_ten; x++)
            held_idle += max64(0, s->held[x * nt + t] - s->used[x * nt + t]);
        f[F_IDLE_GUARANTEES] = min64(idle, held_idle);
        f[F_IDLE_UNOWNED] = idle - f[F_IDLE_GUARANTEES];
    }
    memset(s->held, 0, b->n_ten * nt * sizeof *s->held);
    memset(s->used, 0, b->n_ten * nt * sizeof *s->used);
}

/* Links each guarantee record to the next of its (tenant, type): its end. */
static void link_next(gp_bill *b)
{
    step *g = b->guar.v;
    for (size_t i = b->guar.n; i-- > 0;)
        for (size_t j = i + 1; j < b->guar.n; j++)
            if (g[j].tenant == g[i].tenant && g[j].type == g[i].type) {
                g[i].next_start = g[j].start;
                break;
            }
}

static bool pass_segments(gp_bill *b)
{
    sweep s = {0};
    bool ok = sweep_init(&s, b);
    step *g = b->guar.v, *c = b->caps.v;
    size_t gi = 0, ci = 0, nt = b->n_type;
    for (size_t k = 0; ok && k < b->n_seg; k++) {
        for (; gi < b->guar.n && g[gi].start <= b->bounds[k]; gi++) {
            s.g[g[gi].tenant * nt + g[gi].type] = g[gi].value;
            s.g_step[g[gi].tenant * nt + g[gi].type] = gi;
        }
        for (; ci < b->caps.n && c[ci].start <= b->bounds[k]; ci++)
            s.cap[c[ci].type] = c[ci].value;
        for (uint32_t t = 0; ok && t < nt; t++)
            ok = segment_type(b, &s, k, t);
        if (k + 1 == b->n_seg || hour_of(b, k + 1) != hour_of(b, k))
            close_hour(b, &s, hour_of(b, k));
    }
    for (size_t i = 0; ok && i < b->n_ten * nt; i++)
        ok = flush_piece(b, &s.piece[i]);
    sweep_free(&s);
    return ok;
}

static gp_err compute(gp_bill *b, gp_error *err)
{
    if (b->computed)
        return GP_OK;
    if (!drop_closed_opens(b) || !merge_bookings(b))
        return gp_error_set(err, GP_ERR_NOMEM, "bill", "out of memory");
    sort_items(b->guar.v, b->guar.n, sizeof(step), by_start_seq);
    sort_items(b->caps.v, b->caps.n, sizeof(step), by_start_seq);
    link_next(b);
    b->n_type = b->types.n;
    bool ok = build_tree(b) && build_segments(b) && build_prices(b);
    if (ok) {
        b->lines = calloc(b->n_ten * KINDS * b->n_type * TOPOS + 1, sizeof *b->lines);
        b->gused = calloc(b->n_seg * b->n_ten * b->n_type + 1, sizeof *b->gused);
        b->fleet = calloc(b->n_hours * b->n_type * FLEET_FIELDS + 1, sizeof *b->fleet);
        b->type_listed = calloc(b->n_type + 1, sizeof *b->type_listed);
        ok = b->lines && b->gused && b->fleet && b->type_listed;
    }
    const interval *iv = b->ivs.v;
    for (size_t i = 0; ok && i < b->ivs.n; i++) {
        pass_interval(b, &iv[i]);
        b->type_listed[iv[i].type] = true;
    }
    const step *c = b->caps.v;
    for (size_t i = 0; ok && i < b->caps.n; i++)
        b->type_listed[c[i].type] = true;
    if (ok)
        ok = pass_segments(b);
    if (!ok)
        return gp_error_set(err, GP_ERR_NOMEM, "bill", "out of memory");
    b->computed = true;
    return GP_OK;
}

/* ---- the JSON ---- */

static bool shown(const gp_bill *b, const char *path)
{
    if (!b->tenant)
        return true;
    size_t n = strlen(b->tenant);
    return strncmp(path, b->tenant, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static json_t *money_json(gp_i128 numerator)
{
    char buf[48];
    return json_string(gp_money_format(numerator, AMOUNT_DEN, buf));
}

static json_t *hours_json(int64_t mgs)
{
    char buf[48];
    return json_string(gp_money_format((gp_i128)mgs * 10, 36, buf));
}

typedef struct line_ref {
    const gp_bill *b;
    int kind, topo;
    uint32_t type;
    const line *l;
} line_ref;

static int by_line_order(const void *x, const void *y)
{
    const line_ref *a = x, *c = y;
    if (a->kind != c->kind)
        return a->kind - c->kind;
    int by_type = strcmp(a->b->types.v[a->type], c->b->types.v[c->type]);
    return by_type ? by_type : strcmp(gp_topology_names[a->topo], gp_topology_names[c->topo]);
}

/* The tenant's lines (those with milli-GPU-seconds), in order; *own their sum. */
static json_t *lines_json(gp_bill *b, uint32_t x, gp_i128 *own)
{
    line_ref *refs = malloc((KINDS * TOPOS * b->n_type + 1) * sizeof *refs);
    if (!refs)
        return NULL;
    size_t n = 0;
    *own = 0;
    for (int kind = 0; kind < KINDS; kind++)
        for (uint32_t t = 0; t < b->n_type; t++)
            for (int topo = 0; topo < TOPOS; topo++) {
                const line *l = line_at(b, x, kind, t, topo);
                *own += l->amount;
                if (l->mgs != 0)
                    refs[n++] = (line_ref){.b = b, .kind = kind, .topo = topo, .type = t, .l = l};
            }
    sort_items(refs, n, sizeof *refs, by_line_order);
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:I, s:o, s:o}", "kind", KIND_NAMES[refs[i].kind],
                                             "gpu_type", b->types.v[refs[i].type], "topology", gp_topology_names[refs[i].topo],
                                             "milli_gpu_seconds", (json_int_t)refs[i].l->mgs, "gpu_hours",
                                             hours_json(refs[i].l->mgs), "amount", money_json(refs[i].l->amount)));
    free(refs);
    return out;
}

/* Tenant indexes sorted by path (insertion sort: a few hundred tenants). */
static uint32_t *sorted_tenants(const gp_bill *b)
{
    uint32_t *order = malloc((b->n_ten + 1) * sizeof *order);
    if (!order)
        return NULL;
    for (uint32_t i = 0; i < b->n_ten; i++) {
        uint32_t j = i;
        while (j > 0 && strcmp(b->tenants.v[order[j - 1]], b->tenants.v[i]) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    return order;
}

static json_t *tenants_json(gp_bill *b)
{
    gp_i128 *own = calloc(b->n_ten + 1, sizeof *own), *sub = calloc(b->n_ten + 1, sizeof *sub);
    json_t **lines = calloc(b->n_ten + 1, sizeof *lines);
    uint32_t *order = sorted_tenants(b);
    json_t *out = own && sub && lines && order ? json_array() : NULL;
    for (uint32_t x = 0; out && x < b->n_ten; x++) {
        if (!b->listed[x])
            continue;
        lines[x] = lines_json(b, x, &own[x]);
        if (!lines[x]) {
            json_decref(out);
            out = NULL;
            break;
        }
        for (uint32_t p = x; p != NONE; p = b->parent[p])
            sub[p] += own[x];
    }
    for (size_t i = 0; out && i < b->n_ten; i++) {
        uint32_t x = order[i];
        const char *path = b->tenants.v[x];
        if (!b->listed[x] || !shown(b, path))
            continue;
        char org[1024];
        snprintf(org, sizeof org, "%.*s", (int)strcspn(path, "/"), path);
        bool charge = gp_price_chargeback(b->prices, org);
        json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:O, s:o, s:o, s:o}", "tenant", path, "org", org, "mode",
                                             charge ? "chargeback" : "showback", "lines", lines[x], "amount",
                                             money_json(own[x]), "subtotal", money_json(sub[x]), "due",
                                             money_json(charge ? sub[x] : 0)));
    }
    for (uint32_t x = 0; lines && x < b->n_ten; x++)
        json_decref(lines[x]);
    free(own);
    free(sub);
    free(lines);
    free(order);
    return out;
}

static json_t *fleet_fields(const int64_t *f)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "physical", (json_int_t)f[F_PHYSICAL], "whole",
                     (json_int_t)f[SHARE_WHOLE], "mig", (json_int_t)f[SHARE_MIG], "mps", (json_int_t)f[SHARE_MPS],
                     "timeslice", (json_int_t)f[SHARE_TIMESLICE], "idle_in_guarantees",
                     (json_int_t)f[F_IDLE_GUARANTEES], "idle_unowned", (json_int_t)f[F_IDLE_UNOWNED]);
}

/* The listed models in name order. */
static size_t sorted_types(const gp_bill *b, uint32_t *order)
{
    size_t n = 0;
    for (uint32_t t = 0; t < b->n_type; t++) {
        if (!b->type_listed[t])
            continue;
        size_t j = n++;
        while (j > 0 && strcmp(b->types.v[order[j - 1]], b->types.v[t]) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = t;
    }
    return n;
}

static void fleet_json(gp_bill *b, json_t *out)
{
    uint32_t *order = malloc((b->n_type + 1) * sizeof *order);
    if (!order)
        return;
    size_t n = sorted_types(b, order);
    json_t *fleet = json_array(), *hourly = b->hourly ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
        int64_t sum[FLEET_FIELDS] = {0};
        for (size_t h = 0; h < b->n_hours; h++)
            for (int f = 0; f < FLEET_FIELDS; f++)
                sum[f] += b->fleet[(h * b->n_type + order[i]) * FLEET_FIELDS + (size_t)f];
        json_t *row = fleet_fields(sum);
        json_object_set_new(row, "gpu_type", json_string(b->types.v[order[i]]));
        json_array_append_new(fleet, row);
    }
    for (size_t h = 0; hourly && h < b->n_hours; h++)
        for (size_t i = 0; i < n; i++) {
            json_t *row = fleet_fields(&b->fleet[(h * b->n_type + order[i]) * FLEET_FIELDS]);
            json_object_set_new(row, "hour", json_integer(b->from + (int64_t)h * HOUR));
            json_object_set_new(row, "gpu_type", json_string(b->types.v[order[i]]));
            json_array_append_new(hourly, row);
        }
    json_object_set_new(out, "fleet", fleet);
    if (hourly)
        json_object_set_new(out, "hourly", hourly);
    free(order);
}

json_t *gp_bill_json(gp_bill *b, gp_error *err)
{
    if (compute(b, err) != GP_OK)
        return NULL;
    json_t *tenants = tenants_json(b);
    if (!tenants) {
        gp_error_set(err, GP_ERR_NOMEM, "bill", "out of memory");
        return NULL;
    }
    json_t *out = json_pack("{s:s, s:I, s:I, s:I, s:s, s:o}", "period", b->period, "from", (json_int_t)b->from, "to",
                            (json_int_t)b->to, "as_of", (json_int_t)b->as_of, "currency", b->prices->currency,
                            "tenants", tenants);
    if (b->want_fleet)
        fleet_json(b, out);
    return out;
}

/* ---- the CSV ---- */

static int by_seq_from(const void *x, const void *y)
{
    const csv_row *a = x, *c = y;
    if (a->seq != c->seq)
        return (a->seq > c->seq) - (a->seq < c->seq);
    return (a->from > c->from) - (a->from < c->from);
}

/* An interval's CSV lines: its clip, cut where the price version changes. */
static bool interval_rows(const gp_bill *b, uint32_t i, vec *rows)
{
    const interval *iv = &((const interval *)b->ivs.v)[i];
    int64_t a = max64(iv->start, b->from), e = iv->end < 0 ? b->as_of : min64(iv->end, b->as_of);
    while (a < e) {
        int v = gp_price_version_at(b->prices, a);
        int64_t next = (size_t)(v + 1) < b->prices->n_versions ? b->prices->versions[v + 1].effective : e;
        csv_row r = {.seq = iv->seq, .from = a, .to = min64(e, next), .milli = iv->milli, .which = i, .version = v};
        if (!vec_push(rows, &r, sizeof r))
            return false;
        a = r.to;
    }
    return true;
}

static void csv_text(FILE *f, const char *s)
{
    if (s)
        fputs(s, f); /* paths, names and models hold no comma or quote (spec rules) */
}

/* ISO 8601 UTC ("2026-11-01T00:00:00Z"); nothing for none (-1). */
static void csv_time(FILE *f, int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    char text[32];
    if (t >= 0 && gmtime_r(&tt, &tm) && strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
        fputs(text, f);
}

static void csv_line(gp_bill *b, FILE *f, const csv_row *r)
{
    const interval *iv = r->floor ? NULL : &((const interval *)b->ivs.v)[r->which];
    const step *g = r->floor ? &((const step *)b->guar.v)[r->which] : NULL;
    uint32_t tenant = iv ? iv->tenant : g->tenant, type = iv ? iv->type : g->type;
    int topo = iv ? iv->topo : TOPO_ANY;
    fprintf(f, "%lld,%s,%s,", (long long)r->seq, g ? "guarantee" : iv->booked ? "booking" : iv->end < 0 ? "open" : "close",
            b->tenants.v[tenant]);
    if (iv) {
        if (!iv->booked) /* a booking holds GPUs for no job: its user is who booked it */
            fprintf(f, "%lld", (long long)iv->job);
        fputc(',', f);
        csv_text(f, iv->user != NONE ? b->users.v[iv->user] : NULL);
    } else {
        fputc(',', f);
    }
    char gbuf[48], hbuf[48];
    fprintf(f, ",%s,%s,%s,%s,%s,", b->types.v[type], iv ? share_name(iv->share) : "",
            iv ? (iv->booked ? "booked" : iv->idle ? "dedicated_idle" : iv->guaranteed ? "guaranteed" : "burstable") : "",
            gp_topology_names[topo], gp_money_format((gp_i128)r->milli * 1000, 1, gbuf));
    const int64_t times[4] = {iv ? iv->start : g->start, iv ? iv->end : g->next_start, r->from, r->to};
    for (int i = 0; i < 4; i++) {
        csv_time(f, times[i]);
        fputc(',', f);
    }
    int64_t mgs = r->milli * (r->to - r->from);
    fprintf(f, "%s,%lld,", gp_money_format((gp_i128)mgs * 10, 36, hbuf), (long long)mgs);
    int64_t price = price_units(b, r->version, type);
    char pbuf[48], fbuf[48], abuf[48];
    if (price < 0) {
        fprintf(f, ",,0.000000\n");
        return;
    }
    int64_t factor = kind_factor(b, r->version, g ? KIND_FLOOR : interval_kind(iv), topo);
    fprintf(f, "%s,%s,%s\n", gp_money_format(price, 1, pbuf), gp_money_format(factor, 1, fbuf),
            gp_money_format((gp_i128)mgs * price * factor, AMOUNT_DEN, abuf));
}

char *gp_bill_csv(gp_bill *b, gp_error *err)
{
    if (compute(b, err) != GP_OK)
        return NULL;
    vec rows = {0};
    bool ok = true;
    for (uint32_t i = 0; ok && i < b->ivs.n; i++)
        if (shown(b, b->tenants.v[((const interval *)b->ivs.v)[i].tenant]))
            ok = interval_rows(b, i, &rows);
    const csv_row *floors = b->floors.v;
    for (size_t i = 0; ok && i < b->floors.n; i++)
        if (shown(b, b->tenants.v[((const step *)b->guar.v)[floors[i].which].tenant]))
            ok = vec_push(&rows, &floors[i], sizeof floors[i]);
    char *text = NULL;
    size_t len = 0;
    FILE *f = ok ? open_memstream(&text, &len) : NULL;
    if (f) {
        sort_items(rows.v, rows.n, sizeof(csv_row), by_seq_from);
        fputs("seq,kind,tenant,job,user,gpu_type,share,class,topology,gpus,start,end,billed_from,billed_to,"
              "gpu_hours,milli_gpu_seconds,price,premium,amount\n", f);
        for (size_t i = 0; i < rows.n; i++)
            csv_line(b, f, &((const csv_row *)rows.v)[i]);
        fclose(f);
    }
    free(rows.v);
    if (!text)
        gp_error_set(err, GP_ERR_NOMEM, "bill", "out of memory");
    return text;
}

void gp_bill_free(gp_bill *b)
{
    if (!b)
        return;
    names_free(&b->tenants);
    names_free(&b->types);
    names_free(&b->users);
    names_free(&b->bookings);
    free(b->books.v);
    free(b->ivs.v);
    free(b->closed.v);
    free(b->guar.v);
    free(b->caps.v);
    free(b->floors.v);
    free(b->tenant);
    free(b->parent);
    free(b->listed);
    free(b->type_listed);
    free(b->bounds);
    free(b->seg_version);
    free(b->lines);
    free(b->gused);
    free(b->fleet);
    free(b->price);
    free(b->premium);
    free(b);
}

gp_err gp_bill_run(const json_t *prices, const gp_bill_query *q, gp_bill_source source, void *ctx, json_t **json,
                   char **csv, gp_error *err)
{
    gp_price_table table;
    gp_err rc = gp_price_table_parse(prices, &table, err);
    if (rc)
        return rc;
    gp_bill *b = NULL;
    rc = gp_bill_new(&table, q, &b, err);
    if (rc == GP_OK)
        rc = source(ctx, b, b->from, b->as_of, err);
    if (rc == GP_OK && csv)
        rc = (*csv = gp_bill_csv(b, err)) ? GP_OK : err->code;
    else if (rc == GP_OK)
        rc = (*json = gp_bill_json(b, err)) ? GP_OK : err->code;
    gp_bill_free(b);
    gp_price_table_free(&table);
    return rc;
}

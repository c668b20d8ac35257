/* booking.c - advance bookings: admission onto named GPUs, the booking
 * calendar, clearing before a start, and the nodes a job may not use
 * because of bookings (docs/booking.md has the rules with examples).
 *
 * Admission (gp_engine_booking_add) works on whole GPUs of one type for
 * the window [start, end):
 *   1. the part inside the guarantee of the booking's holder (the tenant
 *      or its nearest ancestor with a guarantee), less what the holder's
 *      other bookings take at the same time, is free;
 *   2. the rest comes from capacity no guarantee promises (the type's
 *      healthy GPUs less every top-level guarantee) less what other
 *      bookings take beyond their guarantees at the same time, and is
 *      charged to the org's allowance of the week the booking starts in;
 *   3. the GPUs: of the type, healthy, on up nodes not draining, held by
 *      no booking overlapping the window, one node (or NVLink domain) per
 *      replica, one block for GP_TOPO_BLOCK; best fit (nodes with the
 *      fewest such GPUs first) so whole nodes stay whole.
 * "At the same time" is the peak over the window of the overlapping
 * bookings' sums, not their total, so back-to-back bookings do not count
 * against each other.
 *
 * In the pass the granularity is the node: a job that may not use a
 * booking's GPUs is kept off the nodes they are on (the fence of
 * dedicated.c, node->barred).  Bookings are placed best fit on whole
 * nodes where they can, so a node is rarely shared by a booking and
 * others; docs/booking.md says what this costs when it is.
 */
#include "core/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEEK_S INT64_C(604800)
#define DAY_S INT64_C(86400)
#define MONDAY_0 INT64_C(345600) /* 1970-01-05T00:00Z, the first Monday of the epoch */
#define SUGGEST_TRIES 512        /* candidate starts looked at for a suggestion */

static bool live(const gp__booking *b)
{
    return b->state <= GP_BOOKING_ACTIVE;
}

static bool overlaps(const gp__booking *b, int64_t start, int64_t end)
{
    return live(b) && b->start < end && start < b->end;
}

static int64_t week_of(int64_t t)
{
    int64_t d = t - MONDAY_0;
    return MONDAY_0 + (d >= 0 ? d / WEEK_S : -((-d + WEEK_S - 1) / WEEK_S)) * WEEK_S;
}

static uint32_t org_of(const gp_engine *e, uint32_t t)
{
    while (e->tenants[t].parent != GP__NONE)
        t = e->tenants[t].parent;
    return t;
}

static uint32_t holder_of(const gp_engine *e, uint32_t t)
{
    for (; t != GP__NONE; t = e->tenants[t].parent)
        if (e->tenants[t].has_guarantee)
            return t;
    return GP__NONE;
}

/* ---- history and decisions ---- */

static void note(gp_engine *e, gp__booking *b, gp_booking_state to, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note(gp_engine *e, gp__booking *b, gp_booking_state to, const char *fmt, ...)
{
    char why[GP_REASON_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    gp_booking_state from = (gp_booking_state)b->state;
    gp_booking_event *h = &b->history[b->n_history++ % GP_BOOKING_HISTORY];
    *h = (gp_booking_event){.time = e->now, .from = from, .to = to};
    snprintf(h->reason, sizeof h->reason, "%s", why);
    if (from != to) {
        bool was_live = live(b);
        b->state = (uint8_t)to;
        snprintf(b->reason, sizeof b->reason, "%s", why);
        if (was_live && !live(b))
            e->n_live_bookings--;
    }
    gp_decision *d = gp__decision_push(e, GP_DEC_BOOKING, 0);
    if (d) {
        snprintf(d->booking, sizeof d->booking, "%s", b->name);
        d->booking_from = (int)from;
        d->booking_to = (int)to;
        snprintf(d->reason, sizeof d->reason, "%s", why);
    }
}

/* ---- lookups ---- */

uint32_t gp__booking_by_id(const gp_engine *e, uint64_t id)
{
    for (size_t i = 0; i < e->n_bookings; i++)
        if (e->bookings[i].id == id)
            return (uint32_t)i;
    return GP__NONE;
}

static uint32_t find_any(const gp_engine *e, const char *name)
{
    for (size_t i = e->n_bookings; name && i-- > 0;)
        if (strcmp(e->bookings[i].name, name) == 0)
            return (uint32_t)i;
    return GP__NONE;
}

uint32_t gp__booking_live(const gp_engine *e, const char *name)
{
    uint32_t b = find_any(e, name);
    return b != GP__NONE && live(&e->bookings[b]) ? b : GP__NONE;
}

static bool series_in_use(const gp_engine *e, const char *name)
{
    for (size_t i = 0; i < e->n_bookings; i++)
        if (strcmp(e->bookings[i].name, name) == 0 || strcmp(e->bookings[i].series, name) == 0)
            return true;
    return false;
}

/* ---- capacity over a window ---- */

typedef enum { PART_ALL, PART_GUARANTEED, PART_ALLOWANCE } part;

static int64_t part_of(const gp__booking *b, part p)
{
    return p == PART_GUARANTEED ? b->guaranteed : p == PART_ALLOWANCE ? b->allowance : b->n_held;
}

/* The peak over [start, end) of `p` summed over live bookings of `type`
 * (and of `holder` unless GP__NONE), `skip` left out. */
static int64_t peak(const gp_engine *e, int type, uint32_t holder, part p, int64_t start, int64_t end, uint32_t skip)
{
    int64_t best = 0;
    for (size_t k = 0; k <= e->n_bookings; k++) {
        int64_t t = k == e->n_bookings ? start : e->bookings[k].start;
        if (k < e->n_bookings && (k == skip || t <= start || t >= end || !live(&e->bookings[k])))
            continue;
        int64_t sum = 0;
        for (size_t i = 0; i < e->n_bookings; i++) {
            const gp__booking *b = &e->bookings[i];
            if (i != skip && b->type == type && (holder == GP__NONE || b->holder == holder) && overlaps(b, t, t + 1))
                sum += part_of(b, p);
        }
        if (sum > best)
            best = sum;
    }
    return best;
}

static int64_t unpromised(const gp_engine *e, int type)
{
    int64_t free = e->fleet.capacity.v[type] / 1000;
    for (size_t r = 0; r < e->n_roots; r++) {
        const gp__tenant *t = &e->tenants[e->roots[r]];
        if (!t->removed && t->has_guarantee)
            free -= t->guarantee.v[type] / 1000;
    }
    return free;
}

static double allowance_used(const gp_engine *e, uint32_t org, int64_t week, uint32_t skip)
{
    double used = 0;
    for (size_t i = 0; i < e->n_bookings; i++) {
        const gp__booking *b = &e->bookings[i];
        if (i != skip && live(b) && b->allowance > 0 && week_of(b->start) == week && org_of(e, b->tenant) == org)
            used += (double)b->allowance * (double)(b->end - b->start) / 3600.0;
    }
    return used;
}

/* ---- placement ---- */

/* A request being admitted: the shape, the window, and what it gets. */
typedef struct want {
    uint32_t tenant, holder;
    uint8_t types;
    int replicas, gpus;   /* whole GPUs per replica, after a MIG count became GPUs */
    bool mig;
    gp_topology topology;
    int64_t start, end;
    uint32_t skip;        /* a booking being changed: its own GPUs are not in the way */
    /* out */
    int type;
    uint32_t *gpus_out;   /* replicas x gpus, malloc'd */
    int64_t guaranteed, allowance;
    const char *field;
    char reason[GP_REASON_MAX];
} want;

static bool gpu_usable(const gp_engine *e, const gp__gpu *g, bool mig)
{
    const gp__node *n = &e->fleet.nodes[g->node];
    return g->healthy && n->up && !n->draining &&
           (mig ? g->sharing == GP_SHARING_MIG : g->sharing == GP_SHARING_EXCLUSIVE);
}

/* taken[g]: held by a booking overlapping the window (calloc'd). */
static bool *taken_map(const gp_engine *e, int64_t start, int64_t end, uint32_t skip)
{
    bool *taken = calloc(e->fleet.n_gpus + 1, sizeof *taken);
    if (!taken)
        return NULL;
    for (size_t i = 0; i < e->n_bookings; i++)
        if (i != skip && overlaps(&e->bookings[i], start, end))
            for (int k = 0; k < e->bookings[i].n_held; k++)
                taken[e->bookings[i].held[k]] = true;
    return taken;
}

/* GPUs of node n usable for the request, per NVLink domain (dom[d]) and
 * replicas of w->gpus it could hold. */
static int node_replicas(const gp_engine *e, const want *w, const bool *taken, uint32_t n)
{
    const gp__node *node = &e->fleet.nodes[n];
    int dom[GP_MAX_GPUS_PER_NODE] = {0}, all = 0;
    for (int i = 0; i < node->gpu_count; i++) {
        const gp__gpu *g = &e->fleet.gpus[node->gpu_first + i];
        if (!taken[node->gpu_first + i] && gpu_usable(e, g, w->mig)) {
            dom[g->nvlink]++;
            all++;
        }
    }
    if (w->topology != GP_TOPO_NVLINK)
        return all / w->gpus;
    int r = 0;
    for (int d = 0; d < node->domains; d++)
        r += dom[d] / w->gpus;
    return r;
}

/* Take up to `count` replicas on node n into out (from *at); returns how many. */
static int node_take(const gp_engine *e, const want *w, bool *taken, uint32_t n, int count, uint32_t *out, int *at)
{
    const gp__node *node = &e->fleet.nodes[n];
    int got = 0;
    for (int d = 0; d < (w->topology == GP_TOPO_NVLINK ? node->domains : 1) && got < count; d++) {
        for (;;) {
            uint32_t pick[GP_MAX_GPUS_PER_NODE];
            int k = 0;
            for (int i = 0; i < node->gpu_count && k < w->gpus; i++) {
                uint32_t gi = node->gpu_first + (uint32_t)i;
                const gp__gpu *g = &e->fleet.gpus[gi];
                if (!taken[gi] && gpu_usable(e, g, w->mig) && (w->topology != GP_TOPO_NVLINK || g->nvlink == d))
                    pick[k++] = gi;
            }
            if (k < w->gpus || got >= count)
                break;
            for (int i = 0; i < k; i++) {
                taken[pick[i]] = true;
                out[(*at)++] = pick[i];
            }
            got++;
        }
    }
    return got;
}

typedef struct cand {
    uint32_t node;
    int replicas;
} cand;

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->replicas != y->replicas)
        return x->replicas < y->replicas ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Place w's replicas on nodes of `type` (in `block` unless GP__NONE),
 * best fit.  True and w->gpus_out filled when all fit. */
static bool place_in(const gp_engine *e, want *w, bool *taken, int type, uint32_t block)
{
    size_t n_nodes = e->fleet.n_type_nodes[type];
    cand *c = malloc((n_nodes + 1) * sizeof *c);
    uint32_t *out = malloc(((size_t)w->replicas * (size_t)w->gpus) * sizeof *out);
    if (!c || !out) {
        free(c);
        free(out);
        return false;
    }
    size_t k = 0;
    int64_t total = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        uint32_t n = e->fleet.type_nodes[type][i];
        if (block != GP__NONE && e->fleet.nodes[n].block != block)
            continue;
        int r = node_replicas(e, w, taken, n);
        if (r > 0) {
            c[k++] = (cand){n, r};
            total += r;
        }
    }
    bool ok = total >= w->replicas;
    if (ok) {
        qsort(c, k, sizeof *c, cand_cmp);
        int at = 0, left = w->replicas;
        while (left > 0) {
            /* best fit: the smallest room that holds all that is left, else the largest room */
            size_t pick = k;
            for (size_t j = 0; j < k && pick == k; j++)
                if (c[j].replicas >= left)
                    pick = j;
            for (size_t j = k; pick == k && j-- > 0;)
                if (c[j].replicas > 0)
                    pick = j;
            if (pick == k)
                break;
            left -= node_take(e, w, taken, c[pick].node, left, out, &at);
            c[pick].replicas = 0;
        }
        ok = left == 0;
    }
    free(c);
    if (!ok) {
        free(out);
        return false;
    }
    w->gpus_out = out;
    return true;
}

static bool place(const gp_engine *e, want *w, int type)
{
    bool *taken = taken_map(e, w->start, w->end, w->skip);
    if (!taken)
        return false;
    bool ok = false;
    if (w->topology != GP_TOPO_BLOCK) {
        ok = place_in(e, w, taken, type, GP__NONE);
    } else {
        for (size_t b = 0; b < e->fleet.n_blocks && !ok; b++) {
            bool *copy = malloc(e->fleet.n_gpus + 1);
            if (!copy)
                break;
            memcpy(copy, taken, e->fleet.n_gpus + 1);
            ok = place_in(e, w, copy, type, (uint32_t)b);
            free(copy);
        }
    }
    free(taken);
    return ok;
}

/* ---- admission ---- */

static bool admit_type(const gp_engine *e, want *w, int type)
{
    int64_t need = (int64_t)w->replicas * w->gpus;
    int64_t covered = 0;
    if (w->holder != GP__NONE) {
        int64_t g = e->tenants[w->holder].guarantee.v[type] / 1000;
        int64_t room = g - peak(e, type, w->holder, PART_GUARANTEED, w->start, w->end, w->skip);
        covered = room < 0 ? 0 : room < need ? room : need;
    }
    int64_t beyond = need - covered;
    if (beyond > 0) {
        int64_t room = unpromised(e, type) - peak(e, type, GP__NONE, PART_ALLOWANCE, w->start, w->end, w->skip);
        if (room < beyond) {
            w->field = covered > 0 || w->holder != GP__NONE ? "guarantee" : "capacity";
            snprintf(w->reason, sizeof w->reason,
                     "%lld %s GPUs beyond the guarantee, but only %lld are promised to no one in that window",
                     (long long)beyond, e->fleet.types[type], (long long)(room < 0 ? 0 : room));
            return false;
        }
        uint32_t org = org_of(e, w->tenant);
        int64_t per_week = e->tenants[org].booking_allowance;
        double used = allowance_used(e, org, week_of(w->start), w->skip);
        double asked = (double)beyond * (double)(w->end - w->start) / 3600.0;
        if (per_week >= 0 && used + asked > (double)per_week + 1e-9) {
            w->field = "allowance";
            snprintf(w->reason, sizeof w->reason,
                     "%.1f GPU-hours beyond the guarantee, but %s has %.1f of its %lld GPU-hours a week left",
                     asked, e->tenants[org].path, (double)per_week - used > 0 ? (double)per_week - used : 0.0,
                     (long long)per_week);
            return false;
        }
    }
    if (!place(e, w, type)) {
        w->field = "topology";
        snprintf(w->reason, sizeof w->reason, "no %s GPUs free of other bookings hold %d x %d (%s) in that window",
                 e->fleet.types[type], w->replicas, w->gpus, gp_topology_name(w->topology));
        return false;
    }
    w->type = type;
    w->guaranteed = covered;
    w->allowance = beyond;
    return true;
}

static bool admit(const gp_engine *e, want *w)
{
    w->field = "capacity";
    snprintf(w->reason, sizeof w->reason, "no GPU type the booking accepts has nodes");
    for (int t = 0; t < e->fleet.n_types; t++)
        if ((w->types & (1u << t)) && e->fleet.n_type_nodes[t] > 0 && admit_type(e, w, t))
            return true;
    return false;
}

/* The earliest start >= w->start at which the same shape and duration is
 * admitted: the ends of live bookings and the starts of weeks are the only
 * times an answer can change.  -1 when none within the horizon. */
static int64_t suggest(const gp_engine *e, const want *orig, int64_t now)
{
    int64_t dur = orig->end - orig->start, limit = now + GP_BOOKING_HORIZON_S;
    int64_t from = orig->start;
    for (int tries = 0; tries < SUGGEST_TRIES; tries++) {
        int64_t next = week_of(from) + WEEK_S;
        for (size_t i = 0; i < e->n_bookings; i++)
            if (live(&e->bookings[i]) && e->bookings[i].end > from && e->bookings[i].end < next)
                next = e->bookings[i].end;
        if (next > limit)
            return -1;
        want w = *orig;
        w.start = next;
        w.end = next + dur;
        w.gpus_out = NULL;
        if (admit(e, &w)) {
            free(w.gpus_out);
            return next;
        }
        from = next;
    }
    return -1;
}

/* ---- add ---- */

static bool name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n >= GP_BOOKING_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

static int mig_per_gpu(const gp_engine *e, int type, const char *profile)
{
    int best = 0;
    for (size_t i = 0; i < e->fleet.n_type_nodes[type] && best == 0; i++) {
        const gp__node *n = &e->fleet.nodes[e->fleet.type_nodes[type][i]];
        int model = gp__mig_model_find(e->fleet.types[type], n->gpu_mem_mib);
        int p = model >= 0 ? gp__mig_profile_find(model, profile) : -1;
        int milli = p >= 0 ? gp__mig_profile_milli(model, p) : 0;
        if (milli > 0)
            best = 1000 / milli;
    }
    return best;
}

static gp_err spec_check(const gp_engine *e, const gp_booking_spec *s, int64_t now, want *w, gp_error *err)
{
    if (!name_ok(s->name))
        return gp_error_set(err, GP_ERR_INVALID, "name", "1..%d characters of A-Z a-z 0-9 _ -",
                            GP_BOOKING_NAME_MAX - 1);
    if (series_in_use(e, s->name))
        return gp_error_set(err, GP_ERR_EXISTS, "name", "a booking called %s exists", s->name);
    uint32_t t;
    if (!s->tenant || !gp_strmap_get(&e->tenant_by_path, s->tenant, &t) || e->tenants[t].removed)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "tenant", "no tenant %s", s->tenant ? s->tenant : "");
    if (!gp__tenant_is_leaf(e, t))
        return gp_error_set(err, GP_ERR_INVALID, "tenant", "%s is not a leaf tenant", s->tenant);
    w->tenant = t;
    w->holder = holder_of(e, t);
    w->types = 0;
    if (s->n_gpu_types < 0 || s->n_gpu_types > GP_MAX_GPU_TYPES)
        return gp_error_set(err, GP_ERR_INVALID, "gpu_types", "0..%d types", GP_MAX_GPU_TYPES);
    for (int i = 0; i < s->n_gpu_types; i++) {
        int ty = s->gpu_types[i] ? gp__fleet_type_find(&e->fleet, s->gpu_types[i]) : -1;
        if (ty < 0)
            return gp_error_set(err, GP_ERR_INVALID, "gpu_types", "unknown GPU type %s",
                                s->gpu_types[i] ? s->gpu_types[i] : "");
        w->types |= (uint8_t)(1u << ty);
    }
    if (s->n_gpu_types == 0)
        w->types = 0xff;
    if (s->replicas < 1 || s->replicas > GP_MAX_REPLICAS)
        return gp_error_set(err, GP_ERR_INVALID, "replicas", "must be 1..%d", GP_MAX_REPLICAS);
    if (s->gpus < 1 || s->gpus > GP_MAX_GPUS_PER_NODE)
        return gp_error_set(err, GP_ERR_INVALID, "gpus", "must be 1..%d", GP_MAX_GPUS_PER_NODE);
    w->mig = s->mig_profile && s->mig_profile[0];
    if (w->mig && (!gp__mig_profile_known(s->mig_profile) || s->gpus != 1))
        return gp_error_set(err, GP_ERR_INVALID, "mig_profile", "unknown profile %s, or gpus is not 1",
                            s->mig_profile);
    if (s->topology < GP_TOPO_ANY || s->topology > GP_TOPO_NVLINK)
        return gp_error_set(err, GP_ERR_INVALID, "topology", "must be any, block or nvlink");
    if (s->start < now || s->start > now + GP_BOOKING_HORIZON_S)
        return gp_error_set(err, GP_ERR_INVALID, "start", "must be from now to %lld s ahead",
                            (long long)GP_BOOKING_HORIZON_S);
    if (s->end <= s->start || s->end - s->start > GP_BOOKING_MAX_DURATION_S)
        return gp_error_set(err, GP_ERR_INVALID, "end", "must be after start, at most %lld s later",
                            (long long)GP_BOOKING_MAX_DURATION_S);
    if (s->no_show_s < -1 || s->no_show_s > GP_BOOKING_MAX_DURATION_S)
        return gp_error_set(err, GP_ERR_INVALID, "no_show_s", "must be -1 (never), 0 (default) or seconds");
    if (s->lend < -1 || s->lend > 1)
        return gp_error_set(err, GP_ERR_INVALID, "lend", "must be -1, 0 or 1");
    if (s->recurrence < GP_RECUR_NONE || s->recurrence > GP_RECUR_WEEKLY)
        return gp_error_set(err, GP_ERR_INVALID, "recurrence", "must be none, daily, weekdays or weekly");
    if (s->recurrence == GP_RECUR_NONE ? s->until != 0
                                       : s->until <= s->start || s->until > now + GP_BOOKING_HORIZON_S)
        return gp_error_set(err, GP_ERR_INVALID, "until",
                            "recurring: after start, within the horizon; else 0");
    if (s->recurrence != GP_RECUR_NONE && s->end - s->start > (s->recurrence == GP_RECUR_WEEKLY ? WEEK_S : DAY_S))
        return gp_error_set(err, GP_ERR_INVALID, "end", "an occurrence may not outlast its period");
    w->replicas = s->replicas;
    w->gpus = s->gpus;
    w->topology = s->topology;
    w->skip = GP__NONE;
    return GP_OK;
}

/* The start of each occurrence into starts (cap); returns how many. */
static int occurrences(const gp_booking_spec *s, int64_t *starts, int cap)
{
    if (s->recurrence == GP_RECUR_NONE) {
        starts[0] = s->start;
        return 1;
    }
    int n = 0;
    int64_t step = s->recurrence == GP_RECUR_WEEKLY ? WEEK_S : DAY_S;
    for (int64_t t = s->start; t < s->until && n < cap; t += step) {
        int64_t dow = ((t >= 0 ? t / DAY_S : (t - DAY_S + 1) / DAY_S) + 4) % 7; /* 0 = Sunday */
        if (s->recurrence == GP_RECUR_WEEKDAYS && (dow == 0 || dow == 6))
            continue;
        starts[n++] = t;
    }
    return n;
}

static gp__booking *booking_new(gp_engine *e, const gp_booking_spec *s, int occurrence, int64_t start, int64_t now)
{
    if (!GP__GROW(e->bookings, e->n_bookings, e->cap_bookings))
        return NULL;
    gp__booking *b = &e->bookings[e->n_bookings++];
    memset(b, 0, sizeof *b);
    b->id = ++e->next_booking;
    if (occurrence > 0) {
        snprintf(b->name, sizeof b->name, "%s.%d", s->name, occurrence);
        snprintf(b->series, sizeof b->series, "%s", s->name);
    } else {
        snprintf(b->name, sizeof b->name, "%s", s->name);
    }
    b->occurrence = occurrence;
    snprintf(b->made_by, sizeof b->made_by, "%s", s->made_by ? s->made_by : "");
    b->type = -1;
    b->replicas = s->replicas;
    b->gpus = s->gpus;
    snprintf(b->mig_profile, sizeof b->mig_profile, "%s", s->mig_profile ? s->mig_profile : "");
    b->topology = s->topology;
    b->created = now;
    b->start = start;
    b->end = start + (s->end - s->start);
    b->lend = s->lend != 0;
    b->no_show_s = s->no_show_s == 0 ? GP_BOOKING_NO_SHOW_DEFAULT_S : s->no_show_s;
    b->recurrence = (uint8_t)s->recurrence;
    b->until = s->until;
    b->last_used = -1;
    b->state = GP_BOOKING_REFUSED;
    return b;
}

/* Admit occurrence `start` of s: the want for its window, MIG counts in GPUs. */
static bool admit_at(const gp_engine *e, const gp_booking_spec *s, want *w, int64_t start)
{
    w->start = start;
    w->end = start + (s->end - s->start);
    w->gpus_out = NULL;
    if (!w->mig)
        return admit(e, w);
    w->field = "mig_profile";
    snprintf(w->reason, sizeof w->reason, "no GPU type the booking accepts offers %s", s->mig_profile);
    for (int t = 0; t < e->fleet.n_types; t++) {
        int per = (w->types & (1u << t)) ? mig_per_gpu(e, t, s->mig_profile) : 0;
        if (per == 0)
            continue;
        want one = *w;
        one.types = (uint8_t)(1u << t);
        one.replicas = (s->replicas + per - 1) / per;
        if (admit(e, &one)) {
            *w = one;
            return true;
        }
        *w = one;
    }
    return false;
}

gp_err gp_engine_booking_add(gp_engine *e, const gp_booking_spec *s, int64_t now, gp_booking_result *result,
                             gp_error *err)
{
    gp_booking_result local;
    gp_booking_result *r = result ? result : &local;
    memset(r, 0, sizeof *r);
    r->suggested_start = -1;
    if (now < e->now)
        return gp_error_set(err, GP_ERR_TIME, "now", "time went backwards");
    want w;
    memset(&w, 0, sizeof w);
    gp_err rc = spec_check(e, s, now, &w, err);
    if (rc)
        return rc;
    int64_t *starts = malloc(GP_BOOKING_MAX_OCCURRENCES * sizeof *starts);
    if (!starts)
        return gp_error_set(err, GP_ERR_NOMEM, "booking", "out of memory");
    int n = occurrences(s, starts, GP_BOOKING_MAX_OCCURRENCES);
    if (n == 0) {
        free(starts);
        return gp_error_set(err, GP_ERR_INVALID, "until", "no occurrence starts before until");
    }
    e->now = now;
    size_t first = e->n_bookings;
    want refused = {0};
    for (int k = 0; k < n; k++) {
        want o = w;
        bool ok = admit_at(e, s, &o, starts[k]);
        gp__booking *b = booking_new(e, s, s->recurrence == GP_RECUR_NONE ? 0 : k + 1, starts[k], now);
        if (!b) {
            free(o.gpus_out);
            break;
        }
        b->tenant = w.tenant;
        b->holder = w.holder;
        r->occurrences++;
        if (!ok) {
            if (!r->first_refused[0]) {
                snprintf(r->first_refused, sizeof r->first_refused, "%s", b->name);
                snprintf(r->reason, sizeof r->reason, "%s", o.reason);
                refused = o;
            }
            snprintf(b->reason, sizeof b->reason, "%s", o.reason);
            continue;
        }
        b->type = o.type;
        b->held = o.gpus_out;
        b->n_held = o.replicas * o.gpus;
        b->guaranteed = o.guaranteed;
        b->allowance = o.allowance;
        e->n_live_bookings++;
        b->state = GP_BOOKING_PLANNED;
        r->accepted++;
        r->gpus = b->n_held;
        note(e, b, GP_BOOKING_PLANNED, "booked %d %s GPUs for %s (%lld inside its guarantee)", b->n_held,
             e->fleet.types[b->type], e->tenants[b->tenant].path, (long long)b->guaranteed);
    }
    free(starts);
    if (r->accepted == 0) {
        for (size_t i = first; i < e->n_bookings; i++)
            free(e->bookings[i].held);
        e->n_bookings = first;
        r->suggested_start = suggest(e, &refused, now);
        return gp_error_set(err, GP_ERR_CONFLICT, refused.field ? refused.field : "capacity", "%s", r->reason);
    }
    for (size_t i = first; i < e->n_bookings; i++)
        if (e->bookings[i].state == GP_BOOKING_REFUSED) {
            e->bookings[i].n_history = 0;
            gp_decision *d = gp__decision_push(e, GP_DEC_BOOKING, 0);
            if (d) {
                snprintf(d->booking, sizeof d->booking, "%s", e->bookings[i].name);
                d->booking_from = d->booking_to = GP_BOOKING_REFUSED;
                snprintf(d->reason, sizeof d->reason, "%s", e->bookings[i].reason);
            }
        }
    return GP_OK;
}

/* ---- cancel, change, forget ---- */

static void release(gp__booking *b)
{
    free(b->held);
    b->held = NULL;
    b->n_held = 0;
}

gp_err gp_engine_booking_cancel(gp_engine *e, const char *name, int64_t now, gp_error *err)
{
    if (now < e->now)
        return gp_error_set(err, GP_ERR_TIME, "now", "time went backwards");
    bool found = false, any = false;
    for (size_t i = 0; name && i < e->n_bookings; i++) {
        gp__booking *b = &e->bookings[i];
        if (strcmp(b->name, name) != 0 && strcmp(b->series, name) != 0)
            continue;
        found = true;
        if (!live(b))
            continue;
        e->now = now;
        any = true;
        release(b);
        note(e, b, GP_BOOKING_CANCELLED, "cancelled by its owner");
    }
    if (!found)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "name", "no booking %s", name ? name : "");
    if (!any)
        return gp_error_set(err, GP_ERR_CONFLICT, "state", "booking %s has ended", name);
    return GP_OK;
}

/* Are b's own GPUs free of other bookings over [start, end), and do the
 * capacity rules hold for b over it? */
static bool still_feasible(const gp_engine *e, uint32_t bi, int64_t start, int64_t end, char *why, size_t len)
{
    const gp__booking *b = &e->bookings[bi];
    bool *taken = taken_map(e, start, end, bi);
    if (!taken)
        return false;
    bool free_gpus = true;
    for (int k = 0; k < b->n_held && free_gpus; k++)
        free_gpus = !taken[b->held[k]];
    free(taken);
    if (!free_gpus) {
        snprintf(why, len, "its GPUs are booked by another booking in the added time");
        return false;
    }
    int64_t g = b->holder != GP__NONE ? e->tenants[b->holder].guarantee.v[b->type] / 1000 : 0;
    if (b->guaranteed > g - peak(e, b->type, b->holder, PART_GUARANTEED, start, end, bi)) {
        snprintf(why, len, "its tenant's guarantee is booked by other bookings in the added time");
        return false;
    }
    if (b->allowance > unpromised(e, b->type) - peak(e, b->type, GP__NONE, PART_ALLOWANCE, start, end, bi)) {
        snprintf(why, len, "the capacity beyond guarantees is booked by others in the added time");
        return false;
    }
    uint32_t org = org_of(e, b->tenant);
    int64_t per_week = e->tenants[org].booking_allowance;
    double asked = (double)b->allowance * (double)(end - start) / 3600.0;
    if (b->allowance > 0 && per_week >= 0 &&
        allowance_used(e, org, week_of(start), bi) + asked > (double)per_week + 1e-9) {
        snprintf(why, len, "%s's booking allowance would be exceeded", e->tenants[org].path);
        return false;
    }
    return true;
}

gp_err gp_engine_booking_change(gp_engine *e, const char *name, const gp_booking_change *c, int64_t now,
                                gp_error *err)
{
    if (now < e->now)
        return gp_error_set(err, GP_ERR_TIME, "now", "time went backwards");
    uint32_t bi = find_any(e, name);
    if (bi == GP__NONE)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "name", "no booking %s", name ? name : "");
    gp__booking *b = &e->bookings[bi];
    if (!live(b))
        return gp_error_set(err, GP_ERR_CONFLICT, "state", "booking %s is %s", b->name,
                            gp_booking_state_name((gp_booking_state)b->state));
    int64_t start = c->has_start ? c->start : b->start, end = c->has_end ? c->end : b->end;
    if (c->has_start && (b->state >= GP_BOOKING_ACTIVE || start < now))
        return gp_error_set(err, GP_ERR_INVALID, "start", "only a booking not yet begun moves its start, not before now");
    if (end <= start || end <= now || end - start > GP_BOOKING_MAX_DURATION_S)
        return gp_error_set(err, GP_ERR_INVALID, "end", "must be after the start and now, at most %lld s after the start",
                            (long long)GP_BOOKING_MAX_DURATION_S);
    char why[GP_REASON_MAX];
    if ((start < b->start || end > b->end) && !still_feasible(e, bi, start, end, why, sizeof why))
        return gp_error_set(err, GP_ERR_CONFLICT, end > b->end ? "end" : "start", "cannot extend: %s", why);
    e->now = now;
    b->start = start;
    b->end = end;
    if (c->has_lend)
        b->lend = c->lend;
    note(e, b, (gp_booking_state)b->state, "changed: window %lld..%lld, %s", (long long)start, (long long)end,
         b->lend ? "lent while idle" : "not lent");
    return GP_OK;
}

gp_err gp_engine_booking_forget(gp_engine *e, const char *name, gp_error *err)
{
    uint32_t bi = find_any(e, name);
    if (bi == GP__NONE)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "name", "no booking %s", name ? name : "");
    if (live(&e->bookings[bi]))
        return gp_error_set(err, GP_ERR_CONFLICT, "state", "booking %s is not final", name);
    release(&e->bookings[bi]);
    memmove(&e->bookings[bi], &e->bookings[bi + 1], (e->n_bookings - bi - 1) * sizeof *e->bookings);
    e->n_bookings--;
    return GP_OK;
}

/* ---- views ---- */

size_t gp_engine_booking_count(const gp_engine *e)
{
    return e->n_bookings;
}

bool gp_engine_booking_at(const gp_engine *e, size_t index, gp_booking_info *out)
{
    if (index >= e->n_bookings)
        return false;
    const gp__booking *b = &e->bookings[index];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", b->name);
    snprintf(out->series, sizeof out->series, "%s", b->series);
    out->occurrence = b->occurrence;
    out->tenant = b->tenant;
    snprintf(out->made_by, sizeof out->made_by, "%s", b->made_by);
    out->gpu_type = b->type;
    out->replicas = b->replicas;
    out->gpus = b->gpus;
    snprintf(out->mig_profile, sizeof out->mig_profile, "%s", b->mig_profile);
    out->topology = b->topology;
    out->created = b->created;
    out->start = b->start;
    out->end = b->end;
    out->lend = b->lend;
    out->no_show_s = b->no_show_s;
    out->recurrence = (gp_recurrence)b->recurrence;
    out->until = b->until;
    out->state = (gp_booking_state)b->state;
    snprintf(out->reason, sizeof out->reason, "%s", b->reason);
    out->n_gpus = b->n_held;
    out->guaranteed_gpus = b->guaranteed;
    out->allowance_gpus = b->allowance;
    out->gpus_short = b->gpus_short;
    out->substitutions = b->substitutions;
    out->last_used = b->last_used;
    out->jobs_running = b->jobs_running;
    out->n_cleared = b->n_cleared;
    memcpy(out->cleared, b->cleared, sizeof out->cleared);
    out->n_history = b->n_history;
    int kept = b->n_history < GP_BOOKING_HISTORY ? b->n_history : GP_BOOKING_HISTORY;
    for (int i = 0; i < kept; i++)
        out->history[i] = b->history[(b->n_history - kept + i) % GP_BOOKING_HISTORY];
    return true;
}

gp_err gp_engine_booking_get(const gp_engine *e, const char *name, gp_booking_info *out, gp_error *err)
{
    uint32_t bi = find_any(e, name);
    if (bi == GP__NONE)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "name", "no booking %s", name ? name : "");
    gp_engine_booking_at(e, bi, out);
    return GP_OK;
}

size_t gp_engine_booking_gpus(const gp_engine *e, const char *name, uint32_t *out, size_t cap)
{
    uint32_t bi = find_any(e, name);
    if (bi == GP__NONE)
        return 0;
    const gp__booking *b = &e->bookings[bi];
    for (int k = 0; k < b->n_held && (size_t)k < cap; k++)
        out[k] = b->held[k];
    return (size_t)b->n_held;
}

/* ---- the allowance ---- */

gp_err gp_engine_booking_allowance_set(gp_engine *e, const char *org, int64_t gpu_hours_per_week, int64_t now,
                                       gp_error *err)
{
    uint32_t t;
    if (now < e->now)
        return gp_error_set(err, GP_ERR_TIME, "now", "time went backwards");
    if (!org || !gp_strmap_get(&e->tenant_by_path, org, &t) || e->tenants[t].removed)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "org", "no tenant %s", org ? org : "");
    if (e->tenants[t].parent != GP__NONE)
        return gp_error_set(err, GP_ERR_INVALID, "org", "%s is not a top-level tenant", org);
    if (gpu_hours_per_week < -1)
        return gp_error_set(err, GP_ERR_INVALID, "gpu_hours_per_week", "must be -1 (unbounded) or >= 0");
    e->now = now;
    e->tenants[t].booking_allowance = gpu_hours_per_week;
    return GP_OK;
}

gp_err gp_engine_booking_allowance_get(const gp_engine *e, const char *org, int64_t at, gp_booking_allowance *out,
                                       gp_error *err)
{
    uint32_t t;
    if (!org || !gp_strmap_get(&e->tenant_by_path, org, &t) || e->tenants[t].removed)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "org", "no tenant %s", org ? org : "");
    t = org_of(e, t);
    out->gpu_hours_per_week = e->tenants[t].booking_allowance;
    out->week_start = week_of(at);
    out->used_gpu_hours = allowance_used(e, t, out->week_start, GP__NONE);
    double left = (double)out->gpu_hours_per_week - out->used_gpu_hours;
    out->left_gpu_hours = out->gpu_hours_per_week < 0 ? -1 : left > 0 ? left : 0;
    return GP_OK;
}

/* ---- clearing and the state calendar ---- */

static void cleared_add(gp__booking *b, uint64_t id)
{
    for (int i = 0; i < b->n_cleared && i < GP_BOOKING_CLEARED_MAX; i++)
        if (b->cleared[i] == id)
            return;
    if (b->n_cleared < GP_BOOKING_CLEARED_MAX)
        b->cleared[b->n_cleared] = id;
    b->n_cleared++;
}

/* Preempt running job `job` off b's GPUs with its checkpoint grace. */
static void clear_job(gp_engine *e, gp__booking *b, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    int64_t lost = gp__work_lost(e, j);
    gp_decision *d = gp__decision_push(e, GP_DEC_PREEMPT, j->id);
    if (d) {
        d->grace_s = j->grace;
        d->work_lost_gpu_s = lost;
        snprintf(d->by_tenant, sizeof d->by_tenant, "%s", e->tenants[b->tenant].path);
        snprintf(d->booking, sizeof d->booking, "%s", b->name);
        snprintf(d->reason, sizeof d->reason, "its GPUs are booked by %s (%s) from t=%lld", b->name,
                 e->tenants[b->tenant].path, (long long)b->start);
    }
    gp__job_transition(e, job, GP_JOB_PREEMPTING,
                       "preempted: its GPUs are booked by %s (%s) from t=%lld; %lld GPU-s since the last checkpoint",
                       b->name, e->tenants[b->tenant].path, (long long)b->start, (long long)lost);
    gp__job_grace_begin(e, job);
    j->last_preempted = e->now;
    j->preemptions++;
    cleared_add(b, j->id);
}

/* The job holding replica slot `owner` (job index + 1), if it must leave b's GPUs now. */
static bool must_clear(const gp_engine *e, const gp__booking *b, uint32_t owner)
{
    if (owner == 0)
        return false;
    const gp__job *j = &e->jobs[owner - 1];
    if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_ADMITTED)
        return false;
    if (j->booking == b->id)
        return false;
    return e->now + j->grace + e->cfg.clock_resolution_s >= b->start;
}

/* Preempt whoever must leave b's GPUs now; true when any did. */
static bool clear(gp_engine *e, gp__booking *b)
{
    bool any = false;
    for (int k = 0; k < b->n_held; k++) {
        const gp__gpu *g = &e->fleet.gpus[b->held[k]];
        if (must_clear(e, b, g->owner)) {
            clear_job(e, b, g->owner - 1);
            any = true;
        }
        for (int m = 0; m < g->n_mig; m++)
            if (must_clear(e, b, g->mig[m].owner)) {
                clear_job(e, b, g->mig[m].owner - 1);
                any = true;
            }
    }
    return any;
}

static bool wants_gpus(const gp_engine *e, const gp__booking *b)
{
    for (size_t i = 0; i < e->n_jobs; i++)
        if (e->jobs[i].used && e->jobs[i].state == GP_JOB_PENDING && e->jobs[i].booking == b->id)
            return true;
    return false;
}

static void count_jobs(gp_engine *e)
{
    for (size_t i = 0; i < e->n_bookings; i++)
        e->bookings[i].jobs_running = 0;
    for (size_t i = 0; i < e->n_running; i++) {
        const gp__job *j = &e->jobs[e->running[i]];
        uint32_t bi = j->booking ? gp__booking_by_id(e, j->booking) : GP__NONE;
        if (bi != GP__NONE && live(&e->bookings[bi])) {
            e->bookings[bi].jobs_running++;
            e->bookings[bi].last_used = e->now;
        }
    }
}

/* What lets most jobs skip the booking fence (engine's book_first_start). */
static void fence_summary(gp_engine *e)
{
    e->book_first_start = INT64_MAX;
    e->book_any_barring = false;
    for (size_t i = 0; i < e->n_bookings; i++) {
        const gp__booking *b = &e->bookings[i];
        if (b->state == GP_BOOKING_PLANNED && b->start < e->book_first_start)
            e->book_first_start = b->start;
        e->book_any_barring |= b->state == GP_BOOKING_CLEARING || (b->state == GP_BOOKING_ACTIVE && !b->lend);
    }
}

void gp__booking_tick(gp_engine *e)
{
    if (e->n_live_bookings == 0)
        return;
    count_jobs(e);
    for (size_t i = 0; i < e->n_bookings; i++) {
        gp__booking *b = &e->bookings[i];
        if (!live(b))
            continue;
        if (e->now >= b->end) {
            release(b);
            note(e, b, GP_BOOKING_ENDED, "its window ended");
            continue;
        }
        if (b->state == GP_BOOKING_ACTIVE && b->no_show_s >= 0 && b->last_used < b->start &&
            e->now >= b->start + b->no_show_s) {
            release(b);
            note(e, b, GP_BOOKING_RELEASED_NO_SHOW,
                 "released: no job used it for %lld s after its start; its GPUs are back in the fleet",
                 (long long)b->no_show_s);
            continue;
        }
        bool reclaim = b->state < GP_BOOKING_ACTIVE || !b->lend || wants_gpus(e, b);
        bool cleared = reclaim && clear(e, b);
        if (b->state < GP_BOOKING_ACTIVE && e->now >= b->start)
            note(e, b, GP_BOOKING_ACTIVE, "its window began: %d GPUs", b->n_held);
        else if (b->state == GP_BOOKING_PLANNED && cleared)
            note(e, b, GP_BOOKING_CLEARING, "clearing: jobs on its GPUs preempted with their grace before t=%lld",
                 (long long)b->start);
    }
    fence_summary(e);
}

/* ---- the nodes a job may not use ---- */

static bool bar(gp_engine *e, uint32_t n)
{
    gp__node *node = &e->fleet.nodes[n];
    if (node->barred)
        return true;
    if (!GP__GROW(e->book_barred, e->n_book_barred, e->cap_book_barred))
        return false;
    e->book_barred[e->n_book_barred++] = n;
    gp__node_bar(&e->fleet, n, true);
    return true;
}

/* Does b keep job j off its GPUs? */
static bool keeps_off(const gp__booking *b, const gp__job *j, int64_t job_end)
{
    if (!live(b) || b->n_held == 0 || j->booking == b->id)
        return false;
    if (b->state == GP_BOOKING_ACTIVE)
        return !b->lend;
    return b->state == GP_BOOKING_CLEARING || job_end > b->start;
}

static bool job_fence(gp_engine *e, const gp__job *j)
{
    int64_t d = gp__job_duration(j);
    int64_t end = d > 0 ? e->now + d : INT64_MAX;
    if (!e->book_any_barring && end <= e->book_first_start)
        return true; /* most jobs: no booking in the way */
    for (size_t i = 0; i < e->n_bookings; i++) {
        const gp__booking *b = &e->bookings[i];
        if (!keeps_off(b, j, end))
            continue;
        for (int k = 0; k < b->n_held; k++)
            if (!bar(e, e->fleet.gpus[b->held[k]].node))
                return false;
    }
    return true;
}

/* A job naming booking b: every node of its type without b's GPUs is barred. */
static bool booking_job_fence(gp_engine *e, const gp__booking *b)
{
    bool *mine = calloc(e->fleet.n_nodes + 1, sizeof *mine);
    if (!mine)
        return false;
    for (int k = 0; k < b->n_held; k++)
        mine[e->fleet.gpus[b->held[k]].node] = true;
    bool ok = true;
    for (size_t n = 0; n < e->fleet.n_nodes && ok; n++)
        if (!mine[n])
            ok = bar(e, (uint32_t)n);
    free(mine);
    return ok;
}

bool gp__booking_fence_up(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    if (j->booking == 0 && e->n_live_bookings == 0)
        return true;
    uint32_t bi = j->booking ? gp__booking_by_id(e, j->booking) : GP__NONE;
    bool ok;
    if (bi != GP__NONE && live(&e->bookings[bi])) {
        gp__booking *b = &e->bookings[bi];
        if (b->state != GP_BOOKING_ACTIVE) {
            j->wait = (gp_wait){.code = GP_WAIT_BOOKING, .dim = b->type, .tenant = b->tenant, .time = b->start};
            return false;
        }
        ok = booking_job_fence(e, b);
    } else {
        ok = job_fence(e, j);
    }
    if (!ok)
        gp__booking_fence_down(e);
    return ok;
}

void gp__booking_fence_down(gp_engine *e)
{
    for (size_t i = 0; i < e->n_book_barred; i++)
        gp__node_bar(&e->fleet, e->book_barred[i], false);
    e->n_book_barred = 0;
}

/* ---- lost GPUs ---- */

/* Replace the GPU at held[k] (lost) by one of the same shape: on the same
 * node if it has one, else nothing (a replica is one node: substituting
 * across nodes would break its shape); true when replaced. */
static bool substitute(gp_engine *e, uint32_t bi, int k, bool *taken)
{
    gp__booking *b = &e->bookings[bi];
    const gp__gpu *lost = &e->fleet.gpus[b->held[k]];
    const gp__node *node = &e->fleet.nodes[lost->node];
    if (!node->up)
        return false;
    for (int i = 0; i < node->gpu_count; i++) {
        uint32_t gi = node->gpu_first + (uint32_t)i;
        const gp__gpu *g = &e->fleet.gpus[gi];
        if (!taken[gi] && gpu_usable(e, g, b->mig_profile[0] != '\0') &&
            (b->topology != GP_TOPO_NVLINK || g->nvlink == lost->nvlink)) {
            taken[gi] = true;
            b->held[k] = gi;
            return true;
        }
    }
    return false;
}

/* A whole replica (gpus GPUs) of b moved to another node with room. */
static bool move_replica(gp_engine *e, uint32_t bi, int r, bool *taken)
{
    gp__booking *b = &e->bookings[bi];
    want w = {.replicas = 1, .gpus = b->gpus, .mig = b->mig_profile[0] != '\0', .topology = b->topology,
              .start = b->start, .end = b->end, .skip = bi};
    if (w.topology == GP_TOPO_BLOCK)
        w.topology = GP_TOPO_ANY; /* within the block of the rest */
    uint32_t block = e->fleet.nodes[e->fleet.gpus[b->held[0]].node].block;
    if (!place_in(e, &w, taken, b->type, b->topology == GP_TOPO_BLOCK ? block : GP__NONE))
        return false;
    memcpy(&b->held[r * b->gpus], w.gpus_out, (size_t)b->gpus * sizeof *b->held);
    free(w.gpus_out);
    return true;
}

void gp__booking_gpus_lost(gp_engine *e)
{
    for (size_t bi = 0; bi < e->n_bookings; bi++) {
        gp__booking *b = &e->bookings[bi];
        if (!live(b) || b->n_held == 0)
            continue;
        bool *taken = NULL;
        int replaced = 0, short_now = 0;
        for (int r = 0; r < b->n_held / b->gpus; r++) {
            bool bad = false;
            for (int k = r * b->gpus; k < (r + 1) * b->gpus; k++)
                bad |= !gpu_usable(e, &e->fleet.gpus[b->held[k]], b->mig_profile[0] != '\0');
            if (!bad)
                continue;
            if (!taken && !(taken = taken_map(e, b->start, b->end, (uint32_t)bi)))
                return;
            for (int k = 0; k < b->n_held; k++)
                taken[b->held[k]] = true;
            bool ok = true;
            for (int k = r * b->gpus; k < (r + 1) * b->gpus && ok; k++)
                if (!gpu_usable(e, &e->fleet.gpus[b->held[k]], b->mig_profile[0] != '\0'))
                    ok = substitute(e, (uint32_t)bi, k, taken);
            if (!ok)
                ok = move_replica(e, (uint32_t)bi, r, taken);
            if (ok)
                replaced++;
            else
                short_now++;
        }
        free(taken);
        int short_gpus = short_now * b->gpus;
        if (replaced > 0) {
            b->substitutions += replaced * b->gpus;
            note(e, b, (gp_booking_state)b->state, "%d replicas moved off lost GPUs to GPUs of the same shape",
                 replaced);
        }
        if (short_gpus != b->gpus_short) {
            b->gpus_short = short_gpus;
            if (short_gpus > 0)
                note(e, b, (gp_booking_state)b->state,
                     "short of %d GPUs: a node or GPU it holds is lost and no GPUs of the same shape are free",
                     short_gpus);
        }
    }
}

/* ---- invariants and freeing ---- */

gp_err gp__booking_check(const gp_engine *e, gp_error *err)
{
    size_t live_count = 0;
    for (size_t i = 0; i < e->n_bookings; i++) {
        const gp__booking *a = &e->bookings[i];
        live_count += live(a);
        if (live(a) && a->n_held != a->replicas * a->gpus && !a->mig_profile[0])
            return gp_error_set(err, GP_ERR_CONFLICT, "booking", "booking %s holds %d GPUs, not %d x %d", a->name,
                                a->n_held, a->replicas, a->gpus);
        for (size_t j = i + 1; j < e->n_bookings; j++) {
            const gp__booking *b = &e->bookings[j];
            if (!overlaps(b, a->start, a->end) || !live(a))
                continue;
            for (int x = 0; x < a->n_held; x++)
                for (int y = 0; y < b->n_held; y++)
                    if (a->held[x] == b->held[y])
                        return gp_error_set(err, GP_ERR_CONFLICT, "booking",
                                            "bookings %s and %s both hold GPU %u at the same time", a->name, b->name,
                                            a->held[x]);
        }
        if (live(a) && a->holder != GP__NONE &&
            peak(e, a->type, a->holder, PART_GUARANTEED, a->start, a->end, GP__NONE) >
                e->tenants[a->holder].guarantee.v[a->type] / 1000 &&
            a->start > e->now)
            return gp_error_set(err, GP_ERR_CONFLICT, "booking", "bookings inside %s's guarantee exceed it",
                                e->tenants[a->holder].path);
    }
    if (live_count != e->n_live_bookings)
        return gp_error_set(err, GP_ERR_CONFLICT, "booking", "%zu live bookings counted, %zu held", e->n_live_bookings,
                            live_count);
    return GP_OK;
}

void gp__bookings_free(gp_engine *e)
{
    for (size_t i = 0; i < e->n_bookings; i++)
        free(e->bookings[i].held);
    free(e->bookings);
    free(e->book_barred);
}

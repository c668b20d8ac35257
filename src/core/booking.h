/* booking.h - advance booking: a tenant books GPUs for a time window
 * (issue 34; the rules and worked examples are in docs/booking.md).
 *
 * A booking is an engine input like a job or a tenant: the caller (the
 * daemon, the simulator, the tests) hands it to the engine with `now`, the
 * engine admits it (places it on named GPUs for its window) or refuses it
 * with a reason and the earliest start of the same shape that would fit,
 * and from then on the scheduling pass (gp_engine_tick) clears the booked
 * GPUs before the start, runs the tenant's jobs that name the booking on
 * them, lends them while idle, releases a booking nobody uses, and
 * substitutes GPUs of a node that is lost.  Every booking state change is
 * a GP_DEC_BOOKING decision (types.h), so the caller can keep the
 * booking's history and audit rows without polling.
 *
 * Capacity: a booking's GPUs come first from its tenant's guarantee (the
 * guarantee of the tenant or its nearest ancestor that has one, per GPU
 * type: free, it makes that part of the floor time-bound and placed), and
 * beyond it from capacity no guarantee and no earlier booking promises in
 * the window, within the tenant's org allowance (GPU-hours per week, set
 * by an admin with gp_engine_booking_allowance_set; no allowance = none
 * beyond the guarantee).
 *
 * Names: a booking's name is unique among the bookings the engine holds
 * (1..GP_BOOKING_NAME_MAX-1 characters of [A-Za-z0-9_-]).  A recurring
 * booking NAME becomes one booking per occurrence, "NAME.1", "NAME.2", ...
 * (1-based, in time order), each admitted or refused on its own; every
 * occurrence's view names the series (`series`).
 *
 * Ownership: strings in specs are copied.  Views are copies into the
 * caller's structs.  Not thread-safe (the engine's rule, engine.h).
 */
#ifndef GP_CORE_BOOKING_H
#define GP_CORE_BOOKING_H

#include "core/types.h"
#include "util/error.h"

typedef struct gp_engine gp_engine;

#define GP_BOOKING_NO_SHOW_DEFAULT_S 1800 /* no_show_s when 0 is given */
#define GP_BOOKING_MAX_OCCURRENCES 400    /* a recurring booking: at most this many occurrences */
#define GP_BOOKING_MAX_DURATION_S (INT64_C(31) * 86400) /* one occurrence: at most 31 days */
#define GP_BOOKING_HORIZON_S (INT64_C(366) * 86400)     /* start (and `until`) at most this far after now */
#define GP_BOOKING_CLEARED_MAX 16         /* job ids a view lists of those cleared for a booking */
#define GP_BOOKING_HISTORY 8              /* the last state changes a view keeps */

typedef enum gp_recurrence {
    GP_RECUR_NONE = 0,
    GP_RECUR_DAILY,      /* every day at the same time (UTC) */
    GP_RECUR_WEEKDAYS,   /* Monday to Friday (UTC days) */
    GP_RECUR_WEEKLY      /* the same weekday every week */
} gp_recurrence;

/* planned    admitted, placed, its start more than a grace away;
 * clearing   from start - its clearing lead (the longest checkpoint grace
 *            of the jobs on its GPUs, at least 1 s): borrowers there are
 *            being preempted so the GPUs are free at the start;
 * active     inside its window: its jobs run guaranteed on it;
 * released_no_show  nobody used it for no_show_s after its start: its
 *            GPUs are back in the fleet (final);
 * ended      its end passed (final);
 * cancelled  its owner cancelled it (final);
 * refused    an occurrence of a recurring booking that could not be
 *            honoured (final; `reason` says why).  A single booking that
 *            is refused is not kept at all (gp_engine_booking_add's error). */
typedef enum gp_booking_state {
    GP_BOOKING_PLANNED = 0,
    GP_BOOKING_CLEARING,
    GP_BOOKING_ACTIVE,
    GP_BOOKING_RELEASED_NO_SHOW,
    GP_BOOKING_ENDED,
    GP_BOOKING_CANCELLED,
    GP_BOOKING_REFUSED
} gp_booking_state;

typedef struct gp_booking_spec {
    const char *name;          /* see "Names" above */
    const char *tenant;        /* path of a leaf tenant */
    const char *made_by;       /* who booked it (user or admin), optional, kept for the view */
    int n_gpu_types;           /* accepted GPU types, 0 = any; all its GPUs are of one type */
    const char *gpu_types[GP_MAX_GPU_TYPES];
    /* The shape: `replicas` replicas of `gpus` whole GPUs each (32 x 8),
     * each replica on one node (GP_TOPO_NVLINK: in one NVLink domain),
     * all of them in one fabric block for GP_TOPO_BLOCK.  With
     * mig_profile set ("1g.10gb"), `replicas` is a number of MIG instances
     * of that profile and `gpus` must be 1: the booking holds as many
     * whole MIG-mode GPUs as those instances need (7 x 1g.10gb per H100),
     * and jobs that name it create the instances there. */
    int replicas;              /* 1..GP_MAX_REPLICAS */
    int gpus;                  /* 1..GP_MAX_GPUS_PER_NODE */
    const char *mig_profile;   /* NULL or "" = whole GPUs */
    gp_topology topology;
    int64_t start, end;        /* the window [start, end), seconds on the engine's clock; start >= now */
    int lend;                  /* -1 = default (yes), 0 = idle booked GPUs stay idle, 1 = lend */
    int64_t no_show_s;         /* 0 = GP_BOOKING_NO_SHOW_DEFAULT_S; -1 = never released for no-show */
    gp_recurrence recurrence;
    int64_t until;             /* recurring: occurrences start before this (required), else 0 */
} gp_booking_spec;

/* What gp_engine_booking_add answers. */
typedef struct gp_booking_result {
    int occurrences;           /* bookings made: 1, or the occurrences of a recurring one */
    int accepted;              /* of them, admitted and placed */
    int64_t gpus;              /* whole GPUs held by each admitted occurrence */
    char first_refused[GP_BOOKING_NAME_MAX + 8]; /* the first refused occurrence's name, "" when none */
    char reason[GP_REASON_MAX];/* why the first refusal, "" when none */
    int64_t suggested_start;   /* after a refusal: the earliest start >= the refused start at which the
                                  same shape and duration would be admitted, searched over the booking
                                  calendar up to GP_BOOKING_HORIZON_S ahead; -1 when none */
} gp_booking_result;

/* Book.  A single booking: GP_OK and placed (result->accepted 1), or
 * GP_ERR_CONFLICT (field "capacity", "allowance", "guarantee" or
 * "topology", the message the reason) with result->reason and
 * result->suggested_start, and nothing kept.  A recurring booking: one
 * booking per occurrence, each admitted or refused on its own (refused
 * ones are kept in state refused with their reason); GP_OK when at least
 * one was admitted, else GP_ERR_CONFLICT and nothing kept.  Bad input
 * (GP_ERR_INVALID naming the field: name, tenant, gpu_types, replicas,
 * gpus, mig_profile, topology, start, end, no_show_s, recurrence, until),
 * an unknown tenant (GP_ERR_NOT_FOUND "tenant"), a name in use (by a
 * booking or a series; GP_ERR_EXISTS "name"): nothing kept.  result may
 * be NULL. */
gp_err gp_engine_booking_add(gp_engine *e, const gp_booking_spec *spec, int64_t now, gp_booking_result *result,
                             gp_error *err);

/* Cancel the booking `name` (planned, clearing or active: its GPUs are
 * free at once, its jobs keep running as ordinary guaranteed or burstable
 * work), or, naming a series, every occurrence of it not yet final.
 * GP_ERR_NOT_FOUND "name"; GP_ERR_CONFLICT "state" when it is final. */
gp_err gp_engine_booking_cancel(gp_engine *e, const char *name, int64_t now, gp_error *err);

/* Change one booking (not a series): each field only when its has_ flag
 * is set.  Shortening (a later start before it began, an earlier end) is
 * always accepted; extending (an earlier start, a later end) only when its
 * own GPUs are free of other bookings for the added time and the capacity
 * rules still hold (else GP_ERR_CONFLICT "end" / "start" with the reason,
 * nothing changed).  The end stays after both the start and now. */
typedef struct gp_booking_change {
    bool has_start;
    int64_t start;
    bool has_end;
    int64_t end;
    bool has_lend;
    bool lend;
} gp_booking_change;
gp_err gp_engine_booking_change(gp_engine *e, const char *name, const gp_booking_change *c, int64_t now,
                                gp_error *err);

/* ---- views ---- */

typedef struct gp_booking_event {
    int64_t time;
    gp_booking_state from, to; /* equal for a note that is no state change (a substitution, a shortage) */
    char reason[GP_REASON_MAX];
} gp_booking_event;

typedef struct gp_booking_info {
    char name[GP_BOOKING_NAME_MAX + 8];
    char series[GP_BOOKING_NAME_MAX]; /* the recurring booking it belongs to, "" for a single one */
    int occurrence;            /* 1-based within its series, 0 for a single one */
    uint32_t tenant;           /* tenant index (gp_engine_tenant_path) */
    char made_by[GP_NAME_MAX];
    int gpu_type;              /* the type it holds, -1 when refused */
    int replicas, gpus;        /* the shape as booked */
    char mig_profile[16];      /* "" = whole GPUs */
    gp_topology topology;
    int64_t created, start, end;
    bool lend;
    int64_t no_show_s;         /* -1 = never released */
    gp_recurrence recurrence;
    int64_t until;
    gp_booking_state state;
    char reason[GP_REASON_MAX];/* why its last state change (the refusal's reason for refused) */
    int n_gpus;                /* whole GPUs placed (gp_engine_booking_gpus); 0 when final */
    int64_t guaranteed_gpus;   /* of the booked GPUs, those inside the tenant's guarantee */
    int64_t allowance_gpus;    /* and those beyond it, charged to the org's allowance */
    int gpus_short;            /* GPUs lost (a node down) that no substitute could replace */
    int substitutions;         /* GPUs replaced so far after a node or GPU was lost */
    int64_t last_used;         /* when a job that names it last held its GPUs, -1 never */
    int jobs_running;          /* jobs naming it that hold GPUs now */
    int n_cleared;             /* jobs preempted or kept off its GPUs for it, ever */
    uint64_t cleared[GP_BOOKING_CLEARED_MAX]; /* the first of them (ids) */
    int n_history;             /* state changes and notes, ever; the last GP_BOOKING_HISTORY kept */
    gp_booking_event history[GP_BOOKING_HISTORY]; /* oldest first: min(n_history, GP_BOOKING_HISTORY) */
} gp_booking_info;

/* Bookings held (final ones too, until gp_engine_booking_forget);
 * indexes 0..count-1 in the order they were made, stable until a forget. */
size_t gp_engine_booking_count(const gp_engine *e);
/* Booking `index`; false when out of range. */
bool gp_engine_booking_at(const gp_engine *e, size_t index, gp_booking_info *out);
/* Booking `name`: GP_OK, or GP_ERR_NOT_FOUND "name". */
gp_err gp_engine_booking_get(const gp_engine *e, const char *name, gp_booking_info *out, gp_error *err);
/* The GPUs booking `name` holds (global GPU indexes, replica by replica:
 * gpus per replica consecutive; see gp_engine_gpu_get).  Returns how many
 * it holds (writes at most cap); 0 when none or no such booking. */
size_t gp_engine_booking_gpus(const gp_engine *e, const char *name, uint32_t *out, size_t cap);
/* Drop a booking in a final state from the engine's books (the caller
 * keeps its history).  GP_ERR_NOT_FOUND "name", GP_ERR_CONFLICT "state". */
gp_err gp_engine_booking_forget(gp_engine *e, const char *name, gp_error *err);

/* ---- the per-org allowance ---- */

/* An admin sets the GPU-hours per week that bookings of the top-level
 * tenant `org` and its subtree may take beyond their guarantees (weeks
 * start Monday 00:00 UTC; a booking counts against the week it starts in).
 * 0 = none beyond the guarantee (the default), -1 = unbounded.  Bookings
 * already admitted stay.  GP_ERR_NOT_FOUND "org", GP_ERR_INVALID
 * "org" (not top level) or "gpu_hours_per_week" (< -1). */
gp_err gp_engine_booking_allowance_set(gp_engine *e, const char *org, int64_t gpu_hours_per_week, int64_t now,
                                       gp_error *err);
typedef struct gp_booking_allowance {
    int64_t gpu_hours_per_week; /* as set, 0 none, -1 unbounded */
    int64_t week_start;         /* the week asked about: its Monday 00:00 UTC */
    double used_gpu_hours;      /* beyond-guarantee GPU-hours of live bookings starting that week */
    double left_gpu_hours;      /* what is left (never negative); unbounded: -1 */
} gp_booking_allowance;
/* What org (a top-level tenant, or any tenant: its org is used) has of its
 * allowance in the week holding time `at`.  GP_ERR_NOT_FOUND "org". */
gp_err gp_engine_booking_allowance_get(const gp_engine *e, const char *org, int64_t at, gp_booking_allowance *out,
                                       gp_error *err);

/* Names of the enums above ("none", "daily", "weekdays", "weekly";
 * "planned", "clearing", "active", "released_no_show", "ended",
 * "cancelled", "refused"); "unknown" out of range. */
const char *gp_recurrence_name(gp_recurrence r);
bool gp_recurrence_value(const char *name, gp_recurrence *out);
const char *gp_booking_state_name(gp_booking_state s);

#endif

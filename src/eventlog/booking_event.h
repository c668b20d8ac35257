/* booking_event.h - the event log's payloads of the booking events
 * (booking_add, booking_cancel, booking_change, booking_allowance; the
 * list and examples are in event.h).  Private to src/eventlog: event.c
 * calls these for those kinds.
 *
 * Ownership: a decoded event points into the gp_booking_event_storage
 * that event.c allocates with it (gp_event_free releases it).
 */
#ifndef GP_EVENTLOG_BOOKING_EVENT_H
#define GP_EVENTLOG_BOOKING_EVENT_H

#include "eventlog/event.h"

/* What a decoded booking event points into. */
typedef struct gp_booking_event_storage {
    gp_booking_spec spec;
    gp_booking_change change;
    char name[GP_BOOKING_NAME_MAX + 8];
    char tenant[GP_PATH_MAX];
    char made_by[GP_NAME_MAX];
    char types[GP_MAX_GPU_TYPES][GP_NAME_MAX];
    char mig_profile[16];
} gp_booking_event_storage;

/* The payload of a booking event (a new reference; NULL when out of memory). */
json_t *gp_booking_event_payload(const gp_event *ev);
/* Reads a booking event's payload into ev (pointing into st), strictly. */
gp_err gp_booking_event_decode(const json_t *p, gp_event *ev, gp_booking_event_storage *st, gp_error *err);

/* event.c's key checks: every key of p is among keys / and all are present. */
gp_err gp__event_only_keys(const json_t *p, const char *const *keys, int n, gp_error *err);
gp_err gp__event_expect_keys(const json_t *p, const char *const *keys, int n, gp_error *err);

#endif

/* booking_json.h - a booking as the API reads and writes it (issue 34).
 *
 * POST /v1/bookings's body into a gp_booking_spec (core/booking.h), PATCH's
 * into a gp_booking_change, and a gp_booking_info into the JSON every
 * answer shows (docs/api.md, "Bookings").  The API's shape is the one a
 * person books with: "gpus" in all and "replica_gpus" per replica (whole
 * GPUs on one node each; default: all of them when 8 or fewer, else 8), or
 * "mig_profile" and "instances"; "start" and "end" or "duration_s" in
 * epoch seconds; "repeat" and "until" for a recurring booking.
 *
 * Bad input: GP_ERR_INVALID naming the field as the caller spelled it.
 *
 * Ownership: a gp_booking_body holds the text its spec points into; the
 * spec is valid while the body is.  Views are new references.
 */
#ifndef GP_SERVER_BOOKING_JSON_H
#define GP_SERVER_BOOKING_JSON_H

#include "core/engine.h"

#include <jansson.h>

typedef struct gp_booking_body {
    gp_booking_spec spec;
    char name[GP_BOOKING_NAME_MAX];
    char tenant[GP_PATH_MAX];
    char made_by[GP_NAME_MAX];
    char gpu_type[GP_NAME_MAX];
    char mig_profile[16];
} gp_booking_body;

/* body -> b (tenant "" when the body names none: the caller fills it).
 * now: the duration's start is checked against nothing here (the engine
 * checks the window against its clock). */
gp_err gp_booking_body_parse(const json_t *body, gp_booking_body *b, gp_error *err);
/* {"end", "start", "lend"}: at least one. */
gp_err gp_booking_change_parse(const json_t *body, gp_booking_change *c, gp_error *err);
/* A booking as answers show it: its spec, state, reason, placement (node
 * by node), what was cleared for it and its history. */
json_t *gp_booking_view(const gp_engine *e, const gp_booking_info *b);
/* An org's allowance: {"org", "gpu_hours_per_week" (null: unbounded),
 * "week_start", "used_gpu_hours", "gpu_hours_left" (null: unbounded)}. */
json_t *gp_booking_allowance_view(const char *org, const gp_booking_allowance *a);

#endif

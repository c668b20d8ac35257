/* timefmt.h - times as a person reads them: local date-times and ages.
 *
 * The daemon speaks epoch seconds (docs/api.md: the API and `--json` keep
 * them); the CLI's human output turns them into the reader's local time
 * (TZ is respected) and ages, and reads the times a person types:
 *
 *     gp_time_local(1732431234)            "2024-11-24 06:53:54"    (TZ=UTC)
 *     gp_time_age(t, now = t + 190)        "3m ago"
 *     gp_time_age(t, now = t - 7200)       "in 2h"
 *     gp_time_human(t, now = t + 190)      "2024-11-24 06:53:54 (3m ago)"
 *     gp_time_parse("2024-11-24 06:53")    1732431180               (TZ=UTC)
 *     gp_time_parse("90m", now)            now - 5400               (an age: that long ago)
 *     gp_time_parse("-24h", now)           now - 86400              (the same, signed)
 *     gp_time_parse("+2h", now)            now + 7200
 *     gp_time_parse("2024-11-24T06:53:00+02:00")  1732423980       (ISO 8601 with its zone)
 *     gp_duration(7300)                    "2h"
 *     gp_time_in_text("grace ends at t=1732431294", now = 1732431234)
 *                                          "grace ends at 2024-11-24 06:54:54 (in 1m)"
 *
 * An age keeps one unit, rounded toward zero: seconds under a minute,
 * minutes under an hour, hours under two days, then days; "just now"
 * for the same second.
 *
 * All are pure functions of their arguments and the TZ setting; `now` is
 * an argument (the caller reads the clock).  Buffers are the caller's;
 * the formatters return buf.
 */
#ifndef GP_CLI_TIMEFMT_H
#define GP_CLI_TIMEFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "YYYY-MM-DD HH:MM:SS" in local time. */
const char *gp_time_local(int64_t t, char *buf, size_t cap);
/* "YYYY-MM-DDTHH:MM:SSZ" (ISO 8601, UTC): for CSV and other machine output. */
const char *gp_time_iso(int64_t t, char *buf, size_t cap);
/* "45s ago", "3m ago", "2h ago", "3d ago", "in 2h", "just now". */
const char *gp_time_age(int64_t t, int64_t now, char *buf, size_t cap);
/* A span in gp_time_age's one unit, without "ago": "45s", "3m", "2h", "3d";
 * "0s" for none (negative spans read as none). */
const char *gp_duration(int64_t seconds, char *buf, size_t cap);
/* gp_time_local and gp_time_age together: "2024-11-24 06:53:54 (3m ago)". */
const char *gp_time_human(int64_t t, int64_t now, char *buf, size_t cap);

/* text with every "t=SECONDS" (at the start or after a space: the
 * engine's reasons say "grace ends at t=1795310057") replaced by
 * gp_time_human's form; cut to cap.  The rest is copied as is. */
const char *gp_time_in_text(const char *text, int64_t now, char *buf, size_t cap);

/* Reads epoch seconds, a local "YYYY-MM-DD", "YYYY-MM-DD HH:MM[:SS]" (a
 * 'T' may replace the space; a zone suffix "Z", "+HH:MM", "+HHMM" or
 * "+HH" makes it that zone's time instead of local), or a relative time
 * "N" + s|m|h|d|w (util/duration.h): "24h" and "-24h" that long before now, "+24h" that
 * long after.  False (out untouched) when text is none of these. */
bool gp_time_parse(const char *text, int64_t now, int64_t *out);

#endif

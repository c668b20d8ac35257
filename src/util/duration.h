/* duration.h - spans of time as people type them: "30d", "12h", "2:00:00".
 *
 * One parser for every flag and file field that takes a span: the CLI's
 * `token create --ttl`, `submit --time-limit/--grace/--runtime`, gpupoold's
 * `--member-token-ttl`, the ages `usage --from` reads ("7d" = seven days
 * ago), the durations of job and tenant files (docs/cli.md, `submit`).
 *
 *     gp_duration_parse("45s")  45          gp_duration_parse("2w")        1209600
 *     gp_duration_parse("90m")  5400        gp_duration_parse("0")         0
 *     gp_duration_parse("30d")  2592000     gp_duration_parse("30")        false (no unit)
 *     gp_duration_parse("2:00:00")  7200    gp_duration_parse("2-00:00:00")  172800
 *     gp_duration_parse_seconds("30")  30 (a bare number is seconds)
 *
 * A whole number, then one unit: s, m, h, d (86400 s) or w (7 d).  "0"
 * alone is zero (no unit needed: zero of any unit is the same).  Or one of
 * Slurm's --time forms: M:SS, H:MM:SS, D-H, D-H:MM, D-H:MM:SS (parts after
 * the first two digits each, below 60; hours after days below 24).  Slurm
 * reads a bare number as minutes; here a bare number is refused, or read
 * as seconds by gp_duration_parse_seconds (for fields that always took
 * seconds).  Nothing else: no sign, no fraction, no spaces, at most 2^40
 * seconds.
 *
 * Ownership: nothing is allocated.
 */
#ifndef GP_UTIL_DURATION_H
#define GP_UTIL_DURATION_H

#include <stdbool.h>
#include <stdint.h>

/* What gp_duration_parse accepts, for error messages. */
#define GP_DURATION_FORMS "a whole number and a unit (45s, 90m, 12h, 30d, 2w) or H:MM:SS, D-HH:MM:SS"
/* What gp_duration_parse_seconds accepts. */
#define GP_DURATION_SECONDS_FORMS "seconds (7200), a whole number and a unit (45s, 90m, 2h, 1d) or H:MM:SS, D-HH:MM:SS"

/* False (out untouched) when text is not a duration. */
bool gp_duration_parse(const char *text, int64_t *seconds);
/* The same, and a bare whole number as seconds. */
bool gp_duration_parse_seconds(const char *text, int64_t *seconds);

#endif

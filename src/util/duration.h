/* duration.h - spans of time as people type them: "30d", "12h", "2w".
 *
 * One parser for every flag that takes a span: the CLI's `token create
 * --ttl`, gpupoold's `--member-token-ttl`, and the ages `usage --from`
 * reads ("7d" = seven days ago).
 *
 *     gp_duration_parse("45s")  45          gp_duration_parse("2w")  1209600
 *     gp_duration_parse("90m")  5400        gp_duration_parse("0")   0
 *     gp_duration_parse("30d")  2592000     gp_duration_parse("30")  false (no unit)
 *
 * A whole number, then one unit: s, m, h, d (86400 s) or w (7 d).  "0"
 * alone is zero (no unit needed: zero of any unit is the same).  Nothing
 * else: no sign, no fraction, no spaces, at most 2^40 seconds.
 *
 * Ownership: nothing is allocated.
 */
#ifndef GP_UTIL_DURATION_H
#define GP_UTIL_DURATION_H

#include <stdbool.h>
#include <stdint.h>

/* What gp_duration_parse accepts, for error messages. */
#define GP_DURATION_FORMS "a whole number and a unit: 45s, 90m, 12h, 30d, 2w"

/* False (out untouched) when text is not a duration. */
bool gp_duration_parse(const char *text, int64_t *seconds);

#endif

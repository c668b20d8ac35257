/* civil.h - calendar dates as days since the epoch, without the C
 * library's time zone machinery (timegm is not standard C).
 *
 *     gp_days_from_civil(1970, 1, 1)   0
 *     gp_days_from_civil(2026, 11, 1)  20758     (x 86400 = 1793491200)
 *
 * Pure: the proleptic Gregorian calendar, any year.
 */
#ifndef GP_UTIL_CIVIL_H
#define GP_UTIL_CIVIL_H

#include <stdint.h>

/* Days since 1970-01-01 of year y, month m (1..12), day d (H. Hinnant's
 * days_from_civil). */
int64_t gp_days_from_civil(int64_t y, int64_t m, int64_t d);

#endif

/* civil.c - calendar dates as days since the epoch (civil.h).
 *
 * Howard Hinnant's days_from_civil: shift the year to start in March so
 * the leap day is the last day of the year, count whole 400-year eras
 * (146,097 days each), then the day of the era.
 */
#include "util/civil.h"

int64_t gp_days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

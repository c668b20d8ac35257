/* duration.c - "30d" and friends (see duration.h). */
#include "util/duration.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool gp_duration_parse(const char *text, int64_t *seconds)
{
    static const char names[] = "smhdw";
    static const int64_t unit_seconds[] = {1, 60, 3600, 86400, 7 * 86400};
    if (!text || text[0] < '0' || text[0] > '9')
        return false;
    if (strcmp(text, "0") == 0) {
        *seconds = 0;
        return true;
    }
    char *end;
    errno = 0;
    long long n = strtoll(text, &end, 10);
    const char *unit = end[0] && !end[1] ? strchr(names, end[0]) : NULL;
    if (errno || !unit || n > (INT64_C(1) << 40) / unit_seconds[unit - names])
        return false;
    *seconds = n * unit_seconds[unit - names];
    return true;
}

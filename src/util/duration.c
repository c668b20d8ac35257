/* duration.c - "30d", "2:00:00" and friends (see duration.h). */
#include "util/duration.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define GP__DURATION_MAX (INT64_C(1) << 40)

/* A whole number of digits only at *p (no sign, no space), at most max;
 * *p moves past it.  False when there are none or it is too big. */
static bool number(const char **p, int64_t max, int64_t *out)
{
    if (**p < '0' || **p > '9')
        return false;
    char *end;
    errno = 0;
    long long n = strtoll(*p, &end, 10);
    if (errno || n > max)
        return false;
    *p = end;
    *out = n;
    return true;
}

/* "45s", "90m", "12h", "30d", "2w", "0". */
static bool with_unit(const char *text, int64_t *seconds)
{
    static const char names[] = "smhdw";
    static const int64_t unit_seconds[] = {1, 60, 3600, 86400, 7 * 86400};
    if (strcmp(text, "0") == 0) {
        *seconds = 0;
        return true;
    }
    int64_t n;
    if (!number(&text, GP__DURATION_MAX, &n))
        return false;
    const char *unit = text[0] && !text[1] ? strchr(names, text[0]) : NULL;
    if (!unit || n > GP__DURATION_MAX / unit_seconds[unit - names])
        return false;
    *seconds = n * unit_seconds[unit - names];
    return true;
}

/* Slurm's clock forms: "M:SS", "H:MM:SS", "D-H", "D-H:MM", "D-H:MM:SS".
 * After the first, every part has two digits and is below 60 (hours
 * after a day: below 24). */
static bool clock_form(const char *text, int64_t *seconds)
{
    int64_t days = 0, parts[2] = {0, 0}, first;
    int n = 0;
    bool has_days = strchr(text, '-') != NULL;
    if (has_days && (!number(&text, GP__DURATION_MAX / 86400, &days) || *text++ != '-'))
        return false;
    if (!number(&text, GP__DURATION_MAX, &first))
        return false;
    while (*text == ':' && n < 2) {
        const char *start = ++text;
        if (!number(&text, 59, &parts[n]) || text - start != 2)
            return false;
        n++;
    }
    if (*text || (!has_days && n == 0) || (has_days && first > 23))
        return false;
    int64_t sum;
    if (has_days) /* D-H[:MM[:SS]] */
        sum = days * 86400 + first * 3600 + (n > 0 ? parts[0] * 60 : 0) + (n > 1 ? parts[1] : 0);
    else if (n == 1) /* M:SS */
        sum = first > GP__DURATION_MAX / 60 ? -1 : first * 60 + parts[0];
    else /* H:MM:SS */
        sum = first > GP__DURATION_MAX / 3600 ? -1 : first * 3600 + parts[0] * 60 + parts[1];
    if (sum < 0 || sum > GP__DURATION_MAX)
        return false;
    *seconds = sum;
    return true;
}

bool gp_duration_parse(const char *text, int64_t *seconds)
{
    if (!text)
        return false;
    return with_unit(text, seconds) || clock_form(text, seconds);
}

bool gp_duration_parse_seconds(const char *text, int64_t *seconds)
{
    if (!text)
        return false;
    const char *p = text;
    int64_t n;
    if (number(&p, GP__DURATION_MAX, &n) && *p == '\0') {
        *seconds = n;
        return true;
    }
    return gp_duration_parse(text, seconds);
}

/* timefmt.c - local date-times and ages for the CLI (see timefmt.h). */
#include "cli/timefmt.h"

#include "util/civil.h"
#include "util/duration.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *gp_time_local(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!localtime_r(&tt, &tm) || strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        snprintf(buf, cap, "%lld", (long long)t); /* out of the calendar's range: say what we got */
    return buf;
}

const char *gp_time_iso(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, cap, "%lld", (long long)t);
    return buf;
}

const char *gp_time_age(int64_t t, int64_t now, char *buf, size_t cap)
{
    static const struct {
        int64_t below; /* this unit is used for spans shorter than this */
        int64_t seconds;
        char name;
    } units[] = {{60, 1, 's'}, {3600, 60, 'm'}, {2 * 86400, 3600, 'h'}, {INT64_MAX, 86400, 'd'}};
    if (t == now) {
        snprintf(buf, cap, "just now");
        return buf;
    }
    int64_t span = t < now ? now - t : t - now;
    size_t u = 0;
    while (span >= units[u].below)
        u++;
    long long n = (long long)(span / units[u].seconds);
    if (t < now)
        snprintf(buf, cap, "%lld%c ago", n, units[u].name);
    else
        snprintf(buf, cap, "in %lld%c", n, units[u].name);
    return buf;
}

const char *gp_duration(int64_t seconds, char *buf, size_t cap)
{
    char age[32];
    gp_time_age(0, seconds < 0 ? 0 : seconds, age, sizeof age);
    if (strcmp(age, "just now") == 0)
        snprintf(buf, cap, "0s");
    else
        snprintf(buf, cap, "%.*s", (int)(strlen(age) - strlen(" ago")), age);
    return buf;
}

const char *gp_time_human(int64_t t, int64_t now, char *buf, size_t cap)
{
    char local[64], age[32];
    snprintf(buf, cap, "%s (%s)", gp_time_local(t, local, sizeof local), gp_time_age(t, now, age, sizeof age));
    return buf;
}

const char *gp_time_in_text(const char *text, int64_t now, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const char *p = text; *p && used + 1 < cap;) {
        char *end = NULL;
        bool stamp = p[0] == 't' && p[1] == '=' && p[2] >= '0' && p[2] <= '9' && (p == text || p[-1] == ' ');
        long long t = stamp ? strtoll(p + 2, &end, 10) : 0;
        char human[96];
        const char *piece = stamp ? gp_time_human(t, now, human, sizeof human) : NULL;
        int n = piece ? snprintf(buf + used, cap - used, "%s", piece) : snprintf(buf + used, cap - used, "%c", *p);
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
        p = stamp ? end : p + 1;
    }
    buf[used] = '\0';
    return buf;
}

static bool parse_epoch(const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!text[0] || *end || errno || v < 0)
        return false;
    *out = v;
    return true;
}

/* "7d", "12h", "90m", "30s", "2w" (util/duration.h) or "-24h": that long
 * before now; "+2h": that long after. */
static bool parse_relative(const char *text, int64_t now, int64_t *out)
{
    int sign = text[0] == '+' ? 1 : -1;
    int64_t span;
    if (!gp_duration_parse(text[0] == '+' || text[0] == '-' ? text + 1 : text, &span))
        return false;
    *out = now + sign * span;
    return true;
}

/* A zone suffix: "Z", "+HH:MM", "+HHMM", "+HH" (or '-'), as seconds east
 * of UTC; false when text is not one. */
static bool parse_zone(const char *text, int64_t *east)
{
    int hh = 0, mm = 0, used = 0;
    if (strcmp(text, "Z") == 0) {
        *east = 0;
        return true;
    }
    if ((text[0] != '+' && text[0] != '-') ||
        !((sscanf(text + 1, "%2d:%2d%n", &hh, &mm, &used) == 2 && used == 5) ||
          (sscanf(text + 1, "%2d%2d%n", &hh, &mm, &used) == 2 && used == 4) ||
          (sscanf(text + 1, "%2d%n", &hh, &used) == 1 && used == 2)) ||
        text[1 + used] != '\0' || hh > 23 || mm > 59)
        return false;
    *east = (text[0] == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
    return true;
}

/* "YYYY-MM-DD", "YYYY-MM-DD HH:MM", "YYYY-MM-DD HH:MM:SS" ('T' or ' '), local time. */
static bool parse_date_time(const char *text, int64_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    char sep = 0;
    int used = 0, got = sscanf(text, "%4d-%2d-%2d%n%c%2d:%2d%n:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &used,
                               &sep, &tm.tm_hour, &tm.tm_min, &used, &tm.tm_sec, &used);
    bool shape = got == 3 || ((got == 6 || got == 7) && (sep == ' ' || sep == 'T'));
    int64_t east = 0;
    bool zoned = shape && got >= 6 && text[used] != '\0' && parse_zone(text + used, &east);
    if (!shape || (text[used] != '\0' && !zoned) || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
        tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    int year = tm.tm_year, month = tm.tm_mon, day = tm.tm_mday;
    if (zoned) {
        int64_t first = gp_days_from_civil(year, month, 1);
        int64_t next = gp_days_from_civil(year + (month == 12), month % 12 + 1, 1);
        if (day > next - first)
            return false; /* 2024-02-30 */
        int64_t days = first + day - 1;
        *out = days * 86400 + tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec - east;
        return true;
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_isdst = -1; /* let the zone say whether summer time applies */
    time_t t = mktime(&tm);
    /* mktime normalises 2024-02-31 to March: refuse a date that moved */
    if (t == (time_t)-1 || tm.tm_year + 1900 != year || tm.tm_mon + 1 != month || tm.tm_mday != day)
        return false;
    *out = (int64_t)t;
    return true;
}

bool gp_time_parse(const char *text, int64_t now, int64_t *out)
{
    if (!text)
        return false;
    return parse_epoch(text, out) || parse_relative(text, now, out) || parse_date_time(text, out);
}

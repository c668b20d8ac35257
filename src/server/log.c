/* log.c - key=value log lines (see log.h). */
#include "server/log.h"

#include "util/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static gp_log_level current_level = GP_LOG_INFO;
static const char *const LEVEL_NAMES[] = {"debug", "info", "warn", "error"};

void gp_log_set_level(gp_log_level level)
{
    current_level = level;
}

bool gp_log_level_parse(const char *name, gp_log_level *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, LEVEL_NAMES[i]) == 0) {
            *out = (gp_log_level)i;
            return true;
        }
    return false;
}

bool gp_log_enabled(gp_log_level level)
{
    return level >= current_level;
}

void gp_log(gp_log_level level, const char *event, const char *fmt, ...)
{
    if (!gp_log_enabled(level))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char line[2048];
    int n = snprintf(line, sizeof line, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s event=%s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, LEVEL_NAMES[level], event);
    if (n < 0 || (size_t)n >= sizeof line)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

const char *gp_log_quote(const char *text, char *out, size_t cap)
{
    size_t o = 0;
    if (cap < 3) {
        if (cap)
            out[0] = '\0';
        return out;
    }
    out[o++] = '"';
    for (const char *p = text ? text : ""; *p && o + 3 < cap; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f)
            continue;
        if (c == '"' || c == '\\')
            out[o++] = '\\';
        out[o++] = (char)c;
    }
    out[o++] = '"';
    out[o] = '\0';
    gp_utf8_scrub(out); /* bytes a client sent, or a character cut at cap */
    return out;
}

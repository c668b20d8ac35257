/* trace_csv.c - what every trace reader shares: lines, cells, bad rows.
 *
 * The trace formats are plain comma-separated files without quoting, a
 * header line, and numbers.  Splitting is in place; number parsing is
 * strict (the whole cell must be the number), because a misread trace
 * silently changes every figure a simulation reports.
 */
#include "sim/trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int gp_trace_csv_split(char *line, char **cols, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return -1;
        cols[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            break;
        *comma = '\0';
        p = comma + 1;
    }
    return n;
}

bool gp_trace_parse_i64(const char *s, int64_t *out)
{
    if (!s || s[0] == '\0')
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end == '.') { /* "12.0" is accepted as 12; "12.5" is not an integer */
        char *frac = end + 1;
        while (*frac == '0')
            frac++;
        if (frac == end + 1 || *frac != '\0')
            return false;
        end = frac;
    }
    if (*end != '\0' || errno == ERANGE)
        return false;
    *out = v;
    return true;
}

gp_err gp_trace_malformed(gp_trace *t, const gp_trace_read_opts *opts, const char *path, size_t line,
                          gp_error *err, const char *fmt, ...)
{
    char why[GP_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (opts && opts->strict)
        return gp_error_set(err, GP_ERR_INVALID, "trace", "%s:%zu: %s", path, line, why);
    if (t->malformed < sizeof t->first_malformed / sizeof t->first_malformed[0])
        t->first_malformed[t->malformed] = line;
    t->malformed++;
    if (opts && opts->warn) {
        if (t->malformed <= opts->max_warnings)
            fprintf(opts->warn, "%s:%zu: %s (row skipped)\n", path, line, why);
        else if (t->malformed == opts->max_warnings + 1)
            fprintf(opts->warn, "%s: more malformed rows are skipped without a message\n", path);
    }
    return GP_OK;
}

gp_err gp_trace_each_line(const char *path, gp_trace_line_fn fn, void *ctx, gp_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "trace", "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    gp_err rc = GP_OK;
    while (rc == GP_OK && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        rc = fn(ctx, line, lineno, err);
    }
    free(line);
    fclose(f);
    return rc;
}

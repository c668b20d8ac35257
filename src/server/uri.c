/* uri.c - the request target as it arrives (see uri.h).
 *
 * One pass over the raw target: the path segment by segment, then the
 * query pair by pair, each piece percent-decoded into a buffer and checked
 * as text.  Nothing is kept: the handlers read libmicrohttpd's decoded
 * copy, which is safe to read once the raw form has passed.
 */
#include "server/uri.h"

#include "util/text.h"

#include <stdio.h>
#include <string.h>

enum { MAX_QUERY_KEYS = 16, KEY_MAX = 64 };

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes n bytes of s into out (room for n bytes); false on a malformed
 * escape. */
static bool decode(const char *s, size_t n, bool plus_is_space, char *out, size_t *out_n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            if (i + 2 >= n)
                return false;
            int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
            if (hi < 0 || lo < 0)
                return false;
            out[k++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[k++] = plus_is_space && s[i] == '+' ? ' ' : s[i];
        }
    }
    *out_n = k;
    return true;
}

static int bad(gp_error *err, const char *field, const char *msg)
{
    gp_error_set(err, GP_ERR_INVALID, field, "%s", msg);
    return 400;
}

static int check_segment(const char *s, size_t n, char *buf, gp_error *err)
{
    size_t len;
    if (n == 0)
        return bad(err, "path", "the path has an empty segment (\"//\" or a trailing '/')");
    for (size_t i = 0; i + 2 < n; i++)
        if (s[i] == '%' && s[i + 1] == '2' && (s[i + 2] == 'F' || s[i + 2] == 'f'))
            return bad(err, "path", "an encoded '/' (%2F) in a path segment is ambiguous; use '/'");
    if (!decode(s, n, false, buf, &len))
        return bad(err, "path", "the path has a malformed %-escape (% must be followed by two hex digits)");
    if ((len == 1 && buf[0] == '.') || (len == 2 && buf[0] == '.' && buf[1] == '.'))
        return bad(err, "path", "the path has a \".\" or \"..\" segment");
    if (len > GP_URI_SEGMENT_MAX)
        return bad(err, "path", "a path segment is longer than 255 bytes");
    if (!gp_text_printable(buf, len))
        return bad(err, "path", "the path has a control character (such as %00) or is not UTF-8");
    return 0;
}

static int check_path(const char *path, size_t n, char *buf, gp_error *err)
{
    if (n == 0 || path[0] != '/')
        return bad(err, "path", "the request target must be a path starting with '/'");
    if (memchr(path, '#', n))
        return bad(err, "path", "the request target may not have a '#' fragment");
    if (n == 1)
        return 0; /* "/" */
    for (size_t start = 1; start <= n;) {
        const char *slash = memchr(path + start, '/', n - start);
        size_t end = slash ? (size_t)(slash - path) : n;
        int status = check_segment(path + start, end - start, buf, err);
        if (status)
            return status;
        start = end + 1;
    }
    return 0;
}

typedef struct query_keys {
    char key[MAX_QUERY_KEYS][KEY_MAX + 1];
    int n;
} query_keys;

static int check_pair(const char *s, size_t n, char *buf, query_keys *seen, gp_error *err)
{
    const char *eq = memchr(s, '=', n);
    size_t kn = eq ? (size_t)(eq - s) : n, len;
    if (n == 0 || kn == 0)
        return bad(err, "query", "the query has an empty parameter or name (\"&&\", \"=x\" or a trailing '&')");
    if (!decode(s, kn, true, buf, &len) || len > KEY_MAX || !gp_text_printable(buf, len))
        return bad(err, "query", "a query parameter name is malformed, not UTF-8 or has a control character");
    buf[len] = '\0';
    char key[KEY_MAX + 1];
    memcpy(key, buf, len + 1);
    for (int i = 0; i < seen->n; i++)
        if (strcmp(seen->key[i], key) == 0) {
            gp_error_set(err, GP_ERR_INVALID, key, "query parameter %s is given twice", key);
            return 400;
        }
    if (seen->n == MAX_QUERY_KEYS)
        return bad(err, "query", "the query has more than 16 parameters");
    memcpy(seen->key[seen->n++], key, len + 1);
    if (eq && (!decode(eq + 1, n - kn - 1, true, buf, &len) || !gp_text_printable(buf, len))) {
        gp_error_set(err, GP_ERR_INVALID, key,
                     "query parameter %s has a malformed %%-escape, a control character (such as %%00) or is "
                     "not UTF-8",
                     key);
        return 400;
    }
    return 0;
}

static int check_query(const char *q, size_t n, char *buf, gp_error *err)
{
    query_keys seen = {.n = 0};
    if (n == 0)
        return 0; /* "/v1/jobs?" */
    for (size_t start = 0; start <= n;) {
        const char *amp = memchr(q + start, '&', n - start);
        size_t end = amp ? (size_t)(amp - q) : n;
        int status = check_pair(q + start, end - start, buf, &seen, err);
        if (status)
            return status;
        start = end + 1;
    }
    return 0;
}

int gp_uri_check(const char *raw, gp_error *err)
{
    size_t n = raw ? strlen(raw) : 0;
    if (n > GP_URI_MAX) {
        gp_error_set(err, GP_ERR_INVALID, "url", "the URL is longer than %d bytes", GP_URI_MAX);
        return 414;
    }
    char buf[GP_URI_MAX + 1];
    const char *q = raw ? memchr(raw, '?', n) : NULL;
    size_t pn = q ? (size_t)(q - raw) : n;
    int status = check_path(raw ? raw : "", pn, buf, err);
    if (status == 0 && q)
        status = check_query(q + 1, n - pn - 1, buf, err);
    return status;
}

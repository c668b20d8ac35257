/* index_set.c - which members of a job array, as people type them (see index_set.h).
 *
 * The set is kept as sorted, disjoint, non-adjacent ranges, so two
 * spellings of the same members ("5-7,6" and "5-7") are one set and
 * format the same way.
 */
#include "util/index_set.h"

#include <stdio.h>
#include <string.h>

/* A whole number 0..GP_INDEX_MAX at *p, advancing p; false when none. */
static bool read_index(const char **p, uint32_t *out)
{
    const char *s = *p;
    uint32_t v = 0;
    if (*s < '0' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (uint32_t)(*s - '0');
        if (v > GP_INDEX_MAX)
            return false;
        s++;
    }
    *p = s;
    *out = v;
    return true;
}

bool gp_index_set_add(gp_index_set *s, uint32_t lo, uint32_t hi)
{
    int first = 0; /* the first range that ends at or after lo - 1 */
    while (first < s->n && s->r[first].hi + 1 < lo)
        first++;
    int last = first; /* one past the last range that starts at or before hi + 1 */
    while (last < s->n && s->r[last].lo <= hi + 1)
        last++;
    if (first == last) { /* touches nothing: a new range at first */
        if (s->n == GP_INDEX_RANGES_MAX)
            return false;
        memmove(&s->r[first + 1], &s->r[first], (size_t)(s->n - first) * sizeof s->r[0]);
        s->r[first] = (gp_index_range){lo, hi};
        s->n++;
        return true;
    }
    gp_index_range merged = {lo < s->r[first].lo ? lo : s->r[first].lo,
                             hi > s->r[last - 1].hi ? hi : s->r[last - 1].hi};
    memmove(&s->r[first + 1], &s->r[last], (size_t)(s->n - last) * sizeof s->r[0]);
    s->r[first] = merged;
    s->n -= last - first - 1;
    return true;
}

/* One item ("4" or "4-9") at *p, up to a comma or the end. */
static bool parse_item(const char **p, gp_index_set *out, char *why, size_t cap)
{
    const char *start = *p;
    size_t len = strcspn(start, ",");
    uint32_t lo, hi;
    if (len == 0) {
        snprintf(why, cap, "an empty item %s", start[0] ? "between commas" : "at the end");
        return false;
    }
    bool ok = read_index(p, &lo);
    hi = lo;
    if (ok && **p == '-') {
        (*p)++;
        ok = read_index(p, &hi);
    }
    if (!ok || (**p != ',' && **p != '\0')) {
        snprintf(why, cap, "%.*s: not an index (0-%d) or a range LO-HI", (int)(len > 40 ? 40 : len), start,
                 GP_INDEX_MAX);
        return false;
    }
    if (hi < lo) {
        snprintf(why, cap, "%.*s: the range ends before it starts", (int)(len > 40 ? 40 : len), start);
        return false;
    }
    if (!gp_index_set_add(out, lo, hi)) {
        snprintf(why, cap, "more than %d separate ranges", GP_INDEX_RANGES_MAX);
        return false;
    }
    return true;
}

bool gp_index_set_parse(const char *text, gp_index_set *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (!text || !text[0]) {
        snprintf(why, cap, "no index given");
        return false;
    }
    const char *p = text;
    for (;;) {
        if (!parse_item(&p, out, why, cap))
            return false;
        if (*p == '\0')
            return true;
        p++; /* the comma */
    }
}

bool gp_index_set_has(const gp_index_set *s, uint32_t i)
{
    for (int k = 0; k < s->n; k++)
        if (i >= s->r[k].lo && i <= s->r[k].hi)
            return true;
    return false;
}

uint32_t gp_index_set_count(const gp_index_set *s)
{
    uint32_t n = 0;
    for (int k = 0; k < s->n; k++)
        n += s->r[k].hi - s->r[k].lo + 1;
    return n;
}

char *gp_index_set_format(const gp_index_set *s, char *buf, size_t cap)
{
    size_t used = 0;
    if (cap)
        buf[0] = '\0';
    for (int k = 0; k < s->n && used < cap; k++) {
        const gp_index_range *r = &s->r[k];
        int n = r->lo == r->hi ? snprintf(buf + used, cap - used, "%s%u", k ? "," : "", r->lo)
                               : snprintf(buf + used, cap - used, "%s%u-%u", k ? "," : "", r->lo, r->hi);
        used += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

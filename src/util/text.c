/* text.c - UTF-8 validity and control characters (see text.h).
 *
 * One decoder serves all three functions: utf8_next reads one code point
 * and says how many bytes it took, or 0 for an invalid sequence.
 *
 * Example: "gpu\xe2\x80\xae" is valid UTF-8 (U+202E, RIGHT-TO-LEFT
 * OVERRIDE) but not printable; "a\xc3" is not valid (a two-byte sequence
 * cut short), and gp_utf8_scrub makes it "a?".
 */
#include "util/text.h"

#include <stdint.h>

/* Decodes the sequence at s (n bytes left) into *cp; returns its length,
 * 0 when invalid. */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, v = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, v = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

static bool is_control(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

static bool walk(const char *s, size_t n, bool printable)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = utf8_next(p + i, n - i, &cp);
        if (len == 0 || (printable && is_control(cp)))
            return false;
        i += len;
    }
    return true;
}

bool gp_utf8_valid(const char *s, size_t n)
{
    return walk(s, n, false);
}

bool gp_text_printable(const char *s, size_t n)
{
    return walk(s, n, true);
}

void gp_utf8_scrub(char *s)
{
    unsigned char *p = (unsigned char *)s;
    size_t n = 0;
    while (p[n])
        n++;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = utf8_next(p + i, n - i, &cp);
        if (len == 0) {
            p[i++] = '?';
            continue;
        }
        i += len;
    }
}

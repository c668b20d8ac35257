/* suggest.c - nearest names and the flags of a usage text (see suggest.h). */
#include "cli/suggest.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#define NAME_MAX_LEN 64

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

size_t gp_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > NAME_MAX_LEN || lb > NAME_MAX_LEN)
        return la > lb ? la : lb; /* long words are never "near" anything */
    size_t d[NAME_MAX_LEN + 1][NAME_MAX_LEN + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < d[i][j])
                d[i][j] = d[i - 2][j - 2] + 1;
        }
    }
    return d[la][lb];
}

/* How far a typo of a name this long may be. */
static size_t tolerance(const char *typed)
{
    size_t n = strlen(typed);
    while (n > 0 && *typed == '-') { /* "--" is not part of the name */
        typed++;
        n--;
    }
    return n <= 4 ? 1 : n <= 8 ? 2 : 3;
}

const char *gp_suggest(const char *typed, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = tolerance(typed) + 1;
    for (size_t i = 0; i < n; i++) {
        size_t d = gp_edit_distance(typed, names[i]);
        if (d < best_d) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}

static bool flag_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_';
}

static bool seen(const char *word, size_t len, const char *const *flags, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(flags[i]) == len && strncmp(flags[i], word, len) == 0)
            return true;
    return false;
}

size_t gp_usage_flags(const char *usage, char *buf, size_t buf_cap, const char **flags, size_t cap)
{
    size_t n = 0, used = 0;
    for (const char *p = usage; (p = strstr(p, "--")) != NULL;) {
        bool starts_word = p == usage || !flag_char(p[-1]);
        size_t len = 2;
        while (flag_char(p[len]))
            len++;
        if (starts_word && len > 2 && isalpha((unsigned char)p[2]) && !seen(p, len, flags, n) && n < cap &&
            used + len + 1 <= buf_cap) {
            memcpy(buf + used, p, len);
            buf[used + len] = '\0';
            flags[n++] = buf + used;
            used += len + 1;
        }
        p += len;
    }
    return n;
}

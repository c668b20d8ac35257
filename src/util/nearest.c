/* nearest.c - the nearest known name to a mistyped one (see nearest.h). */
#include "util/nearest.h"

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

/* suggest.c - nearest names and the flags of a usage text (see suggest.h). */
#include "cli/suggest.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

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

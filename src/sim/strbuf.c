/* strbuf.c - a growable text buffer (see strbuf.h). */
#include "sim/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

#define GP__STRBUF_FIRST 4096

static bool reserve(gp_strbuf *b, size_t need)
{
    if (b->oom)
        return false;
    size_t total = b->len + need + 1;
    char *grown = gp_grow(b->text, &b->cap, total < GP__STRBUF_FIRST ? GP__STRBUF_FIRST : total, 1);
    if (!grown) {
        b->oom = true;
        return false;
    }
    b->text = grown;
    return true;
}

void gp_strbuf_printf(gp_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->text + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *gp_strbuf_take(gp_strbuf *b)
{
    if (!b->oom && !reserve(b, 0))
        return NULL;
    char *text = b->oom ? NULL : b->text;
    if (text)
        text[b->len] = '\0';
    else
        free(b->text);
    memset(b, 0, sizeof *b);
    return text;
}

void gp_strbuf_free(gp_strbuf *b)
{
    free(b->text);
    memset(b, 0, sizeof *b);
}

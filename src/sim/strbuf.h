/* strbuf.h - a growable text buffer for generated files and reports.
 *
 * The simulator writes YAML (generated fleets and tenant trees), JSON and
 * CSV; all of it is built with gp_strbuf_printf.  A failed allocation
 * sticks (oom = true) and later appends do nothing, so callers check once
 * at the end.
 *
 * Ownership: the buffer owns `text`; gp_strbuf_take hands it to the caller
 * (who frees it), gp_strbuf_free releases it.
 */
#ifndef GP_SIM_STRBUF_H
#define GP_SIM_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gp_strbuf {
    char *text;
    size_t len, cap;
    bool oom;
} gp_strbuf;

void gp_strbuf_printf(gp_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text (never NULL unless oom), ownership to the caller; the buffer is empty after. */
char *gp_strbuf_take(gp_strbuf *b);
void gp_strbuf_free(gp_strbuf *b);

#endif

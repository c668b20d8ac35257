/* text.h - is this byte string text a person can read?  UTF-8 and control
 * characters.
 *
 * Everything a client sends that ends up in a name, a path, a log line, an
 * audit row or a JSON answer passes one of these checks: JSON strings must
 * be UTF-8 (jansson refuses to build a string that is not, and a field it
 * could not build is null), and a name with a newline, an escape sequence
 * or a bidirectional override misleads whoever reads a table of jobs.
 *
 * Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
 * Control characters: C0 (U+0000..U+001F), DEL, C1 (U+0080..U+009F) and
 * the bidirectional embeddings, overrides and isolates (U+202A..U+202E,
 * U+2066..U+2069).
 *
 * Ownership: nothing is allocated; gp_utf8_scrub rewrites in place.
 */
#ifndef GP_UTIL_TEXT_H
#define GP_UTIL_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* n bytes of s are strict UTF-8 (NUL bytes count as U+0000, valid). */
bool gp_utf8_valid(const char *s, size_t n);
/* Valid UTF-8 without a control character (see above). */
bool gp_text_printable(const char *s, size_t n);
/* Replaces every byte of the NUL-terminated s that is not part of a valid
 * UTF-8 sequence by '?' (a sequence cut short by truncation too). */
void gp_utf8_scrub(char *s);

#endif

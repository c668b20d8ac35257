/* uri.h - the request target as it arrives: its size and exact validity.
 *
 * libmicrohttpd decodes the path and the query before a handler sees them,
 * and a decoded "%00" ends the C string: "/v1/tenants/a%00/../../evil"
 * reached the handler as "/v1/tenants/a".  So the target is checked here
 * exactly as the client sent it, before anything else looks at it, and a
 * request whose target is not exactly valid is refused without being
 * routed.  What is valid (docs/api.md, "Bad input"):
 *
 *   size      at most GP_URI_MAX bytes (414 otherwise, field "url");
 *   path      starts with '/'; no empty segment (no "//", no trailing
 *             '/'), no "." or ".." segment, none longer than
 *             GP_URI_SEGMENT_MAX bytes decoded, no encoded '/' (%2F), no
 *             '#'; decoded, every segment is UTF-8 without control
 *             characters (util/text.h; so never a NUL);
 *   escapes   '%' followed by two hex digits, everywhere;
 *   query     key=value pairs joined by '&': no empty pair, a non-empty
 *             key, each key at most once; decoded ('+' is a space), keys
 *             and values are UTF-8 without control characters.
 *
 * Errors name the field: "url" (size), "path", "query" (a malformed pair
 * or key), or the key itself (a bad value).
 *
 * Example: "/v1/jobs?tenant=research%2Fnlp&limit=5" is valid (an encoded
 * '/' in a query value is data); "/v1/tenants/research/nlp%00" is refused
 * (400, "path": a control character), "/v1/jobs?limit=5&limit=6" too (400,
 * "limit": given twice).
 */
#ifndef GP_SERVER_URI_H
#define GP_SERVER_URI_H

#include "util/error.h"

#define GP_URI_MAX 8192
#define GP_URI_SEGMENT_MAX 255

/* 0 when raw is valid; else the HTTP status (400 or 414), with err's field
 * and message filled. */
int gp_uri_check(const char *raw, gp_error *err);

#endif

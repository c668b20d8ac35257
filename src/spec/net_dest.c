/* net_dest.c - the one parser of a network destination and of a
 * "reach_from" entry (net_dest.h): gpupoold checks a tenant's "egress"
 * and "reach_from" with them, the agent's fence loads what they accept. */
#include "spec/net_dest.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static bool gp__port(const char *s, unsigned *out)
{
    char *end = NULL;
    if (!isdigit((unsigned char)s[0]))
        return false;
    unsigned long v = strtoul(s, &end, 10);
    *out = (unsigned)v;
    return *end == '\0' && v >= 1 && v <= 65535;
}

/* No bit of addr past prefix is set. */
static bool gp__host_bits_clear(const gp_netfence_dest *d)
{
    unsigned bytes = d->family == AF_INET ? 4 : 16;
    for (unsigned bit = d->prefix; bit < bytes * 8; bit++)
        if (d->addr[bit / 8] & (0x80u >> (bit % 8)))
            return false;
    return true;
}

/* "ADDR" or "ADDR/PREFIX" (the text is modified). */
static bool gp__addr_prefix(char *s, gp_netfence_dest *d)
{
    char *slash = strchr(s, '/');
    if (slash)
        *slash = '\0';
    d->family = strchr(s, ':') ? AF_INET6 : AF_INET;
    unsigned max = d->family == AF_INET ? 32 : 128;
    if (inet_pton(d->family, s, d->addr) != 1)
        return false;
    d->prefix = max;
    if (slash) {
        char *end = NULL;
        unsigned long p = strtoul(slash + 1, &end, 10);
        if (!isdigit((unsigned char)slash[1]) || *end || p > max)
            return false;
        d->prefix = (unsigned)p;
    }
    return gp__host_bits_clear(d);
}

/* Splits "[INSIDE]:PORT", "[INSIDE]", "V4:PORT" and "V4" or "V6" into the
 * address part (in place) and the port text (NULL none). */
static bool gp__split_port(char *s, char **addr, const char **port)
{
    *port = NULL;
    if (s[0] == '[') {
        char *close = strchr(s, ']');
        if (!close || (close[1] && close[1] != ':'))
            return false;
        *close = '\0';
        if (close[1] == ':')
            *port = close + 2;
        *addr = s + 1;
        return true;
    }
    char *colon = strchr(s, ':');
    *addr = s;
    if (colon && !strchr(colon + 1, ':')) { /* one colon: IPv4 with a port */
        *colon = '\0';
        *port = colon + 1;
    }
    return true;
}

gp_err gp_netfence_dest_parse(const char *text, gp_netfence_dest *out, gp_error *err)
{
    char buf[128];
    memset(out, 0, sizeof *out);
    if (!text || strlen(text) >= sizeof buf)
        return gp_error_set(err, GP_ERR_INVALID, "egress", "not an address, CIDR or CIDR:port");
    snprintf(buf, sizeof buf, "%s", text);
    char *addr = NULL;
    const char *port = NULL;
    bool ok = gp__split_port(buf, &addr, &port) && gp__addr_prefix(addr, out) && (!port || gp__port(port, &out->port));
    if (!ok)
        return gp_error_set(err, GP_ERR_INVALID, "egress",
                            "'%s' is not ADDR[/PREFIX][:PORT] (IPv6 with a port in brackets; no host bits past "
                            "the prefix; port 1..65535)",
                            text);
    return GP_OK;
}


/* ---- reach_from entries ---- */

#define GP__REACH_DEPTH_MAX 4 /* as a tenant path (core/types.h GP_MAX_TENANT_DEPTH) */
#define GP__REACH_NAME_MAX 63 /* bytes of one name (GP_NAME_MAX less its NUL) */

static bool gp__reach_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

gp_err gp_reach_entry_check(const char *text, size_t cap, gp_error *err)
{
    size_t len = text ? strlen(text) : 0, seg = 0;
    unsigned depth = 1;
    bool ok = len > 0 && len < cap;
    for (size_t i = 0; ok && i <= len; i++) {
        if (text[i] == '/' || text[i] == '\0') {
            ok = seg > 0 && seg <= GP__REACH_NAME_MAX && text[i - seg] != '.';
            depth += text[i] == '/';
            seg = 0;
        } else {
            ok = gp__reach_name_char(text[i]);
            seg++;
        }
    }
    if (ok && depth <= GP__REACH_DEPTH_MAX)
        return GP_OK;
    return gp_error_set(err, GP_ERR_INVALID, "reach_from",
                        "'%.64s' is not a tenant path (1..%d names of [A-Za-z0-9._-], not starting with '.', "
                        "joined by '/'; at most %zu bytes)",
                        text ? text : "", GP__REACH_DEPTH_MAX, cap ? cap - 1 : 0);
}

bool gp_reach_covers(const char *entry, const char *tenant)
{
    size_t n = strlen(entry);
    return strncmp(entry, tenant, n) == 0 && (tenant[n] == '\0' || tenant[n] == '/');
}

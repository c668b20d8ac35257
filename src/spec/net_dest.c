/* net_dest.c - the one parser of a network destination (net_dest.h):
 * gpupoold checks a tenant's "egress" with it, the agent's fence loads
 * what it returns. */
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


/* listen.c - HOST:PORT into an IPv4 socket address (listen.h). */
#include "util/listen.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gp_err gp_listen_parse(const char *listen, const char *option, struct sockaddr_in *addr, gp_error *err)
{
    char host[64];
    const char *colon = strrchr(listen, ':');
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    if (!colon || (size_t)(colon - listen) >= sizeof host)
        return gp_error_set(err, GP_ERR_INVALID, option, "--%s must be HOST:PORT, got %s", option, listen);
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535)
        return gp_error_set(err, GP_ERR_INVALID, option, "bad port in %s", listen);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &addr->sin_addr) != 1)
        return gp_error_set(err, GP_ERR_INVALID, option, "%s is not an IPv4 address", host);
    addr->sin_port = htons((uint16_t)port);
    return GP_OK;
}

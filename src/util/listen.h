/* listen.h - a listening address given as HOST:PORT.
 *
 * gpupoold's --listen and the agent's --metrics-listen take the same form:
 * an IPv4 address (or "localhost") and a port, 0..65535 (0: any free one).
 *
 *   gp_listen_parse("127.0.0.1:9400", "metrics-listen", &addr, &err)
 *       -> addr.sin_addr 127.0.0.1, addr.sin_port htons(9400)
 *   gp_listen_parse("9400", "listen", &addr, &err)
 *       -> GP_ERR_INVALID field "listen": "--listen must be HOST:PORT, got 9400"
 *
 * Ownership: nothing is allocated; *addr is the caller's.
 */
#ifndef GP_UTIL_LISTEN_H
#define GP_UTIL_LISTEN_H

#include <netinet/in.h>

#include "util/error.h"

/* option: the option's name without dashes, for the message and err's field. */
gp_err gp_listen_parse(const char *listen, const char *option, struct sockaddr_in *addr, gp_error *err);

#endif

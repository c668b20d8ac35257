/* lead.h - what a replica does once it holds the leader lease (lead.c).
 * At start on the main thread (server.c); on a takeover on the engine
 * thread, which gets it as loop.h's gp_loop_lead_fn hook.
 */
#ifndef GP_SERVER_LEAD_H
#define GP_SERVER_LEAD_H

#include "util/error.h"

typedef struct gp_server gp_server;

/* Fences the writer, replays the log's tail and checks, and everything
 * only a leader does; leaves srv->lease.leading true when all of it is
 * done. */
gp_err gp_server_lead(gp_server *srv, gp_error *err);

#endif

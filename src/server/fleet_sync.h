/* fleet_sync.h - the fleet file (--fleet) brought into the engine at a
 * leader's start: its pools set, its nodes added or lost, a node whose
 * shape changed refused (fleet_sync.c says how).  Engine thread (or the
 * main thread before it starts): it writes through the journal.
 */
#ifndef GP_SERVER_FLEET_SYNC_H
#define GP_SERVER_FLEET_SYNC_H

#include "util/error.h"

typedef struct gp_server gp_server;

/* Loads srv->cfg.fleet_path (nothing without one) and reconciles it in
 * one transaction; GP_ERR_CONFLICT field "fleet" naming a changed node. */
gp_err gp_fleet_sync(gp_server *srv, gp_error *err);

#endif

/* store_schema_pg.h - private to src/store: the store's schema on
 * PostgreSQL (store_schema_pg.c), called by the store's schema dispatch
 * (gp__schema_open) for a connection whose dialect is GP_DB_POSTGRES.
 */
#ifndef GP_STORE_SCHEMA_PG_H
#define GP_STORE_SCHEMA_PG_H

#include "store/db.h"

#include <stdbool.h>

/* The schema version the PostgreSQL migrations reach. */
#define GP__SCHEMA_PG_VERSION 12

/* A writer (readonly false) creates or migrates the schema to
 * GP__SCHEMA_PG_VERSION in one transaction, under a lock, so two replicas
 * starting together migrate once; a reader only reads the version.  Either
 * refuses a database newer than this build (GP_ERR_CONFLICT) and a reader
 * refuses one without a schema.  *version: the schema now in the database. */
gp_err gp__schema_open_pg(gp_db *db, bool readonly, int *version, gp_error *err);

#endif

/* bootstrap_token.h - the first admin token of a fresh store, made at a
 * leader's start (bootstrap_token.c says where it goes).  Engine thread
 * (or the main thread before it starts): it writes on the store writer.
 */
#ifndef GP_SERVER_BOOTSTRAP_TOKEN_H
#define GP_SERVER_BOOTSTRAP_TOKEN_H

#include "util/error.h"

typedef struct gp_server gp_server;

/* Nothing when the token cache holds any token; else makes, writes,
 * stores and caches the bootstrap token.  GP_ERR_INVALID field
 * "token_file" when the file cannot be written. */
gp_err gp_bootstrap_token(gp_server *srv, gp_error *err);

#endif

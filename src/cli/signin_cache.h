/* signin_cache.h - where `gpupool login` keeps what the provider gave it.
 *
 * One file beside the CLI's config, $XDG_CONFIG_HOME/gpupool/signin.json
 * (else ~/.config/gpupool/signin.json), mode 0600 in a 0700 folder,
 * written whole to a temporary file and renamed over the old one: a JSON
 * object with one record per server (the server as configured, the key),
 *   {"http://gp:8750": {"issuer", "client_id", "token_endpoint",
 *                       "revocation_endpoint", "idp_cacert",
 *                       "id_token", "access_token", "refresh_token",
 *                       "expires"}}
 * "expires" is the ID token's exp (Unix seconds).  The ID token is what
 * the CLI sends as its bearer token: it carries the audience gpupoold
 * checks (the client id), the user, the groups and `amr`.
 *
 * Ownership: gp_signin_load returns a new reference the caller decrefs;
 * gp_signin_save does not take over record.
 */
#ifndef GP_CLI_SIGNIN_CACHE_H
#define GP_CLI_SIGNIN_CACHE_H

#include <jansson.h>
#include <stdbool.h>

/* The cache file's path into out; false when neither XDG_CONFIG_HOME nor
 * HOME is set. */
bool gp_signin_path(char *out, size_t cap);
/* The record for server, or NULL (none, or no cache file). */
json_t *gp_signin_load(const char *server);
/* Stores record as server's (replacing any); false with a message printed
 * when the file cannot be written. */
bool gp_signin_save(const char *server, const json_t *record);
/* Drops server's record; true when there was one. */
bool gp_signin_forget(const char *server);

/* A JWT's claims (its middle part, not verified: gpupoold verifies), or
 * NULL when it is not a JWT.  A new reference. */
json_t *gp_jwt_claims(const char *jwt);

#endif

/* signin.h - the CLI and the identity provider: discovery, the form posts
 * of OAuth 2.0 (RFC 6749, 8628, 7009), and the cached sign-in
 * (signin_cache.h) as the bearer token of every command.
 *
 * Where the token comes from (client.h): --token, --token-file,
 * GPUPOOL_TOKEN, GPUPOOL_TOKEN_FILE, the config file's token or
 * token_file, and only then the sign-in `gpupool login` cached for the
 * server.  A static token always wins: service accounts keep theirs.
 *
 * Refresh: when the cached ID token expires within a minute, the refresh
 * token is spent at the provider's token endpoint first; the new tokens
 * are cached.  A provider that answers a refresh without a new ID token
 * (glewlwyd does) gives nothing gpupoold accepts once the ID token has
 * expired: the CLI then says to run `gpupool login`.
 *
 * Every URL of the provider must be https:// (plain http:// only to
 * 127.0.0.1, localhost or [::1]): tokens, codes and verifiers never cross
 * a network in the clear.
 *
 * Ownership: JSON answers are new references the caller decrefs.
 */
#ifndef GP_CLI_SIGNIN_H
#define GP_CLI_SIGNIN_H

#include "cli/client.h"

#include <jansson.h>

#define GP_SIGNIN_FORM_MAX 16384

/* GET url (HTTPS checked against cacert, or the system's CAs when "" or
 * NULL): the JSON object it answers, or NULL with why in err. */
json_t *gp_idp_get_json(const char *url, const char *cacert, char *err, size_t cap);
/* POST an application/x-www-form-urlencoded form to url (with
 * "Authorization: Bearer bearer" unless bearer is NULL): the HTTP status
 * (0 when nothing answered, why in err) and the JSON answer in *out (NULL
 * when it was not JSON). */
long gp_idp_post_form(const char *url, const char *cacert, const char *bearer, const char *form, json_t **out,
                      char *err, size_t cap);
/* Appends "&key=value" (value URL-escaped) to a form; NULL value: nothing. */
void gp_form_add(char *form, size_t cap, const char *key, const char *value);

/* A token endpoint's answer into a cached record: id_token (and its exp
 * as "expires"), access_token, refresh_token when it has them.  False
 * when the answer holds no ID token. */
bool gp_signin_take_tokens(json_t *record, const json_t *answer);

/* When c has no token yet: the cached sign-in for c->server (refreshed
 * first when it is about to expire) as c's token and token_source. */
void gp_signin_use(gp_client *c);

#endif

/* oidc.h - provider-signed tokens (OpenID Connect ID or access tokens,
 * JWTs) verified by gpupoold: the issuers it trusts, their keys, the
 * identity a token proves (docs/gpupoold.md "Single sign-on").
 *
 * A bearer that is not a gpupool token ("gpt_...") and looks like a JWT
 * (three base64url parts) comes here.  gp_oidc_verify:
 *   - reads the header: alg must be RS256 or ES256 ("none", HS256 and
 *     everything else: GP_OIDC_BAD_ALGORITHM, before any key is looked at,
 *     so no key is ever used as an HMAC secret), no "crit" (the same); a
 *     key the header names or carries (jku, x5u, jwk, x5c) is never used,
 *     only the issuer's own JWKS;
 *   - reads iss: one of the configured issuers (--oidc-issuer), exactly;
 *   - finds the key: by kid (or, without a kid, each key of the algorithm's
 *     type) in the issuer's JWKS, fetched from the discovery document's
 *     jwks_uri (oidc_keys.c); a kid it does not know refetches the JWKS, at
 *     most once per min_refresh_s per issuer, so a rotation at the provider
 *     needs no restart and a flood of made-up kids cannot make it hammer
 *     the provider;
 *   - checks the signature with GnuTLS (gnutls_pubkey_verify_data2);
 *   - checks exp (required), nbf and iat with GP_OIDC_SKEW_S seconds of
 *     skew, and aud (a string or an array) holds the issuer's audience.
 * Then the identity: the user is the username claim (default
 * preferred_username), else "ISSUER#sub"; the groups the groups claim (an
 * array of strings, or one string); second_factor when amr names a second
 * factor (mfa, mca, otp, hwk, swk, sms, tel, sc, fpt, face, iris, retina,
 * vbm, pop) or acr equals --oidc-mfa-acr.
 *
 * Why not libjwt: Debian's libjwt 1.10 refuses a token whose "typ" header is
 * anything but "JWT", and RFC 9068 access tokens say "at+jwt"; GnuTLS (already
 * linked) imports the JWK (gnutls_pubkey_import_rsa_raw / _ecc_raw) and
 * verifies the signature, jansson reads the JSON (docs/dependencies.md).
 *
 * Fetching: libcurl, HTTPS only (plain http only to a loopback issuer with
 * allow_http_loopback, for tests), --oidc-ca as the trust store when
 * given, GP_OIDC_FETCH_TIMEOUT_S seconds at most per document; while one
 * thread fetches an issuer's keys, the others that need a key the cache
 * lacks wait for it (no other issuer, no static token, and no token whose
 * key is cached, even when the cache is due for its hourly refetch).  A provider that cannot be
 * reached: GP_OIDC_ISSUER_UNREACHABLE (keys already cached stay in use).
 *
 * Threads: every function is thread-safe.
 * Ownership: gp_oidc owns its issuers and their keys; gp_oidc_free frees
 * them.  The config's strings are borrowed (argv) and must outlive it.
 */
#ifndef GP_SERVER_OIDC_H
#define GP_SERVER_OIDC_H

#include "core/types.h"
#include "util/error.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum {
    GP_OIDC_ISSUERS_MAX = 8,
    GP_OIDC_GROUPS_MAX = 32,
    GP_OIDC_URL_MAX = 512,
    GP_OIDC_SKEW_S = 60,            /* exp, nbf, iat */
    GP_OIDC_FETCH_TIMEOUT_S = 5,    /* a discovery or JWKS fetch, connect included */
    GP_OIDC_MIN_REFRESH_S = 30,     /* default: an issuer's keys refetched at most this often */
    GP_OIDC_KEYS_MAX_AGE_S = 3600,  /* keys older than this are refetched on the next token */
    GP_OIDC_TOKEN_MAX = 16384,      /* longer bearers are refused unread */
};

/* Who needs a second factor for a change (--oidc-mfa-for). */
enum { GP_OIDC_MFA_ADMIN = 1, GP_OIDC_MFA_TENANT_ADMIN = 2, GP_OIDC_MFA_MEMBER = 4 };

typedef struct gp_oidc_config {
    const char *issuer[GP_OIDC_ISSUERS_MAX];   /* --oidc-issuer, in order */
    const char *audience[GP_OIDC_ISSUERS_MAX]; /* --oidc-audience, paired with issuer[i] */
    int n_issuers, n_audiences;
    const char *client_id;      /* NULL = the issuer's audience */
    const char *username_claim; /* NULL = preferred_username */
    const char *groups_claim;   /* NULL = groups */
    const char *ca_file;        /* NULL = the system's trust store */
    int mfa_for;                /* GP_OIDC_MFA_* bits; default admin | tenant-admin */
    const char *mfa_acr;        /* an acr that counts as a second factor; NULL = none */
    bool allow_http_loopback;   /* plain http issuers on 127.0.0.1 / ::1 / localhost (tests) */
    int min_refresh_s;          /* 0 = GP_OIDC_MIN_REFRESH_S */
} gp_oidc_config;

typedef enum gp_oidc_result {
    GP_OIDC_OK = 0,
    GP_OIDC_NOT_JWT,          /* not a JWT at all: the caller answers "unknown token" */
    GP_OIDC_BAD_SIGNATURE,
    GP_OIDC_EXPIRED,
    GP_OIDC_NOT_YET_VALID,
    GP_OIDC_WRONG_AUDIENCE,
    GP_OIDC_UNKNOWN_ISSUER,
    GP_OIDC_UNKNOWN_KEY,
    GP_OIDC_BAD_ALGORITHM,
    GP_OIDC_ISSUER_UNREACHABLE,
    GP_OIDC_NO_BINDING,            /* verified, but no role binding names its user or groups (api_rolebindings.c) */
    GP_OIDC_SECOND_FACTOR_MISSING, /* a change that needs a second factor, without one (http.c) */
    GP_OIDC_RESULT_COUNT
} gp_oidc_result;

typedef struct gp_oidc_identity {
    int issuer;                 /* index into the config */
    char user[GP_NAME_MAX];
    char groups[GP_OIDC_GROUPS_MAX][GP_NAME_MAX];
    int n_groups;
    bool second_factor;
    int64_t expires;            /* exp, epoch seconds */
    char token_hash[65];        /* SHA-256 of the whole token, hex */
} gp_oidc_identity;

/* Fetches url into *body (malloc'd, NUL-terminated; the caller frees):
 * GP_OK, or an error saying why.  Tests put their own in place of libcurl. */
typedef gp_err (*gp_oidc_fetch_fn)(void *ctx, const char *url, char **body, gp_error *err);

typedef struct gp_oidc_issuer gp_oidc_issuer; /* oidc_keys.c */

typedef struct gp_oidc_seen {
    char token_hash[65];
    int64_t expires;
} gp_oidc_seen;

typedef struct gp_oidc {
    gp_oidc_config cfg;
    gp_oidc_issuer *issuers; /* cfg.n_issuers of them */
    gp_oidc_fetch_fn fetch;
    void *fetch_ctx;
    pthread_mutex_t seen_lock; /* the sign-ins seen (gp_oidc_first_use) */
    gp_oidc_seen *seen;
    size_t n_seen, cap_seen;
} gp_oidc;

/* The reason's name as the audit log and the metric label say it. */
const char *gp_oidc_result_name(gp_oidc_result r);
/* A configuration gpupoold can run with: issuers and audiences paired, each
 * issuer https (or loopback http when allowed); field "oidc-issuer" etc. */
gp_err gp_oidc_config_check(const gp_oidc_config *cfg, gp_error *err);
/* Parses --oidc-mfa-for ("admin,tenant-admin", "all", "none"); false when bad. */
bool gp_oidc_mfa_parse(const char *text, int *out);
/* fetch NULL = libcurl.  Nothing is fetched yet: the first token does. */
gp_err gp_oidc_init(gp_oidc *o, const gp_oidc_config *cfg, gp_oidc_fetch_fn fetch, void *fetch_ctx, gp_error *err);
void gp_oidc_free(gp_oidc *o);
bool gp_oidc_enabled(const gp_oidc *o);
/* Verifies token at now (epoch seconds); fills *id on GP_OIDC_OK.  *detail
 * (may be NULL) gets a line for the refusal's message. */
gp_oidc_result gp_oidc_verify(gp_oidc *o, const char *token, int64_t now, gp_oidc_identity *id, char *detail,
                              size_t detail_cap);
/* True the first time a token (by hash) is seen, so its sign-in is audited
 * once; entries go when their token expires. */
bool gp_oidc_first_use(gp_oidc *o, const gp_oidc_identity *id, int64_t now);

/* ---- oidc_keys.c: the issuers' discovery documents and keys ---- */

gp_err gp_oidc_issuers_init(gp_oidc *o, gp_error *err);
void gp_oidc_issuers_free(gp_oidc *o);
/* Checks sig over data with the issuer's key kid (NULL: each key of the
 * algorithm's type), alg "RS256" or "ES256" (sig as the JWT carries it:
 * r || s for ES256).  Fetches or refetches as the file header says.
 * GP_OIDC_OK, GP_OIDC_BAD_SIGNATURE, GP_OIDC_UNKNOWN_KEY or
 * GP_OIDC_ISSUER_UNREACHABLE. */
gp_oidc_result gp_oidc_key_verify(gp_oidc *o, int issuer, const char *kid, const char *alg, const char *data,
                                  size_t data_len, const unsigned char *sig, size_t sig_len, int64_t now,
                                  char *detail, size_t detail_cap);
/* Installs a JWKS document as the issuer's keys (what a fetch does). */
gp_err gp_oidc_keys_set(gp_oidc *o, int issuer, const char *jwks_json, int64_t now, gp_error *err);
/* An issuer or jwks_uri gpupoold fetches from: https://..., or
 * http://127.0.0.1, ::1 or localhost when allow_http_loopback. */
bool gp_oidc_url_ok(const char *url, bool allow_http_loopback);
/* base64url (no padding) of len chars into *out (malloc'd, the caller
 * frees); false when it is not base64url. */
bool gp_oidc_b64url_decode(const char *in, size_t len, unsigned char **out, size_t *out_len);

#endif

/* oidc_keys.c - each trusted issuer's discovery document and JWKS: fetched
 * over HTTPS with libcurl, turned into GnuTLS public keys, cached, refetched
 * when a token names a key the cache does not hold (rate-limited) or the
 * cache is older than GP_OIDC_KEYS_MAX_AGE_S (see oidc.h).
 *
 * Example: issuer https://idp.example.com/realms/corp.  The first token
 * fetches https://idp.example.com/realms/corp/.well-known/openid-configuration,
 * checks its "issuer" is exactly that URL, then fetches its "jwks_uri" and
 * keeps the RSA keys (n, e) and P-256 EC keys (x, y) marked for signing.
 */
#include "server/oidc.h"

#include <curl/curl.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KEYS_MAX = 64, KID_MAX = 128, FETCH_MAX_BYTES = 1 << 20 };

typedef struct oidc_key {
    char kid[KID_MAX];
    bool ec; /* P-256 (ES256); else RSA (RS256) */
    gnutls_pubkey_t key;
} oidc_key;

struct gp_oidc_issuer {
    pthread_mutex_t lock;     /* keys and the times below */
    pthread_mutex_t fetching; /* one fetch of this issuer at a time */
    oidc_key *keys;
    size_t n_keys;
    int64_t fetched; /* the last good fetch, epoch seconds; -1 = never */
    int64_t tried;   /* the last attempt; -1 = never */
};

/* ---- URLs fetched ---- */

bool gp_oidc_url_ok(const char *url, bool allow_http_loopback)
{
    if (!url || strlen(url) >= GP_OIDC_URL_MAX)
        return false;
    if (strncmp(url, "https://", 8) == 0)
        return url[8] != '\0' && url[8] != '/';
    static const char *const LOOPBACK[] = {"http://127.0.0.1", "http://localhost", "http://[::1]"};
    for (size_t i = 0; allow_http_loopback && i < sizeof LOOPBACK / sizeof *LOOPBACK; i++) {
        size_t n = strlen(LOOPBACK[i]);
        if (strncmp(url, LOOPBACK[i], n) == 0 && (url[n] == '\0' || url[n] == ':' || url[n] == '/'))
            return true;
    }
    return false;
}

/* ---- base64url ---- */

bool gp_oidc_b64url_decode(const char *in, size_t len, unsigned char **out, size_t *out_len)
{
    if (len % 4 == 1)
        return false;
    char *std = malloc(len + 4);
    if (!std)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (!ok) {
            free(std);
            return false;
        }
        std[n++] = c == '-' ? '+' : c == '_' ? '/' : c;
    }
    while (n % 4)
        std[n++] = '=';
    gnutls_datum_t b64 = {(unsigned char *)std, (unsigned)n}, raw = {NULL, 0};
    int rc = n ? gnutls_base64_decode2(&b64, &raw) : 0;
    free(std);
    if (rc < 0)
        return false;
    *out = malloc(raw.size + 1); /* the caller's free(), not gnutls_free() */
    if (*out && raw.size)
        memcpy(*out, raw.data, raw.size);
    *out_len = raw.size;
    gnutls_free(raw.data);
    return *out != NULL;
}

/* A JWK member (base64url) as a datum whose data the caller frees. */
static bool member_bytes(const json_t *jwk, const char *name, gnutls_datum_t *d)
{
    const char *text = json_string_value(json_object_get(jwk, name));
    unsigned char *bytes;
    size_t n;
    if (!text || !gp_oidc_b64url_decode(text, strlen(text), &bytes, &n))
        return false;
    if (n == 0 || n > 1024) {
        free(bytes);
        return false;
    }
    d->data = bytes;
    d->size = (unsigned)n;
    return true;
}

/* One JWK as a key; false for a key that is not for RS256 / ES256 signatures. */
static bool key_from_jwk(const json_t *jwk, oidc_key *k)
{
    const char *kty = json_string_value(json_object_get(jwk, "kty"));
    const char *use = json_string_value(json_object_get(jwk, "use"));
    const char *alg = json_string_value(json_object_get(jwk, "alg"));
    const char *kid = json_string_value(json_object_get(jwk, "kid"));
    if (!kty || (use && strcmp(use, "sig") != 0) || (kid && strlen(kid) >= KID_MAX))
        return false;
    memset(k, 0, sizeof *k);
    snprintf(k->kid, sizeof k->kid, "%s", kid ? kid : "");
    k->ec = strcmp(kty, "EC") == 0;
    if (k->ec ? (alg && strcmp(alg, "ES256") != 0) : (strcmp(kty, "RSA") != 0 || (alg && strcmp(alg, "RS256") != 0)))
        return false;
    const char *crv = json_string_value(json_object_get(jwk, "crv"));
    if (k->ec && (!crv || strcmp(crv, "P-256") != 0))
        return false;
    gnutls_datum_t a = {NULL, 0}, b = {NULL, 0};
    bool ok = member_bytes(jwk, k->ec ? "x" : "n", &a) && member_bytes(jwk, k->ec ? "y" : "e", &b) &&
              (k->ec || a.size - (a.data[0] == 0) >= 256) && /* RSA: 2048 bits at least */
              gnutls_pubkey_init(&k->key) == 0;
    if (ok) {
        int rc = k->ec ? gnutls_pubkey_import_ecc_raw(k->key, GNUTLS_ECC_CURVE_SECP256R1, &a, &b)
                       : gnutls_pubkey_import_rsa_raw(k->key, &a, &b);
        if (rc < 0) {
            gnutls_pubkey_deinit(k->key);
            ok = false;
        }
    }
    free(a.data);
    free(b.data);
    return ok;
}

static void keys_free(oidc_key *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gnutls_pubkey_deinit(keys[i].key);
    free(keys);
}

gp_err gp_oidc_keys_set(gp_oidc *o, int issuer, const char *jwks_json, int64_t now, gp_error *err)
{
    json_t *doc = json_loads(jwks_json, 0, NULL);
    json_t *list = json_object_get(doc, "keys");
    if (!json_is_array(list)) {
        json_decref(doc);
        return gp_error_set(err, GP_ERR_INVALID, "jwks", "the JWKS is not {\"keys\": [...]}");
    }
    oidc_key *keys = calloc(KEYS_MAX, sizeof *keys);
    size_t n = 0;
    for (size_t i = 0; keys && i < json_array_size(list) && n < KEYS_MAX; i++)
        n += key_from_jwk(json_array_get(list, i), &keys[n]);
    json_decref(doc);
    if (!keys)
        return gp_error_set(err, GP_ERR_NOMEM, "jwks", "out of memory");
    gp_oidc_issuer *is = &o->issuers[issuer];
    pthread_mutex_lock(&is->lock);
    oidc_key *old = is->keys;
    size_t n_old = is->n_keys;
    is->keys = keys;
    is->n_keys = n;
    is->fetched = now;
    pthread_mutex_unlock(&is->lock);
    keys_free(old, n_old);
    return GP_OK;
}

/* ---- fetching ---- */

typedef struct fetch_buf {
    char *data;
    size_t n;
    bool too_big;
} fetch_buf;

static size_t fetch_write(char *ptr, size_t size, size_t nmemb, void *ctx)
{
    fetch_buf *b = ctx;
    size_t len = size * nmemb;
    if (b->n + len > FETCH_MAX_BYTES) {
        b->too_big = true;
        return 0;
    }
    char *grown = realloc(b->data, b->n + len + 1);
    if (!grown)
        return 0;
    b->data = grown;
    memcpy(b->data + b->n, ptr, len);
    b->n += len;
    b->data[b->n] = '\0';
    return len;
}

/* libcurl: GP_OIDC_FETCH_TIMEOUT_S, no redirects, https (and http, which
 * gp_oidc_url_ok allowed only for loopback), ctx is --oidc-ca or NULL. */
static gp_err curl_fetch(void *ctx, const char *url, char **body, gp_error *err)
{
    CURL *c = curl_easy_init();
    if (!c)
        return gp_error_set(err, GP_ERR_NOMEM, "oidc", "out of memory");
    fetch_buf b = {NULL, 0, false};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)GP_OIDC_FETCH_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)GP_OIDC_FETCH_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fetch_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (ctx)
        curl_easy_setopt(c, CURLOPT_CAINFO, (const char *)ctx);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK || status != 200 || !b.data) {
        free(b.data);
        if (rc != CURLE_OK)
            return gp_error_set(err, GP_ERR_CONFLICT, "oidc", "%s: %s", url,
                                b.too_big ? "larger than 1 MiB" : curl_easy_strerror(rc));
        return gp_error_set(err, GP_ERR_CONFLICT, "oidc", "%s: HTTP %ld", url, status);
    }
    *body = b.data;
    return GP_OK;
}

/* The discovery document's jwks_uri, checked like an issuer URL. */
static gp_err discover(gp_oidc *o, int issuer, char *jwks_uri, size_t cap, gp_error *err)
{
    const char *iss = o->cfg.issuer[issuer];
    char url[GP_OIDC_URL_MAX + 64];
    size_t n = strlen(iss);
    snprintf(url, sizeof url, "%.*s/.well-known/openid-configuration", (int)(n && iss[n - 1] == '/' ? n - 1 : n),
             iss);
    char *body = NULL;
    gp_err rc = o->fetch(o->fetch_ctx, url, &body, err);
    if (rc != GP_OK)
        return rc;
    json_t *doc = json_loads(body, 0, NULL);
    free(body);
    const char *said = json_string_value(json_object_get(doc, "issuer"));
    const char *uri = json_string_value(json_object_get(doc, "jwks_uri"));
    if (!said || strcmp(said, iss) != 0)
        rc = gp_error_set(err, GP_ERR_INVALID, "oidc", "%s: its issuer is %s, not %s", url, said ? said : "missing",
                          iss);
    else if (!uri || strlen(uri) >= cap)
        rc = gp_error_set(err, GP_ERR_INVALID, "oidc", "%s: no jwks_uri", url);
    else if (!gp_oidc_url_ok(uri, o->cfg.allow_http_loopback))
        rc = gp_error_set(err, GP_ERR_INVALID, "oidc", "%s: jwks_uri %s is not https", url, uri);
    else
        snprintf(jwks_uri, cap, "%s", uri);
    json_decref(doc);
    return rc;
}

/* Fetches the issuer's keys anew unless that was tried less than
 * min_refresh_s ago (then GP_OK with nothing done).  wait false: nothing
 * either while another thread fetches (keys that are only old are still
 * good for this request). */
static gp_err refresh(gp_oidc *o, int issuer, int64_t now, bool wait, gp_error *err)
{
    gp_oidc_issuer *is = &o->issuers[issuer];
    int every = o->cfg.min_refresh_s > 0 ? o->cfg.min_refresh_s : GP_OIDC_MIN_REFRESH_S;
    if (!wait && pthread_mutex_trylock(&is->fetching) != 0)
        return GP_OK;
    if (wait)
        pthread_mutex_lock(&is->fetching);
    pthread_mutex_lock(&is->lock);
    bool due = is->tried < 0 || now - is->tried >= every;
    if (due)
        is->tried = now;
    pthread_mutex_unlock(&is->lock);
    gp_err rc = GP_OK;
    if (due) {
        char uri[GP_OIDC_URL_MAX], *body = NULL;
        rc = discover(o, issuer, uri, sizeof uri, err);
        if (rc == GP_OK)
            rc = o->fetch(o->fetch_ctx, uri, &body, err);
        if (rc == GP_OK)
            rc = gp_oidc_keys_set(o, issuer, body, now, err);
        free(body);
    }
    pthread_mutex_unlock(&is->fetching);
    return rc;
}

/* ---- verification ---- */

/* sig of ES256 is r || s (32 bytes each); GnuTLS wants DER. */
static int verify_one(const oidc_key *k, const gnutls_datum_t *data, const unsigned char *sig, size_t sig_len)
{
    if (!k->ec) {
        gnutls_datum_t s = {(unsigned char *)sig, (unsigned)sig_len};
        return gnutls_pubkey_verify_data2(k->key, GNUTLS_SIGN_RSA_SHA256, 0, data, &s);
    }
    if (sig_len != 64)
        return -1;
    gnutls_datum_t r = {(unsigned char *)sig, 32}, s = {(unsigned char *)sig + 32, 32}, der = {NULL, 0};
    if (gnutls_encode_rs_value(&der, &r, &s) < 0)
        return -1;
    int rc = gnutls_pubkey_verify_data2(k->key, GNUTLS_SIGN_ECDSA_SHA256, 0, data, &der);
    gnutls_free(der.data);
    return rc;
}

/* Under is->lock: GP_OIDC_OK, GP_OIDC_BAD_SIGNATURE or GP_OIDC_UNKNOWN_KEY (no key fits kid and type). */
static gp_oidc_result try_keys(const gp_oidc_issuer *is, const char *kid, bool ec, const gnutls_datum_t *data,
                               const unsigned char *sig, size_t sig_len)
{
    gp_oidc_result res = GP_OIDC_UNKNOWN_KEY;
    for (size_t i = 0; i < is->n_keys; i++) {
        const oidc_key *k = &is->keys[i];
        if (k->ec != ec || (kid && strcmp(k->kid, kid) != 0))
            continue;
        if (verify_one(k, data, sig, sig_len) >= 0)
            return GP_OIDC_OK;
        res = GP_OIDC_BAD_SIGNATURE;
    }
    return res;
}

static gp_oidc_result look(gp_oidc_issuer *is, const char *kid, bool ec, const gnutls_datum_t *data,
                           const unsigned char *sig, size_t sig_len, int64_t now, bool *stale)
{
    pthread_mutex_lock(&is->lock);
    gp_oidc_result res = try_keys(is, kid, ec, data, sig, sig_len);
    *stale = is->fetched < 0 || now - is->fetched > GP_OIDC_KEYS_MAX_AGE_S;
    pthread_mutex_unlock(&is->lock);
    return res;
}

gp_oidc_result gp_oidc_key_verify(gp_oidc *o, int issuer, const char *kid, const char *alg, const char *data,
                                  size_t data_len, const unsigned char *sig, size_t sig_len, int64_t now,
                                  char *detail, size_t detail_cap)
{
    gp_oidc_issuer *is = &o->issuers[issuer];
    bool ec = strcmp(alg, "ES256") == 0, stale;
    gnutls_datum_t d = {(unsigned char *)data, (unsigned)data_len};
    gp_oidc_result res = look(is, kid, ec, &d, sig, sig_len, now, &stale);
    if (res != GP_OIDC_UNKNOWN_KEY && !stale)
        return res;
    gp_error err = {0};
    if (refresh(o, issuer, now, res == GP_OIDC_UNKNOWN_KEY, &err) != GP_OK)
        snprintf(detail, detail_cap, "%s", err.message);
    res = look(is, kid, ec, &d, sig, sig_len, now, &stale);
    if (res == GP_OIDC_UNKNOWN_KEY && is->fetched < 0)
        return GP_OIDC_ISSUER_UNREACHABLE;
    if (res == GP_OIDC_UNKNOWN_KEY)
        snprintf(detail, detail_cap, "the issuer publishes no %s key%s%s", alg, kid ? " with kid " : "",
                 kid ? kid : "");
    return res;
}

gp_err gp_oidc_issuers_init(gp_oidc *o, gp_error *err)
{
    o->issuers = calloc((size_t)o->cfg.n_issuers + 1, sizeof *o->issuers);
    if (!o->issuers)
        return gp_error_set(err, GP_ERR_NOMEM, "oidc", "out of memory");
    for (int i = 0; i < o->cfg.n_issuers; i++) {
        pthread_mutex_init(&o->issuers[i].lock, NULL);
        pthread_mutex_init(&o->issuers[i].fetching, NULL);
        o->issuers[i].fetched = o->issuers[i].tried = -1;
    }
    if (!o->fetch) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
            return gp_error_set(err, GP_ERR_CONFLICT, "oidc", "libcurl did not start");
        o->fetch = curl_fetch;
        o->fetch_ctx = (void *)o->cfg.ca_file;
    }
    return GP_OK;
}

void gp_oidc_issuers_free(gp_oidc *o)
{
    for (int i = 0; o->issuers && i < o->cfg.n_issuers; i++) {
        keys_free(o->issuers[i].keys, o->issuers[i].n_keys);
        pthread_mutex_destroy(&o->issuers[i].lock);
        pthread_mutex_destroy(&o->issuers[i].fetching);
    }
    free(o->issuers);
    o->issuers = NULL;
}

/* test_oidc.c - the provider-token verifier (src/server/oidc.c, oidc_keys.c)
 * without a network: tokens signed here with GnuTLS (RS256, ES256), the
 * discovery document and JWKS served by a fetch function of this file that
 * counts its calls.  Each refusal reason, key rotation, the refetch rate
 * limit, an unreachable issuer, the identity's claims. */
#include "server/oidc.h"

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ISS "https://idp.test/realms/corp"
#define NOW 1800000000

typedef struct provider {
    char *jwks; /* what the jwks_uri answers; NULL = unreachable */
    int fetches;
} provider;

static gp_err fake_fetch(void *ctx, const char *url, char **body, gp_error *err)
{
    provider *p = ctx;
    p->fetches++;
    if (!p->jwks)
        return gp_error_set(err, GP_ERR_CONFLICT, "oidc", "%s: connection refused", url);
    if (strstr(url, "/.well-known/openid-configuration"))
        *body = strdup("{\"issuer\": \"" ISS "\", \"jwks_uri\": \"https://idp.test/keys\"}");
    else
        *body = strdup(p->jwks);
    return GP_OK;
}

static char *b64url(const unsigned char *data, size_t n)
{
    gnutls_datum_t in = {(unsigned char *)data, (unsigned)n}, out;
    assert_int_equal(gnutls_base64_encode2(&in, &out), 0);
    char *s = malloc(out.size + 1);
    size_t k = 0;
    for (unsigned i = 0; i < out.size; i++) {
        char c = (char)out.data[i];
        if (c != '=' && c != '\n')
            s[k++] = c == '+' ? '-' : c == '/' ? '_' : c;
    }
    s[k] = '\0';
    gnutls_free(out.data);
    return s;
}

typedef struct key {
    gnutls_privkey_t priv;
    bool ec;
    char kid[16];
} key;

static key key_new(bool ec, const char *kid)
{
    key k = {.ec = ec};
    snprintf(k.kid, sizeof k.kid, "%s", kid);
    assert_int_equal(gnutls_privkey_init(&k.priv), 0);
    assert_int_equal(gnutls_privkey_generate(k.priv, ec ? GNUTLS_PK_ECDSA : GNUTLS_PK_RSA,
                                             ec ? GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1) : 2048, 0),
                     0);
    return k;
}

/* An integer as a JWK member: without the leading zero bytes GnuTLS puts
 * in front of a positive one (width 0), or its last width bytes. */
static json_t *b64_int(const gnutls_datum_t *d, size_t width)
{
    size_t off = d->size > width && width ? d->size - width : 0;
    if (!width)
        while (off + 1 < d->size && d->data[off] == 0)
            off++;
    char *text = b64url(d->data + off, d->size - off);
    json_t *j = json_string(text);
    free(text);
    return j;
}

static json_t *jwk_of(const key *k)
{
    gnutls_datum_t a, b;
    json_t *j;
    if (k->ec) {
        gnutls_ecc_curve_t curve;
        assert_int_equal(gnutls_privkey_export_ecc_raw(k->priv, &curve, &a, &b, NULL), 0);
        j = json_pack("{s:s, s:s, s:s, s:o, s:o}", "kty", "EC", "crv", "P-256", "kid", k->kid, "x",
                      b64_int(&a, 32), "y", b64_int(&b, 32));
    } else {
        assert_int_equal(gnutls_privkey_export_rsa_raw(k->priv, &a, &b, NULL, NULL, NULL, NULL, NULL, NULL), 0);
        j = json_pack("{s:s, s:s, s:s, s:o, s:o}", "kty", "RSA", "use", "sig", "kid", k->kid, "n",
                      b64_int(&a, 0), "e", b64_int(&b, 0));
    }
    gnutls_free(a.data);
    gnutls_free(b.data);
    return j;
}

/* A JWKS of the keys (NULL-terminated), as text in p->jwks. */
static void publish(provider *p, const key *k1, const key *k2)
{
    json_t *keys = json_array();
    json_array_append_new(keys, jwk_of(k1));
    if (k2)
        json_array_append_new(keys, jwk_of(k2));
    json_t *doc = json_pack("{s:o}", "keys", keys);
    free(p->jwks);
    p->jwks = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
}

/* A token: header head, claims as given (both taken); sig by k. */
static char *sign_with_head(const key *k, json_t *head, json_t *claims)
{
    char *h = json_dumps(head, JSON_COMPACT), *c = json_dumps(claims, JSON_COMPACT);
    char *hb = b64url((unsigned char *)h, strlen(h)), *cb = b64url((unsigned char *)c, strlen(c));
    char *data = malloc(strlen(hb) + strlen(cb) + 2);
    sprintf(data, "%s.%s", hb, cb);
    gnutls_datum_t d = {(unsigned char *)data, (unsigned)strlen(data)}, sig;
    assert_int_equal(gnutls_privkey_sign_data(k->priv, GNUTLS_DIG_SHA256, 0, &d, &sig), 0);
    char *sb;
    if (k->ec) { /* DER -> r || s */
        gnutls_datum_t r, s;
        assert_int_equal(gnutls_decode_rs_value(&sig, &r, &s), 0);
        unsigned char raw[64] = {0};
        size_t rn = r.size > 32 ? 32 : r.size, sn = s.size > 32 ? 32 : s.size;
        memcpy(raw + 32 - rn, r.data + r.size - rn, rn);
        memcpy(raw + 64 - sn, s.data + s.size - sn, sn);
        sb = b64url(raw, 64);
        gnutls_free(r.data);
        gnutls_free(s.data);
    } else {
        sb = b64url(sig.data, sig.size);
    }
    char *tok = malloc(strlen(data) + strlen(sb) + 2);
    sprintf(tok, "%s.%s", data, sb);
    gnutls_free(sig.data);
    free(h), free(c), free(hb), free(cb), free(data), free(sb);
    json_decref(head);
    json_decref(claims);
    return tok;
}

/* A token: header {alg, kid} (alg NULL = the key's), claims as given; sig by k. */
static char *sign(const key *k, const char *alg, json_t *claims)
{
    return sign_with_head(k, json_pack("{s:s, s:s, s:s}", "alg", alg ? alg : k->ec ? "ES256" : "RS256", "kid", k->kid,
                                       "typ", "at+jwt"),
                          claims);
}

static json_t *claims(void)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:[s, s], s:[s, s]}", "iss", ISS, "aud", "gpupool", "sub",
                     "u-123", "exp", (json_int_t)NOW + 300, "iat", (json_int_t)NOW - 10, "preferred_username",
                     "alice", "groups", "ml-admins", "research", "amr", "pwd", "otp");
}

typedef struct fixture {
    gp_oidc o;
    provider p;
    key rsa, ec;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    gp_oidc_config cfg = {.issuer = {ISS}, .audience = {"gpupool"}, .n_issuers = 1, .n_audiences = 1,
                          .mfa_for = GP_OIDC_MFA_ADMIN};
    f->rsa = key_new(false, "r1");
    f->ec = key_new(true, "e1");
    publish(&f->p, &f->rsa, &f->ec);
    gp_error err;
    assert_int_equal(gp_oidc_init(&f->o, &cfg, fake_fetch, &f->p, &err), GP_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    gp_oidc_free(&f->o);
    gnutls_privkey_deinit(f->rsa.priv);
    gnutls_privkey_deinit(f->ec.priv);
    free(f->p.jwks);
    free(f);
    return 0;
}

static gp_oidc_result check(fixture *f, char *tok, gp_oidc_identity *id)
{
    char detail[256];
    gp_oidc_result r = gp_oidc_verify(&f->o, tok, NOW, id, detail, sizeof detail);
    free(tok);
    return r;
}

static void rs256_and_es256_accepted(void **state)
{
    fixture *f = *state;
    gp_oidc_identity id;
    assert_int_equal(check(f, sign(&f->rsa, NULL, claims()), &id), GP_OIDC_OK);
    assert_string_equal(id.user, "alice");
    assert_int_equal(id.n_groups, 2);
    assert_string_equal(id.groups[0], "ml-admins");
    assert_true(id.second_factor);
    assert_int_equal(id.expires, NOW + 300);
    assert_int_equal(check(f, sign(&f->ec, NULL, claims()), &id), GP_OIDC_OK);
    assert_int_equal(f->p.fetches, 2); /* discovery + JWKS once */
}

static void algorithms_refused(void **state)
{
    fixture *f = *state;
    gp_oidc_identity id;
    char *tok = sign(&f->rsa, NULL, claims());
    /* "none": the same claims, no signature */
    json_t *c = claims();
    char *cs = json_dumps(c, JSON_COMPACT), *cb = b64url((unsigned char *)cs, strlen(cs));
    const char *none_head = "eyJhbGciOiJub25lIn0"; /* {"alg":"none"} */
    char none[4096];
    snprintf(none, sizeof none, "%s.%s.", none_head, cb);
    assert_int_equal(check(f, strdup(none), &id), GP_OIDC_BAD_ALGORITHM);
    /* RS256 relabelled HS256, and RS384 */
    assert_int_equal(check(f, sign(&f->rsa, "HS256", claims()), &id), GP_OIDC_BAD_ALGORITHM);
    assert_int_equal(check(f, sign(&f->rsa, "RS384", claims()), &id), GP_OIDC_BAD_ALGORITHM);
    assert_int_equal(check(f, sign_with_head(&f->rsa, json_pack("{s:s, s:s, s:[s]}", "alg", "RS256", "kid", "r1",
                                                                 "crit", "exp"), claims()), &id),
                     GP_OIDC_BAD_ALGORITHM);
    /* RS256 claimed, signed by the EC key (kid of the RSA key): bad signature */
    key ec_as_rsa = f->ec;
    snprintf(ec_as_rsa.kid, sizeof ec_as_rsa.kid, "r1");
    assert_int_equal(check(f, sign(&ec_as_rsa, "ES256", claims()), &id), GP_OIDC_UNKNOWN_KEY);
    free(tok);
    free(cs);
    free(cb);
    json_decref(c);
}

static void bad_signature_refused(void **state)
{
    fixture *f = *state;
    gp_oidc_identity id;
    key other = key_new(false, "r1"); /* the published kid, another key */
    assert_int_equal(check(f, sign(&other, NULL, claims()), &id), GP_OIDC_BAD_SIGNATURE);
    char *tok = sign(&f->rsa, NULL, claims());
    tok[strlen(tok) - 5] ^= 1; /* a flipped bit in the signature */
    assert_int_equal(check(f, tok, &id), GP_OIDC_BAD_SIGNATURE);
    gnutls_privkey_deinit(other.priv);
}

static void claims_refused(void **state)
{
    fixture *f = *state;
    gp_oidc_identity id;
    json_t *c = claims();
    json_object_set_new(c, "exp", json_integer(NOW - GP_OIDC_SKEW_S - 1));
    assert_int_equal(check(f, sign(&f->rsa, NULL, c), &id), GP_OIDC_EXPIRED);
    c = claims();
    json_object_set_new(c, "exp", json_integer(NOW - GP_OIDC_SKEW_S + 5)); /* within the skew */
    assert_int_equal(check(f, sign(&f->rsa, NULL, c), &id), GP_OIDC_OK);
    c = claims();
    json_object_del(c, "exp");
    assert_int_equal(check(f, sign(&f->rsa, NULL, c), &id), GP_OIDC_EXPIRED);
    c = claims();
    json_object_set_new(c, "nbf", json_integer(NOW + GP_OIDC_SKEW_S + 30));
    assert_int_equal(check(f, sign(&f->rsa, NULL, c), &id), GP_OIDC_NOT_YET_VALID);
    c = claims();
    json_object_set_new(c, "iat", json_integer(NOW + 3600));
    assert_int_equal(check(f, sign(&f->rsa, NULL, c), &id), GP_OIDC_NOT_YET_VALID);
    c = claims();
    json_object_set_new(c, "aud", json_pack("[s, s]", "other", "gpupool"));
    assert_int_equal(check(f, sign(&f->rsa, NULL, c), &id), GP_OIDC_OK);
    c = claims();
    json_object_set_new(c, "aud", json_pack("[s]", "other"));
    assert_int_equal(check(f, sign(&f->rsa, NULL, c), &id), GP_OIDC_WRONG_AUDIENCE);
    c = claims();
    json_object_set_new(c, "iss", json_string("https://evil.test"));
    assert_int_equal(check(f, sign(&f->rsa, NULL, c), &id), GP_OIDC_UNKNOWN_ISSUER);
    assert_int_equal(check(f, strdup("not.a.jwt"), &id), GP_OIDC_NOT_JWT);
    assert_int_equal(check(f, strdup("gpt_abc"), &id), GP_OIDC_NOT_JWT);
}

static void identity_claims(void **state)
{
    fixture *f = *state;
    gp_oidc_identity id;
    json_t *c = claims();
    json_object_del(c, "preferred_username");
    json_object_set_new(c, "amr", json_pack("[s]", "pwd"));
    json_object_set_new(c, "groups", json_string("solo"));
    assert_int_equal(check(f, sign(&f->rsa, NULL, c), &id), GP_OIDC_OK);
    assert_string_equal(id.user, ISS "#u-123");
    assert_false(id.second_factor);
    assert_int_equal(id.n_groups, 1);
    assert_true(gp_oidc_first_use(&f->o, &id, NOW));
    assert_false(gp_oidc_first_use(&f->o, &id, NOW + 1));
    f->o.cfg.mfa_acr = "gold";
    c = claims();
    json_object_set_new(c, "amr", json_pack("[s]", "pwd"));
    json_object_set_new(c, "acr", json_string("gold"));
    assert_int_equal(check(f, sign(&f->rsa, NULL, c), &id), GP_OIDC_OK);
    assert_true(id.second_factor);
}

static void rotation_and_rate_limit(void **state)
{
    fixture *f = *state;
    gp_oidc_identity id;
    assert_int_equal(check(f, sign(&f->rsa, NULL, claims()), &id), GP_OIDC_OK);
    int fetched = f->p.fetches;
    /* the provider rotates: r2 published, r1 gone */
    key r2 = key_new(false, "r2");
    publish(&f->p, &r2, NULL);
    char detail[256];
    char *tok = sign(&r2, NULL, claims());
    /* an unknown kid refetches, but not twice within min_refresh_s */
    assert_int_equal(gp_oidc_verify(&f->o, tok, NOW + 5, &id, detail, sizeof detail), GP_OIDC_UNKNOWN_KEY);
    assert_int_equal(f->p.fetches, fetched);
    assert_int_equal(gp_oidc_verify(&f->o, tok, NOW + GP_OIDC_MIN_REFRESH_S, &id, detail, sizeof detail),
                     GP_OIDC_OK);
    assert_int_equal(f->p.fetches, fetched + 2);
    /* the retired key: refused as unknown now */
    key made_up = key_new(false, "zz");
    for (int i = 0; i < 5; i++)
        assert_int_equal(check(f, sign(&made_up, NULL, claims()), &id), GP_OIDC_UNKNOWN_KEY);
    assert_int_equal(f->p.fetches, fetched + 2); /* a flood of made-up kids fetched nothing */
    free(tok);
    gnutls_privkey_deinit(r2.priv);
    gnutls_privkey_deinit(made_up.priv);
}

static void unreachable_issuer(void **state)
{
    fixture *f = *state;
    gp_oidc_identity id;
    free(f->p.jwks);
    f->p.jwks = NULL;
    assert_int_equal(check(f, sign(&f->rsa, NULL, claims()), &id), GP_OIDC_ISSUER_UNREACHABLE);
}

static void config_checked(void **state)
{
    (void)state;
    gp_error err;
    gp_oidc_config cfg = {.issuer = {"http://idp.example.com"}, .audience = {"a"}, .n_issuers = 1, .n_audiences = 1};
    assert_int_equal(gp_oidc_config_check(&cfg, &err), GP_ERR_INVALID);
    cfg.issuer[0] = "http://127.0.0.1:9999/x";
    assert_int_equal(gp_oidc_config_check(&cfg, &err), GP_ERR_INVALID);
    cfg.allow_http_loopback = true;
    assert_int_equal(gp_oidc_config_check(&cfg, &err), GP_OK);
    cfg.issuer[0] = "http://127.0.0.1.evil.com/";
    assert_int_equal(gp_oidc_config_check(&cfg, &err), GP_ERR_INVALID);
    cfg.issuer[0] = "https://idp";
    cfg.n_audiences = 0;
    assert_int_equal(gp_oidc_config_check(&cfg, &err), GP_ERR_INVALID);
    int bits;
    assert_true(gp_oidc_mfa_parse("admin,tenant-admin", &bits));
    assert_int_equal(bits, GP_OIDC_MFA_ADMIN | GP_OIDC_MFA_TENANT_ADMIN);
    assert_true(gp_oidc_mfa_parse("none", &bits));
    assert_int_equal(bits, 0);
    assert_false(gp_oidc_mfa_parse("root", &bits));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(rs256_and_es256_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(algorithms_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_signature_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(claims_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(identity_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(rotation_and_rate_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(unreachable_issuer, setup, teardown),
        cmocka_unit_test(config_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

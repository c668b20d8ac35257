/* node_ca.c - the node CA: made, opened, signing agents' certificate
 * requests and checking the certificates agents present (node_ca.h says
 * the format and the rules).  GnuTLS does the X.509 work. */
#include "server/node_ca.h"

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP__CA_NAME "gpupool node CA"
#define GP__CA_LIFE_S (10LL * 365 * 86400)
#define GP__SKEW_S 60 /* a certificate is valid from this long before its issue */
#define GP__SEAL_TENANT "gpupoold"
#define GP__SEAL_NAME "node-ca"

/* ---- helpers ---- */

static gp_err gp__fail(gp_error *err, const char *field, const char *what, int rc)
{
    return gp_error_set(err, GP_ERR_INVALID, field, "%s: %s", what, gnutls_strerror(rc));
}

/* A GnuTLS datum's bytes as a NUL-terminated malloc'd text. */
static char *gp__text(const gnutls_datum_t *d)
{
    char *s = malloc(d->size + 1);
    if (s) {
        memcpy(s, d->data, d->size);
        s[d->size] = '\0';
    }
    return s;
}

static int gp__serial(gnutls_x509_crt_t crt)
{
    unsigned char serial[16];
    int rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial);
    serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x40); /* positive, no leading zero */
    return rc ? rc : gnutls_x509_crt_set_serial(crt, serial, sizeof serial);
}

/* One attribute of a certificate's subject, "" when it has none. */
static void gp__subject(gnutls_x509_crt_t crt, const char *oid, char *out, size_t cap)
{
    size_t size = cap;
    if (gnutls_x509_crt_get_dn_by_oid(crt, oid, 0, 0, out, &size) != 0)
        out[0] = '\0';
}

/* What every certificate made here has: version 3, a random serial, a
 * life from GP__SKEW_S before now_s for life_s, CN cn. */
static int gp__basics(gnutls_x509_crt_t crt, const char *cn, int64_t now_s, int64_t life_s)
{
    int rc = gnutls_x509_crt_set_version(crt, 3);
    if (!rc)
        rc = gp__serial(crt);
    if (!rc)
        rc = gnutls_x509_crt_set_activation_time(crt, (time_t)(now_s - GP__SKEW_S));
    if (!rc)
        rc = gnutls_x509_crt_set_expiration_time(crt, (time_t)(now_s + life_s));
    if (!rc)
        rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, strlen(cn));
    return rc;
}

/* ---- making and opening ---- */

static int gp__ca_fields(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, int64_t now_s)
{
    unsigned char id[64];
    size_t id_len = sizeof id;
    int rc = gp__basics(crt, GP__CA_NAME, now_s, GP__CA_LIFE_S);
    if (!rc)
        rc = gnutls_x509_crt_set_key(crt, key);
    if (!rc)
        rc = gnutls_x509_crt_set_basic_constraints(crt, 1, 0);
    if (!rc)
        rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN);
    if (!rc)
        rc = gnutls_x509_privkey_get_key_id(key, 0, id, &id_len);
    if (!rc)
        rc = gnutls_x509_crt_set_subject_key_id(crt, id, id_len);
    if (!rc)
        rc = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0);
    return rc;
}

gp_err gp_node_ca_make(const gp_secret_key *k, int64_t now_s, char **cert_pem, char **key_sealed, gp_error *err)
{
    *cert_pem = *key_sealed = NULL;
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t crt = NULL;
    gnutls_datum_t cert_out = {0}, key_out = {0};
    int rc = gnutls_x509_privkey_init(&key);
    if (!rc)
        rc = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
    if (!rc)
        rc = gnutls_x509_crt_init(&crt);
    if (!rc)
        rc = gp__ca_fields(crt, key, now_s);
    if (!rc)
        rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &cert_out);
    if (!rc)
        rc = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &key_out);
    gp_err out = rc ? gp__fail(err, "node_ca", "cannot make the node CA", rc) : GP_OK;
    if (out == GP_OK)
        out = gp_secret_seal(k, GP__SEAL_TENANT, GP__SEAL_NAME, key_out.data, key_out.size, key_sealed, err);
    if (out == GP_OK && !(*cert_pem = gp__text(&cert_out)))
        out = gp_error_set(err, GP_ERR_NOMEM, "node_ca", "out of memory");
    if (key_out.data)
        gnutls_memset(key_out.data, 0, key_out.size);
    gnutls_free(key_out.data);
    gnutls_free(cert_out.data);
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(key);
    if (out != GP_OK) {
        free(*key_sealed);
        *key_sealed = NULL;
    }
    return out;
}

/* The key opens and is the certificate's. */
static gp_err gp__ca_key(gp_node_ca *ca, const gp_secret_key *k, const char *key_sealed, gp_error *err)
{
    char *pem = NULL;
    size_t len = 0;
    gp_err rc = gp_secret_open(k, GP__SEAL_TENANT, GP__SEAL_NAME, key_sealed, &pem, &len, err);
    if (rc != GP_OK)
        return gp_error_set(err, GP_ERR_INVALID, "node_ca",
                            "the node CA's key in the store does not open with this --secret-key-file");
    gnutls_datum_t d = {.data = (unsigned char *)pem, .size = (unsigned)len};
    unsigned char a[64], b[64];
    size_t na = sizeof a, nb = sizeof b;
    int g = gnutls_x509_privkey_init(&ca->key);
    if (!g)
        g = gnutls_x509_privkey_import(ca->key, &d, GNUTLS_X509_FMT_PEM);
    gnutls_memset(pem, 0, len);
    free(pem);
    if (!g)
        g = gnutls_x509_privkey_get_key_id(ca->key, 0, a, &na);
    if (!g)
        g = gnutls_x509_crt_get_key_id(ca->cert, 0, b, &nb);
    if (g)
        return gp__fail(err, "node_ca", "the node CA's key", g);
    if (na != nb || memcmp(a, b, na) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "node_ca", "the node CA's key is not its certificate's");
    return GP_OK;
}

gp_err gp_node_ca_open(gp_node_ca *ca, const gp_secret_key *k, const char *cert_pem, const char *key_sealed,
                       gp_error *err)
{
    memset(ca, 0, sizeof *ca);
    gnutls_datum_t d = {.data = (unsigned char *)cert_pem, .size = (unsigned)strlen(cert_pem)};
    int g = gnutls_x509_crt_init(&ca->cert);
    if (!g)
        g = gnutls_x509_crt_import(ca->cert, &d, GNUTLS_X509_FMT_PEM);
    gp_err rc = g ? gp__fail(err, "node_ca", "the node CA's certificate", g) : gp__ca_key(ca, k, key_sealed, err);
    if (rc == GP_OK && !(ca->cert_pem = strdup(cert_pem)))
        rc = gp_error_set(err, GP_ERR_NOMEM, "node_ca", "out of memory");
    if (rc != GP_OK) {
        gnutls_x509_crt_deinit(ca->cert);
        if (ca->key)
            gnutls_x509_privkey_deinit(ca->key);
        memset(ca, 0, sizeof *ca);
        return rc;
    }
    pthread_mutex_init(&ca->lock, NULL);
    ca->open = true;
    return GP_OK;
}

void gp_node_ca_close(gp_node_ca *ca)
{
    if (!ca->open)
        return;
    gnutls_x509_crt_deinit(ca->cert);
    gnutls_x509_privkey_deinit(ca->key);
    free(ca->cert_pem);
    pthread_mutex_destroy(&ca->lock);
    memset(ca, 0, sizeof *ca);
}

/* ---- signing ---- */

/* The request: parsed, its own signature good (the agent holds the key),
 * naming node, with a key that is not weak. */
static gp_err gp__request(gnutls_x509_crq_t crq, const char *csr_pem, const char *node, gp_error *err)
{
    if (strlen(csr_pem) > GP_NODE_CSR_MAX)
        return gp_error_set(err, GP_ERR_INVALID, "csr", "a certificate request is at most %d bytes",
                            GP_NODE_CSR_MAX);
    gnutls_datum_t d = {.data = (unsigned char *)csr_pem, .size = (unsigned)strlen(csr_pem)};
    if (gnutls_x509_crq_import(crq, &d, GNUTLS_X509_FMT_PEM) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "csr", "not a PEM certificate request");
    if (gnutls_x509_crq_verify(crq, 0) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "csr", "the request's signature does not verify");
    char cn[256];
    size_t size = sizeof cn;
    if (gnutls_x509_crq_get_dn_by_oid(crq, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &size) != 0)
        cn[0] = '\0';
    if (strcmp(cn, node) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "csr", "the request names node \"%.64s\"; this credential is node %s's",
                            cn, node);
    unsigned bits = 0;
    int pk = gnutls_x509_crq_get_pk_algorithm(crq, &bits);
    if (pk == GNUTLS_PK_RSA && bits < 2048)
        return gp_error_set(err, GP_ERR_INVALID, "csr", "an RSA key of %u bits is too weak (2048 at least)", bits);
    return GP_OK;
}

static int gp__node_fields(gp_node_ca *ca, gnutls_x509_crt_t crt, gnutls_pubkey_t pub, const char *node,
                           const char *credential_id, int64_t now_s, int64_t ttl_s)
{
    unsigned char id[64];
    size_t id_len = sizeof id;
    unsigned critical = 0;
    int rc = gp__basics(crt, node, now_s, ttl_s);
    if (!rc)
        rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATIONAL_UNIT_NAME, 0, credential_id,
                                           strlen(credential_id));
    if (!rc)
        rc = gnutls_x509_crt_set_pubkey(crt, pub);
    if (!rc)
        rc = gnutls_x509_crt_set_basic_constraints(crt, 0, -1);
    if (!rc)
        rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
    if (!rc)
        rc = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_CLIENT, 0);
    if (!rc && gnutls_x509_crt_get_subject_key_id(ca->cert, id, &id_len, &critical) == 0)
        rc = gnutls_x509_crt_set_authority_key_id(crt, id, id_len);
    if (!rc) {
        pthread_mutex_lock(&ca->lock);
        rc = gnutls_x509_crt_sign2(crt, ca->cert, ca->key, GNUTLS_DIG_SHA256, 0);
        pthread_mutex_unlock(&ca->lock);
    }
    return rc;
}

gp_err gp_node_ca_sign(gp_node_ca *ca, const char *csr_pem, const char *node, const char *credential_id,
                       int64_t now_s, int64_t ttl_s, char **cert_pem, gp_error *err)
{
    *cert_pem = NULL;
    gnutls_x509_crq_t crq = NULL;
    gnutls_x509_crt_t crt = NULL;
    gnutls_pubkey_t pub = NULL;
    gnutls_datum_t out = {0};
    if (gnutls_x509_crq_init(&crq) != 0)
        return gp_error_set(err, GP_ERR_NOMEM, "csr", "out of memory");
    gp_err rc = gp__request(crq, csr_pem, node, err);
    int g = 0;
    if (rc == GP_OK) {
        g = gnutls_pubkey_init(&pub);
        if (!g)
            g = gnutls_pubkey_import_x509_crq(pub, crq, 0);
        if (!g)
            g = gnutls_x509_crt_init(&crt);
        if (!g)
            g = gp__node_fields(ca, crt, pub, node, credential_id, now_s, ttl_s);
        if (!g)
            g = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &out);
        if (g)
            rc = gp__fail(err, "csr", "cannot sign the request", g);
    }
    if (rc == GP_OK && !(*cert_pem = gp__text(&out)))
        rc = gp_error_set(err, GP_ERR_NOMEM, "csr", "out of memory");
    gnutls_free(out.data);
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (pub)
        gnutls_pubkey_deinit(pub);
    gnutls_x509_crq_deinit(crq);
    return rc;
}

/* ---- checking ---- */

static gp_node_cert_result gp__check(gp_node_ca *ca, gnutls_x509_crt_t crt, const char *node,
                                     const char *credential_id, int64_t now_s, char *why, size_t cap)
{
    unsigned status = 0;
    unsigned flags = GNUTLS_VERIFY_DISABLE_TIME_CHECKS | GNUTLS_VERIFY_DISABLE_TRUSTED_TIME_CHECKS;
    if (gnutls_x509_crt_verify(crt, &ca->cert, 1, flags, &status) != 0 || status != 0) {
        snprintf(why, cap, "the client certificate is not signed by this gpupoold's node CA");
        return GP_NODE_CERT_BAD;
    }
    int64_t from = (int64_t)gnutls_x509_crt_get_activation_time(crt);
    int64_t until = (int64_t)gnutls_x509_crt_get_expiration_time(crt);
    if (now_s < from || now_s >= until) {
        snprintf(why, cap, "the client certificate is valid from %lld to %lld (epoch seconds), not now (%lld)",
                 (long long)from, (long long)until, (long long)now_s);
        return GP_NODE_CERT_EXPIRED;
    }
    char cn[256], ou[256];
    gp__subject(crt, GNUTLS_OID_X520_COMMON_NAME, cn, sizeof cn);
    gp__subject(crt, GNUTLS_OID_X520_ORGANIZATIONAL_UNIT_NAME, ou, sizeof ou);
    if (strcmp(cn, node) != 0) {
        snprintf(why, cap, "the client certificate is node %.64s's, the credential node %.64s's", cn, node);
        return GP_NODE_CERT_OTHER_NODE;
    }
    if (strcmp(ou, credential_id) != 0) {
        snprintf(why, cap, "the client certificate was issued to credential %.40s of node %.64s, not to %.40s", ou,
                 node, credential_id);
        return GP_NODE_CERT_OTHER_CREDENTIAL;
    }
    why[0] = '\0';
    return GP_NODE_CERT_OK;
}

gp_node_cert_result gp_node_ca_check(gp_node_ca *ca, const void *der, size_t len, const char *node,
                                     const char *credential_id, int64_t now_s, char *why, size_t cap)
{
    gnutls_x509_crt_t crt;
    gnutls_datum_t d = {.data = (unsigned char *)der, .size = (unsigned)len};
    if (gnutls_x509_crt_init(&crt) != 0) {
        snprintf(why, cap, "out of memory");
        return GP_NODE_CERT_BAD;
    }
    gp_node_cert_result r;
    if (gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_DER) != 0) {
        snprintf(why, cap, "the client certificate cannot be read");
        r = GP_NODE_CERT_BAD;
    } else {
        r = gp__check(ca, crt, node, credential_id, now_s, why, cap);
    }
    gnutls_x509_crt_deinit(crt);
    return r;
}

/* agent_cert.c - a node's key pair, certificate requests and stored
 * certificates, through GnuTLS (agent_cert.h says the files and when a
 * node renews). */
#include "agent/agent_cert.h"

#include <gnutls/abstract.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP__PEM_MAX 16384

/* The expiry (epoch seconds) of the PEM certificate in path, -1 when it
 * holds none. */
static int64_t gp__expiry(const char *path)
{
    char pem[GP__PEM_MAX];
    gnutls_x509_crt_t crt;
    if (!gp_state_read(path, pem, sizeof pem) || gnutls_x509_crt_init(&crt) != 0)
        return -1;
    gnutls_datum_t d = {.data = (unsigned char *)pem, .size = (unsigned)strlen(pem)};
    int64_t until = gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) == 0
                        ? (int64_t)gnutls_x509_crt_get_expiration_time(crt)
                        : -1;
    gnutls_x509_crt_deinit(crt);
    return until;
}

/* 2/3 of the life left at now_ms of a certificate valid until until_s. */
static int64_t gp__renew_at(int64_t until_s, int64_t now_ms)
{
    int64_t left = until_s * 1000 - now_ms;
    return left > 0 ? now_ms + left * 2 / 3 : 0;
}

static void gp__key_path(gp_node_cert *c, const char *dir)
{
    snprintf(c->key_file, sizeof c->key_file, "%s/node.key", dir);
}

void gp_node_cert_load(gp_node_cert *c, const char *dir, int64_t now_ms)
{
    char a[GP_STATE_PATH_MAX], b[GP_STATE_PATH_MAX];
    snprintf(a, sizeof a, "%s/cert.a.pem", dir);
    snprintf(b, sizeof b, "%s/cert.b.pem", dir);
    int64_t ua = gp__expiry(a), ub = gp__expiry(b);
    gp__key_path(c, dir);
    c->cert_file[0] = '\0';
    c->renew_at_ms = 0;
    if (ua < 0 && ub < 0)
        return;
    snprintf(c->cert_file, sizeof c->cert_file, "%s", ua >= ub ? a : b);
    c->renew_at_ms = gp__renew_at(ua >= ub ? ua : ub, now_ms);
}

/* The node's key from its file, made (and written 0600) when missing. */
static gp_err gp__key(gp_node_cert *c, const char *dir, gnutls_x509_privkey_t key, gp_error *err)
{
    char pem[GP__PEM_MAX];
    gp__key_path(c, dir);
    if (gp_state_read(c->key_file, pem, sizeof pem)) {
        gnutls_datum_t d = {.data = (unsigned char *)pem, .size = (unsigned)strlen(pem)};
        int rc = gnutls_x509_privkey_import(key, &d, GNUTLS_X509_FMT_PEM);
        gnutls_memset(pem, 0, sizeof pem);
        return rc ? gp_error_set(err, GP_ERR_INVALID, "key", "%s holds no key: %s", c->key_file, gnutls_strerror(rc))
                  : GP_OK;
    }
    gnutls_datum_t out = {0};
    int rc = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
    if (!rc)
        rc = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &out);
    if (rc)
        return gp_error_set(err, GP_ERR_INVALID, "key", "cannot make the node's key: %s", gnutls_strerror(rc));
    char *text = malloc(out.size + 1);
    gp_err r = text ? GP_OK : gp_error_set(err, GP_ERR_NOMEM, "key", "out of memory");
    if (text) {
        memcpy(text, out.data, out.size);
        text[out.size] = '\0';
        r = gp_state_write(c->key_file, text, 0600, err);
        gnutls_memset(text, 0, out.size);
    }
    gnutls_memset(out.data, 0, out.size);
    gnutls_free(out.data);
    free(text);
    return r;
}

gp_err gp_node_cert_request(gp_node_cert *c, const char *dir, const char *node, char **csr, gp_error *err)
{
    *csr = NULL;
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crq_t crq = NULL;
    gnutls_datum_t out = {0};
    if (gnutls_x509_privkey_init(&key) != 0 || gnutls_x509_crq_init(&crq) != 0) {
        if (key)
            gnutls_x509_privkey_deinit(key);
        return gp_error_set(err, GP_ERR_NOMEM, "csr", "out of memory");
    }
    gp_err r = gp__key(c, dir, key, err);
    int rc = 0;
    if (r == GP_OK) {
        rc = gnutls_x509_crq_set_version(crq, 1);
        if (!rc)
            rc = gnutls_x509_crq_set_dn_by_oid(crq, GNUTLS_OID_X520_COMMON_NAME, 0, node, strlen(node));
        if (!rc)
            rc = gnutls_x509_crq_set_key(crq, key);
        if (!rc)
            rc = gnutls_x509_crq_sign2(crq, key, GNUTLS_DIG_SHA256, 0);
        if (!rc)
            rc = gnutls_x509_crq_export2(crq, GNUTLS_X509_FMT_PEM, &out);
        if (rc)
            r = gp_error_set(err, GP_ERR_INVALID, "csr", "cannot make the certificate request: %s",
                             gnutls_strerror(rc));
    }
    if (r == GP_OK && (*csr = malloc(out.size + 1)) != NULL) {
        memcpy(*csr, out.data, out.size);
        (*csr)[out.size] = '\0';
    } else if (r == GP_OK) {
        r = gp_error_set(err, GP_ERR_NOMEM, "csr", "out of memory");
    }
    gnutls_free(out.data);
    gnutls_x509_crq_deinit(crq);
    gnutls_x509_privkey_deinit(key);
    return r;
}

gp_err gp_node_cert_store(gp_node_cert *c, const char *dir, const char *pem, int64_t now_ms, gp_error *err)
{
    char path[GP_STATE_PATH_MAX];
    bool was_a = strstr(c->cert_file, "/cert.a.pem") != NULL;
    snprintf(path, sizeof path, "%s/%s", dir, was_a ? "cert.b.pem" : "cert.a.pem");
    gp_err rc = gp_state_write(path, pem, 0644, err);
    int64_t until = rc == GP_OK ? gp__expiry(path) : -1;
    if (rc == GP_OK && until < 0)
        rc = gp_error_set(err, GP_ERR_INVALID, "certificate", "gpupoold's answer holds no PEM certificate");
    if (rc != GP_OK)
        return rc;
    snprintf(c->cert_file, sizeof c->cert_file, "%s", path);
    c->renew_at_ms = gp__renew_at(until, now_ms);
    return GP_OK;
}

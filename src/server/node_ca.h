/* node_ca.h - gpupoold's node certificate authority: the CA that signs
 * each agent's client certificate (issue 33 section 4, docs/agent.md
 * "Node certificates").
 *
 * The CA is an ECDSA P-256 key and a self-signed certificate (CN "gpupool
 * node CA", ten years), made by the first gpupoold that starts with HTTPS
 * and --agent-mtls other than off, kept in the store (table node_ca, one
 * row) with its key sealed by secret_box.h under the key of tenants'
 * secrets (tenant "gpupoold", name "node-ca"): a copy of the store opens
 * no CA key without --secret-key-file's key.  Every replica reads the same
 * row, so a follower that takes the lead signs and checks with the same CA.
 *
 * A node's certificate: the public key of the agent's certificate request
 * (its proof of possession checked), subject CN = the node's name and
 * OU = the id of the node credential it was issued to, valid from a
 * minute before now for --agent-cert-ttl seconds, for TLS client use
 * only.  Bound to the credential, a certificate is worth nothing once
 * that credential is revoked or replaced (a node removed, or registered
 * again): the check on each request compares both names.
 *
 * Example: node h100-1 registers with credential tok-3f2a and a request
 * for CN=h100-1 -> a certificate CN=h100-1, OU=tok-3f2a, 24 h.  A request
 * from h100-2's credential with h100-1's certificate ->
 * GP_NODE_CERT_OTHER_NODE; the same certificate after h100-1 registered
 * again (credential tok-9c01) -> GP_NODE_CERT_OTHER_CREDENTIAL.
 *
 * Threads: gp_node_ca_sign and gp_node_ca_check may be called from any
 * thread once the CA is open (signing is serialised inside).
 * Ownership: the caller frees (free()) every char ** it is given.
 */
#ifndef GP_SERVER_NODE_CA_H
#define GP_SERVER_NODE_CA_H

#include "server/secret_box.h"
#include "util/error.h"

#include <gnutls/x509.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_NODE_CERT_TTL_DEFAULT_S 86400
#define GP_NODE_CSR_MAX 8192 /* bytes of a PEM certificate request */

typedef struct gp_node_ca {
    gnutls_x509_crt_t cert;
    gnutls_x509_privkey_t key;
    char *cert_pem;
    pthread_mutex_t lock; /* signing */
    bool open;
} gp_node_ca;

/* A new CA made at now_s: its certificate (PEM) and its key sealed with k. */
gp_err gp_node_ca_make(const gp_secret_key *k, int64_t now_s, char **cert_pem, char **key_sealed, gp_error *err);

/* The CA of a stored row.  GP_ERR_INVALID (field "node_ca") when the key
 * does not open (another --secret-key-file) or does not match. */
gp_err gp_node_ca_open(gp_node_ca *ca, const gp_secret_key *k, const char *cert_pem, const char *key_sealed,
                       gp_error *err);
void gp_node_ca_close(gp_node_ca *ca);

/* A certificate for node, bound to credential_id, from csr_pem (the
 * agent's PEM request): GP_ERR_INVALID field "csr" when it is not a
 * request, its signature does not verify, it names another node, or its
 * key is weak (RSA under 2048 bits). */
gp_err gp_node_ca_sign(gp_node_ca *ca, const char *csr_pem, const char *node, const char *credential_id,
                       int64_t now_s, int64_t ttl_s, char **cert_pem, gp_error *err);

typedef enum gp_node_cert_result {
    GP_NODE_CERT_OK,
    GP_NODE_CERT_BAD,              /* not a certificate, or not signed by this CA */
    GP_NODE_CERT_EXPIRED,          /* outside its validity */
    GP_NODE_CERT_OTHER_NODE,       /* another node's */
    GP_NODE_CERT_OTHER_CREDENTIAL, /* this node's, issued to a credential it no longer holds */
} gp_node_cert_result;

/* The client certificate der (len bytes) presented with node's credential
 * credential_id at now_s; why: a sentence for the refusal. */
gp_node_cert_result gp_node_ca_check(gp_node_ca *ca, const void *der, size_t len, const char *node,
                                     const char *credential_id, int64_t now_s, char *why, size_t cap);

#endif

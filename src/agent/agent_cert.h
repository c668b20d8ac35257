/* agent_cert.h - a node's key pair and client certificate (issue 33
 * section 4; docs/agent.md "Node certificates").
 *
 * Over HTTPS a node proves who it is with a certificate from gpupoold's
 * node CA beside its credential.  Its key pair is made the first time it
 * registers (ECDSA P-256, STATE/NODE/node.key, 0600, never sent); each
 * registration and renewal sends a certificate request naming the node,
 * and gpupoold answers with a certificate (when it issues them:
 * --agent-mtls optional or required).  The certificates are written in
 * turn to STATE/NODE/cert.a.pem and cert.b.pem, so that a renewed one has
 * another path: libcurl keeps a connection for the client certificate's
 * path it was made with, and a fresh path opens fresh connections rather
 * than reusing one that presented the old certificate.  A node renews at
 * 2/3 of the life left when it got (or, after a restart, found) its
 * certificate.
 *
 * Example: h100-1 registers at 12:00 and gets a 24 h certificate ->
 * cert.a.pem, renew_at 04:00 the next day; that renewal -> cert.b.pem;
 * the next -> cert.a.pem again.
 *
 * Ownership: a gp_node_cert lives in its node; *csr is the caller's (free()).
 */
#ifndef GP_AGENT_CERT_H
#define GP_AGENT_CERT_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/supervise/agent_state.h"
#include "util/error.h"

typedef struct gp_node_cert {
    char key_file[GP_STATE_PATH_MAX];  /* STATE/NODE/node.key */
    char cert_file[GP_STATE_PATH_MAX]; /* the current certificate, "" none */
    int64_t renew_at_ms;               /* epoch ms: ask for the next one from then on (0: now) */
} gp_node_cert;

/* The certificate of dir's node found at its open (the later-expiring of
 * the two files, if any). */
void gp_node_cert_load(gp_node_cert *c, const char *dir, int64_t now_ms);

/* A PEM certificate request naming node, signed with the node's key (made
 * in dir when missing): *csr for the caller to free. */
gp_err gp_node_cert_request(gp_node_cert *c, const char *dir, const char *node, char **csr, gp_error *err);

/* Keeps pem (gpupoold's answer) as the node's certificate, in the file
 * the current one is not in; renew_at_ms from its expiry. */
gp_err gp_node_cert_store(gp_node_cert *c, const char *dir, const char *pem, int64_t now_ms, gp_error *err);

#endif

/* api_node_certs.c - agents' client certificates on the wire (issue 33
 * section 4; docs/api.md "Agents", docs/agent.md "Node certificates").
 *
 * It owns three things, all off unless gpupoold serves HTTPS with
 * --agent-mtls optional or required (node_ca.h is the CA itself):
 *
 *   the check   every call made with a node credential (router.c calls
 *               gp_api_node_cert_ok after authentication) is looked at
 *               for the TLS client certificate of its connection: one
 *               out of its validity, for another node or issued to
 *               another credential is 403 (field "certificate") in both
 *               modes; none at all, or one the node CA did not sign, is
 *               403 under required, and let in under optional (logged
 *               once per node: a rolling upgrade's old agents, or
 *               certificates of the CA before --rotate-node-ca).  The
 *               credential is checked by http.c first, on each request,
 *               so a removed node (its credentials revoked: gpupool nodes
 *               remove) is refused at once, whatever certificate it holds;
 *   issuing     POST /v1/agents:register with "csr" (api_agents.c calls
 *               gp_api_node_cert_request_ok before and gp_api_node_cert_issue
 *               once the credential is made): the answer carries
 *               "certificate", "ca" and "certificate_expires";
 *   renewal     POST /v1/agents/{node}/certificate {"csr": PEM}: the node's
 *               credential, with its current certificate under required
 *               (the check above), gets a fresh one; audited
 *               (agent.certificate).
 *
 * Example (--agent-mtls required, --agent-cert-ttl 86400): h100-1 joins
 * at t with a CSR -> certificate until t+86400; at t+57600 (2/3) its agent
 * posts a new CSR over a connection presenting the first certificate ->
 * a second one until t+144000.  Its credential copied to another host
 * and used without the certificate -> 403 "certificate"; `gpupool nodes
 * remove h100-1` -> the next heartbeat and renewal are 401 (credential
 * revoked).
 */
#include "server/api.h"

#include "spec/json_input.h"

#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gp_api_node_certs_on(const gp_server *srv)
{
    return srv->node_ca.open;
}

/* The connection's TLS client certificate (DER), NULL when none. */
static const gnutls_datum_t *peer_certificate(gp_request *r)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t session = info ? (gnutls_session_t)info->tls_session : NULL;
    unsigned n = 0;
    const gnutls_datum_t *list = session ? gnutls_certificate_get_peers(session, &n) : NULL;
    return list && n > 0 ? list : NULL;
}

/* --agent-mtls optional: a node calling without a certificate, logged the
 * first time this process sees it. */
static void note_without_certificate(gp_server *srv, const char *node)
{
    gp_node_seen *seen = &srv->nodes_without_cert;
    uint32_t dummy;
    pthread_mutex_lock(&seen->lock);
    bool first = !gp_strmap_get(&seen->names, node, &dummy) && gp_strmap_put(&seen->names, node, 1);
    pthread_mutex_unlock(&seen->lock);
    if (first)
        gp_log(GP_LOG_WARN, "agent_without_certificate",
               "node=%s note=\"let in under --agent-mtls optional; required would refuse it\"", node);
}

bool gp_api_node_cert_ok(gp_request *r)
{
    gp_server *srv = r->srv;
    if (r->who.role != GP_ROLE_NODE || !srv->node_ca.open)
        return true;
    const gnutls_datum_t *cert = peer_certificate(r);
    if (!cert && srv->cfg.agent_mtls != GP_AGENT_MTLS_REQUIRED) {
        note_without_certificate(srv, r->who.scope);
        return true;
    }
    if (!cert) {
        gp_api_error(r, 403, "forbidden", "certificate",
                     "the credential of node %.64s is taken only with the node's client certificate (gpupoold"
                     " --agent-mtls required); the agent gets one when it registers",
                     r->who.scope);
        return false;
    }
    char why[300];
    gp_node_cert_result got = gp_node_ca_check(&srv->node_ca, cert->data, cert->size, r->who.scope, r->who.token_id,
                                               gp_wall_ms() / 1000, why, sizeof why);
    if (got == GP_NODE_CERT_BAD && srv->cfg.agent_mtls == GP_AGENT_MTLS_OPTIONAL) {
        note_without_certificate(srv, r->who.scope); /* another CA's (before --rotate-node-ca): as none */
        return true;
    }
    if (got == GP_NODE_CERT_OK)
        return true;
    gp_api_error(r, 403, "forbidden", "certificate", "%s", why);
    return false;
}

bool gp_api_node_cert_request_ok(gp_request *r, const char *csr, const char *node)
{
    if (!r->srv->node_ca.open) {
        gp_api_error(r, 409, "conflict", "csr",
                     "this gpupoold issues no node certificates (it needs HTTPS and --agent-mtls optional or"
                     " required)");
        return false;
    }
    /* signed here once to check the request (its signature, its name, its
     * key): the certificate the node keeps is made with its credential */
    char *pem = NULL;
    gp_error err;
    gp_err rc = gp_node_ca_sign(&r->srv->node_ca, csr, node, "-", gp_wall_ms() / 1000, 60, &pem, &err);
    free(pem);
    if (rc != GP_OK)
        gp_api_fail(r, &err);
    return rc == GP_OK;
}

gp_err gp_api_node_cert_issue(gp_server *srv, const char *csr, const char *node, const char *credential_id,
                              int64_t now, json_t *reply, gp_error *err)
{
    char *pem = NULL;
    gp_err rc = gp_node_ca_sign(&srv->node_ca, csr, node, credential_id, now, srv->cfg.agent_cert_ttl_s, &pem, err);
    if (rc != GP_OK)
        return rc;
    json_object_set_new(reply, "certificate", json_string(pem));
    json_object_set_new(reply, "ca", json_string(srv->node_ca.cert_pem));
    json_object_set_new(reply, "certificate_expires", json_integer(now + srv->cfg.agent_cert_ttl_s));
    free(pem);
    return GP_OK;
}

/* ---- POST /v1/agents/{node}/certificate ---- */

typedef struct renew_arg {
    const char *node;
    const char *csr;
} renew_arg;

static void renew_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    renew_arg *a = op->arg;
    json_t *reply = json_pack("{s:s}", "node", a->node);
    gp_error err;
    if (gp_api_node_cert_issue(srv, a->csr, a->node, op->who->token_id, gp_wall_ms() / 1000, reply, &err) != GP_OK) {
        json_decref(reply);
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200, reply);
}

void gp_api_agent_certificate(gp_request *r, const char *node)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !gp_api_node_caller(r, node))
        return;
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    const char *key;
    json_t *v;
    gp_error err;
    gp_err rc = GP_OK;
    json_object_foreach(body, key, v) {
        if (rc == GP_OK && strcmp(key, "csr") != 0)
            rc = gp_json_unknown_field("", key, &err);
    }
    const char *csr = json_string_value(json_object_get(body, "csr"));
    if (rc == GP_OK && !csr)
        rc = gp_error_set(&err, GP_ERR_INVALID, "csr", "the body needs the node's PEM certificate request as \"csr\"");
    if (rc != GP_OK)
        gp_api_fail(r, &err);
    else if (gp_api_node_cert_request_ok(r, csr, node)) {
        if (!peer_certificate(r)) /* --agent-mtls optional: the credential alone got it */
            gp_log(GP_LOG_WARN, "node_certificate_unproven",
                   "node=%s note=\"a certificate issued to a call without one: the credential alone\"", node);
        renew_arg a = {.node = node, .csr = csr};
        gp_op op = {.run = renew_run, .mutates = true, .arg = &a, .action = "agent.certificate"};
        snprintf(op.target, sizeof op.target, "node/%s", node);
        gp_api_run_op(r, &op);
    }
    json_decref(body);
}

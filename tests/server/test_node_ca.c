/* test_node_ca.c - the node CA (server/node_ca.h) and the agent's side
 * of it (agent/agent_cert.h), each tried as an attacker would:
 *
 *   the CA made and sealed opens with its key and not with another;
 *   an agent's request is signed for its node and the credential only,
 *   and the certificate is refused for another node, another credential,
 *   before or after its life, and when another CA signed it;
 *   a request naming another node, or one that is not a request, gets
 *   nothing; the agent's key is 0600 and its certificates go to
 *   cert.a.pem and cert.b.pem in turn, renewed at 2/3 of their life.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/agent_cert.h"
#include "server/node_ca.h"

#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOW 1796600000LL
#define TTL 86400

static char g_dir[] = "/tmp/gp-node-ca-XXXXXX";

static gp_secret_key key_of(unsigned char byte)
{
    gp_secret_key k;
    memset(k.bytes, byte, sizeof k.bytes);
    return k;
}

static void ca_open(gp_node_ca *ca, const gp_secret_key *k)
{
    char *cert = NULL, *sealed = NULL;
    gp_error err = {0};
    assert_int_equal(gp_node_ca_make(k, NOW, &cert, &sealed, &err), GP_OK);
    assert_int_equal(gp_node_ca_open(ca, k, cert, sealed, &err), GP_OK);
    free(cert);
    free(sealed);
}

/* The agent's request for node (its key in g_dir/node). */
static char *request_for(const char *node, gp_node_cert *c)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%s", g_dir, node);
    mkdir(dir, 0700);
    char *csr = NULL;
    gp_error err = {0};
    assert_int_equal(gp_node_cert_request(c, dir, node, &csr, &err), GP_OK);
    return csr;
}

static gp_node_cert_result check(gp_node_ca *ca, const char *pem, const char *node, const char *cred, int64_t now)
{
    gnutls_datum_t in = {.data = (unsigned char *)pem, .size = (unsigned)strlen(pem)}, der = {0};
    assert_int_equal(gnutls_pem_base64_decode2("CERTIFICATE", &in, &der), 0);
    char why[300];
    gp_node_cert_result r = gp_node_ca_check(ca, der.data, der.size, node, cred, now, why, sizeof why);
    assert_true(r == GP_NODE_CERT_OK || why[0]);
    gnutls_free(der.data);
    return r;
}

static void a_sealed_ca_opens_with_its_key_and_not_with_another(void **state)
{
    (void)state;
    gp_secret_key k = key_of(1), other = key_of(2);
    char *cert = NULL, *sealed = NULL;
    gp_error err = {0};
    assert_int_equal(gp_node_ca_make(&k, NOW, &cert, &sealed, &err), GP_OK);
    assert_non_null(strstr(cert, "BEGIN CERTIFICATE"));
    assert_int_equal(strncmp(sealed, "v1:", 3), 0);
    assert_null(strstr(sealed, "PRIVATE"));
    gp_node_ca ca;
    assert_int_equal(gp_node_ca_open(&ca, &other, cert, sealed, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "node_ca");
    assert_int_equal(gp_node_ca_open(&ca, &k, cert, sealed, &err), GP_OK);
    gp_node_ca_close(&ca);
    free(cert);
    free(sealed);
}

static void a_certificate_holds_for_its_node_and_credential_only(void **state)
{
    (void)state;
    gp_secret_key k = key_of(3);
    gp_node_ca ca;
    ca_open(&ca, &k);
    gp_node_cert c = {0};
    char *csr = request_for("h100-1", &c), *pem = NULL;
    gp_error err = {0};
    assert_int_equal(gp_node_ca_sign(&ca, csr, "h100-1", "tok-3f2a", NOW, TTL, &pem, &err), GP_OK);
    assert_int_equal(check(&ca, pem, "h100-1", "tok-3f2a", NOW + 10), GP_NODE_CERT_OK);
    assert_int_equal(check(&ca, pem, "h100-2", "tok-3f2a", NOW + 10), GP_NODE_CERT_OTHER_NODE);
    assert_int_equal(check(&ca, pem, "h100-1", "tok-9c01", NOW + 10), GP_NODE_CERT_OTHER_CREDENTIAL);
    assert_int_equal(check(&ca, pem, "h100-1", "tok-3f2a", NOW + TTL), GP_NODE_CERT_EXPIRED);
    assert_int_equal(check(&ca, pem, "h100-1", "tok-3f2a", NOW - 3600), GP_NODE_CERT_EXPIRED);
    gp_node_ca other;
    gp_secret_key k2 = key_of(4);
    ca_open(&other, &k2);
    assert_int_equal(check(&other, pem, "h100-1", "tok-3f2a", NOW + 10), GP_NODE_CERT_BAD);
    char why[300];
    assert_int_equal(gp_node_ca_check(&ca, "not der", 7, "h100-1", "tok-3f2a", NOW, why, sizeof why),
                     GP_NODE_CERT_BAD);
    gp_node_ca_close(&other);
    gp_node_ca_close(&ca);
    free(csr);
    free(pem);
}

static void a_request_for_another_node_or_no_request_gets_nothing(void **state)
{
    (void)state;
    gp_secret_key k = key_of(5);
    gp_node_ca ca;
    ca_open(&ca, &k);
    gp_node_cert c = {0};
    char *csr = request_for("h100-2", &c), *pem = NULL;
    gp_error err = {0};
    assert_int_equal(gp_node_ca_sign(&ca, csr, "h100-1", "tok-1", NOW, TTL, &pem, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "csr");
    assert_null(pem);
    char *changed = strdup(csr);
    changed[strlen(changed) / 2] = changed[strlen(changed) / 2] == 'A' ? 'B' : 'A'; /* a byte of the request */
    assert_int_equal(gp_node_ca_sign(&ca, changed, "h100-2", "tok-1", NOW, TTL, &pem, &err), GP_ERR_INVALID);
    assert_int_equal(gp_node_ca_sign(&ca, "hello", "h100-2", "tok-1", NOW, TTL, &pem, &err), GP_ERR_INVALID);
    assert_null(pem);
    gp_node_ca_close(&ca);
    free(changed);
    free(csr);
}

static void the_agent_keeps_its_key_private_and_alternates_its_certificate_files(void **state)
{
    (void)state;
    gp_secret_key k = key_of(6);
    gp_node_ca ca;
    ca_open(&ca, &k);
    gp_node_cert c = {0};
    char dir[256];
    snprintf(dir, sizeof dir, "%s/a100-1", g_dir);
    char *csr = request_for("a100-1", &c), *pem = NULL;
    struct stat st;
    assert_int_equal(stat(c.key_file, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    gp_error err = {0};
    int64_t now_ms = (int64_t)time(NULL) * 1000;
    assert_int_equal(gp_node_ca_sign(&ca, csr, "a100-1", "tok-1", now_ms / 1000, 3000, &pem, &err), GP_OK);
    assert_int_equal(gp_node_cert_store(&c, dir, pem, now_ms, &err), GP_OK);
    assert_non_null(strstr(c.cert_file, "/cert.a.pem"));
    assert_int_equal(c.renew_at_ms, now_ms + 2000 * 1000);
    assert_int_equal(gp_node_cert_store(&c, dir, pem, now_ms, &err), GP_OK);
    assert_non_null(strstr(c.cert_file, "/cert.b.pem"));
    free(pem);
    assert_int_equal(gp_node_ca_sign(&ca, csr, "a100-1", "tok-1", now_ms / 1000, 6000, &pem, &err), GP_OK);
    assert_int_equal(gp_node_cert_store(&c, dir, pem, now_ms, &err), GP_OK); /* longer life, in cert.a.pem */
    gp_node_cert loaded = {0};
    gp_node_cert_load(&loaded, dir, now_ms);
    assert_string_equal(loaded.cert_file, c.cert_file);
    assert_int_equal(gp_node_cert_store(&c, dir, "no certificate", now_ms, &err), GP_ERR_INVALID);
    gp_node_ca_close(&ca);
    free(csr);
    free(pem);
}

static int make_dir(void **state)
{
    (void)state;
    return mkdtemp(g_dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_sealed_ca_opens_with_its_key_and_not_with_another),
        cmocka_unit_test(a_certificate_holds_for_its_node_and_credential_only),
        cmocka_unit_test(a_request_for_another_node_or_no_request_gets_nothing),
        cmocka_unit_test(the_agent_keeps_its_key_private_and_alternates_its_certificate_files),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}

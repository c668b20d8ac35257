/* http.c - libmicrohttpd glue: bodies, limits, authentication, TLS.
 *
 * It owns the daemon's HTTP server: starting and stopping libmicrohttpd
 * (with TLS when a certificate is given), reading a request's body, the
 * limits below, request ids, the access log and sending the reply.  Which
 * handler answers a path is router.c's; the helpers handlers use to read a
 * request and reply are api_request.c's.
 *
 * libmicrohttpd runs one thread per connection (MHD_USE_THREAD_PER_CONNECTION):
 * a handler may block while the engine thread commits its batch, and the
 * number of requests in flight -- hence the group-commit batch size -- is
 * the number of busy connections, bounded by --max-connections.  Each
 * connection thread waits with poll(2) (MHD_USE_POLL), not select(2),
 * whose FD_SETSIZE would refuse every socket numbered 1024 or more: one
 * gpupoold holds the long-polls of thousands of node agents at once.
 *
 * Limits enforced here, before any handler runs:
 *   target        the URL exactly as sent must be valid (uri.h: no NUL,
 *                 no "..", UTF-8, ...; 400) and at most GP_URI_MAX bytes
 *                 (414); libmicrohttpd hands it over raw through its URI
 *                 log callback, before it decodes anything;
 *   headers       at most HEADERS_MAX bytes in all (431).  Both answer
 *                 JSON because libmicrohttpd's own limit (its per-
 *                 connection memory, MHD_MEMORY_LIMIT) is set above them
 *                 (a 40 KB target still gets JSON); a request line or
 *                 headers beyond that one (~60 KB) get its HTML page, with
 *                 the same status (414 or 431);
 *   body size     a Content-Length over --max-body is answered 413 at once;
 *                 a chunked body is counted and refused when it passes it;
 *   content type  bodies must be application/json (apply also takes YAML,
 *                 PATCH also application/merge-patch+json);
 *   tokens        401 without a known, unexpired bearer token (only
 *                 /v1/health and the dashboard's files are public), with where
 *                 to set one; 429 when its bucket is empty;
 *   idle time     connections idle for --timeout seconds are closed.
 * JSON depth, field types and lengths are checked by the handlers' parsers.
 */
#include "server/api.h"

#include "server/uri.h"
#include "util/bytes.h"
#include "util/file.h"
#include "util/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* MHD_MEMORY_LIMIT is each connection's memory pool, and libmicrohttpd
 * touches all of it (its response buffer takes what the request left, and
 * a keep-alive reset clears it): it is most of a connection's resident
 * memory.  Measured with 2,000 held long-polls after a heartbeat each:
 * 277 KiB per connection at 256 KiB, 149 at 128 KiB, 85 at 64 KiB (the
 * thread's 8 MiB stack is virtual: its size changes nothing resident), so
 * 6,250 agents' ~8,600 connections take ~0.7 GiB instead of 2.3.  64 KiB
 * still holds a GP_URI_MAX target with HEADERS_MAX of headers, so those
 * limits answer JSON; bodies stream through it in chunks (up to
 * --max-body, whatever the pool). */
enum { HEADERS_MAX = 16384, MHD_MEMORY_LIMIT = 64 * 1024 };

static atomic_uint_least64_t request_counter;
static uint32_t request_prefix;

/* ---- authentication ---- */

/* Said with every 401: where a client puts its token, not only the header. */
static const char TOKEN_HINT[] = "send Authorization: Bearer <token>; the gpupool CLI reads it from --token or"
                                 " --token-file FILE, GPUPOOL_TOKEN or GPUPOOL_TOKEN_FILE, or token = / token_file ="
                                 " in ~/.config/gpupool/config";

static void refuse_expired(gp_request *r)
{
    char when[32];
    time_t t = (time_t)r->who.expires;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    gp_api_error(r, 401, "unauthorized", "Authorization",
                 "token %s (id %s) expired at %s; ask for a new one (gpupool token create) and %s", r->who.name,
                 r->who.token_id, when, TOKEN_HINT);
}

static void signin_failed(gp_request *r, const char *user);

/* The user a refused static token names: its user, else its name. */
static const char *token_user(const gp_principal *who)
{
    return who->user[0] ? who->user : who->name;
}

/* An OIDC refusal: counted by reason (/metrics), answered with the reason
 * beside the error, audited as every 401 and 403 is (note_refusal). */
static void refuse_oidc(gp_request *r, int status, gp_oidc_result why, const char *detail)
{
    atomic_fetch_add(&r->srv->auth_refusals[why], 1);
    if (status == 401) /* the token itself refused: a failed sign-in (auth_failures.h) */
        signin_failed(r, NULL);
    gp_api_error(r, status, status == 401 ? "unauthorized" : "forbidden", "Authorization",
                 "provider token refused (%s): %s", gp_oidc_result_name(why), detail);
    json_object_set_new(r->reply, "reason", json_string(gp_oidc_result_name(why)));
}

/* A provider's token (oidc.h): verified, its bindings looked up. */
static bool authenticate_oidc(gp_request *r, const char *token)
{
    gp_oidc_identity id;
    char detail[320];
    gp_oidc_result res = gp_oidc_verify(&r->srv->oidc, token, gp_wall_ms() / 1000, &id, detail, sizeof detail);
    if (res == GP_OIDC_NOT_JWT) {
        gp_api_error(r, 401, "unauthorized", "Authorization", "unknown or revoked token: %s", TOKEN_HINT);
        signin_failed(r, NULL);
        return false;
    }
    if (res != GP_OIDC_OK) {
        refuse_oidc(r, 401, res, detail);
        return false;
    }
    gp_error err = {0};
    res = gp_api_oidc_principal(r->srv, &id, &r->who, &err);
    if (res == GP_OIDC_NO_BINDING) {
        snprintf(detail, sizeof detail, "no role binding names user %s or its %d groups; ask an admin (gpupool "
                 "rolebinding create)", id.user, id.n_groups);
        refuse_oidc(r, 403, res, detail);
        return false;
    }
    if (res != GP_OIDC_OK) {
        gp_api_fail(r, &err);
        return false;
    }
    r->authenticated = true;
    if (!atomic_load(&r->srv->loop.following) && gp_oidc_first_use(&r->srv->oidc, &id, gp_wall_ms() / 1000))
        gp_api_oidc_sign_in(r);
    return true;
}

/* Changes that need a second factor from an OIDC caller (--oidc-mfa-for):
 * every write but the jobs' (a member's own submits, cancels, changes). */
static bool second_factor_ok(gp_request *r)
{
    int bit = r->who.role == GP_ROLE_ADMIN          ? GP_OIDC_MFA_ADMIN
              : r->who.role == GP_ROLE_TENANT_ADMIN ? GP_OIDC_MFA_TENANT_ADMIN
                                                    : GP_OIDC_MFA_MEMBER;
    bool write = strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0;
    if (!r->who.oidc || r->who.second_factor || !write || strncmp(r->url, "/v1/jobs", 8) == 0 ||
        !(r->srv->oidc.cfg.mfa_for & bit))
        return true;
    char detail[200];
    snprintf(detail, sizeof detail, "a %s's change needs a second factor: sign in again with one (gpupool login)",
             gp_role_name(r->who.role));
    refuse_oidc(r, 403, GP_OIDC_SECOND_FACTOR_MISSING, detail);
    json_object_set_new(r->reply, "need", json_string("second_factor"));
    return false;
}

static bool authenticate(gp_request *r)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncmp(h, "Bearer ", 7) != 0) {
        gp_api_error(r, 401, "unauthorized", "Authorization", "no token: %s", TOKEN_HINT);
        if (h) /* a credential of another kind (Basic user:password) was presented */
            signin_failed(r, NULL);
        return false;
    }
    if (strncmp(h + 7, "gpt_", 4) != 0 && gp_oidc_enabled(&r->srv->oidc))
        return authenticate_oidc(r, h + 7) && second_factor_ok(r);
    switch (gp_auth_check(&r->srv->auth, h + 7, gp_wall_ms(), &r->who)) {
    case GP_AUTH_OK:
        r->authenticated = true;
        return true;
    case GP_AUTH_RATE_LIMITED:
        gp_api_error(r, 429, "rate_limited", "Authorization", "this token is over %g requests per second",
                     r->srv->auth.rate_per_s);
        return false;
    case GP_AUTH_EXPIRED:
        refuse_expired(r);
        signin_failed(r, token_user(&r->who));
        return false;
    default:
        gp_api_error(r, 401, "unauthorized", "Authorization", "unknown or revoked token: %s", TOKEN_HINT);
        signin_failed(r, NULL);
        return false;
    }
}

static bool content_type_ok(gp_request *r)
{
    if (r->body_len == 0)
        return true;
    const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    bool apply = strcmp(r->url, "/v1/tenants:apply") == 0;
    bool patch = strcmp(r->method, "PATCH") == 0;
    if (ct && strncmp(ct, "application/json", 16) == 0)
        return true;
    if (apply && ct && (strncmp(ct, "application/yaml", 16) == 0 || strncmp(ct, "application/x-yaml", 18) == 0))
        return true;
    if (patch && ct && strncmp(ct, "application/merge-patch+json", 28) == 0)
        return true;
    gp_api_error(r, 415, "unsupported_media_type", "Content-Type", "the body must be application/json%s",
                 apply ? " or application/yaml" : patch ? " or application/merge-patch+json" : "");
    return false;
}

static void request_id(gp_request *r)
{
    const char *given = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
    size_t n = given ? strlen(given) : 0;
    bool ok = n > 0 && n < 41;
    for (size_t i = 0; ok && i < n; i++) {
        char c = given[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
             c == '.';
    }
    if (ok)
        snprintf(r->request_id, sizeof r->request_id, "%s", given);
    else
        snprintf(r->request_id, sizeof r->request_id, "r%08x-%llu", request_prefix,
                 (unsigned long long)atomic_fetch_add(&request_counter, 1));
}

static enum MHD_Result header_bytes(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    *(size_t *)cls += strlen(key) + (value ? strlen(value) : 0) + 4; /* ": " and CRLF */
    return MHD_YES;
}

/* The request target and headers (see the file header). */
static bool request_ok(gp_request *r)
{
    gp_error err;
    int status = r->raw_url ? gp_uri_check(r->raw_url, &err) : 503;
    if (status == 503)
        gp_error_set(&err, GP_ERR_NOMEM, "url", "out of memory");
    if (status) {
        gp_api_error(r, status, status == 414 ? "uri_too_long" : gp_err_name(err.code), err.field, "%s",
                     err.message);
        return false;
    }
    size_t headers = 0;
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, header_bytes, &headers);
    if (headers > HEADERS_MAX) {
        gp_api_error(r, 431, "headers_too_large", "headers", "the request headers are larger than %d bytes",
                     HEADERS_MAX);
        return false;
    }
    return true;
}

static void handle(gp_request *r)
{
    request_id(r);
    if (!request_ok(r))
        return;
    if (gp_api_route_public(r) || gp_api_follower_redirect(r))
        return;
    if (r->body_too_large) {
        gp_api_error(r, 413, "too_large", "body", "the body is larger than %zu bytes", r->srv->cfg.max_body);
        return;
    }
    if (!authenticate(r) || !content_type_ok(r))
        return;
    gp_api_route(r);
}

/* ---- refusals into the audit log (refusals.h) ---- */

static void remote_address(struct MHD_Connection *conn, char *out, size_t cap)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    snprintf(out, cap, "-");
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)cap);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)cap);
}

/* A presented credential refused: counted by address and user for the
 * alerts on repeated failures (auth_failures.h). */
static void signin_failed(gp_request *r, const char *user)
{
    char address[48];
    remote_address(r->conn, address, sizeof address);
    gp_auth_failure_note(&r->srv->auth_failures, address, user, gp_wall_ms());
}

/* How much of a 401's message to keep: all but where to put a token
 * (TOKEN_HINT, and the ": " or " and " before it). */
static int hint_cut(const char *msg)
{
    const char *hint = msg ? strstr(msg, TOKEN_HINT) : NULL;
    size_t n = hint ? (size_t)(hint - msg) : msg ? strlen(msg) : 0;
    while (n > 0 && (msg[n - 1] == ' ' || msg[n - 1] == ':' || msg[n - 1] == ';'))
        n--;
    if (hint && n >= 4 && strncmp(msg + n - 4, " and", 4) == 0)
        n -= 4;
    return (int)n;
}

/* A 401 or 403 no op audited: who (the token id when known), the method
 * and path, the status and the error, the remote address. */
static void note_refusal(gp_request *r)
{
    if ((r->status != 401 && r->status != 403) || r->audited)
        return;
    gp_refusal x = {.status = r->status};
    json_t *e = json_object_get(r->reply, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    bool known = r->who.token_id[0] != '\0'; /* authenticated, or an expired token */
    snprintf(x.request_id, sizeof x.request_id, "%s", r->request_id);
    snprintf(x.actor, sizeof x.actor, "%s", known ? r->who.token_id : "-");
    snprintf(x.role, sizeof x.role, "%s", known ? gp_role_name(r->who.role) : "-");
    snprintf(x.target, sizeof x.target, "%s %s", r->method, r->raw_url ? r->raw_url : r->url);
    snprintf(x.reason, sizeof x.reason, "%s: %.*s", code ? code : "refused", hint_cut(msg), msg ? msg : "");
    remote_address(r->conn, x.source, sizeof x.source);
    gp_refusals_note(&r->srv->refusals, &x, gp_wall_ms());
}

/* ---- libmicrohttpd callbacks ---- */

static enum MHD_Result send_reply(gp_request *r)
{
    char *text;
    const char *type = r->content_type ? r->content_type : "application/json";
    if (r->text_reply) {
        text = r->text_reply;
        r->text_reply = NULL;
    } else {
        text = json_dumps(r->reply ? r->reply : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
    }
    if (!text)
        return MHD_NO;
    size_t len = strlen(text);
    if (!r->content_type) { /* one JSON document per line, for curl users */
        char *t = realloc(text, len + 2);
        if (t) {
            text = t;
            text[len++] = '\n';
            text[len] = '\0';
        }
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(resp, "X-Request-Id", r->request_id);
    if (r->status == 401)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (r->location)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, r->location);
    if (r->retry_after)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (r->web_file) { /* api_web.c: the page loads nothing but this daemon's files and API; it may
                          * call an HTTPS identity provider (discovery, token and revocation endpoints
                          * of the sign-in, wherever the provider's discovery document puts them) */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(resp, "Content-Security-Policy",
                                "default-src 'self'; connect-src 'self' https:; img-src 'self' data:; "
                                "frame-ancestors 'none'");
    }
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void log_request(gp_request *r, int64_t ms)
{
    atomic_fetch_add(&r->srv->requests, 1);
    if (r->status >= 500)
        atomic_fetch_add(&r->srv->errors_5xx, 1);
    else if (r->status >= 400)
        atomic_fetch_add(&r->srv->errors_4xx, 1);
    gp_log_level level = r->status >= 500 ? GP_LOG_ERROR : r->status >= 400 ? GP_LOG_INFO : GP_LOG_DEBUG;
    if (!gp_log_enabled(level))
        return;
    char path[300];
    gp_log(level, "request", "req=%s method=%s path=%s status=%d ms=%lld token=%s", r->request_id, r->method,
           gp_log_quote(r->raw_url ? r->raw_url : r->url, path, sizeof path), r->status, (long long)ms,
           r->authenticated ? r->who.token_id : "-");
}

static bool body_append(gp_request *r, const char *data, size_t len)
{
    if (r->body_too_large || r->body_len + len > r->srv->cfg.max_body) {
        r->body_too_large = true;
        return false;
    }
    if (!gp_bytes_append(&r->body, &r->body_len, &r->body_cap, data, len)) {
        r->body_too_large = true;
        return false;
    }
    return true;
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                      const char *version, const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    (void)version;
    gp_server *srv = cls;
    gp_request *r = *con_cls;
    if (!r || !r->started) {
        r = r ? r : calloc(1, sizeof *r); /* normally made by uri_logged */
        if (!r)
            return MHD_NO;
        r->started = true;
        r->srv = srv;
        r->conn = conn;
        r->url = url;
        r->method = method;
        r->status = 500;
        *con_cls = r;
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > srv->cfg.max_body) {
            request_id(r);
            gp_api_error(r, 413, "too_large", "body", "the body is larger than %zu bytes", srv->cfg.max_body);
            log_request(r, 0);
            return send_reply(r);
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        body_append(r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->status != 500 || r->reply) /* answered already (413 at the headers) */
        return MHD_YES;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    handle(r);
    note_refusal(r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    gp_metrics_request(&srv->metrics, gp_api_route_pattern(url), method, r->status, seconds);
    log_request(r, (int64_t)(seconds * 1000));
    return send_reply(r);
}

/* libmicrohttpd's URI log callback: the target before it is decoded (the
 * buffer is decoded in place later, hence the copy).  The request is made
 * here; its pointer becomes the access handler's *con_cls. */
static void *uri_logged(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)conn;
    gp_request *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->srv = cls;
    r->raw_url = strdup(uri ? uri : "");
    return r;
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    gp_request *r = *con_cls;
    if (!r)
        return;
    json_decref(r->reply);
    free(r->body);
    free(r->text_reply);
    free(r->raw_url);
    free(r->location);
    free(r);
    *con_cls = NULL;
}

/* ---- start / stop ---- */

/* A TLS certificate or key file, whole; NULL with the error (field "tls"). */
static char *read_file(const char *path, gp_error *err)
{
    char *text = NULL;
    size_t len = 0;
    gp_error e;
    gp_err rc = gp_file_read_all(path, &text, &len, &e);
    if (rc) {
        gp_error_set(err, rc, "tls", "%s", e.message);
        return NULL;
    }
    if (len == 0) {
        free(text);
        gp_error_set(err, GP_ERR_INVALID, "tls", "%s is empty", path);
        return NULL;
    }
    return text;
}

gp_err gp_http_check(const gp_server_config *cfg, gp_error *err)
{
    struct sockaddr_in addr;
    gp_err rc = gp_listen_parse(cfg->listen, "listen", &addr, err);
    if (rc)
        return rc;
    bool tls = cfg->tls_cert && cfg->tls_key;
    bool loopback = (ntohl(addr.sin_addr.s_addr) >> 24) == 127;
    if ((cfg->tls_cert != NULL) != (cfg->tls_key != NULL))
        return gp_error_set(err, GP_ERR_INVALID, "tls", "--tls-cert and --tls-key go together");
    if (!tls && cfg->agent_mtls != GP_AGENT_MTLS_OFF)
        return gp_error_set(err, GP_ERR_INVALID, "agent_mtls",
                            "--agent-mtls %s needs HTTPS (--tls-cert/--tls-key): client certificates travel in TLS",
                            cfg->agent_mtls == GP_AGENT_MTLS_REQUIRED ? "required" : "optional");
    if (!tls && !loopback && !cfg->allow_plain_remote)
        return gp_error_set(err, GP_ERR_INVALID, "listen",
                            "plain HTTP on %s is refused: configure --tls-cert/--tls-key, or say "
                            "--allow-plain-http if the network is trusted",
                            cfg->listen);
    return GP_OK;
}

/* The socket a step-down kept open for this image (lease.h), when it
 * listens on addr's address (and port, unless that is 0); else -1. */
static int kept_listen_fd(const struct sockaddr_in *addr)
{
    const char *text = getenv("GP_LISTEN_FD");
    if (!text)
        return -1;
    int fd = atoi(text);
    unsetenv("GP_LISTEN_FD");
    struct sockaddr_in got;
    socklen_t len = sizeof got;
    if (fd <= 2 || getsockname(fd, (struct sockaddr *)&got, &len) != 0 || got.sin_family != AF_INET ||
        got.sin_addr.s_addr != addr->sin_addr.s_addr || (addr->sin_port && got.sin_port != addr->sin_port))
        return -1;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

gp_err gp_http_bind(gp_server *srv, gp_error *err)
{
    struct sockaddr_in addr;
    gp_err rc = gp_listen_parse(srv->cfg.listen, "listen", &addr, err);
    if (rc)
        return rc;
    if ((srv->listen_fd = kept_listen_fd(&addr)) >= 0)
        return GP_OK;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (const struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 1024) != 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return gp_error_set(err, GP_ERR_INVALID, "listen", "cannot listen on %s: %s", srv->cfg.listen,
                            strerror(saved));
    }
    srv->listen_fd = fd;
    return GP_OK;
}

gp_err gp_http_start(gp_server *srv, gp_error *err)
{
    struct sockaddr_in addr;
    gp_err rc = gp_http_check(&srv->cfg, err);
    if (rc == GP_OK)
        rc = gp_listen_parse(srv->cfg.listen, "listen", &addr, err);
    if (rc == GP_OK && srv->listen_fd < 0)
        rc = gp_http_bind(srv, err);
    if (rc)
        return rc;
    bool tls = srv->cfg.tls_cert && srv->cfg.tls_key;
    unsigned char rnd[4];
    if (gnutls_rnd(GNUTLS_RND_NONCE, rnd, sizeof rnd) == 0)
        request_prefix = (uint32_t)rnd[0] << 24 | (uint32_t)rnd[1] << 16 | (uint32_t)rnd[2] << 8 | rnd[3];
    char *cert = NULL, *key = NULL;
    if (tls && (!(cert = read_file(srv->cfg.tls_cert, err)) || !(key = read_file(srv->cfg.tls_key, err)))) {
        free(cert);
        return err ? err->code : GP_ERR_INVALID;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
                     (tls ? MHD_USE_TLS : 0);
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_LISTEN_SOCKET, srv->listen_fd, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)srv->cfg.max_connections, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)srv->cfg.timeout_s, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)request_completed, srv},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)uri_logged, srv},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, MHD_MEMORY_LIMIT, NULL},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL},
        {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, cert},
        {tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, key},
        /* the node CA: agents are asked for their client certificate (api_node_certs.c checks it) */
        {srv->node_ca.open ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, srv->node_ca.cert_pem},
        {MHD_OPTION_END, 0, NULL},
    };
    srv->http = MHD_start_daemon(flags, ntohs(addr.sin_port), NULL, NULL, access_handler, srv, MHD_OPTION_ARRAY,
                                 opts, MHD_OPTION_END);
    free(cert);
    free(key);
    if (!srv->http)
        return gp_error_set(err, GP_ERR_INVALID, "listen", "cannot serve on %s", srv->cfg.listen);
    srv->listen_fd = -1; /* MHD's now: it closes it when it stops */
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->http, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : ntohs(addr.sin_port);
    return GP_OK;
}

void gp_http_stop(gp_server *srv)
{
    if (srv->http)
        MHD_stop_daemon(srv->http);
    srv->http = NULL;
    if (srv->listen_fd >= 0) /* bound, never handed to MHD (start failed later) */
        close(srv->listen_fd);
    srv->listen_fd = -1;
}

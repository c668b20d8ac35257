/* cmd_login.c - gpupool login, logout and whoami: signing in with the
 * company's identity provider instead of holding a token minted by hand.
 *
 * login asks gpupoold what to sign in with (GET /v1/auth, no token:
 * issuer, client id, scopes), reads the provider's discovery document and
 * then, by default, runs the device authorization grant (RFC 8628), which
 * works over SSH:
 *     To sign in, open https://idp.example.com/device and enter WXYZ-1234
 * and polls the token endpoint every `interval` seconds (5 more after a
 * slow_down) until the person has signed in, refused, or the code expired.
 * --browser runs the authorization code flow with PKCE (RFC 7636) instead:
 * a listener on 127.0.0.1 (--port, default any free port) is the redirect
 * URI, the browser ($BROWSER, else xdg-open where there is a display) is
 * sent to the authorization endpoint with a random state, nonce and S256
 * challenge, and the code that comes back with the same state is
 * exchanged with the verifier.  The tokens go to the sign-in cache
 * (signin_cache.h); every later command sends the ID token (signin.h).
 *
 * logout revokes the refresh and access tokens at the provider when its
 * discovery document names a revocation endpoint (RFC 7009) and forgets
 * them.  whoami prints GET /v1/whoami: who gpupoold takes the caller for.
 */
#include "cli/commands.h"
#include "cli/pkce.h"
#include "cli/signin.h"
#include "cli/signin_cache.h"
#include "cli/timefmt.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define GP__BROWSER_WAIT_S 300 /* how long --browser waits for the redirect */

typedef struct login_options {
    bool browser;
    int port;
    const char *issuer, *acr, *idp_cacert;
    char scopes[1024]; /* --scope values, space-separated */
} login_options;

/* What one sign-in needs: gpupoold's entry and the provider's endpoints. */
typedef struct provider {
    const json_t *entry;    /* one of GET /v1/auth's "oidc" */
    json_t *discovery;      /* the provider's openid-configuration */
    char scope[2048];
    const login_options *o;
} provider;

static const char *str(const json_t *o, const char *name)
{
    const char *v = json_string_value(json_object_get(o, name));
    return v ? v : "";
}

static int parse_login(int argc, char **argv, login_options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--browser") == 0) {
            o->browser = true;
            continue;
        }
        if (!v)
            return gp_usage_error("login", "%s needs a value", a);
        if (strcmp(a, "--port") == 0) {
            char *end;
            long port = strtol(v, &end, 10);
            if (*end || port < 0 || port > 65535)
                return gp_usage_error("login", "--port takes 0 to 65535, not \"%s\"", v);
            o->port = (int)port;
        } else if (strcmp(a, "--issuer") == 0)
            o->issuer = v;
        else if (strcmp(a, "--acr") == 0)
            o->acr = v;
        else if (strcmp(a, "--idp-cacert") == 0)
            o->idp_cacert = v;
        else if (strcmp(a, "--scope") == 0) {
            size_t n = strlen(o->scopes);
            snprintf(o->scopes + n, sizeof o->scopes - n, " %s", v);
        } else
            return gp_usage_error("login", "unexpected argument \"%s\"", a);
        i++;
    }
    return GP_EXIT_OK;
}

/* GET /v1/auth without a token: the entry to sign in with into p. */
static int read_auth(gp_client *c, const login_options *o, gp_response *r, provider *p)
{
    char token[sizeof c->token];
    memcpy(token, c->token, sizeof token);
    c->token[0] = '\0';
    int rc = gp_client_call(c, "GET", "/v1/auth", NULL, NULL, 0, r);
    memcpy(c->token, token, sizeof token);
    if (rc == GP_EXIT_OK)
        rc = gp_client_check(r);
    if (rc != GP_EXIT_OK)
        return rc;
    json_t *list = json_object_get(r->body, "oidc"), *e;
    size_t i;
    json_array_foreach(list, i, e)
    {
        if (!o->issuer || strcmp(str(e, "issuer"), o->issuer) == 0) {
            p->entry = e;
            return GP_EXIT_OK;
        }
    }
    fprintf(stderr, "gpupool login: %s signs no one in with %s (GET /v1/auth lists %zu identity provider%s);"
                    " a token from an admin still works (--token-file)\n",
            c->answered, o->issuer ? o->issuer : "an identity provider", json_array_size(list),
            json_array_size(list) == 1 ? "" : "s");
    return GP_EXIT_AUTH;
}

/* The provider's discovery document, its issuer the one gpupoold named. */
static int discover(provider *p)
{
    char url[1200], err[700] = "";
    const char *issuer = str(p->entry, "issuer");
    snprintf(url, sizeof url, "%s%s.well-known/openid-configuration", issuer,
             issuer[0] && issuer[strlen(issuer) - 1] == '/' ? "" : "/");
    p->discovery = gp_idp_get_json(url, p->o->idp_cacert, err, sizeof err);
    if (!p->discovery) {
        fprintf(stderr, "gpupool login: cannot read the provider's discovery document: %s\n", err);
        return GP_EXIT_CONNECT;
    }
    if (strcmp(str(p->discovery, "issuer"), issuer) != 0) {
        fprintf(stderr, "gpupool login: %s names issuer \"%s\", not \"%s\": refused\n", url,
                str(p->discovery, "issuer"), issuer);
        return GP_EXIT_AUTH;
    }
    json_t *s;
    size_t i;
    json_array_foreach(json_object_get(p->entry, "scopes"), i, s)
    {
        size_t n = strlen(p->scope);
        snprintf(p->scope + n, sizeof p->scope - n, "%s%s", n ? " " : "", json_string_value(s));
    }
    size_t n = strlen(p->scope);
    snprintf(p->scope + n, sizeof p->scope - n, "%s%s", n ? "" : "openid", p->o->scopes);
    return GP_EXIT_OK;
}

/* POST form to one of the provider's endpoints. */
static long post(const provider *p, const char *endpoint, const char *form, json_t **answer, char *err, size_t cap)
{
    return gp_idp_post_form(str(p->discovery, endpoint), p->o->idp_cacert, NULL, form, answer, err, cap);
}

static int refused(const char *what, long status, const json_t *answer, const char *err)
{
    if (!status)
        fprintf(stderr, "gpupool login: %s: %s\n", what, err);
    else
        fprintf(stderr, "gpupool login: %s: HTTP %ld %s%s%s\n", what, status, str(answer, "error"),
                str(answer, "error_description")[0] ? ": " : "", str(answer, "error_description"));
    return GP_EXIT_AUTH;
}

static void nap(long seconds)
{
    struct timespec t = {seconds, 0};
    nanosleep(&t, NULL);
}

/* The token endpoint's last word on a device code: expired, refused, other. */
static int device_refused(long status, const json_t *answer, const char *err)
{
    const char *error = str(answer, "error");
    if (strcmp(error, "expired_token") == 0)
        fprintf(stderr, "gpupool login: the code expired before it was entered: run gpupool login again\n");
    else if (strcmp(error, "access_denied") == 0)
        fprintf(stderr, "gpupool login: the sign-in was refused at the provider\n");
    else
        return refused("the token endpoint", status, answer, err);
    return GP_EXIT_AUTH;
}

/* RFC 8628 section 3.4-3.5: polls until tokens, a refusal or expiry. */
static int poll_device(const provider *p, const json_t *start, const char *verifier, json_t **tokens)
{
    long interval = json_integer_value(json_object_get(start, "interval"));
    long expires_in = json_integer_value(json_object_get(start, "expires_in"));
    time_t deadline = time(NULL) + (expires_in > 0 ? expires_in : 600);
    interval = interval > 0 ? interval : 5;
    char form[GP_SIGNIN_FORM_MAX] = "", err[700] = "";
    gp_form_add(form, sizeof form, "grant_type", "urn:ietf:params:oauth:grant-type:device_code");
    gp_form_add(form, sizeof form, "device_code", str(start, "device_code"));
    gp_form_add(form, sizeof form, "client_id", str(p->entry, "client_id"));
    gp_form_add(form, sizeof form, "code_verifier", verifier);
    while (time(NULL) < deadline) {
        nap(interval);
        json_t *answer = NULL;
        long status = post(p, "token_endpoint", form, &answer, err, sizeof err);
        const char *error = str(answer, "error");
        if (status == 200) {
            *tokens = answer;
            return GP_EXIT_OK;
        }
        if (status == 400 && strcmp(error, "slow_down") == 0)
            interval += 5;
        else if (!(status == 400 && strcmp(error, "authorization_pending") == 0)) {
            int rc = device_refused(status, answer, err);
            json_decref(answer);
            return rc;
        }
        json_decref(answer);
    }
    fprintf(stderr, "gpupool login: the code expired before it was entered: run gpupool login again\n");
    return GP_EXIT_AUTH;
}

static int device_grant(const provider *p, json_t **tokens)
{
    if (!str(p->discovery, "device_authorization_endpoint")[0]) {
        fprintf(stderr, "gpupool login: %s has no device authorization endpoint: use gpupool login --browser\n",
                str(p->entry, "issuer"));
        return GP_EXIT_AUTH;
    }
    /* PKCE on the device grant too: a provider may require it of a public
     * client (Keycloak does where the client asks for PKCE), others ignore it */
    char form[GP_SIGNIN_FORM_MAX] = "", err[700] = "", verifier[64], challenge[64];
    if (!gp_pkce_make(verifier, sizeof verifier, challenge, sizeof challenge)) {
        fprintf(stderr, "gpupool login: GnuTLS gave no random bytes\n");
        return GP_EXIT_ERROR;
    }
    gp_form_add(form, sizeof form, "client_id", str(p->entry, "client_id"));
    gp_form_add(form, sizeof form, "scope", p->scope);
    gp_form_add(form, sizeof form, "acr_values", p->o->acr);
    gp_form_add(form, sizeof form, "code_challenge", challenge);
    gp_form_add(form, sizeof form, "code_challenge_method", "S256");
    json_t *start = NULL;
    long status = post(p, "device_authorization_endpoint", form, &start, err, sizeof err);
    if (status != 200 || !str(start, "device_code")[0]) {
        int rc = refused("the device authorization endpoint", status, start, err);
        json_decref(start);
        return rc;
    }
    fprintf(stderr, "To sign in, open %s and enter the code %s\n", str(start, "verification_uri"),
            str(start, "user_code"));
    if (str(start, "verification_uri_complete")[0])
        fprintf(stderr, "(or open %s)\n", str(start, "verification_uri_complete"));
    fprintf(stderr, "Waiting for the sign-in...\n");
    int rc = poll_device(p, start, verifier, tokens);
    json_decref(start);
    return rc;
}

/* A loopback listener for the redirect: its socket, the port in *port. */
static int listen_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        fprintf(stderr, "gpupool login: cannot listen on 127.0.0.1:%d for the redirect\n", *port);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* Sends the person's browser to url: $BROWSER, else xdg-open with a display. */
static pid_t open_browser(const char *url)
{
    const char *browser = getenv("BROWSER");
    if (!browser || !browser[0])
        browser = getenv("DISPLAY") || getenv("WAYLAND_DISPLAY") ? "xdg-open" : NULL;
    pid_t pid = 0;
    char *argv[] = {(char *)browser, (char *)url, NULL};
    if (browser && posix_spawnp(&pid, browser, NULL, NULL, argv, environ) != 0)
        pid = 0;
    return pid;
}

/* One query parameter of a request line's target, URL-decoded, into out. */
static bool query_value(const char *target, const char *key, char *out, size_t cap)
{
    const char *q = strchr(target, '?');
    size_t klen = strlen(key);
    for (const char *p = q; p; p = strchr(p + 1, '&')) {
        if (strncmp(p + 1, key, klen) != 0 || p[1 + klen] != '=')
            continue;
        const char *v = p + 2 + klen;
        int vlen = (int)strcspn(v, "& ");
        char *decoded = curl_easy_unescape(NULL, v, vlen, NULL);
        snprintf(out, cap, "%s", decoded ? decoded : "");
        curl_free(decoded);
        return true;
    }
    return false;
}

static void answer_browser(int fd, int status, const char *text)
{
    char page[1024];
    int n = snprintf(page, sizeof page,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n%s\n",
                     status, status == 200 ? "OK" : "Not Found", text);
    if (write(fd, page, (size_t)n) < 0)
        return;
}

/* Waits for GET /callback?code=...&state=... on the listener: the code into
 * code when its state is ours. */
static int take_redirect(int listener, const char *state, char *code, size_t cap)
{
    time_t deadline = time(NULL) + GP__BROWSER_WAIT_S;
    while (time(NULL) < deadline) {
        struct pollfd pfd = {listener, POLLIN, 0};
        if (poll(&pfd, 1, 1000) <= 0)
            continue;
        int fd = accept(listener, NULL, NULL);
        char req[8192] = "", got_state[256] = "", error[256] = "";
        ssize_t n = fd >= 0 ? read(fd, req, sizeof req - 1) : -1;
        if (n <= 0 || strncmp(req, "GET /callback?", 14) != 0) {
            if (fd >= 0)
                answer_browser(fd, 404, "not here");
            close(fd);
            continue;
        }
        req[strcspn(req, "\r\n")] = '\0';
        bool ours = query_value(req, "state", got_state, sizeof got_state) && strcmp(got_state, state) == 0;
        bool has_code = ours && query_value(req, "code", code, cap) && code[0];
        query_value(req, "error", error, sizeof error);
        answer_browser(fd, 200, has_code ? "Signed in to gpupool: you may close this window."
                                         : "The sign-in did not complete: see the terminal.");
        close(fd);
        if (has_code)
            return GP_EXIT_OK;
        fprintf(stderr, "gpupool login: the provider redirected back %s%s\n",
                ours ? "without a code: " : "with a state that is not this login's (ignored)",
                ours ? (error[0] ? error : "no error named") : "");
        if (ours)
            return GP_EXIT_AUTH;
    }
    fprintf(stderr, "gpupool login: no sign-in came back within %d s\n", GP__BROWSER_WAIT_S);
    return GP_EXIT_AUTH;
}

/* The authorization request's URL into url. */
static void authorization_url(const provider *p, const char *redirect, const char *state, const char *nonce,
                              const char *challenge, char *url, size_t cap)
{
    char form[GP_SIGNIN_FORM_MAX] = "";
    gp_form_add(form, sizeof form, "response_type", "code");
    gp_form_add(form, sizeof form, "client_id", str(p->entry, "client_id"));
    gp_form_add(form, sizeof form, "redirect_uri", redirect);
    gp_form_add(form, sizeof form, "scope", p->scope);
    gp_form_add(form, sizeof form, "state", state);
    gp_form_add(form, sizeof form, "nonce", nonce);
    gp_form_add(form, sizeof form, "code_challenge", challenge);
    gp_form_add(form, sizeof form, "code_challenge_method", "S256");
    gp_form_add(form, sizeof form, "acr_values", p->o->acr);
    const char *endpoint = str(p->discovery, "authorization_endpoint");
    snprintf(url, cap, "%s%c%s", endpoint, strchr(endpoint, '?') ? '&' : '?', form + 1);
}

/* The code flow with PKCE and a loopback redirect. */
static int browser_flow(const provider *p, json_t **tokens, char *nonce, size_t nonce_cap)
{
    char verifier[64], challenge[64], state[64], redirect[64], url[GP_SIGNIN_FORM_MAX], code[2048];
    int port = p->o->port, listener = listen_loopback(&port);
    if (listener < 0)
        return GP_EXIT_ERROR;
    if (!gp_pkce_make(verifier, sizeof verifier, challenge, sizeof challenge) ||
        !gp_random_urlsafe(16, state, sizeof state) || !gp_random_urlsafe(16, nonce, nonce_cap)) {
        close(listener);
        fprintf(stderr, "gpupool login: GnuTLS gave no random bytes\n");
        return GP_EXIT_ERROR;
    }
    snprintf(redirect, sizeof redirect, "http://127.0.0.1:%d/callback", port);
    authorization_url(p, redirect, state, nonce, challenge, url, sizeof url);
    fprintf(stderr, "To sign in, open this address in your browser:\n  %s\n", url);
    pid_t browser = open_browser(url);
    int rc = take_redirect(listener, state, code, sizeof code);
    close(listener);
    if (browser > 0)
        waitpid(browser, NULL, 0);
    if (rc != GP_EXIT_OK)
        return rc;
    char form[GP_SIGNIN_FORM_MAX] = "", err[700] = "";
    gp_form_add(form, sizeof form, "grant_type", "authorization_code");
    gp_form_add(form, sizeof form, "code", code);
    gp_form_add(form, sizeof form, "redirect_uri", redirect);
    gp_form_add(form, sizeof form, "client_id", str(p->entry, "client_id"));
    gp_form_add(form, sizeof form, "code_verifier", verifier);
    long status = post(p, "token_endpoint", form, tokens, err, sizeof err);
    if (status == 200)
        return GP_EXIT_OK;
    rc = refused("the code exchange", status, *tokens, err);
    json_decref(*tokens);
    *tokens = NULL;
    return rc;
}

/* The tokens as the server's cached sign-in; what to say. */
static int keep(gp_client *c, const provider *p, const json_t *tokens, const char *nonce)
{
    json_t *record = json_pack("{s:s, s:s, s:s, s:s, s:s}", "issuer", str(p->entry, "issuer"), "client_id",
                               str(p->entry, "client_id"), "token_endpoint", str(p->discovery, "token_endpoint"),
                               "revocation_endpoint", str(p->discovery, "revocation_endpoint"), "idp_cacert",
                               p->o->idp_cacert ? p->o->idp_cacert : "");
    json_t *claims = NULL;
    int rc = GP_EXIT_AUTH;
    if (!gp_signin_take_tokens(record, tokens))
        fprintf(stderr, "gpupool login: the provider answered without an ID token (is \"openid\" in the scopes?)\n");
    else if (claims = gp_jwt_claims(str(record, "id_token")), nonce && strcmp(str(claims, "nonce"), nonce) != 0)
        fprintf(stderr, "gpupool login: the ID token does not carry this login's nonce: refused\n");
    else if (gp_signin_save(c->server, record)) {
        char when[64];
        const char *who = str(claims, "preferred_username")[0] ? str(claims, "preferred_username") : str(claims, "sub");
        printf("Signed in to %s as %s (%s); the sign-in expires %s.\n", c->server, who, str(p->entry, "issuer"),
               gp_time_human(json_integer_value(json_object_get(record, "expires")), time(NULL), when, sizeof when));
        if (c->token_source[0] && strncmp(c->token_source, "gpupool login", 13) != 0)
            fprintf(stderr, "gpupool login: note: a static token is set (%s); commands send it, not this sign-in\n",
                    c->token_source);
        rc = GP_EXIT_OK;
    } else
        rc = GP_EXIT_ERROR;
    json_decref(claims);
    json_decref(record);
    return rc;
}

int gp_cmd_login(gp_client *c, int argc, char **argv)
{
    login_options o = {0};
    int rc = parse_login(argc, argv, &o);
    if (rc != GP_EXIT_OK)
        return rc;
    gp_response auth = {0};
    provider p = {.o = &o};
    json_t *tokens = NULL;
    char nonce[64] = "";
    rc = read_auth(c, &o, &auth, &p);
    if (rc == GP_EXIT_OK)
        rc = discover(&p);
    if (rc == GP_EXIT_OK)
        rc = o.browser ? browser_flow(&p, &tokens, nonce, sizeof nonce) : device_grant(&p, &tokens);
    if (rc == GP_EXIT_OK)
        rc = keep(c, &p, tokens, o.browser ? nonce : NULL);
    json_decref(tokens);
    json_decref(p.discovery);
    gp_response_free(&auth);
    return rc;
}

/* RFC 7009: one token revoked; false (and why) when the provider refused.
 * The access token goes along as the bearer: a public client has no
 * secret, and some providers (glewlwyd) want a token to revoke with. */
static bool revoke(const json_t *record, const char *name, char *err, size_t cap)
{
    char form[GP_SIGNIN_FORM_MAX] = "";
    gp_form_add(form, sizeof form, "token", str(record, name));
    gp_form_add(form, sizeof form, "token_type_hint", name);
    gp_form_add(form, sizeof form, "client_id", str(record, "client_id"));
    json_t *answer = NULL;
    const char *bearer = str(record, "access_token")[0] ? str(record, "access_token") : NULL;
    long status = gp_idp_post_form(str(record, "revocation_endpoint"), str(record, "idp_cacert"), bearer, form,
                                   &answer, err, cap);
    if (status && status != 200)
        snprintf(err, cap, "HTTP %ld %s", status, str(answer, "error"));
    json_decref(answer);
    return status == 200;
}

int gp_cmd_logout(gp_client *c, int argc, char **argv)
{
    if (argc > 1)
        return gp_usage_error("logout", "unexpected argument \"%s\"", argv[1]);
    json_t *record = gp_signin_load(c->server);
    if (!record) {
        printf("Not signed in to %s.\n", c->server);
        return GP_EXIT_OK;
    }
    char err[700] = "";
    bool revoked = false;
    if (str(record, "revocation_endpoint")[0]) {
        revoked = (!str(record, "refresh_token")[0] || revoke(record, "refresh_token", err, sizeof err)) &&
                  (!str(record, "access_token")[0] || revoke(record, "access_token", err, sizeof err));
        if (!revoked)
            fprintf(stderr, "gpupool logout: %s did not revoke the tokens (%s); they are forgotten here anyway\n",
                    str(record, "issuer"), err);
    }
    bool forgot = gp_signin_forget(c->server);
    if (forgot)
        printf("Signed out of %s%s%s.\n", c->server, revoked ? "; tokens revoked at " : "",
               revoked ? str(record, "issuer") : "");
    json_decref(record);
    return forgot ? GP_EXIT_OK : GP_EXIT_ERROR;
}

/* A JSON array of strings as "a, b, c" into buf. */
static const char *joined(const json_t *list, char *buf, size_t cap)
{
    json_t *v;
    size_t i, n = 0;
    buf[0] = '\0';
    json_array_foreach(list, i, v) n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", i ? ", " : "",
                                                         json_is_string(v) ? json_string_value(v) : "?");
    return buf[0] ? buf : "-";
}

/* The roles gpupoold gives the caller, one line each: role, scope, and
 * what gave it (a role binding's id, or the static token's name). */
static void print_roles(const json_t *who)
{
    const json_t *grants = json_object_get(who, "grants"), *g;
    size_t i;
    if (json_array_size(grants)) {
        printf("roles:\n");
        json_array_foreach(grants, i, g)
        {
            printf("  %-13s %-24s binding %" JSON_INTEGER_FORMAT "\n", str(g, "role"),
                   str(g, "scope")[0] ? str(g, "scope") : "(fleet)", json_integer_value(json_object_get(g, "binding")));
        }
    } else if (str(who, "role")[0])
        printf("roles:\n  %-13s %-24s token %s\n", str(who, "role"), str(who, "scope")[0] ? str(who, "scope") : "(fleet)",
               str(who, "name"));
    else
        printf("roles:         none\n");
}

int gp_cmd_whoami(gp_client *c, int argc, char **argv)
{
    if (argc > 1)
        return gp_usage_error("whoami", "unexpected argument \"%s\"", argv[1]);
    gp_response r;
    int rc = gp_client_run(c, "GET", "/v1/whoami", NULL, &r);
    if (rc == GP_EXIT_OK && !c->json) {
        char buf[2048];
        const json_t *who = r.body, *expires = json_object_get(who, "expires");
        const json_t *second = json_object_get(who, "second_factor");
        printf("user:          %s\n", str(who, "user")[0] ? str(who, "user") : str(who, "name"));
        if (str(who, "issuer")[0])
            printf("issuer:        %s\n", str(who, "issuer"));
        printf("groups:        %s\n", joined(json_object_get(who, "groups"), buf, sizeof buf));
        printf("second factor: %s\n", json_is_true(second) ? "yes" : json_is_string(second) ? json_string_value(second)
                                                                                            : "no");
        printf("expires:       %s\n", json_is_integer(expires) ? gp_time_human(json_integer_value(expires),
                                                                                time(NULL), buf, sizeof buf)
                                      : json_is_string(expires) ? json_string_value(expires)
                                                                : "never");
        print_roles(who);
        printf("token from:    %s\n", c->token_source[0] ? c->token_source : "none");
    }
    gp_response_free(&r);
    return rc;
}

/* client.c - configuration and HTTP calls for the CLI (see client.h). */
#include "cli/client.h"
#include "cli/signin.h"
#include "util/bytes.h"
#include "util/server_url.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Where the CLI looks when nothing names a server (gpupoold's default --listen). */
#define GP__DEFAULT_SERVER "http://127.0.0.1:8750"

#define GP__HOPS_MAX 5 /* 307s followed for one call */

static void copy(char *out, size_t cap, const char *v)
{
    snprintf(out, cap, "%s", v);
    size_t n = strlen(out);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
        out[--n] = '\0';
}

static bool read_token_file(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "gpupool: cannot read token file %s\n", path);
        return false;
    }
    char line[512] = "";
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    copy(out, cap, line);
    return ok;
}

static bool blank_or_comment(const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    return *line == '#' || *line == '\n' || *line == '\r' || *line == '\0';
}

static int config_line_error(const char *path, int n, const char *what, const char *text)
{
    char shown[80];
    copy(shown, sizeof shown, text);
    fprintf(stderr, "gpupool: %s:%d: %s \"%s\" (a line is KEY = VALUE, KEY one of server, token, token_file,"
                    " cacert; # starts a comment)\n", path, n, what, shown);
    return GP_EXIT_USAGE;
}

/* One "key = value" line of the config file into c (see client.h). */
static int config_line(gp_client *c, const char *path, int n, char *line, bool want_server, bool want_token)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return config_line_error(path, n, "cannot parse", line);
    *eq = '\0';
    char key[64], *value = eq + 1, *k = line;
    while (*k == ' ' || *k == '\t')
        k++;
    copy(key, sizeof key, k);
    while (*value == ' ' || *value == '\t')
        value++;
    bool known = strcmp(key, "server") == 0 || strcmp(key, "token") == 0 || strcmp(key, "token_file") == 0 ||
                 strcmp(key, "cacert") == 0;
    if (!known)
        return config_line_error(path, n, "unknown key", key);
    if (want_server && strcmp(key, "server") == 0)
        copy(c->server, sizeof c->server, value);
    else if (want_token && strcmp(key, "token") == 0) {
        copy(c->token, sizeof c->token, value);
        snprintf(c->token_source, sizeof c->token_source, "token = in %s", path);
    } else if (want_token && strcmp(key, "token_file") == 0) {
        char tf[900];
        copy(tf, sizeof tf, value);
        if (!read_token_file(tf, c->token, sizeof c->token))
            return GP_EXIT_USAGE;
        snprintf(c->token_source, sizeof c->token_source, "token_file = %s in %s", tf, path);
    } else if (!c->cacert[0] && strcmp(key, "cacert") == 0)
        copy(c->cacert, sizeof c->cacert, value);
    return GP_EXIT_OK;
}

/* key = value lines; # comments; anything else is an error. */
static int read_config_file(gp_client *c, bool want_server, bool want_token)
{
    char *path = c->config_path;
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0])
        snprintf(path, sizeof c->config_path, "%s/gpupool/config", xdg);
    else if (home)
        snprintf(path, sizeof c->config_path, "%s/.config/gpupool/config", home);
    else
        return GP_EXIT_OK;
    FILE *f = fopen(path, "r");
    if (!f)
        return GP_EXIT_OK;
    char line[1024];
    int rc = GP_EXIT_OK;
    for (int n = 1; rc == GP_EXIT_OK && fgets(line, sizeof line, f); n++)
        if (!blank_or_comment(line))
            rc = config_line(c, path, n, line, want_server, want_token);
    fclose(f);
    return rc;
}

/* The server list into c->urls (client.h). */
static int split_servers(gp_client *c)
{
    char list[sizeof c->server], *urls[GP_CLIENT_URLS_MAX];
    copy(list, sizeof list, c->server);
    int n = gp_server_urls_split(list, urls, GP_CLIENT_URLS_MAX);
    for (int i = 0; i < n; i++) {
        if (strlen(urls[i]) >= GP_CLIENT_URL_MAX) {
            fprintf(stderr, "gpupool: server URL too long: %.60s...\n", urls[i]);
            return GP_EXIT_USAGE;
        }
        copy(c->urls[i], GP_CLIENT_URL_MAX, urls[i]);
    }
    if (n <= 0)
        fprintf(stderr, "gpupool: the server \"%s\" %s\n", c->server,
                n < 0 ? "lists more than 8 URLs" : "names no URL");
    c->n_urls = n > 0 ? (size_t)n : 0;
    return n > 0 ? GP_EXIT_OK : GP_EXIT_USAGE;
}

static int parse_wait_leader(gp_client *c, const char *value)
{
    char *end = NULL;
    long s = value ? strtol(value, &end, 10) : 15;
    if (value && (!value[0] || *end || s < 0 || s > 86400)) {
        fprintf(stderr, "gpupool: --wait-leader takes whole seconds from 0 to 86400, not \"%s\"\n", value);
        return GP_EXIT_USAGE;
    }
    c->wait_leader_s = (int)s;
    return GP_EXIT_OK;
}

int gp_client_configure(gp_client *c, const char *server, const char *token, const char *token_file,
                        const char *cacert, const char *wait_leader)
{
    const char *env_server = getenv("GPUPOOL_SERVER"), *env_token = getenv("GPUPOOL_TOKEN");
    const char *env_token_file = getenv("GPUPOOL_TOKEN_FILE");
    if (cacert)
        copy(c->cacert, sizeof c->cacert, cacert);
    if (server)
        copy(c->server, sizeof c->server, server);
    else if (env_server && env_server[0])
        copy(c->server, sizeof c->server, env_server);
    char *source = c->token_source;
    size_t cap = sizeof c->token_source;
    if (token) {
        copy(c->token, sizeof c->token, token);
        snprintf(source, cap, "--token");
    } else if (token_file) {
        if (!read_token_file(token_file, c->token, sizeof c->token))
            return GP_EXIT_USAGE;
        snprintf(source, cap, "--token-file %s", token_file);
    } else if (env_token && env_token[0]) {
        copy(c->token, sizeof c->token, env_token);
        snprintf(source, cap, "GPUPOOL_TOKEN");
    } else if (env_token_file && env_token_file[0]) {
        if (!read_token_file(env_token_file, c->token, sizeof c->token))
            return GP_EXIT_USAGE;
        snprintf(source, cap, "GPUPOOL_TOKEN_FILE=%s", env_token_file);
    }
    int rc = read_config_file(c, !c->server[0], !c->token[0]);
    if (rc == GP_EXIT_OK)
        rc = parse_wait_leader(c, wait_leader);
    if (rc != GP_EXIT_OK)
        return rc;
    c->server_default = !c->server[0];
    if (c->server_default)
        copy(c->server, sizeof c->server, GP__DEFAULT_SERVER);
    if ((rc = split_servers(c)) != GP_EXIT_OK)
        return rc;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    c->curl = curl_easy_init();
    if (!c->curl)
        return GP_EXIT_ERROR;
    gp_signin_use(c);
    return GP_EXIT_OK;
}

void gp_client_close(gp_client *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    c->curl = NULL;
    curl_global_cleanup();
}

size_t gp_curl_collect(char *ptr, size_t size, size_t n, void *userdata)
{
    gp_curl_buffer *b = userdata;
    size_t add = size * n;
    return gp_bytes_append(&b->data, &b->len, &b->cap, ptr, add) ? add : 0;
}

/* What one call sends, whichever replica gets it. */
typedef struct request {
    const char *method, *path, *content_type, *body;
    size_t body_len;
} request;

/* One exchange with url: the answer in out (0 on success), else curl's
 * error.  location: the answer's Location, "" none. */
static CURLcode perform(gp_client *c, const char *url, const request *rq, gp_response *out, char *location,
                        size_t cap, long *retry_after_s)
{
    CURL *curl = c->curl;
    char auth[sizeof c->token + 32], ctype[128];
    gp_curl_buffer b = {NULL, 0, 0};
    struct curl_slist *headers = NULL;
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, rq->method);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, gp_curl_collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (c->cacert[0])
        curl_easy_setopt(curl, CURLOPT_CAINFO, c->cacert);
    if (c->token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->token);
        headers = curl_slist_append(headers, auth);
    }
    if (c->header)
        headers = curl_slist_append(headers, c->header);
    if (rq->body) {
        snprintf(ctype, sizeof ctype, "Content-Type: %s", rq->content_type ? rq->content_type : "application/json");
        headers = curl_slist_append(headers, ctype);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, rq->body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)rq->body_len);
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    *out = (gp_response){.client = c};
    location[0] = '\0';
    *retry_after_s = 0;
    if (rc != CURLE_OK) {
        free(b.data);
        return rc;
    }
    char *redirect = NULL;
    curl_off_t retry_after = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->status);
    curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &redirect);
    curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &retry_after);
    if (redirect)
        snprintf(location, cap, "%s", redirect);
    *retry_after_s = (long)retry_after;
    out->body = b.data ? json_loads(b.data, JSON_DECODE_ANY, NULL) : NULL;
    out->text = b.data;
    return CURLE_OK;
}

/* A 307 names the leader in its JSON error: the command's next writes go
 * there first. */
static void remember_leader(gp_client *c, const gp_response *r)
{
    const char *leader = json_string_value(json_object_get(json_object_get(r->body, "error"), "leader"));
    if (leader && strlen(leader) < sizeof c->leader && gp_server_url_followable(leader))
        copy(c->leader, sizeof c->leader, leader);
}

/* The call at one replica (base URL), following its 307s. */
static CURLcode at_replica(gp_client *c, const char *base, const request *rq, gp_response *out,
                           long *retry_after_s)
{
    char url[2048], location[2048];
    snprintf(url, sizeof url, "%s%s", base, rq->path);
    copy(c->answered, sizeof c->answered, base);
    for (int hops = 0;; hops++) {
        CURLcode rc = perform(c, url, rq, out, location, sizeof location, retry_after_s);
        if (rc != CURLE_OK || out->status != 307 || !location[0])
            return rc;
        if (hops == GP__HOPS_MAX || !gp_server_url_followable(location)) {
            fprintf(stderr, "gpupool: %s sent %s on to %s: not followed (%s)\n", c->answered, rq->path, location,
                    hops == GP__HOPS_MAX ? "5 hops already" : "not an http(s) URL");
            return rc;
        }
        remember_leader(c, out);
        gp_response_free(out);
        copy(url, sizeof url, location);
        copy(c->answered, sizeof c->answered, c->leader[0] ? c->leader : location);
    }
}

/* One pass over the replicas: writes to the known leader first, then the
 * list from the URL that answered last.  GP_EXIT_OK: an answer (not a
 * 503 with Retry-After) in out; GP_EXIT_RETRY: no leader yet, *wait_s
 * the shortest Retry-After, the last such answer in out;
 * GP_EXIT_CONNECT: no replica could be reached. */
static int one_pass(gp_client *c, const request *rq, gp_response *out, long *wait_s, char *errors, size_t cap)
{
    bool write = strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0;
    size_t leader_first = write && c->leader[0] ? 1 : 0;
    int result = GP_EXIT_CONNECT;
    *out = (gp_response){.client = c};
    for (size_t k = 0; k < leader_first + c->n_urls; k++) {
        bool to_leader = k < leader_first;
        size_t i = to_leader ? 0 : (c->first + k - leader_first) % c->n_urls;
        gp_response r;
        long retry_after = 0;
        CURLcode rc = at_replica(c, to_leader ? c->leader : c->urls[i], rq, &r, &retry_after);
        if (rc != CURLE_OK) {
            size_t used = strlen(errors);
            snprintf(errors + used, cap - used, "%s%s: %s", used ? ", " : "", c->answered, curl_easy_strerror(rc));
            if (to_leader)
                c->leader[0] = '\0';
            continue;
        }
        gp_response_free(out);
        *out = r;
        if (r.status == 503 && retry_after > 0) {
            *wait_s = result == GP_EXIT_RETRY && *wait_s < retry_after ? *wait_s : retry_after;
            result = GP_EXIT_RETRY;
            continue;
        }
        if (!to_leader)
            c->first = i;
        return GP_EXIT_OK;
    }
    return result;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* No server answered: what each said, and, when none was configured,
 * that the URL tried is the built-in default and how to name another. */
static void cannot_reach(const gp_client *c, const char *errors)
{
    fprintf(stderr, "gpupool: cannot reach %s\n", errors);
    if (c->server_default)
        fprintf(stderr, "gpupool: %s is the built-in default (8750: gpupoold's default port), as nothing named a\n"
                        "  server; point gpupool at yours with --server URL, GPUPOOL_SERVER=URL or a line\n"
                        "  \"server = URL\" in %s\n",
                GP__DEFAULT_SERVER, c->config_path[0] ? c->config_path : "~/.config/gpupool/config");
}

/* No leader came in time: what the last 503 said. */
static int no_leader(gp_client *c, gp_response *out)
{
    json_t *e = json_object_get(out->body, "error");
    const char *message = json_string_value(json_object_get(e, "message"));
    fprintf(stderr, "gpupool: no leader: %s answered 503 %s (%s) for %d s (--wait-leader); try again later\n",
            c->server, json_string_value(json_object_get(e, "code")) ? json_string_value(json_object_get(e, "code"))
                                                                     : "",
            message ? message : "no message", c->wait_leader_s);
    gp_response_free(out);
    return GP_EXIT_RETRY;
}

int gp_client_call(gp_client *c, const char *method, const char *path, const char *content_type, const char *body,
                   size_t body_len, gp_response *out)
{
    request rq = {method, path, content_type, body, body_len};
    double deadline = now_s() + c->wait_leader_s;
    for (;;) {
        char errors[2048] = "";
        long wait_s = 0;
        int rc = one_pass(c, &rq, out, &wait_s, errors, sizeof errors);
        if (rc == GP_EXIT_CONNECT)
            cannot_reach(c, errors);
        if (rc != GP_EXIT_RETRY)
            return rc;
        double left = deadline - now_s();
        if (left <= 0)
            return no_leader(c, out);
        gp_response_free(out);
        double nap = (double)wait_s < left ? (double)wait_s : left;
        struct timespec t = {(time_t)nap, (long)((nap - (double)(time_t)nap) * 1e9)};
        nanosleep(&t, NULL);
    }
}

static int exit_code_of(long status)
{
    if (status >= 200 && status < 300)
        return GP_EXIT_OK;
    if (status == 401 || status == 403)
        return GP_EXIT_AUTH;
    if (status == 404)
        return GP_EXIT_NOT_FOUND;
    if (status == 400 || status == 413 || status == 415 || status == 422)
        return GP_EXIT_INVALID;
    if (status == 409)
        return GP_EXIT_CONFLICT;
    if (status == 429 || status >= 500)
        return GP_EXIT_RETRY;
    return GP_EXIT_ERROR;
}

/* gpupool answers every error as {"error": {"code", "message", ...}} and
 * every success as JSON; anything else came from another server. */
static bool looks_like_gpupool(const gp_response *r)
{
    if (r->status >= 200 && r->status < 300)
        return r->body != NULL;
    json_t *e = json_object_get(r->body, "error");
    return json_is_string(json_object_get(e, "code")) && json_is_string(json_object_get(e, "message"));
}

/* After a 401: where the token came from, or how to set one. */
static void token_hint(const gp_client *c)
{
    if (c && c->token_source[0])
        fprintf(stderr, "gpupool: the token sent came from %s\n", c->token_source);
    else
        fprintf(stderr, "gpupool: no token is set: sign in with gpupool login, or export GPUPOOL_TOKEN=gpt_..., or"
                        " pass --token-file FILE, or put token_file = FILE in %s\n",
                c && c->config_path[0] ? c->config_path : "~/.config/gpupool/config");
}

/* A 403 that names a missing second factor: {"need": "second_factor"},
 * at the top or in the error object. */
static bool needs_second_factor(const json_t *body)
{
    const char *top = json_string_value(json_object_get(body, "need"));
    const char *in_error = json_string_value(json_object_get(json_object_get(body, "error"), "need"));
    return (top && strcmp(top, "second_factor") == 0) || (in_error && strcmp(in_error, "second_factor") == 0);
}

int gp_client_check(const gp_response *r)
{
    if (!looks_like_gpupool(r)) {
        fprintf(stderr, "gpupool: %s does not look like a gpupool server (HTTP %ld without gpupool's JSON answer);"
                        " check --server, GPUPOOL_SERVER or server = in the config file\n",
                r->client ? r->client->answered : "the server", r->status);
        return GP_EXIT_CONNECT;
    }
    int code = exit_code_of(r->status);
    if (code == GP_EXIT_OK)
        return code;
    json_t *e = json_object_get(r->body, "error");
    const char *field = json_string_value(json_object_get(e, "field"));
    fprintf(stderr, "gpupool: error %ld %s%s%s%s: %s\n", r->status, json_string_value(json_object_get(e, "code")),
            field && field[0] ? " (field " : "", field && field[0] ? field : "", field && field[0] ? ")" : "",
            json_string_value(json_object_get(e, "message")));
    if (r->status == 401)
        token_hint(r->client);
    if (r->status == 403 && needs_second_factor(r->body))
        fprintf(stderr, "gpupool: this change needs a sign-in with a second factor: run gpupool login again and"
                        " sign in with it (gpupool login --acr VALUE or --scope SCOPE where your provider asks"
                        " for one: docs/cli.md)\n");
    return code;
}

void gp_response_free(gp_response *r)
{
    json_decref(r->body);
    r->body = NULL;
    free(r->text);
    r->text = NULL;
}

int gp_client_send(gp_client *c, const char *method, const char *path, json_t *body, gp_response *out)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    int rc = gp_client_call(c, method, path, NULL, text, text ? strlen(text) : 0, out);
    free(text);
    return rc;
}

int gp_client_run(gp_client *c, const char *method, const char *path, json_t *body, gp_response *out)
{
    int rc = gp_client_send(c, method, path, body, out);
    return rc ? rc : gp_client_finish(c, out);
}

int gp_client_finish(gp_client *c, gp_response *out)
{
    int rc = gp_client_check(out);
    if (rc == GP_EXIT_OK && c->json) {
        json_dumpf(out->body, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY);
        fputc('\n', stdout);
    }
    return rc;
}

void gp_query_add(gp_client *c, char *buf, size_t cap, const char *key, const char *value)
{
    if (!value)
        return;
    char *esc = curl_easy_escape(c->curl, value, 0);
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s%s=%s", strchr(buf, '?') ? "&" : "?", key, esc ? esc : "");
    curl_free(esc);
}

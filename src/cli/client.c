/* client.c - configuration and HTTP calls for the CLI (see client.h). */
#include "cli/client.h"
#include "util/bytes.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int gp_client_configure(gp_client *c, const char *server, const char *token, const char *token_file,
                        const char *cacert)
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
    if (rc != GP_EXIT_OK)
        return rc;
    if (!c->server[0])
        copy(c->server, sizeof c->server, "http://127.0.0.1:8750");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    c->curl = curl_easy_init();
    return c->curl ? GP_EXIT_OK : GP_EXIT_ERROR;
}

void gp_client_close(gp_client *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    c->curl = NULL;
    curl_global_cleanup();
}

typedef struct buffer {
    char *data;
    size_t len, cap;
} buffer;

static size_t collect(char *ptr, size_t size, size_t n, void *userdata)
{
    buffer *b = userdata;
    size_t add = size * n;
    return gp_bytes_append(&b->data, &b->len, &b->cap, ptr, add) ? add : 0;
}

int gp_client_call(gp_client *c, const char *method, const char *path, const char *content_type, const char *body,
                   size_t body_len, gp_response *out)
{
    CURL *curl = c->curl;
    char url[2048], auth[300], ctype[128];
    buffer b = {NULL, 0, 0};
    struct curl_slist *headers = NULL;
    snprintf(url, sizeof url, "%s%s", c->server, path);
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
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
    if (body) {
        snprintf(ctype, sizeof ctype, "Content-Type: %s", content_type ? content_type : "application/json");
        headers = curl_slist_append(headers, ctype);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)body_len);
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    out->status = 0;
    out->body = NULL;
    out->text = NULL;
    out->client = c;
    if (rc != CURLE_OK) {
        fprintf(stderr, "gpupool: cannot reach %s: %s\n", c->server, curl_easy_strerror(rc));
        free(b.data);
        return GP_EXIT_CONNECT;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->status);
    out->body = b.data ? json_loads(b.data, JSON_DECODE_ANY, NULL) : NULL;
    out->text = b.data;
    return GP_EXIT_OK;
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
        fprintf(stderr, "gpupool: no token is set: export GPUPOOL_TOKEN=gpt_..., or pass --token-file FILE, or put"
                        " token_file = FILE in %s\n",
                c && c->config_path[0] ? c->config_path : "~/.config/gpupool/config");
}

int gp_client_check(const gp_response *r)
{
    if (!looks_like_gpupool(r)) {
        fprintf(stderr, "gpupool: %s does not look like a gpupool server (HTTP %ld without gpupool's JSON answer);"
                        " check --server, GPUPOOL_SERVER or server = in the config file\n",
                r->client ? r->client->server : "the server", r->status);
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
    return code;
}

void gp_response_free(gp_response *r)
{
    json_decref(r->body);
    r->body = NULL;
    free(r->text);
    r->text = NULL;
}

int gp_client_run(gp_client *c, const char *method, const char *path, json_t *body, gp_response *out)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    int rc = gp_client_call(c, method, path, NULL, text, text ? strlen(text) : 0, out);
    free(text);
    if (rc)
        return rc;
    rc = gp_client_check(out);
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

/* signin.c - the provider's endpoints and the cached sign-in as the CLI's token (see signin.h). */
#include "cli/signin.h"
#include "cli/signin_cache.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Refresh this many seconds before the ID token expires. */
#define GP__REFRESH_AHEAD_S 60

/* Tokens and codes go to the provider over HTTPS only; plain http to this
 * host alone (a provider on loopback, in tests). */
static bool url_allowed(const char *url)
{
    const char *loopback[] = {"http://127.0.0.1:", "http://127.0.0.1/", "http://localhost:", "http://localhost/",
                              "http://[::1]:", "http://[::1]/"};
    if (strncmp(url, "https://", 8) == 0)
        return true;
    for (size_t i = 0; i < sizeof loopback / sizeof loopback[0]; i++)
        if (strncmp(url, loopback[i], strlen(loopback[i])) == 0)
            return true;
    return false;
}

/* One exchange with the provider: the status (0 and err on failure), the
 * body parsed as JSON into *out. */
static long exchange(const char *url, const char *cacert, const char *bearer, const char *form, json_t **out,
                     char *err, size_t cap)
{
    *out = NULL;
    if (!url_allowed(url)) {
        snprintf(err, cap, "%s: refused, not HTTPS (plain http only to this host)", url);
        return 0;
    }
    CURL *curl = curl_easy_init();
    gp_curl_buffer b = {NULL, 0, 0};
    long status = 0;
    if (!curl) {
        snprintf(err, cap, "cannot start libcurl");
        return 0;
    }
    struct curl_slist *headers = curl_slist_append(NULL, "Accept: application/json");
    size_t auth_cap = bearer ? strlen(bearer) + 32 : 0;
    char *auth = bearer ? malloc(auth_cap) : NULL;
    if (auth) {
        snprintf(auth, auth_cap, "Authorization: Bearer %s", bearer);
        headers = curl_slist_append(headers, auth);
    }
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, gp_curl_collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https,http");
    if (cacert && cacert[0])
        curl_easy_setopt(curl, CURLOPT_CAINFO, cacert);
    if (form)
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, form);
    CURLcode rc = curl_easy_perform(curl);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        *out = b.data ? json_loads(b.data, 0, NULL) : NULL;
    } else
        snprintf(err, cap, "%s: %s", url, curl_easy_strerror(rc));
    free(b.data);
    free(auth);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return status;
}

json_t *gp_idp_get_json(const char *url, const char *cacert, char *err, size_t cap)
{
    json_t *body = NULL;
    long status = exchange(url, cacert, NULL, NULL, &body, err, cap);
    if (status == 200 && json_is_object(body))
        return body;
    if (status)
        snprintf(err, cap, "%s answered HTTP %ld%s", url, status, body ? "" : " without JSON");
    json_decref(body);
    return NULL;
}

long gp_idp_post_form(const char *url, const char *cacert, const char *bearer, const char *form, json_t **out,
                      char *err, size_t cap)
{
    return exchange(url, cacert, bearer, form[0] == '&' ? form + 1 : form, out, err, cap);
}

void gp_form_add(char *form, size_t cap, const char *key, const char *value)
{
    if (!value)
        return;
    char *esc = curl_easy_escape(NULL, value, 0);
    size_t n = strlen(form);
    snprintf(form + n, cap - n, "&%s=%s", key, esc ? esc : "");
    curl_free(esc);
}

bool gp_signin_take_tokens(json_t *record, const json_t *answer)
{
    const char *names[] = {"access_token", "refresh_token"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(answer, names[i]);
        if (json_is_string(v))
            json_object_set(record, names[i], v);
    }
    json_t *id = json_object_get(answer, "id_token");
    json_t *claims = gp_jwt_claims(json_string_value(id));
    json_t *exp = json_object_get(claims, "exp");
    bool ok = claims && json_is_integer(exp);
    if (ok) {
        json_object_set(record, "id_token", id);
        json_object_set(record, "expires", exp);
    }
    json_decref(claims);
    return ok;
}

static const char *field(const json_t *record, const char *name)
{
    const char *v = json_string_value(json_object_get(record, name));
    return v ? v : "";
}

/* Spends the refresh token: the new tokens into record.  True when a new
 * ID token came; otherwise why in err. */
static bool refresh(json_t *record, char *err, size_t cap)
{
    char form[GP_SIGNIN_FORM_MAX] = "";
    gp_form_add(form, sizeof form, "grant_type", "refresh_token");
    gp_form_add(form, sizeof form, "refresh_token", field(record, "refresh_token"));
    gp_form_add(form, sizeof form, "client_id", field(record, "client_id"));
    json_t *answer = NULL;
    long status = gp_idp_post_form(field(record, "token_endpoint"), field(record, "idp_cacert"), NULL, form,
                                   &answer, err, cap);
    bool renewed = false;
    if (status == 200)
        renewed = gp_signin_take_tokens(record, answer);
    if (status == 200 && !renewed)
        snprintf(err, cap, "the provider renewed the access token but gave no new ID token");
    else if (status && status != 200)
        snprintf(err, cap, "the provider refused the refresh token (HTTP %ld %s)", status,
                 json_string_value(json_object_get(answer, "error")) ? json_string_value(json_object_get(answer, "error"))
                                                                     : "");
    json_decref(answer);
    return renewed;
}

/* A cached record about to expire: refreshed (and saved) when it can be;
 * said so when what is left has expired. */
static void refresh_if_due(const char *server, json_t *record, time_t now)
{
    json_int_t expires = json_integer_value(json_object_get(record, "expires"));
    if (expires - now > GP__REFRESH_AHEAD_S || !field(record, "refresh_token")[0])
        return;
    char err[600] = "";
    bool renewed = refresh(record, err, sizeof err);
    gp_signin_save(server, record);
    if (!renewed && expires <= now)
        fprintf(stderr, "gpupool: your sign-in at %s has expired (%s): run gpupool login\n", field(record, "issuer"),
                err);
}

void gp_signin_use(gp_client *c)
{
    json_t *record = c->token[0] ? NULL : gp_signin_load(c->server);
    if (!record)
        return;
    refresh_if_due(c->server, record, time(NULL));
    const char *id_token = field(record, "id_token");
    char path[1024] = "the sign-in cache";
    gp_signin_path(path, sizeof path);
    if (id_token[0] && strlen(id_token) < sizeof c->token) {
        snprintf(c->token, sizeof c->token, "%s", id_token);
        time_t expires = (time_t)json_integer_value(json_object_get(record, "expires"));
        struct tm tm;
        char when[40] = "?";
        if (localtime_r(&expires, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        snprintf(c->token_source, sizeof c->token_source, "gpupool login (%s: signed in at %s, expires %s)", path,
                 field(record, "issuer"), when);
    }
    json_decref(record);
}

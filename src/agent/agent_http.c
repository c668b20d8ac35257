/* agent_http.c - libcurl multi behind gp_http (agent_http.h). */
#include "agent/agent_http.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gp_http {
    CURLM *multi;
    char *cacert;
};

gp_err gp_http_open(const char *cacert, gp_http **out, gp_error *err)
{
    static bool inited;
    if (!inited && curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "http", "libcurl would not start");
    inited = true;
    gp_http *h = calloc(1, sizeof *h);
    if (!h || !(h->multi = curl_multi_init()) || (cacert && !(h->cacert = strdup(cacert)))) {
        gp_http_close(h);
        return gp_error_set(err, GP_ERR_NOMEM, "http", "out of memory");
    }
    curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
    *out = h;
    return GP_OK;
}

void gp_http_close(gp_http *h)
{
    if (!h)
        return;
    if (h->multi)
        curl_multi_cleanup(h->multi);
    free(h->cacert);
    free(h);
}

static size_t gp__collect(char *data, size_t size, size_t n, void *user)
{
    gp_http_call *call = user;
    size_t len = size * n;
    if (call->response_len + len + 1 > call->response_cap) {
        size_t cap = (call->response_len + len + 1) * 2;
        char *bigger = realloc(call->response, cap);
        if (!bigger)
            return 0;
        call->response = bigger;
        call->response_cap = cap;
    }
    memcpy(call->response + call->response_len, data, len);
    call->response_len += len;
    call->response[call->response_len] = '\0';
    return len;
}

static void gp__call_reset(gp_http *h, gp_http_call *call)
{
    if (call->easy) {
        curl_multi_remove_handle(h->multi, call->easy);
        curl_easy_cleanup(call->easy);
    }
    curl_slist_free_all(call->headers);
    free(call->request_body);
    free(call->response);
    call->easy = call->headers = NULL;
    call->request_body = call->response = NULL;
    call->response_len = call->response_cap = 0;
}

static struct curl_slist *gp__headers(const char *token, bool json)
{
    struct curl_slist *l = NULL;
    char auth[512];
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        l = curl_slist_append(l, auth);
    }
    if (json)
        l = curl_slist_append(l, "Content-Type: application/json");
    return curl_slist_append(l, "Expect:");
}

gp_err gp_http_call_start(gp_http *h, gp_http_call *call, const char *method, const char *url, const char *token,
                          const char *body, long timeout_s, gp_http_done done, void *ctx, gp_error *err)
{
    gp__call_reset(h, call);
    CURL *e = curl_easy_init();
    call->easy = e;
    call->headers = gp__headers(token, body != NULL);
    if (!e || !call->headers || (body && !(call->request_body = strdup(body)))) {
        gp__call_reset(h, call);
        return gp_error_set(err, GP_ERR_NOMEM, "http", "out of memory");
    }
    call->done = done;
    call->ctx = ctx;
    call->errbuf[0] = '\0';
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, call->headers);
    if (body)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->request_body);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, gp__collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, call);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call->errbuf);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, call);
    if (h->cacert)
        curl_easy_setopt(e, CURLOPT_CAINFO, h->cacert);
    if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
        gp__call_reset(h, call);
        return gp_error_set(err, GP_ERR_CONFLICT, "http", "libcurl refused the call to %s", url);
    }
    return GP_OK;
}

bool gp_http_call_busy(const gp_http_call *call)
{
    return call->easy != NULL;
}

void gp_http_call_cancel(gp_http *h, gp_http_call *call)
{
    gp__call_reset(h, call);
}

void gp_http_wait(gp_http *h, int *fds, short *revents, size_t n, int timeout_ms)
{
    struct curl_waitfd stack[64];
    struct curl_waitfd *w = n <= 64 ? stack : calloc(n, sizeof *w);
    size_t nw = w ? n : 0;
    for (size_t i = 0; i < nw; i++)
        w[i] = (struct curl_waitfd){.fd = fds[i], .events = CURL_WAIT_POLLIN, .revents = 0};
    curl_multi_poll(h->multi, w, (unsigned)nw, timeout_ms, NULL);
    for (size_t i = 0; i < n; i++)
        revents[i] = i < nw ? w[i].revents : 0;
    if (w != stack)
        free(w);
}

/* One finished call: detach it, then run its callback (which may start a
 * new call on the same gp_http_call). */
static void gp__finish(gp_http *h, CURL *e, CURLcode result)
{
    gp_http_call *call = NULL;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&call);
    long status = 0;
    if (result == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    char *body = call->response;
    size_t len = call->response_len;
    char why[256];
    snprintf(why, sizeof why, "%s", call->errbuf[0] ? call->errbuf : curl_easy_strerror(result));
    call->response = NULL;
    gp__call_reset(h, call);
    call->done(call, status, body ? body : "", len, result == CURLE_OK ? NULL : why, call->ctx);
    free(body);
}

void gp_http_run(gp_http *h)
{
    int running = 0, left = 0;
    curl_multi_perform(h->multi, &running);
    CURLMsg *m;
    while ((m = curl_multi_info_read(h->multi, &left)) != NULL)
        if (m->msg == CURLMSG_DONE)
            gp__finish(h, m->easy_handle, m->data.result);
}

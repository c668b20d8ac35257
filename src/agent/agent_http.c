/* agent_http.c - libcurl multi over epoll behind gp_http (agent_http.h). */
#include "agent/agent_http.h"

#include "agent/supervise/agent_clock.h"
#include "util/bytes.h"
#include "util/grow.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define GP__EVENTS_MAX 256

struct gp_http {
    CURLM *multi;
    char *cacert;
    int epoll;
    int64_t timer_at; /* libcurl's next timeout (monotonic ms), -1 none */
    gp_http_fd **dead; /* sockets libcurl let go of during a wait: freed after it */
    size_t n_dead, cap_dead;
};

/* A socket's record may still be in the events of the current wait: keep
 * it (marked) until the wait is over. */
static void gp__bury(gp_http *h, gp_http_fd *w)
{
    w->fd = -1;
    gp_http_fd **bigger = gp_grow(h->dead, &h->cap_dead, h->n_dead + 1, sizeof *bigger);
    if (!bigger)
        return; /* leak one small record rather than risk a use after free */
    h->dead = bigger;
    h->dead[h->n_dead++] = w;
}

static void gp__free_dead(gp_http *h)
{
    for (size_t i = 0; i < h->n_dead; i++)
        free(h->dead[i]);
    h->n_dead = 0;
}

/* libcurl says which events a socket of its waits for. */
static int gp__on_socket(CURL *e, curl_socket_t s, int what, void *user, void *socketp)
{
    (void)e;
    gp_http *h = user;
    gp_http_fd *w = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (w) {
            epoll_ctl(h->epoll, EPOLL_CTL_DEL, s, NULL);
            curl_multi_assign(h->multi, s, NULL);
            gp__bury(h, w);
        }
        return 0;
    }
    struct epoll_event ev = {.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0)};
    int op = EPOLL_CTL_MOD;
    if (!w) {
        w = calloc(1, sizeof *w);
        if (!w)
            return -1;
        *w = (gp_http_fd){.fd = s, .curl = true};
        curl_multi_assign(h->multi, s, w);
        op = EPOLL_CTL_ADD;
    }
    ev.data.ptr = w;
    if (epoll_ctl(h->epoll, op, s, &ev) != 0 && errno == ENOENT)
        epoll_ctl(h->epoll, EPOLL_CTL_ADD, s, &ev);
    return 0;
}

static int gp__on_timer(CURLM *m, long timeout_ms, void *user)
{
    (void)m;
    gp_http *h = user;
    h->timer_at = timeout_ms < 0 ? -1 : gp_agent_mono_ms() + timeout_ms;
    return 0;
}

gp_err gp_http_open(const char *cacert, long max_connections, gp_http **out, gp_error *err)
{
    static bool inited;
    if (!inited && curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "http", "libcurl would not start");
    inited = true;
    gp_http *h = calloc(1, sizeof *h);
    if (h)
        h->epoll = epoll_create1(EPOLL_CLOEXEC);
    if (!h || h->epoll < 0 || !(h->multi = curl_multi_init()) || (cacert && !(h->cacert = strdup(cacert)))) {
        gp_http_close(h);
        return gp_error_set(err, GP_ERR_NOMEM, "http", "out of memory or descriptors");
    }
    h->timer_at = -1;
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, gp__on_socket);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, gp__on_timer);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, max_connections);
    curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, max_connections);
    *out = h;
    return GP_OK;
}

void gp_http_close(gp_http *h)
{
    if (!h)
        return;
    if (h->multi)
        curl_multi_cleanup(h->multi);
    if (h->epoll >= 0)
        close(h->epoll);
    gp__free_dead(h);
    free(h->dead);
    free(h->cacert);
    free(h);
}

static size_t gp__collect(char *data, size_t size, size_t n, void *user)
{
    gp_http_call *call = user;
    size_t len = size * n;
    return gp_bytes_append(&call->response, &call->response_len, &call->response_cap, data, len) ? len : 0;
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
    if (call->client_cert && call->client_cert[0] && call->client_key && call->client_key[0]) {
        curl_easy_setopt(e, CURLOPT_SSLCERT, call->client_cert);
        curl_easy_setopt(e, CURLOPT_SSLKEY, call->client_key);
    }
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

/* One finished call: detach it, then run its callback (which may start a
 * new call on the same gp_http_call). */
static void gp__finish(gp_http *h, CURL *e, CURLcode result)
{
    gp_http_call *call = NULL;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&call);
    long status = 0;
    curl_off_t retry_after = 0;
    if (result == CURLE_OK) {
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &retry_after);
    }
    call->retry_after_s = (long)retry_after;
    char *body = call->response;
    size_t len = call->response_len;
    char why[256];
    snprintf(why, sizeof why, "%s", call->errbuf[0] ? call->errbuf : curl_easy_strerror(result));
    call->response = NULL;
    gp__call_reset(h, call);
    call->done(call, status, body ? body : "", len, result == CURLE_OK ? NULL : why, call->ctx);
    free(body);
}

gp_err gp_http_watch(gp_http *h, gp_http_fd *w, gp_error *err)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};
    w->curl = false;
    if (epoll_ctl(h->epoll, EPOLL_CTL_ADD, w->fd, &ev) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "http", "epoll: %s", strerror(errno));
    return GP_OK;
}

void gp_http_unwatch(gp_http *h, gp_http_fd *w)
{
    epoll_ctl(h->epoll, EPOLL_CTL_DEL, w->fd, NULL);
}

static void gp__finished(gp_http *h)
{
    int left = 0;
    CURLMsg *m;
    while ((m = curl_multi_info_read(h->multi, &left)) != NULL)
        if (m->msg == CURLMSG_DONE)
            gp__finish(h, m->easy_handle, m->data.result);
}

size_t gp_http_wait(gp_http *h, int timeout_ms, void **ready, size_t cap)
{
    struct epoll_event ev[GP__EVENTS_MAX];
    int64_t now = gp_agent_mono_ms();
    if (h->timer_at >= 0 && h->timer_at - now < timeout_ms)
        timeout_ms = h->timer_at <= now ? 0 : (int)(h->timer_at - now);
    int n = epoll_wait(h->epoll, ev, GP__EVENTS_MAX, timeout_ms);
    size_t out = 0;
    int running = 0;
    for (int i = 0; i < n; i++) {
        gp_http_fd *w = ev[i].data.ptr;
        if (w->fd < 0)
            continue; /* let go of by libcurl during this wait */
        if (!w->curl) {
            if (out < cap)
                ready[out++] = w->tag;
            continue;
        }
        int mask = (ev[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) | (ev[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                   (ev[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(h->multi, w->fd, mask, &running);
    }
    if (h->timer_at >= 0 && gp_agent_mono_ms() >= h->timer_at) {
        h->timer_at = -1;
        curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    gp__finished(h);
    gp__free_dead(h);
    return out;
}

/* agent_http.h - the agent's HTTP client and event loop: many requests in
 * flight at once on one thread, each ending in a callback, and other file
 * descriptors (the replicas' pidfds) watched beside them.
 *
 * One gp_http per agent process drives every node's calls: a node's
 * long-poll, heartbeat, reports and logs are each one gp_http_call, and
 * thousands of nodes share the one loop:
 *
 *   gp_http_call_start(h, &node->poll, "GET", url, token, NULL, 40, on_poll, node);
 *   gp_http_watch(h, &replica->watch);              (a pidfd, tagged)
 *   for (;;) { n = gp_http_wait(h, timeout_ms, ready, cap); ... ready[i] are tags ... }
 *
 * It is libcurl's multi interface driven by its socket callbacks over one
 * epoll set (curl_multi_socket_action), so a wake costs what is ready, not
 * the number of open connections: 6,250 nodes' long-polls stay cheap.
 * gp_http_wait runs each finished call's callback with the HTTP status (0
 * on a transport error: refused, timed out, reset) and the body; the
 * call's retry_after_s holds the answer's Retry-After (a follower's 503).
 * Redirects are not followed here: the node follows a 307 to the leader
 * itself and remembers it (agent_node.h).
 *
 * Ownership: the caller owns each gp_http_call (usually inside its node)
 * and must not move or free it while it is in flight (gp_http_call_busy);
 * gp_http_call_cancel ends a call without its callback.  The body handed
 * to the callback is valid during the callback only.
 */
#ifndef GP_AGENT_HTTP_H
#define GP_AGENT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

typedef struct gp_http gp_http;
typedef struct gp_http_call gp_http_call;

/* status: the HTTP status, 0 when no answer came (err says why). */
typedef void (*gp_http_done)(gp_http_call *call, long status, const char *body, size_t len, const char *err,
                             void *ctx);

struct gp_http_call {
    void *easy; /* CURL *, NULL when idle */
    void *headers;
    char *request_body;
    char *response;
    size_t response_len, response_cap;
    gp_http_done done;
    void *ctx;
    char errbuf[256];
    long retry_after_s; /* the answer's Retry-After in seconds, 0 none: set before the callback runs */
    /* the TLS client certificate and key (PEM files) each call presents;
     * NULL or "" none.  Set by the owner, kept across calls (agent_cert.h) */
    const char *client_cert, *client_key;
};

/* cacert: a CA bundle for https (NULL: the system's).  max_connections:
 * the most connections open at once (0: no limit); a call beyond it waits
 * for one to free up (libcurl's queue). */
gp_err gp_http_open(const char *cacert, long max_connections, gp_http **out, gp_error *err);
void gp_http_close(gp_http *h);

/* Starts method url with a bearer token (NULL: none) and a JSON body
 * (NULL: none; copied).  timeout_s bounds the whole call. */
gp_err gp_http_call_start(gp_http *h, gp_http_call *call, const char *method, const char *url, const char *token,
                          const char *body, long timeout_s, gp_http_done done, void *ctx, gp_error *err);
bool gp_http_call_busy(const gp_http_call *call);
void gp_http_call_cancel(gp_http *h, gp_http_call *call);

/* A descriptor watched for reading; the caller owns it (inside what tag
 * names) and unwatches it before closing or freeing it. */
typedef struct gp_http_fd {
    int fd;
    void *tag;
    bool curl; /* private: false for watched descriptors */
} gp_http_fd;

gp_err gp_http_watch(gp_http *h, gp_http_fd *w, gp_error *err);
void gp_http_unwatch(gp_http *h, gp_http_fd *w);

/* Waits up to timeout_ms for calls to progress or watched descriptors to
 * become readable; runs the callbacks of the calls that finished and puts
 * the tags of the readable descriptors in ready (at most cap); returns
 * how many. */
size_t gp_http_wait(gp_http *h, int timeout_ms, void **ready, size_t cap);

#endif

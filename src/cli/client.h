/* client.h - the CLI's connection to gpupoold: configuration and calls.
 *
 * Where the server and the token come from, first found wins:
 *   1. --server URL, --token TOKEN (or --token-file FILE)
 *   2. GPUPOOL_SERVER, GPUPOOL_TOKEN (or GPUPOOL_TOKEN_FILE)
 *   3. ~/.config/gpupool/config (or $XDG_CONFIG_HOME/gpupool/config):
 *        server = http://127.0.0.1:8750
 *        token = gpt_...            (or token_file = /path/to/file)
 *        cacert = /path/to/ca.pem   (to check an HTTPS server)
 *      blank lines and lines starting with # are skipped; any other line
 *      that is not one of these keys = a value is an error naming the file
 *      and line (exit 2), never skipped in silence
 *   4. server http://127.0.0.1:8750, no token
 * and, when none of 1-3 gives a token, the sign-in `gpupool login` cached
 * for the server (signin.h).
 * A 401 is printed with where the token came from (or how to set one).
 *
 * Several replicas (docs/operations.md, "High availability"): the server
 * may be a comma-separated list of URLs, in any of the three places:
 *   --server http://gp-a:8750,http://gp-b:8750,http://gp-c:8750
 * A URL that cannot be reached: the next one.  Reads go to the first URL
 * that answers (and keep going there).  A follower's 307 is followed:
 * the same method, body and headers to its Location (http and https
 * only, at most 5 hops), and the leader its JSON names is remembered, so
 * the command's next writes go there first.  A 503 with Retry-After (no
 * leader yet, a failover under way): wait that long, then all URLs again,
 * up to --wait-leader SECONDS (default 15) in all; then "no leader: ..."
 * and exit 8.
 *
 * Exit codes (what scripts can rely on), from the server's answer:
 *   0 success          4 401/403 not authenticated / not allowed
 *   1 other error      5 404 not found
 *   2 bad command line 6 400/413/415/422 request refused as invalid
 *   3 cannot connect   7 409 conflict       8 429/5xx try again later
 *     (or the answer is not gpupool's: an error without gpupool's JSON
 *     error shape, a success that is not JSON -- "SERVER does not look
 *     like a gpupool server (HTTP 404 ...)")
 *
 * Ownership: a gp_client owns its curl handle; responses own their JSON.
 */
#ifndef GP_CLI_CLIENT_H
#define GP_CLI_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum {
    GP_EXIT_OK = 0,
    GP_EXIT_ERROR = 1,
    GP_EXIT_USAGE = 2,
    GP_EXIT_CONNECT = 3,
    GP_EXIT_AUTH = 4,
    GP_EXIT_NOT_FOUND = 5,
    GP_EXIT_INVALID = 6,
    GP_EXIT_CONFLICT = 7,
    GP_EXIT_RETRY = 8
};

#define GP_CLIENT_URLS_MAX 8
#define GP_CLIENT_URL_MAX 512

typedef struct gp_client {
    char server[2048];     /* the URL list as configured (messages) */
    bool server_default;   /* no --server, GPUPOOL_SERVER or config: the built-in one (messages) */
    char urls[GP_CLIENT_URLS_MAX][GP_CLIENT_URL_MAX]; /* server split: the replicas */
    size_t n_urls;
    size_t first;          /* the URL that answered last: where the next call starts */
    char leader[GP_CLIENT_URL_MAX]; /* the leader a 307 named, "" none: writes go there first */
    char answered[GP_CLIENT_URL_MAX]; /* the URL of the last answer (messages) */
    int wait_leader_s;     /* --wait-leader: the most seconds spent waiting out 503s */
    char token[8192];      /* a static token, or an ID token from the sign-in cache (signin.h) */
    char cacert[512];
    char token_source[1100]; /* "GPUPOOL_TOKEN", "--token-file F", ...; "" = no token */
    char config_path[1024];  /* the config file read, "" = none */
    bool json;             /* --json: print the server's JSON as is */
    const char *header;    /* one more request header ("If-None-Match: *"), or NULL; the caller's */
    void *curl;
} gp_client;

typedef struct gp_response {
    long status;
    json_t *body;          /* NULL when the answer was not JSON */
    char *text;            /* the answer as it came (a CSV export reads it); NULL when empty */
    const gp_client *client; /* who asked (for the messages of gp_client_check) */
} gp_response;

/* Fills server/token/cacert from flags (may be NULL), environment, file;
 * wait_leader: --wait-leader's value (NULL: 15).  A bad URL list or
 * --wait-leader: the message printed, GP_EXIT_USAGE. */
int gp_client_configure(gp_client *c, const char *server, const char *token, const char *token_file,
                        const char *cacert, const char *wait_leader);
void gp_client_close(gp_client *c);

/* One request.  body may be NULL.  Returns GP_EXIT_OK when an HTTP answer
 * came back (any status), GP_EXIT_CONNECT when no URL could be reached,
 * GP_EXIT_RETRY when no leader came within --wait-leader (message
 * printed; out then holds no answer). */
int gp_client_call(gp_client *c, const char *method, const char *path, const char *content_type, const char *body,
                   size_t body_len, gp_response *out);
/* GP_EXIT_OK for 2xx; otherwise prints the server's error and returns the
 * exit code of its status. */
int gp_client_check(const gp_response *r);
void gp_response_free(gp_response *r);

/* Calls, checks, prints JSON when --json; returns the exit code and leaves
 * the body in out for the caller's table on success. */
int gp_client_run(gp_client *c, const char *method, const char *path, json_t *body, gp_response *out);
/* gp_client_run in two steps, for a caller that rewrites an error between
 * them (a job file's line): the call (an exit code only when no answer
 * came), then the check and the --json print. */
int gp_client_send(gp_client *c, const char *method, const char *path, json_t *body, gp_response *out);
int gp_client_finish(gp_client *c, gp_response *out);

/* A growing buffer libcurl writes an answer into, with gp_curl_collect as
 * its CURLOPT_WRITEFUNCTION (the provider's answers too, signin.c); data
 * is malloc'd and the caller frees it. */
typedef struct gp_curl_buffer {
    char *data;
    size_t len, cap;
} gp_curl_buffer;
size_t gp_curl_collect(char *ptr, size_t size, size_t n, void *userdata);

/* Appends "&key=value" (URL-escaped) to a query string buffer. */
void gp_query_add(gp_client *c, char *buf, size_t cap, const char *key, const char *value);

#endif

/* agent_metrics.c - the agent's GET /metrics (agent_metrics.h): the
 * snapshots the loop publishes, their exposition text, and the
 * libmicrohttpd server that answers scrapes on its own thread -- on a TCP
 * address behind a bearer token, or on a Unix socket only root may open
 * (the listener's rules are in agent_metrics.h). */
#define _GNU_SOURCE
#include "agent/agent_metrics.h"

#include "agent/image/image_store.h"

#include "util/file.h"
#include "util/listen.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

enum { GP__METRICS_TOKEN_MAX = 512 };

struct gp_agent_metrics {
    pthread_mutex_t lock;    /* guards nodes and starts */
    gp_metrics_node *nodes;
    gp_start_histogram starts[2]; /* [image_pull] */
    size_t n_nodes;
    struct MHD_Daemon *http;
    char bearer[GP__METRICS_TOKEN_MAX + 8]; /* "Bearer TOKEN", "" without --metrics-token-file */
    char socket_path[sizeof ((struct sockaddr_un *)0)->sun_path]; /* unix:PATH, removed at stop */
    char image_store[4096];  /* whose pull counters are served; "" none (set before the first scrape) */
};

/* ---- the text ---- */

typedef enum gp__field {
    GP__UTIL = 0,
    GP__FB_USED,
    GP__FB_FREE,
    GP__POWER,
    GP__TEMP,
    GP__XID,
    GP__SM_ACTIVE,
} gp__field;

/* dcgm-exporter's names and help texts (its default counters). */
static const struct {
    gp__field field;
    const char *name, *help;
} GP__FAMILIES[] = {
    {GP__UTIL, "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."},
    {GP__FB_USED, "DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."},
    {GP__FB_FREE, "DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."},
    {GP__POWER, "DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."},
    {GP__TEMP, "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."},
    {GP__XID, "DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered."},
    {GP__SM_ACTIVE, "DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned (0..1)."},
};

/* The row's value of field into out; false when unknown. */
static bool gp__value(const gp_metrics_row *r, gp__field field, char *out, size_t cap)
{
    long long v = -1;
    switch (field) {
    case GP__UTIL: v = r->util_pct; break;
    case GP__FB_USED: v = r->fb_used_mib; break;
    case GP__FB_FREE: v = r->fb_free_mib; break;
    case GP__POWER: v = r->power_w; break;
    case GP__TEMP: v = r->temp_c; break;
    case GP__XID: v = r->xid; break;
    case GP__SM_ACTIVE:
        if (r->sm_active_pct < 0)
            return false;
        snprintf(out, cap, "%g", r->sm_active_pct / 100.0);
        return true;
    }
    if (v < 0)
        return false;
    snprintf(out, cap, "%lld", v);
    return true;
}

/* A label value as the text format quotes it: \\, \" and \n escaped. */
static void gp__label(FILE *f, const char *name, const char *value, bool first)
{
    fprintf(f, "%s%s=\"", first ? "" : ",", name);
    for (const char *c = value; *c; c++) {
        if (*c == '\\' || *c == '"')
            fprintf(f, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", f);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

static void gp__labels(FILE *f, const gp_metrics_node *n, const gp_metrics_row *r)
{
    char gpu[16], device[24], gi[16];
    snprintf(gpu, sizeof gpu, "%d", r->gpu);
    snprintf(device, sizeof device, "nvidia%d", r->gpu);
    fputc('{', f);
    gp__label(f, "gpu", gpu, true);
    gp__label(f, "UUID", r->uuid, false);
    if (r->pci_bus_id[0])
        gp__label(f, "pci_bus_id", r->pci_bus_id, false);
    gp__label(f, "device", device, false);
    gp__label(f, "modelName", n->model, false);
    gp__label(f, "Hostname", n->name, false);
    if (r->gi_id >= 0) {
        snprintf(gi, sizeof gi, "%d", r->gi_id);
        gp__label(f, "GPU_I_PROFILE", r->mig_profile, false);
        gp__label(f, "GPU_I_ID", gi, false);
    }
    gp__label(f, "node", n->name, false);
    gp__label(f, "tenant", r->tenant, false);
    gp__label(f, "job", r->job, false);
    fputc('}', f);
}

static void gp__family(FILE *f, size_t k, const gp_metrics_node *nodes, size_t n_nodes)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", GP__FAMILIES[k].name, GP__FAMILIES[k].help, GP__FAMILIES[k].name);
    for (size_t i = 0; i < n_nodes; i++)
        for (size_t j = 0; j < nodes[i].n_rows; j++) {
            char value[32];
            if (!gp__value(&nodes[i].rows[j], GP__FAMILIES[k].field, value, sizeof value))
                continue;
            fputs(GP__FAMILIES[k].name, f);
            gp__labels(f, &nodes[i], &nodes[i].rows[j]);
            fprintf(f, " %s\n", value);
        }
}

/* Upper bounds of the start histograms' buckets, in seconds. */
static const double GP__START_BOUNDS[GP_AGENT_START_BUCKETS] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120};

static void gp__start_histograms(FILE *f, const gp_start_histogram *starts)
{
    static const char name[] = "gpupool_agent_replica_start_seconds";
    fprintf(f, "# HELP %s From the order to run a replica to its exec, on this agent.\n# TYPE %s histogram\n", name,
            name);
    for (int pulled = 0; pulled < 2; pulled++) {
        const gp_start_histogram *h = &starts[pulled];
        const char *label = pulled ? "true" : "false";
        for (int b = 0; b < GP_AGENT_START_BUCKETS; b++)
            fprintf(f, "%s_bucket{image_pull=\"%s\",le=\"%g\"} %lld\n", name, label, GP__START_BOUNDS[b],
                    (long long)h->buckets[b]);
        fprintf(f, "%s_bucket{image_pull=\"%s\",le=\"+Inf\"} %lld\n", name, label, (long long)h->count);
        fprintf(f, "%s_sum{image_pull=\"%s\"} %.3f\n%s_count{image_pull=\"%s\"} %lld\n", name, label, h->sum, name,
                label, (long long)h->count);
    }
}

void gp_agent_metrics_observe_start(gp_agent_metrics *m, double seconds, bool image_pull)
{
    if (!m)
        return;
    seconds = seconds < 0 ? 0 : seconds;
    pthread_mutex_lock(&m->lock);
    gp_start_histogram *h = &m->starts[image_pull];
    for (int b = 0; b < GP_AGENT_START_BUCKETS; b++)
        h->buckets[b] += seconds <= GP__START_BOUNDS[b];
    h->count++;
    h->sum += seconds;
    pthread_mutex_unlock(&m->lock);
}

char *gp_agent_metrics_render(const gp_metrics_node *nodes, size_t n_nodes, const gp_start_histogram *starts)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    for (size_t k = 0; k < sizeof GP__FAMILIES / sizeof GP__FAMILIES[0]; k++)
        gp__family(f, k, nodes, n_nodes);
    if (starts)
        gp__start_histograms(f, starts);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* ---- the listener ---- */

/* --metrics-listen as given: unix:PATH into path, else a TCP address
 * (":PORT" is 127.0.0.1:PORT). */
static gp_err gp__listen_parse(const char *listen, struct sockaddr_in *addr, char *path, size_t cap, gp_error *err)
{
    path[0] = '\0';
    if (strncmp(listen, "unix:", 5) == 0) {
        if (listen[5] != '/' || strlen(listen + 5) >= cap)
            return gp_error_set(err, GP_ERR_INVALID, "metrics-listen",
                                "--metrics-listen unix:PATH needs an absolute PATH of at most %zu bytes", cap - 1);
        snprintf(path, cap, "%s", listen + 5);
        return GP_OK;
    }
    char loopback[64];
    if (listen[0] == ':' && snprintf(loopback, sizeof loopback, "127.0.0.1%s", listen) < (int)sizeof loopback)
        listen = loopback;
    return gp_listen_parse(listen, "metrics-listen", addr, err);
}

gp_err gp_agent_metrics_check(const char *listen, const char *token_file, gp_error *err)
{
    struct sockaddr_in addr;
    char path[sizeof ((struct sockaddr_un *)0)->sun_path];
    gp_err rc = gp__listen_parse(listen, &addr, path, sizeof path, err);
    if (rc == GP_OK && !path[0] && !token_file)
        rc = gp_error_set(err, GP_ERR_INVALID, "metrics-token-file",
                          "--metrics-listen %s needs --metrics-token-file FILE: any process of the node, its jobs"
                          " included, reaches a TCP port (loopback too); or serve on unix:PATH (mode 0600)",
                          listen);
    return rc;
}

/* --metrics-token-file: one line, not readable by other (a group may, for
 * a scraper on this host), into "Bearer TOKEN". */
static gp_err gp__read_token(const char *path, char *bearer, size_t cap, gp_error *err)
{
    struct stat st;
    char *text = NULL;
    size_t len = 0;
    gp_error e;
    if (stat(path, &st) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "metrics-token-file", "--metrics-token-file %s: %s", path,
                            strerror(errno));
    if (st.st_mode & S_IRWXO)
        return gp_error_set(err, GP_ERR_INVALID, "metrics-token-file",
                            "--metrics-token-file %s is mode %04o: other users may read it; chmod 600 (or 640) it",
                            path, (unsigned)(st.st_mode & 07777));
    if (gp_file_read_all(path, &text, &len, &e) != GP_OK)
        return gp_error_set(err, GP_ERR_INVALID, "metrics-token-file", "--metrics-token-file %s", e.message);
    text[strcspn(text, "\r\n")] = '\0';
    len = strlen(text);
    while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t')) /* as Prometheus trims its file */
        text[--len] = '\0';
    bool ok = len > 0 && len <= GP__METRICS_TOKEN_MAX && strspn(text, " \t") == 0;
    if (ok)
        snprintf(bearer, cap, "Bearer %s", text);
    free(text);
    if (!ok)
        return gp_error_set(err, GP_ERR_INVALID, "metrics-token-file",
                            "--metrics-token-file %s: the token is its first line, 1..%d characters", path,
                            GP__METRICS_TOKEN_MAX);
    return GP_OK;
}

/* A listening Unix socket at path, mode 0600 before anyone may connect
 * (a socket left by an earlier run is replaced; anything else is not). */
static int gp__unix_listen(const char *path, gp_error *err)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    struct stat st;
    snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
    if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        gp_error_set(err, GP_ERR_INVALID, "metrics-listen", "--metrics-listen unix:%s exists and is not a socket",
                     path);
        return -1;
    }
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0 || chmod(path, 0600) != 0 || listen(fd, 64) != 0) {
        gp_error_set(err, GP_ERR_INVALID, "metrics-listen", "cannot serve on unix:%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* ---- the server ---- */

static enum MHD_Result gp__reply(struct MHD_Connection *conn, unsigned status, char *text, const char *type)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* No token set (a Unix socket), or "Authorization: Bearer TOKEN" with
 * it, compared in constant time. */
static bool gp__authorized(const gp_agent_metrics *m, struct MHD_Connection *conn)
{
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    size_t n = strlen(m->bearer);
    return !m->bearer[0] || (h && strlen(h) == n && gnutls_memcmp(h, m->bearer, n) == 0);
}


/* text with the image store's pull counters appended (text freed; NULL
 * stays NULL): gpupool_agent_image_pulls_total{result="hit|miss|warm"}. */
static char *gp__with_image_pulls(char *text, const char *store)
{
    gp_image_store *s;
    gp_image_counters c;
    gp_error err;
    if (!text || !store[0] || gp_image_store_open(store, 0, &s, &err) != GP_OK)
        return text;
    gp_err rc = gp_image_store_counters(s, &c, &err);
    gp_image_store_close(s);
    char *out = NULL;
    if (rc != GP_OK ||
        asprintf(&out,
                 "%s# HELP gpupool_agent_image_pulls_total Replicas' image pulls that found the image unpacked (hit) or"
                 " unpacked it (miss), and pre-pulls of gpupoold's hints (warm).\n"
                 "# TYPE gpupool_agent_image_pulls_total counter\n"
                 "gpupool_agent_image_pulls_total{result=\"hit\"} %lld\n"
                 "gpupool_agent_image_pulls_total{result=\"miss\"} %lld\n"
                 "gpupool_agent_image_pulls_total{result=\"warm\"} %lld\n",
                 text, (long long)c.hits, (long long)c.misses, (long long)c.warm) < 0)
        return text;
    free(text);
    return out;
}

static enum MHD_Result gp__handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                   const char *version, const char *upload, size_t *upload_size, void **state)
{
    (void)version, (void)upload, (void)state;
    gp_agent_metrics *m = cls;
    if (*upload_size) /* a body: ignored */
        return (*upload_size = 0), MHD_YES;
    if (strcmp(url, "/metrics") != 0)
        return gp__reply(conn, MHD_HTTP_NOT_FOUND, strdup("not found: the agent serves GET /metrics only\n"),
                         "text/plain");
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return gp__reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, strdup("method not allowed: GET /metrics\n"),
                         "text/plain");
    if (!gp__authorized(m, conn))
        return gp__reply(conn, MHD_HTTP_UNAUTHORIZED,
                         strdup("unauthorized: send Authorization: Bearer <the --metrics-token-file token>\n"),
                         "text/plain");
    pthread_mutex_lock(&m->lock);
    char *text = gp_agent_metrics_render(m->nodes, m->n_nodes, m->starts);
    pthread_mutex_unlock(&m->lock);
    text = gp__with_image_pulls(text, m->image_store);
    if (!text)
        return gp__reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, strdup("out of memory\n"), "text/plain");
    return gp__reply(conn, MHD_HTTP_OK, text, "text/plain; version=0.0.4; charset=utf-8");
}

void gp_agent_metrics_image_store(gp_agent_metrics *m, const char *store)
{
    if (m)
        snprintf(m->image_store, sizeof m->image_store, "%s", store);
}

gp_err gp_agent_metrics_start(const char *listen, const char *token_file, size_t n_nodes, gp_agent_metrics **out,
                              gp_error *err)
{
    struct sockaddr_in addr;
    *out = NULL;
    gp_err rc = gp_agent_metrics_check(listen, token_file, err);
    if (rc != GP_OK)
        return rc;
    gp_agent_metrics *m = calloc(1, sizeof *m);
    if (!m || !(m->nodes = calloc(n_nodes ? n_nodes : 1, sizeof *m->nodes))) {
        free(m);
        return gp_error_set(err, GP_ERR_NOMEM, "metrics-listen", "out of memory");
    }
    m->n_nodes = n_nodes;
    pthread_mutex_init(&m->lock, NULL);
    gp__listen_parse(listen, &addr, m->socket_path, sizeof m->socket_path, err);
    rc = token_file ? gp__read_token(token_file, m->bearer, sizeof m->bearer, err) : GP_OK;
    int fd = rc == GP_OK && m->socket_path[0] ? gp__unix_listen(m->socket_path, err) : -1;
    if (rc == GP_OK && m->socket_path[0] && fd < 0)
        rc = GP_ERR_INVALID;
    if (rc == GP_OK && fd >= 0)
        m->http = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL, gp__handler, m,
                                   MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_END);
    else if (rc == GP_OK)
        m->http = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, ntohs(addr.sin_port), NULL, NULL,
                                   gp__handler, m, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_END);
    if (rc == GP_OK && !m->http) {
        if (fd >= 0)
            close(fd);
        rc = gp_error_set(err, GP_ERR_INVALID, "metrics-listen", "cannot serve on %s (in use?)", listen);
    }
    if (rc != GP_OK) {
        gp_agent_metrics_stop(m);
        return rc;
    }
    *out = m;
    return GP_OK;
}

void gp_agent_metrics_publish(gp_agent_metrics *m, size_t index, gp_metrics_node *node)
{
    if (!m || index >= m->n_nodes) {
        free(node->rows);
        node->rows = NULL;
        return;
    }
    pthread_mutex_lock(&m->lock);
    gp_metrics_row *old = m->nodes[index].rows;
    m->nodes[index] = *node;
    pthread_mutex_unlock(&m->lock);
    node->rows = NULL;
    free(old);
}

void gp_agent_metrics_stop(gp_agent_metrics *m)
{
    if (!m)
        return;
    if (m->http)
        MHD_stop_daemon(m->http);
    if (m->http && m->socket_path[0])
        unlink(m->socket_path);
    for (size_t i = 0; i < m->n_nodes; i++)
        free(m->nodes[i].rows);
    free(m->nodes);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

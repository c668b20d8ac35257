/* bench_api.c - durable submits per second through a real gpupoold.
 *
 * Starts build/bin/gpupoold (next to this binary) on an ephemeral
 * loopback port with a fresh SQLite store (WAL, synchronous=FULL: every
 * acknowledged submit is on disk) and a fleet of 6,250 nodes x 8 GPUs,
 * then:
 *
 *   1. submit phase: C client threads, each with one keep-alive
 *      connection (libcurl), POST /v1/jobs for D seconds; every 201 is a
 *      committed job.  Prints submits/s and p50/p99/max latency.
 *   2. fill: more submits until the store holds 100,000 jobs.
 *   3. list phase: GET /v1/jobs?limit=100 (newest page), a tenant-filtered
 *      page and a deep page (before=50000), 200 times each; p50/p99.
 *
 * The last line is one JSON object with every figure, and submit_window:
 * the submit phase's start and end on CLOCK_MONOTONIC (seconds), so a
 * caller sampling CPU can count that phase alone.  Environment:
 * BENCH_CLIENTS (default 32), BENCH_SECONDS (default 10), BENCH_JOBS
 * (jobs stored for the list phase, default 100000), BENCH_PASS_MIN_MS
 * (gpupoold --pass-min-ms; unset: gpupoold's default), BENCH_STORE (gpupoold --store: an
 * empty PostgreSQL database's URL, say; default the fresh SQLite file;
 * bench/ha/run makes one).  Jobs are 1 GPU with an expected
 * runtime of an hour; once the 50,000 GPUs are booked they queue.
 */
#include <curl/curl.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_CLIENTS = 256, MAX_SAMPLES = 2000000 };

static char g_url[128];
static char g_token[128];
static volatile int g_stop;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static size_t sink(char *p, size_t s, size_t n, void *u)
{
    (void)p;
    (void)u;
    return s * n;
}

typedef struct client {
    int index;
    CURL *curl;
    double *lat;     /* seconds */
    size_t n_lat, cap_lat;
    long ok, failed;
    long limit;      /* stop after this many (0 = until g_stop) */
} client;

static CURL *handle(struct curl_slist **headers)
{
    CURL *c = curl_easy_init();
    char auth[200];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", g_token);
    *headers = curl_slist_append(NULL, auth);
    *headers = curl_slist_append(*headers, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    return c;
}

static long request(CURL *c, const char *method, const char *path, const char *body)
{
    char url[512];
    snprintf(url, sizeof url, "%s%s", g_url, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    } else {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

static void *submitter(void *arg)
{
    client *cl = arg;
    struct curl_slist *headers;
    CURL *c = handle(&headers);
    char body[256];
    for (long i = 0; !g_stop && (cl->limit == 0 || cl->ok < cl->limit); i++) {
        snprintf(body, sizeof body, "{\"tenant\":\"bench/team%d\",\"name\":\"c%d-%ld\",\"gpus\":1,\"expected_runtime_s\":3600}", cl->index % 8,
                 cl->index, i);
        double t0 = now_s();
        long st = request(c, "POST", "/v1/jobs", body);
        double dt = now_s() - t0;
        if (st == 201) {
            cl->ok++;
            if (cl->n_lat < cl->cap_lat)
                cl->lat[cl->n_lat++] = dt;
        } else {
            cl->failed++;
        }
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(headers);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1));
    return v[i];
}

/* ---- the daemon ---- */

static pid_t start_daemon(const char *bin_dir, const char *dir)
{
    char fleet[PATH_MAX], store[PATH_MAX + 16], portf[PATH_MAX], exe[PATH_MAX], log[PATH_MAX], tokf[PATH_MAX],
        logs[PATH_MAX], keyf[PATH_MAX];
    snprintf(fleet, sizeof fleet, "%s/fleet.yaml", dir);
    FILE *f = fopen(fleet, "w");
    if (!f)
        return -1;
    fprintf(f, "nodes:\n  - name: gpu\n    count: 6250\n    block: b0\n    gpu_type: H100\n    gpus: 8\n"
               "    cpu_millis: 192000\n    mem_mib: 2097152\n");
    fclose(f);
    if (getenv("BENCH_STORE"))
        snprintf(store, sizeof store, "%s", getenv("BENCH_STORE"));
    else
        snprintf(store, sizeof store, "sqlite:%s/bench.db", dir);
    snprintf(portf, sizeof portf, "%s/port", dir);
    snprintf(tokf, sizeof tokf, "%s/admin.token", dir);
    snprintf(logs, sizeof logs, "%s/logs", dir); /* required with a PostgreSQL BENCH_STORE, as is the key */
    snprintf(keyf, sizeof keyf, "%s/secret.key", dir);
    snprintf(exe, sizeof exe, "%s/gpupoold", bin_dir);
    snprintf(log, sizeof log, "%s/gpupoold.log", dir);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *l = freopen(log, "w", stderr);
        (void)l;
        const char *pass = getenv("BENCH_PASS_MIN_MS"); /* unset: gpupoold's default */
        char *args[] = {exe, "--listen", "127.0.0.1:0", "--store", store, "--fleet", fleet, "--port-file", portf,
                        "--token-file", tokf, "--job-logs", logs, "--secret-key-file", keyf, "--rate-limit", "0",
                        "--log-level", "warn",
                        "--max-connections", "512", pass ? "--pass-min-ms" : NULL, (char *)pass, NULL};
        execv(exe, args);
        _exit(127);
    }
    for (int i = 0; i < 2400; i++) { /* 120 s: a first start on PostgreSQL writes the fleet slowly */
        FILE *p = fopen(portf, "r");
        int port = 0;
        if (p && fscanf(p, "%d", &port) == 1 && port > 0) {
            fclose(p);
            snprintf(g_url, sizeof g_url, "http://127.0.0.1:%d", port);
            FILE *t = fopen(tokf, "r");
            if (t && fscanf(t, "%127s", g_token) == 1) {
                fclose(t);
                return pid;
            }
            if (t)
                fclose(t);
        } else if (p) {
            fclose(p);
        }
        sleep_s(0.05);
    }
    kill(pid, SIGKILL);
    return -1;
}

static int setup_tenants(void)
{
    struct curl_slist *headers;
    CURL *c = handle(&headers);
    char body[512];
    int ok = request(c, "PUT", "/v1/tenants/bench", "{\"guarantee\":{\"gpu\":{\"H100\":5000}}}") < 300;
    for (int t = 0; t < 8 && ok; t++) {
        snprintf(body, sizeof body, "/v1/tenants/bench/team%d", t);
        ok = request(c, "PUT", body, "{\"guarantee\":{\"gpu\":{\"H100\":500}}}") < 300;
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(headers);
    return ok ? 0 : -1;
}

typedef struct phase {
    double start, seconds, rate, p50, p99, max; /* start: CLOCK_MONOTONIC seconds */
    long ok, failed;
} phase;

static phase submit_phase(int n_clients, double seconds, long per_client)
{
    static client cl[MAX_CLIENTS];
    pthread_t th[MAX_CLIENTS];
    size_t cap = MAX_SAMPLES / (size_t)n_clients;
    g_stop = 0;
    double t0 = now_s();
    for (int i = 0; i < n_clients; i++) {
        free(cl[i].lat);
        cl[i] = (client){.index = i, .lat = malloc(cap * sizeof(double)), .cap_lat = cap, .limit = per_client};
        pthread_create(&th[i], NULL, submitter, &cl[i]);
    }
    if (seconds > 0) {
        sleep_s(seconds);
        g_stop = 1;
    }
    for (int i = 0; i < n_clients; i++)
        pthread_join(th[i], NULL);
    phase p = {.start = t0, .seconds = now_s() - t0};
    size_t total = 0;
    for (int i = 0; i < n_clients; i++)
        total += cl[i].n_lat;
    double *all = malloc((total + 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < n_clients; i++) {
        memcpy(all + k, cl[i].lat, cl[i].n_lat * sizeof *all);
        k += cl[i].n_lat;
        p.ok += cl[i].ok;
        p.failed += cl[i].failed;
    }
    qsort(all, total, sizeof *all, cmp_double);
    p.rate = (double)p.ok / p.seconds;
    p.p50 = pct(all, total, 0.50) * 1000;
    p.p99 = pct(all, total, 0.99) * 1000;
    p.max = total ? all[total - 1] * 1000 : 0;
    free(all);
    return p;
}

static void list_phase(const char *path, double *p50, double *p99)
{
    struct curl_slist *headers;
    CURL *c = handle(&headers);
    double lat[200];
    for (int i = 0; i < 200; i++) {
        double t0 = now_s();
        request(c, "GET", path, NULL);
        lat[i] = (now_s() - t0) * 1000;
    }
    qsort(lat, 200, sizeof lat[0], cmp_double);
    *p50 = pct(lat, 200, 0.5);
    *p99 = pct(lat, 200, 0.99);
    curl_easy_cleanup(c);
    curl_slist_free_all(headers);
}

int main(int argc, char **argv)
{
    (void)argc;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int n_clients = getenv("BENCH_CLIENTS") ? atoi(getenv("BENCH_CLIENTS")) : 32;
    double seconds = getenv("BENCH_SECONDS") ? atof(getenv("BENCH_SECONDS")) : 10;
    long jobs_target = getenv("BENCH_JOBS") ? atol(getenv("BENCH_JOBS")) : 100000;
    if (n_clients < 1 || n_clients > MAX_CLIENTS)
        n_clients = 32;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "bench_api: cannot find myself\n");
        return 1;
    }
    self[n] = '\0';
    char *bin_dir = dirname(self);
    char dir[] = "/tmp/gpupool-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "bench_api: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pid_t pid = start_daemon(bin_dir, dir);
    if (pid < 0 || setup_tenants() != 0) {
        fprintf(stderr, "bench_api: gpupoold did not start (see %s/gpupoold.log)\n", dir);
        return 1;
    }
    if (getenv("BENCH_STORE"))
        printf("bench_api: gpupoold %s, store %s, %d clients, %.0f s (%s)\n", g_url, getenv("BENCH_STORE"),
               n_clients, seconds, argv[0]);
    else
        printf("bench_api: gpupoold %s, store %s/bench.db (WAL, synchronous=FULL), %d clients, %.0f s (%s)\n",
               g_url, dir, n_clients, seconds, argv[0]);
    phase s = submit_phase(n_clients, seconds, 0);
    printf("submit: %ld durable submits in %.1f s = %.0f submits/s; latency p50 %.2f ms, p99 %.2f ms, max %.2f ms;"
           " %ld failed\n",
           s.ok, s.seconds, s.rate, s.p50, s.p99, s.max, s.failed);
    long stored = s.ok;
    if (stored < jobs_target) {
        phase fill = submit_phase(n_clients, 0, (jobs_target - stored + n_clients - 1) / n_clients);
        stored += fill.ok;
        printf("fill: %ld more jobs in %.1f s (%.0f/s)\n", fill.ok, fill.seconds, fill.rate);
    }
    double l50, l99, t50, t99, d50, d99;
    list_phase("/v1/jobs?limit=100", &l50, &l99);
    list_phase("/v1/jobs?limit=100&tenant=bench/team3", &t50, &t99);
    list_phase("/v1/jobs?limit=100&before=50000", &d50, &d99);
    printf("list with %ld jobs stored (100 per page): newest p50 %.2f ms p99 %.2f ms; one tenant p50 %.2f ms"
           " p99 %.2f ms; deep page p50 %.2f ms p99 %.2f ms\n",
           stored, l50, l99, t50, t99, d50, d99);
    /* restart: kill -9, start again, time until it serves (replay + check) */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    char portf[PATH_MAX];
    snprintf(portf, sizeof portf, "%s/port", dir);
    unlink(portf);
    double r0 = now_s();
    pid = start_daemon(bin_dir, dir);
    double restart_s = now_s() - r0;
    printf("restart after kill -9 with %ld jobs stored: serving again in %.2f s (replay + check)\n", stored,
           restart_s);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_api: could not remove %s\n", dir);
    printf("{\"bench\":\"api\",\"clients\":%d,\"seconds\":%.1f,\"submits\":%ld,\"submits_per_s\":%.0f,"
           "\"submit_p50_ms\":%.2f,\"submit_p99_ms\":%.2f,\"submit_max_ms\":%.2f,\"failed\":%ld,\"jobs_stored\":%ld,"
           "\"list_p50_ms\":%.2f,\"list_p99_ms\":%.2f,\"list_tenant_p50_ms\":%.2f,\"list_tenant_p99_ms\":%.2f,"
           "\"list_deep_p50_ms\":%.2f,\"list_deep_p99_ms\":%.2f,\"restart_s\":%.2f,"
           "\"submit_window\":[%.3f,%.3f]}\n",
           n_clients, s.seconds, s.ok, s.rate, s.p50, s.p99, s.max, s.failed, stored, l50, l99, t50, t99, d50, d99, restart_s,
           s.start, s.start + s.seconds);
    curl_global_cleanup();
    return 0;
}

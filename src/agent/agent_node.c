/* agent_node.c - one node's calls to gpupoold and its reconcile
 * (agent_node.h; the protocol is docs/api.md "Agents"). */
#include "agent/agent_node.h"

#include "agent/agent_image_hints.h"

#include "agent/agent_plan.h"
#include "agent/gpu/gpu_json.h"
#include "agent/gpu/gpu_sim.h"
#include "agent/launch/replica_log.h"
#include "util/grow.h"
#include "util/server_url.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GP__POLL_WAIT_S 30
#define GP__LEADER_HOPS_MAX 5 /* 307s followed in a row before backing off */
#define GP__REPORTS_MAX 1000
#define GP__EXIT_MESSAGE_MAX 480 /* bytes of DIR/error an exit report carries */
#define GP__EVENTS_EVERY_MS 1000
#define GP__CHECKPOINT_EVERY_MS 1000
#define GP__CHECKPOINT_GRACE_EVERY_MS 20

void gp_agent_log(const gp_node *n, const char *fmt, ...)
{
    char when[32], text[1024];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s node=%s %s\n", when, n->name, text);
}

bool gp_node_add_replica(gp_node *n, gp_replica *r)
{
    gp_replica **bigger = gp_grow(n->replicas, &n->cap_replicas, n->n_replicas + 1, sizeof *bigger);
    if (!bigger)
        return false;
    n->replicas = bigger;
    n->replicas[n->n_replicas++] = r;
    return true;
}

void gp_node_queue_report(gp_node *n, json_t *report)
{
    json_array_append_new(n->queue, report);
}

/* ---- opening ---- */

static void gp__load_credential(gp_node *n)
{
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/credential", n->dir);
    if (gp_state_read(path, n->token, sizeof n->token))
        n->token[strcspn(n->token, "\r\n")] = '\0';
}

/* Every call of the node presents its client certificate, when it has one. */
static void gp__identify(gp_node *n)
{
    gp_http_call *calls[] = {&n->reg, &n->poll, &n->heartbeat, &n->reports, &n->logs, &n->renew};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        calls[i]->client_cert = n->cert.cert_file;
        calls[i]->client_key = n->cert.key_file;
    }
}

gp_err gp_node_open(gp_node *n, const gp_agent_options *opt, gp_http *http, unsigned *registering,
                    const gp_node_file *f, size_t file_index, size_t index, gp_error *err)
{
    gp_gpu gpu;
    gp_err rc = gp_gpu_sim_open_node(f, file_index, opt->node_file, opt->fault_file, opt->seed, &gpu, err);
    if (rc != GP_OK) {
        memset(n, 0, sizeof *n);
        return rc;
    }
    return gp_node_open_gpu(n, opt, http, registering, &gpu, index, err);
}

gp_err gp_node_open_gpu(gp_node *n, const gp_agent_options *opt, gp_http *http, unsigned *registering, gp_gpu *gpu,
                        size_t index, gp_error *err)
{
    memset(n, 0, sizeof *n);
    n->gpu = *gpu;
    memset(gpu, 0, sizeof *gpu);
    n->opt = opt;
    n->http = http;
    n->registering = registering;
    n->index = index;
    n->queue = json_array();
    n->in_flight = json_array();
    n->heartbeat_s = opt->heartbeat_s;
    gp_err rc = gp_gpu_inventory(&n->gpu, &n->inventory, err);
    snprintf(n->name, sizeof n->name, "%s", n->inventory.name);
    snprintf(n->dir, sizeof n->dir, "%s/%s", opt->state_dir, n->name);
    if (rc == GP_OK)
        rc = gp_state_mkdirs(n->dir, 0711, err); /* the job's user reaches work/ */
    if (rc != GP_OK)
        return rc;
    gp_node_health_open(n, gp_agent_mono_ms());
    gp__load_credential(n);
    gp_node_cert_load(&n->cert, n->dir, gp_agent_real_ms());
    gp__identify(n);
    n->epoch_max = gp_state_epoch_load(n->dir);
    gp_node_partition_open(n);
    gp_node_fence_open(n);
    gp_replica_adopt_all(n);
    gp_node_fence_sync(n); /* the running replicas' rules, and no dead one's */
    gp_node_mps_sweep(n);
    gp_node_dcgm_update(n);
    return GP_OK;
}

void gp_node_close(gp_node *n)
{
    gp_http_call *calls[] = {&n->reg, &n->poll, &n->heartbeat, &n->reports, &n->logs, &n->renew};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        gp_http_call_cancel(n->http, calls[i]);
    gp_node_health_close(n);
    gp_node_fence_close(n);
    for (size_t i = 0; i < n->n_replicas; i++)
        gp_replica_free(n->replicas[i]);
    free(n->replicas);
    gp_assignments_free(n->assignments, n->n_assignments);
    json_decref(n->queue);
    json_decref(n->in_flight);
    if (n->gpu.ops)
        gp_gpu_close(&n->gpu);
}

/* ---- failures, back-off, URLs ---- */

const char *gp_node_url(const gp_node *n)
{
    return n->leader[0] ? n->leader : n->opt->urls[n->url];
}

static void gp__failed(gp_node *n, const char *call, long status, const char *why)
{
    n->failures++;
    n->hops = 0;
    int64_t wait = gp_backoff_ms(n->failures, (int64_t)n->heartbeat_s * 1000, n->opt->seed, n->index);
    n->next_try_ms = gp_agent_mono_ms() + wait;
    char was[sizeof n->leader];
    snprintf(was, sizeof was, "%s", gp_node_url(n));
    n->leader[0] = '\0'; /* a leader that fails is looked for again through the list */
    n->url = (n->url + 1) % n->opt->n_urls;
    if (n->failures == 1 || n->failures % 10 == 0)
        gp_agent_log(n, "%s to %s failed (%s%s%ld): retrying at %s in %lld ms", call, was, why ? why : "",
                     why ? ", status " : "status ", status, gp_node_url(n), (long long)wait);
}

static void gp__answered(gp_node *n)
{
    if (n->failures > 0)
        gp_agent_log(n, "reconnected to %s", gp_node_url(n));
    n->failures = 0;
    n->hops = n->waits = 0;
}

/* The leader a follower's 307 names (its JSON error's "leader"), when it
 * is a URL to follow. */
static bool gp__leader_of(const char *body, char *out, size_t cap)
{
    json_t *o = json_loads(body, 0, NULL);
    const char *leader = json_string_value(json_object_get(json_object_get(o, "error"), "leader"));
    bool ok = leader && strlen(leader) < cap && gp_server_url_followable(leader);
    if (ok)
        snprintf(out, cap, "%s", leader);
    json_decref(o);
    return ok;
}

bool gp_node_leader_moved(gp_node *n, const gp_http_call *call, long status, const char *body)
{
    if (status == 503 && call->retry_after_s > 0) { /* no leader yet: as the replica asks */
        char was[sizeof n->leader];
        snprintf(was, sizeof was, "%s", gp_node_url(n));
        n->leader[0] = '\0';
        n->url = (n->url + 1) % n->opt->n_urls;
        n->next_try_ms = gp_agent_mono_ms() + call->retry_after_s * 1000;
        n->failures = 0; /* a replica answered: no back-off on the next URL */
        if (++n->waits % 10 == 1)
            gp_agent_log(n, "%s knows no leader (503): retrying at %s in %ld s", was, gp_node_url(n),
                         call->retry_after_s);
        return true;
    }
    char leader[sizeof n->leader];
    if (status != 307 || n->hops >= GP__LEADER_HOPS_MAX || !gp__leader_of(body, leader, sizeof leader))
        return false;
    n->hops++;
    if (strcmp(leader, n->leader) != 0)
        gp_agent_log(n, "%s is a follower: following the leader %s", gp_node_url(n), leader);
    snprintf(n->leader, sizeof n->leader, "%s", leader);
    n->next_try_ms = 0; /* at once */
    return true;
}

/* A call without the answer it wanted: a follower's 307 or 503 is
 * followed, anything else backs off to the next URL. */
static void gp__unanswered(gp_node *n, const char *what, const gp_http_call *call, long status, const char *body,
                           const char *why)
{
    if (!gp_node_leader_moved(n, call, status, body))
        gp__failed(n, what, status, why);
}

/* The credential is refused or the node was lost: register again. */
static void gp__register_again(gp_node *n, const char *why)
{
    gp_agent_log(n, "registering again: %s", why);
    n->token[0] = '\0';
    gp_http_call_cancel(n->http, &n->poll);
    gp_http_call_cancel(n->http, &n->heartbeat);
}

/* The message of an error answer, for the log. */
static void gp__error_message(const char *body, char *out, size_t cap)
{
    json_t *o = json_loads(body, 0, NULL);
    const char *m = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
    snprintf(out, cap, "%s", m ? m : body);
    json_decref(o);
}

/* The epoch of an answer: false (refused) when lower than the highest seen. */
static bool gp__epoch_ok(gp_node *n, json_t *answer)
{
    int64_t epoch = json_integer_value(json_object_get(answer, "epoch"));
    if (epoch < n->epoch_max) {
        gp_agent_log(n, "refused an answer of epoch %lld: epoch %lld was seen", (long long)epoch,
                     (long long)n->epoch_max);
        return false;
    }
    if (epoch > n->epoch_max) {
        gp_error err;
        if (gp_state_epoch_store(n->dir, epoch, &err) != GP_OK)
            gp_agent_log(n, "cannot store epoch: %s", err.message);
        n->epoch_max = epoch;
    }
    return true;
}

/* ---- register ---- */

static int64_t gp__heartbeat_ms(const gp_node *n)
{
    return (int64_t)(n->heartbeat_s > 0 ? n->heartbeat_s : 15) * 1000;
}

/* The node's stored credential (STATE/NODE/credential) into out: false
 * when it has none. */
static bool gp__stored_credential(const gp_node *n, char *out, size_t cap)
{
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/credential", n->dir);
    if (!gp_state_read(path, out, cap))
        return false;
    out[strcspn(out, "\r\n")] = '\0';
    return out[0] != '\0';
}

/* A registration with the stored credential was refused (revoked, or not
 * this node's): it is forgotten, and the next try uses the join token. */
static bool gp__credential_refused(gp_node *n, long status)
{
    char path[GP_STATE_PATH_MAX], old[GP_AGENT_TOKEN_MAX + 2];
    if ((status != 401 && status != 403) || !gp__stored_credential(n, old, sizeof old))
        return false;
    snprintf(path, sizeof path, "%s/credential", n->dir);
    unlink(path);
    gp_agent_log(n, "register with the node's credential refused (%ld): the join token next", status);
    return true;
}

/* ---- the node's certificate (agent_cert.h) ---- */

#define GP__CERT_RETRY_MS 60000        /* a renewal that got no certificate: again after */
#define GP__CERT_NONE_MS (3600 * 1000) /* gpupoold issues none (--agent-mtls off): ask again after */

static bool gp__https(const gp_node *n)
{
    return strncmp(gp_node_url(n), "https://", 8) == 0;
}

/* Over HTTPS, body gets "csr": a request for the node's certificate. */
static void gp__add_csr(gp_node *n, json_t *body)
{
    char *csr = NULL;
    gp_error err;
    if (!gp__https(n))
        return;
    if (gp_node_cert_request(&n->cert, n->dir, n->name, &csr, &err) != GP_OK)
        gp_agent_log(n, "no certificate request: %s", err.message);
    else
        json_object_set_new(body, "csr", json_string(csr));
    free(csr);
}

/* The certificate in gpupoold's answer o is kept; an answer without one
 * (gpupoold issues none) is asked again an hour later. */
static void gp__take_certificate(gp_node *n, const json_t *o)
{
    const char *pem = json_string_value(json_object_get(o, "certificate"));
    gp_error err;
    int64_t now = gp_agent_real_ms();
    if (!pem) {
        n->cert.renew_at_ms = now + GP__CERT_NONE_MS;
        return;
    }
    if (gp_node_cert_store(&n->cert, n->dir, pem, now, &err) != GP_OK) {
        gp_agent_log(n, "cannot keep the certificate: %s", err.message);
        n->cert.renew_at_ms = now + GP__CERT_RETRY_MS;
        return;
    }
    gp_agent_log(n, "certificate until %lld, renewed from %lld (epoch s)",
                 (long long)json_integer_value(json_object_get(o, "certificate_expires")),
                 (long long)(n->cert.renew_at_ms / 1000));
}

static void gp__on_renew(gp_http_call *call, long status, const char *body, size_t len, const char *why, void *ctx)
{
    (void)call;
    (void)len;
    gp_node *n = ctx;
    json_t *o = status == 200 ? json_loads(body, 0, NULL) : NULL;
    if (o && json_object_get(o, "certificate")) {
        gp__take_certificate(n, o);
    } else if (status == 401) {
        gp__register_again(n, "the credential was refused");
    } else {
        char message[512];
        gp__error_message(body ? body : "", message, sizeof message);
        gp_agent_log(n, "certificate renewal: %ld %s", status, status ? message : why ? why : "");
        bool none = status == 404 || status == 409; /* an older gpupoold, or certificates off */
        n->cert.renew_at_ms = gp_agent_real_ms() + (none ? GP__CERT_NONE_MS : GP__CERT_RETRY_MS);
    }
    json_decref(o);
}

static void gp__renew(gp_node *n)
{
    json_t *body = json_object();
    gp__add_csr(n, body);
    char *text = json_dumps(body, JSON_COMPACT), url[GP_STATE_PATH_MAX];
    snprintf(url, sizeof url, "%s/v1/agents/%s/certificate", gp_node_url(n), n->name);
    gp_error err;
    if (!text || !json_object_get(body, "csr") ||
        gp_http_call_start(n->http, &n->renew, "POST", url, n->token, text, 30, gp__on_renew, n, &err) != GP_OK)
        n->cert.renew_at_ms = gp_agent_real_ms() + GP__CERT_RETRY_MS;
    free(text);
    json_decref(body);
}

/* Renews when due (HTTPS only); returns when it is next due (mono ms). */
static int64_t gp__cert_step(gp_node *n, int64_t now)
{
    if (!gp__https(n))
        return INT64_MAX;
    int64_t real = gp_agent_real_ms();
    if (real >= n->cert.renew_at_ms && !gp_http_call_busy(&n->renew))
        gp__renew(n);
    return now + (n->cert.renew_at_ms > real ? n->cert.renew_at_ms - real : GP__CERT_RETRY_MS);
}

static void gp__on_register(gp_http_call *call, long status, const char *body, size_t len, const char *why,
                            void *ctx)
{
    (void)len;
    gp_node *n = ctx;
    (*n->registering)--;
    if (gp__credential_refused(n, status))
        return;
    bool refused = status == 400 || status == 401 || status == 403 || status == 404 || status == 409;
    if (!refused && status != 200 && status != 201) { /* no answer, 307, 429, 5xx: try again */
        gp__unanswered(n, "register", call, status, body, why);
        return;
    }
    gp__answered(n);
    json_t *o = json_loads(body, 0, NULL);
    const char *token = json_string_value(json_object_get(o, "token"));
    if (refused || !token || strlen(token) >= sizeof n->token) {
        char message[512];
        gp__error_message(body, message, sizeof message);
        gp_agent_log(n, "register refused (%ld): %s", status, message);
        fprintf(stderr, "gpupool-agent: node %s: register refused (%ld): %s\n", n->name, status, message);
        n->fatal = 1;
        json_decref(o);
        return;
    }
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/credential", n->dir);
    char line[GP_AGENT_TOKEN_MAX + 2];
    snprintf(line, sizeof line, "%s\n", token);
    gp_error err;
    if (gp_state_write(path, line, 0600, &err) != GP_OK)
        gp_agent_log(n, "cannot store the credential: %s", err.message);
    snprintf(n->token, sizeof n->token, "%s", token);
    if (!n->opt->heartbeat_s && json_integer_value(json_object_get(o, "heartbeat_s")) > 0)
        n->heartbeat_s = (int)json_integer_value(json_object_get(o, "heartbeat_s"));
    if (!gp__epoch_ok(n, o)) {
        n->token[0] = '\0'; /* an older controller's credential: ask the next URL */
        gp__failed(n, "register", status, "an older epoch");
        json_decref(o);
        return;
    }
    n->next_heartbeat_ms = gp_agent_mono_ms() + gp_spread_ms(gp__heartbeat_ms(n), n->opt->seed, n->index);
    gp_node_partition_terms(n, o);
    gp_node_partition_heard(n, n->register_sent_ms);
    gp_agent_log(n, "registered epoch=%lld heartbeat_s=%d", (long long)n->epoch_max, n->heartbeat_s);
    if (gp__https(n))
        gp__take_certificate(n, o);
    if (json_is_true(json_object_get(o, "awaiting_approval"))) /* gpupoold --approve-nodes */
        gp_agent_log(n, "cordoned until an admin runs: gpupool nodes approve %s", n->name);
    json_decref(o);
}

/* A node registers again with its own credential while it has one (a
 * join token alone may not take an existing node: api_agents.c), else
 * with the join token.  Over HTTPS it asks for a certificate too. */
static void gp__register(gp_node *n)
{
    char own[GP_AGENT_TOKEN_MAX + 2];
    const char *bearer = gp__stored_credential(n, own, sizeof own) ? own : n->opt->join_token;
    json_t *inv = gp_inventory_to_json(&n->inventory);
    json_t *body = json_pack("{s:O}", "node", json_object_get(inv, "node"));
    gp__add_csr(n, body);
    char *text = json_dumps(body, JSON_COMPACT), url[GP_STATE_PATH_MAX];
    snprintf(url, sizeof url, "%s/v1/agents:register", gp_node_url(n));
    n->register_sent_ms = gp_agent_mono_ms();
    gp_error err;
    if (!text || gp_http_call_start(n->http, &n->reg, "POST", url, bearer, text, 30, gp__on_register, n, &err) !=
                     GP_OK)
        gp__failed(n, "register", 0, "cannot start the call");
    else
        (*n->registering)++;
    free(text);
    json_decref(body);
    json_decref(inv);
}

/* ---- reconcile ---- */

static void gp__start(gp_node *n, const gp_assignment *a)
{
    gp_replica *r = NULL;
    gp_error err;
    gp_err rc = gp_replica_start(n, a, &r, &err);
    if (!r)
        return;
    if (!gp_node_add_replica(n, r)) {
        gp_replica_free(r);
        return;
    }
    if (rc != GP_OK)
        gp_agent_log(n, "job=%llu replica=%u cannot start (field %s): %s", (unsigned long long)r->job, r->replica,
                     err.field, err.message);
    else
        gp_agent_log(n, "job=%llu replica=%u started supervisor=%d gpus=%zu", (unsigned long long)r->job,
                     r->replica, (int)r->supervisor, r->n_gpus);
    gp_node_dcgm_update(n);
}

/* What is left of a grace that ends at deadline_ms of gpupoold's clock:
 * against that clock as its last answer said it, carried forward on the
 * monotonic clock, so neither this node's offset nor a step of its clock
 * cuts or stretches the grace (from a gpupoold that says no now_ms:
 * against this node's clock). */
static int64_t gp__grace_left(const gp_node *n, int64_t deadline_ms)
{
    if (n->server_ms <= 0)
        return deadline_ms - gp_agent_real_ms();
    return deadline_ms - (n->server_ms + gp_agent_mono_ms() - n->server_at_mono_ms);
}

/* Stops r as a says: its stop signal now (the job's, SIGTERM when it
 * names none; core/names.c), killed at deadline_ms (gpupoold's clock). */
static void gp__stop(gp_node *n, gp_replica *r, const gp_assignment *a, int64_t deadline_ms)
{
    const char *reason = a->stop_reason[0] ? a->stop_reason : NULL;
    int64_t grace = gp__grace_left(n, deadline_ms);
    bool now = grace <= 0;
    r->stop_cause = reason && strcmp(reason, "time_limit") == 0 ? GP_STOP_TIME_LIMIT : GP_STOP_REQUESTED;
    gp_replica_stop_within(n, r, now ? SIGKILL : gp_stop_signal_number(a->stop_signal), now ? 0 : grace, r->stop_cause);
    r->stop_deadline = deadline_ms;
    n->next_checkpoint_ms = 0; /* its grace starts: look for .done now, then every GP__CHECKPOINT_GRACE_EVERY_MS */
    if (r->checkpoint_wd < 0 && n->ckpt_watch) /* and at once when it appears (agent_ckpt_watch.h) */
        r->checkpoint_wd = gp_ckpt_watch_add(n->ckpt_watch, r->checkpoint_dir);
    gp_agent_log(n, "job=%llu replica=%u stopping reason=%s kill_deadline_ms=%lld%s", (unsigned long long)r->job,
                 r->replica, reason ? reason : "stop", (long long)deadline_ms, now ? " (now)" : "");
}

static void gp__kill(gp_node *n, gp_replica *r, const char *why)
{
    gp_replica_stop_within(n, r, SIGKILL, 0, r->stop_cause); /* a time_limit grace cut short stays time_limit */
    r->stop_deadline = GP_PLAN_KILLED;
    gp_agent_log(n, "job=%llu replica=%u killed: %s", (unsigned long long)r->job, r->replica, why);
}

/* wants[i] from assignments[i]; gpus point into the assignments. */
static void gp__wants(const gp_assignment *list, size_t nw, gp_plan_want *w, gp_plan_gpu *gpus)
{
    for (size_t i = 0; i < nw; i++) {
        const gp_assignment *a = &list[i];
        w[i] = (gp_plan_want){
            .job = a->job,
            .replica = a->replica,
            .bind_time = a->bind_time,
            .stop = a->stop,
            .kill_deadline = a->kill_deadline_ms, /* or kill_deadline * 1000 from a gpupoold that predates it */
            .gpus = gpus + i * GP_MAX_GPUS_PER_NODE,
            .n_gpus = a->n_gpus,
        };
        for (size_t k = 0; k < a->n_gpus; k++)
            gpus[i * GP_MAX_GPUS_PER_NODE + k] = (gp_plan_gpu){.uuid = a->gpus[k], .share = gp_assignment_share(a)};
    }
}

static void gp__haves(const gp_node *n, gp_plan_have *h, gp_plan_gpu *gpus)
{
    for (size_t j = 0; j < n->n_replicas; j++) {
        const gp_replica *r = n->replicas[j];
        h[j] = (gp_plan_have){.job = r->job, .replica = r->replica, .bind_time = r->bind_time, .ended = r->ended,
                              .stop_deadline = r->stop_deadline, .gpus = gpus + j * GP_MAX_GPUS_PER_NODE,
                              .n_gpus = r->n_gpus};
        for (size_t k = 0; k < r->n_gpus; k++)
            gpus[j * GP_MAX_GPUS_PER_NODE + k] = (gp_plan_gpu){.uuid = r->gpus[k], .share = r->share};
    }
}

/* Which replicas the assignments list. */
static void gp__mark_listed(gp_node *n, const gp_plan_want *w, size_t nw)
{
    for (size_t j = 0; j < n->n_replicas; j++) {
        gp_replica *r = n->replicas[j];
        r->listed = false;
        for (size_t i = 0; i < nw && !r->listed; i++)
            r->listed = w[i].job == r->job && w[i].replica == r->replica && w[i].bind_time == r->bind_time;
    }
}

void gp_node_forget_finished(gp_node *n)
{
    size_t keep = 0;
    for (size_t j = 0; j < n->n_replicas; j++) {
        gp_replica *r = n->replicas[j];
        if (r->ended && r->exit_acked && !r->listed && gp_replica_log_done(n, r) && !r->log_in_flight) {
            gp_state_remove_dir(r->dir);
            gp_replica_free(r);
        } else {
            n->replicas[keep++] = r;
        }
    }
    n->n_replicas = keep;
}

static void gp__apply(gp_node *n, const gp_plan_step *s, const gp_plan_want *w, const gp_assignment *list,
                      gp_replica **have)
{
    switch (s->kind) {
    case GP_PLAN_START:
        if (!n->shutting_down)
            gp__start(n, &list[s->want]);
        break;
    case GP_PLAN_STOP: gp__stop(n, have[s->have], &list[s->want], w[s->want].kill_deadline); break;
    case GP_PLAN_KILL: gp__kill(n, have[s->have], "no longer assigned"); break;
    }
}

/* Makes the node run the last accepted assignments. */
static void gp__reconcile(gp_node *n)
{
    const gp_assignment *list = n->assignments;
    size_t nw = n->n_assignments, nh = n->n_replicas;
    gp_plan_want *w = calloc(nw + 1, sizeof *w);
    gp_plan_have *h = calloc(nh + 1, sizeof *h);
    gp_plan_gpu *wg = calloc((nw + 1) * GP_MAX_GPUS_PER_NODE, sizeof *wg);
    gp_plan_gpu *hg = calloc((nh + 1) * GP_MAX_GPUS_PER_NODE, sizeof *hg);
    gp_plan_step *steps = calloc(nw + nh + 1, sizeof *steps);
    gp_replica **have = calloc(nh + 1, sizeof *have);
    if (w && h && wg && hg && steps && have) {
        gp__wants(list, nw, w, wg);
        gp__haves(n, h, hg);
        if (nh > 0)
            memcpy(have, n->replicas, nh * sizeof *have);
        size_t ns = gp_plan_reconcile(w, nw, h, nh, steps, nw + nh);
        for (size_t i = 0; i < ns; i++)
            gp__apply(n, &steps[i], w, list, have);
        gp__mark_listed(n, w, nw);
        gp_node_forget_finished(n);
    }
    free(w);
    free(h);
    free(wg);
    free(hg);
    free(steps);
    free(have);
}

/* ---- the long-poll ---- */

static void gp__on_poll(gp_http_call *call, long status, const char *body, size_t len, const char *why, void *ctx)
{
    (void)len;
    gp_node *n = ctx;
    if (status == 401 || status == 403) {
        gp__register_again(n, "the credential was refused");
        return;
    }
    json_t *o = status == 200 ? json_loads(body, 0, NULL) : NULL;
    json_t *list = json_object_get(o, "assignments");
    if (!o || !json_is_array(list) || !gp__epoch_ok(n, o)) {
        gp__unanswered(n, "poll", call, status, body, why ? why : o ? "refused" : "no JSON");
        json_decref(o);
        return;
    }
    gp__answered(n);
    n->server_ms = json_integer_value(json_object_get(o, "now_ms"));
    n->server_at_mono_ms = gp_agent_mono_ms();
    if (!json_is_true(json_object_get(o, "up"))) {
        gp__register_again(n, "gpupoold has the node lost");
        json_array_clear(list);
    }
    gp_assignment *decoded = NULL;
    size_t count = 0;
    gp_error err;
    if (gp_assignments_parse(list, &decoded, &count, &err) != GP_OK) {
        gp__unanswered(n, "poll", call, status, body, err.message);
        json_decref(o);
        return;
    }
    n->version = json_integer_value(json_object_get(o, "version"));
    if (n->warmer)
        gp_image_warmer_offer(n->warmer, json_object_get(o, "image_hints"));
    gp_assignment *before = n->assignments;
    size_t n_before = n->n_assignments;
    n->assignments = decoded;
    n->n_assignments = count;
    n->has_assignments = true;
    gp__reconcile(n);
    gp_node_fence_refresh(n, before, n_before);
    gp_assignments_free(before, n_before);
    json_decref(o);
}

static void gp__poll(gp_node *n)
{
    char url[GP_STATE_PATH_MAX];
    snprintf(url, sizeof url, "%s/v1/agents/%s/assignments?after=%lld&wait=%d", gp_node_url(n), n->name, n->version,
             GP__POLL_WAIT_S);
    gp_error err;
    if (gp_http_call_start(n->http, &n->poll, "GET", url, n->token, NULL, GP__POLL_WAIT_S + 15, gp__on_poll, n,
                           &err) != GP_OK)
        gp__failed(n, "poll", 0, err.message);
}

/* ---- heartbeat ---- */

static void gp__on_heartbeat(gp_http_call *call, long status, const char *body, size_t len, const char *why,
                             void *ctx)
{
    (void)len;
    gp_node *n = ctx;
    if (status == 409 || status == 401 || status == 403) {
        char message[512];
        gp__error_message(body, message, sizeof message);
        gp__register_again(n, message);
    } else if (status != 200) {
        gp__unanswered(n, "heartbeat", call, status, body, why);
    } else {
        json_t *o = body ? json_loads(body, 0, NULL) : NULL;
        if (n->warmer)
            gp_image_warmer_offer(n->warmer, json_object_get(o, "image_hints"));
        if (json_integer_value(json_object_get(o, "epoch")) >= n->epoch_max) { /* the leader's, not an old one's */
            gp_node_partition_terms(n, o);
            gp_node_partition_heard(n, n->heartbeat_sent_ms);
        }
        json_decref(o);
    }
}

/* What the replica uses of its GPUs or slices: the telemetry's processes
 * that are its supervisor or its main process. */
static json_t *gp__replica_use(const gp_replica *r, const gp_telemetry *t)
{
    json_t *out = json_array();
    for (int p = 0; t && p < t->n_processes; p++) {
        const gp_gpu_process *proc = &t->processes[p];
        if (proc->pid == r->supervisor || proc->pid == gp_replica_pid(r))
            json_array_append_new(out, gp_gpu_process_to_json(proc));
    }
    return out;
}

/* The replicas that run, each with its use of its GPUs (t: NULL when the
 * backend gave no sample). */
static json_t *gp__running(const gp_node *n, const gp_telemetry *t)
{
    json_t *out = json_array();
    for (size_t i = 0; i < n->n_replicas; i++) {
        const gp_replica *r = n->replicas[i];
        if (r->ended)
            continue;
        json_t *pull = gp_replica_pull(r);
        const char *state = r->stop_deadline != GP_PLAN_NO_DEADLINE ? "stopping" : pull ? "pulling" : "running";
        json_t *o = json_pack("{s:I, s:i, s:i, s:s, s:o}", "job", (json_int_t)r->job, "replica", (int)r->replica,
                              "pid", (int)gp_replica_pid(r), "state", state, "gpus", gp__replica_use(r, t));
        if (pull)
            json_object_set_new(o, "pull", pull);
        json_array_append_new(out, o);
    }
    return out;
}

/* A heartbeat stuck on a connection a partition broke gives way to a
 * fresh one after two periods (2 s to 20 s), well before the partition
 * fence (half of --node-lost-after, two heartbeat periods at least). */
static long gp__heartbeat_timeout_s(const gp_node *n)
{
    long twice = (long)(gp__heartbeat_ms(n) / 500);
    return twice < 2 ? 2 : twice > 20 ? 20 : twice;
}

static void gp__heartbeat(gp_node *n, int64_t now)
{
    static gp_telemetry t;
    json_t *gpus = NULL;
    bool sampled = gp_gpu_telemetry(&n->gpu, gp_agent_real_ms(), &t, NULL) == GP_OK;
    if (sampled) {
        json_t *tj = gp_telemetry_to_json(&t);
        gpus = json_incref(json_object_get(tj, "gpus"));
        json_decref(tj);
        gp_node_watch_memory(n, &t);
        gp_node_metrics_publish(n, &t);
    }
    json_t *body = json_pack("{s:o, s:o}", "running", gp__running(n, sampled ? &t : NULL), "gpus",
                             gpus ? gpus : json_array());
    char *text = json_dumps(body, JSON_COMPACT), url[GP_STATE_PATH_MAX];
    snprintf(url, sizeof url, "%s/v1/agents/%s/heartbeat", gp_node_url(n), n->name);
    n->heartbeat_sent_ms = now;
    gp_error err;
    if (!text || gp_http_call_start(n->http, &n->heartbeat, "POST", url, n->token, text, gp__heartbeat_timeout_s(n),
                                    gp__on_heartbeat, n, &err) != GP_OK)
        gp__failed(n, "heartbeat", 0, "cannot start the call");
    free(text);
    json_decref(body);
    n->next_heartbeat_ms = now + gp__heartbeat_ms(n);
}

/* ---- reports ---- */

static json_t *gp__exit_report(const gp_replica *r)
{
    int code = r->exit.code < 0 ? 0 : r->exit.code > 255 ? 255 : r->exit.code;
    json_t *o = json_pack("{s:s, s:I, s:i, s:I, s:i, s:i, s:s}", "what", "exited", "job", (json_int_t)r->job,
                          "replica", (int)r->replica, "bind_time", (json_int_t)r->bind_time, "exit_code", code,
                          "signal", r->exit.signal, "reason", gp_exit_reason_name(r->exit.reason));
    char path[GP_STATE_PATH_MAX], text[64];
    long long used, share;
    snprintf(path, sizeof path, "%s/gpu_memory", r->dir);
    if (r->exit.reason == GP_EXIT_REASON_GPU_MEMORY && gp_state_read(path, text, sizeof text) &&
        sscanf(text, "%lld %lld", &used, &share) == 2 && used >= 0 && share >= 0) {
        json_object_set_new(o, "gpu_memory_mib", json_integer(used));
        json_object_set_new(o, "gpu_memory_share_mib", json_integer(share));
    }
    int64_t dropped = gp_replica_log_dropped(r->log_path); /* the job's history says so too */
    if (dropped > 0)
        json_object_set_new(o, "log_dropped_bytes", json_integer(dropped));
    char why[GP__EXIT_MESSAGE_MAX + 1];
    snprintf(path, sizeof path, "%s/error", r->dir); /* a run that never started: why (its log says so too) */
    if (gp_state_read(path, why, sizeof why)) {
        why[strcspn(why, "\n")] = '\0';
        for (char *c = why; *c; c++) /* gpupoold takes text without control characters */
            *c = (unsigned char)*c < 0x20 || *c == 0x7f ? ' ' : *c;
        if (why[0]) /* invalid UTF-8 (a cut character): json_string gives NULL, the field is left out */
            json_object_set_new(o, "message", json_string(why));
    }
    return o;
}

static bool gp__exit_due(const gp_replica *r)
{
    return r->ended && !r->exit_acked && !r->exit_in_flight && !r->exit_held;
}

static bool gp__reports_due(const gp_node *n)
{
    if (json_array_size(n->queue) > 0)
        return true;
    for (size_t i = 0; i < n->n_replicas; i++)
        if (gp__exit_due(n->replicas[i]))
            return true;
    return false;
}

/* The live replica of that run, NULL when none. */
static gp_replica *gp__replica_of(const gp_node *n, const json_t *report)
{
    for (size_t i = 0; i < n->n_replicas; i++) {
        gp_replica *r = n->replicas[i];
        if (!r->ended && r->job == (uint64_t)json_integer_value(json_object_get(report, "job")) &&
            r->replica == (unsigned)json_integer_value(json_object_get(report, "replica")) &&
            r->bind_time == json_integer_value(json_object_get(report, "bind_time")))
            return r;
    }
    return NULL;
}

/* A `checkpointed` report that gpupoold applied while its replica was in a
 * stop grace ends the grace (gpupoold moves kill_deadline to the
 * checkpoint): kill now, one long-poll round trip earlier than the stop the
 * next assignments would carry.  The reports in flight are the last
 * results of the answer (the batch's exits come first). */
static void gp__end_graces(gp_node *n, const char *body, size_t len)
{
    json_t *answer = json_loadb(body, len, 0, NULL);
    json_t *results = json_object_get(answer, "results");
    size_t sent = json_array_size(n->in_flight), got = json_array_size(results);
    for (size_t k = 0; got >= sent && k < sent; k++) {
        json_t *rep = json_array_get(n->in_flight, k);
        const char *what = json_string_value(json_object_get(rep, "what"));
        if (!what || strcmp(what, "checkpointed") != 0)
            continue;
        bool applied = json_is_true(json_object_get(json_array_get(results, got - sent + k), "applied"));
        gp_replica *r = gp__replica_of(n, rep); /* a live one */
        gp_plan_have h = {.stop_deadline = r ? r->stop_deadline : GP_PLAN_NO_DEADLINE};
        if (r && gp_plan_checkpoint_ends_grace(&h, applied)) {
            if (r->stop_cause == GP_STOP_REQUESTED) /* it ends as checkpointed, not killed_after_grace */
                r->stop_cause = GP_STOP_CHECKPOINTED;
            gp__kill(n, r, "checkpoint done in its grace");
        }
    }
    json_decref(answer);
}

static void gp__on_reports(gp_http_call *call, long status, const char *body, size_t len, const char *why,
                           void *ctx)
{
    gp_node *n = ctx;
    for (size_t i = 0; i < n->n_replicas; i++) {
        gp_replica *r = n->replicas[i];
        if (r->exit_in_flight)
            r->exit_acked = status == 200;
        r->exit_in_flight = false;
    }
    if (status == 200) {
        gp__end_graces(n, body, len);
        json_array_clear(n->in_flight);
        if (n->has_assignments)
            gp__reconcile(n); /* forget runs gpupoold has the exit of */
        return;
    }
    json_array_extend(n->in_flight, n->queue); /* keep the order: what was sent first goes again first */
    json_array_clear(n->queue);
    json_array_extend(n->queue, n->in_flight);
    json_array_clear(n->in_flight);
    if (status == 401 || status == 403)
        gp__register_again(n, "the credential was refused");
    else
        gp__unanswered(n, "reports", call, status, body, why);
}

static void gp__send_reports(gp_node *n)
{
    json_t *batch = json_array();
    size_t i;
    for (i = 0; i < n->n_replicas && json_array_size(batch) < GP__REPORTS_MAX; i++) {
        gp_replica *r = n->replicas[i];
        if (gp__exit_due(r)) {
            json_array_append_new(batch, gp__exit_report(r));
            r->exit_in_flight = true;
        }
    }
    for (i = 0; i < n->n_replicas; i++)
        n->replicas[i]->exit_held = false; /* the next batch, after their `started` in this one */
    while (json_array_size(n->queue) > 0 && json_array_size(batch) < GP__REPORTS_MAX) {
        json_array_append(batch, json_array_get(n->queue, 0));
        json_array_append(n->in_flight, json_array_get(n->queue, 0));
        json_array_remove(n->queue, 0);
    }
    json_t *body = json_pack("{s:o}", "reports", batch);
    char *text = json_dumps(body, JSON_COMPACT), url[GP_STATE_PATH_MAX];
    snprintf(url, sizeof url, "%s/v1/agents/%s/reports", gp_node_url(n), n->name);
    gp_error err;
    if (!text || gp_http_call_start(n->http, &n->reports, "POST", url, n->token, text, 30, gp__on_reports, n,
                                    &err) != GP_OK)
        gp__on_reports(&n->reports, 0, "", 0, "cannot start the call", n);
    free(text);
    json_decref(body);
}

/* ---- GPU health and the checkpoint handshake ---- */

static void gp__gpu_events(gp_node *n)
{
    gp_gpu_event ev[32];
    size_t count = 0;
    if (gp_gpu_poll_events(&n->gpu, gp_agent_real_ms(), 0, ev, 32, &count, NULL) != GP_OK)
        return;
    for (size_t i = 0; i < count; i++)
        gp_node_health_event(n, &ev[i]);
}

static int64_t gp__check_checkpoints(gp_node *n, int64_t now)
{
    bool grace = false;
    for (size_t i = 0; i < n->n_replicas; i++) {
        gp_replica *r = n->replicas[i];
        if (r->ended)
            continue;
        gp_replica_check_started(n, r);
        gp_replica_check_checkpoint(n, r);
        grace |= r->stop_deadline != GP_PLAN_NO_DEADLINE;
    }
    return now + (grace ? GP__CHECKPOINT_GRACE_EVERY_MS : GP__CHECKPOINT_EVERY_MS);
}

/* ---- the step ---- */

static int64_t gp__min(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

int64_t gp_node_step(gp_node *n, int64_t now)
{
    if (n->fatal)
        return INT64_MAX;
    if (now >= n->next_events_ms) {
        gp__gpu_events(n);
        n->next_events_ms = now + GP__EVENTS_EVERY_MS;
    }
    if (now >= n->next_checkpoint_ms)
        n->next_checkpoint_ms = gp__check_checkpoints(n, now);
    int64_t next = gp__min(gp__min(gp__min(n->next_events_ms, n->next_checkpoint_ms), gp_node_memory_step(n, now)),
                           gp_node_health_step(n, now));
    next = gp__min(next, gp_node_partition_step(n, now));
    next = gp__min(next, gp_node_sweep_scratch(n, now));
    if (gp_node_partition_silent(n, now))
        return gp__min(next, n->silent_until_ms);
    if (now < n->next_try_ms)
        return gp__min(next, n->next_try_ms);
    if (!n->token[0]) {
        if (!gp_http_call_busy(&n->reg) && *n->registering < GP_AGENT_REGISTERING_MAX)
            gp__register(n);
        return next;
    }
    if (!gp_http_call_busy(&n->poll) && !n->shutting_down)
        gp__poll(n);
    if (now >= n->next_heartbeat_ms && !gp_http_call_busy(&n->heartbeat))
        gp__heartbeat(n, now);
    next = gp__min(next, gp__cert_step(n, now));
    if (!gp_http_call_busy(&n->reports) && gp__reports_due(n))
        gp__send_reports(n);
    next = gp__min(next, gp_node_ship_logs(n, now));
    return gp__min(next, n->next_heartbeat_ms);
}

void gp_node_replica_ended(gp_node *n, gp_replica *r)
{
    gp_replica_collect_exit(n, r);
    gp_node_mps_sweep(n);
    gp_node_dcgm_update(n);
    if (n->has_assignments)
        gp__reconcile(n); /* a start waiting for its GPUs may go now */
}

void gp_node_checkpoint_changed(gp_node *n, const int *wds, size_t count)
{
    for (size_t i = 0; i < n->n_replicas; i++) {
        const gp_replica *r = n->replicas[i];
        for (size_t k = 0; k < count && !r->ended && r->checkpoint_wd >= 0; k++)
            if (r->checkpoint_wd == wds[k])
                n->next_checkpoint_ms = 0; /* its next step looks */
    }
}

void gp_node_kill_all(gp_node *n)
{
    n->shutting_down = true;
    gp_http_call_cancel(n->http, &n->poll);
    for (size_t i = 0; i < n->n_replicas; i++)
        if (!n->replicas[i]->ended)
            gp__kill(n, n->replicas[i], "the agent stops (--on-exit stop)");
}

bool gp_node_has_live_replicas(const gp_node *n)
{
    for (size_t i = 0; i < n->n_replicas; i++)
        if (!n->replicas[i]->ended)
            return true;
    return false;
}

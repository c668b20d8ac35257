/* agents.c - node agents' liveness, assignment versions and waits (see agents.h).
 *
 * Example: job 7 (2 replicas) binds on n1 and n2 at t=100: the tick's BIND
 * marks n1 and n2, the job map notes {7: n1, n2}; after the commit both
 * versions go up by one and their long-polls answer.  At t=130 job 9
 * reclaims: PREEMPT 7 marks n1 and n2 again (job 7: stop "preempt" since
 * 130).  At t=140 n2's agent reports replica 1 gone, then replica 0 from
 * n1: the job is requeued (TRANSITION preempting -> pending), which marks
 * n1 and n2 once more and drops job 7 from the map: both agents see that
 * nothing of job 7 is assigned to them any more.
 */
#include "server/agents.h"

#include "server/clock.h"
#include "util/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gp__agent_node {
    char name[GP_NAME_MAX];
    uint64_t version;
    bool agent;          /* holds a node credential */
    bool up;             /* as the engine has it */
    bool dirty;
    int64_t last_seen_ms;
    pthread_cond_t *wake; /* its long-polls wait here (heap: the table moves) */
    json_t *running;     /* the last heartbeat's, NULL before one */
    json_t *gpus;
    json_t *specs;       /* gp_agents_specs: set once, never changed, only replaced; NULL before */
};

struct gp__agent_job {
    uint64_t id;
    uint32_t *nodes;     /* node indexes of its replicas, each once */
    size_t n_nodes;
    gp_agent_stop stop;
};

void gp_agents_init(gp_agents *a, int64_t epoch, int64_t lost_after_s)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->lock, NULL);
    a->epoch = epoch;
    a->lost_after_s = lost_after_s;
}

void gp_agents_set_epoch(gp_agents *a, int64_t epoch)
{
    pthread_mutex_lock(&a->lock);
    a->epoch = epoch;
    for (size_t i = 0; i < a->n_nodes; i++)
        if (a->nodes[i].version < (uint64_t)epoch << 32)
            a->nodes[i].version = (uint64_t)epoch << 32;
    pthread_mutex_unlock(&a->lock);
}

void gp_agents_free(gp_agents *a)
{
    for (size_t i = 0; i < a->n_nodes; i++) {
        json_decref(a->nodes[i].running);
        json_decref(a->nodes[i].gpus);
        json_decref(a->nodes[i].specs);
        pthread_cond_destroy(a->nodes[i].wake);
        free(a->nodes[i].wake);
    }
    for (size_t i = 0; i < a->n_jobs; i++)
        free(a->jobs[i].nodes);
    free(a->nodes);
    free(a->jobs);
    free(a->dirty);
    gp_strmap_free(&a->node_index);
    gp_u64map_free(&a->job_index);
    pthread_mutex_destroy(&a->lock);
    memset(a, 0, sizeof *a);
}

/* ---- the node table ---- */

static gp__agent_node *node_find(const gp_agents *a, const char *name)
{
    uint32_t i;
    return name && gp_strmap_get(&a->node_index, name, &i) ? &a->nodes[i] : NULL;
}

/* A condition on the monotonic clock (the waits' deadlines), NULL when out
 * of memory.  The caller frees it (pthread_cond_destroy, free). */
static pthread_cond_t *wake_new(void)
{
    pthread_cond_t *c = malloc(sizeof *c);
    pthread_condattr_t attr;
    if (!c)
        return NULL;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
    return c;
}

/* The node's entry, made when new (engine thread; takes the lock to grow
 * the table).  NULL when out of memory. */
static gp__agent_node *node_entry(gp_agents *a, const char *name)
{
    gp__agent_node *n = node_find(a, name);
    if (n)
        return n;
    pthread_cond_t *wake = wake_new();
    if (!wake)
        return NULL;
    pthread_mutex_lock(&a->lock);
    gp__agent_node *grown = gp_grow(a->nodes, &a->cap_nodes, a->n_nodes + 1, sizeof *grown);
    if (!grown)
        goto fail;
    a->nodes = grown;
    if (!gp_strmap_put(&a->node_index, name, (uint32_t)a->n_nodes))
        goto fail;
    n = &a->nodes[a->n_nodes++];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->version = (uint64_t)a->epoch << 32;
    n->wake = wake;
    pthread_mutex_unlock(&a->lock);
    return n;
fail:
    pthread_mutex_unlock(&a->lock);
    pthread_cond_destroy(wake);
    free(wake);
    return NULL;
}

static void mark(gp_agents *a, gp__agent_node *n)
{
    if (!n || n->dirty)
        return;
    uint32_t *d = gp_grow(a->dirty, &a->cap_dirty, a->n_dirty + 1, sizeof *d);
    if (!d)
        return; /* its next change publishes it */
    a->dirty = d;
    n->dirty = true;
    a->dirty[a->n_dirty++] = (uint32_t)(n - a->nodes);
}

static void set_up(gp_agents *a, gp__agent_node *n, bool up)
{
    pthread_mutex_lock(&a->lock);
    n->up = up;
    pthread_mutex_unlock(&a->lock);
}

static gp_err load_token(void *ctx, const gp_store_token *t, gp_error *err)
{
    void **args = ctx;
    if (t->revoked >= 0 || strcmp(t->role, "node") != 0)
        return GP_OK;
    gp__agent_node *n = node_entry(args[0], t->scope);
    if (!n)
        return gp_error_set(err, GP_ERR_NOMEM, "agents", "out of memory");
    n->agent = true;
    n->last_seen_ms = *(int64_t *)args[1];
    return GP_OK;
}

gp_err gp_agents_load(gp_agents *a, gp_store *store, int64_t now_ms, gp_error *err)
{
    void *args[2] = {a, &now_ms};
    return gp_store_tokens_scan(store, load_token, args, err);
}

/* ---- the job map ---- */

static gp__agent_job *job_find(const gp_agents *a, uint64_t id)
{
    uint32_t i;
    return gp_u64map_get(&a->job_index, id, &i) ? &a->jobs[i] : NULL;
}

static void job_drop(gp_agents *a, gp__agent_job *j)
{
    size_t i = (size_t)(j - a->jobs);
    gp_u64map_remove(&a->job_index, j->id);
    free(j->nodes);
    a->jobs[i] = a->jobs[--a->n_jobs];
    if (i < a->n_jobs)
        gp_u64map_put(&a->job_index, a->jobs[i].id, (uint32_t)i);
}

static gp__agent_job *job_entry(gp_agents *a, uint64_t id)
{
    gp__agent_job *j = job_find(a, id);
    if (j)
        return j;
    gp__agent_job *grown = gp_grow(a->jobs, &a->cap_jobs, a->n_jobs + 1, sizeof *grown);
    if (!grown)
        return NULL;
    a->jobs = grown;
    if (!gp_u64map_put(&a->job_index, id, (uint32_t)a->n_jobs))
        return NULL;
    j = &a->jobs[a->n_jobs++];
    memset(j, 0, sizeof *j);
    j->id = id;
    return j;
}

static bool is_placed(gp_job_state s)
{
    return s == GP_JOB_ADMITTED || s == GP_JOB_RUNNING || s == GP_JOB_PREEMPTING;
}

/* The nodes of the job's replicas now, each once, into j. */
static void job_nodes_now(gp_agents *a, const gp_engine *e, gp__agent_job *j, const gp_job_info *info)
{
    free(j->nodes);
    j->n_nodes = 0;
    j->nodes = calloc((size_t)info->replicas + 1, sizeof *j->nodes);
    const char *name;
    for (int r = 0; j->nodes && (name = gp_engine_job_node(e, j->id, r)) != NULL; r++) {
        gp__agent_node *n = node_entry(a, name);
        if (!n)
            continue;
        uint32_t idx = (uint32_t)(n - a->nodes);
        bool seen = false;
        for (size_t k = 0; k < j->n_nodes && !seen; k++)
            seen = j->nodes[k] == idx;
        if (!seen)
            j->nodes[j->n_nodes++] = idx;
    }
}

static void stop_from(const gp_decision *d, gp_agent_stop *stop)
{
    const char *why = d->kind == GP_DEC_PREEMPT                ? "preempt"
                      : strcmp(d->reason, "time_limit") == 0  ? "time_limit"
                                                               : "cancel";
    snprintf(stop->reason, sizeof stop->reason, "%s", why);
    stop->since = d->time;
    stop->grace_s = d->grace_s;
    int64_t wall_ms = gp_wall_ms();
    stop->since_ms = wall_ms / 1000 == d->time ? wall_ms : -1; /* decided in this second: live */
}

/* Re-reads where job id is: marks the nodes it was on and is on. */
static void job_refresh(gp_agents *a, const gp_engine *e, uint64_t id, const gp_decision *d)
{
    gp__agent_job *j = job_find(a, id);
    for (size_t k = 0; j && k < j->n_nodes; k++)
        mark(a, &a->nodes[j->nodes[k]]);
    gp_job_info info;
    if (gp_engine_job_info(e, id, &info, NULL) != GP_OK || !is_placed(info.state)) {
        if (j)
            job_drop(a, j);
        return;
    }
    if (!j && !(j = job_entry(a, id)))
        return;
    job_nodes_now(a, e, j, &info);
    for (size_t k = 0; k < j->n_nodes; k++)
        mark(a, &a->nodes[j->nodes[k]]);
    if (info.state != GP_JOB_PREEMPTING)
        memset(&j->stop, 0, sizeof j->stop);
    else if (d && (d->kind == GP_DEC_PREEMPT || d->kind == GP_DEC_STOP))
        stop_from(d, &j->stop);
}

static const char *event_node(const gp_event *ev)
{
    switch (ev->kind) {
    case GP_EV_NODE_ADD: return ev->node->name;
    case GP_EV_NODE_LOST:
    case GP_EV_NODE_DRAIN:
    case GP_EV_GPU_HEALTH: return ev->name;
    default: return NULL;
    }
}

void gp_agents_observe(void *agents, const gp_engine *e, const gp_event *ev)
{
    gp_agents *a = agents;
    const char *name = event_node(ev);
    gp__agent_node *n = name ? node_entry(a, name) : NULL;
    mark(a, n);
    if (n && (ev->kind == GP_EV_NODE_ADD || ev->kind == GP_EV_NODE_LOST))
        set_up(a, n, ev->kind == GP_EV_NODE_ADD);
    if (ev->kind == GP_EV_CHECKPOINTED)
        job_refresh(a, e, ev->job_id, NULL); /* a checkpoint in a grace moves the kill deadline */
    size_t count;
    const gp_decision *ds = gp_engine_decisions(e, &count);
    for (size_t i = 0; i < count; i++) {
        if (ds[i].kind == GP_DEC_DRAINED || ds[i].kind == GP_DEC_RECONFIGURE)
            mark(a, node_entry(a, ds[i].node));
        else if (ds[i].job_id && ds[i].kind != GP_DEC_USAGE_OPEN && ds[i].kind != GP_DEC_USAGE_CLOSE)
            job_refresh(a, e, ds[i].job_id, &ds[i]);
    }
}

json_t *gp_agents_saved(const gp_agents *a)
{
    json_t *jobs = json_array();
    for (size_t i = 0; i < a->n_jobs; i++) {
        const gp_agent_stop *st = &a->jobs[i].stop;
        json_t *o = json_pack("{s:I}", "id", (json_int_t)a->jobs[i].id);
        if (st->reason[0])
            json_object_set_new(o, "stop", json_pack("{s:s, s:I, s:I}", "reason", st->reason, "since",
                                                     (json_int_t)st->since, "grace_s", (json_int_t)st->grace_s));
        json_array_append_new(jobs, o);
    }
    return json_pack("{s:o}", "agent_jobs", jobs);
}

void gp_agents_restore(void *agents, const gp_engine *e, const json_t *saved)
{
    gp_agents *a = agents;
    for (uint32_t i = 0; i < gp_engine_node_count(e); i++) {
        gp_node_info info;
        gp__agent_node *n = gp_engine_node_get(e, i, &info) ? node_entry(a, info.name) : NULL;
        if (n)
            set_up(a, n, info.up);
        mark(a, n);
    }
    size_t i;
    const json_t *o;
    json_array_foreach(json_object_get(saved, "agent_jobs"), i, o) {
        uint64_t id = (uint64_t)json_integer_value(json_object_get(o, "id"));
        job_refresh(a, e, id, NULL);
        gp__agent_job *j = job_find(a, id);
        const json_t *st = json_object_get(o, "stop");
        if (!j || !st)
            continue;
        snprintf(j->stop.reason, sizeof j->stop.reason, "%s", json_string_value(json_object_get(st, "reason")));
        j->stop.since = json_integer_value(json_object_get(st, "since"));
        j->stop.grace_s = json_integer_value(json_object_get(st, "grace_s"));
        j->stop.since_ms = -1; /* decided before this process */
    }
}

void gp_agents_reset_jobs(void *agents)
{
    gp_agents *a = agents;
    while (a->n_jobs > 0)
        job_drop(a, &a->jobs[a->n_jobs - 1]);
}

void gp_agents_seal(gp_agents *a)
{
    for (size_t i = a->n_sealed; i < a->n_dirty; i++)
        a->nodes[a->dirty[i]].dirty = false; /* the next commit marks it again */
    a->n_sealed = a->n_dirty;
}

void gp_agents_publish(gp_agents *a)
{
    if (a->n_sealed == 0)
        return;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->n_sealed; i++) {
        gp__agent_node *n = &a->nodes[a->dirty[i]];
        n->version++;
        pthread_cond_broadcast(n->wake); /* only the touched nodes' long-polls wake */
    }
    pthread_mutex_unlock(&a->lock);
    a->n_dirty -= a->n_sealed;
    memmove(a->dirty, a->dirty + a->n_sealed, a->n_dirty * sizeof *a->dirty);
    a->n_sealed = 0;
}

void gp_agents_registered(gp_agents *a, const char *node, int64_t now_ms)
{
    gp__agent_node *n = node_entry(a, node);
    if (!n)
        return;
    pthread_mutex_lock(&a->lock);
    n->agent = true;
    n->last_seen_ms = now_ms;
    pthread_mutex_unlock(&a->lock);
}

/* Every batch asks, over every node (6,250 at 50,000 GPUs): one look
 * under the lock that copies only the silent nodes' names, then the calls
 * without it (lost() comes back into the agents).  Out of memory: the
 * names copied so far; the next batch asks again. */
void gp_agents_silent(gp_agents *a, int64_t now_ms, void (*lost)(void *ctx, const char *node), void *ctx)
{
    char (*names)[GP_NAME_MAX] = NULL;
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->n_nodes; i++) {
        const gp__agent_node *node = &a->nodes[i];
        if (!node->agent || !node->up || now_ms - node->last_seen_ms <= a->lost_after_s * 1000)
            continue;
        void *grown = gp_grow(names, &cap, n + 1, sizeof *names);
        if (!grown)
            break;
        names = grown;
        snprintf(names[n++], GP_NAME_MAX, "%s", node->name);
    }
    pthread_mutex_unlock(&a->lock);
    for (size_t k = 0; k < n; k++)
        lost(ctx, names[k]);
    free(names);
}

uint64_t gp_agents_version(const gp_agents *a, const char *node)
{
    const gp__agent_node *n = node_find(a, node);
    return n ? n->version : 0;
}

size_t gp_agents_jobs_on(const gp_agents *a, const char *node, uint64_t *ids, size_t cap)
{
    const gp__agent_node *n = node_find(a, node);
    size_t count = 0;
    for (size_t i = 0; n && i < a->n_jobs; i++)
        for (size_t k = 0; k < a->jobs[i].n_nodes; k++)
            if (&a->nodes[a->jobs[i].nodes[k]] == n) {
                if (count < cap)
                    ids[count] = a->jobs[i].id;
                count++;
                break;
            }
    return count;
}

bool gp_agents_stop_of(const gp_agents *a, uint64_t id, gp_agent_stop *out)
{
    const gp__agent_job *j = job_find(a, id);
    if (!j || !j->stop.reason[0])
        return false;
    *out = j->stop;
    return true;
}

/* ---- any thread ---- */

uint64_t gp_agents_wait(gp_agents *a, const char *node, uint64_t after, int64_t wait_ms)
{
    struct timespec deadline = gp_deadline_after(CLOCK_MONOTONIC, wait_ms);
    pthread_mutex_lock(&a->lock);
    gp__agent_node *n = node_find(a, node);
    while (n && n->version <= after && !a->stopping) {
        if (pthread_cond_timedwait(n->wake, &a->lock, &deadline) != 0)
            break; /* timed out */
        a->wakeups++;
        n = node_find(a, node); /* the table may have grown */
    }
    uint64_t v = n ? n->version : 0;
    pthread_mutex_unlock(&a->lock);
    return v;
}

void gp_agents_stop(gp_agents *a)
{
    pthread_mutex_lock(&a->lock);
    a->stopping = true;
    for (size_t i = 0; i < a->n_nodes; i++)
        pthread_cond_broadcast(a->nodes[i].wake);
    pthread_mutex_unlock(&a->lock);
}

uint64_t gp_agents_wakeups(gp_agents *a)
{
    pthread_mutex_lock(&a->lock);
    uint64_t w = a->wakeups;
    pthread_mutex_unlock(&a->lock);
    return w;
}

gp_agent_beat gp_agents_heartbeat(gp_agents *a, const char *node, json_t *running, json_t *gpus, int64_t now_ms,
                                  uint64_t *version)
{
    gp_agent_beat res = GP_AGENT_BEAT_UNKNOWN;
    pthread_mutex_lock(&a->lock);
    gp__agent_node *n = node_find(a, node);
    if (n && n->agent && !n->up)
        res = GP_AGENT_BEAT_LOST;
    else if (n && n->agent) {
        res = GP_AGENT_BEAT_OK;
        n->last_seen_ms = now_ms;
        json_decref(n->running);
        json_decref(n->gpus);
        n->running = running;
        n->gpus = gpus;
        running = gpus = NULL;
        *version = n->version;
    }
    pthread_mutex_unlock(&a->lock);
    json_decref(running);
    json_decref(gpus);
    return res;
}

void gp_agents_each_seen(gp_agents *a, void (*seen)(void *ctx, const char *node, int64_t last_seen_ms), void *ctx)
{
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->n_nodes; i++)
        if (a->nodes[i].agent && a->nodes[i].up)
            seen(ctx, a->nodes[i].name, a->nodes[i].last_seen_ms);
    pthread_mutex_unlock(&a->lock);
}

bool gp_agents_has_agent(gp_agents *a, const char *node)
{
    pthread_mutex_lock(&a->lock);
    gp__agent_node *n = node_find(a, node);
    bool agent = n && n->agent;
    pthread_mutex_unlock(&a->lock);
    return agent;
}

json_t *gp_agents_view(gp_agents *a, const char *node)
{
    json_t *v = NULL;
    pthread_mutex_lock(&a->lock);
    gp__agent_node *n = node_find(a, node);
    if (n && n->agent)
        v = json_pack("{s:I, s:O, s:O}", "last_seen", (json_int_t)(n->last_seen_ms / 1000), "running",
                      n->running ? n->running : json_null(), "gpus", n->gpus ? n->gpus : json_null());
    pthread_mutex_unlock(&a->lock);
    return v;
}

json_t *gp_agents_specs(gp_agents *a, const char *node)
{
    pthread_mutex_lock(&a->lock);
    gp__agent_node *n = node_find(a, node);
    json_t *specs = n && n->specs ? json_incref(n->specs) : json_object();
    pthread_mutex_unlock(&a->lock);
    return specs;
}

void gp_agents_specs_keep(gp_agents *a, const char *node, json_t *specs)
{
    pthread_mutex_lock(&a->lock);
    gp__agent_node *n = node_find(a, node);
    json_t *old = n ? n->specs : specs;
    if (n)
        n->specs = specs;
    pthread_mutex_unlock(&a->lock);
    json_decref(old);
}

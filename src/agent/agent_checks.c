/* agent_checks.c - a node's GPU health at work: the backend's events
 * classified (xid.h), periodic checks, operator diagnostics and the repair
 * command run as children of the agent, and the reports they make
 * (agent_health.h has the state machine, docs/agent.md the options).
 *
 * A diagnostic or repair is `/bin/sh -c CMD` in its own process group
 * with CUDA_VISIBLE_DEVICES=<GPU UUID>, GPUPOOL_GPU_INDEX, GPUPOOL_GPU_UUID
 * and GPUPOOL_NODE in its environment, its output in
 * STATE/NODE/health/gpu<N>-<NAME>.log; exit 0 passes.  It never blocks the
 * loop: its pidfd wakes it, the agent reaps it and hands the status here
 * (gp_node_child_reaped); past --health-timeout its group is killed and it
 * failed.  One child per GPU at a time.
 *
 * Reports (docs/api.md): every result is a `gpu_check` {gpu, check, passed,
 * detail, at, duration_ms[, xid, action]}; every change of health a
 * `gpu_health` {gpu, healthy, why, drain_node}.
 */
#define _GNU_SOURCE
#include "agent/agent_node.h"

#include "agent/agent_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

char gp_node_child_tag;

static gp_health_policy gp__policy(const gp_node *n)
{
    const gp_agent_options *o = n->opt;
    return (gp_health_policy){.every_ms = (int64_t)o->health_every_s * 1000,
                              .repair_attempts = o->repair_attempts,
                              .has_repair = o->repair_command != NULL,
                              .n_diagnostics = o->n_diagnostics};
}

void gp_node_health_open(gp_node *n, int64_t now_ms)
{
    int64_t first = now_ms + gp_spread_ms((int64_t)n->opt->health_every_s * 1000, n->opt->seed, n->index);
    for (int g = 0; g < GP_MAX_GPUS_PER_NODE; g++) {
        gp_health_init(&n->health[g], first);
        n->checks[g] = (gp_health_child){.pidfd = -1};
    }
}

/* ---- reports ---- */

static void gp__report_check(gp_node *n, int gpu, const char *check, bool passed, const char *detail,
                             int64_t duration_ms)
{
    json_t *o = json_pack("{s:s, s:i, s:s, s:b, s:s, s:I, s:I}", "what", "gpu_check", "gpu", gpu, "check", check,
                          "passed", passed, "detail", detail, "at", (json_int_t)(gp_agent_real_ms() / 1000),
                          "duration_ms", (json_int_t)duration_ms);
    gp_node_queue_report(n, o);
}

static void gp__report_health(gp_node *n, int gpu, gp_health_report r)
{
    if (r == GP_HEALTH_REPORT_NONE)
        return;
    const gp_health_gpu *h = &n->health[gpu];
    bool healthy = r == GP_HEALTH_REPORT_HEALTHY;
    gp_node_queue_report(n, json_pack("{s:s, s:i, s:b, s:s, s:b}", "what", "gpu_health", "gpu", gpu, "healthy",
                                      healthy, "why", healthy ? "checks passed" : h->reason, "drain_node",
                                      !healthy && h->drain_node));
    gp_agent_log(n, "gpu=%d %s%s%s", gpu, healthy ? "healthy" : "unhealthy", healthy ? "" : ": ",
                 healthy ? "" : h->reason);
}

/* ---- events ---- */

static void gp__xid_event(gp_node *n, const gp_gpu_event *ev)
{
    gp_xid_action a = gp_xid_action_of(&n->opt->xid, ev->xid);
    const char *what = gp_xid_description(ev->xid);
    char detail[GP_HEALTH_REASON_MAX];
    snprintf(detail, sizeof detail, "XID %d%s%s (%s)", ev->xid, what[0] ? ": " : "", what, gp_xid_action_name(a));
    bool out = gp_xid_action_takes_gpu_out(a);
    json_t *o = json_pack("{s:s, s:i, s:s, s:b, s:s, s:I, s:i, s:s}", "what", "gpu_check", "gpu", ev->gpu, "check",
                          "xid", "passed", !out, "detail", detail, "at", (json_int_t)(ev->at_ms / 1000), "xid",
                          ev->xid, "action", gp_xid_action_name(a));
    gp_node_queue_report(n, o);
    gp_agent_log(n, "gpu=%d %s", ev->gpu, detail);
    gp_health_policy p = gp__policy(n);
    if (out)
        gp__report_health(n, ev->gpu, gp_health_fail(&n->health[ev->gpu], &p, detail, gp_xid_action_drains_node(a),
                                                     gp_agent_mono_ms()));
}

void gp_node_health_event(gp_node *n, const gp_gpu_event *ev)
{
    if (ev->gpu < 0 || ev->gpu >= n->inventory.gpu_count || ev->kind == GP_GPU_EVENT_RESET)
        return;
    if (ev->kind == GP_GPU_EVENT_XID) {
        n->last_xid[ev->gpu] = ev->xid;
        gp__xid_event(n, ev);
        return;
    }
    if (ev->kind == GP_GPU_EVENT_ECC && ev->ecc_uncorrected <= 0)
        return;
    char detail[GP_HEALTH_REASON_MAX];
    if (ev->kind == GP_GPU_EVENT_LOST)
        snprintf(detail, sizeof detail, "fell off the bus (lost)");
    else
        snprintf(detail, sizeof detail, "%lld uncorrected ECC errors", (long long)ev->ecc_uncorrected);
    gp__report_check(n, ev->gpu, n->gpu.ops->name, false, detail, 0);
    gp_health_policy p = gp__policy(n);
    gp__report_health(n, ev->gpu, gp_health_fail(&n->health[ev->gpu], &p, detail, false, gp_agent_mono_ms()));
}

/* ---- the backend's check ---- */

static void gp__backend_check(gp_node *n, int gpu, int64_t now)
{
    gp_gpu_health h;
    gp_error err;
    int64_t started = gp_agent_mono_ms();
    bool passed;
    char detail[GP_HEALTH_REASON_MAX];
    if (gp_gpu_check(&n->gpu, gpu, gp_agent_real_ms(), &h, &err) != GP_OK) {
        passed = false;
        snprintf(detail, sizeof detail, "the check could not be made: %.150s", err.message);
    } else {
        passed = h.healthy;
        snprintf(detail, sizeof detail, "%s", h.healthy ? "healthy" : h.reason);
    }
    gp__report_check(n, gpu, n->gpu.ops->name, passed, detail, gp_agent_mono_ms() - started);
    gp_health_policy p = gp__policy(n);
    gp__report_health(n, gpu, gp_health_checked(&n->health[gpu], &p, passed, detail, now));
}

/* ---- children ---- */

/* In the child: the GPU's environment, output to the log, exec. */
static _Noreturn void gp__exec_child(const gp_node *n, int gpu, const char *command, const char *log)
{
    setsid();
    char index[16];
    snprintf(index, sizeof index, "%d", gpu);
    const char *uuid = n->inventory.gpus[gpu].uuid;
    setenv("CUDA_VISIBLE_DEVICES", uuid, 1);
    setenv("GPUPOOL_GPU_INDEX", index, 1);
    setenv("GPUPOOL_GPU_UUID", uuid, 1);
    setenv("GPUPOOL_NODE", n->name, 1);
    int in = open("/dev/null", O_RDONLY);
    int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in >= 0)
        dup2(in, 0);
    if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
    }
    execl("/bin/sh", "sh", "-c", command, (char *)NULL);
    _exit(127);
}

static bool gp__start_child(gp_node *n, int gpu, bool repair, const char *name, const char *command, int64_t now)
{
    gp_health_child *c = &n->checks[gpu];
    char dir[GP_STATE_PATH_MAX];
    snprintf(dir, sizeof dir, "%s/health", n->dir);
    gp_state_mkdirs(dir, 0700, NULL);
    *c = (gp_health_child){.repair = repair, .pidfd = -1, .started_ms = now,
                           .deadline_ms = now + (int64_t)n->opt->health_timeout_s * 1000};
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->log, sizeof c->log, "%s/gpu%d-%s.log", dir, gpu, name);
    c->pid = fork();
    if (c->pid == 0)
        gp__exec_child(n, gpu, command, c->log);
    if (c->pid < 0) {
        c->pid = 0;
        gp_agent_log(n, "gpu=%d cannot start %s: %s", gpu, name, strerror(errno));
        return false;
    }
    c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
    c->watch = (gp_http_fd){.fd = c->pidfd, .tag = &gp_node_child_tag};
    gp_error err;
    if (c->pidfd >= 0 && gp_http_watch(n->http, &c->watch, &err) != GP_OK)
        gp_agent_log(n, "gpu=%d cannot watch %s: %s", gpu, name, err.message);
    gp_agent_log(n, "gpu=%d %s started pid=%d", gpu, name, (int)c->pid);
    return true;
}

/* The last line the child wrote, for the detail of a failure. */
static void gp__last_line(const char *log, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen(log, "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (line[strspn(line, " \t\r\n")])
            snprintf(out, cap, "%.*s", (int)strcspn(line, "\r\n"), line);
    if (f)
        fclose(f);
}

static void gp__child_detail(const gp_health_child *c, int status, bool *passed, char *out, size_t cap)
{
    char last[128];
    gp__last_line(c->log, last, sizeof last);
    *passed = !c->timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    int n;
    if (c->timed_out)
        n = snprintf(out, cap, "%s timed out after %d s (killed)", c->name, (int)((c->deadline_ms - c->started_ms) / 1000));
    else if (WIFEXITED(status))
        n = snprintf(out, cap, "%s exited %d", c->name, WEXITSTATUS(status));
    else
        n = snprintf(out, cap, "%s killed by signal %d", c->name, WTERMSIG(status));
    if (last[0] && n > 0 && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n, ": %s", last);
}

static void gp__child_ended(gp_node *n, int gpu, int status)
{
    gp_health_child *c = &n->checks[gpu];
    if (c->pidfd >= 0) {
        gp_http_unwatch(n->http, &c->watch);
        close(c->pidfd);
    }
    int64_t now = gp_agent_mono_ms();
    bool passed;
    char detail[GP_HEALTH_REASON_MAX];
    gp__child_detail(c, status, &passed, detail, sizeof detail);
    gp__report_check(n, gpu, c->repair ? "repair" : c->name, passed, detail, now - c->started_ms);
    gp_agent_log(n, "gpu=%d %s", gpu, detail);
    gp_health_policy p = gp__policy(n);
    gp_health_gpu *h = &n->health[gpu];
    gp_health_report r = c->repair ? gp_health_repair_done(h, &p, passed, detail, now)
                                   : gp_health_diagnostic_done(h, &p, passed, detail, now);
    *c = (gp_health_child){.pidfd = -1};
    gp__report_health(n, gpu, r);
}

bool gp_node_child_reaped(gp_node *n, pid_t pid, int status)
{
    for (int g = 0; g < n->inventory.gpu_count; g++)
        if (n->checks[g].pid == pid) {
            gp__child_ended(n, g, status);
            return true;
        }
    return false;
}

void gp_node_health_close(gp_node *n)
{
    for (int g = 0; g < n->inventory.gpu_count; g++) {
        gp_health_child *c = &n->checks[g];
        if (c->pid <= 0)
            continue;
        kill(-c->pid, SIGKILL);
        if (c->pidfd >= 0) {
            gp_http_unwatch(n->http, &c->watch);
            close(c->pidfd);
        }
        *c = (gp_health_child){.pidfd = -1};
    }
}

/* ---- the step ---- */

/* No live replica holds the GPU (a MIG replica names its GPU too). */
static bool gp__idle(const gp_node *n, int gpu)
{
    const char *uuid = n->inventory.gpus[gpu].uuid;
    for (size_t i = 0; i < n->n_replicas; i++) {
        const gp_replica *r = n->replicas[i];
        for (size_t k = 0; !r->ended && k < r->n_gpus; k++)
            if (strcmp(r->gpus[k], uuid) == 0)
                return false;
    }
    return true;
}

static void gp__step_gpu(gp_node *n, int gpu, int64_t now)
{
    gp_health_child *c = &n->checks[gpu];
    if (c->pid > 0 && !c->timed_out && now >= c->deadline_ms) {
        c->timed_out = true;
        kill(-c->pid, SIGKILL);
        kill(c->pid, SIGKILL); /* before its setsid */
        gp_agent_log(n, "gpu=%d %s timed out: killed", gpu, c->name);
    }
    gp_health_policy p = gp__policy(n);
    gp_health_gpu *h = &n->health[gpu];
    switch (gp_health_next(h, &p, gp__idle(n, gpu), c->pid > 0, now)) {
    case GP_HEALTH_DO_CHECK: gp__backend_check(n, gpu, now); break;
    case GP_HEALTH_DO_DIAGNOSTIC:
        if (!gp__start_child(n, gpu, false, n->opt->diagnostics[h->diag].name, n->opt->diagnostics[h->diag].command,
                             now))
            gp__report_health(n, gpu, gp_health_diagnostic_done(h, &p, false, "cannot start", now));
        break;
    case GP_HEALTH_DO_REPAIR:
        if (!gp__start_child(n, gpu, true, "repair", n->opt->repair_command, now))
            gp__report_health(n, gpu, gp_health_repair_done(h, &p, false, "cannot start the repair", now));
        break;
    case GP_HEALTH_DO_NOTHING: break;
    }
}

int64_t gp_node_health_step(gp_node *n, int64_t now_ms)
{
    int64_t next = now_ms + 1000; /* children's deadlines and replicas ending are looked at every second */
    for (int g = 0; g < n->inventory.gpu_count; g++) {
        gp__step_gpu(n, g, now_ms);
        const gp_health_gpu *h = &n->health[g];
        if ((h->state == GP_HEALTH_IN_SERVICE || h->state == GP_HEALTH_OUT) && h->next_ms < next)
            next = h->next_ms > now_ms ? h->next_ms : now_ms + 1;
    }
    return next;
}

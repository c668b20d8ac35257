/* agent_partition.c - the partition fence: a node cut off from gpupoold
 * stops its replicas before gpupoold counts it lost and runs them again
 * elsewhere (agent_node.h; the rule and its bound: docs/operations.md
 * "Partitions between agents and gpupoold").
 *
 * gpupoold answers register and heartbeat with its terms, fence_after_ms
 * and fence_grace_ms (half and a quarter of --node-lost-after).  Every
 * answered heartbeat or registration moves heard_ms to when that call
 * was sent: gpupoold saw the node no earlier, so its silence clock never
 * runs ahead of the node's.  Once heard_ms is fence_after_ms old
 * (gp_plan_partitioned), each live replica gets its job's stop signal and
 * a kill at now + the shorter of its job's grace and fence_grace_ms, which
 * its supervisor enforces even if this agent dies.  A job that opted out
 * ("keep_running_when_partitioned") runs on.
 *
 * Once it stopped one, the node keeps silent (no call; its poll and heartbeat cancelled) for
 * --node-lost-after (2 x fence_after_ms) and a quarter more from the
 * fence: gpupoold, which saw nothing of it since, counts it lost and
 * requeues its jobs whole, as for any longer partition.  Without that, a
 * partition a little longer than the fence would end with gpupoold
 * taking the fenced replicas' exits (code 0 for a job that ends cleanly
 * on SIGTERM) as the jobs' own: "succeeded".  Their exits then reach
 * gpupoold as a stale run's, once the node registers again.
 *
 * STATE/NODE/partition (agent_state.h) keeps the terms and the last
 * answer's time, so an agent restarted in a partition goes on counting
 * from the last answer, not from its start, and each replica's supervisor
 * applies the same rule when no agent runs (supervise.c). */
#include "agent/agent_node.h"

#include "agent/agent_plan.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

/* Kept when the terms change and then every quarter fence interval, not at
 * every heartbeat (an fsync each; an agent may run thousands of nodes): the
 * file's time may lag the last answer by that much, so a restarted agent
 * or a supervisor fences early, never late. */
static void gp__partition_store(gp_node *n, bool terms_changed)
{
    if (!terms_changed && n->heard_ms - n->heard_stored_ms < n->partition_after_ms / 4)
        return;
    n->heard_stored_ms = n->heard_ms;
    gp_partition_clock c = {.after_ms = n->partition_after_ms, .grace_ms = n->partition_grace_ms,
                            .heard_boot_ms = gp_agent_boot_ms() - (gp_agent_mono_ms() - n->heard_ms)};
    gp_error err;
    if (gp_state_partition_store(n->dir, &c, &err) != GP_OK)
        gp_agent_log(n, "cannot keep the partition fence's clock: %s", err.message);
}

void gp_node_partition_open(gp_node *n)
{
    gp_partition_clock c;
    if (!gp_state_partition_load(n->dir, &c))
        return; /* no terms yet: no fence until gpupoold gives them */
    int64_t silent = gp_agent_boot_ms() - c.heard_boot_ms;
    n->partition_after_ms = c.after_ms;
    n->partition_grace_ms = c.grace_ms;
    n->heard_ms = gp_agent_mono_ms() - (silent > 0 ? silent : 0); /* an earlier boot's: from now (none survived) */
    n->heard_stored_ms = n->heard_ms;
}

void gp_node_partition_terms(gp_node *n, const json_t *answer)
{
    json_int_t after = json_integer_value(json_object_get(answer, "fence_after_ms"));
    json_int_t grace = json_integer_value(json_object_get(answer, "fence_grace_ms"));
    if (after < 0 || grace < 0 || grace > after) /* not gpupoold's: keep the ones we have */
        return;
    if (after == n->partition_after_ms && grace == n->partition_grace_ms)
        return;
    gp_agent_log(n, "partition fence: replicas stop after %lld ms without an answer, killed %lld ms later%s",
                 (long long)after, (long long)grace, after ? "" : " (off: gpupoold gives no terms)");
    int64_t beat_ms = (int64_t)(n->heartbeat_s > 0 ? n->heartbeat_s : 15) * 1000;
    if (after > 0 && 2 * beat_ms > after)
        gp_agent_log(n, "WARNING: heartbeat every %lld ms, fewer than two per fence interval: replicas may be"
                     " stopped between heartbeats (--heartbeat-s)",
                     (long long)beat_ms);
    n->partition_after_ms = after;
    n->partition_grace_ms = grace;
    n->terms_unstored = true;
}

void gp_node_partition_heard(gp_node *n, int64_t sent_ms)
{
    if (sent_ms <= n->heard_ms)
        return;
    n->heard_ms = sent_ms;
    if (n->partitioned)
        gp_agent_log(n, "partition fence: gpupoold answers again; the stopped replicas' exits go to it");
    n->partitioned = false;
    n->silent_until_ms = 0;
    gp__partition_store(n, n->terms_unstored);
    n->terms_unstored = false;
}

/* A run its supervisor fenced (DIR/fenced) whose exit gpupoold has not
 * had: its exit must not reach gpupoold as the job's own either. */
static bool gp__fenced_by_supervisor(const gp_replica *r)
{
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/fenced", r->dir);
    return !r->exit_acked && access(path, F_OK) == 0;
}

/* Stops r for the fence, when the fence has something to do with it:
 * true when it did, or its supervisor did. */
static bool gp__fence_replica(gp_node *n, gp_replica *r, int64_t silent_ms)
{
    if (r->ended)
        return gp__fenced_by_supervisor(r);
    gp_plan_have h = {.job = r->job, .replica = r->replica, .bind_time = r->bind_time, .ended = r->ended,
                      .stop_deadline = r->stop_deadline};
    int64_t now = gp_agent_real_ms();
    int64_t deadline = gp_plan_fence_deadline(&h, r->keep_when_partitioned, r->grace_ms, n->partition_grace_ms, now);
    if (deadline == GP_PLAN_NO_DEADLINE)
        return false;
    r->stop_cause = GP_STOP_REQUESTED;
    gp_replica_stop_within(n, r, deadline <= now ? SIGKILL : r->stop_signal, deadline > now ? deadline - now : 0,
                           r->stop_cause);
    r->stop_deadline = deadline;
    gp_agent_log(n, "job=%llu replica=%u stopping reason=partitioned kill_deadline_ms=%lld: no answer from gpupoold"
                 " for %lld ms",
                 (unsigned long long)r->job, r->replica, (long long)deadline, (long long)silent_ms);
    return true;
}

/* The first replica stopped in this partition: the node keeps silent until
 * gpupoold has counted it lost (above). */
static void gp__keep_silent(gp_node *n, int64_t now)
{
    int64_t quiet = 2 * n->partition_after_ms + n->partition_grace_ms;
    n->silent_until_ms = now + quiet;
    gp_http_call_cancel(n->http, &n->poll); /* the others end by their timeouts: their callbacks keep */
    gp_http_call_cancel(n->http, &n->heartbeat); /* what they carried (reports, log bytes) */
    gp_agent_log(n, "partition fence: silent for %lld ms, until gpupoold counts the node lost", (long long)quiet);
}

int64_t gp_node_partition_step(gp_node *n, int64_t now)
{
    if (n->partition_after_ms <= 0)
        return INT64_MAX;
    if (!gp_plan_partitioned(n->partition_after_ms, n->heard_ms, now))
        return n->heard_ms + n->partition_after_ms + 1;
    if (!n->partitioned) {
        gp_agent_log(n, "partition fence: no answer from gpupoold for %lld ms: stopping the replicas of jobs that"
                     " did not opt out",
                     (long long)(now - n->heard_ms));
        n->partitioned = true;
    }
    bool stopped = false;
    for (size_t i = 0; i < n->n_replicas; i++)
        stopped |= gp__fence_replica(n, n->replicas[i], now - n->heard_ms);
    if (stopped && n->silent_until_ms == 0)
        gp__keep_silent(n, now);
    return now + 1000; /* while cut off, look again each second */
}

bool gp_node_partition_silent(const gp_node *n, int64_t now)
{
    return now < n->silent_until_ms;
}

void gp_replica_partition_terms(gp_replica *r, const gp_assignment *a)
{
    r->keep_when_partitioned = a->keep_running_when_partitioned;
    r->stop_signal = gp_stop_signal_number(a->stop_signal);
    r->grace_ms = a->has_checkpoint_grace ? a->checkpoint_grace_s * 1000 : -1;
}

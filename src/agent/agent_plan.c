/* agent_plan.c - the reconcile plan and the back-off (agent_plan.h). */
#include "agent/agent_plan.h"

#include <string.h>

bool gp_plan_same_run(const gp_plan_want *w, const gp_plan_have *h)
{
    return w->job == h->job && w->replica == h->replica && w->bind_time == h->bind_time;
}

bool gp_plan_gpus_clash(const gp_plan_gpu *a, const gp_plan_gpu *b)
{
    if (strcmp(a->uuid, b->uuid) != 0)
        return false;
    if (a->share == GP_PLAN_WHOLE_GPU || b->share == GP_PLAN_WHOLE_GPU)
        return true;
    return a->share >= 0 && a->share == b->share; /* one MIG instance */
}

static bool gp__shares_gpu(const gp_plan_want *w, const gp_plan_have *h)
{
    for (size_t i = 0; i < w->n_gpus; i++)
        for (size_t j = 0; j < h->n_gpus; j++)
            if (gp_plan_gpus_clash(&w->gpus[i], &h->gpus[j]))
                return true;
    return false;
}

/* The want naming have h, or n_want. */
static size_t gp__want_of(const gp_plan_want *want, size_t n_want, const gp_plan_have *h)
{
    for (size_t i = 0; i < n_want; i++)
        if (gp_plan_same_run(&want[i], h))
            return i;
    return n_want;
}

/* A want not yet run may start when no live replica holds one of its GPUs. */
static bool gp__may_start(const gp_plan_want *w, const gp_plan_have *have, size_t n_have)
{
    for (size_t j = 0; j < n_have; j++) {
        if (gp_plan_same_run(w, &have[j]))
            return false; /* running, or ended: never twice */
        if (!have[j].ended && gp__shares_gpu(w, &have[j]))
            return false;
    }
    return true;
}

static size_t gp__push(gp_plan_step *steps, size_t n, size_t cap, gp_plan_kind kind, size_t want, size_t have)
{
    if (n < cap)
        steps[n++] = (gp_plan_step){.kind = kind, .want = want, .have = have};
    return n;
}

bool gp_plan_checkpoint_ends_grace(const gp_plan_have *h, bool applied)
{
    return applied && !h->ended && h->stop_deadline != GP_PLAN_NO_DEADLINE && h->stop_deadline != GP_PLAN_KILLED;
}

size_t gp_plan_reconcile(const gp_plan_want *want, size_t n_want, const gp_plan_have *have, size_t n_have,
                         gp_plan_step *steps, size_t cap)
{
    size_t n = 0;
    for (size_t j = 0; j < n_have; j++) {
        const gp_plan_have *h = &have[j];
        if (h->ended)
            continue;
        size_t w = gp__want_of(want, n_want, h);
        if (w == n_want && h->stop_deadline != GP_PLAN_KILLED)
            n = gp__push(steps, n, cap, GP_PLAN_KILL, 0, j);
        else if (w < n_want && want[w].stop && h->stop_deadline != want[w].kill_deadline &&
                 h->stop_deadline != GP_PLAN_KILLED)
            n = gp__push(steps, n, cap, GP_PLAN_STOP, w, j);
    }
    for (size_t i = 0; i < n_want; i++)
        if (!want[i].stop && gp__may_start(&want[i], have, n_have))
            n = gp__push(steps, n, cap, GP_PLAN_START, i, 0);
    return n;
}

bool gp_plan_partitioned(int64_t after_ms, int64_t heard_ms, int64_t now_ms)
{
    return after_ms > 0 && now_ms - heard_ms > after_ms;
}

int64_t gp_plan_fence_deadline(const gp_plan_have *h, bool keep, int64_t job_grace_ms, int64_t fence_grace_ms,
                               int64_t now_real_ms)
{
    if (h->ended || keep || h->stop_deadline == GP_PLAN_KILLED)
        return GP_PLAN_NO_DEADLINE;
    int64_t grace = job_grace_ms >= 0 && job_grace_ms < fence_grace_ms ? job_grace_ms : fence_grace_ms;
    int64_t deadline = now_real_ms + grace;
    if (h->stop_deadline != GP_PLAN_NO_DEADLINE && h->stop_deadline <= deadline)
        return GP_PLAN_NO_DEADLINE;
    return deadline;
}

/* splitmix64: a well-mixed 64-bit value from any input. */
static uint64_t gp__mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

int64_t gp_spread_ms(int64_t period_ms, uint64_t seed, uint64_t salt)
{
    return (int64_t)(gp__mix(seed ^ gp__mix(salt)) % (uint64_t)period_ms);
}

int64_t gp_backoff_ms(unsigned failures, int64_t cap_ms, uint64_t seed, uint64_t salt)
{
    int64_t max = cap_ms > 0 && cap_ms < GP_BACKOFF_MAX_MS ? cap_ms : GP_BACKOFF_MAX_MS;
    int64_t base = GP_BACKOFF_FIRST_MS < max ? GP_BACKOFF_FIRST_MS : max;
    for (unsigned i = 1; i < failures && base < max; i++)
        base *= 2;
    if (base > max)
        base = max;
    uint64_t r = gp__mix(seed ^ gp__mix(salt ^ gp__mix(failures)));
    int64_t permille = 800 + (int64_t)(r % 400); /* [0.8, 1.2) */
    return base * permille / 1000;
}

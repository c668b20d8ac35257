/* restart.c - restart_policy: what a failed replica does to its job.
 *
 * A job whose replica fails while it runs (exit code != 0, a signal, oom:
 * the node agent's report, eventlog/exits.c) fails whole -- unless its
 * restart_policy is on-failure and it has restarts left: then it is
 * requeued whole (the gang together, the same id), and it is not placed
 * again before a back-off: 10 s after its first failure, doubling with
 * each one (10, 20, 40, ...), at most 5 minutes.  Its restart count
 * (GPUPOOL_RESTART_COUNT, with its preemptions) goes up by one.  The
 * policy defaults by kind: on-failure (3 restarts) for inference
 * services, never for training and interactive jobs, whose failure is
 * usually their code's and should be seen.  Time is an argument: the
 * engine's `now` at the failure.
 *
 * Example: an inference job, on-failure with max_restarts 2, bound at
 * t=0.  t=100: a replica exits 1 -> pending, "requeued: a replica failed;
 * restart 1 of 2, eligible again at t=110"; the passes before t=110 skip
 * it (wait `backoff`); t=110 it binds again.  t=200: it fails again ->
 * restart 2 of 2, eligible at t=220.  t=300: a third failure -> failed
 * ("failed; no restarts left (2 of 2 used)").  A training job with the
 * default policy fails at its first failure.
 */
#include "core/internal.h"

enum { DEFAULT_MAX_RESTARTS = 3, BACKOFF_FIRST_S = 10, BACKOFF_MAX_S = 300 };

gp_err gp__restart_resolve(const gp_job_spec *s, gp_restart_policy *policy, int *max_restarts, gp_error *err)
{
    if ((int)s->restart_policy < GP_RESTART_DEFAULT || s->restart_policy > GP_RESTART_ON_FAILURE)
        return gp_error_set(err, GP_ERR_INVALID, "restart_policy", "restart_policy must be never or on-failure");
    if (s->max_restarts < 0 || s->max_restarts > GP_MAX_RESTARTS_MAX)
        return gp_error_set(err, GP_ERR_INVALID, "max_restarts", "max_restarts must be 1..%d",
                            GP_MAX_RESTARTS_MAX);
    *policy = s->restart_policy;
    if (*policy == GP_RESTART_DEFAULT)
        *policy = s->kind == GP_KIND_INFERENCE ? GP_RESTART_ON_FAILURE : GP_RESTART_NEVER;
    if (*policy == GP_RESTART_NEVER && s->max_restarts > 0)
        return gp_error_set(err, GP_ERR_INVALID, "max_restarts",
                            "max_restarts needs restart_policy on-failure (a %s job defaults to never)",
                            gp_job_kind_name(s->kind));
    *max_restarts = *policy == GP_RESTART_NEVER ? 0 : s->max_restarts > 0 ? s->max_restarts : DEFAULT_MAX_RESTARTS;
    return GP_OK;
}

bool gp__restart_wanted(const gp__job *j)
{
    return j->restart == GP_RESTART_ON_FAILURE && j->restarts < j->max_restarts;
}

int64_t gp__restart_backoff(int n)
{
    int64_t s = BACKOFF_FIRST_S;
    for (int i = 1; i < n && s < BACKOFF_MAX_S; i++)
        s *= 2;
    return s < BACKOFF_MAX_S ? s : BACKOFF_MAX_S;
}

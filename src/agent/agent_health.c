/* agent_health.c - one GPU's health state machine (agent_health.h). */
#include "agent/agent_health.h"

#include <stdio.h>
#include <string.h>

void gp_health_init(gp_health_gpu *h, int64_t first_check_ms)
{
    memset(h, 0, sizeof *h);
    h->next_ms = first_check_ms;
}

int64_t gp_health_backoff_ms(int attempts, int64_t every_ms)
{
    int64_t wait = GP_HEALTH_BACKOFF_FIRST_MS;
    for (int i = 1; i < attempts && wait < every_ms; i++)
        wait *= 2;
    return wait < every_ms ? wait : every_ms;
}

static void gp__set_reason(gp_health_gpu *h, const char *reason)
{
    snprintf(h->reason, sizeof h->reason, "%s", reason && reason[0] ? reason : "failed");
}

static void gp__go_out(gp_health_gpu *h, const gp_health_policy *p, const char *reason, bool drain_node, int64_t now)
{
    h->state = GP_HEALTH_OUT;
    h->attempts = 0;
    h->drain_node = drain_node;
    h->round = false;
    gp__set_reason(h, reason);
    h->next_ms = now + (p->has_repair ? 0 : p->every_ms);
}

/* A repair or re-validation failed: out again after a back-off, or out
 * for good after the last attempt. */
static gp_health_report gp__attempt_failed(gp_health_gpu *h, const gp_health_policy *p, const char *detail,
                                           int64_t now)
{
    h->attempts++;
    if (h->attempts >= p->repair_attempts) {
        char why[GP_HEALTH_REASON_MAX];
        snprintf(why, sizeof why, "%.120s; repair failed %d time%s: an operator is needed", detail && detail[0] ? detail : h->reason,
                 h->attempts, h->attempts == 1 ? "" : "s");
        gp__set_reason(h, why);
        h->state = GP_HEALTH_OPERATOR;
        return GP_HEALTH_REPORT_UNHEALTHY;
    }
    h->state = GP_HEALTH_OUT;
    h->next_ms = now + gp_health_backoff_ms(h->attempts, p->every_ms);
    return GP_HEALTH_REPORT_NONE;
}

gp_health_report gp_health_fail(gp_health_gpu *h, const gp_health_policy *p, const char *reason, bool drain_node,
                                int64_t now)
{
    switch (h->state) {
    case GP_HEALTH_IN_SERVICE: gp__go_out(h, p, reason, drain_node, now); return GP_HEALTH_REPORT_UNHEALTHY;
    case GP_HEALTH_VALIDATING: {
        gp_health_report r = gp__attempt_failed(h, p, reason, now);
        if (drain_node && !h->drain_node) {
            h->drain_node = true;
            r = GP_HEALTH_REPORT_UNHEALTHY;
        }
        return r;
    }
    default:
        if (drain_node && !h->drain_node) {
            h->drain_node = true;
            return GP_HEALTH_REPORT_UNHEALTHY;
        }
        return GP_HEALTH_REPORT_NONE;
    }
}

static gp_health_do gp__in_service_next(gp_health_gpu *h, const gp_health_policy *p, bool idle, int64_t now)
{
    if (now >= h->next_ms)
        return GP_HEALTH_DO_CHECK;
    if (h->round && (!idle || h->diag >= p->n_diagnostics))
        h->round = false; /* a busy GPU skips this period's diagnostics */
    return h->round ? GP_HEALTH_DO_DIAGNOSTIC : GP_HEALTH_DO_NOTHING;
}

gp_health_do gp_health_next(gp_health_gpu *h, const gp_health_policy *p, bool idle, bool busy_child, int64_t now)
{
    if (busy_child)
        return GP_HEALTH_DO_NOTHING;
    switch (h->state) {
    case GP_HEALTH_IN_SERVICE: return gp__in_service_next(h, p, idle, now);
    case GP_HEALTH_OUT:
        if (now < h->next_ms || !idle)
            return GP_HEALTH_DO_NOTHING;
        h->backend_checked = false;
        h->diag = 0;
        h->state = p->has_repair ? GP_HEALTH_REPAIRING : GP_HEALTH_VALIDATING;
        return p->has_repair ? GP_HEALTH_DO_REPAIR : GP_HEALTH_DO_CHECK;
    case GP_HEALTH_VALIDATING:
        if (!h->backend_checked)
            return GP_HEALTH_DO_CHECK;
        return h->diag < p->n_diagnostics && idle ? GP_HEALTH_DO_DIAGNOSTIC : GP_HEALTH_DO_NOTHING;
    default: return GP_HEALTH_DO_NOTHING;
    }
}

/* VALIDATING after one more passed step: back in service when all passed. */
static gp_health_report gp__validated_step(gp_health_gpu *h, const gp_health_policy *p, int64_t now)
{
    if (h->diag < p->n_diagnostics)
        return GP_HEALTH_REPORT_NONE;
    h->state = GP_HEALTH_IN_SERVICE;
    h->reason[0] = '\0';
    h->drain_node = false;
    h->attempts = 0;
    h->round = false;
    h->announced = true;
    h->next_ms = now + p->every_ms;
    return GP_HEALTH_REPORT_HEALTHY;
}

gp_health_report gp_health_checked(gp_health_gpu *h, const gp_health_policy *p, bool passed, const char *detail,
                                   int64_t now)
{
    if (h->state == GP_HEALTH_VALIDATING) {
        if (!passed)
            return gp__attempt_failed(h, p, detail, now);
        h->backend_checked = true;
        return gp__validated_step(h, p, now);
    }
    if (h->state != GP_HEALTH_IN_SERVICE)
        return GP_HEALTH_REPORT_NONE;
    h->next_ms = now + p->every_ms;
    if (!passed)
        return gp_health_fail(h, p, detail, false, now);
    h->round = p->n_diagnostics > 0;
    h->diag = 0;
    if (h->announced)
        return GP_HEALTH_REPORT_NONE;
    h->announced = true;
    return GP_HEALTH_REPORT_HEALTHY;
}

gp_health_report gp_health_diagnostic_done(gp_health_gpu *h, const gp_health_policy *p, bool passed,
                                           const char *detail, int64_t now)
{
    if (h->state == GP_HEALTH_VALIDATING) {
        if (!passed)
            return gp__attempt_failed(h, p, detail, now);
        h->diag++;
        return gp__validated_step(h, p, now);
    }
    if (h->state != GP_HEALTH_IN_SERVICE || !h->round)
        return GP_HEALTH_REPORT_NONE;
    if (!passed)
        return gp_health_fail(h, p, detail, false, now);
    h->diag++;
    return GP_HEALTH_REPORT_NONE;
}

gp_health_report gp_health_repair_done(gp_health_gpu *h, const gp_health_policy *p, bool passed, const char *detail,
                                       int64_t now)
{
    if (h->state != GP_HEALTH_REPAIRING)
        return GP_HEALTH_REPORT_NONE;
    if (!passed)
        return gp__attempt_failed(h, p, detail, now);
    h->state = GP_HEALTH_VALIDATING;
    h->backend_checked = false;
    h->diag = 0;
    return GP_HEALTH_REPORT_NONE;
}

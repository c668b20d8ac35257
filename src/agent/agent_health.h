/* agent_health.h - one GPU's health as the agent keeps it: in service,
 * out (waiting for its repair), repairing, re-validating, or out for good
 * (an operator is needed).  Pure: no I/O, no clock (times are arguments);
 * the node (agent_checks.c) runs the checks and commands it asks for and
 * sends the reports it says to.
 *
 *   IN_SERVICE --XID reset_gpu/reboot_node/drain, uncorrected ECC, lost,
 *                a failed periodic check--> OUT (report unhealthy)
 *   OUT --due, and no replica holds the GPU--> REPAIRING (--repair-command)
 *       or, without a repair command, straight to VALIDATING one health
 *       period later (the check may find it mended; nothing else will)
 *   REPAIRING --exit 0--> VALIDATING; else a failed attempt
 *   VALIDATING: the backend check, then every diagnostic in turn; all
 *       pass --> IN_SERVICE (report healthy); one fails: a failed attempt
 *   a failed attempt: OUT again after a back-off (5 s doubling, at most the
 *       health period); the repair_attempts-th --> OPERATOR (report
 *       unhealthy "... an operator is needed"), where it stays until the
 *       agent restarts (a restarted agent checks every GPU anew)
 *
 * Periodic checks (IN_SERVICE, every every_ms): the backend check; then,
 * only while no replica holds the GPU, each diagnostic in turn (a busy GPU
 * skips this round's diagnostics).  The first passing check after the
 * agent started reports the GPU healthy once (so a GPU an earlier run left
 * out returns when it passes).
 *
 * Example (--repair-command set, --repair-attempts 3, period 300 s): XID 79
 * at t=10 s on GPU 2 running job 7 -> OUT, report unhealthy; gpupoold
 * requeues job 7, its replica ends at t=12 s -> REPAIRING; the command
 * exits 0 at t=20 s -> VALIDATING: the backend check passes, `dcgmi diag -r
 * 1` passes at t=80 s -> IN_SERVICE, report healthy.  Had the diagnostic
 * failed: OUT, repair again at t=85 s, then t=95 s; a third failure ->
 * OPERATOR.
 *
 * Ownership: plain values the node owns, one per GPU.
 */
#ifndef GP_AGENT_HEALTH_H
#define GP_AGENT_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#define GP_HEALTH_BACKOFF_FIRST_MS 5000
#define GP_HEALTH_REASON_MAX 200

typedef enum gp_health_state {
    GP_HEALTH_IN_SERVICE = 0,
    GP_HEALTH_OUT,
    GP_HEALTH_REPAIRING,
    GP_HEALTH_VALIDATING,
    GP_HEALTH_OPERATOR,
} gp_health_state;

typedef struct gp_health_policy {
    int64_t every_ms;        /* the health period (> 0) */
    int repair_attempts;     /* failed repairs (or re-validations) before OPERATOR (>= 1) */
    bool has_repair;         /* a repair command is configured */
    int n_diagnostics;       /* operator diagnostics, run in order */
} gp_health_policy;

typedef struct gp_health_gpu {
    gp_health_state state;
    char reason[GP_HEALTH_REASON_MAX]; /* why it is out ("" in service) */
    bool drain_node;         /* the failure asks for the node to be drained */
    int attempts;            /* failed repairs since it went out */
    int64_t next_ms;         /* IN_SERVICE: the next periodic check; OUT: the next repair */
    bool round;              /* IN_SERVICE: this period's diagnostics are due */
    bool backend_checked;    /* VALIDATING: the backend check passed */
    int diag;                /* the next diagnostic of the round or the validation */
    bool announced;          /* reported healthy since the agent started */
} gp_health_gpu;

/* What the node must do for the GPU now. */
typedef enum gp_health_do {
    GP_HEALTH_DO_NOTHING = 0,
    GP_HEALTH_DO_CHECK,      /* the backend check, then gp_health_checked */
    GP_HEALTH_DO_DIAGNOSTIC, /* start diagnostic h->diag, then gp_health_diagnostic_done */
    GP_HEALTH_DO_REPAIR,     /* start the repair command, then gp_health_repair_done */
} gp_health_do;

/* What the node must report after a change. */
typedef enum gp_health_report {
    GP_HEALTH_REPORT_NONE = 0,
    GP_HEALTH_REPORT_HEALTHY,
    GP_HEALTH_REPORT_UNHEALTHY,
} gp_health_report;

/* In service, its first check at first_check_ms. */
void gp_health_init(gp_health_gpu *h, int64_t first_check_ms);

/* Something says the GPU is bad (reason: what).  In service: out (report
 * unhealthy).  Already out: a drain asked for the first time reports
 * unhealthy again (with the drain); VALIDATING ends as a failed attempt. */
gp_health_report gp_health_fail(gp_health_gpu *h, const gp_health_policy *p, const char *reason, bool drain_node,
                                int64_t now);

/* The next thing to do (may move OUT to REPAIRING or VALIDATING).  idle:
 * no replica holds the GPU; busy_child: a check or command of this GPU
 * still runs. */
gp_health_do gp_health_next(gp_health_gpu *h, const gp_health_policy *p, bool idle, bool busy_child, int64_t now);

/* Results of what gp_health_next asked for (detail: why it failed). */
gp_health_report gp_health_checked(gp_health_gpu *h, const gp_health_policy *p, bool passed, const char *detail,
                                   int64_t now);
gp_health_report gp_health_diagnostic_done(gp_health_gpu *h, const gp_health_policy *p, bool passed,
                                           const char *detail, int64_t now);
gp_health_report gp_health_repair_done(gp_health_gpu *h, const gp_health_policy *p, bool passed, const char *detail,
                                       int64_t now);

/* The wait after the attempts-th failed repair (>= 1). */
int64_t gp_health_backoff_ms(int attempts, int64_t every_ms);

#endif

/* names.c - the engine's table of enum names: the one place where a job
 * state, class, topology, isolation, job kind, decision kind, wait code,
 * GPU sharing mode, pool score, tenant trust, nodes policy, restart policy or stop signal
 * gets its name (topology, isolation and stop signal names are util's
 * tables, shape_names.h and stop_signal.h, shared with metering and the CLI).  Callers
 * outside core (server, spec codec, config files, CLI output, simulator)
 * print and parse with these names, both ways; an out-of-range value reads
 * "unknown".
 *
 * Example: gp_isolation_name(GP_ISO_MPS) is "mps";
 *          gp_enum_value(GP_ENUM_SCORE, "fgd", &v) sets v = GP_SCORE_FGD;
 *          gp_enum_list(GP_ENUM_TRUST, ...) writes "inherit, trusted, untrusted";
 *          gp_job_state_name(99) is "unknown".
 */
#include "core/booking.h"
#include "core/types.h"
#include "util/shape_names.h"

#include <stdio.h>
#include <string.h>

static const char *const JOB_STATES[] = {"pending",   "admitted", "running",  "preempting",
                                         "succeeded", "failed",   "cancelled"};
static const char *const CLASSES[] = {"none", "guaranteed", "burstable"};
static const char *const JOB_KINDS[] = {"training", "inference", "interactive"};
static const char *const DECISION_KINDS[] = {"transition", "bind",       "preempt",     "stop",
                                             "drained",    "usage_open", "usage_close", "reconfigure", "booking"};
static const char *const SHARINGS[] = {"exclusive", "mig", "mps", "timeslice"};
static const char *const SCORES[] = {"default", "bestfit", "fgd", "random", "dotprod", "clustering", "packing", "spread"};
static const char *const TRUSTS[] = {"inherit", "trusted", "untrusted"};
static const char *const NODES_POLICIES[] = {"inherit", "shared", "dedicated"};
static const char *const CANCEL_POLICIES[] = {"inherit", "own", "tenant"};
static const char *const BOOKING_POLICIES[] = {"inherit", "admins", "members"};
static const char *const RESTART_POLICIES[] = {"default", "never", "on-failure"};
_Static_assert(GP_TOPO_NVLINK + 1 == GP_TOPOLOGY_NAMES, "a name for each topology (util/shape_names.c)");
_Static_assert(GP_ISO_TIMESLICE + 1 == GP_ISOLATION_NAMES, "a name for each isolation (util/shape_names.c)");

#define GP__TABLE(t) {t, (int)(sizeof t / sizeof *t)}

static const struct {
    const char *const *names;
    int n;
} TABLES[GP_ENUM_COUNT] = {
    [GP_ENUM_JOB_STATE] = GP__TABLE(JOB_STATES),   [GP_ENUM_CLASS] = GP__TABLE(CLASSES),
    [GP_ENUM_TOPOLOGY] = {gp_topology_names, GP_TOPOLOGY_NAMES},    [GP_ENUM_ISOLATION] = {gp_isolation_names, GP_ISOLATION_NAMES},
    [GP_ENUM_JOB_KIND] = GP__TABLE(JOB_KINDS),     [GP_ENUM_DECISION_KIND] = GP__TABLE(DECISION_KINDS),
    [GP_ENUM_SHARING] = GP__TABLE(SHARINGS),       [GP_ENUM_SCORE] = GP__TABLE(SCORES),
    [GP_ENUM_TRUST] = GP__TABLE(TRUSTS),           [GP_ENUM_RESTART_POLICY] = GP__TABLE(RESTART_POLICIES),
    [GP_ENUM_STOP_SIGNAL] = {gp_stop_signal_names, GP_STOP_SIGNALS},
    [GP_ENUM_NODES] = GP__TABLE(NODES_POLICIES),
    [GP_ENUM_CANCEL] = GP__TABLE(CANCEL_POLICIES),
    [GP_ENUM_BOOKING] = GP__TABLE(BOOKING_POLICIES),
};

int gp_enum_count(gp_enum which)
{
    return (unsigned)which < GP_ENUM_COUNT ? TABLES[which].n : 0;
}

const char *gp_enum_name(gp_enum which, int value)
{
    return value >= 0 && value < gp_enum_count(which) ? TABLES[which].names[value] : "unknown";
}

bool gp_enum_value(gp_enum which, const char *name, int *value)
{
    for (int i = 0; name && i < gp_enum_count(which); i++)
        if (strcmp(name, TABLES[which].names[i]) == 0) {
            *value = i;
            return true;
        }
    return false;
}

void gp_enum_list(gp_enum which, char *out, size_t cap)
{
    size_t used = 0;
    if (cap)
        out[0] = '\0';
    for (int i = 0; i < gp_enum_count(which) && used < cap; i++) {
        int w = snprintf(out + used, cap - used, "%s%s", i ? ", " : "", TABLES[which].names[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

const char *gp_job_state_name(gp_job_state s)
{
    return gp_enum_name(GP_ENUM_JOB_STATE, (int)s);
}

const char *gp_class_name(gp_class c)
{
    return gp_enum_name(GP_ENUM_CLASS, (int)c);
}

const char *gp_topology_name(gp_topology t)
{
    return gp_enum_name(GP_ENUM_TOPOLOGY, (int)t);
}

const char *gp_isolation_name(gp_isolation i)
{
    return gp_enum_name(GP_ENUM_ISOLATION, (int)i);
}

const char *gp_job_kind_name(gp_job_kind k)
{
    return gp_enum_name(GP_ENUM_JOB_KIND, (int)k);
}

const char *gp_decision_kind_name(gp_decision_kind k)
{
    return gp_enum_name(GP_ENUM_DECISION_KIND, (int)k);
}

const char *gp_sharing_name(gp_sharing s)
{
    return gp_enum_name(GP_ENUM_SHARING, (int)s);
}

const char *gp_score_name(gp_score s)
{
    return gp_enum_name(GP_ENUM_SCORE, (int)s);
}

const char *gp_trust_name(gp_trust t)
{
    return gp_enum_name(GP_ENUM_TRUST, (int)t);
}

const char *gp_nodes_policy_name(gp_nodes_policy p)
{
    return gp_enum_name(GP_ENUM_NODES, (int)p);
}

const char *gp_restart_policy_name(gp_restart_policy p)
{
    return gp_enum_name(GP_ENUM_RESTART_POLICY, (int)p);
}

const char *gp_wait_code_name(gp_wait_code c)
{
    static const char *const names[] = {"none",        "new",      "limit",   "user_limit",  "no_gpu_type",
                                        "topology",    "capacity", "lending", "reservation", "reserved",
                                        "reclaim",     "node_shape", "trust", "sharing_mode", "backoff",
                                        "dedicated",   "held",        "booking"};
    return (unsigned)c < sizeof names / sizeof *names ? names[c] : "unknown";
}

static const char *const RECURRENCES[] = {"none", "daily", "weekdays", "weekly"};
static const char *const BOOKING_STATES[] = {"planned", "clearing",  "active",  "released_no_show",
                                             "ended",   "cancelled", "refused"};

const char *gp_recurrence_name(gp_recurrence r)
{
    return (unsigned)r < sizeof RECURRENCES / sizeof *RECURRENCES ? RECURRENCES[r] : "unknown";
}

bool gp_recurrence_value(const char *name, gp_recurrence *out)
{
    for (size_t i = 0; name && i < sizeof RECURRENCES / sizeof *RECURRENCES; i++)
        if (strcmp(name, RECURRENCES[i]) == 0) {
            *out = (gp_recurrence)i;
            return true;
        }
    return false;
}

const char *gp_booking_state_name(gp_booking_state s)
{
    return (unsigned)s < sizeof BOOKING_STATES / sizeof *BOOKING_STATES ? BOOKING_STATES[s] : "unknown";
}

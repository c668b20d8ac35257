/* names.c - the engine's table of enum names: the one place where a job
 * state, class, topology, isolation, job kind, decision kind or wait code gets its
 * name.  Callers outside core (server, config, CLI, simulator) print and
 * parse with these names; an out-of-range value reads "unknown".
 *
 * Example: gp_isolation_name(GP_ISO_MPS) is "mps";
 *          gp_job_state_name(99) is "unknown".
 */
#include "core/types.h"

const char *gp_job_state_name(gp_job_state s)
{
    static const char *const names[] = {"pending", "admitted", "running", "preempting",
                                        "succeeded", "failed", "cancelled"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown";
}

const char *gp_class_name(gp_class c)
{
    static const char *const names[] = {"none", "guaranteed", "burstable"};
    return (unsigned)c < sizeof names / sizeof *names ? names[c] : "unknown";
}

const char *gp_topology_name(gp_topology t)
{
    static const char *const names[] = {"any", "block", "nvlink"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "unknown";
}

const char *gp_isolation_name(gp_isolation i)
{
    static const char *const names[] = {"exclusive", "mig", "mps", "timeslice"};
    return (unsigned)i < sizeof names / sizeof *names ? names[i] : "unknown";
}

const char *gp_job_kind_name(gp_job_kind k)
{
    static const char *const names[] = {"training", "inference", "interactive"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "unknown";
}

const char *gp_decision_kind_name(gp_decision_kind k)
{
    static const char *const names[] = {"transition", "bind",       "preempt",    "stop",
                                        "drained",    "usage_open", "usage_close", "reconfigure"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "unknown";
}

const char *gp_wait_code_name(gp_wait_code c)
{
    static const char *const names[] = {"none",        "new",      "limit",   "user_limit",  "no_gpu_type",
                                        "topology",    "capacity", "lending", "reservation", "reserved",
                                        "reclaim",     "node_shape", "trust", "sharing_mode"};
    return (unsigned)c < sizeof names / sizeof *names ? names[c] : "unknown";
}

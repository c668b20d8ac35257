/* setup.h - building one policy's engine and the report groups (private).
 *
 * Split from simulator.c so the event loop reads on its own.  gp__ names
 * are private to src/sim.
 */
#ifndef GP_SIM_SETUP_H
#define GP_SIM_SETUP_H

#include "sim/simulator.h"

/* A fresh engine with the fleet, the tenants as the policy wants them,
 * and every trace tenant present.  *tenant_of gets, per trace tenant, the
 * path jobs are submitted to (an array of n_tenants paths; caller frees). */
gp_err gp__sim_engine_new(const gp_sim_setup *setup, const gp_sim_policy *policy, const gp_sim_options *opt,
                          gp_engine **out, char (**tenant_of)[GP_PATH_MAX], gp_error *err);

/* Fill r->groups, job_group, group_guarantee_milli and every job's
 * within_guarantee (policy-independent: from the trace and tenant file). */
gp_err gp__sim_groups(const gp_sim_setup *setup, gp_sim_result *r, gp_error *err);

/* Fill r->group_entitlement (after gp__sim_groups; fairness.h defines it)
 * from the tenant file and the trace's tenants, the same for every policy:
 * read off policy_engine (gp__sim_engine_new's), or for FIFO, whose engine
 * has one tenant, off a tree built for the purpose. */
gp_err gp__sim_entitlements(const gp_sim_setup *setup, const gp_sim_policy *policy, const gp_engine *policy_engine,
                            gp_sim_result *r, gp_error *err);

#endif

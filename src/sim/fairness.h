/* fairness.h - Jain's fairness index over the backlogged teams, hour by hour.
 *
 * A diagnostic since issue 35: the targets are the share of share.h and
 * the finish-time fairness of finish_time.h.
 *
 * The question: when several teams want more than they have, does each get
 * GPUs in proportion to what it is entitled to?  For every full hour of a
 * run (hours counted from the first arrival), for every report group
 * (team, simulator.h):
 *
 *   dominant share  its GPUs in use averaged over the hour, per GPU type,
 *                   divided by the fleet's GPUs of that type; the largest
 *                   over the types (the engine's DRF measure, on GPUs only);
 *   entitlement     the fraction of the fleet hierarchical DRF gives it
 *                   while the hour's backlogged groups are the ones asking
 *                   for more, as the engine's fair share reads it
 *                   (scheduling.md, "Fair share of what is borrowed"): at
 *                   each level of its path, its weight / the weights of
 *                   it and those of its siblings that hold a backlogged
 *                   group (what an idle sibling does not ask for goes to
 *                   the others, org first), weights as the engine
 *                   defaults them (the tenant file's, else the guaranteed
 *                   GPUs, at least 1, else 1).  One scale for every group,
 *                   with or without a guarantee, so an allocation DRF
 *                   calls fair reads 1.  The static entitlement (every
 *                   sibling counted, idle or not) gives jain_static,
 *                   reported beside it: in a flat tree the two are equal
 *                   (Jain's index does not change when every x is scaled
 *                   alike); they differ where an org's other teams are
 *                   idle;
 *   backlogged      it had pending work (a job arrived and not running)
 *                   for at least half the hour (GP_SIM_BACKLOG_MIN_S): a
 *                   team that waits a few seconds for a pass is not asking
 *                   for more than it gets;
 *   x               dominant share / entitlement.
 *
 * The hour's index is Jain's over the backlogged groups' x:
 * J = (sum x)^2 / (n * sum x^2), 1 when all x are equal, 1/n when one
 * group gets everything.  Hours with fewer than 2 backlogged groups are
 * skipped (nobody to be unfair to); the report gives the mean and the
 * minimum over the measured hours, and how many were skipped.
 *
 * Worked example: 8 H100, teams a and b with a guarantee of 4 each
 * (weight 4 each: entitlement 0.5 each), both with jobs waiting all hour.
 * a holds 8 GPUs, b none: x = (1/0.5, 0/0.5) = (2, 0), J = 4 / (2 * 4) =
 * 0.5.  a and b hold 4 each: x = (1, 1), J = 1.  A third team c with
 * nothing pending is not counted, whatever it holds.  Tree example: org o
 * (weight 1) holds teams p and q (weight 1 each), org z (weight 1) holds
 * r; p and r are backlogged, q is idle: static entitlements 1/4 and 1/2,
 * among the backlogged 1/2 and 1/2 (p takes q's part of o).  p and r
 * holding half the fleet each read x = (1, 1), J = 1; judged statically,
 * x = (2, 1), J = 0.9.
 *
 * The tracker integrates lazily: a usage or pending change settles the
 * touched cell up to `now`; an hour boundary settles every cell (groups x
 * types) and computes the hour.
 *
 * Ownership: gp_sim_fairness_init allocates the tracker's arrays and
 * gp_sim_fairness_free releases them; gp_sim_fairness_take_hours hands the
 * hour list to the caller (who frees it with free()).
 */
#ifndef GP_SIM_FAIRNESS_H
#define GP_SIM_FAIRNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"
#include "util/error.h"

#define GP_SIM_FAIR_HOUR_S 3600
#define GP_SIM_BACKLOG_MIN_S 1800 /* pending at least this long in an hour: backlogged */

/* One measured or skipped hour. */
typedef struct gp_sim_fair_hour {
    int64_t start;       /* simulated time of the hour's start */
    int32_t backlogged;  /* groups backlogged in the hour */
    double jain;         /* -1: skipped (fewer than 2 backlogged groups) */
    double jain_static;  /* the same with the static entitlements; -1 when skipped */
} gp_sim_fair_hour;

/* The tenant tree above the groups, for the entitlements among the
 * backlogged: node i's parent (-1 at the top) and its weight as the
 * engine defaults it (0: removed); group g's node. */
typedef struct gp_sim_fair_tree {
    size_t n_nodes;
    int32_t *parent;
    double *weight;
    int32_t *group_node; /* n_groups */
} gp_sim_fair_tree;

typedef struct gp_sim_fairness {
    size_t n_groups;
    int n_types;
    int64_t capacity_milli[GP_MAX_GPU_TYPES];
    double *entitlement;  /* per group (copied): static */
    gp_sim_fair_tree tree; /* copied; n_nodes 0: the static entitlements only */
    bool *active;         /* scratch, per node: holds a backlogged group */
    double *active_sum;   /* scratch, per node and one for the top: its active children's weights */
    bool *backlogged;     /* scratch, per group */
    double *backlog_entitlement; /* scratch, per group: among the backlogged */
    double *x_static;     /* scratch: the backlogged groups' x on the static entitlements */
    int64_t *usage;       /* groups x types: milli-GPUs now */
    int64_t *usage_since; /* groups x types: time usage was settled to */
    double *area;         /* groups x types: milli-GPU-seconds this hour */
    int32_t *pending;     /* per group: jobs pending now */
    int64_t *pending_since, *pending_s; /* per group: settled to, seconds with pending work this hour */
    double *x;            /* scratch: the backlogged groups' x */
    int64_t hour_start;
    gp_sim_fair_hour *hours;
    size_t n_hours, cap_hours;
} gp_sim_fairness;

/* Jain's index of x[0..n): (sum x)^2 / (n sum x^2); 1 when n is 0 or every x is 0. */
double gp_sim_jain(const double *x, size_t n);

/* A tracker for n_groups groups (entitlement[g] > 0, static) on a fleet of
 * n_types GPU types with capacity_milli[t] GPUs each; hours start at t0.
 * tree: the groups' tenant tree (copied), or NULL: the hour's index uses
 * the static entitlements too. */
gp_err gp_sim_fairness_init(gp_sim_fairness *f, size_t n_groups, const double *entitlement,
                            const gp_sim_fair_tree *tree, int n_types, const int64_t *capacity_milli, int64_t t0,
                            gp_error *err);
/* The entitlements among the backlogged (see the top) of the groups
 * marked in backlogged[] into out[] (0 for the others). */
void gp_sim_fair_tree_entitlements(const gp_sim_fair_tree *tree, size_t n_groups, const bool *backlogged,
                                   bool *active_scratch, double *sum_scratch, double *out);
void gp_sim_fair_tree_free(gp_sim_fair_tree *tree);
/* Group g's use of GPU type `type` changed by delta_milli at now. */
void gp_sim_fairness_usage(gp_sim_fairness *f, int64_t now, size_t g, int type, int64_t delta_milli);
/* Group g's pending jobs changed by delta (+1 arrival or requeue, -1 bind or cancel) at now. */
void gp_sim_fairness_pending(gp_sim_fairness *f, int64_t now, size_t g, int delta);
/* Close every hour that ends at or before now (call before the changes at now); false when out of memory. */
bool gp_sim_fairness_advance(gp_sim_fairness *f, int64_t now);
/* The hours closed so far (caller frees); the tracker keeps none. */
gp_sim_fair_hour *gp_sim_fairness_take_hours(gp_sim_fairness *f, size_t *n);
void gp_sim_fairness_free(gp_sim_fairness *f);

#endif

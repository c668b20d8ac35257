/* share.h - GPU-hours each team received against its weighted max-min fair
 * share of the fleet, per day and over the run, and Jain's index of that
 * ratio over the teams.
 *
 * The question a team asks: "given what everybody wanted, did I get my
 * part?"  Its part is the water-filling (weighted max-min) allocation of
 * the fleet over the teams' demands, worked out again every time a demand
 * changes:
 *
 *   demand      per report group (team, simulator.h) and GPU type: the
 *               GPUs of its jobs that arrived and have not finished (those
 *               running on the type they run on; a pending job's GPUs
 *               split evenly over the fleet's types it accepts);
 *   water-fill  per GPU type, down the tenant tree (fairness.h's tree and
 *               weights, as the engine defaults them): a node's GPUs go to
 *               its children by weight, none more than the demand under
 *               it, and what a child leaves is shared by the rest by
 *               weight, again and again until the GPUs or the demands run
 *               out; the top level shares the fleet's GPUs of the type.  A
 *               team that has jobs of its own and teams below it counts
 *               its own jobs as one more child of its own weight;
 *   fair share  the integral of that allocation over a day (from the first
 *               arrival), summed over the GPU types, in GPU-hours;
 *   received    the GPUs it held (usage) over the same day, summed;
 *   ratio       received / fair share.  Every team that wanted anything
 *               counts (fair share > 0), busy or not; a team served all it
 *               asked for at once reads 1, one that waited reads less, and
 *               one that held more than its part (a gang's GPUs while
 *               others waited) reads more.
 *
 * A day's index is Jain's over the teams' ratios (gp_sim_jain), days with
 * fewer than 2 teams are skipped; the run's is Jain's over the teams'
 * ratios of the whole run (every GPU-hour received over every fair one,
 * to the end of the run).  Only full days are measured.
 *
 * Worked example (one GPU type, 8 GPUs, a flat tree): a (weight 1) wants
 * 2 GPUs, b (weight 1) 8, c (weight 2) 8.  An even split by weight would
 * be 2 : 2 : 4; a wants only 2, so the 6 left go to b and c as 1 : 2, 2
 * and 4: fair shares (2, 2, 4).  Had a wanted nothing, b and c would get
 * 8 as 1 : 2, (2.67, 5.33).  If for the whole day a holds 2, b 0 and c 6
 * GPUs, the ratios are (1, 0, 1.5), Jain = 2.5^2 / (3 x 3.25) = 0.64; a 2,
 * b 2, c 4: (1, 1, 1), Jain 1.  Tree: org o (weight 1) holds p and q
 * (weight 1 each), team r (weight 1) is at the top, 8 GPUs, p wants 8, q
 * 1, r 8: o and r get 4 each, within o q takes its 1 and p the 3 left:
 * (3, 1, 4).
 *
 * The tracker recomputes the allocation at most once per simulated
 * instant (when time moves on after a demand changed) and integrates
 * lazily: O(groups x types + tree nodes x types) per recompute.
 *
 * Ownership: gp_sim_share_init allocates the tracker's arrays and
 * gp_sim_share_free releases them; gp_sim_share_take hands the days and
 * the run's totals to the caller (gp_sim_share_result_free).
 */
#ifndef GP_SIM_SHARE_H
#define GP_SIM_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"
#include "sim/fairness.h"
#include "util/error.h"

#define GP_SIM_SHARE_DAY_S 86400

/* Weighted max-min over n claimants: out[i] <= demand[i], the capacity
 * given by weight among those whose demand is not met, what a capped one
 * leaves shared again.  Claimants of weight <= 0 get nothing.  Returns
 * what is given in all. */
double gp_sim_water_fill(size_t n, const double *weight, const double *demand, double capacity, double *out);

/* The water-fill down a tenant tree (see the top) of one resource: group
 * g wants demand[g] and gets out[g].  scratch: 3 x (tree->n_nodes + 1)
 * doubles and tree->n_nodes + n_groups + 1 sizes (from gp_sim_share_tree). */
typedef struct gp_sim_share_tree {
    size_t n_nodes, n_groups;
    int32_t *order;        /* n_nodes: parents before children */
    int32_t *child_start;  /* n_nodes + 2: children of node k (the top: n_nodes) in child[start[k]..start[k+1]) */
    int32_t *child;        /* n_nodes */
    int32_t *node_group;   /* n_nodes: the group at the node, -1 none */
    double *weight;        /* n_nodes */
    int32_t *group_node;   /* n_groups: -1 (not in the tree): a claimant of weight 1 at the top */
    double *sub, *alloc, *w_scratch, *d_scratch, *o_scratch; /* scratch */
} gp_sim_share_tree;

gp_err gp_sim_share_tree_init(gp_sim_share_tree *st, const gp_sim_fair_tree *tree, size_t n_groups, gp_error *err);
void gp_sim_share_tree_fill(gp_sim_share_tree *st, const double *demand, double capacity, double *out);
void gp_sim_share_tree_free(gp_sim_share_tree *st);

/* One full day. */
typedef struct gp_sim_share_day {
    int64_t start;
    int32_t teams;  /* groups with a fair share that day */
    double jain;    /* -1: skipped (fewer than 2) */
} gp_sim_share_day;

/* What a run leaves: the days, and per group the run's and each day's
 * GPU-hours. */
typedef struct gp_sim_share_result {
    gp_sim_share_day *days;
    size_t n_days;
    size_t n_groups;
    double *received_h, *fair_h;          /* n_groups: the whole run */
    double *day_received_h, *day_fair_h;  /* n_days x n_groups */
} gp_sim_share_result;

typedef struct gp_sim_share {
    size_t n_groups;
    int n_types;
    double capacity_milli[GP_MAX_GPU_TYPES];
    gp_sim_share_tree tree;
    double *usage, *pending; /* groups x types, milli-GPUs now */
    double *fair;            /* groups x types, milli-GPUs now */
    double *filled;          /* groups x types: the demand fair was filled from */
    double *demand, *one;    /* scratch: one type's demand and fair share per group */
    double *received_day, *fair_day; /* per group: milli-GPU-seconds this day */
    int64_t since;           /* the state is integrated up to here */
    bool dirty;              /* a demand changed at `since` */
    int64_t day_start;
    gp_sim_share_result res;
    size_t cap_days;
} gp_sim_share;

/* A tracker for n_groups groups on a fleet of n_types GPU types with
 * capacity_milli[t] each; days start at t0.  tree: fairness.h's (read
 * only here), n_nodes 0: a flat tree of weight 1 each. */
gp_err gp_sim_share_init(gp_sim_share *s, size_t n_groups, const gp_sim_fair_tree *tree, int n_types,
                         const int64_t *capacity_milli, int64_t t0, gp_error *err);
/* Changes at now (after gp_sim_share_advance(now), so days are closed
 * first).  Group g holds delta_milli more (or less) of GPU type `type`. */
void gp_sim_share_usage(gp_sim_share *s, int64_t now, size_t g, int type, int64_t delta_milli);
/* Group g has a pending job of milli GPUs more (sign +1) or less (-1) that
 * accepts the types whose bits are set in type_bits (bit t: engine type t). */
void gp_sim_share_pending(gp_sim_share *s, int64_t now, size_t g, uint32_t type_bits, int64_t milli, int sign);
/* Integrate to now, closing every day that ends at or before it; false
 * when out of memory. */
bool gp_sim_share_advance(gp_sim_share *s, int64_t now);
/* Integrate to the run's end and hand the result over (the tracker keeps none). */
bool gp_sim_share_take(gp_sim_share *s, int64_t end, gp_sim_share_result *out);
void gp_sim_share_free(gp_sim_share *s);
void gp_sim_share_result_free(gp_sim_share_result *r);

#endif

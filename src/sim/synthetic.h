/* synthetic.h - a product-scale synthetic workload, fleet and tenant tree.
 *
 * The traces we have are small (one 1,213-node cluster, ITP clusters of a
 * few hundred GPUs).  gpupool is built for 50,000 GPUs, 300 teams and
 * ~30,000 jobs a day; this generator makes that world from a seed:
 *
 *   fleet    H100 / A100 / L40S nodes of 8 GPUs in fabric blocks; part of
 *            the L40S nodes shared by MPS or time-slicing, optionally part
 *            of the A100 nodes partitioned by MIG;
 *   tenants  orgs -> teams -> projects; guarantees on teams, Zipf-skewed
 *            sizes, summing to a fraction of the fleet;
 *   jobs     a mix of training gangs (8-512 GPUs, checkpoint grace),
 *            single-node training, fractional inference services and
 *            time-sliced notebooks; arrivals follow a daily cycle with team
 *            bursts (hyper-parameter sweeps); durations are log-normal
 *            (long tail), capped.
 *
 * Every parameter has a flag (gp_synth_set("jobs-per-day", "30000")), and
 * gp_synth_describe prints them all with the seed, so a run is reproduced
 * from its printed parameters.
 *
 * Ownership: gp_synth_generate appends jobs to a caller-owned trace and
 * returns the fleet and tenant files as malloc'ed YAML text (caller frees).
 */
#ifndef GP_SIM_SYNTHETIC_H
#define GP_SIM_SYNTHETIC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/trace.h"

typedef struct gp_synth_params {
    uint64_t seed;
    double days;
    /* fleet */
    double gpus;               /* total GPUs (rounded to whole nodes) */
    double share_h100, share_a100; /* rest is L40S */
    double gpus_per_node;
    double nodes_per_block;
    double l40s_mps, l40s_timeslice; /* fractions of L40S nodes shared */
    double a100_mig;           /* fraction of A100 nodes partitioned by MIG (and of inference jobs on them) */
    /* tenants */
    double orgs, teams, projects_per_team;
    double guaranteed;         /* sum of team guarantees / fleet */
    double team_skew;          /* Zipf exponent of team sizes */
    /* arrivals */
    double jobs_per_day;
    double diurnal;            /* amplitude of the daily cycle, 0..1 */
    double burst_fraction;     /* jobs that arrive in team bursts */
    double burst_size;         /* mean jobs per burst */
    /* mix (fractions of jobs; they are normalised) */
    double mix_gang, mix_single, mix_inference, mix_notebook;
    double gang_max;           /* largest gang, GPUs (8..512, power of two) */
    /* durations: median hours and log-normal sigma */
    double gang_hours, single_hours, inference_hours, notebook_hours;
    double sigma;
    double max_days;           /* duration cap */
    double grace_s;            /* checkpoint grace of training jobs */
    double shares;             /* 1: fractional inference and notebooks; 0: whole GPUs */
} gp_synth_params;

gp_synth_params gp_synth_defaults(void);
/* Set one parameter by its flag name (without "--synth-"): false when the
 * name is unknown or the value is not a number in range. */
bool gp_synth_set(gp_synth_params *p, const char *name, const char *value);
/* Every parameter as "name=value ..." on one line, seed first. */
void gp_synth_describe(const gp_synth_params *p, FILE *out);
/* Names and meanings of all parameters, for --help. */
void gp_synth_help(FILE *out);

gp_err gp_synth_generate(const gp_synth_params *p, gp_trace *t, char **fleet_yaml, char **tenants_yaml,
                         gp_error *err);

#endif

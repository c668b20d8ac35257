/* bench_sim.c - how fast gpupool-sim replays a month of the product's scale.
 *
 * The workload of issue 4: 30 simulated days of the synthetic world
 * (50,000 GPUs, 300 teams, ~30,000 jobs a day; sim/synthetic.h defaults),
 * one policy (gpupool), on one core.  Targets: <= 60 s wall time and
 * <= 1 GiB resident.  Prints the world, the run's figures, and as the
 * last line one JSON object (events/s, wall time, peak RSS, targets met).
 *
 *   bench_sim [--days D] [--quantum S] [--shares 0|1] [--seed N] [--policy P]
 *
 * --quantum is the scheduling-pass cadence (default 60 s: at most one
 * pass per simulated minute, which adds at most a minute to a wait; 0 =
 * a pass after every distinct event time, as gpupool-sim does by
 * default); --shares 0 turns the fractional inference and notebook jobs
 * into whole-GPU ones (which overloads the L40S).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sim/metrics.h"
#include "sim/simulator.h"
#include "sim/synthetic.h"

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static double peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

int main(int argc, char **argv)
{
    gp_synth_params p = gp_synth_defaults();
    gp_sim_options opt = gp_sim_options_default();
    opt.quantum_s = 60;
    const char *policy = "gpupool";
    for (int i = 1; i + 1 < argc; i += 2) {
        bool ok = true;
        if (strcmp(argv[i], "--days") == 0 || strcmp(argv[i], "--shares") == 0 || strcmp(argv[i], "--seed") == 0)
            ok = gp_synth_set(&p, argv[i] + 2, argv[i + 1]);
        else if (strcmp(argv[i], "--quantum") == 0)
            opt.quantum_s = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--policy") == 0)
            policy = argv[i + 1];
        else
            ok = false;
        if (!ok) {
            fprintf(stderr, "usage: bench_sim [--days D] [--quantum S] [--shares 0|1] [--seed N] [--policy P]\n");
            return 2;
        }
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gp_trace t;
    gp_trace_init(&t);
    char *fleet_yaml, *tenants_yaml;
    gp_fleet_file fleet;
    gp_tenant_file tenants;
    gp_error err;
    printf("world: ");
    gp_synth_describe(&p, stdout);
    if (gp_synth_generate(&p, &t, &fleet_yaml, &tenants_yaml, &err) ||
        gp_fleet_file_parse(fleet_yaml, strlen(fleet_yaml), "fleet", &fleet, &err) ||
        gp_tenant_file_parse(tenants_yaml, strlen(tenants_yaml), "tenants", &tenants, &err)) {
        fprintf(stderr, "bench_sim: %s\n", err.message);
        return 1;
    }
    double gen_s = seconds_since(&t0);
    gp_sim_policy pol;
    if (!gp_sim_policy_parse(policy, &pol)) {
        fprintf(stderr, "bench_sim: unknown policy %s\n", policy);
        return 2;
    }
    gp_sim_setup setup = {.fleet = &fleet, .tenants = &tenants, .trace = &t};
    gp_sim_result r;
    if (gp_sim_run(&setup, &pol, &opt, &r, &err)) {
        fprintf(stderr, "bench_sim: %s\n", err.message);
        return 1;
    }
    double wall = seconds_since(&t0), rss = peak_rss_mib();
    gp_sim_metrics m;
    gp_sim_metrics_compute(&r, &t, GP_SIM_ALL_GROUPS, &m, NULL);
    printf("jobs %zu (done %zu, refused %zu), events %llu, passes %llu, allocation %.2f %%, mean wait %.0f s, "
           "preemptions %llu\n",
           t.n_jobs, m.done, r.rejected, (unsigned long long)r.events, (unsigned long long)r.ticks,
           m.allocation_pct, m.mean_wait_s, (unsigned long long)r.preemptions);
    printf("generate %.2f s, simulate %.2f s, total %.2f s, peak RSS %.0f MiB\n", gen_s, r.wall_s, wall, rss);
    bool met = wall <= 60 && rss <= 1024;
    printf("{\"bench\":\"sim\",\"days\":%g,\"gpus\":%.0f,\"jobs\":%zu,\"policy\":\"%s\",\"quantum_s\":%lld,"
           "\"shares\":%s,\"events\":%llu,\"passes\":%llu,\"events_per_s\":%.0f,\"simulate_s\":%.3f,\"wall_s\":%.3f,"
           "\"max_rss_mib\":%.1f,\"allocation_pct\":%.3f,\"target_wall_s\":60,\"target_rss_mib\":1024,"
           "\"targets_met\":%s}\n",
           p.days, (double)r.capacity_milli / 1000.0, t.n_jobs, pol.name, (long long)opt.quantum_s,
           p.shares > 0 ? "true" : "false", (unsigned long long)r.events, (unsigned long long)r.ticks,
           r.wall_s > 0 ? (double)r.events / r.wall_s : 0.0, r.wall_s, wall, rss, m.allocation_pct,
           met ? "true" : "false");
    gp_sim_result_free(&r);
    gp_trace_free(&t);
    gp_fleet_file_free(&fleet);
    gp_tenant_file_free(&tenants);
    free(fleet_yaml);
    free(tenants_yaml);
    return 0;
}

/* agent_metrics.h - the agent's GET /metrics: its nodes' GPUs in the
 * Prometheus text format (0.0.4) under dcgm-exporter's metric names and
 * labels, so that dashboards and alerts built for dcgm-exporter work on a
 * gpupool node unchanged (docs/metrics.md "The agent's /metrics").
 *
 * `gpupool-agent run --metrics-listen ADDR` starts a libmicrohttpd
 * server with its own thread.  Every process of the node reaches a TCP
 * port, loopback too, and the rows name tenants and jobs, so a TCP
 * listener needs --metrics-token-file (requests without "Authorization:
 * Bearer TOKEN" get 401; Prometheus sends it from its
 * authorization.credentials_file); ":PORT" is 127.0.0.1:PORT.  Or
 * "unix:/run/gpupool/metrics.sock": a socket made 0600 (root only), the
 * token optional.  The agent's one loop publishes each node's
 * snapshot (agent_node_metrics.c builds it from a heartbeat's telemetry
 * sample) under the mutex; a scrape renders what was last published under
 * the same mutex and never touches a node, a backend or the loop.
 *
 * One row is one series per metric: a GPU (gi_id -1) or a MIG instance of
 * it (GPU_I_PROFILE, GPU_I_ID), with the tenant and job of the replica
 * on it; a GPU shared by several replicas (MPS, time-slicing) is a row per
 * replica with the same values (as dcgm-exporter does with several HPC
 * jobs on one GPU), an idle one a row with tenant="" and job="".  Each
 * value is -1 when unknown and then its line is left out.  Example, one
 * T4 running job 7 of tenant ml/vision on node t4-0:
 *
 *   # HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
 *   # TYPE DCGM_FI_DEV_GPU_UTIL gauge
 *   DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-...",pci_bus_id="00000000:18:00.0",device="nvidia0",
 *       modelName="T4",Hostname="t4-0",node="t4-0",tenant="ml/vision",job="7"} 63
 *
 * Ownership: gp_agent_metrics_start allocates the server, stop frees it
 * (NULL is fine); publish takes the node's rows (the caller's pointer is
 * cleared); render returns a malloc'd string the caller frees.
 */
#ifndef GP_AGENT_METRICS_H
#define GP_AGENT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/gpu/gpu.h"
#include "core/types.h"
#include "util/error.h"

typedef struct gp_metrics_row {
    int gpu;                              /* index on its node */
    char uuid[GP_UUID_MAX];               /* the GPU's (dcgm-exporter's UUID label is the parent GPU's) */
    char pci_bus_id[32];                  /* "" unknown: left out */
    char mig_profile[GP_GPU_PROFILE_MAX]; /* "" for a whole GPU */
    int gi_id;                            /* the MIG GPU instance id; -1 for a whole GPU */
    char tenant[GP_PATH_MAX];             /* of the replica on it, "" idle */
    char job[24];                         /* its job id, "" idle */
    /* values, -1 unknown */
    int util_pct;                         /* DCGM_FI_DEV_GPU_UTIL */
    int64_t fb_used_mib, fb_free_mib;     /* DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_FB_FREE */
    int power_w;                          /* DCGM_FI_DEV_POWER_USAGE */
    int temp_c;                           /* DCGM_FI_DEV_GPU_TEMP */
    int xid;                              /* DCGM_FI_DEV_XID_ERRORS: the last XID seen, 0 none */
    int sm_active_pct;                    /* DCGM_FI_PROF_SM_ACTIVE, written as a ratio 0..1 */
} gp_metrics_row;

typedef struct gp_metrics_node {
    char name[GP_NAME_MAX];               /* Hostname and node labels */
    char model[GP_NAME_MAX];              /* modelName */
    size_t n_rows;
    gp_metrics_row *rows;                 /* malloc'd, owned by the node snapshot */
} gp_metrics_node;

typedef struct gp_agent_metrics gp_agent_metrics;

/* Whether --metrics-listen listen (HOST:PORT, :PORT or unix:PATH) and
 * --metrics-token-file token_file (NULL: none) go together: GP_ERR_INVALID
 * field "metrics-listen" for a bad address, "metrics-token-file" for a
 * TCP address without a token. */
gp_err gp_agent_metrics_check(const char *listen, const char *token_file, gp_error *err);
/* Serves GET /metrics on listen for n_nodes nodes, each empty until
 * published, behind token_file's token when given.  GP_ERR_INVALID as
 * gp_agent_metrics_check, field "metrics-listen" for an address that
 * cannot be bound, "metrics-token-file" for a token file other users may
 * read or without a token. */
gp_err gp_agent_metrics_start(const char *listen, const char *token_file, size_t n_nodes, gp_agent_metrics **out,
                              gp_error *err);
/* Replaces node index's snapshot with *node (takes its rows; node->rows is
 * NULL afterwards).  m NULL: frees the rows. */
void gp_agent_metrics_publish(gp_agent_metrics *m, size_t index, gp_metrics_node *node);
void gp_agent_metrics_stop(gp_agent_metrics *m);
/* Scrapes also serve store's (an image store's folder) pull counters as
 * gpupool_agent_image_pulls_total{result="hit|miss|warm"}; m NULL: nothing. */
void gp_agent_metrics_image_store(gp_agent_metrics *m, const char *store);

/* How long replicas took to start on this agent, from the order to run
 * to the exec, as two histograms (label image_pull="true": the start
 * pulled a docker:// or oci: image, a hit in the store included;
 * "false": a bare process or a dir: image):
 * gpupool_agent_replica_start_seconds.  m NULL: nothing. */
#define GP_AGENT_START_BUCKETS 10
typedef struct gp_start_histogram {
    int64_t buckets[GP_AGENT_START_BUCKETS]; /* cumulative counts at GP__START_BOUNDS (agent_metrics.c) */
    int64_t count;
    double sum;
} gp_start_histogram;
void gp_agent_metrics_observe_start(gp_agent_metrics *m, double seconds, bool image_pull);

/* The exposition text of these nodes: each metric's HELP and TYPE once,
 * then its samples over every node, then the start histograms (starts
 * NULL: none).  NULL when out of memory. */
char *gp_agent_metrics_render(const gp_metrics_node *nodes, size_t n_nodes, const gp_start_histogram *starts);

#endif

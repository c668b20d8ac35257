/* trace_openb.c - the Alibaba "openb" GPU-sharing trace (cluster-trace-gpu-v2023).
 *
 * Two kinds of CSV: pod lists (the workload) and node lists (the fleet),
 * described in data/README.md and ../shared/traces/alibaba-gpu-v2023/README.md.
 * Columns are found by their header names, so a file with reordered or
 * extra columns still reads.  name, cpu_milli, memory_mib, num_gpu and
 * gpu_milli are required; the rest may be missing (optional_column).
 *
 * Pod -> job: one replica (a pod is on one node).  num_gpu whole GPUs with
 * gpu_milli 1000; or num_gpu 1 with gpu_milli 1..999, a fractional share
 * (isolation mps, share = gpu_milli); or num_gpu 0, a CPU-only pod (gpus 0).
 * gpu_spec "A|B" restricts the GPU types ("" and "nan" mean any).  qos LS
 * -> inference, else training.  duration = deletion_time - scheduled_time
 * (creation_time when the pod was never scheduled); the FGD experiment
 * ignores durations (no departures).
 *
 * Node -> fleet-file entry: name = sn, gpus, gpu_type = model, cpu_millis,
 * mem_mib, sharing mps (openb is a GPU-sharing cluster: any GPU may host
 * fractional pods, and an empty one a whole-GPU pod); nodes with 0 GPUs
 * are left out (the GPU experiments use openb_node_list_gpu_node.csv,
 * which has none).
 */
#include "sim/trace.h"
#include "util/bytes.h"

#include <stdlib.h>
#include <string.h>

enum { POD_NAME, POD_CPU, POD_MEM, POD_NUM_GPU, POD_GPU_MILLI, POD_SPEC, POD_QOS, POD_CREATE, POD_DELETE,
       POD_SCHED, POD_COLS };
static const char *const pod_columns[POD_COLS] = {"name",     "cpu_milli", "memory_mib",    "num_gpu",
                                                  "gpu_milli", "gpu_spec",  "qos",           "creation_time",
                                                  "deletion_time", "scheduled_time"};

enum { NODE_SN, NODE_CPU, NODE_MEM, NODE_GPU, NODE_MODEL, NODE_COLS };
static const char *const node_columns[NODE_COLS] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};

/* Reading state shared by the pod and node readers. */
typedef struct csv_reader {
    gp_trace *t;
    const gp_trace_read_opts *opts;
    const char *path;
    int index[POD_COLS]; /* column of each wanted field */
    int n_wanted, n_cols;
    const char *const *wanted;
    uint16_t tenant;
    char *yaml;          /* node reader output */
    size_t yaml_len, yaml_cap, cpu_nodes;
} csv_reader;

/* Pod columns a pod list may leave out (the multigpu lists have only the
 * first five): no gpu_spec = any type, no qos = training, no times = pods
 * arrive in row order (one per second) and never leave. */
static bool optional_column(const csv_reader *r, int w)
{
    return r->wanted == pod_columns && w >= POD_SPEC;
}

static gp_err read_header(csv_reader *r, char *line, gp_error *err)
{
    char *cols[GP_TRACE_MAX_COLUMNS];
    r->n_cols = gp_trace_csv_split(line, cols, GP_TRACE_MAX_COLUMNS);
    for (int w = 0; w < r->n_wanted; w++) {
        r->index[w] = -1;
        for (int c = 0; c < r->n_cols; c++)
            if (strcmp(cols[c], r->wanted[w]) == 0)
                r->index[w] = c;
        if (r->index[w] < 0 && !optional_column(r, w))
            return gp_error_set(err, GP_ERR_INVALID, "trace", "%s:1: the header has no column %s", r->path,
                                r->wanted[w]);
    }
    return GP_OK;
}

/* Split a data row and check its column count; *ok false = malformed (reported). */
static gp_err split_row(csv_reader *r, char *line, size_t lineno, char **cols, bool *ok, gp_error *err)
{
    int n = gp_trace_csv_split(line, cols, GP_TRACE_MAX_COLUMNS);
    *ok = n == r->n_cols;
    if (*ok)
        return GP_OK;
    return gp_trace_malformed(r->t, r->opts, r->path, lineno, err, "%d columns, the header has %d", n < 0 ? 99 : n,
                              r->n_cols);
}

static gp_err number(csv_reader *r, char **cols, int field, size_t lineno, int64_t min, int64_t max, int64_t *out,
                     bool *ok, gp_error *err)
{
    const char *cell = cols[r->index[field]];
    *ok = gp_trace_parse_i64(cell, out) && *out >= min && *out <= max;
    if (*ok)
        return GP_OK;
    return gp_trace_malformed(r->t, r->opts, r->path, lineno, err, "%s must be an integer %lld..%lld, got \"%s\"",
                              r->wanted[field], (long long)min, (long long)max, cell);
}

/* gpu_spec "V100M16|V100M32" -> a type mask; false when a name is bad or
 * the type table is full. */
static bool parse_gpu_spec(gp_trace *t, char *spec, uint8_t *mask)
{
    *mask = 0;
    if (spec[0] == '\0' || strcmp(spec, "nan") == 0)
        return true;
    for (char *name = spec; name;) {
        char *bar = strchr(name, '|');
        if (bar)
            *bar = '\0';
        int type = name[0] ? gp_trace_type(t, name) : -1;
        if (type < 0)
            return false;
        *mask |= (uint8_t)(1u << type);
        name = bar ? bar + 1 : NULL;
    }
    return true;
}

/* The numbers of one pod row; *ok false = malformed (reported). */
static gp_err pod_numbers(csv_reader *r, char **cols, size_t lineno, gp_trace_job *j, bool *ok, gp_error *err)
{
    int64_t num_gpu = 0, milli = 0, create = (int64_t)r->t->rows, del = -1;
    gp_err rc;
    if ((rc = number(r, cols, POD_CPU, lineno, 0, INT64_C(1) << 40, &j->cpu_millis, ok, err)) || !*ok ||
        (rc = number(r, cols, POD_MEM, lineno, 0, INT64_C(1) << 40, &j->mem_mib, ok, err)) || !*ok ||
        (rc = number(r, cols, POD_NUM_GPU, lineno, 0, GP_MAX_GPUS_PER_NODE, &num_gpu, ok, err)) || !*ok ||
        (rc = number(r, cols, POD_GPU_MILLI, lineno, 0, 1000, &milli, ok, err)) || !*ok)
        return rc;
    if (r->index[POD_CREATE] >= 0 &&
        ((rc = number(r, cols, POD_CREATE, lineno, 0, INT64_MAX / 4, &create, ok, err)) || !*ok))
        return rc;
    if (r->index[POD_DELETE] >= 0 &&
        ((rc = number(r, cols, POD_DELETE, lineno, create, INT64_MAX / 4, &del, ok, err)) || !*ok))
        return rc;
    int64_t start = create, sched;
    const char *sched_cell = r->index[POD_SCHED] >= 0 ? cols[r->index[POD_SCHED]] : "";
    if (del >= 0 && sched_cell[0] != '\0' && strcmp(sched_cell, "nan") != 0) {
        if ((rc = number(r, cols, POD_SCHED, lineno, create, del, &sched, ok, err)) || !*ok)
            return rc;
        start = sched;
    }
    bool whole = num_gpu == 0 ? milli == 0 : milli == 1000;
    bool share = num_gpu == 1 && milli > 0 && milli < 1000;
    if (!whole && !share) {
        *ok = false;
        return gp_trace_malformed(r->t, r->opts, r->path, lineno, err,
                                  "num_gpu %lld with gpu_milli %lld: a share is only allowed on one GPU",
                                  (long long)num_gpu, (long long)milli);
    }
    j->gpus = (int)num_gpu;
    j->gpu_milli = share ? (int)milli : 0;
    j->isolation = share ? GP_ISO_MPS : GP_ISO_EXCLUSIVE;
    j->submit = create;
    j->duration = del >= 0 ? del - start : -1;
    return GP_OK;
}

static gp_err pod_line(void *ctx, char *line, size_t lineno, gp_error *err)
{
    csv_reader *r = ctx;
    if (lineno == 1)
        return read_header(r, line, err);
    if (line[0] == '\0')
        return GP_OK;
    r->t->rows++;
    char *cols[GP_TRACE_MAX_COLUMNS];
    bool ok;
    gp_err rc = split_row(r, line, lineno, cols, &ok, err);
    if (rc || !ok)
        return rc;
    gp_trace_job j;
    memset(&j, 0, sizeof j);
    if ((rc = pod_numbers(r, cols, lineno, &j, &ok, err)) || !ok)
        return rc;
    char no_spec[] = "";
    if (!parse_gpu_spec(r->t, r->index[POD_SPEC] >= 0 ? cols[r->index[POD_SPEC]] : no_spec, &j.type_mask))
        return gp_trace_malformed(r->t, r->opts, r->path, lineno, err,
                                  "gpu_spec has an empty type or more than %d types in the trace", GP_MAX_GPU_TYPES);
    j.replicas = 1;
    j.tenant = r->tenant;
    j.kind = r->index[POD_QOS] >= 0 && strcmp(cols[r->index[POD_QOS]], "LS") == 0 ? GP_KIND_INFERENCE
                                                                                  : GP_KIND_TRAINING;
    j.topology = GP_TOPO_ANY;
    return gp_trace_add(r->t, &j, err);
}

gp_err gp_trace_read_openb(gp_trace *t, const char *path, const gp_trace_read_opts *opts, gp_error *err)
{
    csv_reader r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.opts = opts;
    r.path = path;
    r.wanted = pod_columns;
    r.n_wanted = POD_COLS;
    const char *tenant = opts && opts->tenant ? opts->tenant : "openb";
    if (!gp_trace_tenant(t, tenant, &r.tenant))
        return gp_error_set(err, GP_ERR_NOMEM, "tenant", "cannot add tenant %s", tenant);
    return gp_trace_each_line(path, pod_line, &r, err);
}

/* ---- node lists -> fleet-file YAML ---- */

static bool yaml_append(csv_reader *r, const char *text)
{
    return gp_bytes_append(&r->yaml, &r->yaml_len, &r->yaml_cap, text, strlen(text));
}

static gp_err node_line(void *ctx, char *line, size_t lineno, gp_error *err)
{
    csv_reader *r = ctx;
    if (lineno == 1)
        return read_header(r, line, err);
    if (line[0] == '\0')
        return GP_OK;
    char *cols[GP_TRACE_MAX_COLUMNS];
    bool ok;
    int64_t cpu, mem, gpus;
    gp_err rc = split_row(r, line, lineno, cols, &ok, err);
    if (rc || !ok || (rc = number(r, cols, NODE_CPU, lineno, 0, INT64_C(1) << 40, &cpu, &ok, err)) || !ok ||
        (rc = number(r, cols, NODE_MEM, lineno, 0, INT64_C(1) << 40, &mem, &ok, err)) || !ok ||
        (rc = number(r, cols, NODE_GPU, lineno, 0, GP_MAX_GPUS_PER_NODE, &gpus, &ok, err)) || !ok)
        return rc;
    if (gpus == 0) {
        r->cpu_nodes++;
        return GP_OK;
    }
    const char *name = cols[r->index[NODE_SN]], *model = cols[r->index[NODE_MODEL]];
    if (name[0] == '\0' || model[0] == '\0' || strcmp(model, "nan") == 0 || strchr(name, ' ') || strchr(model, ' '))
        return gp_trace_malformed(r->t, r->opts, r->path, lineno, err, "a GPU node needs a name (sn) and a model");
    char entry[512];
    snprintf(entry, sizeof entry,
             "  - {name: \"%s\", gpu_type: \"%s\", gpus: %lld, cpu_millis: %lld, mem_mib: %lld, sharing: mps}\n", name, model,
             (long long)gpus, (long long)cpu, (long long)mem);
    if (!yaml_append(r, entry))
        return gp_error_set(err, GP_ERR_NOMEM, "trace", "out of memory");
    return GP_OK;
}

gp_err gp_trace_openb_fleet_yaml(const char *path, const gp_trace_read_opts *opts, char **yaml, size_t *cpu_nodes,
                                 gp_error *err)
{
    csv_reader r;
    gp_trace scratch; /* counts malformed rows of the node list */
    gp_trace_init(&scratch);
    memset(&r, 0, sizeof r);
    r.t = &scratch;
    r.opts = opts;
    r.path = path;
    r.wanted = node_columns;
    r.n_wanted = NODE_COLS;
    gp_err rc = yaml_append(&r, "# generated from ") && yaml_append(&r, path) && yaml_append(&r, "\nnodes:\n")
                    ? gp_trace_each_line(path, node_line, &r, err)
                    : gp_error_set(err, GP_ERR_NOMEM, "trace", "out of memory");
    gp_trace_free(&scratch);
    if (rc) {
        free(r.yaml);
        return rc;
    }
    *yaml = r.yaml;
    if (cpu_nodes)
        *cpu_nodes = r.cpu_nodes;
    return GP_OK;
}

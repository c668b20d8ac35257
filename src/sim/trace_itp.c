/* trace_itp.c - Microsoft ITP cluster traces (ElasticFlow raw traces).
 *
 * One CSV per cluster: job_id, submission_time, duration, num_gpu
 * (../shared/traces/microsoft-itp-elasticflow/README.md).  Columns are
 * found by header name.  A job of num_gpu <= 8 GPUs is one replica; a
 * larger one is a gang of 8-GPU replicas, or of the largest divisor of
 * num_gpu that is <= 8 (12 GPUs -> 2 x 6), since a replica lives on one
 * node.  Every job is training, topology any, priority 0; the trace has
 * no CPU or memory, so jobs ask for none.  Each file is one tenant
 * ("itp/cluster01" for cluster01.csv unless opts.tenant says otherwise):
 * the pooling experiment treats clusters as teams.
 */
#include "sim/trace.h"

#include <string.h>

enum { ITP_ID, ITP_SUBMIT, ITP_DURATION, ITP_GPUS, ITP_COLS };
static const char *const itp_columns[ITP_COLS] = {"job_id", "submission_time", "duration", "num_gpu"};

typedef struct itp_reader {
    gp_trace *t;
    const gp_trace_read_opts *opts;
    const char *path;
    int index[ITP_COLS];
    int n_cols;
    uint16_t tenant;
} itp_reader;

static gp_err itp_header(itp_reader *r, char *line, gp_error *err)
{
    char *cols[GP_TRACE_MAX_COLUMNS];
    r->n_cols = gp_trace_csv_split(line, cols, GP_TRACE_MAX_COLUMNS);
    for (int w = 0; w < ITP_COLS; w++) {
        r->index[w] = -1;
        for (int c = 0; c < r->n_cols; c++)
            if (strcmp(cols[c], itp_columns[w]) == 0)
                r->index[w] = c;
        if (r->index[w] < 0)
            return gp_error_set(err, GP_ERR_INVALID, "trace", "%s:1: the header has no column %s", r->path,
                                itp_columns[w]);
    }
    return GP_OK;
}

/* Replicas x GPUs for a job of n GPUs. */
static void gang_shape(int64_t n, int *replicas, int *gpus)
{
    int per = 8;
    while (n > 8 && n % per != 0)
        per--;
    *gpus = n <= 8 ? (int)n : per;
    *replicas = (int)(n / *gpus);
}

static gp_err itp_line(void *ctx, char *line, size_t lineno, gp_error *err)
{
    itp_reader *r = ctx;
    if (lineno == 1)
        return itp_header(r, line, err);
    if (line[0] == '\0')
        return GP_OK;
    r->t->rows++;
    char *cols[GP_TRACE_MAX_COLUMNS];
    int n = gp_trace_csv_split(line, cols, GP_TRACE_MAX_COLUMNS);
    if (n != r->n_cols)
        return gp_trace_malformed(r->t, r->opts, r->path, lineno, err, "%d columns, the header has %d",
                                  n < 0 ? 99 : n, r->n_cols);
    int64_t submit, duration, gpus;
    const char *s = cols[r->index[ITP_SUBMIT]], *d = cols[r->index[ITP_DURATION]], *g = cols[r->index[ITP_GPUS]];
    if (!gp_trace_parse_i64(s, &submit) || submit < 0)
        return gp_trace_malformed(r->t, r->opts, r->path, lineno, err,
                                  "submission_time must be an integer >= 0, got \"%s\"", s);
    if (!gp_trace_parse_i64(d, &duration) || duration < 0)
        return gp_trace_malformed(r->t, r->opts, r->path, lineno, err, "duration must be an integer >= 0, got \"%s\"",
                                  d);
    if (!gp_trace_parse_i64(g, &gpus) || gpus < 1 || gpus > 8 * GP_MAX_REPLICAS)
        return gp_trace_malformed(r->t, r->opts, r->path, lineno, err, "num_gpu must be 1..%d, got \"%s\"",
                                  8 * GP_MAX_REPLICAS, g);
    gp_trace_job j;
    memset(&j, 0, sizeof j);
    j.submit = submit;
    j.duration = duration;
    gang_shape(gpus, &j.replicas, &j.gpus);
    j.tenant = r->tenant;
    j.kind = GP_KIND_TRAINING;
    j.topology = GP_TOPO_ANY;
    return gp_trace_add(r->t, &j, err);
}

/* "itp/<base name without .csv>" */
static void default_tenant(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 4 && strcmp(base + len - 4, ".csv") == 0)
        len -= 4;
    snprintf(out, cap, "itp/%.*s", (int)len, base);
    for (char *p = out + 4; *p; p++)
        if (*p == '/' || *p == ' ' || *p == '.')
            *p = '-';
}

gp_err gp_trace_read_itp(gp_trace *t, const char *path, const gp_trace_read_opts *opts, gp_error *err)
{
    itp_reader r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.opts = opts;
    r.path = path;
    char tenant[GP_PATH_MAX];
    if (opts && opts->tenant)
        snprintf(tenant, sizeof tenant, "%s", opts->tenant);
    else
        default_tenant(path, tenant, sizeof tenant);
    if (!gp_trace_tenant(t, tenant, &r.tenant))
        return gp_error_set(err, GP_ERR_NOMEM, "tenant", "cannot add tenant %s", tenant);
    return gp_trace_each_line(path, itp_line, &r, err);
}

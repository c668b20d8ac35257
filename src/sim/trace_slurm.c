/* trace_slurm.c - a Slurm site's accounting history as a trace, its nodes as a fleet.
 *
 * A site decides on its own history: `sacct --allocations --parsable2`
 * (one row per job, fields separated by '|', a header naming them) read
 * into the trace's shape, with what Slurm did kept beside each job (its
 * Start, End, State) so the report can put the two side by side.
 *
 * Rows, by State (its first word: "CANCELLED by 123" is CANCELLED):
 *   - no Start ("Unknown", "None"), PENDING, NodeList "None assigned" (or,
 *     without a NodeList field, an empty AllocTRES): the job never ran (Slurm gives a job cancelled while
 *     pending a Start, its cancel time, and nothing allocated); RUNNING, REQUEUED, SUSPENDED, RESIZING: not ended
 *     when sacct ran.  Both are skipped and counted in trace.not_run;
 *   - every other state with a Start is a job: submitted at Submit, working
 *     for Elapsed seconds; a TIMEOUT job keeps its Timelimit (it would have
 *     run on, but the site's limit stops it under any scheduler);
 *   - PREEMPTED is a job Slurm preempted (observed_preempted): replayed for
 *     the Elapsed it got;
 *   - a JobID with a '.' is a step (sacct without --allocations): not a job,
 *     skipped without a count.
 * Sizes from ReqTRES: node=N replicas (default 1); gres/gpu=G GPUs in
 * all (or the sum of gres/gpu:TYPE=G when only typed), G / N per replica
 * (a G not divisible by N is malformed); one typed gres/gpu:TYPE restricts
 * the job to that type; cpu=C and mem=M (K/M/G/T suffixes, MiB without)
 * per replica likewise.  AllocTRES's gres/gpu:TYPE is the type it ran on.
 *
 * Times are seconds since the earliest Submit of the file's jobs.
 *
 * Example row (header order free):
 *   JobID|Account|Submit|Start|End|Elapsed|Timelimit|State|ReqTRES|...
 *   48|vision|2026-12-08T01:34:00|2026-12-08T01:34:02|2026-12-08T01:34:20|
 *     00:00:18|00:03:00|COMPLETED|cpu=2,mem=8G,node=2,gres/gpu:h100=16|...
 * is a 2 x 8 h100 gang of tenant "vision" arriving at 0 (the first row)
 * that works 18 s, 2 s after its submit in Slurm (times from the
 * earliest Submit, here its own).
 *
 * Malformed rows (a missing field, an unreadable time or TRES, End before
 * Start) go through gp_trace_malformed: counted, the first few reported.
 */
#include "sim/trace.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "config/tenant_file.h"
#include "sim/strbuf.h"
#include "util/civil.h"

enum {
    SL_JOBID, SL_ACCOUNT, SL_SUBMIT, SL_START, SL_END, SL_ELAPSED, SL_TIMELIMIT, SL_STATE, SL_REQTRES,
    SL_ALLOCTRES, SL_NODELIST, SL_COLS
};
static const char *const slurm_columns[SL_COLS] = {"JobID", "Account", "Submit", "Start", "End", "Elapsed",
                                                   "Timelimit", "State", "ReqTRES", "AllocTRES",
                                                   "NodeList"};
static const bool slurm_required[SL_COLS] = {true, true, true, true, false, true, false, true, true, false, false};

#define SLURM_MAX_FIELDS 64

typedef struct slurm_reader {
    gp_trace *t;
    const gp_trace_read_opts *opts;
    const char *path;
    int index[SL_COLS]; /* -1: the file has no such field */
    int n_cols;
    bool have_base;
    int64_t base, scale;
} slurm_reader;

#define SLURM_MAX_SECONDS (INT64_C(1) << 40) /* longer spans are misreadings (35,000 years) */
#define SLURM_MAX_MIB (INT64_C(1) << 50)

/* Writes why a row is malformed into why and returns it. */
static const char *because(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static const char *because(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return why;
}

/* ---- times ---- */

/* Exactly `digits` decimal digits at s into *out. */
static bool fixed_number(const char *s, int digits, int64_t *out)
{
    int64_t v = 0;
    for (int i = 0; i < digits; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

bool gp_trace_slurm_timestamp(const char *s, int64_t *seconds)
{
    int64_t y, mo, d, h, mi, se;
    if (strlen(s) != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
        return false;
    if (!fixed_number(s, 4, &y) || !fixed_number(s + 5, 2, &mo) || !fixed_number(s + 8, 2, &d) ||
        !fixed_number(s + 11, 2, &h) || !fixed_number(s + 14, 2, &mi) || !fixed_number(s + 17, 2, &se))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return false;
    *seconds = gp_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    return true;
}

/* Up to 3 ':'-separated numbers of at most 9 digits each; false if none or bad. */
static int clock_parts(const char *s, int64_t parts[3])
{
    int n = 0;
    for (;;) {
        if (n == 3 || !isdigit((unsigned char)*s))
            return 0;
        int64_t v = 0;
        int digits = 0;
        while (isdigit((unsigned char)*s) && digits < 10) {
            v = v * 10 + (*s++ - '0');
            digits++;
        }
        if (digits > 9)
            return 0;
        parts[n++] = v;
        if (*s == '\0')
            return n;
        if (*s++ != ':')
            return 0;
    }
}

bool gp_trace_slurm_duration(const char *s, int64_t *seconds)
{
    if (strcmp(s, "UNLIMITED") == 0 || strcmp(s, "INFINITE") == 0) {
        *seconds = -1;
        return true;
    }
    int64_t days = 0, p[3];
    const char *dash = strchr(s, '-');
    if (dash) {
        int64_t d[3];
        char head[16];
        if (dash - s >= (long)sizeof head)
            return false;
        snprintf(head, sizeof head, "%.*s", (int)(dash - s), s);
        if (clock_parts(head, d) != 1)
            return false;
        days = d[0];
        s = dash + 1;
    }
    int n = clock_parts(s, p);
    if (n == 0)
        return false;
    int64_t h = 0, m = 0, sec = 0;
    if (dash) { /* D-H, D-H:M, D-H:M:S */
        h = p[0];
        m = n > 1 ? p[1] : 0;
        sec = n > 2 ? p[2] : 0;
    } else if (n == 1) { /* M */
        m = p[0];
    } else if (n == 2) { /* M:S */
        m = p[0];
        sec = p[1];
    } else { /* H:M:S */
        h = p[0];
        m = p[1];
        sec = p[2];
    }
    *seconds = ((days * 24 + h) * 60 + m) * 60 + sec;
    return *seconds <= SLURM_MAX_SECONDS;
}

/* ---- TRES lists: "cpu=2,mem=8G,node=1,billing=2,gres/gpu=2,gres/gpu:h100=2" ---- */

typedef struct tres {
    int64_t nodes, cpus, mem_mib, gpus, typed_gpus;
    int n_typed;
    char type[GP_NAME_MAX]; /* the (last) typed gres/gpu:TYPE */
} tres;

/* A count with an optional K/M/G/T/P suffix, in units of `unit_k` KiB
 * (1024 for MiB; 0: a plain count, no suffix allowed). */
static bool tres_amount(const char *s, int64_t unit_k, int64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0 && v < 1e15))
        return false;
    double k = 1;
    if (*end && unit_k == 0)
        return false;
    switch (*end) {
    case '\0': k = unit_k ? (double)unit_k : 1; break;
    case 'K': k = 1; break;
    case 'M': k = 1024; break;
    case 'G': k = 1024.0 * 1024; break;
    case 'T': k = 1024.0 * 1024 * 1024; break;
    case 'P': k = 1024.0 * 1024 * 1024 * 1024; break;
    default: return false;
    }
    if (*end && end[1] != '\0')
        return false;
    double amount = unit_k ? v * k / (double)unit_k : v;
    if (amount > (double)SLURM_MAX_MIB || (!unit_k && v != floor(v)))
        return false;
    *out = (int64_t)amount;
    return true;
}

/* Parses list into *out; false with *bad naming the item that is not. */
static bool parse_tres(char *list, tres *out, const char **bad)
{
    memset(out, 0, sizeof *out);
    if (list[0] == '\0')
        return true;
    for (char *save = NULL, *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        *bad = item;
        char *eq = strchr(item, '=');
        if (!eq)
            return false;
        *eq = '\0';
        const char *key = item, *val = eq + 1;
        int64_t v;
        bool ok = true;
        if (strcmp(key, "node") == 0)
            ok = tres_amount(val, 0, &out->nodes);
        else if (strcmp(key, "cpu") == 0)
            ok = tres_amount(val, 0, &out->cpus);
        else if (strcmp(key, "mem") == 0)
            ok = tres_amount(val, 1024, &out->mem_mib);
        else if (strcmp(key, "gres/gpu") == 0)
            ok = tres_amount(val, 0, &out->gpus);
        else if (strncmp(key, "gres/gpu:", 9) == 0) {
            ok = tres_amount(val, 0, &v) && key[9] != '\0' && strlen(key + 9) < GP_NAME_MAX;
            if (ok) {
                out->typed_gpus += v;
                out->n_typed++;
                snprintf(out->type, sizeof out->type, "%s", key + 9);
            }
        }
        *eq = '=';
        if (!ok)
            return false;
    }
    if (out->gpus == 0)
        out->gpus = out->typed_gpus;
    return true;
}

/* ---- rows ---- */

static gp_err slurm_header(slurm_reader *r, char *line, gp_error *err)
{
    char *cols[SLURM_MAX_FIELDS];
    r->n_cols = 0;
    for (char *p = line;;) {
        if (r->n_cols == SLURM_MAX_FIELDS)
            return gp_error_set(err, GP_ERR_INVALID, "trace", "%s:1: more than %d fields", r->path, SLURM_MAX_FIELDS);
        cols[r->n_cols++] = p;
        char *bar = strchr(p, '|');
        if (!bar)
            break;
        *bar = '\0';
        p = bar + 1;
    }
    for (int w = 0; w < SL_COLS; w++) {
        r->index[w] = -1;
        for (int c = 0; c < r->n_cols; c++)
            if (strcmp(cols[c], slurm_columns[w]) == 0)
                r->index[w] = c;
        if (r->index[w] < 0 && slurm_required[w])
            return gp_error_set(err, GP_ERR_INVALID, "trace",
                                "%s:1: the header has no field %s (sacct --parsable2 --format=...; docs/slurm.md)",
                                r->path, slurm_columns[w]);
    }
    return GP_OK;
}

/* Splits a row at '|'; false when the field count is not the header's.
 * sacct --parsable2 has no trailing '|'; --parsable's one is accepted. */
static bool split_row(slurm_reader *r, char *line, const char **f)
{
    int n = 0;
    for (char *p = line;;) {
        if (n == SLURM_MAX_FIELDS)
            return false;
        f[n++] = p;
        char *bar = strchr(p, '|');
        if (!bar)
            break;
        *bar = '\0';
        p = bar + 1;
    }
    if (n == r->n_cols + 1 && f[n - 1][0] == '\0')
        n--;
    return n == r->n_cols;
}

static const char *field(const slurm_reader *r, const char **f, int which)
{
    return r->index[which] >= 0 ? f[r->index[which]] : "";
}

/* The State's first word into buf. */
static void state_word(const char *state, char *buf, size_t cap)
{
    size_t n = strcspn(state, " ");
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), state);
}

static bool never_ended(const char *state)
{
    static const char *const open_states[] = {"PENDING", "RUNNING", "REQUEUED", "SUSPENDED", "RESIZING",
                                              "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "COMPLETING"};
    for (size_t i = 0; i < sizeof open_states / sizeof open_states[0]; i++)
        if (strcmp(state, open_states[i]) == 0)
            return true;
    return false;
}

/* A job cancelled while pending: no Start, or one without an allocation. */
static bool never_allocated(const slurm_reader *r, const char **f)
{
    int64_t start;
    if (!gp_trace_slurm_timestamp(field(r, f, SL_START), &start))
        return true;
    if (r->index[SL_NODELIST] >= 0)
        return strcmp(field(r, f, SL_NODELIST), "None assigned") == 0;
    return r->index[SL_ALLOCTRES] >= 0 && field(r, f, SL_ALLOCTRES)[0] == '\0';
}

/* Shapes the job from ReqTRES (and AllocTRES's type); NULL or why not. */
static const char *job_shape(slurm_reader *r, const char **f, gp_trace_job *j, char *why, size_t cap)
{
    char req[1024], alloc[1024];
    const char *bad = "";
    snprintf(req, sizeof req, "%s", field(r, f, SL_REQTRES));
    snprintf(alloc, sizeof alloc, "%s", field(r, f, SL_ALLOCTRES));
    tres q, a;
    if (!parse_tres(req, &q, &bad))
        return because(why, cap, "ReqTRES item \"%.64s\" is not KEY=COUNT", bad);
    if (!parse_tres(alloc, &a, &bad))
        return because(why, cap, "AllocTRES item \"%.64s\" is not KEY=COUNT", bad);
    int64_t nodes = q.nodes > 0 ? q.nodes : 1;
    if (nodes > GP_MAX_REPLICAS || q.gpus % nodes != 0 || q.gpus / nodes > GP_MAX_GPUS_PER_NODE)
        return because(why, cap, "ReqTRES asks %lld GPUs on %lld nodes: not 0..%d whole GPUs per node on at most %d",
                       (long long)q.gpus, (long long)nodes, GP_MAX_GPUS_PER_NODE, GP_MAX_REPLICAS);
    j->replicas = (int)nodes;
    j->gpus = (int)(q.gpus / nodes);
    j->cpu_millis = q.cpus * 1000 / nodes;
    j->mem_mib = q.mem_mib / nodes;
    int type = -1;
    if (q.n_typed == 1 && j->gpus > 0 && (type = gp_trace_type(r->t, q.type)) < 0)
        return because(why, cap, "more than %d GPU types", GP_MAX_GPU_TYPES);
    j->type_mask = type >= 0 ? (uint8_t)(1u << type) : 0;
    j->observed_type = a.n_typed == 1 ? (int8_t)gp_trace_type(r->t, a.type) : (int8_t)type;
    return NULL;
}

/* Submit, Start, End, Elapsed and Timelimit into j; NULL or why not. */
static const char *job_times(slurm_reader *r, const char **f, const char *state, gp_trace_job *j, char *why,
                             size_t cap)
{
    int64_t submit, start, end = -1, elapsed, limit = -1;
    const char *s = field(r, f, SL_SUBMIT), *e = field(r, f, SL_ELAPSED), *l = field(r, f, SL_TIMELIMIT);
    if (!gp_trace_slurm_timestamp(s, &submit))
        return because(why, cap, "Submit \"%.32s\" is not YYYY-MM-DDTHH:MM:SS", s);
    if (!gp_trace_slurm_timestamp(field(r, f, SL_START), &start))
        return because(why, cap, "Start \"%.32s\" is not a time", field(r, f, SL_START));
    if (!gp_trace_slurm_duration(e, &elapsed) || elapsed < 0)
        return because(why, cap, "Elapsed \"%.32s\" is not [D-]HH:MM:SS", e);
    if (l[0] && strcmp(l, "Partition_Limit") != 0 && !gp_trace_slurm_duration(l, &limit))
        return because(why, cap, "Timelimit \"%.32s\" is not [D-]HH:MM:SS or UNLIMITED", l);
    if (r->index[SL_END] >= 0 && !gp_trace_slurm_timestamp(field(r, f, SL_END), &end))
        return because(why, cap, "End \"%.32s\" is not a time", field(r, f, SL_END));
    if (start < submit || (end >= 0 && end < start))
        return because(why, cap, "times out of order (Submit %s, Start %s)", s, field(r, f, SL_START));
    if (!r->have_base) {
        r->base = submit;
        r->have_base = true;
    }
    if (end < 0)
        end = start + elapsed;
    j->submit = (submit - r->base) * r->scale;
    j->duration = (strcmp(state, "TIMEOUT") == 0 && limit >= 0 ? limit : elapsed) * r->scale;
    j->observed_start = (start - r->base) * r->scale;
    j->observed_end = (end - r->base) * r->scale;
    return NULL;
}

/* An account becomes a tenant name: the engine's rule for one (ASCII
 * letters, digits, '-', '_', '.'; not starting with '.'; shorter than
 * GP_NAME_MAX), checked here so a bad one is a bad row, not a failed run. */
static bool account_name_ok(const char *a)
{
    size_t n = strlen(a);
    if (n == 0 || n >= GP_NAME_MAX || a[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)a[i]) && a[i] != '-' && a[i] != '_' && a[i] != '.')
            return false;
    return true;
}

static gp_err slurm_line(void *ctx, char *line, size_t lineno, gp_error *err)
{
    slurm_reader *r = ctx;
    if (lineno == 1)
        return slurm_header(r, line, err);
    if (line[0] == '\0')
        return GP_OK;
    const char *f[SLURM_MAX_FIELDS];
    char why[GP_ERROR_MESSAGE_MAX / 2];
    bool whole = split_row(r, line, f);
    if (whole && strchr(field(r, f, SL_JOBID), '.'))
        return GP_OK; /* a step */
    r->t->rows++;
    if (!whole)
        return gp_trace_malformed(r->t, r->opts, r->path, lineno, err, "not %d '|'-separated fields", r->n_cols);
    char state[32];
    state_word(field(r, f, SL_STATE), state, sizeof state);
    if (never_ended(state) || never_allocated(r, f)) {
        r->t->not_run++;
        return GP_OK;
    }
    const char *account = field(r, f, SL_ACCOUNT);
    if (!account_name_ok(account))
        return gp_trace_malformed(r->t, r->opts, r->path, lineno, err, "Account \"%.32s\" is not an account name",
                                  account);
    gp_trace_job j;
    memset(&j, 0, sizeof j);
    const char *bad = job_times(r, f, state, &j, why, sizeof why);
    if (!bad)
        bad = job_shape(r, f, &j, why, sizeof why);
    if (bad)
        return gp_trace_malformed(r->t, r->opts, r->path, lineno, err, "%s", bad);
    if (!gp_trace_tenant(r->t, account, &j.tenant))
        return gp_error_set(err, GP_ERR_NOMEM, "tenant", "cannot add tenant %s", account);
    j.kind = GP_KIND_TRAINING;
    j.topology = GP_TOPO_ANY;
    j.observed = true;
    j.observed_preempted = strcmp(state, "PREEMPTED") == 0;
    return gp_trace_add(r->t, &j, err);
}

/* Jobs [first, n_jobs) were timed from the first row's Submit; sacct lists
 * by job id, not by Submit, so move them to start at the earliest one. */
static void start_at_earliest_submit(gp_trace *t, size_t first)
{
    int64_t earliest = INT64_MAX;
    for (size_t i = first; i < t->n_jobs; i++)
        earliest = t->jobs[i].submit < earliest ? t->jobs[i].submit : earliest;
    for (size_t i = first; i < t->n_jobs; i++) {
        t->jobs[i].submit -= earliest;
        t->jobs[i].observed_start -= earliest;
        t->jobs[i].observed_end -= earliest;
    }
}

gp_err gp_trace_read_slurm(gp_trace *t, const char *path, const gp_trace_read_opts *opts, gp_error *err)
{
    slurm_reader r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.opts = opts;
    r.path = path;
    r.scale = opts && opts->time_scale > 0 ? opts->time_scale : 1;
    size_t first = t->n_jobs;
    gp_err rc = gp_trace_each_line(path, slurm_line, &r, err);
    if (rc == GP_OK)
        start_at_earliest_submit(t, first);
    return rc;
}

/* ---- scontrol show nodes --oneliner -> fleet-file YAML ---- */

typedef struct node_reader {
    gp_trace *scratch; /* counts malformed lines */
    const gp_trace_read_opts *opts;
    const char *path;
    gp_strbuf yaml;
    size_t cpu_nodes;
} node_reader;

/* The value of KEY= in a oneliner (up to the next space) into out. */
static bool node_value(const char *line, const char *key, char *out, size_t cap)
{
    size_t klen = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += klen) {
        if ((p != line && p[-1] != ' ') || p[klen] != '=')
            continue;
        const char *v = p + klen + 1;
        size_t n = strcspn(v, " ");
        if (n >= cap)
            return false;
        snprintf(out, cap, "%.*s", (int)n, v);
        return true;
    }
    return false;
}

/* Gres "gpu:h100:8(S:0-1)", "gpu:8", "(null)": GPU type and count (0: none). */
static bool node_gpus(const char *gres, char *type, size_t cap, int64_t *count)
{
    *count = 0;
    snprintf(type, cap, "gpu");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", gres);
    bool ok = true;
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        item[strcspn(item, "(")] = '\0';
        if (strncmp(item, "gpu:", 4) != 0)
            continue;
        char *last = strrchr(item, ':');
        int64_t n;
        if (!gp_trace_parse_i64(last + 1, &n) || n < 0 || *count > 0)
            return false; /* two GPU types on one node: a fleet node has one */
        if (last > item + 3) {
            *last = '\0';
            ok = strlen(item + 4) < cap && item[4] != '\0';
            snprintf(type, cap, "%s", item + 4);
        }
        *count = n;
    }
    return ok;
}

static gp_err node_line(void *ctx, char *line, size_t lineno, gp_error *err)
{
    node_reader *r = ctx;
    if (line[0] == '\0')
        return GP_OK;
    r->scratch->rows++;
    char name[GP_NAME_MAX], gres[256] = "", cpus[32] = "0", mem[32] = "0", features[256] = "", type[GP_NAME_MAX];
    int64_t gpus, cpu = 0, mem_mib = 0;
    if (!node_value(line, "NodeName", name, sizeof name) || name[0] == '\0' || strchr(name, '"'))
        return gp_trace_malformed(r->scratch, r->opts, r->path, lineno, err, "no NodeName=");
    node_value(line, "Gres", gres, sizeof gres);
    node_value(line, "CPUTot", cpus, sizeof cpus);
    node_value(line, "RealMemory", mem, sizeof mem);
    node_value(line, "AvailableFeatures", features, sizeof features);
    if (!node_gpus(gres, type, sizeof type, &gpus) || gpus > GP_MAX_GPUS_PER_NODE || strchr(type, '"'))
        return gp_trace_malformed(r->scratch, r->opts, r->path, lineno, err,
                                  "node %s: Gres \"%.64s\" is not one gpu[:TYPE]:N with N <= %d", name, gres,
                                  GP_MAX_GPUS_PER_NODE);
    if (!gp_trace_parse_i64(cpus, &cpu) || cpu < 0 || !gp_trace_parse_i64(mem, &mem_mib) || mem_mib < 0)
        return gp_trace_malformed(r->scratch, r->opts, r->path, lineno, err, "node %s: CPUTot or RealMemory", name);
    if (gpus == 0) {
        r->cpu_nodes++;
        return GP_OK;
    }
    gp_strbuf_printf(&r->yaml,
                     "  - {name: \"%s\", gpu_type: \"%s\", gpus: %lld, cpu_millis: %lld, mem_mib: %lld}  # features: %s\n",
                     name, type, (long long)gpus, (long long)cpu * 1000, (long long)mem_mib,
                     features[0] ? features : "(none)");
    return GP_OK;
}

gp_err gp_trace_slurm_fleet_yaml(const char *path, const gp_trace_read_opts *opts, char **yaml, size_t *cpu_nodes,
                                 gp_error *err)
{
    gp_trace scratch;
    gp_trace_init(&scratch);
    node_reader r = {.scratch = &scratch, .opts = opts, .path = path};
    gp_strbuf_printf(&r.yaml, "# generated from %s (scontrol show nodes --oneliner)\nnodes:\n", path);
    gp_err rc = gp_trace_each_line(path, node_line, &r, err);
    gp_trace_free(&scratch);
    if (rc == GP_OK && r.yaml.oom)
        rc = gp_error_set(err, GP_ERR_NOMEM, "fleet", "out of memory");
    if (rc) {
        gp_strbuf_free(&r.yaml);
        return rc;
    }
    *yaml = gp_strbuf_take(&r.yaml);
    if (cpu_nodes)
        *cpu_nodes = r.cpu_nodes;
    return GP_OK;
}

gp_err gp_trace_slurm_tenants_yaml(const gp_trace *t, char **yaml, gp_error *err)
{
    gp_strbuf b = {0};
    gp_strbuf_printf(&b, "# one tenant per Slurm account, equal weights, no guarantees\ntenants:\n");
    for (size_t i = 0; i < t->n_tenants; i++)
        gp_strbuf_printf(&b, "  - {path: \"%s\", weight: 1}\n", t->tenants[i]);
    if (b.oom) {
        gp_strbuf_free(&b);
        return gp_error_set(err, GP_ERR_NOMEM, "tenants", "out of memory");
    }
    *yaml = gp_strbuf_take(&b);
    return GP_OK;
}

size_t gp_trace_slurm_map_accounts(gp_trace *t, const gp_tenant_file *tenants)
{
    size_t n = tenants->n_tenants;
    size_t renamed = 0;
    for (size_t i = 0; i < t->n_tenants; i++) {
        if (strchr(t->tenants[i], '/'))
            continue;
        int match = -1, matches = 0;
        for (size_t p = 0; p < n; p++) {
            const char *slash = strrchr(tenants->tenants[p].path, '/');
            if (slash && strcmp(slash + 1, t->tenants[i]) == 0) {
                match = (int)p;
                matches++;
            }
        }
        if (matches == 1) {
            snprintf(t->tenants[i], GP_PATH_MAX, "%s", tenants->tenants[match].path);
            renamed++;
        }
    }
    return renamed;
}

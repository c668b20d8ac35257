/* trace.h - a workload trace in memory: the jobs a simulation replays.
 *
 * Every trace format (openb pod lists, Microsoft ITP clusters, the
 * synthetic generator) is read into this one shape, so the simulator,
 * the inflation sampler and the reports know nothing about formats.
 *
 * A job is what the engine will be asked to run: replicas x gpus whole
 * GPUs (gpus = 0: a CPU-only pod), or one fractional share per replica
 * (gpu_milli 1..999 with isolation mps or timeslice, or a MIG profile), GPU types it
 * accepts, CPU and memory per replica, its tenant (an index into the
 * trace's tenant table), and when it arrives and how long it works.
 * duration < 0 means it never ends by itself (the FGD experiment has no
 * departures).
 *
 * Reading rows: a row that cannot be read (wrong column count, a number
 * that is not one, a value out of range) is "malformed".  With
 * gp_trace_read_opts.strict it stops the read with "FILE:LINE: why";
 * otherwise it is reported the same way on opts.warn (when not NULL,
 * at most opts.max_warnings lines) and counted in trace.malformed.
 * Never silently misread.
 *
 * Ownership: gp_trace_init makes an empty trace; every reader appends to
 * a caller-owned trace; gp_trace_free releases its arrays.
 */
#ifndef GP_SIM_TRACE_H
#define GP_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/types.h"
#include "util/error.h"

typedef struct gp_trace_job {
    uint64_t id;                 /* 1.. in trace order */
    int64_t submit;              /* seconds from the trace's start */
    int64_t duration;            /* seconds of work; < 0 = never ends */
    int replicas;
    int gpus;                    /* whole GPUs per replica; 0 = CPU-only, or 1 with a share */
    int gpu_milli;               /* 1..999: a fractional share per replica; 0 = whole GPUs */
    gp_isolation isolation;      /* exclusive, or mig/mps/timeslice for shares */
    char mig_profile[16];        /* isolation mig: the GPU-instance profile ("1g.10gb"); gpu_milli is its share */
    uint8_t type_mask;           /* accepted GPU types (bits into trace.types); 0 = any */
    uint16_t tenant;             /* index into trace.tenants */
    gp_job_kind kind;
    gp_topology topology;
    int priority;
    int64_t grace_s;             /* checkpoint grace on preemption */
    int64_t cpu_millis, mem_mib; /* per replica */
    /* what the trace's own scheduler did (Slurm's Start, End, State and
     * allocated GPU type); observed is false for formats without it */
    bool observed, observed_preempted;
    int8_t observed_type;        /* index into trace.types; -1: unknown */
    int64_t observed_start, observed_end;
} gp_trace_job;

typedef struct gp_trace {
    gp_trace_job *jobs;
    size_t n_jobs, cap_jobs;
    char (*tenants)[GP_PATH_MAX]; /* leaf tenant paths */
    size_t n_tenants, cap_tenants;
    char types[GP_MAX_GPU_TYPES][GP_NAME_MAX]; /* GPU type names used by type_mask */
    int n_types;
    size_t rows;                 /* data rows read */
    size_t malformed;            /* rows skipped as malformed */
    size_t not_run;              /* rows of jobs that never ran to an end (Slurm: cancelled while pending,
                                    still pending or running): skipped, not malformed */
    size_t first_malformed[4];   /* line numbers of the first malformed rows (0: none) */
} gp_trace;

typedef struct gp_trace_read_opts {
    bool strict;                 /* first malformed row is an error */
    FILE *warn;                  /* where skipped rows are reported (NULL: nowhere) */
    size_t max_warnings;         /* report at most this many (then a count) */
    const char *tenant;          /* tenant path for formats without one (ITP: default from the file name) */
    int64_t time_scale;          /* Slurm: every time and duration x this (0: 1); for time-compressed histories */
} gp_trace_read_opts;

void gp_trace_init(gp_trace *t);
void gp_trace_free(gp_trace *t);

/* Appends a copy of job (its id is set to n_jobs + 1). */
gp_err gp_trace_add(gp_trace *t, const gp_trace_job *job, gp_error *err);
/* Index of a tenant path, added when new.  Returns false when out of memory
 * or past 65535 tenants. */
bool gp_trace_tenant(gp_trace *t, const char *path, uint16_t *index);
/* Bit of a GPU type name, added when new; -1 when the table is full. */
int gp_trace_type(gp_trace *t, const char *name);
/* Whole GPUs a job asks for, in milli-GPUs: replicas x (gpus x 1000 or gpu_milli). */
int64_t gp_trace_job_milli(const gp_trace_job *j);
/* Sort jobs by submit time (stable: ties keep trace order); ids renumbered 1... */
gp_err gp_trace_sort(gp_trace *t, gp_error *err);

/* ---- readers (each appends to t) ---- */

/* openb pod list (Alibaba cluster-trace-gpu-v2023): name, cpu_milli,
 * memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase, creation_time,
 * deletion_time, scheduled_time.  A pod is one replica of num_gpu whole
 * GPUs, or (num_gpu 1, gpu_milli < 1000) an MPS share; gpu_spec lists
 * accepted types separated by '|'; duration = deletion - scheduled (or
 * creation when not scheduled).  Every pod goes to tenant opts.tenant
 * ("openb" when NULL); qos decides the kind: LS -> inference, else training.
 * Lists with only the first five columns (the multigpu ones) read too:
 * pods then arrive one per second in row order and never leave. */
gp_err gp_trace_read_openb(gp_trace *t, const char *path, const gp_trace_read_opts *opts, gp_error *err);

/* openb node list: sn, cpu_milli, memory_mib, gpu, model.  Writes the GPU
 * nodes as fleet-file YAML (config/fleet_file.h) into *yaml (malloc'ed,
 * the caller frees), all in one block, so every fleet source is read by
 * one reader.  Nodes without GPUs are left out (counted in *cpu_nodes). */
gp_err gp_trace_openb_fleet_yaml(const char *path, const gp_trace_read_opts *opts, char **yaml, size_t *cpu_nodes,
                                 gp_error *err);

/* Microsoft ITP cluster CSV (ElasticFlow raw traces): job_id,
 * submission_time, duration, num_gpu.  num_gpu <= 8 is one replica; more is
 * a gang of 8-GPU replicas (or the largest divisor <= 8).  Jobs go to
 * opts.tenant, or "itp/<file name without .csv>". */
gp_err gp_trace_read_itp(gp_trace *t, const char *path, const gp_trace_read_opts *opts, gp_error *err);

/* Slurm accounting: `sacct --allocations --parsable2 --allusers --starttime
 * ... --format=JobID,Account,User,Partition,QOS,Submit,Start,End,Elapsed,
 * Timelimit,State,ReqTRES,AllocTRES,NodeList` (fields found by the header,
 * any order; JobID, Account, Submit, Start, Elapsed, State and ReqTRES
 * required).  trace_slurm.c has the rules; docs/slurm.md the manual.
 * Jobs go to tenant "<Account>" (gp_trace_slurm_map_accounts renames them
 * after a tenant file); times are seconds since the file's earliest
 * Submit, x opts.time_scale. */
gp_err gp_trace_read_slurm(gp_trace *t, const char *path, const gp_trace_read_opts *opts, gp_error *err);

/* `scontrol show nodes --oneliner` output as fleet-file YAML in *yaml
 * (malloc'ed, the caller frees), like gp_trace_openb_fleet_yaml: one node
 * per NodeName with a gpu Gres, its type (gpu:TYPE:N; "gpu" when untyped),
 * CPUTot and RealMemory; nodes without GPUs are counted in *cpu_nodes. */
gp_err gp_trace_slurm_fleet_yaml(const char *path, const gp_trace_read_opts *opts, char **yaml, size_t *cpu_nodes,
                                 gp_error *err);

/* A tenant file for a Slurm trace read without one: every trace tenant
 * (account) a top-level tenant of weight 1, no guarantee (*yaml malloc'ed). */
gp_err gp_trace_slurm_tenants_yaml(const gp_trace *t, char **yaml, gp_error *err);

/* Rename each account tenant "A" (a path without '/') to the one path of
 * the tenant file whose last component is A (research/vision for vision);
 * accounts that match none or several keep their name.  Returns how many
 * were renamed.  paths: the tenant file's. */
struct gp_tenant_file;
size_t gp_trace_slurm_map_accounts(gp_trace *t, const struct gp_tenant_file *tenants);

/* Slurm's times: "[D-]HH:MM:SS" and its shorter forms (M, M:S, D-H, D-H:M)
 * into seconds; "UNLIMITED" and "INFINITE" are -1.  False when neither. */
bool gp_trace_slurm_duration(const char *s, int64_t *seconds);
/* "YYYY-MM-DDTHH:MM:SS" (UTC as written) into seconds since 1970; false
 * for anything else ("Unknown", "None"). */
bool gp_trace_slurm_timestamp(const char *s, int64_t *seconds);

/* ---- shared by the readers (trace_csv.c) ---- */

#define GP_TRACE_MAX_COLUMNS 16

/* One CSV line split in place at commas (no quoting: none of the formats
 * quote).  Returns the column count, or -1 when there are more than max. */
int gp_trace_csv_split(char *line, char **cols, int max);
/* Strict number parsing of one cell. */
bool gp_trace_parse_i64(const char *s, int64_t *out);
/* Report a malformed row (see the file comment); returns GP_OK when it is
 * skipped, the error when strict. */
gp_err gp_trace_malformed(gp_trace *t, const gp_trace_read_opts *opts, const char *path, size_t line,
                          gp_error *err, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Read a text file line by line; fn gets each line without its newline and
 * its 1-based number.  Stops at fn's first error. */
typedef gp_err (*gp_trace_line_fn)(void *ctx, char *line, size_t lineno, gp_error *err);
gp_err gp_trace_each_line(const char *path, gp_trace_line_fn fn, void *ctx, gp_error *err);

#endif

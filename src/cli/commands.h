/* commands.h - the CLI's commands, one function each.
 *
 * Each takes the configured client and the command's own arguments
 * (argv[0] is the command name), prints a table (or the server's JSON
 * with --json) and returns the exit code (client.h).  `--help` on any
 * command prints its usage and returns 0.
 */
#ifndef GP_CLI_COMMANDS_H
#define GP_CLI_COMMANDS_H

#include "cli/client.h"

#include <stdint.h>

typedef int (*gp_command_fn)(gp_client *c, int argc, char **argv);

typedef struct gp_command {
    const char *name;
    gp_command_fn run;
    const char *usage; /* the --help text */
} gp_command;

/* NULL-terminated. */
extern const gp_command GP_COMMANDS[];

/* cmd_jobs.c */
int gp_cmd_submit(gp_client *c, int argc, char **argv);
int gp_cmd_jobs(gp_client *c, int argc, char **argv);
int gp_cmd_job(gp_client *c, int argc, char **argv);
int gp_cmd_cancel(gp_client *c, int argc, char **argv);

/* cmd_control.c */
int gp_cmd_hold(gp_client *c, int argc, char **argv);
int gp_cmd_release(gp_client *c, int argc, char **argv);
int gp_cmd_update(gp_client *c, int argc, char **argv);
/* gpupool cancel with --user/--name/--state/--tenant: cancels every job that matches. */
int gp_cancel_matching(gp_client *c, int argc, char **argv);
/* method (DELETE, or PATCH with body) on each handle a person typed
 * (cli/job_handle.h): a job, array members (13_[0-19]) or, for an id that
 * is an array's, the whole array; every handle is read first (a bad one is
 * a usage error naming it, nothing done).  print_one prints a job changed
 * by its own id; array members print a line each.  The first failure's
 * exit code. */
int gp_each_handle(gp_client *c, const char *command, const char *method, char **args, int n, json_t *body,
                   void (*print_one)(const json_t *job));
/* The one job text names (a job id, or one array member: 13_4) into *id;
 * false with the error printed and its exit code in *rc (a usage error
 * for bad text or several members, the server's when there is no such
 * member).  For the commands that show one job: job, why, logs. */
bool gp_one_job_id(gp_client *c, const char *command, const char *text, uint64_t *id, int *rc);

/* cmd_logs.c */
int gp_cmd_logs(gp_client *c, int argc, char **argv);
int gp_cmd_checkpoint(gp_client *c, int argc, char **argv);

/* cmd_why.c */
int gp_cmd_why(gp_client *c, int argc, char **argv);

/* top.c */
int gp_cmd_top(gp_client *c, int argc, char **argv);

/* cmd_bill.c */
int gp_cmd_prices(gp_client *c, int argc, char **argv);
int gp_cmd_bill(gp_client *c, int argc, char **argv);

/* cmd_bookings.c */
int gp_cmd_book(gp_client *c, int argc, char **argv);
int gp_cmd_bookings(gp_client *c, int argc, char **argv);

/* cmd_pools.c */
int gp_cmd_pools(gp_client *c, int argc, char **argv);
int gp_cmd_pool(gp_client *c, int argc, char **argv);

/* cmd_secret.c */
int gp_cmd_secret(gp_client *c, int argc, char **argv);

/* cmd_drain.c: gpupool drain, and gpupool nodes drain|undrain|resume (argv[0] the verb) */
int gp_cmd_drain(gp_client *c, int argc, char **argv);
int gp_cmd_nodes_drain(gp_client *c, int argc, char **argv);

/* completion.c */
int gp_cmd_completion(gp_client *c, int argc, char **argv);

/* cmd_admin.c */
int gp_cmd_nodes(gp_client *c, int argc, char **argv);
int gp_cmd_tenants(gp_client *c, int argc, char **argv);
int gp_cmd_quota(gp_client *c, int argc, char **argv);
int gp_cmd_apply(gp_client *c, int argc, char **argv);
int gp_cmd_usage(gp_client *c, int argc, char **argv);
int gp_cmd_token(gp_client *c, int argc, char **argv);
int gp_cmd_users(gp_client *c, int argc, char **argv);
int gp_cmd_audit(gp_client *c, int argc, char **argv);
int gp_cmd_ledger(gp_client *c, int argc, char **argv);
int gp_cmd_admin(gp_client *c, int argc, char **argv);

/* cmd_login.c */
int gp_cmd_login(gp_client *c, int argc, char **argv);
int gp_cmd_logout(gp_client *c, int argc, char **argv);
int gp_cmd_whoami(gp_client *c, int argc, char **argv);

/* cmd_rolebinding.c */
int gp_cmd_rolebindings(gp_client *c, int argc, char **argv);
int gp_cmd_rolebinding(gp_client *c, int argc, char **argv);

/* cmd_gpu_types.c */
int gp_cmd_gpu_types(gp_client *c, int argc, char **argv);

/* Shared helpers. */
int gp_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Reads a whole file (or stdin for "-"); NULL with a message on error. */
char *gp_read_file(const char *path, size_t *len);
/* Formats a JSON scalar for a table cell into buf. */
const char *gp_cell(const json_t *v, char *buf, size_t cap);
/* An object's "reason" as a person reads it: the engine's "at t=SECONDS"
 * as a local time (gp_time_in_text), and a finished job's with its last
 * replica's end ("failed; replica 0 on t4-2: exit code 3 (exited)");
 * NULL when it has none. */
const char *gp_reason_text(const json_t *o, int64_t now, char *buf, size_t cap);
/* "H100=16,A100=8" style summary of {"gpu": {...}} into buf. */
const char *gp_gpu_summary(const json_t *res, char *buf, size_t cap);

#endif

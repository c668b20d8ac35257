/* main.c - gpupool, the command line client of gpupoold.
 *
 * gpupool [GLOBAL FLAGS] COMMAND [ARGS] [GLOBAL FLAGS]
 *   global flags: --server URL[,URL...], --token T | --token-file F, --cacert F, --wait-leader S,
 *   --json
 * gpupool --version: the version and the git commit it was built from
 *
 * Global flags may stand before or after the command, as with kubectl
 * (`gpupool jobs --json` = `gpupool --json jobs`): they are taken out of
 * the arguments wherever they are, up to a "--" (what follows it belongs
 * to the job's command), and the command parses the rest.  A value may be
 * the next argument or follow '=' (--server=URL).
 * The CLI speaks only HTTP to the daemon (no engine code is linked in).
 */
#include "cli/commands.h"
#include "cli/timefmt.h"
#include "cli/suggest.h"
#include "util/file.h"
#include "version.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const gp_command GP_COMMANDS[] = {
    {"submit", gp_cmd_submit,
     "usage: gpupool submit [-f job.yaml|job.json] [--tenant PATH] [--name N] [--gpus N] [--replicas N]\n"
     "                      [--gpu-type T]... [--cpu-millis N] [--mem-mib N] [--topology any|block|nvlink]\n"
     "                      [--isolation exclusive|mig|mps|timeslice] [--mig PROFILE | --mps PERCENT | --timeslice]\n"
     "                      [--priority P] [--grace D] [--runtime D] [--time-limit D] [--hold-until-fit]\n"
     "                      [--kind training|inference|interactive] [--user U] [--pids-max N] [--array N]\n"
     "                      [--restart-policy never|on-failure] [--max-restarts N]\n"
     "                      [--stop-signal SIGTERM|SIGINT|SIGHUP|SIGQUIT|SIGUSR1|SIGUSR2]\n"
     "                      [--image REF] [--mount VOLUME:TARGET[:ro|:rw]]... [--shm-mib N] [--read-only-root]\n"
     "                      [--network host|private] [--booking NAME] [-- COMMAND ARGS...]\n"
     "Submit a job; flags override the file's fields.  Prints the job with its state and reason.\n"
     "--booking NAME runs it guaranteed on its tenant's booking NAME from the booking's start (gpupool book).\n"
     "--image runs it in a container: docker://REGISTRY/NAME:TAG[@sha256:HEX], oci:/PATH[:TAG] or dir:/PATH,\n"
     "from a source its tenant allows; an untrusted tenant's job needs one.  --mount binds one of the\n"
     "tenant's volumes (gpupool tenants) at TARGET; --shm-mib sizes /dev/shm (counted in --mem-mib).\n"
     "--stop-signal is what a preemption, cancel or time limit sends first (default SIGTERM); the whole\n"
     "tree is killed when the grace (--grace) ends.\n"
     "--restart-policy on-failure requeues the whole job when a replica fails, up to --max-restarts times\n"
     "(default 3) with a back-off (10 s doubling, at most 5 min); the default is on-failure for inference,\n"
     "never for other kinds.\n"
     "--grace, --runtime and --time-limit take seconds (7200), a unit (90m, 2h, 1d) or Slurm's H:MM:SS\n"
     "and D-HH:MM:SS.  A job that no node or block of the fleet could ever hold (too many GPUs per\n"
     "replica, a gang larger than any block, CPU or memory beyond any node, a sharing mode no GPU has, a\n"
     "declared GPU type no node of which has joined yet) is\n"
     "refused with the reason; --hold-until-fit submits it anyway, to wait for nodes that could.\n"
     "--tenant may be left out with a member token: the job goes to the token's tenant.\n"
     "--cpu-millis, --mem-mib and --pids-max (processes per replica) left out take the tenant's job\n"
     "defaults; more than the tenant's job maximum is refused.\n"
     "A file may hold a list of jobs (YAML sequence or JSON array), and --array N submits N copies of the\n"
     "job, each with GPUPOOL_ARRAY_INDEX=0..N-1 and GPUPOOL_ARRAY_SIZE=N in its env: either way in one\n"
     "request that gpupoold takes whole or refuses whole (at most 10000 jobs).\n"},
    {"jobs", gp_cmd_jobs,
     "usage: gpupool jobs [--tenant PATH] [--user U] [--state STATE|live] [--all] [--from TIME] [--to TIME]\n"
     "                    [--limit N] [--before ID] [-o table|csv|json] [--watch [--interval S]]\n"
     "List jobs you may see (a member token: its tenant's), newest first: live ones (pending to preempting)\n"
     "unless --all, --state or a time window asks for finished ones too.  STATE: pending, admitted, running,\n"
     "preempting, succeeded, failed, cancelled, or live (the first four).  --from/--to: jobs alive some time\n"
     "in that window (submitted before --to, not ended before --from); TIME: YYYY-MM-DD[ HH:MM[:SS]], ISO 8601\n"
     "with a zone, an age like 24h or -24h, or epoch seconds.  -o csv: one line per job, times ISO 8601 UTC,\n"
     "elapsed_s in seconds.  --watch redraws every S seconds (default 2) until\n"
     "interrupted; when the output is not a terminal it prints each refresh after a time line.\n"},
    {"job", gp_cmd_job,
     "usage: gpupool job ID|ID_N [--watch [--interval S]]\nOne job with its placement and history (ID_N: member N "
     "of job array ID); --watch refreshes it until it ends.\n"},
    {"why", gp_cmd_why,
     "usage: gpupool why ID|ID_N\nWhy a job is where it is: the reason, what blocks it (a limit, another job, the\n"
     "fleet) and what would change it.\n"},
    {"cancel", gp_cmd_cancel,
     "usage: gpupool cancel ID|ID_N|ID_[RANGE]...\n       gpupool cancel [--user U] [--name N] [--state S] [--tenant T]\n"
     "Cancel jobs (running jobs get their grace): by id, or every job that matches the filters (--state\n"
     "default live: pending to preempting); exit code of the first failure.  Job arrays as Slurm names\n"
     "them: 13_4 is member 4 of array 13, '13_[0-19]' or '13_[1,3,5-7]' several (quote the brackets), and\n"
     "13, the id of an array (its first member), the whole array; so for hold, release and update.\n"},
    {"hold", gp_cmd_hold,
     "usage: gpupool hold ID|ID_N|ID_[RANGE]...\nHold pending jobs: they stay in their queue but are not placed until\n"
     "released (`gpupool why` says who held them).  Only a pending job is held (409 otherwise).\n"},
    {"release", gp_cmd_release,
     "usage: gpupool release ID|ID_N|ID_[RANGE]...\nRelease held jobs: the next pass considers them again.\n"},
    {"update", gp_cmd_update,
     "usage: gpupool update ID|ID_N|ID_[RANGE]... [--time-limit D] [--priority N] [--hold|--release]\n"
     "Change pending jobs: --time-limit as at submit (2h, 90m or seconds; 0 = the tenant's default, never\n"
     "above it), --priority -1000..1000 (higher first in its tenant's queue).  A job already placed keeps\n"
     "its values (409).\n"},
    {"logs", gp_cmd_logs,
     "usage: gpupool logs ID|ID_N [--replica N] [--follow]\n"
     "What a replica of the job wrote (stdout and stderr), from its latest run, as the node agent shipped it\n"
     "(default replica 0).  --follow (-f) keeps printing new output until the replica's run ended and all of\n"
     "it arrived, or the job ended.\n"},
    {"checkpoint", gp_cmd_checkpoint,
     "usage: gpupool checkpoint\n"
     "Inside a job: say that it saved a checkpoint (creates $GPUPOOL_CHECKPOINT_DIR/.done).  During a\n"
     "preemption's grace this ends the grace at once: the job is stopped and requeued, and the work before\n"
     "the checkpoint is not counted lost.  Outside a job it fails (GPUPOOL_CHECKPOINT_DIR is not set).\n"},
    {"nodes", gp_cmd_nodes,
     "usage: gpupool nodes\n"
     "       gpupool nodes show NAME\n"
     "       gpupool nodes approve NAME\n"
     "       gpupool nodes drain NODE... | --all-of-type TYPE [--reason TEXT]\n"
     "       gpupool nodes undrain|resume NODE... | --all-of-type TYPE\n"
     "The fleet: nodes, whole GPUs free, sharing mode, the share of shared GPUs in use, GPUs healthy, state and\n"
     "why a node drains (REASON: the reason and who drained it).\n"
     "`show NAME`: one node and, per GPU, its uuid, health, since when, its last check, why it is out and its\n"
     "XIDs.  `approve NAME` (admin, operator): a node awaiting approval (gpupoold --approve-nodes) takes work;\n"
     "for any other node, its next registration with a join token alone is let in, once, within an hour (an\n"
     "agent that lost its credential).  `remove NAME` (admin): the node's credentials and certificates are\n"
     "refused from its next call, its jobs requeued; it comes back only through `approve NAME`.  `drain`\n"
     "(admin, operator): no new work goes to the nodes; the reason (1..200 characters), who drained and since\n"
     "when are kept on each until `undrain` (or `resume`).\n"},
    {"drain", gp_cmd_drain,
     "usage: gpupool drain NODE... [--reason TEXT] [--undo]\n"
     "Drain nodes (no new work), or undrain them: gpupool nodes drain|undrain.\n"},
    {"gpu-types", gp_cmd_gpu_types,
     "usage: gpupool gpu-types\n       gpupool gpu-types declare|undeclare NAME\n"
     "The GPU types gpupoold knows: those of registered nodes and those an admin declared.  A quota or a\n"
     "job may name only a known type (in any case: h100 is the fleet's H100); declare (admin) makes a type\n"
     "known before its nodes arrive (jobs for it wait until they do), undeclare takes that back.\n"},
    {"book", gp_cmd_book,
     "usage: gpupool book --type TYPE --gpus N --start TIME (--duration D | --end TIME) --name NAME\n"
     "                    [--topology any|block|nvlink] [--replica-gpus N] [--tenant PATH] [--no-lend]\n"
     "                    [--repeat daily|weekdays|weekly --until TIME]\n"
     "Book N GPUs of TYPE for a tenant ahead of time (a member's own tenant when none is named).  TIME is\n"
     "local (YYYY-MM-DDTHH:MM), ISO 8601 with a zone, +2h or epoch seconds; D like 48h.  Refused (exit 7)\n"
     "with the earliest start of the same shape that can be honoured.  Jobs run on it with submit --booking\n"
     "NAME; its idle GPUs are lent unless --no-lend.  --repeat books each occurrence up to --until on its own.\n"},
    {"bookings", gp_cmd_bookings,
     "usage: gpupool bookings [--tenant PATH] [--from TIME] [--to TIME]\n"
     "       gpupool bookings show|cancel NAME\n"
     "       gpupool bookings extend|shorten NAME --end TIME\n"
     "The calendar of bookings you may see, in local time, and each org's booking allowance left this week.\n"
     "show: one booking's placement, state and the jobs cleared for it.  cancel, extend and shorten: the\n"
     "booking's owner tenant (an extension only while the engine can still honour it).\n"},
    {"pools", gp_cmd_pools,
     "usage: gpupool pools\n"
     "The pools: each one's owner tenant, whether the owner lends its nodes, nodes, GPUs, and the whole GPUs\n"
     "other tenants borrow there.\n"},
    {"pool", gp_cmd_pool,
     "usage: gpupool pool own NAME TENANT\n       gpupool pool disown NAME\n"
     "(admin) Own pool NAME to TENANT: only TENANT's subtree places there, others only while TENANT lends\n"
     "(its lend), as borrowers that TENANT's jobs take the nodes back from with grace.  disown: anyone places.\n"},
    {"tenants", gp_cmd_tenants,
     "usage: gpupool tenants [PATH]\n"
     "       gpupool tenants create PATH [--guarantee TYPE=N,...,cpu_millis=N,mem_mib=N] [--limit ...]\n"
     "                              [--user-limit ...] [--weight W] [--lend yes|no] [--trust trusted|untrusted]\n"
     "                              [--job-defaults FIELD=N,...] [--job-max FIELD=N,...] [--nodes shared|dedicated]\n"
     "       gpupool tenants delete PATH\n"
     "The tenant tree (or PATH's subtree) with guarantees, limits and usage.  create makes a new tenant\n"
     "(refused if PATH exists; fields not given take their defaults); delete removes one with no children\n"
     "and no live jobs.\n"},
    {"quota", gp_cmd_quota,
     "usage: gpupool quota set PATH [--guarantee TYPE=N,...,cpu_millis=N,mem_mib=N] [--limit ...]\n"
     "                       [--user-limit ...] [--weight W] [--lend yes|no] [--trust trusted|untrusted]\n"
     "                       [--job-defaults FIELD=N,...] [--job-max FIELD=N,...] [--nodes shared|dedicated]\n"
     "Change the fields given of an existing tenant, keeping every other field (a merge patch: --limit\n"
     "L40S=6 changes the L40S limit only); prints what changed.  --job-defaults and --job-max (FIELD:\n"
     "cpu_millis, mem_mib, pids_max) are what the tenant's jobs get when they set none, and the most they\n"
     "may ask for.  A PATH that does not exist is an error\n"
     "naming the nearest one (exit 5): create tenants with `tenants create` or `apply`.\n"},
    {"apply", gp_cmd_apply,
     "usage: gpupool apply -f tenants.yaml [--dry-run] [--prune]\n"
     "Apply a tenant tree (YAML or JSON); idempotent, all or nothing.  Prints what it created, updated,\n"
     "left unchanged and deleted, then the field-level diff.  Parents not in the file must exist.\n"
     "--dry-run: print the same diff and change nothing (the engine's quota rules are checked only by a\n"
     "real apply).  --prune: also delete tenants you may change that the file does not list (ancestors\n"
     "of listed tenants stay), children first; refused, with nothing changed, if one has live jobs.\n"},
    {"usage", gp_cmd_usage,
     "usage: gpupool usage [--tenant PATH] [--from TIME] [--to TIME] [--by tenant|user] [-o table|csv|json]\n"
     "                     [--under-sm PCT] [--under-for DURATION]\n"
     "GPU-hours by tenant (--by user: and user), GPU type, class (a member token: its tenant's), each tenant's\n"
     "subtree (its org roll-up) and the total, then allocated vs used per tenant\n"
     "and type: allocated, used (driven: SM activity x GPUs x time, from the agents' telemetry),\n"
     "lost-to-preemption and idle-held (allocated - used).  --under-sm PCT --under-for DURATION (defaults 10\n"
     "and 30m; either one asks): also the running jobs below PCT % SM for at least DURATION, each with the\n"
     "smallest MIG profile and MPS share that would hold its peak SM and memory.\n"
     "TIME is a local date (2024-11-24), date-time (2024-11-24 06:30), ISO 8601 with a zone\n"
     "(2024-11-24T06:30:00Z, 2024-11-24T08:30+02:00), a relative time (-24h or 24h: that long ago;\n"
     "+2h: from now; units s, m, h, d, w) or epoch seconds.  -o csv: kind (usage, subtree, total), tenant,\n"
     "user, gpu_type, class, gpu_hours, and the window's from and to in ISO 8601 UTC; -o json: the API's answer.\n"},
    {"top", gp_cmd_top,
     "usage: gpupool top [--interval S]\n"
     "A live view of the fleet: occupancy per GPU type, the top tenants by GPUs in use against their guarantee,\n"
     "the oldest pending jobs with why they wait and the latest preemptions with why.  Redraws every S seconds\n"
     "(default 2) until q or Ctrl-C; when stdout is not a terminal (or with --json) it prints one snapshot.\n"},
    {"token", gp_cmd_token,
     "usage: gpupool token create --name N --role admin|operator|auditor|tenant-admin|member [--scope TENANT]\n"
     "                            [--user U] [--ttl DURATION]\n"
     "       gpupool token create --name N --role join --nodes PATTERNS [--single-use] [--ttl DURATION]\n"
     "       gpupool token list\n       gpupool token revoke ID|NAME\n"
     "A join token registers only the node names its --nodes patterns cover (comma-separated shell patterns,\n"
     "h100-*,a100-0[0-7]; \"*\" for any); --single-use: its first registration spends it.\n"
     "A member token needs --user (its jobs run as that user).  --ttl: 45s, 90m, 12h, 30d, 2w; without it\n"
     "a member token expires after gpupoold's --member-token-ttl (default 90d), other roles never.\n"
     "token list shows each token's expiry and last use (kept to about a minute).\n"},
    {"users", gp_cmd_users,
     "usage: gpupool users\n       gpupool users bind NAME TENANT\n       gpupool users unbind NAME\n"
     "The tenant each job user is bound to: a user's jobs and tokens stay inside that tenant's subtree.  The\n"
     "first member token for a user (or an admin's first job naming it) binds it; bind (admin) moves a user,\n"
     "unbind (admin) forgets the binding.\n"},
    {"rolebindings", gp_cmd_rolebindings,
     "usage: gpupool rolebindings\n"
     "The role bindings you may see (admins, operators and auditors: all; a tenant-admin: those in its subtree).\n"},
    {"rolebinding", gp_cmd_rolebinding,
     "usage: gpupool rolebinding create (--group G | --user U) --role admin|tenant-admin|member [--scope PATH]\n"
     "       gpupool rolebinding delete ID\n"
     "What people who sign in through the identity provider (gpupoold --oidc-issuer) may do: a binding gives\n"
     "a provider group (the token's groups claim) or user a role at a tenant (admin: the root, no --scope).\n"
     "A person holds the union of its user's and groups' bindings.  An admin binds anything; a tenant-admin\n"
     "binds inside its own subtree and never admin.  Each change is audited.\n"},
    {"secret", gp_cmd_secret,
     "usage: gpupool secret set TENANT NAME (--from-file FILE | --value-stdin)\n"
     "       gpupool secret set --tenant TENANT --registry HOST[:PORT] --username USER --password-file FILE\n"
     "       gpupool secret list TENANT\n       gpupool secret rm TENANT NAME\n"
     "       gpupool secret rm --tenant TENANT --registry HOST[:PORT]\n"
     "A tenant's secrets (tenant-admins of the tenant and admins set and remove them; whoever sees the\n"
     "tenant lists them).  Jobs name them: \"env_from_secret\": {\"HF_TOKEN\": \"hf\"} takes secret hf of the\n"
     "job's tenant, else of its nearest ancestor that has one.  gpupoold keeps them encrypted and hands a\n"
     "value only to the node that runs the replica; list shows names, sizes, who set them and when, never\n"
     "a value.  The value is the file's bytes exactly (or stdin's), at most 64 KiB of UTF-8.\n"
     "--registry: the tenant's login to an image registry, for its jobs' docker:// images there (the\n"
     "password file's last newline dropped); handed to a node only to pull, never in a job's environment.\n"},
    {"audit", gp_cmd_audit,
     "usage: gpupool audit [--after SEQ] [--limit N]\n       gpupool audit verify\n"
     "Read the audit log, or recompute its hash chain (exit 1 and the first broken link if it is broken).\n"},
    {"ledger", gp_cmd_ledger,
     "usage: gpupool ledger verify\n       gpupool ledger [--after SEQ] [--limit N]\n"
     "Recompute the usage ledger's hash chain (admin and auditor; exit 1 naming the first bad record and why),\n"
     "or print its records, one canonical JSON line each (docs/metering.md).\n"},
    {"prices", gp_cmd_prices,
     "usage: gpupool prices\n"
     "       gpupool prices set --effective TIME --gpu MODEL=PRICE[,MODEL=PRICE...] [--premium nvlink=F,block=F]\n"
     "                          [--currency CUR] [--backdate]\n"
     "       gpupool prices mode ORG chargeback|showback\n"
     "The price table: per GPU model a price per GPU-hour (an exact decimal, at most 6 decimals) and the\n"
     "nvlink/block premium factors, versioned by the time they take effect; and each org's billing mode.\n"
     "set (admin) adds a version (TIME in the past needs --backdate); mode (admin) sets an org's mode.\n"},
    {"bill", gp_cmd_bill,
     "usage: gpupool bill [--period YYYY-MM] [--tenant PATH] [--hourly] [-o table|csv|json]\n"
     "       gpupool bill --ledger FILE.jsonl --prices FILE.json [--period YYYY-MM] [--as-of EPOCH] [--tenant PATH]\n"
     "                    [--hourly] [-o table|csv|json]\n"
     "A month's bill (docs/metering.md; --period: default this UTC month): per tenant its floor (its own guarantee, paid used or not), the\n"
     "topology surcharge of its guaranteed work, its burst work, and anything unpriced; amount, subtotal of\n"
     "its subtree and what is due (chargeback orgs).  Admins, operators and auditors also get the fleet's\n"
     "GPU-hours (physical = allocated shares + idle in guarantees + idle unowned; --hourly: per hour).\n"
     "-o csv: one line per ledger record billed (ISO 8601 UTC times, GPUs and GPU-hours).  With --ledger (an\n"
     "export of `gpupool ledger`) and --prices (GET /v1/prices) it computes the same bill offline, without a\n"
     "server (--as-of: default the month's end).\n"},
    {"admin", gp_cmd_admin,
     "usage: gpupool admin export-log --out FILE\n"
     "Write the daemon's event log to FILE (admin and auditor), for a bug report: gpupool-replay FILE re-runs\n"
     "it through a fresh engine and checks every decision.\n"},
    {"login", gp_cmd_login,
     "usage: gpupool login [--browser [--port N]] [--issuer URL] [--scope SCOPE]... [--acr VALUES] [--idp-cacert FILE]\n"
     "Sign in with the identity provider gpupoold names (GET /v1/auth): by default the device grant (open a URL\n"
     "anywhere and enter the code shown: works over SSH); --browser: the code flow with PKCE, the browser ($BROWSER,\n"
     "else xdg-open) redirected to a listener on 127.0.0.1 (--port: a fixed port, for providers that match the\n"
     "redirect URI exactly).  The tokens are kept 0600 in ~/.config/gpupool/signin.json and used (refreshed when\n"
     "due) by every command that has no token of its own.  --scope adds a scope, --acr asks for an\n"
     "authentication level (acr_values: a second factor, where the provider names it so); --issuer picks one of\n"
     "several providers; --idp-cacert: the CA of the provider's HTTPS (default: the system's).\n"},
    {"logout", gp_cmd_logout,
     "usage: gpupool logout\n"
     "Forget this server's sign-in, revoking its tokens at the provider when it has a revocation endpoint.\n"},
    {"whoami", gp_cmd_whoami,
     "usage: gpupool whoami\n"
     "Who gpupoold takes you for (GET /v1/whoami): user, groups, roles and their scopes, second factor, expiry,\n"
     "and where the token came from.\n"},
    {"completion", gp_cmd_completion,
     "usage: gpupool completion bash|zsh\nPrint a shell completion script: source <(gpupool completion bash)\n"},
    {NULL, NULL, NULL},
};

static const char USAGE[] =
    "usage: gpupool [--server URL[,URL...]] [--token TOKEN | --token-file FILE] [--cacert FILE]\n"
    "               [--wait-leader SECONDS] [--json] COMMAND [ARGS]\n"
    "       gpupool --version\n"
    "(the flags above may also follow the command: gpupool jobs --json)\n"
    "\n"
    "Commands: submit, jobs, job, why, cancel, hold, release, update, logs, checkpoint, nodes, drain, gpu-types [declare|undeclare],\n"
    "          tenants [create|delete],\n"
    "          quota set, apply, usage, top, token create|list|revoke, users [bind|unbind],\n"
    "          secret set|list|rm, audit [verify], ledger [verify], prices [set|mode], bill,\n"
    "          admin export-log, login, logout, whoami, completion.\n"
    "          gpupool COMMAND --help for each.\n"
    "\n"
    "Server and token: flags, else GPUPOOL_SERVER / GPUPOOL_TOKEN (or GPUPOOL_TOKEN_FILE),\n"
    "else ~/.config/gpupool/config (server = URL, token = TOKEN, token_file = FILE, cacert = FILE;\n"
    "# comments; any other line is an error naming the file and line), else the sign-in of gpupool login.\n"
    "Several replicas: a comma-separated list of URLs; writes follow the leader (307), and while none\n"
    "leads (503) the CLI waits up to --wait-leader seconds (default 15).\n"
    "\n"
    "Exit codes: 0 ok, 1 error, 2 bad command line, 3 cannot connect, 4 not authenticated/allowed,\n"
    "            5 not found, 6 invalid request, 7 conflict, 8 rate limited or server error.\n";

int gp_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "gpupool %s: ", command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return GP_EXIT_USAGE;
}

char *gp_read_file(const char *path, size_t *len)
{
    char *text = NULL;
    gp_error err;
    gp_err rc = strcmp(path, "-") == 0 ? gp_file_read_stream(stdin, "stdin", &text, len, &err)
                                       : gp_file_read_all(path, &text, len, &err);
    if (rc) {
        fprintf(stderr, "gpupool: cannot read %s\n", err.message);
        return NULL;
    }
    return text;
}

const char *gp_reason_text(const json_t *o, int64_t now, char *buf, size_t cap)
{
    const char *reason = json_string_value(json_object_get(o, "reason"));
    const char *last_exit = json_string_value(json_object_get(o, "last_exit"));
    const char *state = json_string_value(json_object_get(o, "state"));
    bool ended = state && (!strcmp(state, "succeeded") || !strcmp(state, "failed") || !strcmp(state, "cancelled"));
    char both[512];
    if (reason && last_exit && ended && !strstr(reason, last_exit)) {
        snprintf(both, sizeof both, "%s; %s", reason, last_exit);
        reason = both;
    }
    return reason ? gp_time_in_text(reason, now, buf, cap) : NULL;
}

const char *gp_cell(const json_t *v, char *buf, size_t cap)
{
    if (json_is_string(v))
        snprintf(buf, cap, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, cap, "%g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, cap, "%s", json_is_true(v) ? "yes" : "no");
    else
        snprintf(buf, cap, "-");
    return buf;
}

const char *gp_gpu_summary(const json_t *res, char *buf, size_t cap)
{
    size_t used = 0;
    const char *type;
    json_t *v;
    buf[0] = '\0';
    json_object_foreach(json_object_get(res, "gpu"), type, v) {
        if (json_number_value(v) == 0)
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s=%g", used ? "," : "", type, json_number_value(v));
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
    }
    if (!buf[0])
        snprintf(buf, cap, "-");
    return buf;
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    }
    return false;
}

/* The global flags, as found anywhere on the command line. */
typedef struct globals {
    const char *server, *token, *token_file, *cacert, *wait_leader;
    bool json, help, version;
} globals;

/* Where the value of a global flag that takes one goes ("--server"), or
 * NULL when name (len bytes, without "=VALUE") is no such flag. */
static const char **value_slot(globals *g, const char *name, size_t len)
{
    const struct {
        const char *name;
        const char **slot;
    } flags[] = {{"--server", &g->server}, {"--token", &g->token}, {"--token-file", &g->token_file},
                 {"--cacert", &g->cacert}, {"--wait-leader", &g->wait_leader}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
            return flags[i].slot;
    return NULL;
}

/* Takes the global flags out of argv (keeping the order of the rest) and
 * leaves argc/argv as "gpupool COMMAND ARGS...".  Before the command, any
 * other dash argument is an error (or --help); after it, the command's. */
static int take_global_flags(int *argc, char **argv, globals *g)
{
    int kept = 1;
    bool command_seen = false, after_dashes = false;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        const char *eq = strchr(a, '=');
        const char **slot = after_dashes ? NULL : value_slot(g, a, eq ? (size_t)(eq - a) : strlen(a));
        after_dashes = after_dashes || strcmp(a, "--") == 0;
        if (slot && eq) {
            *slot = eq + 1;
        } else if (slot) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "gpupool: %s needs a value\n", a);
                return GP_EXIT_USAGE;
            }
            *slot = argv[++i];
        } else if (!after_dashes && strcmp(a, "--json") == 0) {
            g->json = true;
        } else if (!command_seen && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            g->help = true;
        } else if (!command_seen && strcmp(a, "--version") == 0) {
            g->version = true;
        } else if (!command_seen && a[0] == '-') {
            fprintf(stderr, "gpupool: unknown option %s\n%s", a, USAGE);
            return GP_EXIT_USAGE;
        } else {
            command_seen = true;
            argv[kept++] = argv[i];
        }
    }
    argv[kept] = NULL;
    *argc = kept;
    return GP_EXIT_OK;
}

static int unknown_command(const char *typed)
{
    const char *names[64];
    size_t n = 0;
    for (const gp_command *k = GP_COMMANDS; k->name && n < 64; k++)
        names[n++] = k->name;
    const char *near = gp_suggest(typed, names, n);
    if (near)
        fprintf(stderr, "gpupool: unknown command %s; did you mean %s?  (gpupool --help lists them)\n", typed, near);
    else
        fprintf(stderr, "gpupool: unknown command %s\n%s", typed, USAGE);
    return GP_EXIT_USAGE;
}

/* Whether the usage text names flag ("--tenant", "-o") as a word: after
 * the line's start, a space, '[', '(' or '|', and before a space, ']',
 * '|', ')' or the line's end; *value: a value follows it there
 * ("--tenant PATH", "-o table|csv|json"; not "--watch [--interval S]"). */
static bool usage_names(const char *usage, const char *flag, bool *value)
{
    size_t n = strlen(flag);
    for (const char *p = usage; (p = strstr(p, flag)) != NULL; p++) {
        bool starts = p == usage || strchr(" [(|\n", p[-1]);
        if (starts && p[n] && strchr(" ]|)\n", p[n])) {
            *value = p[n] == ' ' && p[n + 1] && !strchr("[-(", p[n + 1]);
            return true;
        }
    }
    return false;
}

/* Every "--flag" before "--" must be one of the command's (as its usage
 * text lists them): a typo is refused with the nearest one, before
 * anything is sent; so is a one-letter option it does not list, and a
 * last flag without the value it takes (getopt's own messages name
 * neither the command nor its usage).  "-24h" is a value, not an option. */
static int check_flags(const gp_command *cmd, int argc, char **argv)
{
    char buf[2048];
    const char *flags[64];
    size_t n = gp_usage_flags(cmd->usage, buf, sizeof buf, flags, 63);
    flags[n++] = "--help";
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i];
        char name[128];
        bool value = false;
        snprintf(name, sizeof name, "%.*s", a[1] == '-' ? (int)strcspn(a, "=") : 2, a);
        bool one_letter = a[0] == '-' && isalpha((unsigned char)a[1]);
        if (one_letter && strcmp(a, "-h") != 0 && !usage_names(cmd->usage, name, &value))
            return gp_usage_error(cmd->name, "unknown option %s\n%s", name, cmd->usage);
        if ((one_letter || strncmp(a, "--", 2) == 0) && i == argc - 1 && strcmp(name, a) == 0 &&
            usage_names(cmd->usage, name, &value) && value)
            return gp_usage_error(cmd->name, "%s needs a value\n%s", name, cmd->usage);
        if (strncmp(a, "--", 2) != 0)
            continue;
        bool known = false;
        for (size_t f = 0; f < n && !known; f++)
            known = strcmp(flags[f], name) == 0;
        if (known)
            continue;
        const char *near = gp_suggest(name, flags, n);
        if (near)
            return gp_usage_error(cmd->name, "unknown flag %s; did you mean %s?", name, near);
        return gp_usage_error(cmd->name, "unknown flag %s\n%s", name, cmd->usage);
    }
    return GP_EXIT_OK;
}

int main(int argc, char **argv)
{
    globals g = {0};
    gp_client c;
    memset(&c, 0, sizeof c);
    int rc = take_global_flags(&argc, argv, &g);
    if (rc != GP_EXIT_OK)
        return rc;
    if (g.help) {
        fputs(USAGE, stdout);
        return GP_EXIT_OK;
    }
    if (g.version) {
        printf("gpupool %s (commit %s)\n", GP_VERSION, GP_GIT_COMMIT);
        return GP_EXIT_OK;
    }
    if (argc < 2) {
        fputs(USAGE, stderr);
        return GP_EXIT_USAGE;
    }
    c.json = g.json;
    const gp_command *cmd = NULL;
    for (const gp_command *k = GP_COMMANDS; k->name && !cmd; k++)
        if (strcmp(k->name, argv[1]) == 0)
            cmd = k;
    if (!cmd)
        return unknown_command(argv[1]);
    rc = check_flags(cmd, argc - 1, argv + 1);
    if (rc != GP_EXIT_OK)
        return rc;
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    if (wants_help(sub_argc, sub_argv)) {
        fputs(cmd->usage, stdout);
        return GP_EXIT_OK;
    }
    rc = gp_client_configure(&c, g.server, g.token, g.token_file, g.cacert, g.wait_leader);
    if (rc == GP_EXIT_OK)
        rc = cmd->run(&c, sub_argc, sub_argv);
    gp_client_close(&c);
    return rc;
}

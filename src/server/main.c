/* main.c - gpupoold: command line, signals, start and stop.
 *
 * SIGINT and SIGTERM stop gracefully: the HTTP server stops taking
 * connections and finishes the requests it has, the engine thread commits
 * its last batch, the store is closed.  (kill -9 is safe too: every
 * acknowledged request is committed; see docs/operations.md.)
 */
#include "server/server.h"
#include "util/duration.h"
#include "version.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char USAGE[] =
    "usage: gpupoold [options]\n"
    "\n"
    "The gpupool control plane: HTTP API, durable store, scheduling loop.\n"
    "\n"
    "  --listen HOST:PORT      address to serve on (default 127.0.0.1:8750; port 0 = any free port)\n"
    "  --store sqlite:PATH     durable store, created on first start (default sqlite:./var/gpupool.db)\n"
    "  --fleet FILE            fleet file (YAML or JSON): static nodes, without agents\n"
    "  --tls-cert FILE         PEM certificate: serve HTTPS (with --tls-key)\n"
    "  --tls-key FILE          PEM private key\n"
    "  --allow-plain-http      allow plain HTTP on a non-loopback address\n"
    "  --allow-open-store-mode serve a SQLite store (or its folder's -wal, -shm) that group or other\n"
    "                          may read or that another user owns, with a warning; default: refused\n"
    "  --audit-refusals-per-min N  refused requests (401, 403) in the audit log: at most N rows a\n"
    "                          minute per remote address, status and token, then one row counting\n"
    "                          the rest (default 10; 0 = none audited)\n"
    "  --token-file FILE       where the bootstrap admin token is written on first start\n"
    "                          (default: admin.token next to the SQLite file)\n"
    "  --port-file FILE        write the bound port to FILE once listening\n"
    "  --max-body BYTES        largest request body (default 1048576)\n"
    "  --max-connections N     concurrent connections (default 256)\n"
    "  --timeout SECONDS       idle connection timeout (default 30)\n"
    "  --rate-limit N          requests per second per token, 0 = off (default 1000)\n"
    "  --tick-ms MS            scheduling pass timer (default 1000)\n"
    "  --pass-min-ms MS        after a change, the next pass once MS passed since the last (default 20)\n"
    "  --log-level LEVEL       debug, info, warn, error (default info)\n"
    "  --member-token-ttl T    expiry of member tokens created without --ttl: 45s, 90m, 12h, 30d, 2w;\n"
    "                          0 = never (default 90d; the bootstrap admin token never expires)\n"
    "  --min-job-uid UID       the lowest uid a job's user may have on this host (default 1000): job\n"
    "                          users that resolve to uid 0 or below it are refused; node agents check again\n"
    "  --node-lost-after S     an agent node silent S seconds is lost, its jobs requeued (default 60)\n"
    "  --no-partition-fence    agents cut off from gpupoold keep their replicas running: no fence terms are\n"
    "                          sent, so a lost node's jobs may run twice (default: fenced at S/2, killed by 3S/4)\n"
    "  --job-logs DIR          where replicas' logs shipped by the agents are kept\n"
    "                          (default: the SQLite file's path + .logs)\n"
    "  --drain-on-gpu-failure  a GPU an agent reports unhealthy drains its node; the drain is undone\n"
    "                          when the node's GPUs are all healthy again (an operator's drain never is)\n"
    "  --metrics-tenants N     /metrics: the N tenants using or guaranteed the most GPUs get their own\n"
    "                          label, the rest count as tenant=\"other\" (default 50; 0 = all other)\n"
    "  --metrics-open          serve /metrics without a token (default: admin, operator or auditor)\n"
    "  --web-root DIR          the web dashboard's files, served at / (default: the installed\n"
    "                          share/gpupool/web, else the source tree's web/)\n"
    "  --snapshot-every-events N  an engine snapshot every N events logged, so a restart replays\n"
    "                          only the log after it (default 10000; 0 = none); at least one\n"
    "                          event per 128 bytes of the last snapshot, so a big state is\n"
    "                          not written more often than its tail would cost to replay\n"
    "  --snapshot-every-s S    ... or every S seconds when events were logged since (default 300)\n"
    "  --advertise-url URL     where the other replicas send writers while this one leads\n"
    "                          (default http://LISTEN, https with --tls-cert)\n"
    "  --lease-ms MS           the leader lease: renewed every MS/3, a follower takes over once it\n"
    "                          expired (default 3000; at least 300)\n"
    "  --holder NAME           this replica's name in the lease (default HOST:PID)\n"
    "  --approve-nodes         a new agent node comes in cordoned until `gpupool nodes approve NAME`\n"
    "  --secret-key-file FILE  the key that seals tenants' secrets (32 bytes, 0600; made on first start;\n"
    "                          default: secret.key next to the SQLite file)\n"
    "  --agent-mtls MODE       with HTTPS, agents' client certificates from gpupoold's node CA:\n"
    "                          off (default), optional (issued; an agent without one is logged and\n"
    "                          let in) or required (a node credential without its certificate is 403)\n"
    "  --agent-cert-ttl S      a node certificate's life in seconds (default 86400; agents renew at 2/3)\n"
    "  --rotate-node-ca        replace the node CA at this start (docs/operations.md)\n"
    "  --oidc-issuer URL       trust tokens this OpenID Connect provider signs (https; repeatable, each\n"
    "                          with its --oidc-audience, paired in order)\n"
    "  --oidc-audience ID      the aud the issuer's tokens must carry for gpupool\n"
    "  --oidc-client-id ID     the public client the CLI and dashboard sign in with (default: the audience)\n"
    "  --oidc-username-claim C the claim naming the user (default preferred_username, else ISSUER#sub)\n"
    "  --oidc-groups-claim C   the claim listing the user's groups (default groups)\n"
    "  --oidc-ca FILE          PEM CA certificates to trust for the issuers (default: the system's)\n"
    "  --oidc-mfa-for WHO      who needs a second factor to change things: admin,tenant-admin (default),\n"
    "                          all or none\n"
    "  --oidc-mfa-acr VALUE    an acr that counts as a second factor (besides amr mfa, otp, hwk, ...)\n"
    "  --oidc-allow-http-loopback  allow plain-http issuers on 127.0.0.1, ::1 or localhost (tests only)\n"
    "  --oidc-refresh-min-s S  an issuer's keys refetched for an unknown kid at most every S seconds\n"
    "                          (default 30)\n"
    "  --store-wal-limit MIB   a SQLite WAL file larger than MIB is emptied by a checkpoint as soon\n"
    "                          as the readers allow (default 64)\n"
    "  --store-reserve MIB     writes are refused (503 store_full) while the store's filesystem has\n"
    "                          less than MIB free; reads go on; writes resume by themselves (default 64)\n"
    "  --version               the version and git commit\n"
    "  -h, --help              this text\n";

static bool parse_long(const char *text, long min, long max, long *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (!text[0] || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_agent_mtls(const char *text, gp_agent_mtls *out)
{
    static const char *const names[] = {"off", "optional", "required"};
    for (int i = 0; i < 3; i++)
        if (strcmp(text, names[i]) == 0) {
            *out = (gp_agent_mtls)i;
            return true;
        }
    return false;
}

static int bad_option(const char *name, const char *value)
{
    fprintf(stderr, "gpupoold: bad value for --%s: %s\n", name, value);
    return 2;
}

/* Options without a letter (issue 29's nodes and secrets). */
enum { OPT_APPROVE_NODES = 2901, OPT_SECRET_KEY_FILE };
/* Issue 38's partition fence (api_agents.c fence_terms). */
enum { OPT_NO_PARTITION_FENCE = 3901 };
/* Issue 33's agent certificates. */
enum { OPT_AGENT_MTLS = 3301, OPT_AGENT_CERT_TTL, OPT_ROTATE_NODE_CA };
/* Issue 38's bounded WAL and full disks. */
enum { OPT_STORE_WAL_LIMIT = 3801, OPT_STORE_RESERVE };

/* Issue 33's single sign-on options (oidc.h). */
enum {
    OPT_OIDC_ISSUER = 3401, OPT_OIDC_AUDIENCE, OPT_OIDC_CLIENT_ID, OPT_OIDC_USERNAME_CLAIM, OPT_OIDC_GROUPS_CLAIM,
    OPT_OIDC_CA, OPT_OIDC_MFA_FOR, OPT_OIDC_MFA_ACR, OPT_OIDC_HTTP_LOOPBACK, OPT_OIDC_REFRESH_MIN_S
};

/* One --oidc-* option into o: -1 when taken, 2 when its value is bad (said on stderr). */
static int oidc_option(int c, const char *arg, gp_oidc_config *o)
{
    long v;
    switch (c) {
    case OPT_OIDC_ISSUER:
    case OPT_OIDC_AUDIENCE: {
        int *n = c == OPT_OIDC_ISSUER ? &o->n_issuers : &o->n_audiences;
        if (*n >= GP_OIDC_ISSUERS_MAX)
            return bad_option(c == OPT_OIDC_ISSUER ? "oidc-issuer" : "oidc-audience", "more than 8");
        (c == OPT_OIDC_ISSUER ? o->issuer : o->audience)[(*n)++] = arg;
        return -1;
    }
    case OPT_OIDC_CLIENT_ID: o->client_id = arg; return -1;
    case OPT_OIDC_USERNAME_CLAIM: o->username_claim = arg; return -1;
    case OPT_OIDC_GROUPS_CLAIM: o->groups_claim = arg; return -1;
    case OPT_OIDC_CA: o->ca_file = arg; return -1;
    case OPT_OIDC_MFA_ACR: o->mfa_acr = arg; return -1;
    case OPT_OIDC_HTTP_LOOPBACK: o->allow_http_loopback = true; return -1;
    case OPT_OIDC_MFA_FOR: return gp_oidc_mfa_parse(arg, &o->mfa_for) ? -1 : bad_option("oidc-mfa-for", arg);
    case OPT_OIDC_REFRESH_MIN_S:
        if (!parse_long(arg, 1, 86400, &v))
            return bad_option("oidc-refresh-min-s", arg);
        o->min_refresh_s = (int)v;
        return -1;
    default: return 2;
    }
}

static int parse_args(int argc, char **argv, gp_server_config *cfg)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},    {"store", required_argument, NULL, 's'},
        {"fleet", required_argument, NULL, 'f'},     {"tls-cert", required_argument, NULL, 'c'},
        {"tls-key", required_argument, NULL, 'k'},   {"allow-plain-http", no_argument, NULL, 'P'},
        {"token-file", required_argument, NULL, 't'}, {"port-file", required_argument, NULL, 'p'},
        {"max-body", required_argument, NULL, 'b'},  {"max-connections", required_argument, NULL, 'n'},
        {"timeout", required_argument, NULL, 'T'},   {"rate-limit", required_argument, NULL, 'r'},
        {"tick-ms", required_argument, NULL, 'i'},   {"log-level", required_argument, NULL, 'L'},
        {"pass-min-ms", required_argument, NULL, 'm'}, {"member-token-ttl", required_argument, NULL, 'E'},
        {"node-lost-after", required_argument, NULL, 'N'}, {"job-logs", required_argument, NULL, 'J'},
        {"drain-on-gpu-failure", no_argument, NULL, 'G'},
        {"metrics-tenants", required_argument, NULL, 'M'}, {"metrics-open", no_argument, NULL, 'O'},
        {"web-root", required_argument, NULL, 'W'},
        {"snapshot-every-events", required_argument, NULL, 'S'}, {"snapshot-every-s", required_argument, NULL, 'A'},
        {"advertise-url", required_argument, NULL, 'U'}, {"lease-ms", required_argument, NULL, 'D'},
        {"holder", required_argument, NULL, 'H'},    {"min-job-uid", required_argument, NULL, 'u'},
        {"allow-open-store-mode", no_argument, NULL, 'o'},
        {"audit-refusals-per-min", required_argument, NULL, 'R'},
        {"holder", required_argument, NULL, 'H'},
        {"approve-nodes", no_argument, NULL, OPT_APPROVE_NODES},
        {"secret-key-file", required_argument, NULL, OPT_SECRET_KEY_FILE},
        {"agent-mtls", required_argument, NULL, OPT_AGENT_MTLS},
        {"agent-cert-ttl", required_argument, NULL, OPT_AGENT_CERT_TTL},
        {"rotate-node-ca", no_argument, NULL, OPT_ROTATE_NODE_CA},
        {"oidc-issuer", required_argument, NULL, OPT_OIDC_ISSUER},
        {"oidc-audience", required_argument, NULL, OPT_OIDC_AUDIENCE},
        {"oidc-client-id", required_argument, NULL, OPT_OIDC_CLIENT_ID},
        {"oidc-username-claim", required_argument, NULL, OPT_OIDC_USERNAME_CLAIM},
        {"oidc-groups-claim", required_argument, NULL, OPT_OIDC_GROUPS_CLAIM},
        {"oidc-ca", required_argument, NULL, OPT_OIDC_CA},
        {"oidc-mfa-for", required_argument, NULL, OPT_OIDC_MFA_FOR},
        {"oidc-mfa-acr", required_argument, NULL, OPT_OIDC_MFA_ACR},
        {"oidc-allow-http-loopback", no_argument, NULL, OPT_OIDC_HTTP_LOOPBACK},
        {"oidc-refresh-min-s", required_argument, NULL, OPT_OIDC_REFRESH_MIN_S},
        {"store-wal-limit", required_argument, NULL, OPT_STORE_WAL_LIMIT},
        {"store-reserve", required_argument, NULL, OPT_STORE_RESERVE},
        {"no-partition-fence", no_argument, NULL, OPT_NO_PARTITION_FENCE},
        {"version", no_argument, NULL, 'V'},         {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    long v;
    gp_log_level level;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': cfg->listen = optarg; break;
        case 's': cfg->store_url = optarg; break;
        case 'f': cfg->fleet_path = optarg; break;
        case 'J': cfg->job_logs = optarg; break;
        case 'G': cfg->drain_on_gpu_failure = true; break;
        case 'O': cfg->metrics_open = true; break;
        case 'W': cfg->web_root = optarg; break;
        case 'U': cfg->advertise_url = optarg; break;
        case 'H': cfg->holder = optarg; break;
        case 'o': cfg->allow_open_store_mode = true; break;
        case 'R':
            if (!parse_long(optarg, 0, 1000, &v))
                return bad_option("audit-refusals-per-min", optarg);
            cfg->audit_refusals_per_min = (int)v;
            break;
        case OPT_APPROVE_NODES: cfg->approve_nodes = true; break;
        case OPT_SECRET_KEY_FILE: cfg->secret_key_file = optarg; break;
        case OPT_AGENT_MTLS:
            if (!parse_agent_mtls(optarg, &cfg->agent_mtls))
                return bad_option("agent-mtls", optarg);
            break;
        case OPT_AGENT_CERT_TTL:
            if (!parse_long(optarg, 2, 366L * 86400, &v))
                return bad_option("agent-cert-ttl", optarg);
            cfg->agent_cert_ttl_s = v;
            break;
        case OPT_ROTATE_NODE_CA: cfg->rotate_node_ca = true; break;
        case OPT_STORE_WAL_LIMIT:
            if (!parse_long(optarg, 0, 1 << 20, &v))
                return bad_option("store-wal-limit", optarg);
            cfg->store_wal_limit = (int64_t)v << 20;
            break;
        case OPT_STORE_RESERVE:
            if (!parse_long(optarg, 0, 1 << 20, &v))
                return bad_option("store-reserve", optarg);
            cfg->store_reserve = (int64_t)v << 20;
            break;
        case OPT_NO_PARTITION_FENCE: cfg->no_partition_fence = true; break;
        case 'D':
            if (!parse_long(optarg, 300, 600000, &v))
                return bad_option("lease-ms", optarg);
            cfg->lease_ms = v;
            break;
        case 'M':
            if (!parse_long(optarg, 0, 100000, &v))
                return bad_option("metrics-tenants", optarg);
            cfg->metrics_tenants = (int)v;
            break;
        case 'c': cfg->tls_cert = optarg; break;
        case 'k': cfg->tls_key = optarg; break;
        case 'P': cfg->allow_plain_remote = true; break;
        case 't': cfg->token_file = optarg; break;
        case 'p': cfg->port_file = optarg; break;
        case 'b':
            if (!parse_long(optarg, 1024, 64L * 1024 * 1024, &v))
                return bad_option("max-body", optarg);
            cfg->max_body = (size_t)v;
            break;
        case 'n':
            if (!parse_long(optarg, 1, 10000, &v))
                return bad_option("max-connections", optarg);
            cfg->max_connections = (int)v;
            break;
        case 'T':
            if (!parse_long(optarg, 1, 3600, &v))
                return bad_option("timeout", optarg);
            cfg->timeout_s = (int)v;
            break;
        case 'r':
            if (!parse_long(optarg, 0, 10000000, &v))
                return bad_option("rate-limit", optarg);
            cfg->rate_limit = (double)v;
            break;
        case 'i':
            if (!parse_long(optarg, 10, 60000, &v))
                return bad_option("tick-ms", optarg);
            cfg->tick_ms = (int)v;
            break;
        case 'm':
            if (!parse_long(optarg, 0, 60000, &v))
                return bad_option("pass-min-ms", optarg);
            cfg->pass_min_ms = (int)v;
            break;
        case 'S':
            if (!parse_long(optarg, 0, 1000000000L, &v))
                return bad_option("snapshot-every-events", optarg);
            cfg->snapshot_every_events = v;
            break;
        case 'A':
            if (!parse_long(optarg, 1, 86400, &v))
                return bad_option("snapshot-every-s", optarg);
            cfg->snapshot_every_s = v;
            break;
        case 'N':
            if (!parse_long(optarg, 1, 86400, &v))
                return bad_option("node-lost-after", optarg);
            cfg->node_lost_after_s = v;
            break;
        case 'L':
            if (!gp_log_level_parse(optarg, &level))
                return bad_option("log-level", optarg);
            gp_log_set_level(level);
            break;
        case 'u':
            if (!parse_long(optarg, 1, INT32_MAX, &v))
                return bad_option("min-job-uid", optarg);
            cfg->min_job_uid = v;
            break;
        case 'E':
            if (!gp_duration_parse(optarg, &cfg->member_token_ttl_s))
                return bad_option("member-token-ttl", optarg);
            break;
        case 'V': printf("gpupoold %s (commit %s)\n", GP_VERSION, GP_GIT_COMMIT); return 0;
        case 'h': fputs(USAGE, stdout); return 0;
        default:
            if (c >= OPT_OIDC_ISSUER && c <= OPT_OIDC_REFRESH_MIN_S) {
                int rc = oidc_option(c, optarg, &cfg->oidc);
                if (rc >= 0)
                    return rc;
                break;
            }
            fputs(USAGE, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpupoold: unexpected argument %s\n", argv[optind]);
        return 2;
    }
    return -1;
}

int main(int argc, char **argv)
{
    umask(077); /* the store, its -wal and -shm, the token, port and log files: 0600 (store_files.c) */
    gp_server_config cfg = gp_server_config_default();
    int rc = parse_args(argc, argv, &cfg);
    if (rc >= 0)
        return rc;
    gp_lease_set_argv(argv); /* a step-down re-executes gpupoold with the same arguments (lease.h) */
    /* Signals go to this thread only (sigwait below); threads inherit the mask. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    static gp_server srv;
    gp_error err;
    if (gp_server_start(&srv, &cfg, &err) != GP_OK) {
        char q[300];
        gp_log(GP_LOG_ERROR, "start_failed", "field=%s error=%s", err.field, gp_log_quote(err.message, q, sizeof q));
        return 1;
    }
    int sig = 0;
    sigwait(&stop, &sig);
    gp_log(GP_LOG_INFO, "stopping", "signal=%d", sig);
    gp_server_stop(&srv);
    gp_log(GP_LOG_INFO, "stopped", "clean=true");
    return 0;
}

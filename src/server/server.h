/* server.h - gpupoold as one object: configuration, state, threads.
 *
 * Who owns what:
 *   the engine thread (loop.c)   journal (engine + store writer), tick
 *   API threads (http.c, api_*)  parse, validate, authenticate; reads from
 *                                a pool of store reader connections
 *   auth                         shared, thread-safe token cache
 *   joblogs                      replica logs on disk (joblogs.h), any thread
 *
 * Start-up order (server.c, which only starts and stops): open the store,
 * try to take the leader lease (lease.h; its epoch is the controller
 * epoch, one more at every start or takeover), note the nodes that hold a
 * node credential (agents.h), replay the log into a fresh engine and check
 * it; then the leader's start (lead.h): fence the writer at the epoch,
 * bring the fleet file's nodes up (fleet_sync.h: and lose the nodes it no
 * longer lists, but never a node an agent registered), create the
 * bootstrap admin token on first start (bootstrap_token.h); start the
 * engine thread, the lease thread, then the HTTP server.  A replica that
 * did not get the lease skips the leader's start and follows: its engine
 * thread tails the event log, it serves reads and sends writers to the
 * leader (api_leader.c); when it takes the lease its
 * engine thread replays the tail, checks, and does the leader's start.
 */
#ifndef GP_SERVER_SERVER_H
#define GP_SERVER_SERVER_H

#include "server/agents.h"
#include "server/auth_failures.h"
#include "server/baseline.h"
#include "server/use.h"
#include "server/auth.h"
#include "server/image_hints.h"
#include "server/checkpointer.h"
#include "server/store_space.h"
#include "server/joblogs.h"
#include "server/journal.h"
#include "server/lease.h"
#include "server/ledger.h"
#include "server/log.h"
#include "server/log_reads.h"
#include "server/loop.h"
#include "server/metrics.h"
#include "server/oidc.h"
#include "server/readers.h"
#include "server/refusals.h"

#include "server/node_ca.h"
#include "server/secret_box.h"
#include "util/hashmap.h"
#include "server/snapshots.h"

#include <stdatomic.h>

/* --agent-mtls: with HTTPS, do agent endpoints want the node's client
 * certificate?  off: no certificates are issued; optional: issued, and
 * checked when presented (an agent without one is logged, let in);
 * required: a node credential without its certificate is refused. */
typedef enum gp_agent_mtls { GP_AGENT_MTLS_OFF, GP_AGENT_MTLS_OPTIONAL, GP_AGENT_MTLS_REQUIRED } gp_agent_mtls;

/* Names of nodes whose agents called without a certificate (logged once
 * each under --agent-mtls optional; api_node_certs.c). */
typedef struct gp_node_seen {
    pthread_mutex_t lock;
    gp_strmap names;
} gp_node_seen;

typedef struct gp_server_config {
    const char *listen;          /* "127.0.0.1:8750" (port 0 = any free port) */
    const char *store_url;       /* "sqlite:./var/gpupool.db" */
    const char *fleet_path;      /* NULL = no fleet file */
    const char *tls_cert, *tls_key; /* PEM files; both or neither */
    bool allow_plain_remote;     /* plain HTTP on a non-loopback address */
    const char *token_file;      /* where the bootstrap admin token goes */
    const char *port_file;       /* write the bound port here (tests) */
    size_t max_body;             /* bytes */
    int max_connections;
    int timeout_s;               /* idle connection timeout */
    double rate_limit;           /* requests per second per token, 0 = off */
    int tick_ms;                 /* scheduling pass timer */
    int pass_min_ms;             /* least time between passes triggered by changes */
    int64_t member_token_ttl_s;  /* expiry of a member token created without a TTL; 0 = never */
    int64_t min_job_uid;         /* job users resolving below this uid are refused (users.h) */
    int64_t node_lost_after_s;   /* an agent node silent this long is lost */
    const char *job_logs;        /* replica logs directory; NULL = the SQLite file's path + ".logs" */
    bool no_partition_fence;     /* --no-partition-fence: agents get no fence terms (api_agents.c) */
    bool drain_on_gpu_failure;   /* a GPU reported unhealthy drains its node (undone when all are healthy) */
    int metrics_tenants;         /* /metrics: tenants with their own label (top by usage), the rest "other" */
    bool metrics_open;           /* /metrics without a token */
    const char *web_root;        /* the dashboard's files; NULL = gp_web_root_default() (api.h) */
    int64_t snapshot_every_events; /* an engine snapshot every N events logged (0 = none) */
    int64_t snapshot_every_s;    /* ... or every M seconds with events since (snapshots.h) */
    const char *advertise_url;   /* where other replicas send writers; NULL = http(s)://LISTEN */
    int64_t lease_ms;            /* the leader lease's time (lease.h) */
    const char *holder;          /* this replica's name in the lease; NULL = host:pid */
    bool allow_open_store_mode;  /* serve a SQLite store group or other may read (warned, store_files.c) */
    int audit_refusals_per_min;  /* 401/403 audit rows per source a minute (refusals.h); 0 = none */
    bool approve_nodes;          /* a new agent node comes in cordoned until `gpupool nodes approve` */
    const char *secret_key_file; /* secret_box.h's key; NULL = secret.key beside the SQLite file */
    gp_agent_mtls agent_mtls;    /* agents' client certificates (node_ca.h, api_node_certs.c) */
    int64_t agent_cert_ttl_s;    /* a node certificate's life (default 24 h) */
    bool rotate_node_ca;         /* replace the node CA at this start */
    gp_oidc_config oidc;         /* --oidc-*: the identity providers whose tokens sign people in (oidc.h) */
    int64_t store_wal_limit;     /* bytes: a larger SQLite WAL is emptied (checkpointer.h) */
    int64_t store_reserve;       /* bytes: writes are refused while the store's disk has less free */
} gp_server_config;

struct gp_server {
    gp_server_config cfg;
    gp_store *store;   /* the writer: engine thread only once started */
    gp_journal journal;
    gp_auth auth;
    gp_loop loop;
    gp_agents agents;
    gp_image_hints image_hints; /* what nodes should warm (image_hints.h) */
    gp_joblogs joblogs;
    gp_readers readers;
    gp_checkpointer checkpointer;
    gp_store_space store_space; /* --store-reserve (store_space.h) */
    gp_snapshots snapshots;  /* engine snapshots: when, and their writer thread */
    gp_metrics metrics;
    gp_ledger_state ledger;  /* the usage ledger's logged head and last verification */
    pthread_t ledger_verifier; /* the start's verification of the ledger (lead.c) */
    bool ledger_verifying;
    gp_use use;              /* allocated vs used: what each job drove (use.h) */
    gp_lease lease;          /* leader or follower (lease.h) */
    gp_refusals refusals;    /* 401s and 403s waiting for the engine thread's batch (refusals.h) */
    gp_auth_failures auth_failures; /* failed sign-ins by address and user, for /metrics (auth_failures.h) */
    gp_baseline baseline;    /* tenants' usual GPU use this hour of the week, for /metrics (baseline.h) */
    gp_log_reads log_reads;  /* reads of other users' job logs audited lately (log_reads.h) */
    gp_secret_key secret_key; /* seals tenants' secrets (secret_box.h); read-only once started */
    gp_node_ca node_ca;      /* signs and checks agents' certificates; open with HTTPS and --agent-mtls on */
    gp_node_seen nodes_without_cert; /* nodes logged calling without a certificate (optional mode) */
    gp_oidc oidc;            /* provider tokens (oidc.h); nothing when no --oidc-issuer */
    atomic_uint_least64_t auth_refusals[GP_OIDC_RESULT_COUNT]; /* by gp_oidc_result: /metrics */
    struct MHD_Daemon *http;
    int listen_fd;         /* bound by gp_http_bind before anything is written; MHD owns it once started */
    int port;
    atomic_uint_least64_t requests, errors_4xx, errors_5xx, submits;
};

gp_server_config gp_server_config_default(void);
/* Everything up to a running HTTP server. */
gp_err gp_server_start(gp_server *srv, const gp_server_config *cfg, gp_error *err);
void gp_server_stop(gp_server *srv);

/* A SQLite store's folder and files (the store, -wal, -shm) before they
 * are opened: GP_ERR_INVALID field "store" when group or other may read
 * or write them, with the chmod that fixes it (store_files.c).  Makes a
 * missing folder 0700.  GP_OK for PostgreSQL. */
gp_err gp_store_files_check(const gp_server_config *cfg, gp_error *err);

#endif

/* ledger.h - the usage ledger's records, built from the engine's decisions.
 *
 * The journal calls gp_ledger_write for each USAGE_OPEN and USAGE_CLOSE
 * decision, inside the transaction of the event that decided it, and
 * gp_ledger_sync after each tenant change and node add (guarantee and
 * capacity records); the store chains and keeps the record
 * (store_ledger.c).  docs/metering.md lists
 * the fields.
 *
 * gpupoold also keeps the ledger's state (gp_ledger_state): the head it
 * last logged and the last verification, for the API and /metrics.  The
 * head (seq and hash) is logged at start and then every hour,
 *     event=ledger_head seq=812 hash=3f1c...
 * so a copy kept outside can pin history: a ledger that later verifies
 * but no longer holds that seq with that hash was cut or rewritten.
 *
 * Threads: the engine thread writes records and logs the head; any thread
 * reads or records the state, under its lock.
 * Ownership: nothing is kept; the store copies the record.
 */
#ifndef GP_SERVER_LEDGER_H
#define GP_SERVER_LEDGER_H

#include "eventlog/event.h"
#include "store/store.h"

#include <pthread.h>

/* Writes the record of decision ds[i] (a USAGE_OPEN or USAGE_CLOSE) of the
 * event ev; ds[0..n) are all of the event's decisions (a close's reason is
 * read from the ones after it).  placement: an open's job placement as
 * eventlog/placement.h builds it (json null or NULL when none; borrowed),
 * unused for a close. */
gp_err gp_ledger_write(gp_store *s, const gp_engine *e, const gp_event *ev, const gp_decision *ds, size_t n,
                       size_t i, json_t *placement, gp_error *err);

/* The guarantee and capacity records (docs/metering.md): compares what
 * the engine has now -- each tenant's own configured guarantee per GPU
 * type (tenants: true), the GPUs of every node it knows per type, lost or
 * draining included (capacity: true) -- with the last such records of the
 * ledger, and appends a record, starting at now, for each that differs (a
 * removed tenant's guarantee becomes 0).  The journal calls it in the
 * transaction of every tenant change and node add; gpupoold at start, so
 * a store that had no such records gets its baseline. */
gp_err gp_ledger_sync(gp_store *s, const gp_engine *e, bool tenants, bool capacity, int64_t now, gp_error *err);

/* A booking's record (kind "booking", docs/metering.md) after decision d
 * (a GP_DEC_BOOKING at time now) changed it: its window as billed -- the
 * start, and the end or, once cancelled or released for no-show, the time
 * that happened (never before the start) -- and the GPUs the org's
 * allowance holds for it.  The bill takes each booking's newest record.
 * Nothing for a refused occurrence or a booking the engine forgot. */
gp_err gp_ledger_booking(gp_store *s, const gp_engine *e, const gp_decision *d, int64_t now, gp_error *err);

#define GP_LEDGER_HEAD_LOG_MS (3600 * 1000)

typedef struct gp_ledger_state {
    pthread_mutex_t lock;
    int64_t head_seq;        /* as last logged */
    char head_hash[65];
    int verify_ok;           /* the last verification: 1 whole, 0 broken, -1 none yet */
    int64_t first_bad;       /* its first bad record, 0 when whole */
    int64_t verified_at;     /* epoch seconds, 0 = never */
    int64_t head_due_ms;     /* monotonic ms when the head is logged next */
} gp_ledger_state;

void gp_ledger_state_init(gp_ledger_state *l);
/* Logs the writer's head when it is due (now_ms monotonic, never 0; the
 * first call always logs).  A store error is logged, not fatal. */
void gp_ledger_head_log(gp_ledger_state *l, gp_store *writer, int64_t now_ms);
bool gp_ledger_head_log_due(const gp_ledger_state *l, int64_t now_ms);
/* Records a verification's result (at: epoch seconds) and logs a broken
 * chain at error level. */
void gp_ledger_verified(gp_ledger_state *l, const gp_store_ledger_check *c, int64_t at);

#endif

/* ledger.h - gpupool-sim's usage ledger: the daemon's record format,
 * written to a file as JSON lines.
 *
 * `gpupool-sim --ledger FILE` writes one sealed record text per line,
 * chained from GP_LEDGER_ZERO_HASH, built with eventlog/ledger_record.h
 * exactly as gpupoold builds them, so `gpupool bill --ledger FILE` and
 * tests/metering/billref.py bill a simulated month as they bill a real one:
 *
 *   at the start   a "capacity" record per GPU type (the fleet's GPUs) and
 *                  a "guarantee" record per tenant and GPU type with a
 *                  guarantee in the tenant file (none under policy fifo);
 *   per decision   "open" for USAGE_OPEN (user null, share and placement
 *                  read from the engine while the job holds it), "close"
 *                  for USAGE_CLOSE (the open record's user, share,
 *                  placement and seq, plus end and gp_ledger_close_reason).
 *
 * Times are epoch + simulated seconds: with the default epoch
 * 1793491200 (2026-11-01T00:00:00Z) a 30-day run is the month 2026-11.
 * The simulator changes no tenant or node during a run, so these are the
 * only guarantee and capacity records; the sim has no node losses or GPU
 * faults, so no interval closes as node_lost or gpu_failed.
 *
 * Example: one H100 node, team a guaranteed 8 H100, a job of a/p on 2 GPUs
 * from t=0 to t=5400 (epoch 1793491200):
 *   {"gpu_type":"H100","kind":"capacity","milli_gpus":8000,"prev":"000...","seq":1,"start":1793491200}
 *   {"gpu_type":"H100","kind":"guarantee","milli_gpus":8000,...,"seq":2,"start":1793491200,"tenant":"a"}
 *   {"class":"guaranteed",...,"kind":"open","milli_gpus":2000,...,"seq":3,"share":"whole",...}
 *   {...,"closed":"finished","end":1793496600,"kind":"close",...,"open_seq":3,...,"seq":4,...}
 *
 * Errors: writing stops at the first failure (disk full, out of memory);
 * gp_sim_ledger_close reports it.
 *
 * Ownership: gp_sim_ledger_open allocates the writer and opens the file;
 * gp_sim_ledger_close flushes, closes and frees it (always).
 */
#ifndef GP_SIM_LEDGER_H
#define GP_SIM_LEDGER_H

#include <stdint.h>

#include "config/tenant_file.h"
#include "core/engine.h"

/* 2026-11-01T00:00:00Z: simulated time 0 by default. */
#define GP_SIM_LEDGER_EPOCH 1793491200

typedef struct gp_sim_ledger gp_sim_ledger;

gp_err gp_sim_ledger_open(const char *path, int64_t epoch, gp_sim_ledger **out, gp_error *err);

/* The baseline at simulated time `now`: capacity of every GPU type of the
 * engine's fleet, then the guarantees of `tenants` (NULL: none). */
void gp_sim_ledger_start(gp_sim_ledger *l, const gp_engine *e, const gp_tenant_file *tenants, int64_t now);

/* Records for the USAGE_OPEN and USAGE_CLOSE among ds[0..n), the decisions
 * of one engine call, in order (call before the engine forgets a job). */
void gp_sim_ledger_decisions(gp_sim_ledger *l, const gp_engine *e, const gp_decision *ds, size_t n);

/* Records written so far. */
int64_t gp_sim_ledger_records(const gp_sim_ledger *l);

/* Flush, close and free l; an error (field "ledger", naming the file and
 * why) when any write failed. */
gp_err gp_sim_ledger_close(gp_sim_ledger *l, gp_error *err);

#endif

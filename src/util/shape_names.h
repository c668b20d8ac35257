/* shape_names.h - the names of a placement's shape that every layer
 * writes: its topology and its isolation (how a GPU is shared).
 *
 * The tables are in the engine's enum order: core/types.h's gp_topology
 * and gp_isolation index them, and core/names.c prints and parses with
 * them (it checks the counts).  They live here, below the engine, so
 * metering (the bill, which the CLI links without the engine) reads the
 * ledger's topology and share with the same names and order.
 *
 *   gp_topology_names[1]  -> "block"      (GP_TOPO_BLOCK)
 *   gp_isolation_names[2] -> "mps"        (GP_ISO_MPS)
 *   gp_share_whole        -> "whole"      (the ledger's share of a whole GPU)
 *   gp_shape_name_index(gp_topology_names, GP_TOPOLOGY_NAMES, "nvlink") -> 2; -1 when unknown
 *
 * Pure; names are static strings.
 */
#ifndef GP_UTIL_SHAPE_NAMES_H
#define GP_UTIL_SHAPE_NAMES_H

enum { GP_TOPOLOGY_NAMES = 3, GP_ISOLATION_NAMES = 4 };

extern const char *const gp_topology_names[GP_TOPOLOGY_NAMES];   /* any, block, nvlink */
extern const char *const gp_isolation_names[GP_ISOLATION_NAMES]; /* exclusive, mig, mps, timeslice */
/* "whole": a whole GPU's share as the usage ledger and the bill write it
 * (the engine's isolation "exclusive"); a slice's share is its isolation's
 * name. */
extern const char gp_share_whole[];

/* name's index in names[0..n), -1 when absent or NULL. */
int gp_shape_name_index(const char *const *names, int n, const char *name);

#endif

/* xid.h - what the agent does about a driver XID: one table from NVIDIA's
 * XID catalog (xid.c says which document), overridable by the operator.
 *
 * Each XID code maps to one action:
 *   ignore       nothing: recorded in the GPU's XID history only
 *   restart_app  the application's problem (or a contained fault that
 *                killed it): the GPU stays in service, recorded
 *   reset_gpu    the GPU is taken out of service until it was repaired
 *                (--repair-command) and passes re-validation
 *   reboot_node  as reset_gpu, and the node asks to be drained
 *   drain        as reset_gpu, and the node asks to be drained (an
 *                operator must look: the catalog says CONTACT_SUPPORT)
 * An XID absent from the table is reset_gpu: an error nobody classified
 * takes the GPU out, and the repair and re-validation bring it back.
 *
 * Override (gpupool-agent run --xid-actions FILE, JSON or YAML): a map
 * from code to action, each entry replacing the table's:
 *
 *   "43": ignore
 *   "79": reset_gpu       # this site resets rather than reboots
 *
 * Example: gp_xid_action_of(&t, 13) is restart_app (catalog: RESTART_APP),
 * 79 is reboot_node (RESTART_BM), 48 reset_gpu (RESET_GPU), 999 reset_gpu
 * (unknown); after the file above, 79 is reset_gpu.
 *
 * Ownership: a gp_xid_table is a plain value (no heap); load fills one
 * the caller owns.  Pure apart from reading the file.
 */
#ifndef GP_AGENT_XID_H
#define GP_AGENT_XID_H

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

#define GP_XID_MAX 1024 /* codes 1..1023 */

typedef enum gp_xid_action {
    GP_XID_IGNORE = 0,
    GP_XID_RESTART_APP,
    GP_XID_RESET_GPU,
    GP_XID_REBOOT_NODE,
    GP_XID_DRAIN,
} gp_xid_action;

typedef struct gp_xid_table {
    signed char action[GP_XID_MAX]; /* gp_xid_action, -1 = not in the table (reset_gpu) */
    bool overridden[GP_XID_MAX];    /* set by the operator's file */
} gp_xid_table;

/* The catalog's table. */
void gp_xid_table_default(gp_xid_table *t);
/* Applies the operator's file (JSON or YAML map code -> action) on top of
 * t.  GP_ERR_INVALID "FILE:LINE: ..." naming the key for a code that is
 * not 1..1023 or an action that is not one of the five; on an error t is
 * unchanged.  GP_ERR_NOT_FOUND field "xid_actions" when the file cannot
 * be read. */
gp_err gp_xid_table_load(gp_xid_table *t, const char *path, gp_error *err);
/* Same, from text (name: how messages call it). */
gp_err gp_xid_table_parse(gp_xid_table *t, const char *text, size_t len, const char *name, gp_error *err);

gp_xid_action gp_xid_action_of(const gp_xid_table *t, int xid);
/* The catalog's short description ("GPU has fallen off the bus"), "" when
 * the catalog has none. */
const char *gp_xid_description(int xid);
const char *gp_xid_action_name(gp_xid_action a);
bool gp_xid_action_parse(const char *name, gp_xid_action *out);
/* reset_gpu, reboot_node and drain take the GPU out of service. */
bool gp_xid_action_takes_gpu_out(gp_xid_action a);
/* reboot_node and drain also ask for the node to be drained. */
bool gp_xid_action_drains_node(gp_xid_action a);

#endif

/* xid.c - the XID table (xid.h).
 *
 * Source: NVIDIA, "XID Errors" (deploy/xid-errors), section "Analyzing Xid
 * Errors with the Xid Catalog", the catalog for Ampere and newer GPUs
 * (A100, H100, B100, GB200), as published at
 * https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
 * (read 2026-11; the catalog carries no version number of its own, so the
 * date is its version).  Its column "Resolution Bucket (Immediate Action)"
 * gives each code's action; this table keeps the codes that apply to those
 * GPUs and maps the buckets as follows:
 *
 *   IGNORE                  -> ignore
 *   RESTART_APP             -> restart_app
 *   RESET_GPU               -> reset_gpu   (WORKFLOW_XID_48 and the other
 *                                           WORKFLOW_* investigations follow
 *                                           a reset: the repair command's job)
 *   RESTART_BM, RESTART_VM  -> reboot_node
 *   CONTACT_SUPPORT         -> drain
 *
 * Codes the catalog lists as unused are left out: they fall to the
 * default for unknown codes (reset_gpu, xid.h).  Operators correct or
 * extend the table with --xid-actions rather than by editing it.
 */
#include "agent/xid.h"

#include "spec/yaml_json.h"
#include "util/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    int xid;
    gp_xid_action action;
    const char *description;
} CATALOG[] = {
    {8, GP_XID_RESTART_APP, "GPU stopped processing"},
    {11, GP_XID_RESTART_APP, "Invalid or corrupted push buffer stream"},
    {13, GP_XID_RESTART_APP, "Graphics Engine Exception"},
    {31, GP_XID_RESTART_APP, "GPU memory page fault"},
    {32, GP_XID_RESTART_APP, "Invalid or corrupted push buffer stream"},
    {43, GP_XID_RESTART_APP, "GPU stopped processing"},
    {45, GP_XID_IGNORE, "Preemptive cleanup, due to previous errors"},
    {48, GP_XID_RESET_GPU, "Double Bit ECC Error"},
    {61, GP_XID_RESET_GPU, "Internal micro-controller breakpoint/warning"},
    {62, GP_XID_RESET_GPU, "Internal micro-controller halt"},
    {63, GP_XID_RESET_GPU, "ECC page retirement or row remapping recording event"},
    {64, GP_XID_RESET_GPU, "ECC page retirement or row remapper recording failure"},
    {68, GP_XID_RESTART_APP, "NVDEC0 Exception"},
    {69, GP_XID_RESTART_APP, "Graphics Engine class error"},
    {74, GP_XID_RESET_GPU, "NVLink Error"},
    {79, GP_XID_REBOOT_NODE, "GPU has fallen off the bus"},
    {92, GP_XID_IGNORE, "High single-bit ECC error rate"},
    {94, GP_XID_RESTART_APP, "Contained ECC error"},
    {95, GP_XID_RESET_GPU, "Uncontained ECC error"},
    {109, GP_XID_RESTART_APP, "Context Switch Timeout Error"},
    {119, GP_XID_RESET_GPU, "GSP RPC Timeout"},
    {120, GP_XID_RESET_GPU, "GSP Error"},
    {121, GP_XID_IGNORE, "C2C Link corrected error"},
    {140, GP_XID_RESET_GPU, "Unrecovered ECC Error"},
    {143, GP_XID_DRAIN, "GPU Initialization Failure"},
    {154, GP_XID_RESET_GPU, "GPU Recovery Action Changed"},
};

static const char *const ACTION_NAMES[] = {"ignore", "restart_app", "reset_gpu", "reboot_node", "drain"};

void gp_xid_table_default(gp_xid_table *t)
{
    memset(t->action, -1, sizeof t->action);
    memset(t->overridden, 0, sizeof t->overridden);
    for (size_t i = 0; i < sizeof CATALOG / sizeof CATALOG[0]; i++)
        t->action[CATALOG[i].xid] = (signed char)CATALOG[i].action;
}

gp_xid_action gp_xid_action_of(const gp_xid_table *t, int xid)
{
    if (xid <= 0 || xid >= GP_XID_MAX || t->action[xid] < 0)
        return GP_XID_RESET_GPU;
    return (gp_xid_action)t->action[xid];
}

const char *gp_xid_description(int xid)
{
    for (size_t i = 0; i < sizeof CATALOG / sizeof CATALOG[0]; i++)
        if (CATALOG[i].xid == xid)
            return CATALOG[i].description;
    return "";
}

const char *gp_xid_action_name(gp_xid_action a)
{
    return (unsigned)a < sizeof ACTION_NAMES / sizeof ACTION_NAMES[0] ? ACTION_NAMES[a] : "reset_gpu";
}

bool gp_xid_action_parse(const char *name, gp_xid_action *out)
{
    for (size_t i = 0; i < sizeof ACTION_NAMES / sizeof ACTION_NAMES[0]; i++)
        if (strcmp(name, ACTION_NAMES[i]) == 0) {
            *out = (gp_xid_action)i;
            return true;
        }
    return false;
}

bool gp_xid_action_takes_gpu_out(gp_xid_action a)
{
    return a == GP_XID_RESET_GPU || a == GP_XID_REBOOT_NODE || a == GP_XID_DRAIN;
}

bool gp_xid_action_drains_node(gp_xid_action a)
{
    return a == GP_XID_REBOOT_NODE || a == GP_XID_DRAIN;
}

/* One entry "CODE": ACTION into copy. */
static gp_err gp__entry(gp_xid_table *copy, const char *key, const json_t *v, const gp_yaml_lines *lines,
                        gp_error *err)
{
    char *end = NULL;
    long code = strtol(key, &end, 10);
    gp_xid_action a;
    if (!key[0] || *end || code < 1 || code >= GP_XID_MAX)
        return gp_yaml_fail(lines, key, err, key, "key %s: an XID code is a number 1..%d", key, GP_XID_MAX - 1);
    if (!json_is_string(v) || !gp_xid_action_parse(json_string_value(v), &a))
        return gp_yaml_fail(lines, key, err, key,
                            "XID %ld: the action must be ignore, restart_app, reset_gpu, reboot_node or drain", code);
    copy->action[code] = (signed char)a;
    copy->overridden[code] = true;
    return GP_OK;
}

gp_err gp_xid_table_parse(gp_xid_table *t, const char *text, size_t len, const char *name, gp_error *err)
{
    gp_yaml_lines lines = {0};
    json_t *root = NULL;
    gp_err rc = gp_yaml_to_json(text, len, name, &root, &lines, err);
    if (rc == GP_OK && root && !json_is_object(root))
        rc = gp_yaml_fail(&lines, "", err, "xid_actions", "the file must map XID codes to actions, e.g. \"79\": reset_gpu");
    gp_xid_table copy = *t;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (rc == GP_OK)
            rc = gp__entry(&copy, key, v, &lines, err);
    }
    if (rc == GP_OK)
        *t = copy;
    json_decref(root);
    gp_yaml_lines_free(&lines);
    return rc;
}

gp_err gp_xid_table_load(gp_xid_table *t, const char *path, gp_error *err)
{
    char *text = NULL;
    size_t len = 0;
    gp_err rc = gp_file_read_all(path, &text, &len, err);
    if (rc == GP_OK)
        rc = gp_xid_table_parse(t, text, len, path, err);
    else if (err)
        snprintf(err->field, sizeof err->field, "xid_actions");
    free(text);
    return rc;
}

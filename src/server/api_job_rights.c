/* api_job_rights.c - whose jobs a caller may cancel or change, and who
 * sets a tenant's `cancel` setting.
 *
 * Scope comes first (a job outside the caller's scope is 404, as GET
 * answers it).  Inside it, admins, operators and tenant-admins act on any
 * job; a member acts on its own jobs (run as its token's user), and
 * cancels another user's job only where its tenant's `cancel` setting,
 * inherited from the nearest ancestor that sets it, is `tenant` (the
 * default at the top is `own`, as Slurm's scancel for a user).  Holding or
 * updating another user's job stays the owner's.  Only an admin sets
 * `cancel` (403 naming it): a member cannot open its colleagues' jobs to
 * itself, nor a tenant-admin decide it for a subtree it answers for.
 */
#include "server/api.h"

#include <stdio.h>
#include <string.h>

int gp_api_tenant_inherited(gp_server *srv, const char *tenant, gp_enum which, const char *key)
{
    char path[GP_PATH_MAX];
    snprintf(path, sizeof path, "%s", tenant);
    for (;;) {
        json_t *spec = NULL;
        gp_store_tenant_get(srv->store, path, &spec, NULL);
        int set = 0;
        if (!gp_enum_value(which, json_string_value(json_object_get(spec, key)), &set))
            set = 0;
        json_decref(spec);
        char *slash = strrchr(path, '/');
        if (set != 0 || !slash)
            return set;
        *slash = '\0';
    }
}

/* The nearest `cancel` set on the path from tenant to the top; OWN when none. */
static gp_cancel_policy cancel_policy(gp_server *srv, const char *tenant)
{
    return gp_api_tenant_inherited(srv, tenant, GP_ENUM_CANCEL, "cancel") == GP_CANCEL_TENANT ? GP_CANCEL_TENANT
                                                                                              : GP_CANCEL_OWN;
}

const char *gp_api_tenant_cancel_setting(gp_server *srv, const char *tenant)
{
    return cancel_policy(srv, tenant) == GP_CANCEL_TENANT ? "tenant" : "own";
}

bool gp_api_job_may_act(gp_server *srv, const gp_principal *who, const char *tenant, const char *owner, bool cancel)
{
    if (who->role == GP_ROLE_OPERATOR || who->role == GP_ROLE_AUDITOR ||
        gp_principal_holds(who, GP_ROLE_TENANT_ADMIN, tenant, false))
        return true; /* a member grant at tenant (an OIDC person may hold more elsewhere): its own jobs */
    if (owner && who->user[0] && strcmp(owner, who->user) == 0)
        return true;
    return cancel && cancel_policy(srv, tenant) == GP_CANCEL_TENANT;
}

void gp_api_op_forbidden(gp_op *op, uint64_t id, const char *message)
{
    gp_op_reply(op, 403, json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "forbidden", "field", "id", "message",
                                   message));
    snprintf(op->error_text, sizeof op->error_text, "forbidden: job %llu: %s", (unsigned long long)id, message);
}

bool gp_api_cancel_policy_may_change(const gp_principal *who, const json_t *have, const json_t *want, gp_error *err)
{
    const json_t *a = json_object_get(have, "cancel"), *b = json_object_get(want, "cancel");
    if (who->role == GP_ROLE_ADMIN || (!a && !b) || (a && b && json_equal(a, b)))
        return true;
    gp_error_set(err, GP_ERR_INVALID, "cancel", "only an admin sets a tenant's cancel (whose jobs its members may"
                 " cancel)");
    return false;
}

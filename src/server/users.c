/* users.c - who a job may run as (users.h): a user name's form, its uid on
 * this host, and its tenant. */
#include "server/users.h"

#include "core/types.h"
#include "server/auth.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

static bool name_form_ok(const char *name)
{
    bool digits_only = true;
    if (!name[0] || name[0] == '-')
        return false;
    for (const char *p = name; *p; p++) {
        bool digit = *p >= '0' && *p <= '9';
        bool letter = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
        if (!digit && !letter && *p != '.' && *p != '_' && *p != '@' && *p != '-')
            return false;
        digits_only = digits_only && digit;
    }
    return !digits_only;
}

/* The uid name resolves to on this host; false when it does not resolve
 * (or the directory service did not answer: the node checks again). */
static bool uid_of(const char *name, uid_t *uid)
{
    size_t cap = 16384;
    for (int tries = 0; tries < 4; tries++, cap *= 4) {
        char *buf = malloc(cap);
        struct passwd pw, *found = NULL;
        int rc = buf ? getpwnam_r(name, &pw, buf, cap, &found) : ENOMEM;
        if (found)
            *uid = pw.pw_uid;
        free(buf);
        if (rc != ERANGE)
            return found != NULL;
    }
    return false;
}

gp_err gp_user_name_check(const char *name, int64_t min_uid, gp_error *err)
{
    if (!name_form_ok(name))
        return gp_error_set(err, GP_ERR_INVALID, "user",
                            "a user is a Unix user name: letters, digits, '.', '_', '@', '-', not starting with"
                            " '-' and not all digits");
    if (strcmp(name, "root") == 0 || strcmp(name, "nobody") == 0)
        return gp_error_set(err, GP_ERR_INVALID, "user", "jobs never run as %s", name);
    uid_t uid;
    if (!uid_of(name, &uid))
        return GP_OK;
    if (uid == 0 || (int64_t)uid < min_uid)
        return gp_error_set(err, GP_ERR_INVALID, "user",
                            "user %s is uid %lu on this host, below gpupoold's --min-job-uid %lld: jobs never run"
                            " as root or a system account", name, (unsigned long)uid, (long long)min_uid);
    if (uid == GP_USER_OVERFLOW_UID)
        return gp_error_set(err, GP_ERR_INVALID, "user", "user %s is the overflow uid %d (nobody), which every"
                            " tenant would share", name, GP_USER_OVERFLOW_UID);
    return GP_OK;
}

gp_err gp_user_tenant_check(gp_store *s, const char *name, const char *path, const char *owner, bool *unbound,
                            gp_error *err)
{
    char bound[GP_PATH_MAX];
    gp_err rc = gp_store_user_tenant(s, name, bound, sizeof bound, err);
    *unbound = rc == GP_OK && !bound[0];
    if (rc != GP_OK || *unbound || (gp_scope_covers(bound, path) && (!owner || gp_scope_covers(owner, bound))))
        return rc;
    return gp_error_set(err, GP_ERR_INVALID, "user",
                        "user %s belongs to another tenant: its jobs run only there (an admin moves a user with"
                        " PUT /v1/users/%s)", name, name);
}

/* users.h - who a job may run as: the rules for a job user's name and the
 * tenant each user is bound to (issue 29; docs/api.md, "Job users").
 *
 * A job runs on its node as the Unix user it names (the token's user, or
 * one an admin names), so the name is an identity.  gpupoold refuses:
 *   - "root" and "nobody" always, names that are not plain user names
 *     ([A-Za-z0-9._@-], not starting with '-', not all digits);
 *   - names that resolve on this host (getpwnam_r) to uid 0, to a uid
 *     below --min-job-uid (system accounts) or to the overflow uid 65534;
 *     a name that does not resolve here is allowed: the node agent resolves
 *     it where the job runs and checks again (the assignment carries
 *     uid_min);
 *   - a user bound to another tenant: the store keeps each user's tenant
 *     (store_users.c); tokens and jobs may use a user only inside the
 *     subtree it is bound to, and a tenant-admin mints tokens only for
 *     users bound inside its own scope.  The first member token minted for a user
 *     (or the first job an admin submits naming it) binds it to the
 *     token's scope (the job's tenant); an admin rebinds with PUT
 *     /v1/users/NAME.
 *
 * Example: alice bound to research/nlp.  A tenant-admin of product/ads
 * asking for a member token for alice: 400 user "user alice belongs to
 * another tenant".  An admin submitting a product/ads job as alice: the
 * same.  A research/nlp job as alice: accepted.
 */
#ifndef GP_SERVER_USERS_H
#define GP_SERVER_USERS_H

#include "store/store.h"

#include <stdbool.h>
#include <stdint.h>

#define GP_USER_OVERFLOW_UID 65534 /* "nobody": shared by every daemon that drops to it */

/* The name rules and the uid floor (any thread: getpwnam_r may wait for
 * the host's directory service).  GP_ERR_INVALID, field "user". */
gp_err gp_user_name_check(const char *name, int64_t min_uid, gp_error *err);

/* May a token scoped at `path` or a job of tenant `path` run as user
 * `name`?  Yes when name is bound to path or to an ancestor of it, and,
 * when `owner` is not NULL (a tenant-admin's scope), to owner or below it:
 * a tenant-admin acts only as users of its own subtree.  When name is
 * bound to nothing, yes with *unbound set (the caller binds it with
 * gp_store_user_bind once its change is accepted).  Engine thread, in the
 * op's transaction.  GP_ERR_INVALID, field "user", when bound elsewhere. */
gp_err gp_user_tenant_check(gp_store *s, const char *name, const char *path, const char *owner, bool *unbound,
                            gp_error *err);

#endif

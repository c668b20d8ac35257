/* bootstrap_token.c - the bootstrap admin token (bootstrap_token.h).
 *
 * Made when the store holds no token at all (a fresh store): written to
 * --token-file (default: admin.token next to the SQLite file) with mode
 * 0600, its hash stored with an audit row of the daemon itself, and its
 * path logged.  It never expires: it is the way back in
 * (docs/operations.md); rotate it by hand.
 */
#include "server/bootstrap_token.h"

#include "server/server.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An audit row for something the daemon did on its own. */
static gp_err audit_self(gp_server *srv, const char *action, const char *target, int64_t now, gp_error *err)
{
    gp_store_audit a = {.time = now,
                        .request_id = "startup",
                        .actor = "gpupoold",
                        .role = "system",
                        .action = action,
                        .target = target,
                        .result = "ok"};
    return gp_store_audit_append(srv->store, &a, err);
}

gp_err gp_bootstrap_token(gp_server *srv, gp_error *err)
{
    if (gp_auth_count(&srv->auth) > 0)
        return GP_OK;
    char secret[GP_TOKEN_SECRET_LEN + 1], id[GP_TOKEN_ID_LEN + 1], hash[65], path[1024];
    if (srv->cfg.token_file)
        snprintf(path, sizeof path, "%s", srv->cfg.token_file);
    else
        gp_store_file_beside(srv->cfg.store_url, "admin.token", path, sizeof path);
    int64_t now = gp_wall_ms() / 1000;
    /* it never expires: it is the way back in (docs/operations.md); rotate it by hand */
    gp_store_token t = {.id = id, .hash_hex = hash, .name = "bootstrap", .role = "admin", .scope = "", .user = "",
                        .created = now, .revoked = -1, .expires = -1, .last_used = -1, .created_by = "gpupoold"};
    gp_err rc = gp_token_generate(secret, id, hash, err);
    if (rc)
        return rc;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return gp_error_set(err, GP_ERR_INVALID, "token_file", "cannot write the bootstrap token to %s", path);
    bool ok = fchmod(fd, 0600) == 0 && write(fd, secret, strlen(secret)) == (ssize_t)strlen(secret) &&
              write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    close(fd);
    if (!ok)
        return gp_error_set(err, GP_ERR_INVALID, "token_file", "cannot write the bootstrap token to %s", path);
    char target[64];
    snprintf(target, sizeof target, "token/%s", id);
    rc = gp_store_begin(srv->store, err);
    if (rc == GP_OK)
        rc = gp_store_token_insert(srv->store, &t, err);
    if (rc == GP_OK)
        rc = audit_self(srv, "token.create", target, now, err);
    if (rc == GP_OK)
        rc = gp_store_commit(srv->store, err);
    else
        gp_store_rollback(srv->store);
    if (rc == GP_OK)
        rc = gp_auth_add(&srv->auth, &t, err);
    if (rc == GP_OK)
        gp_log(GP_LOG_WARN, "bootstrap_token", "path=%s id=%s note=\"admin token written (mode 0600); keep it safe\"",
               path, id);
    return rc;
}

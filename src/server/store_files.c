/* store_files.c - who may read gpupoold's SQLite store, checked before it
 * is opened (server.h, gp_store_files_check).
 *
 * The store holds every job's spec (its environment: secrets), the
 * tokens' hashes and scopes, the audit chain: a store any local user can
 * read is a leak, one they can write a takeover.  gpupoold runs with
 * umask 077 (main.c), so what it creates -- the store, the -wal and -shm
 * files SQLite makes with the store's own mode, the token and port files,
 * the replica logs -- is 0600 in 0700 folders.  At every start, before
 * the store is opened:
 *
 *   the folder   made 0700 when missing; refused when group or other may
 *                write it (they could swap the store or plant its -wal);
 *                a warning when they may list it;
 *   the files    the store, PATH-wal and PATH-shm, when they exist: not a
 *                regular file (a symlink) is refused; a file group or
 *                other may read or write, or one owned by another user, is
 *                refused with the chmod / chown that fixes it -- unless
 *                --allow-open-store-mode, which starts with a warning
 *                logged for each.
 *
 * Refused rather than repaired: a store that was readable may have been
 * read (its secrets and tokens need rotating), and the operator who made
 * it so (a backup group?) should choose.  Example: a store left 0644 by an
 * older gpupoold: "store /var/lib/gpupool/gpupool.db is mode 0644: group
 * or other may read or write it (job secrets, token hashes); fix it with
 * chmod 600 /var/lib/gpupool/gpupool.db*".  A PostgreSQL store has no
 * file here: its access is the database's (pg_hba.conf, roles).
 */
#include "server/server.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The folder of path ("." for a bare name) into out. */
static void folder_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, cap, ".");
    else if (slash == path)
        snprintf(out, cap, "/");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

static gp_err folder_check(const char *dir, gp_error *err)
{
    struct stat st;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return gp_error_set(err, GP_ERR_INVALID, "store", "cannot create the store's folder %s: %s", dir,
                            strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return gp_error_set(err, GP_ERR_INVALID, "store", "the store's folder %s is not a folder", dir);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return gp_error_set(err, GP_ERR_INVALID, "store",
                            "the store's folder %s is mode %04o: group or other may write it (and replace the"
                            " store or its -wal); fix it with chmod 700 %s",
                            dir, (unsigned)(st.st_mode & 07777), dir);
    if (st.st_mode & (S_IRWXG | S_IRWXO))
        gp_log(GP_LOG_WARN, "store_mode", "folder=%s mode=%04o note=\"group or other may list the store's folder;"
               " chmod 700 it\"", dir, (unsigned)(st.st_mode & 07777));
    return GP_OK;
}

/* One of the store's files, when it exists. */
static gp_err file_check(const char *path, const char *store, bool allow_open, gp_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT)
        return GP_OK;
    if (lstat(path, &st) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "store", "cannot stat %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return gp_error_set(err, GP_ERR_INVALID, "store", "store file %s is not a regular file (a link?)", path);
    bool open_mode = (st.st_mode & (S_IRWXG | S_IRWXO)) != 0, other_owner = st.st_uid != geteuid();
    if (!open_mode && !other_owner)
        return GP_OK;
    if (allow_open) {
        gp_log(GP_LOG_WARN, "store_mode", "path=%s mode=%04o uid=%u note=\"--allow-open-store-mode: serving a store"
               " others may read or own\"", path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
        return GP_OK;
    }
    if (other_owner)
        return gp_error_set(err, GP_ERR_INVALID, "store",
                            "store file %s is owned by uid %u, not gpupoold's uid %u; fix it with chown %u %s* (or"
                            " start with --allow-open-store-mode)",
                            path, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)geteuid(), store);
    return gp_error_set(err, GP_ERR_INVALID, "store",
                        "store file %s is mode %04o: group or other may read or write it (job secrets, token hashes);"
                        " fix it with chmod 600 %s* (or start with --allow-open-store-mode)",
                        path, (unsigned)(st.st_mode & 07777), store);
}

gp_err gp_store_files_check(const gp_server_config *cfg, gp_error *err)
{
    static const char *const SUFFIXES[] = {"", "-wal", "-shm"};
    const char *store = gp_store_file(cfg->store_url);
    if (!store)
        return GP_OK; /* PostgreSQL: no file of gpupoold's */
    char dir[4096], path[4200];
    folder_of(store, dir, sizeof dir);
    gp_err rc = folder_check(dir, err);
    for (size_t i = 0; rc == GP_OK && i < sizeof SUFFIXES / sizeof *SUFFIXES; i++) {
        snprintf(path, sizeof path, "%s%s", store, SUFFIXES[i]);
        rc = file_check(path, store, cfg->allow_open_store_mode, err);
    }
    return rc;
}

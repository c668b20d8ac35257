/* signin_cache.c - the 0600 file of `gpupool login`'s tokens (see signin_cache.h). */
#include "cli/signin_cache.h"
#include "cli/pkce.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The folder of the cache (the CLI's config folder) into out. */
static bool config_dir(char *out, size_t cap)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0])
        return (size_t)snprintf(out, cap, "%s/gpupool", xdg) < cap;
    if (home && home[0])
        return (size_t)snprintf(out, cap, "%s/.config/gpupool", home) < cap;
    return false;
}

bool gp_signin_path(char *out, size_t cap)
{
    char dir[900];
    return config_dir(dir, sizeof dir) && (size_t)snprintf(out, cap, "%s/signin.json", dir) < cap;
}

static json_t *load_all(void)
{
    char path[1024];
    if (!gp_signin_path(path, sizeof path))
        return NULL;
    return json_load_file(path, 0, NULL);
}

json_t *gp_signin_load(const char *server)
{
    json_t *all = load_all();
    json_t *record = json_incref(json_object_get(all, server));
    json_decref(all);
    return json_is_object(record) ? record : (json_decref(record), NULL);
}

/* mkdir -p of the config folder, 0700 for what it creates. */
static bool make_dir(const char *dir)
{
    char part[1024];
    snprintf(part, sizeof part, "%s", dir);
    for (char *p = part + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(part, 0700) != 0 && errno != EEXIST)
            return false;
        *p = '/';
    }
    return mkdir(part, 0700) == 0 || errno == EEXIST;
}

/* all written whole to path.tmp (0600 from its creation), then renamed. */
static bool write_all(const json_t *all)
{
    char dir[900], path[1024], tmp[1100];
    if (!config_dir(dir, sizeof dir) || !gp_signin_path(path, sizeof path)) {
        fprintf(stderr, "gpupool: neither XDG_CONFIG_HOME nor HOME is set: nowhere to keep the sign-in\n");
        return false;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = make_dir(dir) ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f && fchmod(fd, 0600) == 0 && json_dumpf(all, f, JSON_INDENT(1) | JSON_SORT_KEYS) == 0;
    ok = f && fflush(f) == 0 && fsync(fd) == 0 && ok;
    if (f)
        fclose(f);
    else if (fd >= 0)
        close(fd);
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        fprintf(stderr, "gpupool: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    return ok;
}

bool gp_signin_save(const char *server, const json_t *record)
{
    json_t *all = load_all();
    if (!json_is_object(all)) {
        json_decref(all);
        all = json_object();
    }
    json_object_set_new(all, server, json_deep_copy(record));
    bool ok = write_all(all);
    json_decref(all);
    return ok;
}

bool gp_signin_forget(const char *server)
{
    json_t *all = load_all();
    bool had = json_object_get(all, server) != NULL;
    if (had) {
        json_object_del(all, server);
        had = write_all(all);
    }
    json_decref(all);
    return had;
}

json_t *gp_jwt_claims(const char *jwt)
{
    const char *dot = jwt ? strchr(jwt, '.') : NULL;
    const char *end = dot ? strchr(dot + 1, '.') : NULL;
    if (!end || end - dot - 1 > 12000)
        return NULL;
    unsigned char payload[9000];
    long n = gp_base64url_decode(dot + 1, (size_t)(end - dot - 1), payload, sizeof payload);
    json_t *claims = n > 0 ? json_loadb((const char *)payload, (size_t)n, 0, NULL) : NULL;
    return json_is_object(claims) ? claims : (json_decref(claims), NULL);
}

/* api_web.c - the web dashboard's static files: GET / and GET /web/NAME.
 *
 * The dashboard (web/: index.html, app.js, style.css; docs/dashboard.md) is
 * plain files that gpupoold serves without a token: the page itself holds
 * no data.  It asks the JSON API for everything, with the token the viewer
 * types once (kept in the browser's sessionStorage), so it shows exactly
 * what that token's role may read.
 *
 * Where the files come from (gp_web_root_default, when --web-root is not
 * given): the installed share folder (GP_WEB_INSTALL_DIR, CMake's
 * share/gpupool/web) when it holds index.html, else the source tree's web/
 * (GP_WEB_SOURCE_DIR), so a build run from its checkout (`make demo`)
 * serves the files next to it.  A --web-root without index.html stops
 * gpupoold at start.
 *
 * What is served, and what is refused:
 *   GET /                 web/index.html
 *   GET /web/app.js       web/app.js, text/javascript
 *   GET /web/../x         400 (uri.h refuses ".." before any handler)
 *   GET /web/.hidden      404: names are [A-Za-z0-9_-] segments with one
 *                         dot-extension at the end, nothing else
 *   GET /web/x.exe        404: only the text types below are served
 *   GET /web/link.js      404 when the file resolves (symlinks followed)
 *                         outside the web root
 *   POST /web/app.js      405
 * Every file answers with Cache-Control: no-cache (an upgraded daemon's
 * page is the one shown) and a Content-Security-Policy that lets the page
 * load only from this daemon: no CDN, no inline script.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "server/api.h"

#include "util/file.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { WEB_NAME_MAX = 128 };

typedef struct web_type {
    const char *extension;
    const char *content_type;
} web_type;

static const web_type WEB_TYPES[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
};

static bool has_index(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/index.html", dir);
    return access(path, R_OK) == 0;
}

const char *gp_web_root_default(void)
{
    return has_index(GP_WEB_INSTALL_DIR) ? GP_WEB_INSTALL_DIR : GP_WEB_SOURCE_DIR;
}

gp_err gp_web_root_check(const char *dir, gp_error *err)
{
    if (!has_index(dir))
        return gp_error_set(err, GP_ERR_INVALID, "web_root", "--web-root %s holds no readable index.html", dir);
    return GP_OK;
}

static bool name_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* "app.js", "img/x.svg": segments of name characters, the last with one
 * extension; NULL for anything else, else the file's content type. */
static const char *web_name_type(const char *name)
{
    size_t n = strlen(name);
    const char *dot = strrchr(name, '.');
    if (n == 0 || n > WEB_NAME_MAX || !dot || strchr(dot, '/'))
        return NULL;
    for (const char *p = name; p < dot; p++) {
        bool segment_start = p == name || p[-1] == '/';
        if (!(name_char_ok(*p) || (*p == '/' && !segment_start)))
            return NULL;
    }
    if (dot == name || dot[-1] == '/')
        return NULL;
    for (size_t i = 0; i < sizeof WEB_TYPES / sizeof *WEB_TYPES; i++)
        if (strcmp(dot, WEB_TYPES[i].extension) == 0)
            return WEB_TYPES[i].content_type;
    return NULL;
}

/* The file's real path when it lies inside the root's real path. */
static bool inside_root(const char *root, const char *name, char *real, size_t cap)
{
    char real_root[PATH_MAX], path[PATH_MAX];
    if (cap < PATH_MAX || !realpath(root, real_root))
        return false;
    snprintf(path, sizeof path, "%s/%s", root, name);
    if (!realpath(path, real))
        return false;
    size_t n = strlen(real_root);
    return strncmp(real, real_root, n) == 0 && real[n] == '/';
}

static void not_found(gp_request *r)
{
    gp_api_error(r, 404, "not_found", "path", "no such file %s", r->url);
}

void gp_api_web_file(gp_request *r, const char *name)
{
    if (strcmp(r->method, "GET") != 0) {
        gp_api_error(r, 405, "method_not_allowed", "method", "%s is not allowed here; use GET", r->method);
        return;
    }
    char real[PATH_MAX];
    const char *type = web_name_type(name);
    if (!type || !inside_root(r->srv->cfg.web_root, name, real, sizeof real)) {
        not_found(r);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    gp_error err;
    if (gp_file_read_all(real, &text, &len, &err) != GP_OK || strlen(text) != len) {
        free(text); /* unreadable, or not text (a NUL inside) */
        not_found(r);
        return;
    }
    r->status = 200;
    r->text_reply = text;
    r->content_type = type;
    r->web_file = true;
}

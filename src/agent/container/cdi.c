/* cdi.c - a replica's GPUs in its container: the Container Device
 * Interface edits of its devices (as `nvidia-ctk cdi generate` writes
 * them), or, on a node without CDI specs, the same edits made from the
 * device nodes its GPU backend names (gpu.h).
 *
 * A CDI spec (/etc/cdi/nvidia.yaml, /var/run/cdi/NAME.json):
 *   {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
 *    "devices": [{"name": "GPU-8f3c...", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}],
 *    "containerEdits": {"deviceNodes": [{"path": "/dev/nvidiactl"}],
 *                       "mounts": [{"hostPath": "/usr/bin/nvidia-smi", "containerPath": "/usr/bin/nvidia-smi",
 *                                   "options": ["ro", "nosuid", "nodev", "bind"]}],
 *                       "env": [...], "hooks": [{"hookName": "createContainer", "path": ..., "args": [...]}]}}
 * A device whose name is one of the replica's GPU or MIG UUIDs is
 * applied with its spec's containerEdits (once per spec): deviceNodes
 * become linux.devices and an "rw" allow rule (type and numbers from the
 * node when the spec leaves them out), mounts binds, env process.env,
 * hooks the runtime's hooks of that name.
 *
 * Without a matching spec: each device path as the backend named it
 * (/dev/nvidia0, /dev/nvidia-caps/nvidia-cap12, or the sim backend's
 * stand-ins in its device folder, which are plain files or nodes made
 * with mknod) appears at /dev/NAME (nvidia-caps/NAME for the MIG
 * capability files); a node is made by the runtime and allowed, a plain
 * file is bound.  When a real NVIDIA node (major 195) is among them, the
 * driver's user-space libraries (libcuda*, libcudadebugger*, libnvidia-*
 * in the folders the dynamic linker searches: the usual ones and those
 * /etc/ld.so.conf names, as nvidia-container-cli's ldcache walk finds
 * them) and nvidia-smi are bound read-only at the same paths; a folder
 * outside the usual ones (a driver in /usr/local/nvidia/lib64) is added to
 * the container's LD_LIBRARY_PATH, since the image's own linker cache does
 * not know it, and an nvidia-smi outside /usr/bin is bound there too.
 */
#define _GNU_SOURCE
#include "agent/container/container.h"
#include "spec/yaml_json.h"
#include "util/file.h"

#include <dirent.h>
#include <glob.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define GP__NVIDIA_MAJOR 195u
#define GP__LIB_FOLDERS_MAX 64

static const char *const GP__CDI_DIRS[] = {"/etc/cdi", "/var/run/cdi", NULL};
/* The usual library folders: an image's linker finds what is bound here. */
static const char *const GP__USUAL_LIB_DIRS[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                                  "/usr/lib64", "/usr/lib", "/lib64", NULL};
static const char *const GP__DRIVER_LIBS[] = {"libcuda.so*", "libcudadebugger.so*", "libnvidia-*.so*", NULL};
static const char *const GP__SMI_DIRS[] = {"/usr/bin", "/usr/local/nvidia/bin", "/usr/local/bin", NULL};

static json_t *gp__array_at(json_t *o, const char *key)
{
    json_t *a = json_object_get(o, key);
    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(o, key, a);
    }
    return a;
}

static json_t *gp__object_at(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_object(v)) {
        v = json_object();
        json_object_set_new(o, key, v);
    }
    return v;
}

/* linux.devices and the allow rule for one node. */
static void gp__add_node(json_t *config, const char *path, char type, unsigned major, unsigned minor)
{
    json_t *linux_ = gp__object_at(config, "linux");
    json_array_append_new(gp__array_at(linux_, "devices"),
                          json_pack("{s:s, s:s#, s:I, s:I, s:i, s:i, s:i}", "path", path, "type", &type, (size_t)1,
                                    "major", (json_int_t)major, "minor", (json_int_t)minor, "fileMode", 0666, "uid", 0,
                                    "gid", 0));
    json_array_append_new(gp__array_at(gp__object_at(linux_, "resources"), "devices"),
                          json_pack("{s:b, s:s#, s:I, s:I, s:s}", "allow", 1, "type", &type, (size_t)1, "major",
                                    (json_int_t)major, "minor", (json_int_t)minor, "access", "rw"));
}

static void gp__add_bind(json_t *config, const char *source, const char *target, bool read_only)
{
    json_array_append_new(gp__array_at(config, "mounts"),
                          json_pack("{s:s, s:s, s:s, s:[s, s, s, s]}", "destination", target, "type", "bind", "source",
                                    source, "options", "rbind", read_only ? "ro" : "rw", "nosuid", "nodev"));
}

/* ---- CDI ---- */

static gp_err gp__cdi_node(json_t *config, const json_t *node, gp_error *err)
{
    const char *path = json_string_value(json_object_get(node, "path"));
    const char *host = json_string_value(json_object_get(node, "hostPath"));
    struct stat st;
    if (!path)
        return gp_error_set(err, GP_ERR_INVALID, "devices", "a CDI deviceNode without a path");
    if (stat(host ? host : path, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
        return gp_error_set(err, GP_ERR_INVALID, "devices", "CDI device node %s: not a device", host ? host : path);
    gp__add_node(config, path, S_ISBLK(st.st_mode) ? 'b' : 'c', major(st.st_rdev), minor(st.st_rdev));
    return GP_OK;
}

static void gp__cdi_mount(json_t *config, const json_t *m)
{
    const char *host = json_string_value(json_object_get(m, "hostPath"));
    const char *target = json_string_value(json_object_get(m, "containerPath"));
    if (!host || !target)
        return;
    json_t *options = json_object_get(m, "options");
    json_array_append_new(gp__array_at(config, "mounts"),
                          json_pack("{s:s, s:s, s:s, s:o}", "destination", target, "type", "bind", "source", host,
                                    "options", json_is_array(options) ? json_copy(options)
                                                                      : json_pack("[s, s]", "rbind", "ro")));
}

static void gp__cdi_hook(json_t *config, const json_t *hook)
{
    const char *name = json_string_value(json_object_get(hook, "hookName"));
    const char *path = json_string_value(json_object_get(hook, "path"));
    if (!name || !path)
        return;
    json_t *entry = json_pack("{s:s}", "path", path);
    const char *keys[] = {"args", "env", "timeout"};
    for (size_t i = 0; i < 3; i++)
        if (json_object_get(hook, keys[i]))
            json_object_set(entry, keys[i], json_object_get(hook, keys[i]));
    json_array_append_new(gp__array_at(gp__object_at(config, "hooks"), name), entry);
}

static gp_err gp__cdi_edits(json_t *config, const json_t *edits, gp_error *err)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(edits, "deviceNodes"), i, v) {
        if (gp__cdi_node(config, v, err) != GP_OK)
            return err->code;
    }
    json_array_foreach(json_object_get(edits, "mounts"), i, v) gp__cdi_mount(config, v);
    json_array_foreach(json_object_get(edits, "env"), i, v) {
        if (json_is_string(v))
            json_array_append(gp__array_at(gp__object_at(config, "process"), "env"), v);
    }
    json_array_foreach(json_object_get(edits, "hooks"), i, v) gp__cdi_hook(config, v);
    return GP_OK;
}

static bool gp__named(const char *name, const char *const *uuids)
{
    for (size_t i = 0; name && uuids && uuids[i]; i++)
        if (strcmp(uuids[i], name) == 0)
            return true;
    return false;
}

/* One spec: the edits of its devices named by a uuid, and its own once. */
static gp_err gp__cdi_spec(json_t *config, const json_t *spec, const char *const *uuids, bool *used, gp_error *err)
{
    size_t i;
    json_t *d;
    bool any = false;
    json_array_foreach(json_object_get(spec, "devices"), i, d) {
        if (!gp__named(json_string_value(json_object_get(d, "name")), uuids))
            continue;
        any = true;
        if (gp__cdi_edits(config, json_object_get(d, "containerEdits"), err) != GP_OK)
            return err->code;
    }
    if (any && gp__cdi_edits(config, json_object_get(spec, "containerEdits"), err) != GP_OK)
        return err->code;
    *used |= any;
    return GP_OK;
}

/* A spec file as JSON (.json) or YAML (.yaml, .yml); NULL when unreadable. */
static json_t *gp__cdi_load(const char *path)
{
    size_t len = strlen(path);
    if (len > 5 && strcmp(path + len - 5, ".json") == 0)
        return json_load_file(path, 0, NULL);
    if (!(len > 5 && strcmp(path + len - 5, ".yaml") == 0) && !(len > 4 && strcmp(path + len - 4, ".yml") == 0))
        return NULL;
    char *text = NULL;
    size_t n = 0;
    json_t *out = NULL;
    gp_yaml_lines lines = {0};
    if (gp_file_read_all(path, &text, &n, NULL) == GP_OK)
        gp_yaml_to_json(text, n, path, &out, &lines, NULL);
    gp_yaml_lines_free(&lines);
    free(text);
    return out;
}

static gp_err gp__cdi_dir(json_t *config, const char *dir, const char *const *uuids, bool *used, gp_error *err)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    gp_err rc = GP_OK;
    for (int i = 0; i < n; i++) {
        char path[GP_CONTAINER_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        json_t *spec = names[i]->d_name[0] == '.' ? NULL : gp__cdi_load(path);
        if (rc == GP_OK && spec)
            rc = gp__cdi_spec(config, spec, uuids, used, err);
        json_decref(spec);
        free(names[i]);
    }
    free(names);
    return rc;
}

/* ---- without CDI ---- */

/* Where a device path appears in the container: /dev/... as it is, else
 * /dev/NAME (/dev/nvidia-caps/NAME for a MIG capability). */
static void gp__container_dev_path(const char *path, char *out, size_t cap)
{
    if (strncmp(path, "/dev/", 5) == 0) {
        snprintf(out, cap, "%s", path);
        return;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    bool cap_file = strstr(path, "/nvidia-caps/") != NULL;
    snprintf(out, cap, "/dev/%s%s", cap_file ? "nvidia-caps/" : "", base);
}

/* Adds folder to out (n of cap) unless it is there. */
static void gp__folder_add(const char *folder, char (*out)[GP_CONTAINER_PATH_MAX], size_t *n, size_t cap)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(out[i], folder) == 0)
            return;
    if (*n < cap && folder[0] == '/')
        snprintf(out[(*n)++], GP_CONTAINER_PATH_MAX, "%s", folder);
}

/* The folders one ld.so.conf file names; its include lines (glob
 * patterns) are followed when depth allows. */
static void gp__ld_conf(const char *path, int depth, char (*out)[GP_CONTAINER_PATH_MAX], size_t *n, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[GP_CONTAINER_PATH_MAX];
    while (f && fgets(line, sizeof line, f)) {
        char *p = line + strspn(line, " \t");
        p[strcspn(p, "#\r\n")] = '\0';
        for (size_t len = strlen(p); len && (p[len - 1] == ' ' || p[len - 1] == '\t');)
            p[--len] = '\0';
        if (strncmp(p, "include", 7) != 0 || (p[7] != ' ' && p[7] != '\t')) {
            gp__folder_add(p, out, n, cap);
            continue;
        }
        glob_t g;
        if (depth > 0 && glob(p + 8 + strspn(p + 8, " \t"), 0, NULL, &g) == 0) {
            for (size_t k = 0; k < g.gl_pathc; k++)
                gp__ld_conf(g.gl_pathv[k], depth - 1, out, n, cap);
            globfree(&g);
        }
    }
    if (f)
        fclose(f);
}

size_t gp_cdi_library_folders(const char *ld_conf, char (*out)[GP_CONTAINER_PATH_MAX], size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; GP__USUAL_LIB_DIRS[i]; i++)
        gp__folder_add(GP__USUAL_LIB_DIRS[i], out, &n, cap);
    gp__ld_conf(ld_conf ? ld_conf : "/etc/ld.so.conf", 2, out, &n, cap);
    return n;
}

static bool gp__usual_lib_dir(const char *folder)
{
    for (size_t i = 0; GP__USUAL_LIB_DIRS[i]; i++)
        if (strcmp(GP__USUAL_LIB_DIRS[i], folder) == 0)
            return true;
    return false;
}

/* Appends folder to the container's LD_LIBRARY_PATH (process.env). */
static void gp__library_path_add(json_t *config, const char *folder)
{
    json_t *env = gp__array_at(gp__object_at(config, "process"), "env"), *v;
    size_t i;
    json_array_foreach(env, i, v) {
        const char *kv = json_string_value(v);
        if (kv && strncmp(kv, "LD_LIBRARY_PATH=", 16) == 0) {
            json_array_set_new(env, i, json_sprintf("%s%s%s", kv, kv[16] ? ":" : "", folder));
            return;
        }
    }
    json_array_append_new(env, json_sprintf("LD_LIBRARY_PATH=%s", folder));
}

/* Binds each match of pattern in folder read-only at its own path; true
 * when there was one. */
static bool gp__bind_matches(json_t *config, const char *folder, const char *pattern)
{
    char path[GP_CONTAINER_PATH_MAX];
    glob_t g;
    snprintf(path, sizeof path, "%s/%s", folder, pattern);
    if (glob(path, 0, NULL, &g) != 0)
        return false;
    for (size_t k = 0; k < g.gl_pathc; k++)
        gp__add_bind(config, g.gl_pathv[k], g.gl_pathv[k], true);
    globfree(&g);
    return true;
}

void gp_cdi_driver_edits(json_t *config, const char (*folders)[GP_CONTAINER_PATH_MAX], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t k = 0; GP__DRIVER_LIBS[k]; k++)
            found |= gp__bind_matches(config, folders[i], GP__DRIVER_LIBS[k]);
        if (found && !gp__usual_lib_dir(folders[i]))
            gp__library_path_add(config, folders[i]);
    }
    for (size_t i = 0; GP__SMI_DIRS[i]; i++) {
        char smi[GP_CONTAINER_PATH_MAX];
        snprintf(smi, sizeof smi, "%s/nvidia-smi", GP__SMI_DIRS[i]);
        if (access(smi, X_OK) != 0)
            continue;
        gp__add_bind(config, smi, smi, true);
        if (i > 0)
            gp__add_bind(config, smi, "/usr/bin/nvidia-smi", true);
        break;
    }
}

static void gp__driver_files(json_t *config)
{
    char(*folders)[GP_CONTAINER_PATH_MAX] = calloc(GP__LIB_FOLDERS_MAX, sizeof *folders);
    if (!folders)
        return;
    gp_cdi_driver_edits(config, (const char(*)[GP_CONTAINER_PATH_MAX])folders,
                        gp_cdi_library_folders(NULL, folders, GP__LIB_FOLDERS_MAX));
    free(folders);
}

static gp_err gp__device_paths(json_t *config, const char *const *paths, gp_error *err)
{
    bool nvidia = false;
    for (size_t i = 0; paths && paths[i]; i++) {
        struct stat st;
        char target[GP_CONTAINER_PATH_MAX];
        gp__container_dev_path(paths[i], target, sizeof target);
        if (stat(paths[i], &st) != 0)
            return gp_error_set(err, GP_ERR_INVALID, "devices", "%s: missing", paths[i]);
        if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
            gp__add_node(config, target, S_ISBLK(st.st_mode) ? 'b' : 'c', major(st.st_rdev), minor(st.st_rdev));
            nvidia |= S_ISCHR(st.st_mode) && major(st.st_rdev) == GP__NVIDIA_MAJOR;
        } else if (S_ISREG(st.st_mode)) {
            gp__add_bind(config, paths[i], target, false);
        } else {
            return gp_error_set(err, GP_ERR_INVALID, "devices", "%s: neither a device node nor a file", paths[i]);
        }
    }
    if (nvidia)
        gp__driver_files(config);
    return GP_OK;
}

gp_err gp_cdi_apply(json_t *config, const char *const *dirs, const char *const *uuids,
                    const char *const *device_paths, bool *used_cdi, gp_error *err)
{
    *used_cdi = false;
    gp_err rc = GP_OK;
    for (size_t i = 0; uuids && uuids[0] && rc == GP_OK && (dirs ? dirs : GP__CDI_DIRS)[i]; i++)
        rc = gp__cdi_dir(config, (dirs ? dirs : GP__CDI_DIRS)[i], uuids, used_cdi, err);
    if (rc == GP_OK && !*used_cdi)
        rc = gp__device_paths(config, device_paths, err);
    return rc;
}

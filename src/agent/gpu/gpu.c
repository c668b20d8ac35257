/* gpu.c - the GPU interface's dispatch: the table of backends and the
 * calls through a gp_gpu's ops (gpu.h).
 *
 * A backend is added here by name and in a file of its own; nothing else
 * in the agent names one.
 */
#include "agent/gpu/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "agent/gpu/gpu_nvml.h"
#include "agent/gpu/gpu_sim.h"

static const gp_gpu_ops *const backends[] = {&gp_gpu_sim_ops, &gp_gpu_nvml_ops};

const gp_gpu_ops *gp_gpu_backend(const char *name)
{
    for (size_t i = 0; name && i < sizeof backends / sizeof *backends; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

gp_err gp_gpu_open(const char *backend, const gp_gpu_options *opt, gp_gpu *out, gp_error *err)
{
    const gp_gpu_ops *ops = gp_gpu_backend(backend);
    memset(out, 0, sizeof *out);
    if (!ops)
        return gp_error_set(err, GP_ERR_INVALID, "backend", "unknown GPU backend %s (known: sim, nvml)",
                            backend ? backend : "(none)");
    return gp_gpu_open_with(ops, opt, out, err);
}

gp_err gp_gpu_open_with(const gp_gpu_ops *ops, const gp_gpu_options *opt, gp_gpu *out, gp_error *err)
{
    void *state = NULL;
    memset(out, 0, sizeof *out);
    gp_err rc = ops->open(opt, &state, err);
    if (rc)
        return rc;
    out->ops = ops;
    out->state = state;
    return GP_OK;
}

void gp_gpu_close(gp_gpu *g)
{
    if (g->ops)
        g->ops->close(g->state);
    g->ops = NULL;
    g->state = NULL;
}

gp_err gp_gpu_inventory(gp_gpu *g, gp_node_inventory *out, gp_error *err)
{
    return g->ops->inventory(g->state, out, err);
}

gp_err gp_gpu_telemetry(gp_gpu *g, int64_t now_ms, gp_telemetry *out, gp_error *err)
{
    return g->ops->telemetry(g->state, now_ms, out, err);
}

gp_err gp_gpu_poll_events(gp_gpu *g, int64_t now_ms, int timeout_ms, gp_gpu_event *out, size_t cap, size_t *n,
                          gp_error *err)
{
    return g->ops->poll_events(g->state, now_ms, timeout_ms, out, cap, n, err);
}

gp_err gp_gpu_mig_create(gp_gpu *g, int gpu, const char *profile, int start, gp_mig_instance *out, gp_error *err)
{
    return g->ops->mig_create(g->state, gpu, profile, start, out, err);
}

gp_err gp_gpu_mig_destroy(gp_gpu *g, const char *uuid, gp_error *err)
{
    return g->ops->mig_destroy(g->state, uuid, err);
}

gp_err gp_gpu_device_nodes(gp_gpu *g, const char *const *uuids, size_t n_uuids, gp_device_node *out, size_t cap,
                           size_t *n, gp_error *err)
{
    return g->ops->device_nodes(g->state, uuids, n_uuids, out, cap, n, err);
}

gp_err gp_gpu_set_busy(gp_gpu *g, const char *uuid, int pid, bool busy, int64_t now_ms, gp_error *err)
{
    return g->ops->set_busy(g->state, uuid, pid, busy, now_ms, err);
}

gp_err gp_gpu_check(gp_gpu *g, int gpu, int64_t now_ms, gp_gpu_health *out, gp_error *err)
{
    return g->ops->health(g->state, gpu, now_ms, out, err);
}

gp_err gp_gpu_add_device_node(const char *dir, const char *name, gp_device_node *out, size_t cap, size_t *n,
                              gp_error *err)
{
    char path[GP_GPU_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (size_t i = 0; i < *n; i++)
        if (strcmp(out[i].path, path) == 0)
            return GP_OK;
    if (*n == cap)
        return gp_error_set(err, GP_ERR_INVALID, "uuids", "more than %zu device nodes", cap);
    struct stat st;
    if (stat(path, &st) != 0)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "device_dir", "%s: %s", path, strerror(errno));
    if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode))
        return gp_error_set(err, GP_ERR_INVALID, "device_dir", "%s is neither a character device nor a file", path);
    gp_device_node *d = &out[(*n)++];
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", path);
    d->is_char = S_ISCHR(st.st_mode);
    d->major = d->is_char ? major(st.st_rdev) : 0;
    d->minor = d->is_char ? minor(st.st_rdev) : 0;
    return GP_OK;
}

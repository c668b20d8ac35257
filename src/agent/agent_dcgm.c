/* agent_dcgm.c - dcgm-exporter's job-mapping files (agent_dcgm.h). */
#include "agent/agent_dcgm.h"

#include "agent/supervise/agent_state.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP__MAP_TEXT_MAX 8192

/* The text of the file for (gpu, gi): each job once, a line each. */
static void gp__file_text(const gp_dcgm_use *uses, size_t n, int gpu, int gi, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (uses[i].gpu != gpu || uses[i].gi != gi)
            continue;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = uses[k].gpu == gpu && uses[k].gi == gi && uses[k].job == uses[i].job;
        if (!seen && used < cap)
            used += (size_t)snprintf(out + used, cap - used, "%llu\n", (unsigned long long)uses[i].job);
    }
}

static gp_err gp__write(const char *dir, int gpu, int gi, const gp_dcgm_use *uses, size_t n, gp_error *err)
{
    char path[GP_STATE_PATH_MAX], text[GP__MAP_TEXT_MAX];
    if (gi < 0)
        snprintf(path, sizeof path, "%s/%d", dir, gpu);
    else
        snprintf(path, sizeof path, "%s/%d.%d", dir, gpu, gi);
    gp__file_text(uses, n, gpu, gi, text, sizeof text);
    gp_err rc = gp_state_write(path, text, 0644, err);
    if (rc != GP_OK && err)
        snprintf(err->field, sizeof err->field, "dcgm_job_map");
    return rc;
}

/* Empties each GPU.GI file of DIR that no use names. */
static gp_err gp__empty_stale_mig_files(const char *dir, const gp_dcgm_use *uses, size_t n, gp_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    gp_err rc = GP_OK;
    while (d && rc == GP_OK && (e = readdir(d)) != NULL) {
        int gpu, gi, end = 0;
        if (sscanf(e->d_name, "%d.%d%n", &gpu, &gi, &end) != 2 || e->d_name[end] != '\0')
            continue;
        bool named = false;
        for (size_t i = 0; i < n && !named; i++)
            named = uses[i].gpu == gpu && uses[i].gi == gi;
        if (!named)
            rc = gp__write(dir, gpu, gi, uses, 0, err);
    }
    if (d)
        closedir(d);
    return rc;
}

gp_err gp_dcgm_job_map_write(const char *dir, int gpu_count, const gp_dcgm_use *uses, size_t n, gp_error *err)
{
    gp_err rc = gp_state_mkdirs(dir, 0755, err);
    for (int g = 0; rc == GP_OK && g < gpu_count; g++)
        rc = gp__write(dir, g, -1, uses, n, err);
    for (size_t i = 0; rc == GP_OK && i < n; i++)
        if (uses[i].gi >= 0)
            rc = gp__write(dir, uses[i].gpu, uses[i].gi, uses, n, err);
    return rc == GP_OK ? gp__empty_stale_mig_files(dir, uses, n, err) : rc;
}

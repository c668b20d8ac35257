/* launch_env.c - a replica's environment: the job's variables and the
 * agent's (the table is in launch_env.h). */
#include "agent/launch/launch_env.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

unsigned gp_master_port(uint64_t job_id)
{
    return GP_MASTER_PORT_BASE + (unsigned)(job_id % GP_MASTER_PORT_SPAN);
}

/* The index of NAME's entry (name of len bytes), or env->count. */
static size_t gp__env_find(const gp_env *env, const char *name, size_t len)
{
    for (size_t i = 0; i < env->count; i++) {
        if (strncmp(env->vars[i], name, len) == 0 && env->vars[i][len] == '=') {
            return i;
        }
    }
    return env->count;
}

/* Stores entry (malloc'd "NAME=value", name of len bytes), taking it. */
static gp_err gp__env_store(gp_env *env, char *entry, size_t len, gp_error *err)
{
    size_t at = gp__env_find(env, entry, len);
    if (at < env->count) {
        free(env->vars[at]);
        env->vars[at] = entry;
        return GP_OK;
    }
    char **vars = gp_grow(env->vars, &env->cap, env->count + 2, sizeof *vars); /* and the NULL after */
    if (!vars) {
        free(entry);
        return gp_error_set(err, GP_ERR_NOMEM, "env", "out of memory");
    }
    env->vars = vars;
    env->vars[env->count++] = entry;
    env->vars[env->count] = NULL;
    return GP_OK;
}

static gp_err gp__env_check_name(const char *name, size_t len, gp_error *err)
{
    if (len == 0 || memchr(name, '=', len)) {
        return gp_error_set(err, GP_ERR_INVALID, "env", "a variable name must be non-empty and without '=', got \"%.*s\"",
                            (int)len, name);
    }
    return GP_OK;
}

gp_err gp_env_set(gp_env *env, const char *name, const char *value, gp_error *err)
{
    size_t len = strlen(name);
    gp_err rc = gp__env_check_name(name, len, err);
    if (rc != GP_OK) {
        return rc;
    }
    size_t size = len + 1 + strlen(value) + 1;
    char *entry = malloc(size);
    if (!entry) {
        return gp_error_set(err, GP_ERR_NOMEM, "env", "out of memory");
    }
    snprintf(entry, size, "%s=%s", name, value);
    return gp__env_store(env, entry, len, err);
}

gp_err gp_env_set_default(gp_env *env, const char *name, const char *value, gp_error *err)
{
    if (gp_env_get(env, name)) {
        return GP_OK;
    }
    return gp_env_set(env, name, value, err);
}

gp_err gp_env_put(gp_env *env, const char *entry, gp_error *err)
{
    const char *eq = strchr(entry, '=');
    if (!eq) {
        return gp_error_set(err, GP_ERR_INVALID, "env", "an entry must be NAME=value, got \"%s\"", entry);
    }
    size_t len = (size_t)(eq - entry);
    gp_err rc = gp__env_check_name(entry, len, err);
    if (rc != GP_OK) {
        return rc;
    }
    char *copy = strdup(entry);
    if (!copy) {
        return gp_error_set(err, GP_ERR_NOMEM, "env", "out of memory");
    }
    return gp__env_store(env, copy, len, err);
}

const char *gp_env_get(const gp_env *env, const char *name)
{
    size_t len = strlen(name);
    size_t at = gp__env_find(env, name, len);
    return at < env->count ? env->vars[at] + len + 1 : NULL;
}

/* host1,host2,... into *out, a malloc'd string. */
static gp_err gp__peers_join(const gp_replica_desc *desc, char **out, gp_error *err)
{
    size_t size = 1;
    for (unsigned i = 0; i < desc->replicas; i++) {
        if (!desc->hosts[i] || !desc->hosts[i][0] || strchr(desc->hosts[i], ',')) {
            return gp_error_set(err, GP_ERR_INVALID, "hosts", "hosts[%u] must be a host name without ','", i);
        }
        size += strlen(desc->hosts[i]) + 1;
    }
    char *peers = malloc(size);
    if (!peers) {
        return gp_error_set(err, GP_ERR_NOMEM, "hosts", "out of memory");
    }
    peers[0] = '\0';
    for (unsigned i = 0; i < desc->replicas; i++) {
        strcat(peers, desc->hosts[i]);
        if (i + 1 < desc->replicas) {
            strcat(peers, ",");
        }
    }
    *out = peers;
    return GP_OK;
}

static gp_err gp__env_set_uint(gp_env *env, const char *name, uint64_t value, gp_error *err)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, value);
    return gp_env_set(env, name, text, err);
}

static const char *gp__or_empty(const char *s)
{
    return s ? s : "";
}

/* The agent's variables (launch_env.h's table), over whatever env holds. */
static gp_err gp__env_agent_vars(gp_env *env, const gp_replica_desc *d, const char *peers, gp_error *err)
{
    gp_err rc = GP_OK;
    if (rc == GP_OK) rc = gp_env_set(env, "CUDA_VISIBLE_DEVICES", gp__or_empty(d->visible_devices), err);
    if (rc == GP_OK) rc = gp__env_set_uint(env, "GPUPOOL_JOB_ID", d->job_id, err);
    if (rc == GP_OK) rc = gp_env_set(env, "GPUPOOL_TENANT", gp__or_empty(d->tenant), err);
    if (rc == GP_OK) rc = gp__env_set_uint(env, "GPUPOOL_REPLICA", d->replica, err);
    if (rc == GP_OK) rc = gp__env_set_uint(env, "GPUPOOL_REPLICAS", d->replicas, err);
    if (rc == GP_OK) rc = gp_env_set(env, "GPUPOOL_PEERS", peers, err);
    if (rc == GP_OK) rc = gp_env_set(env, "GPUPOOL_CHECKPOINT_DIR", gp__or_empty(d->checkpoint_dir), err);
    if (rc == GP_OK) rc = gp__env_set_uint(env, "GPUPOOL_RESTART_COUNT", d->restart_count, err);
    if (rc == GP_OK) rc = gp_env_set(env, "MASTER_ADDR", d->hosts[0], err);
    if (rc == GP_OK) rc = gp__env_set_uint(env, "MASTER_PORT", gp_master_port(d->job_id), err);
    if (rc == GP_OK) rc = gp__env_set_uint(env, "NNODES", d->replicas, err);
    if (rc == GP_OK) rc = gp__env_set_uint(env, "NODE_RANK", d->replica, err);
    if (rc == GP_OK) rc = gp__env_set_uint(env, "WORLD_SIZE", d->replicas, err);
    if (rc == GP_OK) rc = gp__env_set_uint(env, "RANK", d->replica, err);
    if (rc == GP_OK) rc = gp_env_set(env, "LOCAL_RANK", "0", err);
    return rc;
}

gp_err gp_env_for_replica(gp_env *env, const char *const *job_env, const gp_replica_desc *desc, gp_error *err)
{
    if (desc->replicas == 0 || desc->replica >= desc->replicas) {
        return gp_error_set(err, GP_ERR_INVALID, "replica", "replica %u is not in 0..replicas-1 (replicas %u)",
                            desc->replica, desc->replicas);
    }
    if (!desc->hosts) {
        return gp_error_set(err, GP_ERR_INVALID, "hosts", "every replica's host is needed");
    }
    char *peers = NULL;
    gp_err rc = gp__peers_join(desc, &peers, err);
    for (size_t i = 0; job_env && job_env[i] && rc == GP_OK; i++) {
        rc = gp_env_put(env, job_env[i], err);
    }
    if (rc == GP_OK) {
        rc = gp__env_agent_vars(env, desc, peers, err);
    }
    free(peers);
    if (rc != GP_OK) {
        gp_env_free(env);
    }
    return rc;
}

void gp_env_free(gp_env *env)
{
    for (size_t i = 0; i < env->count; i++) {
        free(env->vars[i]);
    }
    free(env->vars);
    *env = (gp_env){0};
}

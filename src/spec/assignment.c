/* assignment.c - an agent's assignment, JSON both ways (assignment.h). */
#include "spec/assignment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void gp__copy(char *out, size_t cap, const json_t *v)
{
    snprintf(out, cap, "%s", json_is_string(v) ? json_string_value(v) : "");
}

/* An integer field: *given says whether it was one. */
static int64_t gp__int(const json_t *o, const char *key, bool *given)
{
    const json_t *v = json_object_get(o, key);
    if (given)
        *given = json_is_integer(v);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static gp_err gp__nomem(gp_error *err, const char *field)
{
    return gp_error_set(err, GP_ERR_NOMEM, field, "out of memory");
}

/* A JSON array as strings (a value of another type reads ""). */
static gp_err gp__strings(const json_t *array, const char *field, char ***out, size_t *n, gp_error *err)
{
    size_t count = json_array_size(array), i;
    *n = 0;
    *out = count ? calloc(count, sizeof **out) : NULL;
    if (count && !*out)
        return gp__nomem(err, field);
    for (i = 0; i < count; i++) {
        const json_t *s = json_array_get(array, i);
        (*out)[i] = strdup(json_is_string(s) ? json_string_value(s) : "");
        if (!(*out)[i])
            return gp__nomem(err, field);
        *n = i + 1;
    }
    return GP_OK;
}

/* An object of strings as NAME/value pairs, in its order (values of
 * another type left out). */
static gp_err gp__vars(const json_t *object, const char *field, gp_assignment_var **out, size_t *n, gp_error *err)
{
    size_t count = json_object_size(object);
    const char *k;
    json_t *v;
    *n = 0;
    *out = count ? calloc(count, sizeof **out) : NULL;
    if (count && !*out)
        return gp__nomem(err, field);
    json_object_foreach((json_t *)object, k, v) {
        if (!json_is_string(v))
            continue;
        gp_assignment_var *var = &(*out)[(*n)++];
        var->name = strdup(k);
        var->value = strdup(json_string_value(v));
        if (!var->name || !var->value)
            return gp__nomem(err, field);
    }
    return GP_OK;
}

static void gp__slice_parse(const json_t *s, gp_assignment *a)
{
    a->has_slice = json_is_object(s);
    a->slice.has_kind = json_is_string(json_object_get(s, "kind"));
    gp__copy(a->slice.kind, sizeof a->slice.kind, json_object_get(s, "kind"));
    a->slice.milli_gpus = (int)gp__int(s, "milli_gpus", NULL);
    gp__copy(a->slice.mig_profile, sizeof a->slice.mig_profile, json_object_get(s, "mig_profile"));
    a->slice.mig_start = gp__int(s, "mig_start", NULL);
    a->slice.gpu_mem_mib = gp__int(s, "gpu_mem_mib", NULL);
}

/* action, stop_reason, the kill deadline and the stop signal. */
static void gp__stop_parse(const json_t *o, gp_assignment *a)
{
    const char *action = json_string_value(json_object_get(o, "action"));
    a->stop = action && strcmp(action, "stop") == 0;
    gp__copy(a->stop_reason, sizeof a->stop_reason, json_object_get(o, "stop_reason"));
    bool ms = false, s = false;
    a->kill_deadline_ms = gp__int(o, "kill_deadline_ms", &ms);
    if (!ms)
        a->kill_deadline_ms = gp__int(o, "kill_deadline", &s) * 1000;
    a->has_kill_deadline = ms || s;
    int sig = GP_STOP_SIGTERM;
    a->has_stop_signal = gp_enum_value(GP_ENUM_STOP_SIGNAL, json_string_value(json_object_get(o, "stop_signal")), &sig);
    a->stop_signal = (gp_stop_signal)sig;
}

static char *gp__strdup_or_null(const json_t *v)
{
    return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

/* The mounts: objects with string source and target (others left out). */
static gp_err gp__mounts(const json_t *array, gp_assignment *a, gp_error *err)
{
    size_t count = json_array_size(array), i;
    a->mounts = count ? calloc(count, sizeof *a->mounts) : NULL;
    if (count && !a->mounts)
        return gp__nomem(err, "mounts");
    for (i = 0; i < count; i++) {
        const json_t *m = json_array_get(array, i);
        const json_t *source = json_object_get(m, "source"), *target = json_object_get(m, "target");
        if (!json_is_string(source) || !json_is_string(target))
            continue;
        gp_assignment_mount *out = &a->mounts[a->n_mounts++];
        out->source = strdup(json_string_value(source));
        out->target = strdup(json_string_value(target));
        out->read_only = json_is_true(json_object_get(m, "read_only"));
        if (!out->source || !out->target)
            return gp__nomem(err, "mounts");
    }
    return GP_OK;
}

/* image, image_auth, mounts, shm_mib, read_only_root, network, allow_userns. */
static gp_err gp__container_parse(const json_t *o, gp_assignment *a, gp_error *err)
{
    gp__copy(a->image, sizeof a->image, json_object_get(o, "image"));
    a->shm_mib = gp__int(o, "shm_mib", NULL);
    a->read_only_root = json_is_true(json_object_get(o, "read_only_root"));
    const char *network = json_string_value(json_object_get(o, "network"));
    a->private_network = network && strcmp(network, "private") == 0;
    a->allow_userns = json_is_true(json_object_get(o, "allow_userns"));
    /* a credential is a username and a password, both strings; half of one is none */
    const json_t *auth = json_object_get(o, "image_auth");
    const json_t *user = json_object_get(auth, "username"), *password = json_object_get(auth, "password");
    if (json_is_string(user) && json_is_string(password)) {
        a->image_auth_user = gp__strdup_or_null(user);
        a->image_auth_password = gp__strdup_or_null(password);
        if (!a->image_auth_user || !a->image_auth_password)
            return gp__nomem(err, "image_auth");
    }
    return gp__mounts(json_object_get(o, "mounts"), a, err);
}

/* The job's spec fields gpupoold copies in. */
static void gp__job_parse(const json_t *o, gp_assignment *a)
{
    gp__copy(a->name, sizeof a->name, json_object_get(o, "name"));
    gp__copy(a->tenant, sizeof a->tenant, json_object_get(o, "tenant"));
    gp__copy(a->user, sizeof a->user, json_object_get(o, "user"));
    gp__copy(a->kind, sizeof a->kind, json_object_get(o, "kind"));
    a->cpu_millis = gp__int(o, "cpu_millis", NULL);
    a->mem_mib = gp__int(o, "mem_mib", NULL);
    a->pids_max = gp__int(o, "pids_max", NULL);
    a->checkpoint_grace_s = gp__int(o, "checkpoint_grace_s", &a->has_checkpoint_grace);
    a->uid_min = gp__int(o, "uid_min", &a->has_uid_min);
    a->keep_running_when_partitioned = json_is_true(json_object_get(o, "keep_running_when_partitioned"));
    const json_t *trust = json_object_get(o, "trust");
    a->has_trust = json_is_string(trust);
    a->untrusted = a->has_trust && strcmp(json_string_value(trust), "trusted") != 0;
}

gp_err gp_assignment_parse(const json_t *o, gp_assignment *a, gp_error *err)
{
    *a = (gp_assignment){0};
    a->job = (uint64_t)gp__int(o, "job", NULL);
    a->replica = (unsigned)gp__int(o, "replica", NULL);
    a->replicas = (unsigned)gp__int(o, "replicas", NULL);
    a->bind_time = gp__int(o, "bind_time", NULL);
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(o, "gpus"), i, g) {
        if (a->n_gpus < GP_MAX_GPUS_PER_NODE && json_is_string(g))
            gp__copy(a->gpus[a->n_gpus++], GP_UUID_MAX, g);
    }
    gp__slice_parse(json_object_get(o, "slice"), a);
    gp__stop_parse(o, a);
    a->restart_count = (unsigned)gp__int(o, "restart_count", NULL);
    a->time_limit_s = gp__int(o, "time_limit_s", &a->has_time_limit);
    a->last_checkpoint = gp__int(o, "last_checkpoint", &a->has_last_checkpoint);
    gp__job_parse(o, a);
    const json_t *command = json_object_get(o, "command");
    a->has_command = json_is_array(command);
    gp_err rc = gp__strings(json_object_get(o, "peers"), "peers", &a->peers, &a->n_peers, err);
    if (rc == GP_OK)
        rc = gp__strings(command, "command", &a->command, &a->n_command, err);
    if (rc == GP_OK)
        rc = gp__vars(json_object_get(o, "env"), "env", &a->env, &a->n_env, err);
    if (rc == GP_OK)
        rc = gp__vars(json_object_get(o, "secrets"), "secrets", &a->secrets, &a->n_secrets, err);
    if (rc == GP_OK)
        rc = gp__container_parse(o, a, err);
    if (rc == GP_OK)
        rc = gp__strings(json_object_get(o, "egress"), "egress", &a->egress, &a->n_egress, err);
    if (rc == GP_OK)
        rc = gp__strings(json_object_get(o, "reach_from"), "reach_from", &a->reach_from, &a->n_reach_from, err);
    if (rc == GP_OK)
        rc = gp__strings(json_object_get(o, "reach_from_nodes"), "reach_from_nodes", &a->reach_from_nodes,
                         &a->n_reach_from_nodes, err);
    if (rc == GP_OK)
        rc = gp__strings(json_object_get(o, "reach_to_nodes"), "reach_to_nodes", &a->reach_to_nodes,
                         &a->n_reach_to_nodes, err);
    if (rc != GP_OK)
        gp_assignment_free(a);
    return rc;
}

gp_err gp_assignments_parse(const json_t *list, gp_assignment **out, size_t *n, gp_error *err)
{
    size_t count = json_array_size(list);
    *n = 0;
    *out = count ? calloc(count, sizeof **out) : NULL;
    if (count && !*out)
        return gp__nomem(err, "assignments");
    for (size_t i = 0; i < count; i++) {
        gp_err rc = gp_assignment_parse(json_array_get(list, i), &(*out)[i], err);
        if (rc != GP_OK) {
            gp_assignments_free(*out, i);
            *out = NULL;
            return rc;
        }
    }
    *n = count;
    return GP_OK;
}

/* ---- writing ---- */

static json_t *gp__strings_json(char *const *v, size_t n)
{
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, json_string(v[i]));
    return out;
}

static json_t *gp__vars_json(const gp_assignment_var *v, size_t n)
{
    json_t *out = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(out, v[i].name, json_string(v[i].value));
    return out;
}

static void gp__set_string(json_t *o, const char *key, const char *v)
{
    if (v[0])
        json_object_set_new(o, key, json_string(v));
}

static json_t *gp__slice_json(const gp_assignment_slice *s)
{
    json_t *o = json_pack("{s:i, s:I}", "milli_gpus", s->milli_gpus, "mig_start", (json_int_t)s->mig_start);
    if (s->has_kind)
        json_object_set_new(o, "kind", json_string(s->kind));
    gp__set_string(o, "mig_profile", s->mig_profile);
    if (s->gpu_mem_mib)
        json_object_set_new(o, "gpu_mem_mib", json_integer(s->gpu_mem_mib));
    return o;
}

static void gp__stop_json(const gp_assignment *a, json_t *o)
{
    json_object_set_new(o, "action", json_string(a->stop ? "stop" : "run"));
    gp__set_string(o, "stop_reason", a->stop_reason);
    if (a->has_kill_deadline)
        json_object_set_new(o, "kill_deadline_ms", json_integer(a->kill_deadline_ms));
    if (a->has_stop_signal)
        json_object_set_new(o, "stop_signal", json_string(gp_enum_name(GP_ENUM_STOP_SIGNAL, (int)a->stop_signal)));
}

static void gp__job_json(const gp_assignment *a, json_t *o)
{
    gp__set_string(o, "name", a->name);
    gp__set_string(o, "tenant", a->tenant);
    gp__set_string(o, "user", a->user);
    gp__set_string(o, "kind", a->kind);
    if (a->has_command)
        json_object_set_new(o, "command", gp__strings_json(a->command, a->n_command));
    json_object_set_new(o, "env", gp__vars_json(a->env, a->n_env));
    const struct {
        const char *key;
        int64_t v;
        bool given;
    } INTS[] = {{"cpu_millis", a->cpu_millis, a->cpu_millis != 0},
                {"mem_mib", a->mem_mib, a->mem_mib != 0},
                {"pids_max", a->pids_max, a->pids_max != 0},
                {"checkpoint_grace_s", a->checkpoint_grace_s, a->has_checkpoint_grace},
                {"uid_min", a->uid_min, a->has_uid_min},
                {"time_limit_s", a->time_limit_s, a->has_time_limit},
                {"last_checkpoint", a->last_checkpoint, a->has_last_checkpoint}};
    for (size_t i = 0; i < sizeof INTS / sizeof INTS[0]; i++)
        if (INTS[i].given)
            json_object_set_new(o, INTS[i].key, json_integer(INTS[i].v));
    if (a->has_trust)
        json_object_set_new(o, "trust", json_string(a->untrusted ? "untrusted" : "trusted"));
    if (a->keep_running_when_partitioned)
        json_object_set_new(o, "keep_running_when_partitioned", json_true());
}

/* The container fields (image_auth never: a secret). */
static void gp__container_json(const gp_assignment *a, json_t *o)
{
    gp__set_string(o, "image", a->image);
    if (a->n_mounts) {
        json_t *mounts = json_array();
        for (size_t i = 0; i < a->n_mounts; i++)
            json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "source", a->mounts[i].source, "target",
                                                    a->mounts[i].target, "read_only", a->mounts[i].read_only));
        json_object_set_new(o, "mounts", mounts);
    }
    if (a->shm_mib)
        json_object_set_new(o, "shm_mib", json_integer(a->shm_mib));
    if (a->read_only_root)
        json_object_set_new(o, "read_only_root", json_true());
    if (a->private_network)
        json_object_set_new(o, "network", json_string("private"));
    if (a->allow_userns)
        json_object_set_new(o, "allow_userns", json_true());
}

json_t *gp_assignment_to_json(const gp_assignment *a)
{
    json_t *gpus = json_array();
    for (size_t i = 0; i < a->n_gpus; i++)
        json_array_append_new(gpus, json_string(a->gpus[i]));
    json_t *o = json_pack("{s:I, s:i, s:i, s:I, s:o, s:o, s:i}", "job", (json_int_t)a->job, "replica",
                          (int)a->replica, "replicas", (int)a->replicas, "bind_time", (json_int_t)a->bind_time, "gpus",
                          gpus, "peers", gp__strings_json(a->peers, a->n_peers), "restart_count", (int)a->restart_count);
    if (!o)
        return NULL;
    if (a->has_slice)
        json_object_set_new(o, "slice", gp__slice_json(&a->slice));
    gp__stop_json(a, o);
    gp__job_json(a, o);
    gp__container_json(a, o);
    if (a->n_egress)
        json_object_set_new(o, "egress", gp__strings_json(a->egress, a->n_egress));
    if (a->n_reach_from)
        json_object_set_new(o, "reach_from", gp__strings_json(a->reach_from, a->n_reach_from));
    if (a->n_reach_from_nodes)
        json_object_set_new(o, "reach_from_nodes", gp__strings_json(a->reach_from_nodes, a->n_reach_from_nodes));
    if (a->n_reach_to_nodes)
        json_object_set_new(o, "reach_to_nodes", gp__strings_json(a->reach_to_nodes, a->n_reach_to_nodes));
    return o;
}

static void gp__vars_free(gp_assignment_var *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].value);
    }
    free(v);
}

static void gp__strings_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void gp_assignment_free(gp_assignment *a)
{
    if (!a)
        return;
    gp__strings_free(a->peers, a->n_peers);
    gp__strings_free(a->command, a->n_command);
    gp__vars_free(a->env, a->n_env);
    gp__vars_free(a->secrets, a->n_secrets);
    for (size_t i = 0; i < a->n_mounts; i++) {
        free(a->mounts[i].source);
        free(a->mounts[i].target);
    }
    free(a->mounts);
    free(a->image_auth_user);
    free(a->image_auth_password);
    gp__strings_free(a->egress, a->n_egress);
    gp__strings_free(a->reach_from, a->n_reach_from);
    gp__strings_free(a->reach_from_nodes, a->n_reach_from_nodes);
    gp__strings_free(a->reach_to_nodes, a->n_reach_to_nodes);
    *a = (gp_assignment){0};
}

void gp_assignments_free(gp_assignment *list, size_t n)
{
    for (size_t i = 0; list && i < n; i++)
        gp_assignment_free(&list[i]);
    free(list);
}

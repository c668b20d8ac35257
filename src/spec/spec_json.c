/* spec_json.c - jobs, tenants, nodes and pools as JSON (see spec_json.h).
 *
 * Each parser walks the object's keys and dispatches on the name, so an
 * unknown key is reported by name and every value is range-checked before
 * the engine sees it.  The engine validates again (it trusts nobody); the
 * checks here exist so the caller learns the field even for values the
 * engine's types could not hold (a replica count of 2^40, say).
 */
#include "spec/spec_json.h"

#include "spec/json_input.h"
#include "util/index_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- jobs ---- */

static gp_err parse_share(const json_t *v, gp_job_request *r, gp_isolation *implied, gp_error *err)
{
    gp_err rc = gp_json_object(v, "share", err);
    if (rc)
        return rc;
    if (json_object_size(v) != 1)
        return gp_error_set(err, GP_ERR_INVALID, "share", "share names exactly one of mig, mps, timeslice");
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x) {
        if (strcmp(key, "mig") == 0) {
            *implied = GP_ISO_MIG;
            return gp_json_string(x, "share.mig", sizeof r->spec.share.mig_profile - 1, r->spec.share.mig_profile,
                                  sizeof r->spec.share.mig_profile, err);
        }
        if (strcmp(key, "mps") == 0) {
            int64_t pct = 0;
            *implied = GP_ISO_MPS;
            rc = gp_json_int(x, "share.mps", 1, 100, &pct, err);
            r->spec.share.mps_milli = (int)pct * 10;
            return rc;
        }
        if (strcmp(key, "timeslice") == 0) {
            bool on = false;
            *implied = GP_ISO_TIMESLICE;
            if ((rc = gp_json_bool(x, "share.timeslice", &on, err)))
                return rc;
            if (!on)
                return gp_error_set(err, GP_ERR_INVALID, "share.timeslice", "share.timeslice must be true");
            return GP_OK;
        }
        return gp_json_unknown_field("share", key, err);
    }
    return GP_OK;
}

static gp_err parse_gpu_types(const json_t *v, gp_job_request *r, gp_error *err)
{
    if (!json_is_array(v))
        return gp_error_set(err, GP_ERR_INVALID, "gpu_types", "gpu_types must be an array of strings");
    if (json_array_size(v) > GP_MAX_GPU_TYPES)
        return gp_error_set(err, GP_ERR_INVALID, "gpu_types", "gpu_types lists at most %d types", GP_MAX_GPU_TYPES);
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        gp_err rc = gp_json_string(x, "gpu_types", GP_NAME_MAX - 1, r->gpu_types[i], GP_NAME_MAX, err);
        if (rc)
            return rc;
        r->spec.gpu_types[i] = r->gpu_types[i];
    }
    r->spec.n_gpu_types = (int)json_array_size(v);
    return GP_OK;
}

static gp_err parse_command(const json_t *v, gp_job_request *r, gp_error *err)
{
    if (!json_is_array(v) || json_array_size(v) > GP_JOB_MAX_ARGS)
        return gp_error_set(err, GP_ERR_INVALID, "command", "command must be an array of at most %d strings",
                            GP_JOB_MAX_ARGS);
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (!json_is_string(x) || json_string_length(x) > GP_JOB_MAX_ARG_LEN)
            return gp_error_set(err, GP_ERR_INVALID, "command", "command[%zu] must be a string of at most %d bytes",
                                i, GP_JOB_MAX_ARG_LEN);
    }
    json_decref(r->command);
    r->command = json_deep_copy(v);
    return GP_OK;
}

static bool env_name_ok(const char *k)
{
    if (!k[0] || strlen(k) > 128 || (k[0] >= '0' && k[0] <= '9'))
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

static gp_err parse_env(const json_t *v, gp_job_request *r, gp_error *err)
{
    if (!json_is_object(v) || json_object_size(v) > GP_JOB_MAX_ENV)
        return gp_error_set(err, GP_ERR_INVALID, "env", "env must be an object of at most %d strings",
                            GP_JOB_MAX_ENV);
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x) {
        if (!env_name_ok(key))
            return gp_error_set(err, GP_ERR_INVALID, "env", "env names are [A-Za-z_][A-Za-z0-9_]{0,127}");
        if (!json_is_string(x) || json_string_length(x) > GP_JOB_MAX_ENV_LEN) {
            char field[GP_ERROR_FIELD_MAX];
            gp_json_field_name(field, sizeof field, "env", key);
            return gp_error_set(err, GP_ERR_INVALID, field, "%s must be a string of at most %d bytes", field,
                                GP_JOB_MAX_ENV_LEN);
        }
    }
    json_decref(r->env);
    r->env = json_deep_copy(v);
    return GP_OK;
}

bool gp_secret_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= 128 && name[0] != '.' &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* {"ENV_NAME": "secret-name"}: which variables take which of the
 * tenant's secrets (the values never enter a spec). */
static gp_err parse_env_from_secret(const json_t *v, gp_job_request *r, gp_error *err)
{
    if (!json_is_object(v) || json_object_size(v) > GP_JOB_MAX_ENV)
        return gp_error_set(err, GP_ERR_INVALID, "env_from_secret",
                            "env_from_secret must be an object of at most %d secret names", GP_JOB_MAX_ENV);
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x) {
        char field[GP_ERROR_FIELD_MAX];
        gp_json_field_name(field, sizeof field, "env_from_secret", key);
        if (!env_name_ok(key))
            return gp_error_set(err, GP_ERR_INVALID, "env_from_secret",
                                "env_from_secret names are [A-Za-z_][A-Za-z0-9_]{0,127}");
        if (!json_is_string(x) || !gp_secret_name_ok(json_string_value(x)))
            return gp_error_set(err, GP_ERR_INVALID, field,
                                "%s must name a secret: 1..128 of letters, digits, _ . - (not starting with .)",
                                field);
    }
    json_decref(r->env_from_secret);
    r->env_from_secret = json_object_size(v) ? json_deep_copy(v) : NULL;
    return GP_OK;
}

/* A variable set both by env and by env_from_secret: refused. */
static gp_err env_overlap(const gp_job_request *r, gp_error *err)
{
    const char *key;
    json_t *x;
    json_object_foreach(r->env_from_secret, key, x) {
        if (json_object_get(r->env, key)) {
            char field[GP_ERROR_FIELD_MAX];
            gp_json_field_name(field, sizeof field, "env_from_secret", key);
            return gp_error_set(err, GP_ERR_INVALID, field, "%s is set by env too: give it one source", key);
        }
    }
    return GP_OK;
}

static gp_err parse_int_field(const json_t *x, const char *key, int64_t min, int64_t max, int64_t *out,
                              gp_error *err)
{
    return gp_json_int(x, key, min, max, out, err);
}

/* A key no job has: "did you mean" the nearest that it has, or the one
 * another scheduler's name stands for (Slurm's, a Kubernetes pod's). */
static gp_err job_field_unknown(const char *key, gp_error *err)
{
    static const char *const FIELDS[] = {
        "tenant",         "name",           "user",          "kind",         "replicas",      "gpus",
        "gpu_types",      "cpu_millis",     "mem_mib",       "pids_max",     "topology",      "share",
        "isolation",      "priority",       "checkpoint_grace_s", "expected_runtime_s", "time_limit_s",
        "restart_policy", "max_restarts",   "stop_signal",   "command",      "env",           "env_from_secret",
        "wait_for_fleet", "keep_running_when_partitioned", "booking"};
    static const gp_json_alias ALIASES[] = {
        {"gpus_per_replica", "gpus"}, {"gpus_per_node", "gpus"},     {"gpus_per_task", "gpus"},
        {"gres", "gpus"},             {"nodes", "replicas"},         {"ntasks", "replicas"},
        {"num_nodes", "replicas"},    {"parallelism", "replicas"},   {"gpu_type", "gpu_types"},
        {"constraint", "gpu_types"},  {"time", "time_limit_s"},      {"time_limit", "time_limit_s"},
        {"walltime", "time_limit_s"}, {"cpus", "cpu_millis"},        {"cpus_per_task", "cpu_millis"},
        {"mem", "mem_mib"},           {"memory", "mem_mib"},         {"account", "tenant"},
        {"namespace", "tenant"},      {"job_name", "name"},
        {"nice", "priority"},         {"args", "command"},           {"wrap", "command"},
        {"environment", "env"},       {"signal", "stop_signal"},     {"requeue", "restart_policy"}};
    size_t n_container;
    const char *const *container = gp_job_container_keys(&n_container);
    const char *known[sizeof FIELDS / sizeof FIELDS[0] + 8];
    size_t n = 0;
    for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++)
        known[n++] = FIELDS[i];
    for (size_t i = 0; i < n_container && n < sizeof known / sizeof known[0]; i++)
        known[n++] = container[i];
    return gp_json_unknown_field_hint("", key, known, n, ALIASES, sizeof ALIASES / sizeof ALIASES[0], err);
}

/* One key of a job body. */
static gp_err job_field(gp_job_request *r, const char *key, const json_t *x, bool allow_id, bool *have_iso,
                        gp_isolation *implied, gp_error *err)
{
    gp_job_spec *s = &r->spec;
    int64_t n = 0;
    int choice = 0;
    gp_err rc;
    if (allow_id && strcmp(key, "id") == 0) {
        rc = parse_int_field(x, key, 1, INT64_MAX, &n, err);
        s->id = (uint64_t)n;
        return rc;
    }
    if (allow_id && strcmp(key, "array_id") == 0) {
        rc = parse_int_field(x, key, 1, INT64_MAX, &n, err);
        r->array_id = (uint64_t)n;
        return rc;
    }
    if (allow_id && strcmp(key, "array_index") == 0)
        return parse_int_field(x, key, 0, GP_INDEX_MAX, &r->array_index, err);
    if (strcmp(key, "name") == 0)
        return gp_json_string(x, key, GP_NAME_MAX - 1, r->name, sizeof r->name, err);
    if (strcmp(key, "tenant") == 0)
        return gp_json_string(x, key, GP_PATH_MAX - 1, r->tenant, sizeof r->tenant, err);
    if (strcmp(key, "user") == 0)
        return gp_json_string(x, key, GP_NAME_MAX - 1, r->user, sizeof r->user, err);
    if (strcmp(key, "booking") == 0)
        return gp_json_string(x, key, sizeof r->booking - 1, r->booking, sizeof r->booking, err);
    if (strcmp(key, "kind") == 0) {
        rc = gp_json_enum(x, key, GP_ENUM_JOB_KIND, &choice, err);
        s->kind = (gp_job_kind)choice;
        return rc;
    }
    if (strcmp(key, "topology") == 0) {
        rc = gp_json_enum(x, key, GP_ENUM_TOPOLOGY, &choice, err);
        s->topology = (gp_topology)choice;
        return rc;
    }
    if (strcmp(key, "isolation") == 0) {
        rc = gp_json_enum(x, key, GP_ENUM_ISOLATION, &choice, err);
        s->isolation = (gp_isolation)choice;
        *have_iso = true;
        return rc;
    }
    struct {
        const char *name;
        int64_t min, max;
    } ints[] = {{"replicas", 1, GP_MAX_REPLICAS},
                {"gpus", 1, GP_MAX_GPUS_PER_NODE},
                {"cpu_millis", 0, INT64_C(1) << 40},
                {"mem_mib", 0, INT64_C(1) << 40},
                {"priority", GP_PRIORITY_MIN, GP_PRIORITY_MAX},
                {"checkpoint_grace_s", 0, GP_GRACE_MAX_S},
                {"expected_runtime_s", 0, INT64_C(1) << 40}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (strcmp(key, ints[i].name) != 0)
            continue;
        if ((rc = parse_int_field(x, key, ints[i].min, ints[i].max, &n, err)))
            return rc;
        switch (i) {
        case 0: s->replicas = (int)n; break;
        case 1: s->gpus = (int)n; break;
        case 2: s->cpu_millis = n; break;
        case 3: s->mem_mib = n; break;
        case 4: s->priority = (int)n; break;
        case 5: s->checkpoint_grace_s = n; break;
        default: s->expected_runtime_s = n; break;
        }
        return GP_OK;
    }
    if (strcmp(key, "time_limit_s") == 0)
        return parse_int_field(x, key, 0, GP_TIME_LIMIT_MAX_S, &s->time_limit_s, err);
    if (strcmp(key, "pids_max") == 0)
        return parse_int_field(x, key, 0, GP_PIDS_MAX, &s->pids_max, err);
    if (strcmp(key, "restart_policy") == 0) {
        rc = gp_json_enum(x, key, GP_ENUM_RESTART_POLICY, &choice, err);
        s->restart_policy = (gp_restart_policy)choice;
        return rc;
    }
    if (strcmp(key, "stop_signal") == 0) {
        rc = gp_json_enum(x, key, GP_ENUM_STOP_SIGNAL, &choice, err);
        s->stop_signal = (gp_stop_signal)choice;
        return rc;
    }
    if (strcmp(key, "max_restarts") == 0) {
        rc = parse_int_field(x, key, 1, GP_MAX_RESTARTS_MAX, &n, err);
        s->max_restarts = (int)n;
        return rc;
    }
    if (strcmp(key, "gpu_types") == 0)
        return parse_gpu_types(x, r, err);
    if (strcmp(key, "share") == 0)
        return parse_share(x, r, implied, err);
    if (strcmp(key, "command") == 0)
        return parse_command(x, r, err);
    if (strcmp(key, "env") == 0)
        return parse_env(x, r, err);
    if (strcmp(key, "env_from_secret") == 0)
        return parse_env_from_secret(x, r, err);
    if (strcmp(key, "wait_for_fleet") == 0)
        return gp_json_bool(x, key, &r->wait_for_fleet, err);
    if (strcmp(key, "keep_running_when_partitioned") == 0)
        return gp_json_bool(x, key, &r->keep_running_when_partitioned, err);
    if (gp_job_container_key(key))
        return gp_job_container_field(&r->container, key, x, err);
    return job_field_unknown(key, err);
}

gp_err gp_job_request_parse(const json_t *body, bool allow_id, gp_job_request *r, gp_error *err)
{
    memset(r, 0, sizeof *r);
    gp_job_spec *s = &r->spec;
    s->replicas = 1;
    s->gpus = 1;
    s->checkpoint_grace_s = 30;
    gp_err rc = gp_json_object(body, "body", err);
    if (rc)
        return rc;
    bool have_iso = false;
    gp_isolation implied = GP_ISO_EXCLUSIVE;
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)body, key, x) {
        if ((rc = job_field(r, key, x, allow_id, &have_iso, &implied, err)))
            return rc;
    }
    if (!r->tenant[0])
        return gp_error_set(err, GP_ERR_INVALID, "tenant", "tenant is required");
    if ((rc = env_overlap(r, err)))
        return rc;
    if (s->mem_mib > 0 && r->container.shm_mib > s->mem_mib)
        return gp_error_set(err, GP_ERR_INVALID, "shm_mib", "shm_mib (%lld) is counted in mem_mib (%lld): it cannot be more",
                            (long long)r->container.shm_mib, (long long)s->mem_mib);
    if (have_iso && implied != GP_ISO_EXCLUSIVE && s->isolation != implied)
        return gp_error_set(err, GP_ERR_INVALID, "isolation", "isolation %s does not match the share",
                            gp_isolation_name(s->isolation));
    if (!have_iso)
        s->isolation = implied;
    if (s->isolation != GP_ISO_EXCLUSIVE && s->gpus != 1)
        return gp_error_set(err, GP_ERR_INVALID, "gpus", "a shared GPU job takes one share per replica (gpus 1)");
    if (s->isolation == GP_ISO_MIG && !s->share.mig_profile[0])
        return gp_error_set(err, GP_ERR_INVALID, "share.mig", "isolation mig needs share.mig (a profile)");
    if (s->isolation == GP_ISO_MPS && s->share.mps_milli == 0)
        return gp_error_set(err, GP_ERR_INVALID, "share.mps", "isolation mps needs share.mps (a percentage)");
    s->name = r->name[0] ? r->name : NULL;
    s->tenant = r->tenant;
    s->user = r->user[0] ? r->user : NULL;
    s->booking = r->booking[0] ? r->booking : NULL;
    return GP_OK;
}

json_t *gp_job_request_to_json(const gp_job_request *r)
{
    const gp_job_spec *s = &r->spec;
    json_t *types = json_array();
    for (int i = 0; i < s->n_gpu_types; i++)
        json_array_append_new(types, json_string(s->gpu_types[i]));
    json_t *o = json_pack("{s:I, s:s, s:s, s:i, s:i, s:o, s:I, s:I, s:s, s:s, s:i, s:I, s:I}", "id",
                          (json_int_t)s->id, "tenant", s->tenant, "kind", gp_job_kind_name(s->kind), "replicas",
                          s->replicas, "gpus", s->gpus, "gpu_types", types, "cpu_millis", (json_int_t)s->cpu_millis,
                          "mem_mib", (json_int_t)s->mem_mib, "topology", gp_topology_name(s->topology),
                          "isolation", gp_isolation_name(s->isolation), "priority", s->priority,
                          "checkpoint_grace_s", (json_int_t)s->checkpoint_grace_s, "expected_runtime_s",
                          (json_int_t)s->expected_runtime_s);
    json_object_set_new(o, "time_limit_s", json_integer(s->time_limit_s));
    if (s->restart_policy != GP_RESTART_DEFAULT) /* left out when not given: older encodings stay as they were */
        json_object_set_new(o, "restart_policy", json_string(gp_restart_policy_name(s->restart_policy)));
    if (s->max_restarts > 0)
        json_object_set_new(o, "max_restarts", json_integer(s->max_restarts));
    if (s->pids_max > 0) /* left out when none, as above */
        json_object_set_new(o, "pids_max", json_integer(s->pids_max));
    if (s->stop_signal != GP_STOP_SIGTERM) /* left out for the default, as above */
        json_object_set_new(o, "stop_signal", json_string(gp_enum_name(GP_ENUM_STOP_SIGNAL, (int)s->stop_signal)));
    if (r->array_id > 0) { /* left out for a job of no array, as above */
        json_object_set_new(o, "array_id", json_integer((json_int_t)r->array_id));
        json_object_set_new(o, "array_index", json_integer(r->array_index));
    }
    if (s->name)
        json_object_set_new(o, "name", json_string(s->name));
    if (s->user)
        json_object_set_new(o, "user", json_string(s->user));
    if (s->booking && s->booking[0]) /* left out for a job of no booking: older encodings stay as they were */
        json_object_set_new(o, "booking", json_string(s->booking));
    if (s->isolation == GP_ISO_MIG)
        json_object_set_new(o, "share", json_pack("{s:s}", "mig", s->share.mig_profile));
    else if (s->isolation == GP_ISO_MPS)
        json_object_set_new(o, "share", json_pack("{s:i}", "mps", s->share.mps_milli / 10));
    else if (s->isolation == GP_ISO_TIMESLICE)
        json_object_set_new(o, "share", json_pack("{s:b}", "timeslice", 1));
    json_object_set_new(o, "command", r->command ? json_incref(r->command) : json_array());
    json_object_set_new(o, "env", r->env ? json_incref(r->env) : json_object());
    if (r->keep_running_when_partitioned) /* left out when false, as above */
        json_object_set_new(o, "keep_running_when_partitioned", json_true());
    if (r->env_from_secret) /* left out when none, as above */
        json_object_set_new(o, "env_from_secret", json_incref(r->env_from_secret));
    gp_job_container_to_json(&r->container, o); /* the same */
    return o;
}

void gp_job_request_free(gp_job_request *r)
{
    json_decref(r->command);
    json_decref(r->env);
    json_decref(r->env_from_secret);
    r->command = r->env = r->env_from_secret = NULL;
    gp_job_container_free(&r->container);
}

/* ---- tenants ---- */

static gp_err parse_quota(const json_t *v, const char *field, gp_quota *q, gp_error *err)
{
    gp_err rc = gp_json_object(v, field, err);
    if (rc)
        return rc;
    q->set = true;
    const char *key;
    json_t *x;
    char name[GP_ERROR_FIELD_MAX];
    json_object_foreach((json_t *)v, key, x) {
        gp_json_field_name(name, sizeof name, field, key);
        if (strcmp(key, "cpu_millis") == 0) {
            rc = gp_json_int(x, name, 0, INT64_MAX - 1, &q->cpu_millis, err);
        } else if (strcmp(key, "mem_mib") == 0) {
            rc = gp_json_int(x, name, 0, INT64_MAX - 1, &q->mem_mib, err);
        } else if (strcmp(key, "gpu") == 0) {
            if ((rc = gp_json_object(x, name, err)))
                return rc;
            if (json_object_size(x) > GP_MAX_GPU_TYPES)
                return gp_error_set(err, GP_ERR_INVALID, name, "%s lists at most %d GPU types", name,
                                    GP_MAX_GPU_TYPES);
            const char *type;
            json_t *amount;
            json_object_foreach(x, type, amount) {
                char tfield[GP_ERROR_FIELD_MAX];
                gp_json_field_name(tfield, sizeof tfield, name, type);
                size_t tl = strlen(type);
                if (tl == 0 || tl >= GP_NAME_MAX)
                    return gp_error_set(err, GP_ERR_INVALID, name, "GPU type names are 1..%d characters",
                                        GP_NAME_MAX - 1);
                memcpy(q->gpu[q->n_gpu].type, type, tl + 1);
                if ((rc = gp_json_gpu_amount(amount, tfield, &q->gpu[q->n_gpu].milli, err)))
                    return rc;
                q->n_gpu++;
            }
        } else {
            rc = gp_json_unknown_field(field, key, err);
        }
        if (rc)
            return rc;
    }
    return GP_OK;
}

/* "time_limit": {"training": seconds, ...}; 0 = the parent's. */
static gp_err parse_time_limits(const json_t *v, gp_tenant_spec *s, gp_error *err)
{
    gp_err rc = gp_json_object(v, "time_limit", err);
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x) {
        if (rc)
            return rc;
        char name[GP_ERROR_FIELD_MAX];
        gp_json_field_name(name, sizeof name, "time_limit", key);
        int kind = 0;
        if (!gp_enum_value(GP_ENUM_JOB_KIND, key, &kind))
            return gp_json_unknown_field("time_limit", key, err);
        rc = gp_json_int(x, name, 0, GP_TIME_LIMIT_MAX_S, &s->time_limit_s[kind], err);
    }
    return rc;
}

/* "job_defaults" or "job_max": {"cpu_millis", "mem_mib", "pids_max"}; 0 = the parent's. */
static gp_err parse_job_limits(const json_t *v, const char *field, gp_job_limits *l, gp_error *err)
{
    gp_err rc = gp_json_object(v, field, err);
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x) {
        if (rc)
            return rc;
        char name[GP_ERROR_FIELD_MAX];
        gp_json_field_name(name, sizeof name, field, key);
        if (strcmp(key, "cpu_millis") == 0)
            rc = gp_json_int(x, name, 0, INT64_C(1) << 40, &l->cpu_millis, err);
        else if (strcmp(key, "mem_mib") == 0)
            rc = gp_json_int(x, name, 0, INT64_C(1) << 40, &l->mem_mib, err);
        else if (strcmp(key, "pids_max") == 0)
            rc = gp_json_int(x, name, 0, GP_PIDS_MAX, &l->pids_max, err);
        else
            rc = gp_json_unknown_field(field, key, err);
    }
    return rc;
}

gp_err gp_tenant_spec_parse(const json_t *body, gp_tenant_spec *s, gp_error *err)
{
    memset(s, 0, sizeof *s);
    gp_quota *qs[] = {&s->guarantee, &s->limit, &s->user_limit};
    for (int i = 0; i < 3; i++)
        qs[i]->cpu_millis = qs[i]->mem_mib = GP_UNLIMITED;
    s->lend = -1;
    gp_err rc = gp_json_object(body, "body", err);
    if (rc)
        return rc;
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)body, key, x) {
        if (strcmp(key, "guarantee") == 0) {
            rc = parse_quota(x, key, &s->guarantee, err);
        } else if (strcmp(key, "limit") == 0) {
            rc = parse_quota(x, key, &s->limit, err);
        } else if (strcmp(key, "user_limit") == 0) {
            rc = parse_quota(x, key, &s->user_limit, err);
        } else if (strcmp(key, "weight") == 0) {
            double w = json_is_number(x) ? json_number_value(x) : -1;
            if (w != 0 && !(w >= GP_WEIGHT_MIN && w <= GP_WEIGHT_MAX))
                rc = gp_error_set(err, GP_ERR_INVALID, key, "weight must be a number %g..%g (0 = default)",
                                  GP_WEIGHT_MIN, GP_WEIGHT_MAX);
            else
                s->weight = json_number_value(x);
        } else if (strcmp(key, "lend") == 0) {
            bool lend = false;
            rc = gp_json_bool(x, key, &lend, err);
            s->lend = lend;
        } else if (strcmp(key, "trust") == 0) {
            int choice = 0;
            rc = gp_json_enum(x, key, GP_ENUM_TRUST, &choice, err);
            s->trust = (gp_trust)choice;
        } else if (strcmp(key, "nodes") == 0) {
            int choice = 0;
            rc = gp_json_enum(x, key, GP_ENUM_NODES, &choice, err);
            s->nodes = (gp_nodes_policy)choice;
        } else if (strcmp(key, "cancel") == 0) {
            int choice = 0;
            rc = gp_json_enum(x, key, GP_ENUM_CANCEL, &choice, err);
            s->cancel = (gp_cancel_policy)choice;
        } else if (strcmp(key, "booking") == 0) {
            int choice = 0;
            rc = gp_json_enum(x, key, GP_ENUM_BOOKING, &choice, err);
            s->booking = (gp_booking_policy)choice;
        } else if (strcmp(key, "time_limit") == 0) {
            rc = parse_time_limits(x, s, err);
        } else if (strcmp(key, "job_defaults") == 0) {
            rc = parse_job_limits(x, key, &s->job_defaults, err);
        } else if (strcmp(key, "job_max") == 0) {
            rc = parse_job_limits(x, key, &s->job_max, err);
        } else if (gp_container_policy_key(key)) {
            rc = gp_container_policy_field(&s->containers, key, x, err);
        } else {
            static const char *const known[] = {"guarantee", "limit",      "user_limit",   "weight",  "lend",
                                                "trust",     "nodes",      "time_limit",   "job_max", "job_defaults"};
            rc = gp_json_unknown_field_near("", key, known, sizeof known / sizeof known[0], err);
        }
        if (rc)
            return rc;
    }
    return GP_OK;
}

static json_t *gpu_amount_json(int64_t milli)
{
    if (milli % 1000 == 0)
        return json_integer(milli / 1000);
    return json_real((double)milli / 1000.0);
}

static json_t *quota_json(const gp_quota *q)
{
    json_t *gpu = json_object();
    for (int i = 0; i < q->n_gpu; i++)
        json_object_set_new(gpu, q->gpu[i].type, gpu_amount_json(q->gpu[i].milli));
    json_t *o = json_pack("{s:o}", "gpu", gpu);
    if (q->cpu_millis != GP_UNLIMITED)
        json_object_set_new(o, "cpu_millis", json_integer(q->cpu_millis));
    if (q->mem_mib != GP_UNLIMITED)
        json_object_set_new(o, "mem_mib", json_integer(q->mem_mib));
    return o;
}

/* The fields a tenant sets, NULL when none (older encodings stay as they were). */
static json_t *job_limits_json(const gp_job_limits *l)
{
    if (!l->cpu_millis && !l->mem_mib && !l->pids_max)
        return NULL;
    json_t *o = json_object();
    if (l->cpu_millis)
        json_object_set_new(o, "cpu_millis", json_integer(l->cpu_millis));
    if (l->mem_mib)
        json_object_set_new(o, "mem_mib", json_integer(l->mem_mib));
    if (l->pids_max)
        json_object_set_new(o, "pids_max", json_integer(l->pids_max));
    return o;
}

json_t *gp_tenant_spec_to_json(const gp_tenant_spec *s)
{
    json_t *o = json_object();
    if (s->guarantee.set)
        json_object_set_new(o, "guarantee", quota_json(&s->guarantee));
    if (s->limit.set)
        json_object_set_new(o, "limit", quota_json(&s->limit));
    if (s->user_limit.set)
        json_object_set_new(o, "user_limit", quota_json(&s->user_limit));
    if (s->weight > 0)
        json_object_set_new(o, "weight", json_real(s->weight));
    if (s->lend >= 0)
        json_object_set_new(o, "lend", json_boolean(s->lend));
    if (s->trust != GP_TRUST_INHERIT)
        json_object_set_new(o, "trust", json_string(gp_trust_name(s->trust)));
    if (s->nodes != GP_NODES_INHERIT)
        json_object_set_new(o, "nodes", json_string(gp_nodes_policy_name(s->nodes)));
    if (s->cancel != GP_CANCEL_INHERIT)
        json_object_set_new(o, "cancel", json_string(gp_enum_name(GP_ENUM_CANCEL, (int)s->cancel)));
    if (s->booking != GP_BOOKING_INHERIT)
        json_object_set_new(o, "booking", json_string(gp_enum_name(GP_ENUM_BOOKING, (int)s->booking)));
    json_t *limits = json_object();
    for (int k = 0; k < 3; k++)
        if (s->time_limit_s[k] > 0)
            json_object_set_new(limits, gp_job_kind_name((gp_job_kind)k), json_integer(s->time_limit_s[k]));
    if (json_object_size(limits) > 0)
        json_object_set_new(o, "time_limit", limits);
    else
        json_decref(limits);
    json_t *defaults = job_limits_json(&s->job_defaults), *max = job_limits_json(&s->job_max);
    if (defaults)
        json_object_set_new(o, "job_defaults", defaults);
    if (max)
        json_object_set_new(o, "job_max", max);
    gp_container_policy_to_json(&s->containers, o);
    return o;
}

/* ---- nodes and pools (the fleet, as the event log and the fleet file keep it) ---- */

static gp_err node_string(const json_t *x, const char *key, char *out, gp_error *err)
{
    return gp_json_string(x, key, GP_NAME_MAX - 1, out, GP_NAME_MAX, err);
}

static gp_err node_array(const json_t *x, const char *key, gp_node_request *r, gp_error *err)
{
    if (!json_is_array(x) || json_array_size(x) > GP_MAX_GPUS_PER_NODE)
        return gp_error_set(err, GP_ERR_INVALID, key, "%s must be an array of at most %d entries", key,
                            GP_MAX_GPUS_PER_NODE);
    size_t i;
    json_t *v;
    bool uuids = strcmp(key, "gpu_uuids") == 0;
    json_array_foreach(x, i, v) {
        int choice = 0;
        gp_err rc = uuids ? gp_json_string(v, key, GP_UUID_MAX - 1, r->uuids[i], GP_UUID_MAX, err)
                          : gp_json_enum(v, key, GP_ENUM_SHARING, &choice, err);
        if (rc)
            return rc;
        if (uuids)
            r->uuid_ptrs[i] = r->uuids[i];
        else
            r->gpu_sharing[i] = (gp_sharing)choice;
    }
    if (uuids)
        r->spec.gpu_uuids = r->uuid_ptrs;
    else
        r->spec.gpu_sharing = r->gpu_sharing;
    return GP_OK;
}

/* A key no node has: "did you mean" the nearest (the GPU count spelled
 * gpus_key), or what another system's name stands for. */
static gp_err node_field_unknown(const char *key, const char *gpus_key, gp_error *err)
{
    const char *const known[] = {"name",    "zone",       "block",     "gpu_type",  "pool",
                                 gpus_key,  "nvlink_domains", "gpu_mem_mib", "cpu_millis", "mem_mib",
                                 "sharing", "gpu_uuids",  "gpu_sharing"};
    const gp_json_alias aliases[] = {
        {"gpus_per_node", gpus_key}, {"gpu_count", gpus_key}, {"gpus", gpus_key},       {"gres", gpus_key},
        {"gpu_model", "gpu_type"},   {"gpu_types", "gpu_type"}, {"model", "gpu_type"},  {"partition", "pool"},
        {"rack", "block"},           {"switch", "block"},     {"cpus", "cpu_millis"},   {"real_memory", "mem_mib"},
        {"memory", "mem_mib"},       {"mem", "mem_mib"},      {"region", "zone"},       {"hostname", "name"}};
    return gp_json_unknown_field_hint("", key, known, sizeof known / sizeof known[0], aliases,
                                      sizeof aliases / sizeof aliases[0], err);
}

/* One key of a node body; the GPU count is spelled `gpus_key`. */
static gp_err node_field(gp_node_request *r, const char *key, const json_t *x, const char *gpus_key,
                         size_t *n_uuids, size_t *n_sharing, gp_error *err)
{
    gp_node_spec *s = &r->spec;
    int64_t n = 0;
    int choice = 0;
    gp_err rc;
    const struct {
        const char *key;
        char *out;
    } strings[] = {{"name", r->name}, {"zone", r->zone}, {"block", r->block}, {"gpu_type", r->gpu_type},
                   {"pool", r->pool}};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        if (strcmp(key, strings[i].key) == 0)
            return node_string(x, key, strings[i].out, err);
    if (strcmp(key, gpus_key) == 0) {
        rc = gp_json_int(x, key, 1, GP_MAX_GPUS_PER_NODE, &n, err);
        s->gpu_count = (int)n;
        return rc;
    }
    if (strcmp(key, "nvlink_domains") == 0) {
        rc = gp_json_int(x, key, 1, GP_MAX_GPUS_PER_NODE, &n, err);
        s->nvlink_domains = (int)n;
        return rc;
    }
    if (strcmp(key, "gpu_mem_mib") == 0)
        return gp_json_int(x, key, 0, INT64_C(1) << 40, &s->gpu_mem_mib, err);
    if (strcmp(key, "cpu_millis") == 0)
        return gp_json_int(x, key, 0, INT64_C(1) << 40, &s->cpu_millis, err);
    if (strcmp(key, "mem_mib") == 0)
        return gp_json_int(x, key, 0, INT64_C(1) << 40, &s->mem_mib, err);
    if (strcmp(key, "sharing") == 0) {
        rc = gp_json_enum(x, key, GP_ENUM_SHARING, &choice, err);
        s->sharing = (gp_sharing)choice;
        return rc;
    }
    if (strcmp(key, "gpu_uuids") == 0 || strcmp(key, "gpu_sharing") == 0) {
        *(strcmp(key, "gpu_uuids") == 0 ? n_uuids : n_sharing) = json_array_size(x);
        return node_array(x, key, r, err);
    }
    return node_field_unknown(key, gpus_key, err);
}

/* The rules that tie a node's fields together. */
static gp_err node_check(const gp_node_request *r, const char *gpus_key, size_t n_uuids, size_t n_sharing,
                         gp_error *err)
{
    const gp_node_spec *s = &r->spec;
    if (!r->name[0])
        return gp_error_set(err, GP_ERR_INVALID, "name", "name is required");
    if (!r->gpu_type[0])
        return gp_error_set(err, GP_ERR_INVALID, "gpu_type", "gpu_type is required");
    if (s->gpu_count == 0)
        return gp_error_set(err, GP_ERR_INVALID, gpus_key, "%s is required", gpus_key);
    if (s->gpu_count % s->nvlink_domains != 0)
        return gp_error_set(err, GP_ERR_INVALID, "nvlink_domains", "nvlink_domains (%d) must divide %s (%d)",
                            s->nvlink_domains, gpus_key, s->gpu_count);
    const size_t counts[] = {n_uuids, n_sharing};
    const bool given[] = {s->gpu_uuids != NULL, s->gpu_sharing != NULL};
    const char *lists[] = {"gpu_uuids", "gpu_sharing"};
    for (int i = 0; i < 2; i++)
        if (given[i] && counts[i] != (size_t)s->gpu_count)
            return gp_error_set(err, GP_ERR_INVALID, lists[i], "%s has %zu entries, %s is %d", lists[i], counts[i],
                                gpus_key, s->gpu_count);
    return GP_OK;
}

static gp_err node_parse(const json_t *body, const char *gpus_key, gp_node_request *r, gp_error *err)
{
    memset(r, 0, sizeof *r);
    strcpy(r->zone, "default");
    strcpy(r->block, "default");
    strcpy(r->pool, "default");
    r->spec.nvlink_domains = 1;
    gp_err rc = gp_json_object(body, "node", err);
    size_t n_uuids = 0, n_sharing = 0;
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)body, key, x) {
        if (rc)
            return rc;
        rc = node_field(r, key, x, gpus_key, &n_uuids, &n_sharing, err);
    }
    if (rc || (rc = node_check(r, gpus_key, n_uuids, n_sharing, err)))
        return rc;
    r->spec.name = r->name;
    r->spec.zone = r->zone;
    r->spec.block = r->block;
    r->spec.gpu_type = r->gpu_type;
    r->spec.pool = r->pool;
    return GP_OK;
}

gp_err gp_node_request_parse(const json_t *body, gp_node_request *r, gp_error *err)
{
    return node_parse(body, "gpu_count", r, err);
}

gp_err gp_fleet_node_parse(const json_t *body, gp_node_request *r, gp_error *err)
{
    return node_parse(body, "gpus", r, err);
}

json_t *gp_node_spec_to_json(const gp_node_spec *s)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:I, s:s}", "name", s->name, "zone",
                          s->zone ? s->zone : "", "block", s->block ? s->block : "", "gpu_type", s->gpu_type,
                          "gpu_count", s->gpu_count, "nvlink_domains", s->nvlink_domains, "gpu_mem_mib",
                          (json_int_t)s->gpu_mem_mib, "cpu_millis", (json_int_t)s->cpu_millis, "mem_mib",
                          (json_int_t)s->mem_mib, "sharing", gp_sharing_name(s->sharing));
    if (!o)
        return NULL;
    if (s->pool)
        json_object_set_new(o, "pool", json_string(s->pool));
    if (s->gpu_uuids) {
        json_t *a = json_array();
        for (int i = 0; i < s->gpu_count; i++)
            json_array_append_new(a, json_string(s->gpu_uuids[i]));
        json_object_set_new(o, "gpu_uuids", a);
    }
    if (s->gpu_sharing) {
        json_t *a = json_array();
        for (int i = 0; i < s->gpu_count; i++)
            json_array_append_new(a, json_string(gp_sharing_name(s->gpu_sharing[i])));
        json_object_set_new(o, "gpu_sharing", a);
    }
    return o;
}

gp_err gp_pool_parse(const json_t *body, char name[GP_NAME_MAX], gp_pool_spec *out, gp_error *err)
{
    static const char *const POOL_FIELDS[] = {"name", "score", "timeslice_replicas", "seed", "owner"};
    memset(out, 0, sizeof *out);
    name[0] = '\0';
    gp_err rc = gp_json_object(body, "pool", err);
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)body, key, x) {
        int64_t n = 0;
        int choice = 0;
        if (rc)
            return rc;
        if (strcmp(key, "name") == 0)
            rc = gp_json_string(x, key, GP_NAME_MAX - 1, name, GP_NAME_MAX, err);
        else if (strcmp(key, "score") == 0)
            rc = gp_json_enum(x, key, GP_ENUM_SCORE, &choice, err), out->score = (gp_score)choice;
        else if (strcmp(key, "timeslice_replicas") == 0)
            rc = gp_json_int(x, key, 0, 8, &n, err), out->timeslice_replicas = (int)n;
        else if (strcmp(key, "seed") == 0)
            rc = gp_json_int(x, key, 0, INT64_MAX, &n, err), out->seed = (uint64_t)n;
        else if (strcmp(key, "owner") == 0)
            rc = gp_pool_owner_parse(x, out->owner, err);
        else
            rc = gp_json_unknown_field_near("", key, POOL_FIELDS, sizeof POOL_FIELDS / sizeof POOL_FIELDS[0], err);
    }
    if (rc == GP_OK && !name[0])
        rc = gp_error_set(err, GP_ERR_INVALID, "name", "a pool needs a name");
    return rc;
}

gp_err gp_pool_owner_parse(const json_t *v, char owner[GP_PATH_MAX], gp_error *err)
{
    char path[GP_PATH_MAX + 1];
    owner[0] = '\0';
    if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
        return GP_OK;
    gp_err rc = gp_json_string(v, "owner", GP_PATH_MAX, path, sizeof path, err);
    const char *p = path[0] == '/' ? path + 1 : path; /* "/org/a" and "org/a" alike */
    if (rc == GP_OK && strlen(p) >= GP_PATH_MAX)
        rc = gp_error_set(err, GP_ERR_INVALID, "owner", "owner is a tenant path of at most %d characters",
                          GP_PATH_MAX - 1);
    if (rc == GP_OK)
        snprintf(owner, GP_PATH_MAX, "%s", p);
    return rc;
}

json_t *gp_pool_to_json(const char *name, const gp_pool_spec *s)
{
    json_t *o = json_pack("{s:s, s:s, s:i, s:I}", "name", name, "score", gp_score_name(s->score),
                          "timeslice_replicas", s->timeslice_replicas, "seed", (json_int_t)(s->seed & INT64_MAX));
    if (o && s->owner[0]) /* only when owned: the encoding of other pools stays as it was */
        json_object_set_new(o, "owner", json_string(s->owner));
    return o;
}

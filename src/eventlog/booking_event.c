/* booking_event.c - the payloads of the booking events, both ways (see
 * booking_event.h; the kinds are listed in event.h).  Every key of a
 * booking_add is written, so a payload names the whole spec the engine
 * was given; booking_change writes only the fields it changes. */
#include "eventlog/booking_event.h"

#include "spec/json_input.h"

#include <string.h>

/* made_by and mig_profile only when set: the rest always. */
static json_t *add_payload(const gp_booking_spec *s)
{
    json_t *types = json_array();
    for (int i = 0; types && i < s->n_gpu_types; i++)
        json_array_append_new(types, json_string(s->gpu_types[i]));
    json_t *o = json_pack("{s:s, s:s, s:o, s:i, s:i, s:s, s:I, s:I, s:i, s:I, s:s, s:I}", "name", s->name, "tenant",
                          s->tenant, "gpu_types", types, "replicas", s->replicas, "gpus", s->gpus, "topology",
                          gp_topology_name(s->topology), "start", (json_int_t)s->start, "end", (json_int_t)s->end,
                          "lend", s->lend, "no_show_s", (json_int_t)s->no_show_s, "recurrence",
                          gp_recurrence_name(s->recurrence), "until", (json_int_t)s->until);
    if (o && s->made_by && s->made_by[0])
        json_object_set_new(o, "made_by", json_string(s->made_by));
    if (o && s->mig_profile && s->mig_profile[0])
        json_object_set_new(o, "mig_profile", json_string(s->mig_profile));
    return o;
}

/* An optional string key: read when present, "" when not. */
static gp_err optional_string(const json_t *p, const char *key, char *out, size_t cap, gp_error *err)
{
    out[0] = '\0';
    const json_t *v = json_object_get(p, key);
    return v ? gp_json_string(v, key, cap - 1, out, cap, err) : GP_OK;
}

static json_t *change_payload(const char *name, const gp_booking_change *c)
{
    json_t *o = json_pack("{s:s}", "name", name);
    if (o && c->has_start)
        json_object_set_new(o, "start", json_integer(c->start));
    if (o && c->has_end)
        json_object_set_new(o, "end", json_integer(c->end));
    if (o && c->has_lend)
        json_object_set_new(o, "lend", json_boolean(c->lend));
    return o;
}

json_t *gp_booking_event_payload(const gp_event *ev)
{
    switch (ev->kind) {
    case GP_EV_BOOKING_ADD: return add_payload(ev->booking);
    case GP_EV_BOOKING_CANCEL: return json_pack("{s:s}", "name", ev->name);
    case GP_EV_BOOKING_CHANGE: return change_payload(ev->name, ev->booking_change);
    case GP_EV_BOOKING_ALLOWANCE:
        return json_pack("{s:s, s:I}", "org", ev->name, "gpu_hours_per_week", (json_int_t)ev->seconds);
    default: return NULL;
    }
}

static gp_err name_field(const json_t *p, const char *key, gp_booking_event_storage *st, gp_error *err)
{
    return gp_json_string(json_object_get(p, key), key, sizeof st->name - 1, st->name, sizeof st->name, err);
}

static gp_err gpu_types(const json_t *v, gp_booking_event_storage *st, gp_error *err)
{
    if (!json_is_array(v) || json_array_size(v) > GP_MAX_GPU_TYPES)
        return gp_error_set(err, GP_ERR_INVALID, "gpu_types", "payload.gpu_types must be an array of up to %d names",
                            GP_MAX_GPU_TYPES);
    st->spec.n_gpu_types = (int)json_array_size(v);
    gp_err rc = GP_OK;
    for (int i = 0; rc == GP_OK && i < st->spec.n_gpu_types; i++) {
        rc = gp_json_string(json_array_get(v, (size_t)i), "gpu_types", GP_NAME_MAX - 1, st->types[i], GP_NAME_MAX,
                            err);
        st->spec.gpu_types[i] = st->types[i];
    }
    return rc;
}

static gp_err enum_field(const json_t *p, const char *key, gp_enum which, int *out, gp_error *err)
{
    char name[32];
    gp_err rc = gp_json_string(json_object_get(p, key), key, sizeof name - 1, name, sizeof name, err);
    if (rc == GP_OK && !gp_enum_value(which, name, out))
        rc = gp_error_set(err, GP_ERR_INVALID, key, "payload.%s: unknown value %s", key, name);
    return rc;
}

static gp_err decode_add(const json_t *p, gp_booking_event_storage *st, gp_error *err)
{
    static const char *const KEYS[] = {"name", "tenant",    "gpu_types",  "replicas", "gpus",    "topology",   "start",
                                       "end",  "lend",      "no_show_s",  "recurrence", "until", "made_by", "mig_profile"};
    gp_booking_spec *s = &st->spec;
    int64_t replicas = 0, gpus = 0, lend = 0;
    int topo = 0;
    char rec[16];
    json_t *base = json_is_object(p) ? json_copy((json_t *)p) : NULL; /* the keys every payload has */
    json_object_del(base, "made_by");
    json_object_del(base, "mig_profile");
    gp_err rc = gp__event_only_keys(p, KEYS, 14, err);
    if (rc == GP_OK)
        rc = gp__event_expect_keys(base ? base : p, KEYS, 12, err);
    json_decref(base);
    if (rc == GP_OK)
        rc = name_field(p, "name", st, err);
    if (rc == GP_OK)
        rc = gp_json_string(json_object_get(p, "tenant"), "tenant", GP_PATH_MAX - 1, st->tenant, GP_PATH_MAX, err);
    if (rc == GP_OK)
        rc = optional_string(p, "made_by", st->made_by, sizeof st->made_by, err);
    if (rc == GP_OK)
        rc = gpu_types(json_object_get(p, "gpu_types"), st, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "replicas"), "replicas", 1, GP_MAX_REPLICAS, &replicas, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "gpus"), "gpus", 1, GP_MAX_GPUS_PER_NODE, &gpus, err);
    if (rc == GP_OK)
        rc = optional_string(p, "mig_profile", st->mig_profile, sizeof st->mig_profile, err);
    if (rc == GP_OK)
        rc = enum_field(p, "topology", GP_ENUM_TOPOLOGY, &topo, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "start"), "start", INT64_MIN, INT64_MAX, &s->start, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "end"), "end", INT64_MIN, INT64_MAX, &s->end, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "lend"), "lend", -1, 1, &lend, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "no_show_s"), "no_show_s", -1, INT64_MAX, &s->no_show_s, err);
    if (rc == GP_OK)
        rc = gp_json_string(json_object_get(p, "recurrence"), "recurrence", sizeof rec - 1, rec, sizeof rec, err);
    if (rc == GP_OK && !gp_recurrence_value(rec, &s->recurrence))
        rc = gp_error_set(err, GP_ERR_INVALID, "recurrence", "payload.recurrence: unknown value %s", rec);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "until"), "until", INT64_MIN, INT64_MAX, &s->until, err);
    s->name = st->name;
    s->tenant = st->tenant;
    s->made_by = st->made_by;
    s->mig_profile = st->mig_profile;
    s->replicas = (int)replicas;
    s->gpus = (int)gpus;
    s->topology = (gp_topology)topo;
    s->lend = (int)lend;
    return rc;
}

static gp_err decode_change(const json_t *p, gp_booking_event_storage *st, gp_error *err)
{
    static const char *const KEYS[] = {"name", "start", "end", "lend"};
    gp_booking_change *c = &st->change;
    gp_err rc = gp__event_only_keys(p, KEYS, 4, err);
    if (rc == GP_OK)
        rc = name_field(p, "name", st, err);
    c->has_start = json_object_get(p, "start") != NULL;
    if (rc == GP_OK && c->has_start)
        rc = gp_json_int(json_object_get(p, "start"), "start", INT64_MIN, INT64_MAX, &c->start, err);
    c->has_end = json_object_get(p, "end") != NULL;
    if (rc == GP_OK && c->has_end)
        rc = gp_json_int(json_object_get(p, "end"), "end", INT64_MIN, INT64_MAX, &c->end, err);
    c->has_lend = json_object_get(p, "lend") != NULL;
    if (rc == GP_OK && c->has_lend)
        rc = gp_json_bool(json_object_get(p, "lend"), "lend", &c->lend, err);
    if (rc == GP_OK && !c->has_start && !c->has_end && !c->has_lend)
        rc = gp_error_set(err, GP_ERR_INVALID, "payload", "payload changes nothing");
    return rc;
}

gp_err gp_booking_event_decode(const json_t *p, gp_event *ev, gp_booking_event_storage *st, gp_error *err)
{
    static const char *const NAME[] = {"name"}, *const ALLOWANCE[] = {"org", "gpu_hours_per_week"};
    gp_err rc;
    ev->name = st->name;
    switch (ev->kind) {
    case GP_EV_BOOKING_ADD:
        ev->booking = &st->spec;
        return decode_add(p, st, err);
    case GP_EV_BOOKING_CHANGE:
        ev->booking_change = &st->change;
        return decode_change(p, st, err);
    case GP_EV_BOOKING_CANCEL:
        if ((rc = gp__event_expect_keys(p, NAME, 1, err)))
            return rc;
        return name_field(p, "name", st, err);
    case GP_EV_BOOKING_ALLOWANCE:
        if ((rc = gp__event_expect_keys(p, ALLOWANCE, 2, err)) || (rc = name_field(p, "org", st, err)))
            return rc;
        return gp_json_int(json_object_get(p, "gpu_hours_per_week"), "gpu_hours_per_week", -1, INT64_MAX,
                           &ev->seconds, err);
    default: return gp_error_set(err, GP_ERR_INVALID, "kind", "not a booking event");
    }
}

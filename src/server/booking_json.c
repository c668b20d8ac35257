/* booking_json.c - a booking's JSON both ways (booking_json.h).
 *
 * Example: {"name": "pretrain", "tenant": "org/a", "gpu_type": "H100",
 * "gpus": 16, "topology": "block", "start": 1796115600, "duration_s":
 * 172800} is two replicas of 8 GPUs (replica_gpus defaults to 8 above 8
 * GPUs), both in one fabric block, from 1796115600 to 1796288400; the
 * view adds its state, the nodes it holds, how many of its GPUs its
 * tenant's guarantee covers and how many the org's allowance, and the
 * jobs cleared for it.
 */
#include "server/booking_json.h"

#include "spec/json_input.h"

#include <string.h>

#define DEFAULT_REPLICA_GPUS 8 /* a booking of more GPUs than this, unless it says: 8-GPU replicas */

/* The time fields: start, then end or duration_s (one of them). */
static gp_err parse_window(const json_t *body, gp_booking_spec *s, gp_error *err)
{
    const json_t *start = json_object_get(body, "start"), *end = json_object_get(body, "end"),
                 *duration = json_object_get(body, "duration_s");
    if (!start)
        return gp_error_set(err, GP_ERR_INVALID, "start", "start is required (epoch seconds)");
    if (!end == !duration)
        return gp_error_set(err, GP_ERR_INVALID, end ? "duration_s" : "end",
                            "give either end (epoch seconds) or duration_s, not both and not neither");
    gp_err rc = gp_json_int(start, "start", 0, INT64_C(1) << 40, &s->start, err);
    int64_t d = 0;
    if (rc == GP_OK && end)
        rc = gp_json_int(end, "end", 1, INT64_C(1) << 40, &s->end, err);
    if (rc == GP_OK && duration && (rc = gp_json_int(duration, "duration_s", 1, GP_BOOKING_MAX_DURATION_S, &d, err)) ==
                                       GP_OK)
        s->end = s->start + d;
    if (rc == GP_OK && s->end <= s->start)
        rc = gp_error_set(err, GP_ERR_INVALID, "end", "end must be after start");
    return rc;
}

/* gpus, replica_gpus, or mig_profile with instances, into the engine's
 * replicas x gpus. */
static gp_err parse_shape(const json_t *body, gp_booking_body *b, gp_error *err)
{
    gp_booking_spec *s = &b->spec;
    const json_t *gpus = json_object_get(body, "gpus"), *per = json_object_get(body, "replica_gpus"),
                 *mig = json_object_get(body, "mig_profile"), *instances = json_object_get(body, "instances");
    int64_t total = 0, each = 0;
    if (mig || instances) {
        if (gpus || per)
            return gp_error_set(err, GP_ERR_INVALID, gpus ? "gpus" : "replica_gpus",
                                "a MIG booking counts instances of mig_profile, not gpus");
        gp_err rc = gp_json_string(mig, "mig_profile", sizeof b->mig_profile - 1, b->mig_profile,
                                   sizeof b->mig_profile, err);
        if (rc == GP_OK)
            rc = gp_json_int(instances, "instances", 1, GP_MAX_REPLICAS, &total, err);
        s->mig_profile = b->mig_profile;
        s->replicas = (int)total;
        s->gpus = 1;
        return rc;
    }
    gp_err rc = gpus ? gp_json_int(gpus, "gpus", 1, (int64_t)GP_MAX_REPLICAS * GP_MAX_GPUS_PER_NODE, &total, err)
                     : gp_error_set(err, GP_ERR_INVALID, "gpus", "gpus is required (whole GPUs in all)");
    each = total <= DEFAULT_REPLICA_GPUS ? total : DEFAULT_REPLICA_GPUS;
    if (rc == GP_OK && per)
        rc = gp_json_int(per, "replica_gpus", 1, GP_MAX_GPUS_PER_NODE, &each, err);
    if (rc == GP_OK && total % each != 0)
        rc = gp_error_set(err, GP_ERR_INVALID, "gpus", "gpus (%lld) must be a multiple of replica_gpus (%lld)",
                          (long long)total, (long long)each);
    if (rc == GP_OK && total / each > GP_MAX_REPLICAS)
        rc = gp_error_set(err, GP_ERR_INVALID, "gpus", "at most %d replicas of replica_gpus each", GP_MAX_REPLICAS);
    s->replicas = (int)(rc == GP_OK ? total / each : 0);
    s->gpus = (int)each;
    return rc;
}

static gp_err parse_repeat(const json_t *body, gp_booking_spec *s, gp_error *err)
{
    const json_t *repeat = json_object_get(body, "repeat"), *until = json_object_get(body, "until");
    if (!repeat && !until)
        return GP_OK;
    if (!json_is_string(repeat) || !gp_recurrence_value(json_string_value(repeat), &s->recurrence) ||
        s->recurrence == GP_RECUR_NONE)
        return gp_error_set(err, GP_ERR_INVALID, "repeat", "repeat is daily, weekdays or weekly (with until)");
    if (!until)
        return gp_error_set(err, GP_ERR_INVALID, "until", "a repeated booking needs until (epoch seconds)");
    gp_err rc = gp_json_int(until, "until", 1, INT64_C(1) << 40, &s->until, err);
    if (rc == GP_OK && s->until <= s->start)
        rc = gp_error_set(err, GP_ERR_INVALID, "until", "until must be after start");
    return rc;
}

static gp_err parse_field(const char *key, const json_t *x, gp_booking_body *b, gp_error *err)
{
    static const char *const known[] = {"name",  "tenant",     "gpu_type",  "gpus",     "replica_gpus",
                                        "mig_profile", "instances", "topology", "start", "end",
                                        "duration_s", "lend", "no_show_s", "repeat", "until"};
    gp_booking_spec *s = &b->spec;
    if (strcmp(key, "name") == 0)
        return gp_json_string(x, key, sizeof b->name - 1, b->name, sizeof b->name, err);
    if (strcmp(key, "tenant") == 0)
        return gp_json_string(x, key, sizeof b->tenant - 1, b->tenant, sizeof b->tenant, err);
    if (strcmp(key, "gpu_type") == 0) {
        s->n_gpu_types = 1;
        s->gpu_types[0] = b->gpu_type;
        return gp_json_string(x, key, sizeof b->gpu_type - 1, b->gpu_type, sizeof b->gpu_type, err);
    }
    if (strcmp(key, "topology") == 0) {
        int t = 0;
        gp_err rc = gp_json_enum(x, key, GP_ENUM_TOPOLOGY, &t, err);
        s->topology = (gp_topology)t;
        return rc;
    }
    if (strcmp(key, "lend") == 0) {
        bool lend = true;
        gp_err rc = gp_json_bool(x, key, &lend, err);
        s->lend = lend;
        return rc;
    }
    if (strcmp(key, "no_show_s") == 0)
        return gp_json_int(x, key, -1, GP_BOOKING_MAX_DURATION_S, &s->no_show_s, err);
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (strcmp(key, known[i]) == 0)
            return GP_OK; /* read with the fields it goes with */
    return gp_json_unknown_field_near("", key, known, sizeof known / sizeof *known, err);
}

gp_err gp_booking_body_parse(const json_t *body, gp_booking_body *b, gp_error *err)
{
    memset(b, 0, sizeof *b);
    b->spec.lend = -1;
    gp_err rc = gp_json_object(body, "body", err);
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)body, key, x) {
        if (rc == GP_OK)
            rc = parse_field(key, x, b, err);
    }
    if (rc == GP_OK && !b->name[0])
        rc = gp_error_set(err, GP_ERR_INVALID, "name", "name is required (letters, digits, _ and -)");
    if (rc == GP_OK)
        rc = parse_shape(body, b, err);
    if (rc == GP_OK)
        rc = parse_window(body, &b->spec, err);
    if (rc == GP_OK)
        rc = parse_repeat(body, &b->spec, err);
    b->spec.name = b->name;
    b->spec.tenant = b->tenant;
    b->spec.made_by = b->made_by;
    return rc;
}

gp_err gp_booking_change_parse(const json_t *body, gp_booking_change *c, gp_error *err)
{
    memset(c, 0, sizeof *c);
    gp_err rc = gp_json_object(body, "body", err);
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)body, key, x) {
        if (rc)
            break;
        if (strcmp(key, "end") == 0) {
            c->has_end = true;
            rc = gp_json_int(x, key, 1, INT64_C(1) << 40, &c->end, err);
        } else if (strcmp(key, "start") == 0) {
            c->has_start = true;
            rc = gp_json_int(x, key, 0, INT64_C(1) << 40, &c->start, err);
        } else if (strcmp(key, "lend") == 0) {
            c->has_lend = true;
            rc = gp_json_bool(x, key, &c->lend, err);
        } else {
            static const char *const known[] = {"end", "start", "lend"};
            rc = gp_json_unknown_field_near("", key, known, 3, err);
        }
    }
    if (rc == GP_OK && !c->has_end && !c->has_start && !c->has_lend)
        rc = gp_error_set(err, GP_ERR_INVALID, "end", "say what changes: end, start or lend");
    return rc;
}

/* [{"node", "gpus": N, "gpu_indexes": [...]}] in the order the engine placed them. */
static json_t *placement_view(const gp_engine *e, const char *name)
{
    uint32_t gpus[GP_MAX_GPUS_PER_NODE * 64];
    size_t n = gp_engine_booking_gpus(e, name, gpus, sizeof gpus / sizeof *gpus);
    json_t *list = json_array(), *last = NULL;
    uint32_t last_node = UINT32_MAX;
    for (size_t i = 0; i < n && i < sizeof gpus / sizeof *gpus; i++) {
        gp_gpu_info g;
        gp_node_info node;
        if (!gp_engine_gpu_get(e, gpus[i], &g) || !gp_engine_node_get(e, g.node, &node))
            continue;
        if (!last || g.node != last_node) {
            last = json_pack("{s:s, s:i, s:[]}", "node", node.name, "gpus", 0, "gpu_indexes");
            json_array_append_new(list, last);
            last_node = g.node;
        }
        json_object_set_new(last, "gpus", json_integer(json_integer_value(json_object_get(last, "gpus")) + 1));
        json_array_append_new(json_object_get(last, "gpu_indexes"), json_integer(g.index));
    }
    return list;
}

static json_t *history_view(const gp_booking_info *b)
{
    json_t *list = json_array();
    int kept = b->n_history < GP_BOOKING_HISTORY ? b->n_history : GP_BOOKING_HISTORY;
    for (int i = 0; i < kept; i++) {
        const gp_booking_event *h = &b->history[i];
        json_array_append_new(list, json_pack("{s:I, s:s, s:s, s:s}", "time", (json_int_t)h->time, "from",
                                              gp_booking_state_name(h->from), "to", gp_booking_state_name(h->to),
                                              "reason", h->reason));
    }
    return list;
}

static json_t *cleared_view(const gp_booking_info *b)
{
    json_t *list = json_array();
    int kept = b->n_cleared < GP_BOOKING_CLEARED_MAX ? b->n_cleared : GP_BOOKING_CLEARED_MAX;
    for (int i = 0; i < kept; i++)
        json_array_append_new(list, json_integer((json_int_t)b->cleared[i]));
    return list;
}

json_t *gp_booking_view(const gp_engine *e, const gp_booking_info *b)
{
    const char *type = gp_engine_gpu_type_name(e, b->gpu_type);
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:I, s:i, s:i, s:s, s:I, s:I, s:I, s:b, s:s, s:s}", "name", b->name,
                          "tenant", gp_engine_tenant_path(e, b->tenant), "made_by", b->made_by, "gpu_type",
                          type ? json_string(type) : json_null(), "gpus", (json_int_t)b->replicas * b->gpus,
                          "replicas", b->replicas, "replica_gpus", b->gpus, "topology",
                          gp_topology_name(b->topology), "created", (json_int_t)b->created, "start",
                          (json_int_t)b->start, "end", (json_int_t)b->end, "lend", b->lend, "state",
                          gp_booking_state_name(b->state), "reason", b->reason);
    if (b->mig_profile[0]) {
        json_object_set_new(o, "mig_profile", json_string(b->mig_profile));
        json_object_set_new(o, "instances", json_integer(b->replicas));
    }
    if (b->series[0]) {
        json_object_set_new(o, "series", json_string(b->series));
        json_object_set_new(o, "occurrence", json_integer(b->occurrence));
        json_object_set_new(o, "repeat", json_string(gp_recurrence_name(b->recurrence)));
        json_object_set_new(o, "until", json_integer(b->until));
    }
    json_object_set_new(o, "no_show_s", json_integer(b->no_show_s));
    json_object_set_new(o, "gpus_placed", json_integer(b->n_gpus));
    json_object_set_new(o, "guaranteed_gpus", json_integer(b->guaranteed_gpus));
    json_object_set_new(o, "allowance_gpus", json_integer(b->allowance_gpus));
    json_object_set_new(o, "gpus_short", json_integer(b->gpus_short));
    json_object_set_new(o, "substitutions", json_integer(b->substitutions));
    json_object_set_new(o, "jobs_running", json_integer(b->jobs_running));
    json_object_set_new(o, "last_used", b->last_used < 0 ? json_null() : json_integer(b->last_used));
    json_object_set_new(o, "placement", placement_view(e, b->name));
    json_object_set_new(o, "cleared", cleared_view(b));
    json_object_set_new(o, "cleared_count", json_integer(b->n_cleared));
    json_object_set_new(o, "history", history_view(b));
    return o;
}

json_t *gp_booking_allowance_view(const char *org, const gp_booking_allowance *a)
{
    bool unbounded = a->gpu_hours_per_week < 0;
    return json_pack("{s:s, s:o, s:I, s:f, s:o}", "org", org, "gpu_hours_per_week",
                     unbounded ? json_null() : json_integer(a->gpu_hours_per_week), "week_start",
                     (json_int_t)a->week_start, "used_gpu_hours", a->used_gpu_hours, "gpu_hours_left",
                     unbounded ? json_null() : json_real(a->left_gpu_hours));
}

/* image_hints.c - the images a node should warm: pending jobs' and
 * recently started jobs' public images per GPU type (image_hints.h has
 * the rule and a worked example). */
#include "server/image_hints.h"

#include "server/api.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CANDIDATES_MAX 256

/* One image of one tenant: the jobs that want it, and the order it came in. */
typedef struct candidate {
    char *image, *tenant; /* copies (malloc'd): the ring changes once unlocked */
    int jobs;
    size_t order;
} candidate;

typedef struct candidates {
    candidate list[CANDIDATES_MAX];
    size_t n;
} candidates;

void gp_image_hints_init(gp_image_hints *h)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->lock, NULL);
    h->node_types = json_object();
}

void gp_image_hints_free(gp_image_hints *h)
{
    for (size_t i = 0; i < GP_IMAGE_HINTS_STARTS; i++)
        free(h->starts[i].image);
    for (size_t i = 0; i < GP_MAX_GPU_TYPES; i++)
        json_decref(h->cached[i].hints);
    json_decref(h->node_types);
    pthread_mutex_destroy(&h->lock);
    memset(h, 0, sizeof *h);
}

/* docker:// and oci: references: what a node's image store pulls. */
static bool hintable(const char *image)
{
    return image && (strncmp(image, "docker://", 9) == 0 || strncmp(image, "oci:", 4) == 0);
}

void gp_image_hints_note_start(gp_image_hints *h, const char *gpu_type, uint64_t job, const char *tenant,
                               const char *image, int64_t now_ms)
{
    if (!hintable(image) || !gpu_type || !tenant)
        return;
    pthread_mutex_lock(&h->lock);
    bool known = false;
    for (size_t i = 0; i < GP_IMAGE_HINTS_STARTS && !known; i++)
        known = h->starts[i].image && h->starts[i].job == job && now_ms - h->starts[i].at_ms < GP_IMAGE_HINTS_WINDOW_MS;
    char *copy = known ? NULL : strdup(image);
    if (copy) {
        gp_image_hints_start *s = &h->starts[h->next_start];
        free(s->image);
        *s = (gp_image_hints_start){.at_ms = now_ms, .job = job, .image = copy};
        snprintf(s->gpu_type, sizeof s->gpu_type, "%s", gpu_type);
        snprintf(s->tenant, sizeof s->tenant, "%s", tenant);
        h->next_start = (h->next_start + 1) % GP_IMAGE_HINTS_STARTS;
    }
    pthread_mutex_unlock(&h->lock);
}

/* One more job wanting image (of tenant). */
static void candidate_add(candidates *c, const char *image, const char *tenant)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->list[i].image, image) == 0 && strcmp(c->list[i].tenant, tenant) == 0) {
            c->list[i].jobs++;
            return;
        }
    char *image_copy = c->n < CANDIDATES_MAX ? strdup(image) : NULL, *tenant_copy = image_copy ? strdup(tenant) : NULL;
    if (!tenant_copy) {
        free(image_copy);
        return;
    }
    c->list[c->n] = (candidate){.image = image_copy, .tenant = tenant_copy, .jobs = 1, .order = c->n};
    c->n++;
}

/* A pending job (a store row) that may run on a node of gpu_type. */
static const char *pending_image(const json_t *row, const char *gpu_type)
{
    const json_t *spec = json_object_get(row, "spec"), *types = json_object_get(spec, "gpu_types"), *t;
    const char *image = json_string_value(json_object_get(spec, "image"));
    if (!hintable(image))
        return NULL;
    size_t i;
    json_array_foreach(types, i, t) if (strcmp(json_string_value(t) ?: "", gpu_type) == 0) return image;
    return json_array_size(types) == 0 ? image : NULL;
}

/* The pending jobs' images, the oldest job's first (rows: newest first). */
static void add_pending(candidates *c, const json_t *rows, const char *gpu_type)
{
    for (size_t i = json_array_size(rows); i-- > 0;) {
        const json_t *row = json_array_get(rows, i);
        const char *image = pending_image(row, gpu_type), *tenant = json_string_value(json_object_get(row, "tenant"));
        if (image && tenant)
            candidate_add(c, image, tenant);
    }
}

/* The images of the last hour's starts on gpu_type (under the lock). */
static void add_started(const gp_image_hints *h, candidates *c, const char *gpu_type, int64_t now_ms)
{
    for (size_t i = 0; i < GP_IMAGE_HINTS_STARTS; i++) {
        const gp_image_hints_start *s = &h->starts[i];
        if (s->image && strcmp(s->gpu_type, gpu_type) == 0 && now_ms - s->at_ms < GP_IMAGE_HINTS_WINDOW_MS)
            candidate_add(c, s->image, s->tenant);
    }
}

static int by_jobs(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->jobs != y->jobs)
        return y->jobs - x->jobs;
    return (x->order > y->order) - (x->order < y->order);
}

/* Public images only, one entry per image (its tenants' jobs summed),
 * most jobs first, the first K. */
static json_t *top_public(gp_store *s, candidates *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (gp_api_registry_credential_held(s, c->list[i].tenant, c->list[i].image))
            c->list[i].jobs = 0;
    for (size_t i = 0; i < c->n; i++)
        for (size_t j = i + 1; j < c->n && c->list[i].jobs; j++)
            if (c->list[j].jobs && strcmp(c->list[i].image, c->list[j].image) == 0) {
                c->list[i].jobs += c->list[j].jobs;
                c->list[j].jobs = 0;
            }
    qsort(c->list, c->n, sizeof *c->list, by_jobs);
    json_t *hints = json_array();
    for (size_t i = 0; i < c->n && json_array_size(hints) < GP_IMAGE_HINTS_K && c->list[i].jobs > 0; i++)
        json_array_append_new(hints, json_string(c->list[i].image));
    return hints;
}

/* The hint of gpu_type made from the store and the starts ring. */
static json_t *make(gp_image_hints *h, gp_store *s, const char *gpu_type, int64_t now_ms)
{
    gp_store_job_filter f = {.state = "pending", .limit = GP_IMAGE_HINTS_SCAN};
    json_t *page = NULL;
    gp_error err;
    if (gp_store_jobs_list(s, &f, &page, &err) != GP_OK)
        page = NULL;
    candidates *c = calloc(1, sizeof *c);
    json_t *hints = NULL;
    if (c) {
        add_pending(c, json_object_get(page, "jobs"), gpu_type);
        pthread_mutex_lock(&h->lock);
        add_started(h, c, gpu_type, now_ms);
        pthread_mutex_unlock(&h->lock);
        hints = top_public(s, c);
        for (size_t i = 0; i < c->n; i++) {
            free(c->list[i].image);
            free(c->list[i].tenant);
        }
    }
    free(c);
    json_decref(page);
    return hints ? hints : json_array();
}

/* gpu_type's slot (a free one, else the first) under the lock. */
static gp_image_hints_cached *slot(gp_image_hints *h, const char *gpu_type)
{
    gp_image_hints_cached *free_slot = NULL;
    for (size_t i = 0; i < GP_MAX_GPU_TYPES; i++) {
        if (h->cached[i].hints && strcmp(h->cached[i].gpu_type, gpu_type) == 0)
            return &h->cached[i];
        if (!h->cached[i].hints && !free_slot)
            free_slot = &h->cached[i];
    }
    return free_slot ? free_slot : &h->cached[0];
}

/* gpu_type's cached hint (a new reference), NULL when none, and when it
 * was made (under the lock). */
static json_t *cached(gp_image_hints *h, const char *gpu_type, int64_t *made_ms)
{
    gp_image_hints_cached *c = slot(h, gpu_type);
    bool mine = c->hints && strcmp(c->gpu_type, gpu_type) == 0;
    *made_ms = mine ? c->made_ms : INT64_MIN;
    return mine ? json_incref(c->hints) : NULL;
}

json_t *gp_image_hints_for(gp_image_hints *h, const char *node, const char *gpu_type)
{
    if (!gpu_type || !gpu_type[0])
        return json_array();
    int64_t made_ms;
    pthread_mutex_lock(&h->lock);
    const char *had = json_string_value(json_object_get(h->node_types, node));
    if (!had || strcmp(had, gpu_type) != 0)
        json_object_set_new(h->node_types, node, json_string(gpu_type));
    json_t *hints = cached(h, gpu_type, &made_ms);
    pthread_mutex_unlock(&h->lock);
    return hints ? hints : json_array();
}

/* Whether this thread makes gpu_type's hint now: it is stale and no other
 * thread is making it (under the lock; the caller then calls remade). */
static bool claim(gp_image_hints *h, const char *gpu_type, bool stale)
{
    for (size_t i = 0; i < GP_MAX_GPU_TYPES; i++)
        if (h->making[i][0] && strcmp(h->making[i], gpu_type) == 0)
            return false;
    for (size_t i = 0; stale && i < GP_MAX_GPU_TYPES; i++)
        if (!h->making[i][0]) {
            snprintf(h->making[i], sizeof h->making[i], "%s", gpu_type);
            return true;
        }
    return false;
}

/* The hint made for gpu_type kept, and the claim on it given up. */
static void remade(gp_image_hints *h, const char *gpu_type, json_t *hints, int64_t now_ms)
{
    pthread_mutex_lock(&h->lock);
    gp_image_hints_cached *c = slot(h, gpu_type);
    json_decref(c->hints);
    *c = (gp_image_hints_cached){.made_ms = now_ms, .hints = json_incref(hints)};
    snprintf(c->gpu_type, sizeof c->gpu_type, "%s", gpu_type);
    for (size_t i = 0; i < GP_MAX_GPU_TYPES; i++)
        if (strcmp(h->making[i], gpu_type) == 0)
            h->making[i][0] = '\0';
    pthread_mutex_unlock(&h->lock);
}

json_t *gp_image_hints_for_node(gp_image_hints *h, gp_readers *readers, const char *node, int64_t now_ms)
{
    char gpu_type[GP_NAME_MAX];
    int64_t made_ms;
    pthread_mutex_lock(&h->lock);
    snprintf(gpu_type, sizeof gpu_type, "%s", json_string_value(json_object_get(h->node_types, node)) ?: "");
    json_t *hints = gpu_type[0] ? cached(h, gpu_type, &made_ms) : NULL;
    bool mine = gpu_type[0] && claim(h, gpu_type, !hints || now_ms - made_ms >= GP_IMAGE_HINTS_STALE_MS);
    pthread_mutex_unlock(&h->lock);
    if (!mine) /* fresh, or another thread makes it: the last one made */
        return hints ? hints : json_array();
    gp_error err;
    gp_store *s = gp_readers_take(readers, &err);
    json_t *made = s ? make(h, s, gpu_type, now_ms) : NULL;
    gp_readers_give(readers, s);
    if (!made) /* no reader now: the old hint kept, the next heartbeat tries again */
        made = hints ? json_incref(hints) : json_array();
    remade(h, gpu_type, made, s ? now_ms : made_ms);
    json_decref(hints);
    return made;
}

/* auth_failures.c - failed sign-ins by address and by user over the last
 * ten minutes, in bounded tables (see auth_failures.h for the rule). */
#include "server/auth_failures.h"

#include <stdio.h>
#include <string.h>

void gp_auth_failures_init(gp_auth_failures *f)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->lock, NULL);
}

void gp_auth_failures_destroy(gp_auth_failures *f)
{
    pthread_mutex_destroy(&f->lock);
}

/* k's failures in the window ending in minute `now_min`. */
static uint32_t window_count(const gp_auth_failure_key *k, int64_t now_min)
{
    uint32_t n = 0;
    for (int i = 0; i < GP_AUTH_FAILURE_MINUTES; i++)
        if (k->minute[i] > now_min - GP_AUTH_FAILURE_MINUTES && k->minute[i] <= now_min)
            n += k->count[i];
    return n;
}

/* The slot a new key takes in a full table: the fewest failures in the
 * window, the least recently failed among equals. */
static gp_auth_failure_key *weakest(gp_auth_failure_table *t, int64_t now_min)
{
    gp_auth_failure_key *w = &t->keys[0];
    uint32_t wn = window_count(w, now_min);
    for (int i = 1; i < t->n; i++) {
        uint32_t n = window_count(&t->keys[i], now_min);
        if (n < wn || (n == wn && t->keys[i].last_ms < w->last_ms)) {
            w = &t->keys[i];
            wn = n;
        }
    }
    return w;
}

static gp_auth_failure_key *key_slot(gp_auth_failure_table *t, const char *key, int64_t now_min)
{
    char cut[GP_AUTH_FAILURE_KEY_MAX];
    snprintf(cut, sizeof cut, "%s", key);
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->keys[i].key, cut) == 0)
            return &t->keys[i];
    gp_auth_failure_key *k = t->n < GP_AUTH_FAILURE_KEYS ? &t->keys[t->n++] : weakest(t, now_min);
    memset(k, 0, sizeof *k);
    snprintf(k->key, sizeof k->key, "%s", cut);
    return k;
}

static void count_one(gp_auth_failure_table *t, const char *key, int64_t now_ms)
{
    int64_t now_min = now_ms / 60000;
    gp_auth_failure_key *k = key_slot(t, key, now_min);
    int i = (int)(now_min % GP_AUTH_FAILURE_MINUTES);
    if (k->minute[i] != now_min) {
        k->minute[i] = now_min;
        k->count[i] = 0;
    }
    k->count[i]++;
    k->last_ms = now_ms;
}

void gp_auth_failure_note(gp_auth_failures *f, const char *address, const char *user, int64_t now_ms)
{
    pthread_mutex_lock(&f->lock);
    f->total++;
    count_one(&f->by_address, address && address[0] ? address : "-", now_ms);
    if (user && user[0])
        count_one(&f->by_user, user, now_ms);
    pthread_mutex_unlock(&f->lock);
}

static int copy_table(const gp_auth_failure_table *t, int64_t now_min, gp_auth_failure_count *out)
{
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        uint32_t c = window_count(&t->keys[i], now_min);
        if (c == 0)
            continue;
        memcpy(out[n].key, t->keys[i].key, sizeof out[n].key);
        out[n++].failures = c;
    }
    return n;
}

void gp_auth_failures_copy(gp_auth_failures *f, int64_t now_ms, gp_auth_failure_counts *out)
{
    int64_t now_min = now_ms / 60000;
    pthread_mutex_lock(&f->lock);
    out->n_address = copy_table(&f->by_address, now_min, out->by_address);
    out->n_user = copy_table(&f->by_user, now_min, out->by_user);
    out->total = f->total;
    pthread_mutex_unlock(&f->lock);
}

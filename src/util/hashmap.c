/* hashmap.c - linear-probing maps (see hashmap.h). */
#include "util/hashmap.h"

#include <stdlib.h>
#include <string.h>

#define U64_TOMBSTONE UINT64_MAX
#define STR_TOMBSTONE ((char *)1)

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return mix64(h);
}

static bool u64_grow(gp_u64map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    gp_u64map n = {0};
    n.keys = calloc(ncap, sizeof *n.keys);
    n.values = calloc(ncap, sizeof *n.values);
    if (!n.keys || !n.values) {
        free(n.keys);
        free(n.values);
        return false;
    }
    n.cap = ncap;
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t k = m->keys[i];
        if (k == 0 || k == U64_TOMBSTONE)
            continue;
        size_t j = mix64(k) & (ncap - 1);
        while (n.keys[j])
            j = (j + 1) & (ncap - 1);
        n.keys[j] = k;
        n.values[j] = m->values[i];
        n.used++;
        n.live++;
    }
    free(m->keys);
    free(m->values);
    *m = n;
    return true;
}

bool gp_u64map_put(gp_u64map *m, uint64_t key, uint32_t value)
{
    if (key == 0 || key == U64_TOMBSTONE)
        return false;
    if ((m->used + 1) * 4 > m->cap * 3 && !u64_grow(m))
        return false;
    size_t mask = m->cap - 1, j = mix64(key) & mask, tomb = SIZE_MAX;
    while (m->keys[j]) {
        if (m->keys[j] == key) {
            m->values[j] = value;
            return true;
        }
        if (m->keys[j] == U64_TOMBSTONE && tomb == SIZE_MAX)
            tomb = j;
        j = (j + 1) & mask;
    }
    if (tomb != SIZE_MAX)
        j = tomb;
    else
        m->used++;
    m->keys[j] = key;
    m->values[j] = value;
    m->live++;
    return true;
}

static size_t u64_find(const gp_u64map *m, uint64_t key)
{
    if (m->cap == 0 || key == 0 || key == U64_TOMBSTONE)
        return SIZE_MAX;
    size_t mask = m->cap - 1, j = mix64(key) & mask;
    while (m->keys[j]) {
        if (m->keys[j] == key)
            return j;
        j = (j + 1) & mask;
    }
    return SIZE_MAX;
}

bool gp_u64map_get(const gp_u64map *m, uint64_t key, uint32_t *value)
{
    size_t j = u64_find(m, key);
    if (j == SIZE_MAX)
        return false;
    if (value)
        *value = m->values[j];
    return true;
}

bool gp_u64map_remove(gp_u64map *m, uint64_t key)
{
    size_t j = u64_find(m, key);
    if (j == SIZE_MAX)
        return false;
    m->keys[j] = U64_TOMBSTONE;
    m->live--;
    return true;
}

void gp_u64map_free(gp_u64map *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

static bool str_grow(gp_strmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    gp_strmap n = {0};
    n.keys = calloc(ncap, sizeof *n.keys);
    n.values = calloc(ncap, sizeof *n.values);
    if (!n.keys || !n.values) {
        free(n.keys);
        free(n.values);
        return false;
    }
    n.cap = ncap;
    for (size_t i = 0; i < m->cap; i++) {
        char *k = m->keys[i];
        if (k == NULL || k == STR_TOMBSTONE)
            continue;
        size_t j = hash_str(k) & (ncap - 1);
        while (n.keys[j])
            j = (j + 1) & (ncap - 1);
        n.keys[j] = k;
        n.values[j] = m->values[i];
        n.used++;
        n.live++;
    }
    free(m->keys);
    free(m->values);
    *m = n;
    return true;
}

static size_t str_find(const gp_strmap *m, const char *key)
{
    if (m->cap == 0)
        return SIZE_MAX;
    size_t mask = m->cap - 1, j = hash_str(key) & mask;
    while (m->keys[j]) {
        if (m->keys[j] != STR_TOMBSTONE && strcmp(m->keys[j], key) == 0)
            return j;
        j = (j + 1) & mask;
    }
    return SIZE_MAX;
}

bool gp_strmap_put(gp_strmap *m, const char *key, uint32_t value)
{
    size_t j = str_find(m, key);
    if (j != SIZE_MAX) {
        m->values[j] = value;
        return true;
    }
    if ((m->used + 1) * 4 > m->cap * 3 && !str_grow(m))
        return false;
    char *copy = strdup(key);
    if (!copy)
        return false;
    size_t mask = m->cap - 1;
    j = hash_str(key) & mask;
    while (m->keys[j] && m->keys[j] != STR_TOMBSTONE)
        j = (j + 1) & mask;
    if (m->keys[j] == NULL)
        m->used++;
    m->keys[j] = copy;
    m->values[j] = value;
    m->live++;
    return true;
}

bool gp_strmap_get(const gp_strmap *m, const char *key, uint32_t *value)
{
    size_t j = str_find(m, key);
    if (j == SIZE_MAX)
        return false;
    if (value)
        *value = m->values[j];
    return true;
}

bool gp_strmap_remove(gp_strmap *m, const char *key)
{
    size_t j = str_find(m, key);
    if (j == SIZE_MAX)
        return false;
    free(m->keys[j]);
    m->keys[j] = STR_TOMBSTONE;
    m->live--;
    return true;
}

void gp_strmap_free(gp_strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] && m->keys[i] != STR_TOMBSTONE)
            free(m->keys[i]);
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

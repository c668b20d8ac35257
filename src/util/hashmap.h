/* hashmap.h - open-addressing maps from names and 64-bit ids to indexes.
 *
 * The engine looks up nodes by name, tenants by path and jobs by id on
 * every event; these two small maps keep that O(1).  Keys map to uint32_t
 * values (indexes into the caller's own arrays).  Linear probing with
 * tombstones; the table doubles when 3/4 full.
 *
 * Ownership: the map owns its slots; gp_strmap copies the key strings.
 * Call *_free to release; a zeroed struct is an empty, valid map.
 */
#ifndef GP_UTIL_HASHMAP_H
#define GP_UTIL_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gp_u64map {
    uint64_t *keys;   /* 0 = empty, UINT64_MAX = tombstone; key 0 and UINT64_MAX are not allowed */
    uint32_t *values;
    size_t cap, used, live;
} gp_u64map;

bool gp_u64map_put(gp_u64map *m, uint64_t key, uint32_t value);  /* false: out of memory */
bool gp_u64map_get(const gp_u64map *m, uint64_t key, uint32_t *value);
bool gp_u64map_remove(gp_u64map *m, uint64_t key);
void gp_u64map_free(gp_u64map *m);

typedef struct gp_strmap {
    char **keys;      /* NULL = empty; (char *)1 marks a tombstone */
    uint32_t *values;
    size_t cap, used, live;
} gp_strmap;

bool gp_strmap_put(gp_strmap *m, const char *key, uint32_t value);
bool gp_strmap_get(const gp_strmap *m, const char *key, uint32_t *value);
bool gp_strmap_remove(gp_strmap *m, const char *key);
void gp_strmap_free(gp_strmap *m);

#endif

/* cmd_pools.c - `gpupool pools` (each pool: its owner, whether the owner
 * lends, nodes, GPUs, GPUs borrowed by other tenants) and `gpupool pool
 * own NAME TENANT` / `gpupool pool disown NAME` (admin: PUT /v1/pools/NAME).
 */
#include "cli/commands.h"
#include "cli/table.h"

#include <stdio.h>
#include <string.h>

static const char POOL_USAGE[] = "usage: gpupool pool own NAME TENANT | gpupool pool disown NAME";

static void pool_row(gp_table *t, const json_t *p)
{
    char nodes[16], gpus[16], borrowed[16];
    snprintf(nodes, sizeof nodes, "%lld", (long long)json_integer_value(json_object_get(p, "nodes")));
    snprintf(gpus, sizeof gpus, "%lld", (long long)json_integer_value(json_object_get(p, "gpus")));
    snprintf(borrowed, sizeof borrowed, "%lld", (long long)json_integer_value(json_object_get(p, "gpus_borrowed")));
    const json_t *owner = json_object_get(p, "owner");
    const char *lends = !owner                                          ? "-"
                        : !json_is_true(json_object_get(p, "owner_exists")) ? "closed"
                        : json_is_true(json_object_get(p, "lent"))          ? "yes"
                                                                            : "no";
    const char *cells[] = {json_string_value(json_object_get(p, "name")), owner ? json_string_value(owner) : "-",
                           lends, nodes, gpus, borrowed};
    gp_table_add(t, cells);
}

int gp_cmd_pools(gp_client *c, int argc, char **argv)
{
    if (argc > 1)
        return gp_usage_error(argv[0], "usage: gpupool pools");
    gp_response resp;
    int rc = gp_client_run(c, "GET", "/v1/pools", NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        static const char *const head[] = {"POOL", "OWNER", "LENDS", "NODES", "GPUS", "BORROWED"};
        gp_table t;
        gp_table_init(&t, 6, head);
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(resp.body, "pools"), i, p)
            pool_row(&t, p);
        gp_table_print(&t, stdout);
    }
    gp_response_free(&resp);
    return rc;
}

int gp_cmd_pool(gp_client *c, int argc, char **argv)
{
    bool own = argc == 4 && strcmp(argv[1], "own") == 0, disown = argc == 3 && strcmp(argv[1], "disown") == 0;
    if (!own && !disown)
        return gp_usage_error("pool", POOL_USAGE);
    char path[256];
    snprintf(path, sizeof path, "/v1/pools/%.100s", argv[2]);
    json_t *body = own ? json_pack("{s:s}", "owner", argv[3]) : json_pack("{s:n}", "owner");
    gp_response resp;
    int rc = gp_client_run(c, "PUT", path, body, &resp);
    json_decref(body);
    if (rc == GP_EXIT_OK && !c->json) {
        const json_t *owner = json_object_get(resp.body, "owner");
        if (owner)
            printf("pool %s owned by %s (%s)\n", argv[2], json_string_value(owner),
                   json_is_true(json_object_get(resp.body, "lent")) ? "it lends: others may borrow, taken back with grace"
                                                                    : "it does not lend: only its jobs place there");
        else
            printf("pool %s has no owner\n", argv[2]);
    }
    gp_response_free(&resp);
    return rc;
}

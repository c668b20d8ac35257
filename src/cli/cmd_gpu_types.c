/* cmd_gpu_types.c - `gpupool gpu-types`: the GPU types gpupoold knows
 * (those of registered nodes and those an admin declared), and declaring
 * one before its nodes arrive (GET /v1/gpu-types, PUT and DELETE
 * /v1/gpu-types/NAME).
 *
 *   $ gpupool gpu-types declare H200
 *   GPU type H200 declared
 *   $ gpupool gpu-types
 *   TYPE  GPUS  DECLARED
 *   H100  32    -
 *   H200  0     2026-12-07 22:15:09 (just now)
 */
#include "cli/commands.h"
#include "cli/table.h"
#include "cli/timefmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const char USAGE[] = "usage: gpupool gpu-types\n       gpupool gpu-types declare|undeclare NAME";

static int list(gp_client *c)
{
    gp_response resp;
    int rc = gp_client_run(c, "GET", "/v1/gpu-types", NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        static const char *const head[] = {"TYPE", "GPUS", "DECLARED"};
        gp_table t;
        gp_table_init(&t, 3, head);
        size_t i;
        json_t *g;
        json_array_foreach(json_object_get(resp.body, "gpu_types"), i, g) {
            char gpus[32], when[96];
            const json_t *at = json_object_get(g, "declared_at");
            const char *cells[] = {json_string_value(json_object_get(g, "name")),
                                   gp_cell(json_object_get(g, "gpus"), gpus, sizeof gpus),
                                   json_is_integer(at) ? gp_time_human(json_integer_value(at), (int64_t)time(NULL),
                                                                       when, sizeof when)
                                                       : "-"};
            gp_table_add(&t, cells);
        }
        gp_table_print(&t, stdout);
    }
    gp_response_free(&resp);
    return rc;
}

static int declare(gp_client *c, bool undo, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/gpu-types/%.64s", name);
    gp_response resp;
    int rc = gp_client_run(c, undo ? "DELETE" : "PUT", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        printf("GPU type %s %s\n", json_string_value(json_object_get(resp.body, "name")),
               undo ? "no longer declared" : "declared");
    gp_response_free(&resp);
    return rc;
}

int gp_cmd_gpu_types(gp_client *c, int argc, char **argv)
{
    if (argc == 1)
        return list(c);
    if (argc == 3 && (strcmp(argv[1], "declare") == 0 || strcmp(argv[1], "undeclare") == 0))
        return declare(c, argv[1][0] == 'u', argv[2]);
    return gp_usage_error("gpu-types", "%s", USAGE);
}

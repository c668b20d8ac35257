/* cmd_rolebinding.c - `gpupool rolebindings` (the role bindings the caller
 * may see) and `gpupool rolebinding create --group G|--user U --role R
 * [--scope PATH]` / `gpupool rolebinding delete ID`: who signed in through
 * the identity provider holds which role where (POST/GET/DELETE
 * /v1/rolebindings; server/api_rolebindings.c).
 */
#include "cli/commands.h"
#include "cli/table.h"
#include "cli/timefmt.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char RB_USAGE[] = "usage: gpupool rolebinding create (--group G | --user U) --role admin|tenant-admin|member"
                               " [--scope PATH]\n       gpupool rolebinding delete ID";

int gp_cmd_rolebindings(gp_client *c, int argc, char **argv)
{
    (void)argv;
    if (argc != 1)
        return gp_usage_error("rolebindings", "usage: gpupool rolebindings");
    gp_response resp;
    int rc = gp_client_run(c, "GET", "/v1/rolebindings", NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        static const char *const head[] = {"ID", "SUBJECT", "ROLE", "SCOPE", "CREATED", "BY"};
        gp_table t;
        gp_table_init(&t, 6, head);
        size_t i;
        json_t *b;
        json_array_foreach(json_object_get(resp.body, "rolebindings"), i, b) {
            char id[24], subject[96], created[96];
            const char *group = json_string_value(json_object_get(b, "group"));
            const char *user = json_string_value(json_object_get(b, "user"));
            const char *scope = json_string_value(json_object_get(b, "scope"));
            snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(b, "id")));
            snprintf(subject, sizeof subject, "%s:%s", group ? "group" : "user", group ? group : user ? user : "?");
            const char *cells[] = {id, subject, json_string_value(json_object_get(b, "role")),
                                   scope && scope[0] ? scope : "/",
                                   gp_time_human(json_integer_value(json_object_get(b, "created")),
                                                 (int64_t)time(NULL), created, sizeof created),
                                   json_string_value(json_object_get(b, "created_by"))};
            gp_table_add(&t, cells);
        }
        gp_table_print(&t, stdout);
    }
    gp_response_free(&resp);
    return rc;
}

static int rolebinding_create(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"group", required_argument, NULL, 'g'},
                                         {"user", required_argument, NULL, 'u'},
                                         {"role", required_argument, NULL, 'r'},
                                         {"scope", required_argument, NULL, 's'},
                                         {NULL, 0, NULL, 0}};
    json_t *body = json_object();
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        const char *key = ch == 'g' ? "group" : ch == 'u' ? "user" : ch == 'r' ? "role" : ch == 's' ? "scope" : NULL;
        if (!key) {
            json_decref(body);
            return gp_usage_error("rolebinding", "%s", RB_USAGE);
        }
        json_object_set_new(body, key, json_string(optarg));
    }
    if (optind != argc) {
        json_decref(body);
        return gp_usage_error("rolebinding", "%s", RB_USAGE);
    }
    gp_response resp;
    int rc = gp_client_run(c, "POST", "/v1/rolebindings", body, &resp);
    json_decref(body);
    if (rc == GP_EXIT_OK && !c->json) {
        const char *group = json_string_value(json_object_get(resp.body, "group"));
        const char *scope = json_string_value(json_object_get(resp.body, "scope"));
        printf("rolebinding %lld: %s %s holds %s at %s\n",
               (long long)json_integer_value(json_object_get(resp.body, "id")), group ? "group" : "user",
               group ? group : json_string_value(json_object_get(resp.body, "user")),
               json_string_value(json_object_get(resp.body, "role")), scope && scope[0] ? scope : "the root");
    }
    gp_response_free(&resp);
    return rc;
}

int gp_cmd_rolebinding(gp_client *c, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "create") == 0)
        return rolebinding_create(c, argc - 1, argv + 1);
    if (argc == 3 && strcmp(argv[1], "delete") == 0) {
        char path[64];
        snprintf(path, sizeof path, "/v1/rolebindings/%.24s", argv[2]);
        gp_response resp;
        int rc = gp_client_run(c, "DELETE", path, NULL, &resp);
        if (rc == GP_EXIT_OK && !c->json)
            printf("rolebinding %s deleted\n", argv[2]);
        gp_response_free(&resp);
        return rc;
    }
    return gp_usage_error("rolebinding", "%s", RB_USAGE);
}

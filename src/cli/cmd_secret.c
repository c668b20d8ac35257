/* cmd_secret.c - gpupool secret set|list|rm: a tenant's secrets, which
 * jobs name in env_from_secret (docs/cli.md, "secret").
 *
 * The value goes up once, from a file or stdin (never the command line,
 * where `ps` shows it), and is never read back: `list` shows names,
 * sizes, who set each and when.
 */
#include "cli/commands.h"
#include "cli/table.h"
#include "cli/timefmt.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char SECRET_USAGE[] = "usage: gpupool secret set TENANT NAME (--from-file FILE | --value-stdin)\n"
                                   "       gpupool secret list TENANT\n"
                                   "       gpupool secret rm TENANT NAME";

/* /v1/secrets[/NAME]?tenant=TENANT into path. */
static void secret_path(gp_client *c, char *path, size_t cap, const char *tenant, const char *name)
{
    snprintf(path, cap, "/v1/secrets%s%.128s", name ? "/" : "", name ? name : "");
    gp_query_add(c, path, cap, "tenant", tenant);
}

static int secret_set(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"from-file", required_argument, NULL, 'f'},
                                         {"value-stdin", no_argument, NULL, 's'},
                                         {NULL, 0, NULL, 0}};
    const char *file = NULL;
    int ch, sources = 0;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch != 'f' && ch != 's')
            return gp_usage_error("secret", "%s", SECRET_USAGE);
        file = ch == 'f' ? optarg : "-";
        sources++;
    }
    if (sources != 1 || optind != argc - 2)
        return gp_usage_error("secret", "%s", SECRET_USAGE);
    size_t len;
    char *value = gp_read_file(file, &len);
    if (!value)
        return GP_EXIT_ERROR;
    json_t *body = json_pack("{s:s%}", "value", value, len);
    free(value);
    if (!body) {
        fprintf(stderr, "gpupool: the secret must be UTF-8 text without NUL bytes\n");
        return GP_EXIT_INVALID;
    }
    char path[512];
    secret_path(c, path, sizeof path, argv[optind], argv[optind + 1]);
    gp_response resp;
    int rc = gp_client_run(c, "PUT", path, body, &resp);
    json_decref(body);
    if (rc == GP_EXIT_OK && !c->json)
        printf("secret %s of %s set (%lld bytes)\n", argv[optind + 1], argv[optind],
               (long long)json_integer_value(json_object_get(resp.body, "bytes")));
    gp_response_free(&resp);
    return rc;
}

static int secret_list(gp_client *c, const char *tenant)
{
    char path[512];
    secret_path(c, path, sizeof path, tenant, NULL);
    gp_response resp;
    int rc = gp_client_run(c, "GET", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json) {
        static const char *const head[] = {"NAME", "BYTES", "SET-BY", "UPDATED"};
        gp_table t;
        gp_table_init(&t, 4, head);
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(resp.body, "secrets"), i, s) {
            char bytes[32], when[96];
            const char *cells[] = {json_string_value(json_object_get(s, "name")),
                                   gp_cell(json_object_get(s, "bytes"), bytes, sizeof bytes),
                                   json_string_value(json_object_get(s, "set_by")),
                                   gp_time_human(json_integer_value(json_object_get(s, "updated")),
                                                 (int64_t)time(NULL), when, sizeof when)};
            gp_table_add(&t, cells);
        }
        gp_table_print(&t, stdout);
    }
    gp_response_free(&resp);
    return rc;
}

static int secret_rm(gp_client *c, const char *tenant, const char *name)
{
    char path[512];
    secret_path(c, path, sizeof path, tenant, name);
    gp_response resp;
    int rc = gp_client_run(c, "DELETE", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        printf("secret %s of %s deleted\n", name, tenant);
    gp_response_free(&resp);
    return rc;
}

int gp_cmd_secret(gp_client *c, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "set") == 0)
        return secret_set(c, argc - 1, argv + 1);
    if (argc == 3 && strcmp(argv[1], "list") == 0)
        return secret_list(c, argv[2]);
    if (argc == 4 && strcmp(argv[1], "rm") == 0)
        return secret_rm(c, argv[2], argv[3]);
    return gp_usage_error("secret", "%s", SECRET_USAGE);
}

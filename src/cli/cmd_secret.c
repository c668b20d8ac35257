/* cmd_secret.c - gpupool secret set|list|rm: a tenant's secrets, which
 * jobs name in env_from_secret (docs/cli.md, "secret").
 *
 * The value goes up once, from a file or stdin (never the command line,
 * where `ps` shows it), and is never read back: `list` shows names,
 * sizes, who set each and when.  A registry credential (--registry) is a
 * username and a password from a file, for the tenant's images on that
 * registry (/v1/registries); `list` shows its registry and username.
 */
#include "cli/commands.h"
#include "cli/table.h"
#include "cli/timefmt.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char SECRET_USAGE[] =
    "usage: gpupool secret set TENANT NAME (--from-file FILE | --value-stdin)\n"
    "       gpupool secret set --tenant TENANT --registry HOST[:PORT] --username USER --password-file FILE\n"
    "       gpupool secret list TENANT\n"
    "       gpupool secret rm TENANT NAME\n"
    "       gpupool secret rm --tenant TENANT --registry HOST[:PORT]";

/* A registry credential's options; registry NULL: none given. */
typedef struct registry_opts {
    const char *tenant, *registry, *username, *password_file;
} registry_opts;

/* /v1/secrets[/NAME]?tenant=TENANT into path. */
static void secret_path(gp_client *c, char *path, size_t cap, const char *tenant, const char *name)
{
    snprintf(path, cap, "/v1/secrets%s%.128s", name ? "/" : "", name ? name : "");
    gp_query_add(c, path, cap, "tenant", tenant);
}

/* /v1/registries[/HOST]?tenant=TENANT into path. */
static void registry_path(gp_client *c, char *path, size_t cap, const char *tenant, const char *host)
{
    snprintf(path, cap, "/v1/registries%s%.255s", host ? "/" : "", host ? host : "");
    gp_query_add(c, path, cap, "tenant", tenant);
}

static int registry_set(gp_client *c, const registry_opts *o)
{
    if (!o->tenant || !o->username || !o->password_file)
        return gp_usage_error("secret", "%s", SECRET_USAGE);
    size_t len;
    char *password = gp_read_file(o->password_file, &len);
    if (!password)
        return GP_EXIT_ERROR;
    while (len > 0 && (password[len - 1] == '\n' || password[len - 1] == '\r')) /* a file's last newline is no part of it */
        len--;
    json_t *body = json_pack("{s:s, s:s%}", "username", o->username, "password", password, len);
    free(password);
    if (!body) {
        fprintf(stderr, "gpupool: the username and password must be UTF-8 text without NUL bytes\n");
        return GP_EXIT_INVALID;
    }
    char path[512];
    registry_path(c, path, sizeof path, o->tenant, o->registry);
    gp_response resp;
    int rc = gp_client_run(c, "PUT", path, body, &resp);
    json_decref(body);
    if (rc == GP_EXIT_OK && !c->json)
        printf("registry credential of %s for %s set (user %s)\n", o->tenant, o->registry, o->username);
    gp_response_free(&resp);
    return rc;
}

static int secret_set(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"from-file", required_argument, NULL, 'f'},
                                         {"value-stdin", no_argument, NULL, 's'},
                                         {"tenant", required_argument, NULL, 't'},
                                         {"registry", required_argument, NULL, 'r'},
                                         {"username", required_argument, NULL, 'u'},
                                         {"password-file", required_argument, NULL, 'p'},
                                         {NULL, 0, NULL, 0}};
    const char *file = NULL;
    registry_opts reg = {0};
    int ch, sources = 0;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch == 't' || ch == 'r' || ch == 'u' || ch == 'p') {
            *(ch == 't' ? &reg.tenant : ch == 'r' ? &reg.registry : ch == 'u' ? &reg.username : &reg.password_file) =
                optarg;
            continue;
        }
        if (ch != 'f' && ch != 's')
            return gp_usage_error("secret", "%s", SECRET_USAGE);
        file = ch == 'f' ? optarg : "-";
        sources++;
    }
    if (reg.registry && sources == 0 && optind == argc)
        return registry_set(c, &reg);
    if (sources != 1 || optind != argc - 2 || reg.tenant || reg.registry || reg.username || reg.password_file)
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

/* A listing's rows: the keys `first` and `second`, who set each, when. */
static void print_rows(const json_t *list, const char *const head[4], const char *first, const char *second)
{
    gp_table t;
    gp_table_init(&t, 4, head);
    size_t i;
    json_t *s;
    json_array_foreach(list, i, s) {
        char cell[256], when[96];
        const char *cells[] = {json_string_value(json_object_get(s, first)),
                               gp_cell(json_object_get(s, second), cell, sizeof cell),
                               json_string_value(json_object_get(s, "set_by")),
                               gp_time_human(json_integer_value(json_object_get(s, "updated")), (int64_t)time(NULL),
                                             when, sizeof when)};
        gp_table_add(&t, cells);
    }
    gp_table_print(&t, stdout);
}

/* The tenant's registry credentials, after its secrets (nothing when none). */
static int registry_list(gp_client *c, const char *tenant)
{
    static const char *const head[] = {"REGISTRY", "USERNAME", "SET-BY", "UPDATED"};
    char path[512];
    registry_path(c, path, sizeof path, tenant, NULL);
    gp_response resp;
    int rc = gp_client_run(c, "GET", path, NULL, &resp);
    const json_t *list = json_object_get(resp.body, "registries");
    if (rc == GP_EXIT_OK && json_array_size(list)) {
        printf("\n");
        print_rows(list, head, "registry", "username");
    }
    gp_response_free(&resp);
    return rc;
}

static int secret_list(gp_client *c, const char *tenant)
{
    static const char *const head[] = {"NAME", "BYTES", "SET-BY", "UPDATED"};
    char path[512];
    secret_path(c, path, sizeof path, tenant, NULL);
    gp_response resp;
    int rc = gp_client_run(c, "GET", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        print_rows(json_object_get(resp.body, "secrets"), head, "name", "bytes");
    gp_response_free(&resp);
    return rc == GP_EXIT_OK && !c->json ? registry_list(c, tenant) : rc;
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

/* rm --tenant TENANT --registry HOST */
static int registry_rm(gp_client *c, int argc, char **argv)
{
    static const struct option opts[] = {{"tenant", required_argument, NULL, 't'},
                                         {"registry", required_argument, NULL, 'r'},
                                         {NULL, 0, NULL, 0}};
    registry_opts reg = {0};
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch != 't' && ch != 'r')
            return gp_usage_error("secret", "%s", SECRET_USAGE);
        *(ch == 't' ? &reg.tenant : &reg.registry) = optarg;
    }
    if (!reg.tenant || !reg.registry || optind != argc)
        return gp_usage_error("secret", "%s", SECRET_USAGE);
    char path[512];
    registry_path(c, path, sizeof path, reg.tenant, reg.registry);
    gp_response resp;
    int rc = gp_client_run(c, "DELETE", path, NULL, &resp);
    if (rc == GP_EXIT_OK && !c->json)
        printf("registry credential of %s for %s deleted\n", reg.tenant, reg.registry);
    gp_response_free(&resp);
    return rc;
}

int gp_cmd_secret(gp_client *c, int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "rm") == 0 && strncmp(argv[2], "--", 2) == 0)
        return registry_rm(c, argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "set") == 0)
        return secret_set(c, argc - 1, argv + 1);
    if (argc == 3 && strcmp(argv[1], "list") == 0)
        return secret_list(c, argv[2]);
    if (argc == 4 && strcmp(argv[1], "rm") == 0)
        return secret_rm(c, argv[2], argv[3]);
    return gp_usage_error("secret", "%s", SECRET_USAGE);
}

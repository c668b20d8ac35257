/* cmd_drain.c - gpupool nodes drain|undrain|resume, and gpupool drain
 * (the older spelling of the same).
 *
 * Slurm's `scontrol update nodename=X state=drain reason="..."` and
 * `state=resume`: each node named, or every node of a GPU type
 * (--all-of-type, the type's case as any: h100 is H100; the nodes from GET
 * /v1/nodes), gets its own POST /v1/nodes/NAME/drain, with the reason.
 * gpupoold keeps the reason, who drained (the token's user, else its
 * name) and since when on the node (`gpupool nodes`, `nodes show`) until
 * it is undrained.  A node refused does not stop the others: each gets
 * its line, and the exit code is the first refusal's:
 *
 *   $ gpupool nodes drain h100-a-0 h100-b-9 --reason "kernel 6.19"
 *   node h100-a-0 draining: kernel 6.19
 *   gpupool: error 404 not_found (field node): no node h100-b-9; did you mean h100-b-1?
 *   (exit 5)
 *
 * With --json each node's answer is printed as the server sent it.
 */
#include "cli/commands.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DRAIN_USAGE                                                                                                 \
    "usage: gpupool nodes drain NODE... [--reason TEXT]\n"                                                            \
    "       gpupool nodes drain --all-of-type TYPE [--reason TEXT]\n"                                                 \
    "       gpupool nodes undrain|resume NODE... | --all-of-type TYPE\n"                                              \
    "       gpupool drain NODE... [--reason TEXT] [--undo]"

typedef struct drain_request {
    bool drain;
    const char *reason; /* NULL: none said */
    const char *type;   /* --all-of-type, or NULL */
} drain_request;

/* One node drained or undrained: its line, the exit code. */
static int drain_one(gp_client *c, const char *node, const drain_request *q)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/nodes/%.100s/drain", node);
    json_t *body = json_pack("{s:b}", "drain", q->drain);
    if (q->reason)
        json_object_set_new(body, "reason", json_string(q->reason));
    gp_response resp;
    int rc = gp_client_run(c, "POST", path, body, &resp);
    json_decref(body);
    if (rc == GP_EXIT_OK && !c->json)
        printf("node %s %s%s%s\n", node, q->drain ? "draining" : "undrained", q->reason ? ": " : "",
               q->reason ? q->reason : "");
    gp_response_free(&resp);
    return rc;
}

/* Every node of q->type (in the fleet's order), each drained or undrained. */
static int drain_type(gp_client *c, const drain_request *q)
{
    gp_response resp;
    int rc = gp_client_run(c, "GET", "/v1/nodes", NULL, &resp);
    if (rc != GP_EXIT_OK) {
        gp_response_free(&resp);
        return rc;
    }
    size_t i, matched = 0;
    json_t *n;
    json_array_foreach(json_object_get(resp.body, "nodes"), i, n) {
        const char *type = json_string_value(json_object_get(n, "gpu_type"));
        if (!type || strcasecmp(type, q->type) != 0)
            continue;
        int one = drain_one(c, json_string_value(json_object_get(n, "name")), q);
        rc = rc == GP_EXIT_OK ? one : rc;
        matched++;
    }
    gp_response_free(&resp);
    if (matched > 0)
        return rc;
    fprintf(stderr, "gpupool: no node has GPU type %s (gpupool gpu-types lists the fleet's)\n", q->type);
    return GP_EXIT_NOT_FOUND;
}

/* The options and nodes of argv; q->drain comes in set.  -1 when they
 * are good, else the usage error's exit code. */
static int drain_args(int argc, char **argv, bool undo_allowed, drain_request *q)
{
    static const struct option opts[] = {{"reason", required_argument, NULL, 'r'},
                                         {"all-of-type", required_argument, NULL, 't'},
                                         {"undo", no_argument, NULL, 'u'},
                                         {NULL, 0, NULL, 0}};
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch == 'r')
            q->reason = optarg;
        else if (ch == 't')
            q->type = optarg;
        else if (ch == 'u' && undo_allowed)
            q->drain = false;
        else
            return gp_usage_error("drain", DRAIN_USAGE);
    }
    if ((optind < argc) == (q->type != NULL))
        return gp_usage_error("drain", "name the nodes, or --all-of-type TYPE (not both)\n" DRAIN_USAGE);
    if (q->reason && !q->drain)
        return gp_usage_error("drain", "--reason goes with a drain; an undrain clears it");
    return -1;
}

/* argv[0] the verb's name; drain: drain (true) or undrain (false). */
static int drain_nodes(gp_client *c, int argc, char **argv, bool drain, bool undo_allowed)
{
    drain_request q = {.drain = drain};
    int rc = drain_args(argc, argv, undo_allowed, &q);
    if (rc >= 0)
        return rc;
    if (q.type)
        return drain_type(c, &q);
    rc = GP_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        int one = drain_one(c, argv[i], &q);
        rc = rc == GP_EXIT_OK ? one : rc;
    }
    return rc;
}

int gp_cmd_nodes_drain(gp_client *c, int argc, char **argv)
{
    return drain_nodes(c, argc, argv, strcmp(argv[0], "drain") == 0, false);
}

int gp_cmd_drain(gp_client *c, int argc, char **argv)
{
    if (argc < 2)
        return gp_usage_error("drain", DRAIN_USAGE);
    return drain_nodes(c, argc, argv, true, true);
}

/* image_cmd.c - `gpupool-agent image pull|list|prune`: the pull the agent
 * runs as a child, speaking JSON lines on stdout, and the operator's look
 * at the store and its clean-up (image_store.h; docs/agent.md "Images").
 *
 *   image pull --store DIR [--max-gib N] [--pull-timeout-s S]
 *              [--insecure-registry HOST]... [--hold REPLICA] [--warm]
 *              [--creds-stdin] REF
 *     {"phase":"pulling","done_bytes":N,"total_bytes":M}      as bytes arrive
 *     {"phase":"ready","digest":"sha256:...","rootfs":"...","config":{...},"hit":B,"bytes":N}
 *     {"phase":"failed","reason":"not_found|unauthorized|no_space|bad_ref|other","message":"..."}
 *   image list --store DIR
 *   image prune --store DIR [--max-gib N]
 *   image release --store DIR --hold REPLICA DIGEST
 *
 * --creds-stdin reads {"username": U, "password": P} from stdin: a
 * credential is never an argument (argv is world-readable in /proc).
 */
#define _GNU_SOURCE
#include "agent/image/image_store.h"
#include "util/file.h"

#include <dirent.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: gpupool-agent image pull --store DIR [--max-gib N] [--pull-timeout-s S]\n"
    "                                [--insecure-registry HOST]... [--hold REPLICA] [--warm] [--creds-stdin] REF\n"
    "       gpupool-agent image list --store DIR\n"
    "       gpupool-agent image prune --store DIR [--max-gib N]\n"
    "       gpupool-agent image release --store DIR --hold REPLICA DIGEST\n"
    "\n"
    "The node's image store (docs/agent.md \"Images\").  REF is docker://REGISTRY/NAME[:TAG][@sha256:HEX]\n"
    "or oci:/ABS/PATH[:TAG].  pull prints JSON lines: progress, then phase ready or failed.\n"
    "\n"
    "  --store DIR               the store's folder (made 0700 when missing)\n"
    "  --max-gib N               the store's bound in GiB (decimals allowed; default none); prune: evict\n"
    "                            down to N (default: every image no replica holds)\n"
    "  --pull-timeout-s S        the whole pull's limit; skopeo is killed past it (default 900)\n"
    "  --insecure-registry HOST  reach HOST (as in the reference, with its port) without TLS verification\n"
    "  --hold REPLICA            pull: hold the image for replica REPLICA before it is reported ready;\n"
    "                            release: drop that hold (a replica gone while the agent was down)\n"
    "  --warm                    a hint's pre-pull: counted apart from replicas' hits and misses\n"
    "  --creds-stdin             read {\"username\":..., \"password\":...} from stdin\n";

typedef struct image_args {
    const char *command, *store, *ref;
    double max_gib;
    bool creds_stdin;
    gp_image_pull_options pull;
} image_args;

static int usage_error(const char *what, const char *value)
{
    fprintf(stderr, "gpupool-agent image: %s%s%s\n", what, value ? ": " : "", value ? value : "");
    return 2;
}

static int parse_option(image_args *a, int c)
{
    char *end;
    switch (c) {
    case 's': a->store = optarg; return -1;
    case 'g':
        a->max_gib = strtod(optarg, &end);
        return *end || !(a->max_gib >= 0 && a->max_gib < 1e9) ? usage_error("bad value for --max-gib", optarg) : -1;
    case 't': {
        long v = strtol(optarg, &end, 10);
        a->pull.timeout_s = (int)v;
        return *end || v < 1 || v > 86400 ? usage_error("bad value for --pull-timeout-s (1..86400)", optarg) : -1;
    }
    case 'i':
        if (a->pull.n_insecure == GP_IMAGE_INSECURE_MAX)
            return usage_error("too many --insecure-registry", optarg);
        a->pull.insecure[a->pull.n_insecure++] = optarg;
        return -1;
    case 'H': a->pull.holder = optarg; return -1;
    case 'w': a->pull.warm = true; return -1;
    case 'c': a->creds_stdin = true; return -1;
    case 'h': fputs(USAGE, stdout); return 0;
    default: fputs(USAGE, stderr); return 2;
    }
}

static int parse_args(int argc, char **argv, image_args *a)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},          {"max-gib", required_argument, NULL, 'g'},
        {"pull-timeout-s", required_argument, NULL, 't'}, {"insecure-registry", required_argument, NULL, 'i'},
        {"hold", required_argument, NULL, 'H'},           {"warm", no_argument, NULL, 'w'},
        {"creds-stdin", no_argument, NULL, 'c'},          {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc = -1;
    optind = 1;
    while (rc == -1 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
        rc = parse_option(a, c);
    if (rc != -1)
        return rc;
    if (optind >= argc)
        return usage_error("a command is needed (pull, list, prune, release)", NULL);
    a->command = argv[optind++];
    bool pull = strcmp(a->command, "pull") == 0, release = strcmp(a->command, "release") == 0;
    if ((pull || release) && optind < argc)
        a->ref = argv[optind++];
    if (optind < argc)
        return usage_error("unexpected argument", argv[optind]);
    if (!a->store)
        return usage_error("--store DIR is required", NULL);
    if (pull && !a->ref)
        return usage_error("pull needs a reference", NULL);
    if (release && (!a->ref || !a->pull.holder))
        return usage_error("release needs --hold REPLICA and a digest", NULL);
    return -1;
}

static void print_line(json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (text)
        printf("%s\n", text);
    free(text);
    fflush(stdout);
}

/* A line when the bytes changed (the store calls every tick). */
static void on_progress(void *ctx, int64_t done, int64_t total)
{
    (void)ctx;
    static int64_t last = -1;
    if (done == last)
        return;
    last = done;
    print_line(json_pack("{s:s, s:I, s:I}", "phase", "pulling", "done_bytes", (json_int_t)done, "total_bytes",
                         (json_int_t)total));
}

static int failed(gp_image_failure reason, const char *message)
{
    print_line(json_pack("{s:s, s:s, s:s}", "phase", "failed", "reason", gp_image_failure_name(reason), "message",
                         message));
    return 1;
}

/* {"username", "password"} from stdin into the options; the text wiped. */
static json_t *read_creds(image_args *a)
{
    char *text = NULL;
    size_t len = 0;
    if (gp_file_read_stream(stdin, "stdin", &text, &len, NULL) != GP_OK)
        return NULL;
    json_t *o = json_loadb(text, len, 0, NULL);
    explicit_bzero(text, len);
    free(text);
    a->pull.username = json_string_value(json_object_get(o, "username"));
    a->pull.password = json_string_value(json_object_get(o, "password"));
    if (!a->pull.username || !a->pull.password) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int cmd_pull(image_args *a, gp_image_store *s)
{
    json_t *creds = a->creds_stdin ? read_creds(a) : NULL;
    if (a->creds_stdin && !creds)
        return failed(GP_IMAGE_OTHER, "--creds-stdin: stdin must be {\"username\": \"...\", \"password\": \"...\"}");
    a->pull.progress = on_progress;
    static gp_image image;
    char message[512];
    gp_image_failure f = gp_image_store_pull(s, a->ref, &a->pull, &image, message, sizeof message);
    json_decref(creds); /* jansson zeroes nothing: the strings die with the process */
    if (f != GP_IMAGE_READY)
        return failed(f, message);
    json_t *meta = json_load_file(image.config_path, 0, NULL);
    print_line(json_pack("{s:s, s:s, s:s, s:O?, s:b, s:I}", "phase", "ready", "digest", image.digest, "rootfs",
                         image.rootfs, "config", json_object_get(meta, "config"), "hit", image.hit, "bytes",
                         (json_int_t)image.bytes));
    json_decref(meta);
    return 0;
}

static json_t *holders_json(const char *store, const char *hex)
{
    json_t *list = json_array();
    char path[GP_IMAGE_PATH_MAX];
    snprintf(path, sizeof path, "%s/holds/%s", store, hex);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.')
            json_array_append_new(list, json_string(e->d_name));
    if (d)
        closedir(d);
    return list;
}

static int cmd_list(image_args *a, gp_image_store *s)
{
    gp_image *images = NULL;
    size_t n = 0;
    int64_t used = 0;
    gp_image_counters c;
    gp_error err;
    if (gp_image_store_list(s, &images, &n, &used, &err) != GP_OK || gp_image_store_counters(s, &c, &err) != GP_OK) {
        fprintf(stderr, "gpupool-agent image: %s\n", err.message);
        return 1;
    }
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:s, s:s, s:I, s:I, s:o}", "digest", images[i].digest, "ref",
                                              images[i].ref, "bytes", (json_int_t)images[i].bytes, "last_use_ms",
                                              (json_int_t)images[i].last_use_ms, "holders",
                                              holders_json(a->store, images[i].digest + 7)));
    free(images);
    int64_t asked = c.hits + c.misses;
    json_t *o = json_pack("{s:o, s:I, s:I, s:I, s:I}", "images", list, "used_bytes", (json_int_t)used, "hits",
                          (json_int_t)c.hits, "misses", (json_int_t)c.misses, "warm", (json_int_t)c.warm);
    json_object_set_new(o, "hit_rate", asked ? json_real((double)c.hits / (double)asked) : json_null());
    char *text = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    puts(text ? text : "{}");
    free(text);
    return 0;
}

static int cmd_prune(image_args *a, gp_image_store *s)
{
    size_t removed = 0;
    gp_error err;
    gp_err rc = gp_image_store_prune(s, (int64_t)llround(a->max_gib * (1 << 30)), &removed, &err);
    gp_image *images = NULL;
    size_t n = 0;
    int64_t used = 0;
    gp_image_store_list(s, &images, &n, &used, NULL);
    free(images);
    print_line(json_pack("{s:I, s:I, s:I}", "removed", (json_int_t)removed, "images", (json_int_t)n, "used_bytes",
                         (json_int_t)used));
    if (rc != GP_OK)
        fprintf(stderr, "gpupool-agent image: %s\n", err.message);
    return rc == GP_OK ? 0 : 1;
}

static int cmd_release(image_args *a, gp_image_store *s)
{
    gp_error err;
    if (gp_image_store_release(s, a->ref, a->pull.holder, &err) != GP_OK) {
        fprintf(stderr, "gpupool-agent image: %s (field %s)\n", err.message, err.field);
        return 1;
    }
    return 0;
}

int gp_image_main(int argc, char **argv)
{
    image_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc != -1)
        return rc;
    gp_image_store *s;
    gp_error err;
    if (gp_image_store_open(a.store, (int64_t)llround(a.max_gib * (1 << 30)), &s, &err) != GP_OK) {
        if (strcmp(a.command, "pull") == 0)
            return failed(GP_IMAGE_OTHER, err.message);
        fprintf(stderr, "gpupool-agent image: %s (field %s)\n", err.message, err.field);
        return 1;
    }
    if (strcmp(a.command, "pull") == 0)
        rc = cmd_pull(&a, s);
    else if (strcmp(a.command, "list") == 0)
        rc = cmd_list(&a, s);
    else if (strcmp(a.command, "prune") == 0)
        rc = cmd_prune(&a, s);
    else if (strcmp(a.command, "release") == 0)
        rc = cmd_release(&a, s);
    else
        rc = usage_error("unknown command (pull, list, prune, release)", a.command);
    gp_image_store_close(s);
    return rc;
}

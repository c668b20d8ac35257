/* agent_scratch.c - a node's leftover replica folders swept: working
 * folders (WORK/NODE/job7-r1) and private /tmp folders
 * (STATE/NODE/scratch/job7-r1-1795523111) that no live replica holds,
 * once --keep-scratch-s has passed since their replica ended (the
 * supervisor stamps them then; with 0 it removes them itself, and this
 * sweep only finds what a killed supervisor left).  Removed as their
 * owner (scratch.h).
 */
#include "agent/agent_node.h"
#include "agent/scratch.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define GP__SWEEP_EVERY_MS 10000

/* A live replica of the node holds the folder named name. */
static bool gp__held(const gp_node *n, const char *name, bool scratch)
{
    char mine[96];
    for (size_t i = 0; i < n->n_replicas; i++) {
        const gp_replica *r = n->replicas[i];
        if (r->ended)
            continue;
        if (scratch)
            snprintf(mine, sizeof mine, "%s", r->name);
        else
            snprintf(mine, sizeof mine, "job%llu-r%u", (unsigned long long)r->job, r->replica);
        if (strcmp(mine, name) == 0)
            return true;
    }
    return false;
}

/* A folder name the agent made: "job7-r1" (work) or a run name (scratch). */
static bool gp__ours(const char *name, bool scratch)
{
    uint64_t job;
    unsigned replica;
    int64_t bind;
    int end = 0;
    if (scratch)
        return gp_state_replica_parse(name, &job, &replica, &bind);
    unsigned long long j;
    return sscanf(name, "job%llu-r%u%n", &j, &replica, &end) == 2 && name[end] == '\0';
}

static void gp__sweep(const gp_node *n, const char *root, bool scratch)
{
    DIR *d = opendir(root);
    struct dirent *e;
    char path[GP_STATE_PATH_MAX];
    time_t before = time(NULL) - n->opt->keep_scratch_s;
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        if (!gp__ours(e->d_name, scratch) || gp__held(n, e->d_name, scratch) || lstat(path, &st) != 0 ||
            st.st_mtime > before)
            continue;
        if (!gp_scratch_remove(path))
            gp_agent_log(n, "cannot remove %s", path);
    }
    if (d)
        closedir(d);
}

int64_t gp_node_sweep_scratch(gp_node *n, int64_t now_ms)
{
    if (now_ms < n->next_sweep_ms)
        return n->next_sweep_ms;
    char root[GP_STATE_PATH_MAX];
    snprintf(root, sizeof root, "%s/scratch", n->dir);
    gp__sweep(n, root, true);
    if (n->opt->work_root[0])
        snprintf(root, sizeof root, "%s/%s", n->opt->work_root, n->name);
    else
        snprintf(root, sizeof root, "%s/work", n->dir);
    gp__sweep(n, root, false);
    n->next_sweep_ms = now_ms + GP__SWEEP_EVERY_MS;
    return n->next_sweep_ms;
}

/* agent_scratch.c - a node's leftover replica folders swept: working
 * folders (WORK/NODE/job7-r1-1795523111) and private /tmp folders
 * (STATE/NODE/scratch/job7-r1-1795523111), both named for their run, that
 * no live replica holds, once --keep-scratch-s has passed since their
 * replica ended (the
 * supervisor stamps them then; with 0 it removes them itself, and this
 * sweep only finds what a killed supervisor left).  Removed as their
 * owner (scratch.h).
 */
#include "agent/agent_node.h"
#include "agent/launch/scratch.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define GP__SWEEP_EVERY_MS 10000

/* A folder named for a run (gp_state_replica_name) that is not live. */
static bool gp__left_over(const gp_node *n, const char *name)
{
    uint64_t job;
    unsigned replica;
    int64_t bind;
    if (!gp_state_replica_parse(name, &job, &replica, &bind))
        return false;
    for (size_t i = 0; i < n->n_replicas; i++)
        if (!n->replicas[i]->ended && strcmp(n->replicas[i]->name, name) == 0)
            return false;
    return true;
}

static void gp__sweep(const gp_node *n, const char *root)
{
    DIR *d = opendir(root);
    struct dirent *e;
    char path[GP_STATE_PATH_MAX];
    time_t before = time(NULL) - n->opt->keep_scratch_s;
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        if (!gp__left_over(n, e->d_name) || lstat(path, &st) != 0 || st.st_mtime > before)
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
    gp__sweep(n, root);
    if (n->opt->work_root[0])
        snprintf(root, sizeof root, "%s/%s", n->opt->work_root, n->name);
    else
        snprintf(root, sizeof root, "%s/work", n->dir);
    gp__sweep(n, root);
    n->next_sweep_ms = now_ms + GP__SWEEP_EVERY_MS;
    return n->next_sweep_ms;
}

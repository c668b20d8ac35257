/* agent_share.c - whose GPU processes are whose, and who is over its
 * share (agent_share.h). */
#include "agent/agent_share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP__ANCESTRY_MAX 64

int64_t gp_share_memory_mib(int milli_gpus, int64_t gpu_memory_mib)
{
    if (milli_gpus <= 0 || gpu_memory_mib <= 0)
        return 0;
    return (int64_t)milli_gpus * gpu_memory_mib / 1000;
}

/* Has the cgroup path (after the second ':') `name` as a component? */
static bool gp__path_has(const char *path, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = strchr(path, '/'); p; p = strchr(p + 1, '/'))
        if (strncmp(p + 1, name, len) == 0 && (p[1 + len] == '/' || p[1 + len] == '\0' || p[1 + len] == '\n'))
            return true;
    return false;
}

/* Is pid in the cgroup called name (any hierarchy)? */
static bool gp__in_cgroup(const char *proc_root, pid_t pid, const char *name)
{
    char path[256], line[1024];
    snprintf(path, sizeof path, "%s/%d/cgroup", proc_root, (int)pid);
    FILE *f = fopen(path, "r");
    bool in = false;
    while (f && !in && fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        colon = colon ? strchr(colon + 1, ':') : NULL;
        in = colon && gp__path_has(colon + 1, name);
    }
    if (f)
        fclose(f);
    return in;
}

/* The parent of pid from /proc/PID/stat (field 4), or 0. */
static pid_t gp__parent(const char *proc_root, pid_t pid)
{
    char path[256], text[1024];
    snprintf(path, sizeof path, "%s/%d/stat", proc_root, (int)pid);
    FILE *f = fopen(path, "r");
    size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[len] = '\0';
    const char *p = strrchr(text, ')'); /* the command may hold spaces and ')' */
    int parent = 0;
    char state;
    if (!p || sscanf(p + 1, " %c %d", &state, &parent) != 2)
        return 0;
    return parent;
}

int gp_share_owner(const char *proc_root, pid_t pid, const gp_share_replica *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].cgroup && r[i].cgroup[0] && gp__in_cgroup(proc_root, pid, r[i].cgroup))
            return (int)i;
    pid_t p = pid;
    for (int up = 0; up < GP__ANCESTRY_MAX && p > 1; up++) {
        for (size_t i = 0; i < n; i++)
            if (r[i].pid > 1 && r[i].pid == p)
                return (int)i;
        p = gp__parent(proc_root, p);
    }
    return -1;
}

void gp_share_sum(const char *proc_root, const gp_telemetry *t, gp_share_replica *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        r[i].used_mib = 0;
    for (int k = 0; t && k < t->n_processes; k++) {
        const gp_gpu_process *proc = &t->processes[k];
        int i = gp_share_owner(proc_root, proc->pid, r, n);
        if (i >= 0 && r[i].uuid && strcmp(proc->uuid, r[i].uuid) == 0 && proc->memory_used_mib > 0)
            r[i].used_mib += proc->memory_used_mib;
    }
}

bool gp_share_over(const gp_share_replica *r)
{
    return r->cap_mib != GP_SHARE_NO_CAP && r->used_mib > r->cap_mib;
}

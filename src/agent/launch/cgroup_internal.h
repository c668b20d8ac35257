/* cgroup_internal.h - what cgroup.c shares with its two backends,
 * cgroup_v1.c and cgroup_v2.c (private: gp__ names). */
#ifndef GP_AGENT_CGROUP_INTERNAL_H
#define GP_AGENT_CGROUP_INTERNAL_H

#include "agent/launch/cgroup.h"

struct gp_cgroup {
    gp_cgroup_layout layout;
    /* v2: dir[GP_CGROUP_MEMORY] is the one folder, the others are "";
     * v1: one folder per mounted controller, "" for the others */
    char dir[GP_CGROUP_CTRL_COUNT][GP_CGROUP_PATH_MAX];
    int procs_fd[GP_CGROUP_CTRL_COUNT]; /* cgroup.procs of each folder, O_CLOEXEC; -1 */
};

/* Writes text to dir/file; 0 or an errno. */
int gp__cgroup_write(const char *dir, const char *file, const char *text);
/* Reads dir/file into buf (NUL-terminated); 0 or an errno. */
int gp__cgroup_read(const char *dir, const char *file, char *buf, size_t len);
/* The number after "key " on a line of dir/file ("oom_kill 3"); 0 when absent. */
unsigned long gp__cgroup_read_key(const char *dir, const char *file, const char *key);
/* mkdir of every missing folder of path (0755); 0 or an errno. */
int gp__cgroup_mkdirs(const char *path);
/* SIGKILLs each pid listed in dir/cgroup.procs; the number listed. */
size_t gp__cgroup_kill_listed(const char *dir);
/* Sleeps ms milliseconds (the bounded waits of the kill and rmdir). */
void gp__cgroup_nap(int ms);

gp_err gp__cgroup_v1_create(gp_cgroup *cg, const gp_cgroup_host *host, const char *name,
                            const gp_cgroup_limits *limits, gp_error *err);
gp_err gp__cgroup_v1_limit_devices(gp_cgroup *cg, const gp_device_rule *rules, size_t n, gp_error *err);
bool gp__cgroup_v1_kill(gp_cgroup *cg);
bool gp__cgroup_v1_oom_killed(const gp_cgroup *cg);

gp_err gp__cgroup_v2_create(gp_cgroup *cg, const gp_cgroup_host *host, const char *name,
                            const gp_cgroup_limits *limits, gp_error *err);
gp_err gp__cgroup_v2_limit_devices(gp_cgroup *cg, const gp_device_rule *rules, size_t n, gp_error *err);
bool gp__cgroup_v2_kill(gp_cgroup *cg);
bool gp__cgroup_v2_oom_killed(const gp_cgroup *cg);

#endif

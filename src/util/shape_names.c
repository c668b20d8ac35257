/* shape_names.c - the topology and isolation names (shape_names.h). */
#include "util/shape_names.h"

#include <string.h>

const char *const gp_topology_names[GP_TOPOLOGY_NAMES] = {"any", "block", "nvlink"};
const char *const gp_isolation_names[GP_ISOLATION_NAMES] = {"exclusive", "mig", "mps", "timeslice"};
const char gp_share_whole[] = "whole";

int gp_shape_name_index(const char *const *names, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* exit_reason.c - the exit reasons' names (exit_reason.h). */
#include "util/exit_reason.h"

#include <stdio.h>
#include <string.h>

static const char *const EXIT_REASON_NAMES[GP_EXIT_REASONS] = {"exited",     "signalled", "oom", "killed_after_grace",
                                                               "time_limit", "gpu_memory", "image_pull",
                                                               "checkpointed"};

const char *gp_exit_reason_name(gp_exit_reason r)
{
    return r >= 0 && r < GP_EXIT_REASONS ? EXIT_REASON_NAMES[r] : NULL;
}

bool gp_exit_reason_parse(const char *name, gp_exit_reason *out)
{
    for (int r = 0; name && r < GP_EXIT_REASONS; r++)
        if (strcmp(name, EXIT_REASON_NAMES[r]) == 0) {
            *out = (gp_exit_reason)r;
            return true;
        }
    return false;
}

void gp_exit_reason_list(char *out, size_t cap)
{
    size_t used = 0;
    if (cap)
        out[0] = '\0';
    for (int r = 0; r < GP_EXIT_REASONS && used < cap; r++) {
        const char *sep = r == 0 ? "" : r == GP_EXIT_REASONS - 1 ? " or " : ", ";
        int w = snprintf(out + used, cap - used, "%s%s", sep, EXIT_REASON_NAMES[r]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* agent_clock.c - the agent's clocks (agent_clock.h). */
#include "agent/supervise/agent_clock.h"

#include <time.h>

static int64_t gp__clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t gp_agent_mono_ms(void)
{
    return gp__clock_ms(CLOCK_MONOTONIC);
}

int64_t gp_agent_real_ms(void)
{
    return gp__clock_ms(CLOCK_REALTIME);
}

int64_t gp_agent_boot_ms(void)
{
    return gp__clock_ms(CLOCK_BOOTTIME);
}

/* clock.c - clock.h's wall clock and wait deadlines. */
#include "server/clock.h"

int64_t gp_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec gp_deadline_after(clockid_t clock, int64_t wait_ms)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_sec += wait_ms / 1000;
    ts.tv_nsec += (wait_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

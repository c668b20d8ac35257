/* clock.h - gpupoold's clocks: wall-clock milliseconds (engine time is
 * its whole seconds) and the deadlines of timed waits.  Any thread; no
 * state.  Every file of src/server may call these and they call nothing
 * of src/server back.
 */
#ifndef GP_SERVER_CLOCK_H
#define GP_SERVER_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_REALTIME in milliseconds since the epoch. */
int64_t gp_wall_ms(void);
/* The time on `clock` wait_ms from now, for pthread_cond_timedwait (the
 * waits of the loop, the agents' long-polls and the job logs' share it). */
struct timespec gp_deadline_after(clockid_t clock, int64_t wait_ms);

#endif

/* agent_clock.h - the agent's two clocks, in milliseconds: monotonic for
 * timers and deadlines inside one process, real (epoch) time for what
 * crosses processes or reaches gpupoold (kill deadlines, checkpoint
 * times, the sim's telemetry). */
#ifndef GP_AGENT_CLOCK_H
#define GP_AGENT_CLOCK_H

#include <stdint.h>

int64_t gp_agent_mono_ms(void);
int64_t gp_agent_real_ms(void);

#endif

/* agent_clock.h - the agent's clocks, in milliseconds: monotonic for
 * timers and deadlines inside one process, real (epoch) time for what
 * crosses processes or reaches gpupoold (kill deadlines, checkpoint
 * times, the sim's telemetry), and time since boot (CLOCK_BOOTTIME: one
 * for every process of the host, never stepped) for the partition clock
 * the agent and the supervisors share (agent_state.h). */
#ifndef GP_AGENT_CLOCK_H
#define GP_AGENT_CLOCK_H

#include <stdint.h>

int64_t gp_agent_mono_ms(void);
int64_t gp_agent_real_ms(void);
int64_t gp_agent_boot_ms(void);

#endif

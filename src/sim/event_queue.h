/* event_queue.h - the simulator's future events, earliest first.
 *
 * A binary min-heap of (time, sequence) so events at the same time come
 * out in the order they were pushed: runs are deterministic.  Arrivals are
 * not in here (they are read in order from the sorted trace); this holds
 * job ends, checkpoints and grace wake-ups, each stamped with the job's
 * epoch so an end scheduled before a preemption is recognised as stale.
 *
 * Ownership: the queue owns its array; gp_event_queue_free releases it.
 * A zeroed struct is an empty queue.
 */
#ifndef GP_SIM_EVENT_QUEUE_H
#define GP_SIM_EVENT_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum gp_event_kind { GP_EV_END = 0, GP_EV_CHECKPOINT, GP_EV_WAKE } gp_event_kind;

typedef struct gp_event {
    int64_t time;
    uint64_t seq;
    uint32_t job;    /* index into the trace */
    uint32_t epoch;  /* the job's run this event belongs to */
    uint8_t kind;    /* gp_event_kind */
} gp_event;

typedef struct gp_event_queue {
    gp_event *heap;
    size_t n, cap;
    uint64_t next_seq;
} gp_event_queue;

bool gp_event_push(gp_event_queue *q, int64_t time, gp_event_kind kind, uint32_t job, uint32_t epoch);
/* The earliest event, or NULL when empty (valid until the next push/pop). */
const gp_event *gp_event_peek(const gp_event_queue *q);
void gp_event_pop(gp_event_queue *q);
void gp_event_queue_free(gp_event_queue *q);

#endif

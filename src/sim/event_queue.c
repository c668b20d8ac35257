/* event_queue.c - a binary min-heap of simulator events (see event_queue.h). */
#include "sim/event_queue.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

static bool before(const gp_event *a, const gp_event *b)
{
    return a->time != b->time ? a->time < b->time : a->seq < b->seq;
}

static void swap(gp_event *a, gp_event *b)
{
    gp_event t = *a;
    *a = *b;
    *b = t;
}

bool gp_event_push(gp_event_queue *q, int64_t time, gp_event_kind kind, uint32_t job, uint32_t epoch)
{
    gp_event *heap = gp_grow(q->heap, &q->cap, q->n + 1, sizeof *heap);
    if (!heap)
        return false;
    q->heap = heap;
    size_t i = q->n++;
    q->heap[i] = (gp_event){.time = time, .seq = q->next_seq++, .job = job, .epoch = epoch, .kind = (uint8_t)kind};
    while (i > 0 && before(&q->heap[i], &q->heap[(i - 1) / 2])) {
        swap(&q->heap[i], &q->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    return true;
}

const gp_event *gp_event_peek(const gp_event_queue *q)
{
    return q->n ? &q->heap[0] : NULL;
}

void gp_event_pop(gp_event_queue *q)
{
    if (q->n == 0)
        return;
    q->heap[0] = q->heap[--q->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n && before(&q->heap[l], &q->heap[m]))
            m = l;
        if (r < q->n && before(&q->heap[r], &q->heap[m]))
            m = r;
        if (m == i)
            break;
        swap(&q->heap[i], &q->heap[m]);
        i = m;
    }
}

void gp_event_queue_free(gp_event_queue *q)
{
    free(q->heap);
    memset(q, 0, sizeof *q);
}

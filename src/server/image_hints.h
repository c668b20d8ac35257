/* image_hints.h - which images gpupoold tells a node to warm before a job
 * asks for them: the long-poll answer's "image_hints" (docs/api.md
 * "Agents", docs/agent.md "Images").
 *
 * The hint of a node of GPU type T is, top K = GP_IMAGE_HINTS_K by
 * number of jobs (ties: the oldest pending job's first):
 *   - the images of pending jobs that accept T (gpu_types empty or
 *     naming T), one count per job, and
 *   - the images of jobs started in the last hour on nodes of type T
 *     (noted as an agent's poll first carries the job), one per job,
 * only docker:// and oci: references, and only images whose registry the
 * job's tenant (or an ancestor) holds no credential for: a private image
 * is warmed by its own job only, so no hint takes a tenant's image to a
 * node that may never run its job, and none needs a credential.
 *
 * When: with every heartbeat answer (a queued job touches no node, so
 * no long-poll answers it), so a node hears of a newly queued job within
 * a heartbeat period, and with every long-poll answer.
 *
 * Cost: the list is kept per GPU type and made again by a heartbeat's
 * answer when older than GP_IMAGE_HINTS_STALE_MS, never by a long-poll's
 * (a bind's answer waits for no store read), by one thread at a time per
 * type (the others answer the last one made); bench/image/hints measured a
 * remake with 1,000 pending jobs at 30-64 ms on a loaded 2-core VM;
 * making it reads one page (GP_IMAGE_HINTS_SCAN) of pending jobs from a
 * reader and one credential lookup per distinct tenant and registry.
 *
 * Worked example: H100 nodes; pending jobs 7 (research, docker://r/a:1,
 * H100), 8 (research, docker://r/a:1, any type), 9 (vision, docker://r/b:2
 * with vision holding a credential for r) and 10 (A100 only, docker://r/c);
 * started on H100 nodes in the last hour: three jobs of docker://r/d:3.
 * An H100 node's hint: ["docker://r/d:3", "docker://r/a:1"] (3 jobs, 2
 * jobs); r/b:2 is private to vision, r/c is for A100 nodes.
 *
 * Ownership: the hints are the server's (gp_server.image_hints), guarded
 * by their own mutex: any API thread may call.  Strings are borrowed for
 * the call; gp_image_hints_for returns a new reference the caller owns.
 */
#ifndef GP_SERVER_IMAGE_HINTS_H
#define GP_SERVER_IMAGE_HINTS_H

#include "core/types.h"
#include "server/readers.h"

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#define GP_IMAGE_HINTS_K 4         /* images per hint (docs/agent.md "Images" says why 4) */
#define GP_IMAGE_HINTS_STARTS 1024 /* the newest starts remembered */
#define GP_IMAGE_HINTS_SCAN 1000   /* pending jobs read per making */
#define GP_IMAGE_HINTS_WINDOW_MS (3600 * 1000LL)
#define GP_IMAGE_HINTS_STALE_MS 5000 /* a hint is made again at most this often per GPU type */

typedef struct gp_image_hints_start {
    int64_t at_ms;
    uint64_t job;
    char gpu_type[GP_NAME_MAX];
    char tenant[GP_PATH_MAX];
    char *image; /* malloc'd; NULL: an empty slot */
} gp_image_hints_start;

typedef struct gp_image_hints_cached {
    char gpu_type[GP_NAME_MAX];
    int64_t made_ms;
    json_t *hints;    /* the array; NULL: an empty slot */
} gp_image_hints_cached;

typedef struct gp_image_hints {
    pthread_mutex_t lock;
    gp_image_hints_start starts[GP_IMAGE_HINTS_STARTS]; /* a ring */
    size_t next_start;
    gp_image_hints_cached cached[GP_MAX_GPU_TYPES];
    json_t *node_types; /* node name -> its GPU type, as its last poll had it */
    char making[GP_MAX_GPU_TYPES][GP_NAME_MAX]; /* types a thread is making a hint of now ("" free) */
} gp_image_hints;

void gp_image_hints_init(gp_image_hints *h);
void gp_image_hints_free(gp_image_hints *h);

/* Job `job` of tenant, with image, starts on a node of gpu_type (an
 * agent's poll carries it for the first time); a job noted already is
 * not counted again. */
void gp_image_hints_note_start(gp_image_hints *h, const char *gpu_type, uint64_t job, const char *tenant,
                               const char *image, int64_t now_ms);

/* The hint for node's long-poll answer, node a node of gpu_type: the one
 * last made for gpu_type, [] when none (a new reference).  Never made
 * here, so a bind's answer waits for no store read; remembers the node's
 * type for gp_image_hints_for_node. */
json_t *gp_image_hints_for(gp_image_hints *h, const char *node, const char *gpu_type);
/* The hint for node's heartbeat answer (a new reference): for the type its
 * last poll had, made again with a reader of readers when older than
 * GP_IMAGE_HINTS_STALE_MS; [] for a node that has not polled. */
json_t *gp_image_hints_for_node(gp_image_hints *h, gp_readers *readers, const char *node, int64_t now_ms);

#endif

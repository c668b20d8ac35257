/* placement.h - where a job runs, as the API and the store's job rows show it.
 *
 *     [{"node": "h100-a-0", "gpus": ["h100-a-0/0", ...]},            exclusive replica
 *      {"node": "a100-c-0", "gpus": ["a100-c-0/3"],
 *       "slice": {"kind": "mig", "milli_gpus": 142,
 *                 "mig_profile": "1g.10gb", "mig_start": 0}}]        shared replica
 *
 * One entry per replica; null when the job holds no GPUs.  The daemon
 * writes it into job rows, and a restart or a replay compares the
 * replayed engine's with the row's (as GP_JSON_CANONICAL text).
 *
 * Ownership: returns a new reference.
 */
#ifndef GP_EVENTLOG_PLACEMENT_H
#define GP_EVENTLOG_PLACEMENT_H

#include "core/engine.h"

#include <jansson.h>

json_t *gp_placement_json(const gp_engine *e, uint64_t id, const gp_job_info *info);

#endif

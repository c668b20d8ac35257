/* job_handle.h - how a person names jobs to act on: a job, or members of a job array.
 *
 * Slurm's spelling, for cancel, hold, release, update and job:
 *
 *     "13"           job 13; when 13 is an array's id (its first member's),
 *                    the commands that act take the whole array
 *     "13_4"         member 4 of array 13
 *     "13_[0-19]"    members 0..19 of array 13 (quote it in a shell: [ ] glob)
 *     "13_[1,3,5-7]" members 1, 3, 5, 6 and 7; "13_1,3,5-7" is the same
 *     "13_[5-3]"     false: "13_[5-3]: 5-3: the range ends before it starts"
 *
 * The members are an index set (util/index_set.h: the parser gpupoold's
 * /v1/arrays/{id}?index= uses too).  Pure: nothing is allocated, buffers
 * are the caller's.
 */
#ifndef GP_CLI_JOB_HANDLE_H
#define GP_CLI_JOB_HANDLE_H

#include "util/index_set.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gp_job_handle {
    uint64_t id;        /* the job, or the array when members */
    bool members;       /* ID_N or ID_[SET] */
    gp_index_set index; /* the members named, with members */
} gp_job_handle;

/* False with why[cap] naming the text when it is none of the forms above. */
bool gp_job_handle_parse(const char *text, gp_job_handle *out, char *why, size_t cap);

#endif

/* fuzz_replay.c - runs a fuzz target's corpus once, without libFuzzer.
 *
 *   fuzz_replay_job_json FILE...
 *
 * Feeds each file to LLVMFuzzerTestOneInput() (the target's own code, built
 * with the project's compiler and, in the ASan tree, its sanitizers) and
 * requires that each one reached the engine stage (gp_fuzz_reached_engine):
 * the seeds are valid inputs, so a seed that stops at the parsers or is
 * refused by the engine means the harness no longer exercises the engine.
 * Prints how many inputs reached it; exits 1 naming each seed that did not.
 */
#include "fuzz_harness.h"

#include <stdio.h>
#include <stdlib.h>

static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    *size = len;
    return buf;
}

int main(int argc, char **argv)
{
    int reached = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        size_t size;
        unsigned char *data = read_file(argv[i], &size);
        if (!data) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            return 1;
        }
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        if (gp_fuzz_reached_engine()) {
            reached++;
        } else {
            fprintf(stderr, "%s: did not reach the engine stage\n", argv[i]);
            failed++;
        }
    }
    printf("%d of %d inputs reached the engine stage\n", reached, argc - 1);
    return failed || argc < 2 ? 1 : 0;
}

/* supervise_main.c - `gpupool-supervise DIR`: the replica's supervisor as a
 * small binary of its own (supervise.h).
 *
 * The agent used to exec itself (`gpupool-agent supervise DIR`) for every
 * replica it starts; it links libcurl, gnutls and libmicrohttpd, whose
 * loading and constructors took 5-7 ms of each start on the project's VM
 * (bench/RESULTS.md, session 27), against under 1 ms for this binary,
 * which links jansson and the launcher only.  The agent runs this one when
 * it lies beside it, and falls back to itself when not.
 */
#include "agent/supervise/supervise.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gpupool-supervise DIR (started by gpupool-agent, see docs/agent.md)\n");
        return 2;
    }
    return gp_supervise_main(argv[1]);
}

/* fuzz_duration.c - libFuzzer target: the one duration parser (util/duration.h).
 *
 * Every flag and file field that takes a span reads it with it (--ttl,
 * --time-limit, --from, a tenant file's time_limit).  An accepted text is
 * 0..2^40 seconds, gp_duration_parse_seconds takes whatever
 * gp_duration_parse takes with the same value, and the value written back
 * as "<seconds>s" reads back as itself.  gp_fuzz_reached_engine() reports
 * whether the last input was accepted (there is no engine stage: the
 * replay test requires every seed to be a duration).
 */
#include "fuzz_harness.h"
#include "util/duration.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool accepted;

bool gp_fuzz_reached_engine(void)
{
    return accepted;
}

static void check_value(int64_t v)
{
    if (v < 0 || v > (INT64_C(1) << 40))
        abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    accepted = false;
    if (size > 64)
        return 0;
    char text[65];
    memcpy(text, data, size);
    text[size] = '\0';
    int64_t v = -1, w = -1, again = -1;
    bool unit = gp_duration_parse(text, &v), seconds = gp_duration_parse_seconds(text, &w);
    if (unit) {
        check_value(v);
        char back[32];
        snprintf(back, sizeof back, "%llds", (long long)v);
        if (!seconds || w != v || !gp_duration_parse(back, &again) || again != v)
            abort();
    }
    if (seconds)
        check_value(w);
    accepted = unit || seconds;
    return 0;
}

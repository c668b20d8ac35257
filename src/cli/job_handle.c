/* job_handle.c - a job or members of a job array as a person names them (see job_handle.h). */
#include "cli/job_handle.h"

#include <stdio.h>
#include <string.h>

#define FORMS "a job id (13), an array member (13_4) or members (13_[0-19], 13_[1,3,5-7])"

/* A job id at the start of text: 1..2^53 in decimal digits; *end after it. */
static bool read_id(const char *text, uint64_t *id, const char **end)
{
    uint64_t v = 0;
    const char *p = text;
    while (*p >= '0' && *p <= '9' && v <= (UINT64_C(1) << 53)) {
        v = v * 10 + (uint64_t)(*p - '0');
        p++;
    }
    *id = v;
    *end = p;
    return p != text && v >= 1 && v <= (UINT64_C(1) << 53) && (*p < '0' || *p > '9');
}

bool gp_job_handle_parse(const char *text, gp_job_handle *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    const char *p;
    if (!read_id(text, &out->id, &p) || (*p != '\0' && *p != '_')) {
        snprintf(why, cap, "%.60s: not %s", text, FORMS);
        return false;
    }
    if (*p == '\0')
        return true;
    out->members = true;
    char set[256], inner[200];
    snprintf(set, sizeof set, "%s", p + 1);
    size_t len = strlen(set);
    bool open = set[0] == '[', close = len > 0 && set[len - 1] == ']';
    if (open != close || len >= sizeof set - 1) {
        snprintf(why, cap, "%.60s: %s", text, open ? "a '[' without its ']'" : close ? "a ']' without its '['"
                                                                             : "too long");
        return false;
    }
    if (open)
        set[len - 1] = '\0';
    if (!gp_index_set_parse(open ? set + 1 : set, &out->index, inner, sizeof inner)) {
        snprintf(why, cap, "%.60s: %s", text, inner);
        return false;
    }
    return true;
}

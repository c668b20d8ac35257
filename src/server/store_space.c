/* store_space.c - room for writes on the store's filesystem (store_space.h). */
#include "server/store_space.h"

#include "server/log.h"
#include "store/db.h"

#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

void gp_store_space_init(gp_store_space *s, const char *store_url, int64_t reserve)
{
    memset(s, 0, sizeof *s);
    const char *file = gp_db_sqlite_file(store_url);
    if (!file || !file[0] || reserve <= 0)
        return;
    char copy[sizeof s->dir];
    snprintf(copy, sizeof copy, "%s", file);
    snprintf(s->dir, sizeof s->dir, "%s", dirname(copy));
    s->reserve = reserve;
}

bool gp_store_space_low(gp_store_space *s)
{
    struct statvfs v;
    if (!s->dir[0] || statvfs(s->dir, &v) != 0)
        return false; /* unknown: the write itself will tell */
    s->free = (int64_t)v.f_bavail * (int64_t)v.f_frsize;
    bool low = s->free < s->reserve;
    if (low && !s->low)
        gp_log(GP_LOG_ERROR, "store_full", "dir=\"%s\" free_mib=%lld reserve_mib=%lld note=\"writes refused until space returns\"",
               s->dir, (long long)(s->free >> 20), (long long)(s->reserve >> 20));
    else if (!low && s->low)
        gp_log(GP_LOG_INFO, "store_space_back", "dir=\"%s\" free_mib=%lld note=\"writes resume\"", s->dir,
               (long long)(s->free >> 20));
    s->low = low;
    return low;
}

json_t *gp_store_space_refusal(const gp_store_space *s)
{
    char msg[200];
    snprintf(msg, sizeof msg, "the store's disk has %lld MiB free, less than --store-reserve %lld MiB; reads go on, "
             "writes resume by themselves when space returns", (long long)(s->free >> 20), (long long)(s->reserve >> 20));
    return json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "store_full", "message", msg, "field", "store");
}

/* server_url.c - lists of gpupoold's URLs and the leader's (server_url.h). */
#include "util/server_url.h"

#include <string.h>
#include <strings.h>

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '/'))
        s[--n] = '\0';
    return s;
}

int gp_server_urls_split(char *list, char **out, size_t cap)
{
    size_t n = 0;
    for (char *item = list, *comma; item; item = comma ? comma + 1 : NULL) {
        comma = strchr(item, ',');
        if (comma)
            *comma = '\0';
        char *url = trim(item);
        if (!url[0])
            continue;
        if (n == cap)
            return -1;
        out[n++] = url;
    }
    return (int)n;
}

bool gp_server_url_followable(const char *url)
{
    size_t scheme = strncasecmp(url, "http://", 7) == 0 ? 7 : strncasecmp(url, "https://", 8) == 0 ? 8 : 0;
    if (!scheme || url[scheme] == '\0' || url[scheme] == '/')
        return false;
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return false;
    return true;
}

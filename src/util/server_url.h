/* server_url.h - gpupoold's addresses as its clients (the CLI, the agent)
 * hold them: a list of replicas' base URLs, and the leader a follower
 * names when it answers a write with 307.
 *
 * Several gpupoold replicas serve one fleet; one leads (docs/operations.md,
 * "High availability on PostgreSQL").  A client is given some or all of
 * them as one comma-separated list:
 *
 *   --server http://gp-a:8750,http://gp-b:8750/,http://gp-c:8750
 *     -> "http://gp-a:8750", "http://gp-b:8750", "http://gp-c:8750"
 *
 * A follower answers a write with 307, Location = the leader's advertised
 * URL + the path, and the leader's URL in its JSON error ("leader").  A
 * client follows it only when it is an http or https URL: a gpupoold
 * never sends another scheme, and the client sends its token along.
 *
 * Ownership: nothing is allocated; the split writes into the caller's list.
 */
#ifndef GP_UTIL_SERVER_URL_H
#define GP_UTIL_SERVER_URL_H

#include <stdbool.h>
#include <stddef.h>

/* Splits list in place at its commas into out (at most cap entries, each
 * pointing into list): spaces around an entry and its trailing '/' are
 * trimmed, empty entries skipped.  Returns the number of URLs, 0 when
 * there is none, -1 when there are more than cap. */
int gp_server_urls_split(char *list, char **out, size_t cap);

/* url is one a client may follow: "http://" or "https://" (any case), a
 * host after it, no space or control character. */
bool gp_server_url_followable(const char *url);

#endif

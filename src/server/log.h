/* log.h - gpupoold's log: one line per event, key=value, to stderr.
 *
 * Every line starts with ts= (UTC, ISO 8601 with milliseconds), level= and
 * event=, then the event's own keys; request-scoped lines carry req=<request
 * id> so one request can be followed through HTTP thread, engine thread and
 * audit row.  Values that may hold spaces are quoted by the caller with
 * gp_log_quote.
 *
 * Threads: safe; each line is written with one fprintf under the stream
 * lock.  The level is process-wide, set once at start.
 */
#ifndef GP_SERVER_LOG_H
#define GP_SERVER_LOG_H

#include <stdbool.h>
#include <stddef.h>

typedef enum gp_log_level { GP_LOG_DEBUG = 0, GP_LOG_INFO, GP_LOG_WARN, GP_LOG_ERROR } gp_log_level;

void gp_log_set_level(gp_log_level level);
bool gp_log_level_parse(const char *name, gp_log_level *out);
bool gp_log_enabled(gp_log_level level);
/* ts=... level=... event=<event> <fmt...> */
void gp_log(gp_log_level level, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "text" with quotes and backslashes escaped and control characters dropped,
 * cut to fit out. */
const char *gp_log_quote(const char *text, char *out, size_t cap);

#endif

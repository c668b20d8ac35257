/* error.h - error codes and the message buffer every fallible call fills.
 *
 * Errors are values: a function that can fail returns a gp_err and, when it
 * fails, writes a human sentence and the name of the offending field into a
 * caller-provided gp_error.  Nothing in the project calls exit() or abort()
 * on caller data.  The field name is what the HTTP API later puts into
 * {"error": {"field": ...}}, so name it as the caller spelled it.
 *
 * Ownership: gp_error is a plain struct the caller owns (usually on the
 * stack); passing NULL means "I do not want the message".
 */
#ifndef GP_UTIL_ERROR_H
#define GP_UTIL_ERROR_H

typedef enum gp_err {
    GP_OK = 0,
    GP_ERR_INVALID,   /* a field has a wrong value; field says which */
    GP_ERR_NOT_FOUND, /* the named job, tenant or node does not exist */
    GP_ERR_EXISTS,    /* an id or name is already taken */
    GP_ERR_CONFLICT,  /* valid, but not in the current state (e.g. cancel a finished job) */
    GP_ERR_QUOTA,     /* a quota tree change that would break an invariant */
    GP_ERR_NOMEM,     /* allocation failed */
    GP_ERR_TIME,      /* time went backwards */
    GP_ERR_NEVER_FITS /* valid, but no node or block of the fleet could ever hold it; field says why */
} gp_err;

#define GP_ERROR_MESSAGE_MAX 256
#define GP_ERROR_FIELD_MAX 64

typedef struct gp_error {
    gp_err code;
    char field[GP_ERROR_FIELD_MAX];
    char message[GP_ERROR_MESSAGE_MAX];
} gp_error;

/* Fills err (if not NULL) and returns code, so callers can write
 * `return gp_error_set(err, GP_ERR_INVALID, "replicas", "must be 1..%d", n);` */
gp_err gp_error_set(gp_error *err, gp_err code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Clears err to GP_OK with empty strings; NULL is allowed. */
void gp_error_clear(gp_error *err);

/* A short lowercase name for a code, e.g. "invalid", "not_found". */
const char *gp_err_name(gp_err code);

#endif

/* error.c - filling gp_error values. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

gp_err gp_error_set(gp_error *err, gp_err code, const char *field, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

void gp_error_clear(gp_error *err)
{
    if (err == NULL)
        return;
    err->code = GP_OK;
    err->field[0] = '\0';
    err->message[0] = '\0';
}

const char *gp_err_name(gp_err code)
{
    switch (code) {
    case GP_OK: return "ok";
    case GP_ERR_INVALID: return "invalid";
    case GP_ERR_NOT_FOUND: return "not_found";
    case GP_ERR_EXISTS: return "exists";
    case GP_ERR_CONFLICT: return "conflict";
    case GP_ERR_QUOTA: return "quota";
    case GP_ERR_NOMEM: return "nomem";
    case GP_ERR_TIME: return "time";
    case GP_ERR_NEVER_FITS: return "never_fits";
    }
    return "unknown";
}

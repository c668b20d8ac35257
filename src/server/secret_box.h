/* secret_box.h - tenants' secrets sealed at rest: AES-256-GCM through
 * GnuTLS, under one key gpupoold keeps in a file of its own.
 *
 * The key: --secret-key-file (default secret.key beside the SQLite file),
 * exactly 32 bytes, mode 0600.  A missing file is created with 32 random
 * bytes on the first start (written whole, fsynced, then linked into
 * place: replicas starting together agree on the first one linked); a file
 * of another size, or one its group or others may read, stops gpupoold's
 * start: losing or leaking the key is what the whole scheme guards, so
 * nothing guesses.  It never enters the store: a copy of the store (or of
 * its backups) opens no secret without the key (docs/operations.md says
 * how to back it up apart).
 *
 * A sealed value: "v1:" + base64(nonce[12] || ciphertext || tag[16]), the
 * nonce random per seal, the associated data "gpupool secret v1" NUL
 * tenant NUL name: a sealed value moved to another tenant's or name's row
 * does not open (GP_ERR_INVALID, as a changed byte does).
 *
 * Example: seal("research/nlp", "HF_TOKEN", "hf_abc", 6) -> "v1:q1x...=="
 * (12 + 6 + 16 = 34 bytes before base64); open with the same tenant and
 * name -> "hf_abc", 6; with tenant "product/ads" -> GP_ERR_INVALID.
 *
 * Threads: every function is reentrant; a key is read-only once loaded.
 * Ownership: the caller owns *out (free()).
 */
#ifndef GP_SERVER_SECRET_BOX_H
#define GP_SERVER_SECRET_BOX_H

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

#define GP_SECRET_KEY_LEN 32
#define GP_SECRET_VALUE_MAX 65536 /* bytes of one secret's value */

typedef struct gp_secret_key {
    unsigned char bytes[GP_SECRET_KEY_LEN];
} gp_secret_key;

/* Reads the key at path, creating it (32 random bytes, 0600) when it does
 * not exist; *created says whether it did. */
gp_err gp_secret_key_load(const char *path, gp_secret_key *key, bool *created, gp_error *err);

/* value (len bytes, at most GP_SECRET_VALUE_MAX) sealed for tenant's name:
 * *out a NUL-terminated text (the caller frees it). */
gp_err gp_secret_seal(const gp_secret_key *key, const char *tenant, const char *name, const void *value, size_t len,
                      char **out, gp_error *err);

/* The value sealed for tenant's name: *out (len bytes and a NUL; the
 * caller frees it).  GP_ERR_INVALID (field "secret") when sealed is not
 * such a text, was changed, or was sealed under another key, tenant or
 * name. */
gp_err gp_secret_open(const gp_secret_key *key, const char *tenant, const char *name, const char *sealed, char **out,
                      size_t *len, gp_error *err);

#endif

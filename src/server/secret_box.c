/* secret_box.c - AES-256-GCM sealing of tenants' secrets and gpupoold's
 * key file (secret_box.h says the format and the rules). */
#include "server/secret_box.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GP__NONCE_LEN 12
#define GP__TAG_LEN 16
#define GP__PREFIX "v1:"
#define GP__AAD_LABEL "gpupool secret v1"

/* ---- the key file ---- */

/* A new key, written whole to PATH.tmp.PID and linked to path: a reader
 * (another replica starting beside this one) sees no file or the whole
 * key.  *lost: another process linked its key first. */
static gp_err gp__key_create(const char *path, gp_secret_key *key, bool *lost, gp_error *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (gnutls_rnd(GNUTLS_RND_KEY, key->bytes, sizeof key->bytes) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "secret_key_file", "no random bytes for a key");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return gp_error_set(err, GP_ERR_INVALID, "secret_key_file", "cannot create %s: %s", tmp, strerror(errno));
    bool ok = fchmod(fd, 0600) == 0 && write(fd, key->bytes, sizeof key->bytes) == (ssize_t)sizeof key->bytes &&
              fsync(fd) == 0;
    close(fd);
    int linked = ok ? link(tmp, path) : -1;
    *lost = ok && linked != 0 && errno == EEXIST;
    unlink(tmp);
    if (!ok || (linked != 0 && !*lost))
        return gp_error_set(err, GP_ERR_INVALID, "secret_key_file", "cannot write %s", path);
    return GP_OK;
}

static gp_err gp__key_read(int fd, const char *path, gp_secret_key *key, gp_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "secret_key_file", "cannot stat %s: %s", path, strerror(errno));
    if (st.st_mode & 077)
        return gp_error_set(err, GP_ERR_INVALID, "secret_key_file",
                            "%s may be read by its group or others (mode %03o): chmod 600 it", path,
                            (unsigned)(st.st_mode & 0777));
    unsigned char buf[GP_SECRET_KEY_LEN + 1];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n != GP_SECRET_KEY_LEN)
        return gp_error_set(err, GP_ERR_INVALID, "secret_key_file", "%s is not a key: it must hold exactly %d bytes",
                            path, GP_SECRET_KEY_LEN);
    memcpy(key->bytes, buf, sizeof key->bytes);
    gnutls_memset(buf, 0, sizeof buf);
    return GP_OK;
}

gp_err gp_secret_key_load(const char *path, gp_secret_key *key, bool *created, gp_error *err)
{
    *created = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        bool lost = false;
        gp_err rc = gp__key_create(path, key, &lost, err);
        if (rc != GP_OK || !lost) {
            *created = rc == GP_OK;
            return rc;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC); /* another replica's key won: read it */
    }
    if (fd < 0)
        return gp_error_set(err, GP_ERR_INVALID, "secret_key_file", "cannot open %s: %s", path, strerror(errno));
    gp_err rc = gp__key_read(fd, path, key, err);
    close(fd);
    return rc;
}

/* ---- sealing ---- */

/* "gpupool secret v1" NUL tenant NUL name, in a malloc'd buffer. */
static unsigned char *gp__aad(const char *tenant, const char *name, size_t *len)
{
    size_t a = sizeof GP__AAD_LABEL, t = strlen(tenant) + 1, n = strlen(name);
    unsigned char *buf = malloc(a + t + n);
    if (buf) {
        memcpy(buf, GP__AAD_LABEL, a);
        memcpy(buf + a, tenant, t);
        memcpy(buf + a + t, name, n);
    }
    *len = a + t + n;
    return buf;
}

static gp_err gp__cipher(const gp_secret_key *key, gnutls_aead_cipher_hd_t *h, gp_error *err)
{
    gnutls_datum_t k = {.data = (unsigned char *)key->bytes, .size = GP_SECRET_KEY_LEN};
    if (gnutls_aead_cipher_init(h, GNUTLS_CIPHER_AES_256_GCM, &k) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "secret", "AES-256-GCM is not available");
    return GP_OK;
}

/* "v1:" + base64 of raw (len bytes) into a malloc'd text. */
static gp_err gp__encode(const unsigned char *raw, size_t len, char **out, gp_error *err)
{
    gnutls_datum_t in = {.data = (unsigned char *)raw, .size = (unsigned)len}, b64 = {0};
    if (gnutls_base64_encode2(&in, &b64) != 0)
        return gp_error_set(err, GP_ERR_NOMEM, "secret", "out of memory");
    *out = malloc(sizeof GP__PREFIX + b64.size);
    if (*out) {
        memcpy(*out, GP__PREFIX, sizeof GP__PREFIX - 1);
        memcpy(*out + sizeof GP__PREFIX - 1, b64.data, b64.size);
        (*out)[sizeof GP__PREFIX - 1 + b64.size] = '\0';
    }
    gnutls_free(b64.data);
    return *out ? GP_OK : gp_error_set(err, GP_ERR_NOMEM, "secret", "out of memory");
}

gp_err gp_secret_seal(const gp_secret_key *key, const char *tenant, const char *name, const void *value, size_t len,
                      char **out, gp_error *err)
{
    *out = NULL;
    if (len > GP_SECRET_VALUE_MAX)
        return gp_error_set(err, GP_ERR_INVALID, "value", "a secret is at most %d bytes", GP_SECRET_VALUE_MAX);
    size_t aad_len, raw_len = GP__NONCE_LEN + len + GP__TAG_LEN, ct_len = len + GP__TAG_LEN;
    unsigned char *aad = gp__aad(tenant, name, &aad_len), *raw = malloc(raw_len);
    gnutls_aead_cipher_hd_t h = NULL;
    gp_err rc = !aad || !raw ? gp_error_set(err, GP_ERR_NOMEM, "secret", "out of memory") : gp__cipher(key, &h, err);
    if (rc == GP_OK && gnutls_rnd(GNUTLS_RND_NONCE, raw, GP__NONCE_LEN) != 0)
        rc = gp_error_set(err, GP_ERR_INVALID, "secret", "no random bytes for a nonce");
    if (rc == GP_OK && gnutls_aead_cipher_encrypt(h, raw, GP__NONCE_LEN, aad, aad_len, GP__TAG_LEN, value, len,
                                                  raw + GP__NONCE_LEN, &ct_len) != 0)
        rc = gp_error_set(err, GP_ERR_INVALID, "secret", "the secret cannot be sealed");
    if (rc == GP_OK)
        rc = gp__encode(raw, GP__NONCE_LEN + ct_len, out, err);
    if (h)
        gnutls_aead_cipher_deinit(h);
    free(aad);
    free(raw);
    return rc;
}

/* The raw bytes of a sealed text, or GP_ERR_INVALID. */
static gp_err gp__decode(const char *sealed, gnutls_datum_t *raw, gp_error *err)
{
    size_t p = sizeof GP__PREFIX - 1;
    if (strncmp(sealed, GP__PREFIX, p) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "secret", "not a sealed secret of this gpupoold");
    gnutls_datum_t in = {.data = (unsigned char *)sealed + p, .size = (unsigned)strlen(sealed + p)};
    if (gnutls_base64_decode2(&in, raw) != 0 || raw->size < GP__NONCE_LEN + GP__TAG_LEN) {
        gnutls_free(raw->data);
        raw->data = NULL;
        return gp_error_set(err, GP_ERR_INVALID, "secret", "not a sealed secret of this gpupoold");
    }
    return GP_OK;
}

gp_err gp_secret_open(const gp_secret_key *key, const char *tenant, const char *name, const char *sealed, char **out,
                      size_t *len, gp_error *err)
{
    *out = NULL;
    *len = 0;
    gnutls_datum_t raw = {0};
    gp_err rc = gp__decode(sealed, &raw, err);
    if (rc != GP_OK)
        return rc;
    size_t aad_len, ct_len = raw.size - GP__NONCE_LEN, plain_len = ct_len - GP__TAG_LEN;
    unsigned char *aad = gp__aad(tenant, name, &aad_len);
    char *plain = malloc(plain_len + 1);
    gnutls_aead_cipher_hd_t h = NULL;
    rc = !aad || !plain ? gp_error_set(err, GP_ERR_NOMEM, "secret", "out of memory") : gp__cipher(key, &h, err);
    if (rc == GP_OK && gnutls_aead_cipher_decrypt(h, raw.data, GP__NONCE_LEN, aad, aad_len, GP__TAG_LEN,
                                                  raw.data + GP__NONCE_LEN, ct_len, plain, &plain_len) != 0)
        rc = gp_error_set(err, GP_ERR_INVALID, "secret",
                          "secret %s of %s does not open: changed, or sealed under another key", name, tenant);
    if (h)
        gnutls_aead_cipher_deinit(h);
    free(aad);
    gnutls_free(raw.data);
    if (rc != GP_OK) {
        free(plain);
        return rc;
    }
    plain[plain_len] = '\0';
    *out = plain;
    *len = plain_len;
    return GP_OK;
}

/* pkce.c - base64url, random URL-safe strings and PKCE's S256 (see pkce.h). */
#include "cli/pkce.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <string.h>

static const char GP__B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

bool gp_base64url_encode(const unsigned char *data, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned long v = (unsigned long)data[i] << 16;
        size_t left = len - i;
        if (left > 1)
            v |= (unsigned long)data[i + 1] << 8;
        if (left > 2)
            v |= data[i + 2];
        size_t chars = left >= 3 ? 4 : left + 1;
        if (o + chars >= cap)
            return false;
        for (size_t k = 0; k < chars; k++)
            out[o++] = GP__B64URL[(v >> (18 - 6 * k)) & 63];
    }
    if (o >= cap)
        return false;
    out[o] = '\0';
    return true;
}

static int sextet(char ch)
{
    const char *p = ch ? strchr(GP__B64URL, ch) : NULL;
    return p ? (int)(p - GP__B64URL) : -1;
}

long gp_base64url_decode(const char *text, size_t len, unsigned char *out, size_t cap)
{
    while (len > 0 && text[len - 1] == '=')
        len--;
    unsigned long acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int v = sextet(text[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (unsigned long)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == cap)
                return -1;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1UL << bits) - 1;
        }
    }
    return (long)o;
}

static bool random_urlsafe(gnutls_rnd_level_t level, size_t n_bytes, char *out, size_t cap)
{
    unsigned char raw[64];
    if (n_bytes > sizeof raw || gnutls_rnd(level, raw, n_bytes) != 0)
        return false;
    return gp_base64url_encode(raw, n_bytes, out, cap);
}

bool gp_random_urlsafe(size_t n_bytes, char *out, size_t cap)
{
    return random_urlsafe(GNUTLS_RND_NONCE, n_bytes, out, cap);
}

bool gp_pkce_challenge(const char *verifier, char *out, size_t cap)
{
    unsigned char digest[32];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, verifier, strlen(verifier), digest) != 0)
        return false;
    return gp_base64url_encode(digest, sizeof digest, out, cap);
}

bool gp_pkce_make(char *verifier, size_t verifier_cap, char *challenge, size_t challenge_cap)
{
    return random_urlsafe(GNUTLS_RND_KEY, 32, verifier, verifier_cap) &&
           gp_pkce_challenge(verifier, challenge, challenge_cap);
}

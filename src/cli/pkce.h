/* pkce.h - the CLI's sign-in helpers that need no HTTP: base64url (RFC 4648
 * section 5, no padding), random URL-safe strings and PKCE (RFC 7636).
 *
 * PKCE: `gpupool login --browser` makes a random verifier, sends only its
 * S256 challenge (base64url of SHA-256 of the verifier) with the
 * authorization request, and the verifier itself with the code exchange,
 * so a code caught on its way to the loopback redirect is useless to
 * whoever caught it.  Randomness and SHA-256 come from GnuTLS.
 *
 * Every function writes into the caller's buffer; nothing is allocated.
 */
#ifndef GP_CLI_PKCE_H
#define GP_CLI_PKCE_H

#include <stdbool.h>
#include <stddef.h>

/* base64url of len bytes into out (cap >= 4 * len / 3 + 2); false when it
 * does not fit. */
bool gp_base64url_encode(const unsigned char *data, size_t len, char *out, size_t cap);
/* Decodes base64url text (padding optional) into out; returns the bytes
 * written, or -1 on a character outside the alphabet or no room. */
long gp_base64url_decode(const char *text, size_t len, unsigned char *out, size_t cap);

/* n_bytes random bytes (GnuTLS's nonce generator) as base64url into out:
 * a state, a nonce; false when the generator fails or out is too small. */
bool gp_random_urlsafe(size_t n_bytes, char *out, size_t cap);

/* The S256 challenge of verifier into out (cap >= 44). */
bool gp_pkce_challenge(const char *verifier, char *out, size_t cap);
/* A new verifier (43 characters: 32 random bytes, GnuTLS's key generator)
 * and its challenge; each buffer at least 44 bytes. */
bool gp_pkce_make(char *verifier, size_t verifier_cap, char *challenge, size_t challenge_cap);

#endif

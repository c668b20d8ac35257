/* fuzz_jwt.c - libFuzzer target: a bearer token as gpupoold's OIDC
 * verifier reads it (src/server/oidc.c, oidc_keys.c), against one issuer
 * whose discovery document and JWKS (an RSA and a P-256 key, those that
 * signed corpus/jwt's tokens) a fetch function of this file serves.
 *
 * Whatever the bytes, the verifier answers one of its results; a token it
 * takes names a user and no more groups than it keeps.  The seeds are
 * tokens of each kind (RS256, ES256, expired, another audience, an unknown
 * kid, "none", HS256); gp_fuzz_reached_engine() says the last input was
 * read as a JWT (header and claims decoded), the stage every seed must
 * reach.
 */
#include "fuzz_harness.h"
#include "server/oidc.h"

#include <stdlib.h>
#include <string.h>

#define NOW 1800000000

static const char JWKS[] =
    "{\"keys\":[{\"kty\":\"RSA\",\"key_ops\":[\"verify\"],\"n\":\"tI3VuAW3l06Nz2OLYFA9ZbNkR8IA7doGH5B"
    "gW96zlkBa6DlMeCsz2D92MSEbnnPC1Xgr5xTM9rAur5ihrBf_9cOLp8OdK0ipO5XCe8vBZdnkF53kPUGVVhkJMKLaCSZew5u"
    "vpkzK2e8cJNblPJP5PULMLlrS7hYHXyNzyhCM7UkdiqUEZ0IPfFdAXKrwL7C5XSADhh4v9AS3sfMdJMpgEDaZyv5p_3scZCw"
    "3zrj61h0ip_cx47D74pJL80ogljTytj79fN5qveZEmNAimvrChNUs5lkbMhvn162W0YmqAdwETEozgAPxPnZtLGlzj3DSJdF"
    "O40Yfv8Tynv3G233sjQ\",\"e\":\"AQAB\",\"kid\":\"r1\",\"use\":\"sig\",\"alg\":\"RS256\"},{\"kty\":"
    "\"EC\",\"crv\":\"P-256\",\"x\":\"WRjgEPeR6zbimPjCuLLeg0te-OQ5GbtXpBA4NDxhV7U\",\"y\":\"rPcHk3SKB"
    "A0w46hKQ2cNFFFxst1G9ISwoqtU6WJeKEw\",\"kid\":\"e1\",\"use\":\"sig\",\"alg\":\"ES256\"}]}";

static bool read_as_jwt;

bool gp_fuzz_reached_engine(void)
{
    return read_as_jwt;
}

static gp_err serve(void *ctx, const char *url, char **body, gp_error *err)
{
    (void)ctx;
    (void)err;
    *body = strdup(strstr(url, "openid-configuration") ? "{\"issuer\": \"https://idp.test\", \"jwks_uri\": "
                                                         "\"https://idp.test/keys\"}"
                                                       : JWKS);
    return GP_OK;
}

static gp_oidc *verifier(void)
{
    static gp_oidc o;
    static bool ready;
    if (!ready) {
        gp_oidc_config cfg = {.issuer = {"https://idp.test"}, .audience = {"gpupool"}, .n_issuers = 1,
                              .n_audiences = 1, .mfa_for = GP_OIDC_MFA_ADMIN};
        gp_error err;
        if (gp_oidc_init(&o, &cfg, serve, NULL, &err) != GP_OK)
            abort();
        ready = true;
    }
    return &o;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    read_as_jwt = false;
    if (size > GP_OIDC_TOKEN_MAX)
        return 0;
    char *token = malloc(size + 1);
    memcpy(token, data, size);
    token[size] = '\0';
    gp_oidc_identity id;
    char detail[256];
    gp_oidc_result r = gp_oidc_verify(verifier(), token, NOW, &id, detail, sizeof detail);
    free(token);
    if (r < GP_OIDC_OK || r >= GP_OIDC_RESULT_COUNT || r == GP_OIDC_NO_BINDING || r == GP_OIDC_SECOND_FACTOR_MISSING)
        abort();
    if (r == GP_OIDC_OK && (!id.user[0] || id.n_groups > GP_OIDC_GROUPS_MAX || strlen(id.token_hash) != 64))
        abort();
    read_as_jwt = r != GP_OIDC_NOT_JWT;
    return 0;
}

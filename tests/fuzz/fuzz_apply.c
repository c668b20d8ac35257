/* fuzz_apply.c - libFuzzer target: POST /v1/tenants:apply bodies (YAML or JSON).
 *
 * What apply does before the store: the tenant file parser (libyaml),
 * then per entry the canonical form the journal logs (round trip must be
 * stable) and the engine's tenant_set, in file order, on a fresh engine
 * with the shared fleet (fuzz_fleet.c), then one scheduling pass and the
 * engine's invariant check.  An entry the engine refuses must say why in
 * text (valid UTF-8, a field named: the API answers it as a JSON error, and
 * a message quoting one byte of a letter made that body null:
 * corpus/apply/non_ascii_path.yaml, `misc/café`).
 * gp_fuzz_reached_engine() reports whether the last input's every entry was
 * set or so refused and the pass ran (fuzz_replay.c requires it of every
 * seed).
 */
#include "config/tenant_file.h"
#include "core/engine.h"
#include "fuzz_harness.h"
#include "spec/spec_json.h"
#include "util/text.h"

#include <stdlib.h>
#include <string.h>

static bool reached_engine;

bool gp_fuzz_reached_engine(void)
{
    return reached_engine;
}

/* abort() when the entry's canonical form does not round-trip. */
static void canonical_spec(const gp_tenant_spec *spec, gp_tenant_spec *again)
{
    json_t *canon = gp_tenant_spec_to_json(spec);
    if (gp_tenant_spec_parse(canon, again, NULL) != GP_OK)
        abort();
    json_t *canon2 = gp_tenant_spec_to_json(again);
    if (!json_equal(canon, canon2))
        abort();
    json_decref(canon);
    json_decref(canon2);
}

/* abort() when a refusal is not text the API can answer: invalid UTF-8 or
 * no field. */
static void refusal_check(const gp_error *err)
{
    if (!gp_utf8_valid(err->message, strlen(err->message)) || !gp_utf8_valid(err->field, strlen(err->field)) ||
        !err->field[0])
        abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    reached_engine = false;
    gp_tenant_file f;
    if (gp_tenant_file_parse((const char *)data, size, "fuzz", &f, NULL) != GP_OK)
        return 0;
    gp_engine *e = gp_fuzz_fleet();
    for (size_t i = 0; i < f.n_tenants; i++) {
        gp_tenant_spec again;
        canonical_spec(&f.tenants[i].spec, &again);
        gp_error err;
        if (gp_engine_tenant_set(e, f.tenants[i].path, &again, 0, &err) != GP_OK)
            refusal_check(&err);
    }
    reached_engine = gp_engine_tick(e, 1, NULL) == GP_OK;
    gp_fuzz_check_invariants(e);
    gp_engine_free(e);
    gp_tenant_file_free(&f);
    return 0;
}

/* tenant_file.h - the tenant file: the tenancy tree, as YAML or JSON.
 *
 * One format for `gpupool apply -f`, the daemon and the simulator
 * (--tenants FILE).  GPU amounts are in GPUs with up to three decimals,
 * CPU in millicores, memory in MiB, as in the HTTP API:
 *
 *   tenants:
 *     - path: research
 *       guarantee: {gpu: {H100: 24}}
 *       limit: {gpu: {H100: 40}}
 *     - path: research/nlp
 *       guarantee: {gpu: {H100: 16}, cpu_millis: 512000, mem_mib: 4194304}
 *       weight: 1
 *       lend: true
 *       trust: trusted          # trusted|untrusted (default: inherit)
 *       user_limit: {gpu: {H100: 8}}
 *       time_limit: {training: 86400, interactive: 8h}   # per job kind: seconds or a duration
 *
 * An entry is `path` plus a tenant body as the HTTP API takes it (decoded
 * by the same codec, spec/spec_json.h); a field written `null` is kept in
 * `fields` only (gpupoold's apply clears it; a field left out keeps its
 * stored value there).  Entries come in any order; a parent the file does
 * not list must exist already where the file is applied (the simulator and
 * gp_tenant_file_apply set the entries in file order).  Errors name the file, the line, the entry and the field
 * ("tenants.yaml:7: tenants[1]: guarantee.gpu.H100 must be ...", field
 * "tenants[1].guarantee.gpu.H100"); unknown fields are errors.
 *
 * Ownership: as fleet_file.h.
 */
#ifndef GP_CONFIG_TENANT_FILE_H
#define GP_CONFIG_TENANT_FILE_H

#include "core/engine.h"

#include <jansson.h>

typedef struct gp_tenant_entry {
    char path[GP_PATH_MAX];
    gp_tenant_spec spec; /* the entry's fields, null ones left out */
    json_t *fields;      /* the entry as written, less path (owned; freed by gp_tenant_file_free) */
} gp_tenant_entry;

typedef struct gp_tenant_file {
    gp_tenant_entry *tenants;
    size_t n_tenants;
} gp_tenant_file;

gp_err gp_tenant_file_load(const char *path, gp_tenant_file *out, gp_error *err);
gp_err gp_tenant_file_parse(const char *text, size_t len, const char *name, gp_tenant_file *out, gp_error *err);
void gp_tenant_file_free(gp_tenant_file *f);
/* gp_engine_tenant_set for every entry in order; stops at the first error. */
gp_err gp_tenant_file_apply(const gp_tenant_file *f, gp_engine *e, int64_t now, gp_error *err);

#endif

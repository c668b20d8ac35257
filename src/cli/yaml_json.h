/* yaml_json.h - a YAML document as JSON, for `gpupool submit -f job.yaml`.
 *
 * The CLI does not know the job schema (the server checks it); it only
 * turns YAML into the equivalent JSON: mappings to objects, sequences to
 * arrays, plain scalars that read as integers, numbers, true/false or null
 * to those, everything else (and every quoted scalar) to strings.  JSON
 * is YAML, so a .json file goes through the same path.
 *
 * Ownership: returns a new reference, or NULL with a message in err.
 */
#ifndef GP_CLI_YAML_JSON_H
#define GP_CLI_YAML_JSON_H

#include <jansson.h>
#include <stddef.h>

json_t *gp_yaml_to_json(const char *text, size_t len, char *err, size_t err_cap);

#endif

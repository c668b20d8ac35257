/* json_patch.h - JSON merge patch (RFC 7396) and a field-level diff.
 *
 * PATCH /v1/tenants/{path} applies a merge patch to the tenant's canonical
 * spec; PATCH and apply report what they changed as a list of fields.
 *
 * Merge patch: objects merge key by key, null removes a key (so the field
 * takes its default), anything else replaces the target's value whole.
 *
 *     target {"guarantee": {"gpu": {"H100": 8}}, "limit": {"gpu": {"L40S": 8}}, "weight": 2.0}
 *     patch  {"limit": {"gpu": {"L40S": 6}}, "weight": null}
 *     result {"guarantee": {"gpu": {"H100": 8}}, "limit": {"gpu": {"L40S": 6}}}
 *
 * (jansson 2.14 has json_object_update_recursive, but it keeps a null as a
 * value instead of removing the key, so it is not RFC 7396.)
 *
 * Field diff: both documents are flattened to their leaves, named by the
 * dotted path of keys ("limit.gpu.L40S"; an empty object is a leaf); each
 * leaf whose value differs is one {"field", "from", "to"}, null where the
 * leaf is absent, in order of field name.  For the example above:
 *
 *     [{"field": "limit.gpu.L40S", "from": 8, "to": 6},
 *      {"field": "weight", "from": 2.0, "to": null}]
 *
 * Ownership: both return new references; the inputs are not changed.
 */
#ifndef GP_SPEC_JSON_PATCH_H
#define GP_SPEC_JSON_PATCH_H

#include <jansson.h>

/* target may be NULL (nothing yet).  NULL only when out of memory. */
json_t *gp_json_merge_patch(const json_t *target, const json_t *patch);

/* from or to may be NULL (the document does not exist: every leaf of the
 * other one is a change).  NULL only when out of memory. */
json_t *gp_json_field_diff(const json_t *from, const json_t *to);

#endif

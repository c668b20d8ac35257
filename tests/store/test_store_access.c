/* test_store_access.c - the store suite's accounts of who and which
 * nodes: tokens, job users, declared GPU types, the node CA, OIDC role
 * bindings, join tokens and node approvals, operators' drains and
 * tenants' sealed secrets, on either database (store_fixture.h; ctest
 * store_access_sqlite and store_access_postgres).
 *
 * Example: a token revoked is scanned with its revocation time; a second
 * node CA added while one is there changes nothing.
 */
#include "dbtest.h"
#include "store_fixture.h"
#include "store/db.h"
#include "store/store.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <gnutls/crypto.h>

typedef struct seen_tokens {
    int n;
    char id[4][16];
    int64_t revoked[4], expires[4], last_used[4];
    bool single_use[4];
} seen_tokens;

static gp_err collect_token(void *ctx, const gp_store_token *t, gp_error *err)
{
    (void)err;
    seen_tokens *seen = ctx;
    int i = seen->n++;
    snprintf(seen->id[i], sizeof seen->id[i], "%s", t->id);
    seen->revoked[i] = t->revoked;
    seen->expires[i] = t->expires;
    seen->last_used[i] = t->last_used;
    seen->single_use[i] = t->single_use;
    return GP_OK;
}

static void tokens_are_inserted_touched_revoked_and_scanned(void **state)
{
    fixture *f = *state;
    gp_store_token t1 = {.id = "tk1", .hash_hex = "aa", .name = "ci", .role = "user", .scope = "a", .user = "ann",
                         .created = 10, .revoked = -1, .expires = -1, .created_by = "admin"};
    gp_store_token t2 = {.id = "tk2", .hash_hex = "bb", .name = "ops", .role = "admin", .scope = "", .user = "",
                         .created = 20, .revoked = -1, .expires = 5000, .created_by = "admin"};
    OK(gp_store_token_insert(f->s, &t1, &e_));
    OK(gp_store_token_insert(f->s, &t2, &e_));
    gp_error err = {0};
    gp_store_token dup = t1;
    dup.id = "tk3"; /* the same hash */
    assert_int_not_equal(gp_store_token_insert(f->s, &dup, &err), GP_OK);
    OK(gp_store_token_touch(f->s, "tk1", 300, &e_));
    OK(gp_store_token_touch(f->s, "tk1", 200, &e_)); /* late and older: kept at 300 */
    OK(gp_store_token_revoke(f->s, "tk2", 400, &e_));
    assert_int_equal(gp_store_token_revoke(f->s, "tk2", 401, &err), GP_ERR_NOT_FOUND);
    assert_int_equal(gp_store_token_revoke(f->s, "nope", 401, &err), GP_ERR_NOT_FOUND);
    seen_tokens seen = {0};
    OK(gp_store_tokens_scan(f->s, collect_token, &seen, &e_));
    assert_int_equal(seen.n, 2);
    assert_string_equal(seen.id[0], "tk1");
    assert_int_equal(seen.last_used[0], 300);
    assert_int_equal(seen.revoked[0], -1);
    assert_int_equal(seen.expires[0], -1);
    assert_int_equal(seen.revoked[1], 400);
    assert_int_equal(seen.expires[1], 5000);
    assert_int_equal(seen.last_used[1], -1);
}

/* ---- job users ---- */

static gp_err collect_user(void *ctx, const gp_store_user *u, gp_error *err)
{
    (void)err;
    char *out = ctx;
    size_t len = strlen(out);
    snprintf(out + len, 256 - len, "%s=%s@%lld/%s;", u->name, u->tenant, (long long)u->bound, u->bound_by);
    return GP_OK;
}

static void users_are_bound_moved_listed_and_unbound(void **state)
{
    fixture *f = *state;
    char tenant[64];
    OK(gp_store_user_tenant(f->s, "alice", tenant, sizeof tenant, &e_));
    assert_string_equal(tenant, "");
    OK(gp_store_user_bind(f->s, "alice", "research/nlp", 10, "tk1", &e_));
    OK(gp_store_user_bind(f->s, "bob", "product", 11, "tk2", &e_));
    OK(gp_store_user_bind(f->s, "alice", "product/ads", 12, "tk3", &e_)); /* moved */
    OK(gp_store_user_tenant(f->s, "alice", tenant, sizeof tenant, &e_));
    assert_string_equal(tenant, "product/ads");
    char seen[256] = "";
    OK(gp_store_users_scan(f->s, collect_user, seen, &e_));
    assert_string_equal(seen, "alice=product/ads@12/tk3;bob=product@11/tk2;");
    OK(gp_store_user_unbind(f->s, "bob", &e_));
    gp_error err = {0};
    assert_int_equal(gp_store_user_unbind(f->s, "bob", &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "user");
    OK(gp_store_user_tenant(f->s, "bob", tenant, sizeof tenant, &e_));
    assert_string_equal(tenant, "");
}

/* GPU types declared before their nodes arrive (schema 11), on both backends. */
static void gpu_types_are_declared_listed_and_undeclared(void **state)
{
    fixture *f = *state;
    json_t *list = NULL;
    bool found = true;
    OK(gp_store_gpu_type_declare(f->s, "H200", 10, "tk1", &e_));
    OK(gp_store_gpu_type_declare(f->s, "B200", 11, "tk2", &e_));
    OK(gp_store_gpu_type_declare(f->s, "H200", 12, "tk3", &e_)); /* the first declaration stays */
    OK(gp_store_gpu_types_declared(f->s, &list, &e_));
    assert_int_equal(json_array_size(list), 2);
    json_t *h200 = json_array_get(list, 1);
    assert_string_equal(json_string_value(json_object_get(h200, "name")), "H200");
    assert_int_equal(json_integer_value(json_object_get(h200, "declared")), 10);
    assert_string_equal(json_string_value(json_object_get(h200, "declared_by")), "tk1");
    json_decref(list);
    OK(gp_store_gpu_type_undeclare(f->s, "B200", &found, &e_));
    assert_true(found);
    OK(gp_store_gpu_type_undeclare(f->s, "B200", &found, &e_));
    assert_false(found);
    OK(gp_store_gpu_types_declared(f->s, &list, &e_));
    assert_int_equal(json_array_size(list), 1);
    json_decref(list);
}

/* The node CA's one row (schema 13): the first added stays (replicas
 * starting together), removed only for the next (--rotate-node-ca). */
static void the_node_ca_row_is_added_once_and_replaced_after_removal(void **state)
{
    fixture *f = *state;
    char *cert = NULL, *key = NULL;
    OK(gp_store_node_ca_get(f->s, &cert, &key, &e_));
    assert_null(cert);
    assert_null(key);
    OK(gp_store_node_ca_add(f->s, "cert-1", "v1:key-1", 10, &e_));
    OK(gp_store_node_ca_add(f->s, "cert-2", "v1:key-2", 11, &e_)); /* lost the race: nothing changes */
    OK(gp_store_node_ca_get(f->s, &cert, &key, &e_));
    assert_string_equal(cert, "cert-1");
    assert_string_equal(key, "v1:key-1");
    free(cert);
    free(key);
    OK(gp_store_node_ca_remove(f->s, &e_));
    OK(gp_store_node_ca_add(f->s, "cert-3", "v1:key-3", 12, &e_));
    OK(gp_store_node_ca_get(f->s, &cert, &key, &e_));
    assert_string_equal(cert, "cert-3");
    free(cert);
    free(key);
}

/* OIDC role bindings (schema 15), on both backends: ids given in order, a
 * duplicate refused, one or all scanned, a delete of nothing NOT_FOUND. */
static gp_err binding_seen(void *ctx, const gp_store_rolebinding *b, gp_error *err)
{
    (void)err;
    json_array_append_new(ctx, json_pack("{s:I, s:s, s:s, s:s, s:s}", "id", (json_int_t)b->id, "kind", b->kind,
                                         "subject", b->subject, "role", b->role, "scope", b->scope));
    return GP_OK;
}

static void rolebindings_are_added_scanned_and_deleted(void **state)
{
    fixture *f = *state;
    gp_store_rolebinding a = {.kind = "group", .subject = "ml-admins", .role = "tenant-admin", .scope = "research",
                              .created = 10, .created_by = "tk1"};
    gp_store_rolebinding b = {.kind = "user", .subject = "alice", .role = "admin", .scope = "", .created = 11,
                              .created_by = "tk1"};
    OK(gp_store_rolebinding_add(f->s, &a, &e_));
    OK(gp_store_rolebinding_add(f->s, &b, &e_));
    assert_int_equal(a.id, 1);
    assert_int_equal(b.id, 2);
    gp_store_rolebinding again = a;
    gp_error err;
    assert_int_equal(gp_store_rolebinding_add(f->s, &again, &err), GP_ERR_EXISTS);
    json_t *all = json_array();
    OK(gp_store_rolebindings_scan(f->s, 0, binding_seen, all, &e_));
    assert_int_equal(json_array_size(all), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "subject")), "ml-admins");
    json_decref(all);
    json_t *one = json_array();
    OK(gp_store_rolebindings_scan(f->s, 2, binding_seen, one, &e_));
    assert_int_equal(json_array_size(one), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(one, 0), "role")), "admin");
    json_decref(one);
    OK(gp_store_rolebinding_delete(f->s, 1, &e_));
    assert_int_equal(gp_store_rolebinding_delete(f->s, 1, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "id");
}

static void a_join_tokens_single_use_and_node_approvals_are_kept(void **state)
{
    fixture *f = *state;
    gp_store_token t = {.id = "tj", .hash_hex = "cc", .name = "rack", .role = "join", .scope = "h100-*", .user = "",
                        .created = 10, .revoked = -1, .expires = -1, .created_by = "admin", .single_use = true};
    OK(gp_store_token_insert(f->s, &t, &e_));
    seen_tokens seen = {0};
    OK(gp_store_tokens_scan(f->s, collect_token, &seen, &e_));
    assert_int_equal(seen.n, 1);
    assert_true(seen.single_use[0]);
    char state_[16];
    int64_t when = 0;
    OK(gp_store_node_approval_get(f->s, "n1", state_, sizeof state_, &when, &e_));
    assert_string_equal(state_, "");
    assert_int_equal(when, -1);
    OK(gp_store_node_approval_set(f->s, "n1", "awaiting", 10, "tj", &e_));
    OK(gp_store_node_approval_set(f->s, "n1", "approved", 20, "admin", &e_));
    OK(gp_store_node_approval_get(f->s, "n1", state_, sizeof state_, &when, &e_));
    assert_string_equal(state_, "approved");
    assert_int_equal(when, 20);
    OK(gp_store_node_approval_clear(f->s, "n1", &e_));
    OK(gp_store_node_approval_get(f->s, "n1", state_, sizeof state_, &when, &e_));
    assert_string_equal(state_, "");
}

/* Why nodes drain (schema 12): an operator's reason, who and since (kept on
 * a drain again), then gpupoold's own drains for health and approval. */
static void node_drains_say_why_who_and_since(void **state)
{
    fixture *f = *state;
    json_t *drains = NULL;
    OK(gp_store_node_drain_set(f->s, "n1", "kernel 6.19", "alice", 100, &e_));
    OK(gp_store_node_drain_set(f->s, "n1", "RMA 4411", "bob", 150, &e_));
    OK(gp_store_health_drain_set(f->s, "n1", true, 160, &e_)); /* the operator's drain wins */
    OK(gp_store_health_drain_set(f->s, "n2", true, 200, &e_));
    OK(gp_store_node_approval_set(f->s, "n3", "awaiting", 300, "tj", &e_));
    OK(gp_store_node_approval_set(f->s, "n4", "approved", 400, "admin", &e_));
    OK(gp_store_node_drains(f->s, NULL, &drains, &e_));
    assert_int_equal(json_object_size(drains), 3);
    json_t *n1 = json_object_get(drains, "n1"), *n2 = json_object_get(drains, "n2"), *n3 = json_object_get(drains, "n3");
    assert_string_equal(json_string_value(json_object_get(n1, "reason")), "RMA 4411");
    assert_string_equal(json_string_value(json_object_get(n1, "by")), "bob");
    assert_int_equal(json_integer_value(json_object_get(n1, "since")), 100);
    assert_string_equal(json_string_value(json_object_get(n1, "kind")), "operator");
    assert_string_equal(json_string_value(json_object_get(n2, "kind")), "health");
    assert_string_equal(json_string_value(json_object_get(n2, "by")), "gpupoold");
    assert_int_equal(json_integer_value(json_object_get(n2, "since")), 200);
    assert_string_equal(json_string_value(json_object_get(n3, "kind")), "approval");
    assert_string_equal(json_string_value(json_object_get(n3, "by")), "tj");
    json_decref(drains);
    OK(gp_store_node_drain_clear(f->s, "n1", &e_));
    OK(gp_store_node_drains(f->s, "n1", &drains, &e_));
    assert_string_equal(json_string_value(json_object_get(json_object_get(drains, "n1"), "kind")), "health");
    assert_int_equal(json_object_size(drains), 1);
    json_decref(drains);
    OK(gp_store_health_drain_set(f->s, "n1", false, 0, &e_));
    OK(gp_store_node_drains(f->s, "n1", &drains, &e_));
    assert_int_equal(json_object_size(drains), 0);
    json_decref(drains);
}

static void secrets_are_put_replaced_listed_and_deleted_per_tenant(void **state)
{
    fixture *f = *state;
    gp_store_secret a = {.tenant = "research", .name = "hf", .sealed = "v1:AAA", .bytes = 3, .set_by = "t1",
                         .updated = 10};
    gp_store_secret b = {.tenant = "research/nlp", .name = "hf", .sealed = "v1:BBB", .bytes = 5, .set_by = "t2",
                         .updated = 11};
    OK(gp_store_secret_put(f->s, &a, &e_));
    OK(gp_store_secret_put(f->s, &b, &e_));
    a.sealed = "v1:CCC";
    a.updated = 12;
    OK(gp_store_secret_put(f->s, &a, &e_)); /* replaced */
    char *sealed = NULL;
    OK(gp_store_secret_get(f->s, "research", "hf", &sealed, &e_));
    assert_string_equal(sealed, "v1:CCC");
    free(sealed);
    OK(gp_store_secret_get(f->s, "product", "hf", &sealed, &e_));
    assert_null(sealed);
    json_t *list = NULL;
    OK(gp_store_secrets_list(f->s, "research", &list, &e_));
    assert_int_equal(json_array_size(list), 1);
    json_t *row = json_array_get(list, 0);
    assert_string_equal(json_string_value(json_object_get(row, "name")), "hf");
    assert_int_equal(json_integer_value(json_object_get(row, "bytes")), 3);
    assert_int_equal(json_integer_value(json_object_get(row, "updated")), 12);
    assert_null(json_object_get(row, "sealed"));
    json_decref(list);
    OK(gp_store_secret_delete(f->s, "research", "hf", &e_));
    gp_error err = {0};
    assert_int_equal(gp_store_secret_delete(f->s, "research", "hf", &err), GP_ERR_NOT_FOUND);
    OK(gp_store_secret_get(f->s, "research/nlp", "hf", &sealed, &e_));
    assert_string_equal(sealed, "v1:BBB");
    free(sealed);
    OK(gp_store_tenant_put(f->s, "research/nlp", "{}", 13, &e_));
    OK(gp_store_tenant_delete(f->s, "research/nlp", &e_)); /* its secrets go with it */
    OK(gp_store_secret_get(f->s, "research/nlp", "hf", &sealed, &e_));
    assert_null(sealed);
}

/* ---- audit ---- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        CASE(tokens_are_inserted_touched_revoked_and_scanned),
        CASE(users_are_bound_moved_listed_and_unbound),
        CASE(gpu_types_are_declared_listed_and_undeclared),
        CASE(the_node_ca_row_is_added_once_and_replaced_after_removal),
        CASE(rolebindings_are_added_scanned_and_deleted),
        CASE(a_join_tokens_single_use_and_node_approvals_are_kept),
        CASE(node_drains_say_why_who_and_since),
        CASE(secrets_are_put_replaced_listed_and_deleted_per_tenant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_container_spec.c - a job's container and its tenant's policy
 * (spec/container_spec.h): the job's keys through the job codec (bad
 * references, relative or kernel targets, duplicate targets refused, naming
 * the field), the tenant's keys through the tenant codec, the policy
 * inherited down a chain, and the check at submit (containers required,
 * image sources by prefix up to a boundary, volumes a tenant sees). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "spec/container_spec.h"
#include "spec/spec_json.h"

#include <stdlib.h>
#include <string.h>

static gp_err job(const char *extra, gp_job_request *r, gp_error *err)
{
    char text[4096];
    snprintf(text, sizeof text, "{\"tenant\": \"research/nlp\"%s%s}", extra[0] ? ", " : "", extra);
    json_t *body = json_loads(text, 0, NULL);
    assert_non_null(body);
    gp_err rc = gp_job_request_parse(body, false, r, err);
    json_decref(body);
    return rc;
}

/* The job is refused, naming field. */
static void refused(const char *extra, const char *field)
{
    gp_job_request r;
    gp_error err = {0};
    assert_int_equal(job(extra, &r, &err), GP_ERR_INVALID);
    if (strcmp(err.field, field) != 0)
        fail_msg("%s: field %s, want %s (%s)", extra, err.field, field, err.message);
    gp_job_request_free(&r);
}

static void a_jobs_container_keys_are_read_and_written_back(void **state)
{
    (void)state;
    gp_job_request r;
    gp_error err;
    assert_int_equal(job("\"image\": \"docker://reg.example:5000/team/torch:2.3\", \"mounts\": [{\"volume\": "
                         "\"datasets\", \"target\": \"/data\"}, {\"volume\": \"scratch\", \"target\": \"/scratch\","
                         " \"read_only\": false}], \"shm_mib\": 2048, \"read_only_root\": true, \"network\": \"private\"",
                         &r, &err),
                     GP_OK);
    assert_string_equal(r.container.image, "docker://reg.example:5000/team/torch:2.3");
    assert_int_equal(json_array_size(r.container.mounts), 2);
    assert_int_equal(r.container.shm_mib, 2048);
    assert_true(r.container.read_only_root);
    assert_true(r.container.private_network);
    r.spec.id = 7; /* as the event log holds it */
    json_t *o = gp_job_request_to_json(&r);
    gp_job_request back;
    assert_int_equal(gp_job_request_parse(o, true, &back, &err), GP_OK);
    json_t *again = gp_job_request_to_json(&back);
    assert_true(json_equal(o, again));
    assert_string_equal(json_string_value(json_object_get(o, "network")), "private");
    json_decref(again);
    json_decref(o);
    gp_job_request_free(&back);
    gp_job_request_free(&r);
}

static void a_job_without_them_is_written_as_before(void **state)
{
    (void)state;
    gp_job_request r;
    assert_int_equal(job("\"network\": \"host\"", &r, NULL), GP_OK);
    json_t *o = gp_job_request_to_json(&r);
    const char *keys[] = {"image", "mounts", "shm_mib", "read_only_root", "network"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_null(json_object_get(o, keys[i]));
    json_decref(o);
    gp_job_request_free(&r);
}

static void bad_image_references_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {
        "\"image\": \"busybox\"",                                    /* no transport */
        "\"image\": \"docker://busybox:1\"",                         /* no registry */
        "\"image\": \"docker://reg.example/library/busybox\"",       /* no tag, no digest */
        "\"image\": \"docker://reg.example/Library/busybox:1\"",     /* upper case name */
        "\"image\": \"docker://reg.example/a//b:1\"",
        "\"image\": \"docker://reg.example/a/b:1@sha256:abc\"",      /* short digest */
        "\"image\": \"docker://reg.example:http/a:1\"",              /* bad port */
        "\"image\": \"oci:relative/layout\"",
        "\"image\": \"oci:/srv/oci/../../etc:1\"",
        "\"image\": \"dir:/srv/images/../../\"",
        "\"image\": \"dir:/\"",
        "\"image\": \"dir:/srv/a:b\"",
        "\"image\": \"docker://reg.example/a:1\\n\"",
        "\"image\": 5",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused(bad[i], "image");
    const char *good[] = {
        "\"image\": \"docker://reg.example:5000/team/torch:2.3\"",
        "\"image\": \"docker://localhost:5000/busybox@sha256:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"",
        "\"image\": \"oci:/srv/oci/torch:2.3\"",
        "\"image\": \"oci:/srv/oci/torch\"",
        "\"image\": \"dir:/srv/images/busybox\"",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        gp_job_request r;
        gp_error err;
        if (job(good[i], &r, &err) != GP_OK)
            fail_msg("%s: %s", good[i], err.message);
        gp_job_request_free(&r);
    }
}

static void bad_mounts_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {
        "\"mounts\": [{\"volume\": \"d\", \"target\": \"data\"}]",           /* relative */
        "\"mounts\": [{\"volume\": \"d\", \"target\": \"/\"}]",
        "\"mounts\": [{\"volume\": \"d\", \"target\": \"/proc\"}]",
        "\"mounts\": [{\"volume\": \"d\", \"target\": \"/sys/fs/cgroup\"}]",
        "\"mounts\": [{\"volume\": \"d\", \"target\": \"/dev/shm\"}]",
        "\"mounts\": [{\"volume\": \"d\", \"target\": \"/data/../proc\"}]",
        "\"mounts\": [{\"volume\": \"d\", \"target\": \"/data/\"}]",
        "\"mounts\": [{\"volume\": \"d\", \"target\": \"/a\"}, {\"volume\": \"e\", \"target\": \"/a\"}]",
        "\"mounts\": [{\"target\": \"/a\"}]",
        "\"mounts\": [{\"volume\": \"d\", \"target\": \"/a\", \"source\": \"/etc\"}]",
        "\"mounts\": [{\"volume\": \"d\", \"target\": \"/a\", \"read_only\": \"yes\"}]",
        "\"mounts\": {}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused(bad[i], "mounts");
    refused("\"mounts\": [{\"volume\": \"d\", \"target\": \"/devices\"}], \"shm_mib\": 0", "shm_mib");
    refused("\"shm_mib\": 4096, \"mem_mib\": 1024", "shm_mib");
    refused("\"network\": \"none\"", "network");
    refused("\"read_only_root\": 1", "read_only_root");
}

static gp_err tenant(const char *text, gp_tenant_spec *s, gp_error *err)
{
    json_t *body = json_loads(text, 0, NULL);
    assert_non_null(body);
    gp_err rc = gp_tenant_spec_parse(body, s, err);
    json_decref(body);
    return rc;
}

static void a_tenants_policy_is_read_and_written_back(void **state)
{
    (void)state;
    gp_tenant_spec s, back;
    gp_error err;
    const char *text = "{\"container\": \"required\", \"image_sources\": [\"docker://reg.example:5000/team/\","
                       " \"dir:/srv/images/\"], \"volumes\": [{\"name\": \"datasets\", \"path\": \"/srv/datasets\"},"
                       " {\"name\": \"scratch\", \"path\": \"/srv/scratch\", \"read_only\": false}],"
                       " \"allow_userns\": false, \"egress\": [\"10.0.0.0/8:443\", \"[2001:db8::/32]:5432\"],"
                       " \"reach_from\": [\"research\", \"ops/monitoring\"]}";
    assert_int_equal(tenant(text, &s, &err), GP_OK);
    assert_int_equal(s.containers.n_egress, 2);
    assert_int_equal(s.containers.n_reach_from, 2);
    assert_string_equal(s.containers.reach_from[1], "ops/monitoring");
    assert_int_equal(s.containers.rule, GP_CONTAINER_REQUIRED);
    assert_int_equal(s.containers.n_image_sources, 2);
    assert_int_equal(s.containers.n_volumes, 2);
    assert_true(s.containers.volumes[0].read_only); /* the default */
    assert_false(s.containers.volumes[1].read_only);
    assert_true(s.containers.allow_userns_set);
    json_t *o = gp_tenant_spec_to_json(&s);
    char *dumped = json_dumps(o, GP_JSON_CANONICAL);
    assert_int_equal(tenant(dumped, &back, &err), GP_OK);
    json_t *again = gp_tenant_spec_to_json(&back);
    assert_true(json_equal(o, again));
    free(dumped);
    json_decref(again);
    json_decref(o);
    gp_tenant_spec none;
    assert_int_equal(tenant("{}", &none, &err), GP_OK);
    o = gp_tenant_spec_to_json(&none);
    assert_int_equal(json_object_size(o), 0); /* nothing set: written as before */
    json_decref(o);
}

static void bad_policies_are_refused(void **state)
{
    (void)state;
    const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"container\": \"sometimes\"}", "container"},
        {"{\"image_sources\": [\"busybox\"]}", "image_sources"},
        {"{\"image_sources\": [\"dir:relative\"]}", "image_sources"},
        {"{\"image_sources\": [\"dir:/srv/../etc\"]}", "image_sources"},
        {"{\"volumes\": [{\"name\": \"d\", \"path\": \"/\"}]}", "volumes[0].path"},
        {"{\"volumes\": [{\"name\": \"d\", \"path\": \"/proc/1\"}]}", "volumes[0].path"},
        {"{\"volumes\": [{\"name\": \"d\", \"path\": \"srv\"}]}", "volumes[0].path"},
        {"{\"volumes\": [{\"name\": \"../d\", \"path\": \"/srv\"}]}", "volumes[0].name"},
        {"{\"volumes\": [{\"name\": \"d\"}]}", "volumes[0]"},
        {"{\"volumes\": [{\"name\": \"d\", \"path\": \"/a\"}, {\"name\": \"d\", \"path\": \"/b\"}]}", "volumes"},
        {"{\"volumes\": [{\"name\": \"d\", \"path\": \"/a\", \"mode\": 1}]}", "volumes[0].mode"},
        {"{\"allow_userns\": \"yes\"}", "allow_userns"},
        {"{\"egress\": \"10.0.0.0/8\"}", "egress"},
        {"{\"egress\": [443]}", "egress"},
        {"{\"egress\": [\"10.0.0.1/8\"]}", "egress"},       /* host bits past the prefix */
        {"{\"egress\": [\"300.1.2.3\"]}", "egress"},
        {"{\"egress\": [\"192.0.2.7:0\"]}", "egress"},
        {"{\"egress\": [\"10.0.0.0/8; flush ruleset\"]}", "egress"},
        {"{\"egress\": [\"example.com:443\"]}", "egress"},
        {"{\"reach_from\": \"research\"}", "reach_from"},
        {"{\"reach_from\": [7]}", "reach_from"},
        {"{\"reach_from\": [\"\"]}", "reach_from"},
        {"{\"reach_from\": [\"/research\"]}", "reach_from"},
        {"{\"reach_from\": [\"a/../b\"]}", "reach_from"},
        {"{\"reach_from\": [\"a/b/c/d/e\"]}", "reach_from"},
        {"{\"reach_from\": [\"b; flush ruleset\"]}", "reach_from"},
        {"{\"reach_from\": [\"b } accept\"]}", "reach_from"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_tenant_spec s;
        gp_error err = {0};
        assert_int_equal(tenant(bad[i].text, &s, &err), GP_ERR_INVALID);
        if (strcmp(err.field, bad[i].field) != 0)
            fail_msg("%s: field %s, want %s", bad[i].text, err.field, bad[i].field);
    }
}

/* research (volumes, sources, userns) > research/nlp (own volume, hides scratch). */
static void the_policy_is_inherited_down_the_chain(void **state)
{
    (void)state;
    gp_tenant_spec top, leaf;
    assert_int_equal(tenant("{\"image_sources\": [\"docker://reg.example/research\"], \"allow_userns\": true,"
                            " \"egress\": [\"10.0.0.0/8:443\"], \"reach_from\": [\"ops\"],"
                            " \"volumes\": [{\"name\": \"datasets\", \"path\": \"/srv/datasets\"},"
                            " {\"name\": \"scratch\", \"path\": \"/srv/scratch\", \"read_only\": false}]}",
                            &top, NULL),
                     GP_OK);
    assert_int_equal(tenant("{\"volumes\": [{\"name\": \"scratch\", \"path\": \"/srv/scratch/nlp\", \"read_only\":"
                            " false}], \"egress\": [\"192.0.2.7\", \"10.0.0.0/8:443\"],"
                            " \"reach_from\": [\"vision/serving\", \"ops\"]}",
                            &leaf, NULL),
                     GP_OK);
    const gp_container_policy *chain[] = {&top.containers, &leaf.containers};
    gp_container_effective e;
    gp_container_effective_make(chain, 2, false, 2, &e);
    assert_false(e.required);
    assert_false(e.any_image);
    assert_true(e.allow_userns);
    assert_int_equal(e.n_volumes, 2);
    assert_string_equal(gp_container_volume(&e, "scratch")->path, "/srv/scratch/nlp");
    assert_string_equal(gp_container_volume(&e, "datasets")->path, "/srv/datasets");
    json_t *egress = gp_container_egress_json(&e); /* the leaf's and its ancestors', once each */
    json_t *want = json_pack("[s, s]", "192.0.2.7", "10.0.0.0/8:443");
    assert_true(json_equal(egress, want));
    json_decref(want);
    json_decref(egress);
    json_t *reach = gp_container_reach_from_json(&e); /* the same for reach_from */
    want = json_pack("[s, s]", "vision/serving", "ops");
    assert_true(json_equal(reach, want));
    json_decref(want);
    json_decref(reach);
    gp_container_effective_make(chain, 2, true, 1, &e);
    assert_true(e.required); /* untrusted, nothing set: required */
    gp_container_effective_make(chain, 0, false, 0, &e);
    assert_true(e.any_image);
    assert_false(e.required);
    assert_false(e.allow_userns);
}

/* org (optional) > org/lab (untrusted) > org/lab/bare (optional). */
static void optional_reaches_an_untrusted_tenant_only_from_inside_its_subtree(void **state)
{
    (void)state;
    gp_tenant_spec org, lab, bare;
    assert_int_equal(tenant("{\"container\": \"optional\"}", &org, NULL), GP_OK);
    assert_int_equal(tenant("{\"trust\": \"untrusted\"}", &lab, NULL), GP_OK);
    assert_int_equal(tenant("{\"container\": \"optional\"}", &bare, NULL), GP_OK);
    const gp_container_policy *chain[] = {&org.containers, &lab.containers, &bare.containers};
    gp_container_effective e;
    gp_container_effective_make(chain, 2, true, 1, &e); /* org/lab: org's optional is above it */
    assert_true(e.required);
    gp_container_effective_make(chain, 3, true, 1, &e); /* org/lab/bare: its own, inside the subtree */
    assert_false(e.required);
    gp_container_effective_make(chain, 1, false, 1, &e); /* org: trusted */
    assert_false(e.required);
    gp_container_effective_make(chain, 3, true, 3, &e); /* untrusted, no tenant says where: none counts */
    assert_true(e.required);
}

static gp_err admit(const gp_container_effective *e, const char *extra, gp_error *err)
{
    gp_job_request r;
    assert_int_equal(job(extra, &r, NULL), GP_OK);
    gp_err rc = gp_container_admit(e, "research/nlp", &r.container, err);
    gp_job_request_free(&r);
    return rc;
}

/* No image_sources anywhere: any registry image, never a path on the node
 * (dir:/ would make the host's root the job's). */
static void without_sources_only_registry_images_are_allowed(void **state)
{
    (void)state;
    gp_tenant_spec top;
    assert_int_equal(tenant("{}", &top, NULL), GP_OK);
    const gp_container_policy *chain[] = {&top.containers};
    gp_container_effective e;
    gp_container_effective_make(chain, 1, true, 0, &e);
    gp_error err;
    assert_int_equal(admit(&e, "\"image\": \"docker://reg.example:5000/team/x:1\"", &err), GP_OK);
    const char *paths[] = {"dir:/srv/images/a", "dir:/var", "oci:/srv/layouts/a:1"}; /* dir:/ the codec refuses */
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        char extra[256];
        snprintf(extra, sizeof extra, "\"image\": \"%s\"", paths[i]);
        assert_int_equal(admit(&e, extra, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "image");
        assert_non_null(strstr(err.message, "image_sources"));
    }
}

static void the_check_at_submit_holds_the_policy(void **state)
{
    (void)state;
    gp_tenant_spec top;
    assert_int_equal(tenant("{\"image_sources\": [\"docker://reg.example:5000/team\", \"dir:/srv/images/\"],"
                            " \"volumes\": [{\"name\": \"datasets\", \"path\": \"/srv/datasets\"}]}",
                            &top, NULL),
                     GP_OK);
    const gp_container_policy *chain[] = {&top.containers};
    gp_container_effective e;
    gp_container_effective_make(chain, 1, true, 0, &e);
    gp_error err;
    assert_int_equal(admit(&e, "", &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "image");
    assert_non_null(strstr(err.message, "requires containers"));
    assert_non_null(strstr(err.message, "untrusted"));
    const char *outside[] = {"docker://reg.example:5000/team-evil/x:1", "docker://reg.example:5001/team/x:1",
                             "docker://reg.example/team/x:1", "dir:/srv/imagesX/a", "dir:/srv/image"};
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
        char extra[256];
        snprintf(extra, sizeof extra, "\"image\": \"%s\"", outside[i]);
        assert_int_equal(admit(&e, extra, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "image");
    }
    assert_int_equal(admit(&e, "\"image\": \"docker://reg.example:5000/team/x:1\"", &err), GP_OK);
    assert_int_equal(admit(&e, "\"image\": \"docker://reg.example:5000/team:1\"", &err), GP_OK);
    assert_int_equal(admit(&e, "\"image\": \"dir:/srv/images/a\"", &err), GP_OK);
    assert_int_equal(admit(&e, "\"image\": \"dir:/srv/images/a\", \"mounts\": [{\"volume\": \"home\", \"target\":"
                               " \"/home\"}]",
                           &err),
                     GP_ERR_INVALID);
    assert_string_equal(err.field, "mounts");
    assert_int_equal(admit(&e, "\"image\": \"dir:/srv/images/a\", \"mounts\": [{\"volume\": \"datasets\", \"target\":"
                               " \"/data\", \"read_only\": false}]",
                           &err),
                     GP_ERR_INVALID);
    assert_string_equal(err.field, "mounts");
    assert_int_equal(admit(&e, "\"image\": \"dir:/srv/images/a\", \"mounts\": [{\"volume\": \"datasets\", \"target\":"
                               " \"/data\"}]",
                           &err),
                     GP_OK);
}

static void mounts_resolve_to_the_volumes_host_paths(void **state)
{
    (void)state;
    gp_tenant_spec top;
    assert_int_equal(tenant("{\"volumes\": [{\"name\": \"datasets\", \"path\": \"/srv/datasets\"}, {\"name\":"
                            " \"scratch\", \"path\": \"/srv/scratch\", \"read_only\": false}]}",
                            &top, NULL),
                     GP_OK);
    const gp_container_policy *chain[] = {&top.containers};
    gp_container_effective e;
    gp_container_effective_make(chain, 1, false, 1, &e);
    json_t *mounts = json_loads("[{\"volume\": \"datasets\", \"target\": \"/data\", \"read_only\": false},"
                                " {\"volume\": \"scratch\", \"target\": \"/s\"}, {\"volume\": \"gone\", \"target\":"
                                " \"/g\"}, {\"volume\": \"scratch\", \"target\": \"/r\", \"read_only\": true}]",
                                0, NULL);
    size_t dropped = 0;
    json_t *out = gp_container_mounts_resolve(&e, mounts, &dropped);
    json_t *want = json_loads("[{\"source\": \"/srv/datasets\", \"target\": \"/data\", \"read_only\": true},"
                              " {\"source\": \"/srv/scratch\", \"target\": \"/s\", \"read_only\": false},"
                              " {\"source\": \"/srv/scratch\", \"target\": \"/r\", \"read_only\": true}]",
                              0, NULL);
    assert_true(json_equal(out, want));
    assert_int_equal(dropped, 1);
    json_decref(want);
    json_decref(out);
    json_decref(mounts);
}

static void the_registry_of_an_image(void **state)
{
    (void)state;
    char host[256];
    assert_true(gp_image_registry("docker://reg.example:5000/team/torch:2.3", host, sizeof host));
    assert_string_equal(host, "reg.example:5000");
    assert_false(gp_image_registry("dir:/srv/images/a", host, sizeof host));
    assert_true(gp_registry_name_ok("reg.example:5000"));
    assert_false(gp_registry_name_ok("reg.example/x"));
    assert_false(gp_registry_name_ok("reg:"));
    assert_false(gp_registry_name_ok(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_jobs_container_keys_are_read_and_written_back),
        cmocka_unit_test(a_job_without_them_is_written_as_before),
        cmocka_unit_test(bad_image_references_are_refused),
        cmocka_unit_test(bad_mounts_are_refused),
        cmocka_unit_test(a_tenants_policy_is_read_and_written_back),
        cmocka_unit_test(bad_policies_are_refused),
        cmocka_unit_test(the_policy_is_inherited_down_the_chain),
        cmocka_unit_test(optional_reaches_an_untrusted_tenant_only_from_inside_its_subtree),
        cmocka_unit_test(without_sources_only_registry_images_are_allowed),
        cmocka_unit_test(the_check_at_submit_holds_the_policy),
        cmocka_unit_test(mounts_resolve_to_the_volumes_host_paths),
        cmocka_unit_test(the_registry_of_an_image),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

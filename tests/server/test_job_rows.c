/* test_job_rows.c - a job's row in the jobs table (journal.c) reads as the
 * engine holds the job: right after its submit (the row is inserted from
 * the engine's view, with no second write for the submit's own
 * decisions) and after the pass that binds it.
 */
#include "world.h"

#include <stdlib.h>
#include <string.h>

static json_t *row(world *w, uint64_t id)
{
    json_t *job = NULL;
    gp_error err;
    check(gp_store_job_get(w->store, id, &job, &err), &err, "job get");
    assert_non_null(job);
    return job;
}

static void expect_engine_view(world *w, json_t *job, uint64_t id, const char *state)
{
    char why[512];
    gp_engine_why(w->journal.engine, id, why, sizeof why);
    assert_string_equal(json_string_value(json_object_get(job, "state")), state);
    assert_string_equal(json_string_value(json_object_get(job, "reason")), why);
}

static void a_submitted_jobs_row_reads_as_the_engine_says_before_any_pass(void **state)
{
    world *w = *state;
    tenant(w, "lab", "{}", 0);
    node(w, "{\"name\": \"h0\", \"gpu_type\": \"H100\", \"gpu_count\": 1}", 0);
    json_t *body = parse("{\"tenant\": \"lab\", \"user\": \"ann\", \"gpus\": 1}");
    gp_job_request req;
    gp_error err;
    check(gp_job_request_parse(body, false, &req, &err), &err, "job spec");
    check(gp_store_begin(w->store, &err), &err, "begin");
    commit(w, gp_journal_submit(&w->journal, &req, 10, &err), &err, "submit");
    uint64_t id = req.spec.id;
    gp_job_request_free(&req);
    json_decref(body);

    json_t *job = row(w, id);
    expect_engine_view(w, job, id, "pending");
    assert_string_equal(json_string_value(json_object_get(job, "user")), "ann");
    assert_int_equal(json_integer_value(json_object_get(job, "submit_time")), 10);
    json_t *placement = json_object_get(job, "placement");
    assert_true(!placement || json_is_null(placement));
    json_decref(job);

    tick(w, 11);
    job = row(w, id);
    expect_engine_view(w, job, id, "running");
    assert_int_equal(json_integer_value(json_object_get(job, "bind_time")), 11);
    assert_true(json_is_array(json_object_get(job, "placement")));
    json_decref(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_submitted_jobs_row_reads_as_the_engine_says_before_any_pass, world_setup,
                                        world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#!/usr/bin/env python3
"""Job arrays as a handle (issue 32 item 9): /v1/arrays/{id} and the CLI's 13_[0-19].

A real gpupoold (examples/fleet.yaml, examples/tenants.yaml); research/nlp
is limited to 1 H100 so that an array's member 0 runs and the rest wait.
alice and bob are members of research/nlp; its cancel is the default, own.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from test_job_control import setup  # noqa: E402  research/nlp limited to 1 H100; alice, bob, auditor

JOB = {"tenant": "research/nlp", "gpus": 1, "gpu_types": ["H100"], "checkpoint_grace_s": 0,
       "command": ["sh", "-c", "train --shard $GPUPOOL_ARRAY_INDEX"]}


def submit_array(d, tok, n=20):
    return d.ok("POST", "/v1/jobs:batch", {"job": JOB, "array": n}, token=tok)


def states(d, array_id):
    return {m["array_index"]: m["state"] for m in d.ok("GET", "/v1/arrays/%d" % array_id)["members"]}


def test_an_array_has_an_id_and_each_member_its_index(d):
    toks = setup(d)
    out = submit_array(d, toks["alice"])
    aid = out["array_id"]
    assert aid == out["ids"][0], out
    for i, job in enumerate(out["jobs"]):
        assert job["array_id"] == aid and job["array_index"] == i, job
    job = d.ok("GET", "/v1/jobs/%d" % out["ids"][4])
    assert job["array_id"] == aid and job["array_index"] == 4, job
    view = d.ok("GET", "/v1/arrays/%d?index=0-1" % aid, token=toks["alice"])
    assert view["size"] == 20 and [m["array_index"] for m in view["members"]] == [0, 1], view
    # a list of jobs is no array; one job is no array
    lst = d.ok("POST", "/v1/jobs:batch", {"jobs": [JOB, JOB]})
    assert "array_id" not in lst and all("array_id" not in j for j in lst["jobs"]), lst
    st, err = d.call("GET", "/v1/arrays/%d" % lst["ids"][0])
    assert st == 404 and err["error"]["field"] == "id", (st, err)
    # a caller cannot make its job a member of someone's array
    st, err = d.call("POST", "/v1/jobs", dict(JOB, array_id=aid, array_index=20), token=toks["bob"])
    assert st == 400 and err["error"]["field"] == "array_id", (st, err)
    st, err = d.call("POST", "/v1/jobs:batch", {"job": dict(JOB, array_index=3), "array": 2})
    assert st == 400 and err["error"]["field"] == "job.array_index", (st, err)
    # membership is durable: after a restart the array is still one handle
    d.stop()
    d.start()
    assert len(states(d, aid)) == 20
    assert d.ok("GET", "/v1/jobs/%d" % out["ids"][19])["array_index"] == 19


def test_cancel_a_range_then_the_whole_array(d):
    toks = setup(d)
    aid = submit_array(d, toks["alice"])["array_id"]
    out = d.ok("DELETE", "/v1/arrays/%d?index=5-9,12" % aid, token=toks["alice"])
    assert [m["array_index"] for m in out["changed"]] == [5, 6, 7, 8, 9, 12], out
    assert all(m["state"] == "cancelled" for m in out["changed"]) and out["skipped"] == [], out
    s = states(d, aid)
    assert {i for i, v in s.items() if v == "cancelled"} == {5, 6, 7, 8, 9, 12}, s
    # the whole array: the live rest; the ended ones are skipped, said so
    out = d.ok("DELETE", "/v1/arrays/%d" % aid, token=toks["alice"])
    assert len(out["changed"]) == 14 and len(out["skipped"]) == 6, out
    assert all(m["state"] == "cancelled" for m in out["skipped"]), out
    gpd.wait_for(lambda: set(states(d, aid).values()) == {"cancelled"}, what="every member cancelled")
    st, err = d.call("DELETE", "/v1/arrays/%d" % aid, token=toks["alice"])
    assert st == 409 and err["error"]["field"] == "id" and "no member named is live" in err["error"]["message"], err


def test_hold_and_release_a_member_and_the_whole_array(d):
    toks = setup(d)
    aid = submit_array(d, toks["alice"], n=4)["array_id"]
    out = d.ok("PATCH", "/v1/arrays/%d?index=2" % aid, {"hold": True}, token=toks["alice"])
    assert [m["array_index"] for m in out["changed"]] == [2], out
    assert out["changed"][0]["reason"].startswith("held by alice"), out
    assert d.ok("GET", "/v1/jobs/%d" % (aid + 2))["held"] is True
    # the whole array: member 0 runs (skipped), 1-3 pending are held
    out = d.ok("PATCH", "/v1/arrays/%d" % aid, {"hold": True, "priority": 4}, token=toks["alice"])
    assert [m["array_index"] for m in out["changed"]] == [1, 2, 3], out
    assert [(m["array_index"], m["state"]) for m in out["skipped"]] == [(0, "running")], out
    for i in (1, 2, 3):
        job = d.ok("GET", "/v1/jobs/%d" % (aid + i))
        assert job["held"] is True and job["priority"] == 4, job
    d.ok("DELETE", "/v1/jobs/%d" % aid)  # room frees: the held members stay
    out = d.ok("PATCH", "/v1/arrays/%d?index=3" % aid, {"hold": False}, token=toks["alice"])
    assert out["changed"][0]["array_index"] == 3
    gpd.wait_for(lambda: states(d, aid)[3] == "running", what="the released member to run")
    assert states(d, aid)[1] == "pending" and d.ok("GET", "/v1/jobs/%d" % (aid + 1))["held"] is True
    # a running member alone cannot change: 409 as for one job
    st, err = d.call("PATCH", "/v1/arrays/%d?index=3" % aid, {"hold": True}, token=toks["alice"])
    assert st == 409 and err["error"]["field"] == "hold", (st, err)


def test_another_users_array_is_refused_under_own_only_cancel(d):
    toks = setup(d)
    aid = submit_array(d, toks["alice"], n=5)["array_id"]
    for method, body in (("DELETE", None), ("PATCH", {"hold": True})):
        for path in ("/v1/arrays/%d" % aid, "/v1/arrays/%d?index=1-2" % aid):
            st, err = d.call(method, path, body, token=toks["bob"])
            assert st == 403 and err["error"]["field"] == "id", (method, path, st, err)
    for method, body in (("DELETE", None), ("PATCH", {"hold": True})):
        st, err = d.call(method, "/v1/arrays/%d" % aid, body, token=toks["auditor"])
        assert st == 403, (st, err)
    assert set(states(d, aid).values()) <= {"running", "pending"}
    assert not any(d.ok("GET", "/v1/jobs/%d" % (aid + i))["held"] for i in range(1, 5))
    # another tenant's member does not see the array at all
    other = d.ok("POST", "/v1/tokens", {"name": "eve", "role": "member", "scope": "product/search",
                                        "user": "eve"})["token"]
    for method in ("GET", "DELETE"):
        st, err = d.call(method, "/v1/arrays/%d" % aid, token=other)
        assert st == 404 and err["error"]["field"] == "id", (st, err)
    # the tenant's cancel `tenant` lets bob cancel alice's members, not hold them
    d.ok("PATCH", "/v1/tenants/research/nlp", {"cancel": "tenant"})
    st, _ = d.call("PATCH", "/v1/arrays/%d" % aid, {"hold": True}, token=toks["bob"])
    assert st == 403
    out = d.ok("DELETE", "/v1/arrays/%d?index=4" % aid, token=toks["bob"])
    assert out["changed"][0]["state"] == "cancelled", out


def test_bad_ranges_are_400_and_missing_members_404(d):
    toks = setup(d)
    aid = submit_array(d, toks["alice"], n=20)["array_id"]
    for text in ("5-3", "1,,2", "a", "-1", "1-7:2", "10000", "", "0-3%25"):
        st, err = d.call("DELETE", "/v1/arrays/%d?index=%s" % (aid, text), token=toks["alice"])
        assert st == 400 and err["error"]["field"] == "index", (text, st, err)
    st, err = d.call("DELETE", "/v1/arrays/%d?index=18-25,30" % aid, token=toks["alice"])
    assert st == 404 and err["error"]["field"] == "index", (st, err)
    assert err["error"]["message"] == "array %d has members 0-19; not 20-25,30" % aid, err
    st, err = d.call("DELETE", "/v1/arrays/abc", token=toks["alice"])
    assert st == 400 and err["error"]["field"] == "id", (st, err)
    st, err = d.call("DELETE", "/v1/arrays/%d?members=1" % aid, token=toks["alice"])
    assert st == 400, (st, err)
    st, err = d.call("PATCH", "/v1/arrays/%d" % aid, {"gpus": 2}, token=toks["alice"])
    assert st == 400 and err["error"]["field"] == "gpus", (st, err)
    assert set(states(d, aid).values()) <= {"running", "pending"}, "a refused request changed nothing"


def rows(out):
    return {line.split()[0]: line for line in out.splitlines()[1:] if line.strip()}


def test_the_cli_names_members_as_slurm_does(d):
    toks = setup(d)
    out = d.cli("submit", "--tenant", "research/nlp", "--gpus", "1", "--gpu-type", "H100", "--array", "6", "--",
                "sleep", "600", token=toks["alice"]).stdout
    a = int(out.splitlines()[1].split("_")[0])
    assert set(rows(out)) == {"%d_0" % a, "%d_[1-5]" % a}, out  # squeue's fold of the pending rest
    out = d.cli("hold", "%d_[2-3]" % a, token=toks["alice"]).stdout
    assert out.splitlines() == ["job %d_%d (id %d): pending, held by alice: it is not placed until released "
                                "(gpupool release %d)" % (a, i, a + i, a + i) for i in (2, 3)], out
    table = rows(d.cli("jobs").stdout)
    assert {"%d_[1,4-5]" % a, "%d_2" % a, "%d_3" % a, "%d_0" % a} == set(table), table
    assert "held by alice" in table["%d_2" % a], table
    assert "array        %d_2 (member 2 of array %d)" % (a, a) in d.cli("job", "%d_2" % a).stdout
    listed = d.cli("jobs", "-o", "json", json_out=True)["jobs"]
    assert sorted((j["array_id"], j["array_index"]) for j in listed) == [(a, i) for i in range(6)], listed
    # bad text: a usage error naming it, nothing sent
    for text, why in (("%d_[5-3]" % a, "5-3: the range ends before it starts"), ("%d_[1,,2]" % a, "an empty item"),
                      ("%dx" % a, "not a job id"), ("%d_[0-3" % a, "without its ']'")):
        r = d.cli("cancel", "%d_0" % a, text, token=toks["alice"], check=False)
        assert r.returncode == 2 and text in r.stderr and why in r.stderr, (text, r.returncode, r.stderr)
    assert d.ok("GET", "/v1/jobs/%d" % a)["state"] == "running", "a bad handle later on the line cancels nothing"
    r = d.cli("cancel", "%d_[4-9]" % a, token=toks["alice"], check=False)
    assert r.returncode != 0 and "array %d has members 0-5; not 6-9" % a in r.stderr, r.stderr
    r = d.cli("job", "%d_[1-2]" % a, check=False)
    assert r.returncode == 2 and "one member" in r.stderr, r.stderr
    assert d.cli("why", "%d_4" % a).stdout.startswith("job %d (research/nlp, alice): pending" % (a + 4))
    # the whole array by its id; another user's under own-only cancel is refused
    r = d.cli("cancel", str(a), token=toks["bob"], check=False)
    assert r.returncode != 0 and "403" in r.stderr, r.stderr
    assert set(states(d, a).values()) == {"running", "pending"}
    out = d.cli("release", str(a), token=toks["alice"]).stdout
    assert "job %d_2 (id %d): pending" % (a, a + 2) in out and "job %d_0 (id %d): skipped, running" % (a, a) in out, out
    out = d.cli("cancel", str(a), token=toks["alice"]).stdout
    assert len(out.splitlines()) == 6 and "job %d_5 (id %d): cancelled" % (a, a + 5) in out, out
    # an id of no array is that job alone, as before
    one = d.ok("POST", "/v1/jobs", JOB, token=toks["alice"])
    lst = d.ok("POST", "/v1/jobs:batch", {"jobs": [JOB, JOB]}, token=toks["alice"])
    d.cli("cancel", str(lst["ids"][0]), token=toks["alice"])
    assert d.ok("GET", "/v1/jobs/%d" % lst["ids"][1])["state"] == "pending"
    r = d.cli("cancel", "%d_0" % one["id"], token=toks["alice"], check=False)
    assert r.returncode != 0 and "no array %d" % one["id"] in r.stderr, r.stderr
    r = d.cli("cancel", "99999", check=False)  # one error, not one for the look-up too
    assert r.returncode != 0 and r.stderr.count("error 404") == 1, r.stderr


if __name__ == "__main__":
    gpd.run([test_an_array_has_an_id_and_each_member_its_index, test_cancel_a_range_then_the_whole_array,
             test_hold_and_release_a_member_and_the_whole_array,
             test_another_users_array_is_refused_under_own_only_cancel,
             test_bad_ranges_are_400_and_missing_members_404, test_the_cli_names_members_as_slurm_does])

#!/usr/bin/env python3
"""Who a job runs as, and what a tenant lets its jobs use (issue 29).

The attacks of issue 29's first finding, as a hostile tenant-admin of
product/ads (untrusted) and through an admin's hands:
  - a member token for "root", "nobody", a system user ("daemon", uid 1
    here, below --min-job-uid) or an all-digit name: 400 user; a job an
    admin submits naming them: the same;
  - a token for alice, bound to research/nlp by her first token, minted by
    product/ads' tenant-admin: 400 user; an admin's product/ads job as
    alice: 400 user, alone or inside a batch (nothing submitted); a token
    scoped above alice's tenant: 400 user.  A user an admin's job names
    first is bound to that job's tenant.  An admin moves a user (PUT
    /v1/users/NAME) and forgets one (DELETE); nobody else may; a store
    from before bindings binds each user to its oldest live token's scope;
  - tenant job defaults and maximums (job_defaults, job_max): a job that
    sets nothing gets the nearest tenant's values (a maximum with no
    default is the default), one over the maximum is 400 naming the field,
    a child's maximum over its parent's and a parent's maximum under a
    child's default are refused; the values survive a restart;
  - the assignment a node agent polls carries uid_min (gpupoold's
    --min-job-uid), trust (the tenant's effective trust) and pids_max.
"""
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

MIN_UID = 2000


def token(d, scope, user, role="member", by=None, expect=201):
    status, out = d.call("POST", "/v1/tokens", {"name": "t-%s-%s" % (user, scope.replace("/", "-")), "role": role,
                                                "scope": scope, "user": user}, token=by)
    assert status == expect, (scope, user, status, out)
    return out


def refused(status, out, field="user", text=None):
    assert status == 400 and out["error"]["field"] == field, (status, out)
    assert text is None or text in out["error"]["message"], out


def tenant_admin(d, scope):
    return d.ok("POST", "/v1/tokens", {"name": "ta-" + scope.replace("/", "-"), "role": "tenant-admin",
                                       "scope": scope})["token"]


def test_root_and_system_users_are_refused(d):
    d.cli("apply", "-f", gpd.TENANTS)
    ads = tenant_admin(d, "product/ads")
    for by in (ads, None):
        for user in ("root", "nobody", "daemon", "0", "-x", "a/b"):
            refused(*d.call("POST", "/v1/tokens", {"name": "m", "role": "member", "scope": "product/ads",
                                                   "user": user}, token=by))
    status, out = d.call("POST", "/v1/tokens", {"name": "m", "role": "member", "scope": "product/ads",
                                                "user": "daemon"})
    refused(status, out, text="uid 1 on this host, below gpupoold's --min-job-uid %d" % MIN_UID)
    for user in ("root", "daemon"):
        refused(*d.call("POST", "/v1/jobs", {"tenant": "product/ads", "gpus": 1, "user": user}))
    assert d.ok("GET", "/v1/jobs")["jobs"] == [] and d.ok("GET", "/v1/users")["users"] == []
    # a name this host does not know is the node's to resolve and check
    assert token(d, "product/ads", "mallory", by=ads)["user"] == "mallory"


def test_a_user_stays_in_its_tenant(d):
    d.cli("apply", "-f", gpd.TENANTS)
    nlp, ads, research = (tenant_admin(d, s) for s in ("research/nlp", "product/ads", "research"))
    alice = token(d, "research/nlp", "alice", by=nlp)["token"]
    # another tenant's admin, or a scope above hers, cannot have her
    refused(*d.call("POST", "/v1/tokens", {"name": "a", "role": "member", "scope": "product/ads", "user": "alice"},
                    token=ads), text="belongs to another tenant")
    users = d.ok("GET", "/v1/users")["users"]
    assert [(u["name"], u["tenant"]) for u in users] == [("alice", "research/nlp")], users
    refused(*d.call("POST", "/v1/tokens", {"name": "a", "role": "member", "scope": "research", "user": "alice"},
                    token=research))
    token(d, "research/nlp", "alice", by=research)
    d.ok("PUT", "/v1/users/erin", {"tenant": "research"})  # research's, not research/nlp's to act as
    refused(*d.call("POST", "/v1/tokens", {"name": "e", "role": "member", "scope": "research/nlp", "user": "erin"},
                    token=nlp))
    token(d, "research/nlp", "erin", by=research)
    # nor can an admin's job of another tenant, alone or in a batch
    refused(*d.call("POST", "/v1/jobs", {"tenant": "product/ads", "gpus": 1, "user": "alice"}))
    status, out = d.call("POST", "/v1/jobs:batch", {"jobs": [{"tenant": "research/nlp", "gpus": 1, "user": "alice"},
                                                             {"tenant": "product/ads", "gpus": 1, "user": "alice"}]})
    refused(status, out, field="jobs[1].user")
    assert d.ok("GET", "/v1/jobs")["jobs"] == []
    assert d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "user": "alice"})["user"] == "alice"
    assert d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1}, token=alice)["user"] == "alice"
    # an admin's job binds a new user to its tenant; a batch binds it once
    d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 1, "user": "carol"})
    refused(*d.call("POST", "/v1/tokens", {"name": "c", "role": "member", "scope": "product/ads", "user": "carol"},
                    token=ads))
    status, out = d.call("POST", "/v1/jobs:batch", {"jobs": [{"tenant": "research/vision", "gpus": 1, "user": "dave"},
                                                             {"tenant": "product/search", "gpus": 1, "user": "dave"}]})
    refused(status, out, field="jobs[1].user")
    # only an admin moves or forgets a user
    for by in (ads, nlp, alice):
        status, _ = d.call("PUT", "/v1/users/alice", {"tenant": "product/ads"}, token=by)
        assert status == 403, status
        status, _ = d.call("DELETE", "/v1/users/carol", token=by)
        assert status == 403, status
    refused(*d.call("PUT", "/v1/users/root", {"tenant": "product/ads"}))
    refused(*d.call("PUT", "/v1/users/alice", {"tenant": "product/ads", "x": 1}), field="x")
    assert d.call("PUT", "/v1/users/alice", {"tenant": "no/such"})[0] == 404
    moved = d.ok("PUT", "/v1/users/alice", {"tenant": "product/ads"})
    assert moved["name"] == "alice" and moved["tenant"] == "product/ads", moved
    token(d, "product/ads", "alice", by=ads)
    refused(*d.call("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1}, token=alice))
    assert d.ok("DELETE", "/v1/users/carol")["unbound"] == "carol"
    assert d.call("DELETE", "/v1/users/carol")[0] == 404
    token(d, "product/ads", "carol", by=ads)
    seen = {u["name"]: u["tenant"] for u in d.ok("GET", "/v1/users", token=ads)["users"]}
    assert seen == {"alice": "product/ads", "carol": "product/ads"}, seen  # its own subtree only
    out = d.cli("users", json_out=True)["users"]
    assert {u["name"] for u in out} == {"alice", "carol", "erin"}, out  # the refused batch bound nobody


def test_an_upgraded_store_binds_users_by_their_oldest_token(d):
    d.cli("apply", "-f", gpd.TENANTS)
    token(d, "research/nlp", "alice")
    d.ok("DELETE", "/v1/users/alice")
    later = token(d, "product/ads", "alice")["token"]  # as a store from before bindings could hold it
    token(d, "product/search", "bob")
    d.stop()
    with sqlite3.connect(os.path.join(d.dir, "gpupool.db")) as c:  # back to schema 9: no bindings
        for undo in ("DROP TABLE user_tenants", "DROP TABLE node_approvals", "DROP TABLE secrets",
                     "ALTER TABLE tokens DROP COLUMN single_use",  # what schema 10 added
                     "DROP TABLE gpu_types", "DROP TABLE rolebindings"):  # and schemas 11, 12
            c.execute(undo)
        c.execute("PRAGMA user_version = 9")
        c.execute("UPDATE tokens SET created = created - 10 WHERE scope = 'research/nlp'")  # the oldest, surely
    d.start()
    seen = {u["name"]: u["tenant"] for u in d.ok("GET", "/v1/users")["users"]}
    assert seen == {"alice": "research/nlp", "bob": "product/search"}, seen
    refused(*d.call("POST", "/v1/jobs", {"tenant": "product/ads", "gpus": 1}, token=later))


def test_tenant_job_defaults_and_maximums(d):
    d.cli("apply", "-f", gpd.TENANTS)
    d.ok("PATCH", "/v1/tenants/research", {"job_max": {"pids_max": 4096, "mem_mib": 65536}})
    d.ok("PATCH", "/v1/tenants/research/nlp", {"job_defaults": {"cpu_millis": 4000, "mem_mib": 16384}})
    view = d.ok("GET", "/v1/tenants/research/nlp")
    assert view["job_defaults"] == {"cpu_millis": 4000, "mem_mib": 16384, "pids_max": 4096}, view
    assert view["job_max"] == {"cpu_millis": None, "mem_mib": 65536, "pids_max": 4096}, view

    plain = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1})
    assert (plain["cpu_millis"], plain["mem_mib"], plain["pids_max"]) == (4000, 16384, 4096), plain
    own = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "pids_max": 100, "cpu_millis": 500})
    assert (own["cpu_millis"], own["mem_mib"], own["pids_max"]) == (500, 16384, 100), own
    vision = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 1})  # research's maximums
    assert (vision["cpu_millis"], vision["mem_mib"], vision["pids_max"]) == (0, 65536, 4096), vision
    refused(*d.call("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "mem_mib": 131072}), field="mem_mib",
            text="more than the 65536 that research/nlp allows")
    refused(*d.call("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "pids_max": 5000}), field="pids_max")
    refused(*d.call("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "pids_max": -1}), field="pids_max")
    status, out = d.call("POST", "/v1/jobs:batch", {"job": {"tenant": "research/nlp", "gpus": 1}, "array": 2})
    assert status == 201 and [j["pids_max"] for j in out["jobs"]] == [4096, 4096], (status, out)
    status, out = d.call("POST", "/v1/jobs:batch", {"jobs": [{"tenant": "research/nlp", "pids_max": 9999}]})
    refused(status, out, field="jobs[0].pids_max")
    # the tree's rules
    refused(*d.call("PATCH", "/v1/tenants/research/nlp", {"job_max": {"pids_max": 8192}}), field="job_max.pids_max")
    refused(*d.call("PATCH", "/v1/tenants/research", {"job_max": {"mem_mib": 8192}}), field="job_defaults.mem_mib",
            text="research/nlp")
    refused(*d.call("PATCH", "/v1/tenants/research", {"job_defaults": {"cpu_millis": -1}}),
            field="job_defaults.cpu_millis")
    refused(*d.call("PATCH", "/v1/tenants/research", {"job_max": {"gpus": 1}}), field="job_max.gpus")
    assert d.ok("GET", "/v1/tenants/research")["job_max"]["mem_mib"] == 65536
    # tenant files take the fields too (gpupool apply)
    path = os.path.join(d.dir, "limits.yaml")
    with open(path, "w") as f:
        f.write("tenants:\n  - path: research/audio\n    job_defaults: {pids_max: 256}\n    job_max: {cpu_millis: 8000}\n")
    out = d.cli("apply", "-f", path).stdout
    assert "research/audio  job_defaults.pids_max: (none) -> 256" in out, out
    audio = d.ok("GET", "/v1/tenants/research/audio")
    assert audio["job_defaults"] == {"cpu_millis": 8000, "mem_mib": 65536, "pids_max": 256}, audio
    # a restart replays the same tenants and jobs
    d.stop()
    d.start()
    again = d.ok("GET", "/v1/jobs/%d" % plain["id"])
    assert (again["cpu_millis"], again["mem_mib"], again["pids_max"]) == (4000, 16384, 4096), again
    refused(*d.call("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "mem_mib": 131072}), field="mem_mib")


def test_the_assignment_carries_what_the_agent_checks(d):
    d.cli("apply", "-f", gpd.TENANTS)
    d.ok("PATCH", "/v1/tenants/product", {"job_defaults": {"pids_max": 512, "cpu_millis": 2000}})
    node = {"name": "t4-0", "gpu_type": "T4", "gpu_count": 2, "zone": "z1", "block": "blk-t",
            "gpu_uuids": ["GPU-t4-0-0", "GPU-t4-0-1"], "gpu_mem_mib": 16384, "cpu_millis": 32000, "mem_mib": 131072}
    cred = d.ok("POST", "/v1/agents:register", {"node": node})["token"]
    ads = d.ok("POST", "/v1/jobs", {"tenant": "product/ads", "gpus": 1, "gpu_types": ["T4"], "user": "mallory",
                                  "image": "docker://reg.example:5000/ads/base:1"})
    nlp = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "gpu_types": ["T4"], "user": "alice"})

    def entries():
        out = d.ok("GET", "/v1/agents/t4-0/assignments?after=0&wait=0", token=cred)
        got = {a["job"]: a for a in out["assignments"]}
        return got if len(got) == 2 else None
    got = gpd.wait_for(entries, what="both jobs assigned to t4-0")
    a, b = got[ads["id"]], got[nlp["id"]]
    assert (a["user"], a["trust"], a["uid_min"], a["pids_max"], a["cpu_millis"]) == \
        ("mallory", "untrusted", MIN_UID, 512, 2000), a
    assert (b["user"], b["trust"], b["uid_min"]) == ("alice", "trusted", MIN_UID) and "pids_max" not in b, b


if __name__ == "__main__":
    gpd.run([test_root_and_system_users_are_refused, test_a_user_stays_in_its_tenant,
             test_an_upgraded_store_binds_users_by_their_oldest_token, test_tenant_job_defaults_and_maximums, test_the_assignment_carries_what_the_agent_checks],
            extra=["--min-job-uid", str(MIN_UID)])

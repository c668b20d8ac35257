#!/usr/bin/env python3
"""One spelling per GPU type, unknown types refused in quotas, declared
types, and an apply judged on the tree it leaves (issue 32, items 1, 2, 6).

Each test starts a real gpupoold (examples/fleet.yaml: H100, A100, L40S
nodes; examples/tenants.yaml applied) with a fresh SQLite store:
  - a type written in another case (h100) in a quota (PATCH, PUT, apply,
    `gpupool quota set`), a job's gpu_types, a price or the fleet file is
    the fleet's H100 in the store, the diff and the views; a store written before with two
    spellings of one type is merged at start, keeping the amount in force;
  - a quota naming a type no node has and no admin declared is refused
    like a job's (known types listed, "did you mean"), and nothing changes;
    a removed limit does not make a type known;
  - an admin declares a type (PUT /v1/gpu-types/H200, `gpupool gpu-types
    declare`): quotas and jobs may name it at once, no quota needed; a job
    of it is refused as one no node could hold (422 never_fits
    "gpu_types") unless it asks to wait for the fleet, then it waits,
    saying no node of the type has joined, through a restart (the log
    replays the declaration before the job), and runs when a node of the
    type joins; a store declared before declarations were logged learns
    them at start;
  - an apply shrinks a parent and its children in one file in any order,
    and keeps the fields an entry does not name (null clears one).
"""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from test_tenant_updates import apply_text  # noqa: E402


def setup(d):
    d.cli("apply", "-f", gpd.TENANTS)


def db(d):
    return sqlite3.connect(os.path.join(d.dir, "gpupool.db"))


def stored(d, path):
    c = db(d)
    try:
        row = c.execute("SELECT spec_json FROM tenants WHERE path = ?", (path,)).fetchone()
        return json.loads(row[0]) if row else None
    finally:
        c.close()


def test_a_type_in_another_case_is_the_fleets(d):
    setup(d)
    p = d.cli("quota", "set", "research/vision", "--limit", "h100=10")
    assert "limit.gpu.H100: 24 -> 10" in p.stdout, p.stdout
    assert stored(d, "research/vision")["limit"] == {"gpu": {"H100": 10}}, stored(d, "research/vision")
    p = d.cli("quota", "set", "research/vision", "--limit", "H100=20")
    assert "limit.gpu.H100: 10 -> 20" in p.stdout, p.stdout
    view = d.ok("GET", "/v1/tenants/research/vision")
    assert view["limit"]["gpu"] == {"H100": 20}, view
    # a PUT and an apply say it the same way
    d.ok("PUT", "/v1/tenants/research/vision", {"guarantee": {"gpu": {"h100": 8}}, "limit": {"gpu": {"h100": 12}}})
    assert stored(d, "research/vision") == {"guarantee": {"gpu": {"H100": 8}}, "limit": {"gpu": {"H100": 12}}}
    p = apply_text(d, "tenants:\n  - path: research/vision\n    limit: {gpu: {h100: 16}}\n", "--dry-run")
    assert "limit.gpu.H100: 12 -> 16" in p.stdout and "h100" not in p.stdout, p.stdout
    # one quota naming a type twice is refused
    st, out = d.call("PATCH", "/v1/tenants/research/vision", {"limit": {"gpu": {"h100": 1, "H100": 2}}})
    assert st == 400 and "twice" in out["error"]["message"], (st, out)
    # a job's gpu_types and a price
    job = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 1, "gpu_types": ["h100"],
                                    "command": ["true"]})
    assert d.ok("GET", "/v1/jobs/%d" % job["id"])["gpu_types"] == ["H100"]
    d.ok("PUT", "/v1/prices", {"effective": 4102444800, "gpu_types": {"h100": "2.50"}})
    assert list(d.ok("GET", "/v1/prices")["versions"][-1]["gpu_types"]) == ["H100"]


def test_a_store_with_two_spellings_is_merged_at_start(d):
    setup(d)
    d.ok("PATCH", "/v1/tenants/research/vision", {"limit": {"gpu": {"H100": 10}}})
    d.stop()
    c = db(d)  # as main wrote it before: {"H100": 20, "h100": 10}, the later one (10) in force
    c.execute("UPDATE tenants SET spec_json = ? WHERE path = 'research/vision'",
              ('{"guarantee":{"gpu":{"H100":8}},"limit":{"gpu":{"H100":20,"h100":10}}}',))
    c.execute("UPDATE tenants SET spec_json = ? WHERE path = 'product/ads'",
              ('{"guarantee":{"gpu":{"l40s":4}},"limit":{"gpu":{"L40S":8}},"trust":"untrusted"}',))
    c.commit()
    c.close()
    d.start()
    assert stored(d, "research/vision")["limit"] == {"gpu": {"H100": 10}}, stored(d, "research/vision")
    assert stored(d, "product/ads")["guarantee"] == {"gpu": {"L40S": 4}}, stored(d, "product/ads")
    assert d.ok("GET", "/v1/tenants/research/vision")["limit"]["gpu"] == {"H100": 10}
    p = d.cli("quota", "set", "research/vision", "--limit", "H100=20")
    assert "limit.gpu.H100: 10 -> 20" in p.stdout, p.stdout


def test_a_fleet_file_naming_a_type_in_another_case_names_the_fleets(d):
    d.stop()
    with open(gpd.FLEET) as f:
        text = f.read()
    assert "gpu_type: H100" in text
    d.fleet = os.path.join(d.dir, "fleet.yaml")
    with open(d.fleet, "w") as f:
        f.write(text.replace("gpu_type: H100", "gpu_type: h100"))
    d.start()  # the same nodes, not "changed its type"
    types = {n["gpu_type"] for n in d.ok("GET", "/v1/nodes")["nodes"]}
    assert types == {"H100", "A100", "L40S"}, types


def refused(st, out, field, typed):
    assert st == 400 and out["error"]["field"].endswith(field), (st, out)
    msg = out["error"]["message"]
    assert ("no GPU type %s in the fleet" % typed) in msg and "known: H100, A100, L40S" in msg, msg


def test_unknown_types_are_refused_in_quotas(d):
    setup(d)
    before = stored(d, "research/vision")
    st, out = d.call("PATCH", "/v1/tenants/research/vision", {"limit": {"gpu": {"H1OO": 4}}})
    refused(st, out, "limit.gpu.H1OO", "H1OO")
    assert "did you mean H100?" in out["error"]["message"], out
    st, out = d.call("PUT", "/v1/tenants/research/vision", {"limit": {"gpu": {"H200": 4}}})
    refused(st, out, "limit.gpu.H200", "H200")
    p = apply_text(d, "tenants:\n  - path: research/vision\n    limit: {gpu: {H1OO: 4}}\n", check=False)
    assert p.returncode != 0 and "no GPU type H1OO in the fleet" in p.stderr, (p.returncode, p.stderr)
    p = d.cli("quota", "set", "research/vision", "--limit", "H200=4", check=False)
    assert p.returncode != 0 and "no GPU type H200" in p.stderr, p.stderr
    assert stored(d, "research/vision") == before
    st, out = d.call("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 1, "gpu_types": ["H1OO"],
                                          "command": ["true"]})
    refused(st, out, "gpu_types", "H1OO")


def test_a_declared_type_is_known_until_undeclared(d):
    setup(d)
    tok = d.ok("POST", "/v1/tokens", {"name": "ra", "role": "tenant-admin", "scope": "research"})["token"]
    st, _ = d.call("PUT", "/v1/gpu-types/H200", token=tok)
    assert st == 403
    p = d.cli("gpu-types", "declare", "H200")
    assert "H200 declared" in p.stdout, p.stdout
    d.cli("quota", "set", "research/vision", "--limit", "h200=4")
    assert stored(d, "research/vision")["limit"]["gpu"] == {"H100": 24, "H200": 4}
    job = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 1, "gpu_types": ["H200"],
                                    "command": ["true"], "wait_for_fleet": True})
    view = d.ok("GET", "/v1/jobs/%d" % job["id"])
    assert view["state"] == "pending", view
    assert view["reason"].startswith("no node of GPU type H200 has joined the fleet yet"), view
    d.ok("DELETE", "/v1/jobs/%d" % job["id"])
    types = {t["name"]: t for t in d.ok("GET", "/v1/gpu-types")["gpu_types"]}
    assert types["H200"]["declared"] and types["H200"]["gpus"] == 0 and types["H100"]["gpus"] > 0, types
    d.stop()
    d.start()
    assert any(t["name"] == "H200" for t in d.ok("GET", "/v1/gpu-types")["gpu_types"])
    # undeclared and its limit removed: no longer known, for jobs too
    d.cli("gpu-types", "undeclare", "H200")
    d.ok("PATCH", "/v1/tenants/research/vision", {"limit": {"gpu": {"H200": None}}})
    st, out = d.call("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 1, "gpu_types": ["H200"],
                                          "command": ["true"]})
    refused(st, out, "gpu_types", "H200")


H200_NODE = """  - name: h200-e-0
    zone: us-east-1a
    block: blk-e
    gpu_type: H200
    gpus: 8
    gpu_mem_mib: 143360
    cpu_millis: 192000
    mem_mib: 2097152
"""


def h200_job(d, **extra):
    body = {"tenant": "research/vision", "gpus": 1, "gpu_types": ["h200"], "command": ["true"]}
    body.update(extra)
    return d.call("POST", "/v1/jobs", body)


def test_a_declared_type_no_quota_names_takes_jobs_that_wait_for_its_nodes(d):
    setup(d)
    d.cli("gpu-types", "declare", "H200")
    c = db(d)
    specs = [r[0] for r in c.execute("SELECT spec_json FROM tenants")]
    c.close()
    assert specs and not any("H200" in t.upper() for t in specs), specs  # no quota names it
    # no node of it: refused like any job no node could hold, saying why
    st, out = h200_job(d)
    assert st == 422 and out["error"]["code"] == "never_fits" and out["error"]["field"] == "gpu_types", (st, out)
    assert "no node of GPU type H200 has joined the fleet yet" in out["error"]["message"], out
    p = d.cli("submit", "--tenant", "research/vision", "--gpus", "1", "--gpu-type", "H200", "--", "true",
              check=False)
    assert p.returncode == 6 and "has joined the fleet yet" in p.stderr, (p.returncode, p.stderr)
    # asked to wait: accepted, waits for the type's first node
    st, job = h200_job(d, wait_for_fleet=True)
    assert st == 201, (st, job)
    assert job["gpu_types"] == ["H200"] and job["no_node_yet"] == ["H200"], job
    assert job["reason"].startswith("no node of GPU type H200 has joined"), job
    view = d.ok("GET", "/v1/jobs/%d" % job["id"])
    assert view["state"] == "pending", view
    assert view["reason"] == "no node of GPU type H200 has joined the fleet yet; the job waits for one", view
    p = d.cli("why", str(job["id"]))
    assert "no node of its GPU types has joined the fleet yet" in p.stdout and "it starts once such a node" in p.stdout, \
        p.stdout
    # the log replays the declaration before the job (a fresh store: no snapshot yet)
    d.stop()
    d.start()
    view = d.ok("GET", "/v1/jobs/%d" % job["id"])
    assert view["state"] == "pending" and "H200 has joined" in view["reason"], view
    # its node joins: the job runs there
    d.stop()
    with open(gpd.FLEET) as f:
        text = f.read()
    d.fleet = os.path.join(d.dir, "fleet.yaml")
    with open(d.fleet, "w") as f:
        f.write(text.rstrip("\n") + "\n" + H200_NODE)
    d.start()
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % job["id"])["placement"], what="the job placed")
    view = d.ok("GET", "/v1/jobs/%d" % job["id"])
    assert view["placement"][0]["node"] == "h200-e-0", view


def test_types_declared_before_declarations_were_logged_are_learnt_at_start(d):
    setup(d)
    d.stop()
    c = db(d)  # as the previous build left it: declared in the store only, never told to the engine
    c.execute("INSERT INTO gpu_types (name, declared, declared_by) VALUES ('B200', 1796600000, 'admin')")
    c.commit()
    c.close()
    d.start()
    st, out = h200_job(d, gpu_types=["b200"], wait_for_fleet=True)
    assert st == 201 and out["gpu_types"] == ["B200"], (st, out)


SHRINK = """tenants:
  - path: research/nlp
    guarantee: {gpu: {H100: 8}}
  - path: research
    guarantee: {gpu: {H100: 16}}
"""


GROW = """tenants:
  - path: research/nlp
    guarantee: {gpu: {H100: 16}}
  - path: research
    guarantee: {gpu: {H100: 24}}
"""


def test_apply_judges_the_tree_it_leaves(d):
    setup(d)
    # parent first: its children still add up to 24 until they shrink too
    p = apply_text(d, "tenants:\n  - path: research\n    guarantee: {gpu: {H100: 16}}\n"
                      "  - path: research/nlp\n    guarantee: {gpu: {H100: 8}}\n")
    assert "research  guarantee.gpu.H100: 24 -> 16" in p.stdout, p.stdout
    assert stored(d, "research")["guarantee"] == {"gpu": {"H100": 16}}
    # children first, growing back: the parent grows before its child may
    apply_text(d, GROW)
    assert stored(d, "research/nlp")["guarantee"] == {"gpu": {"H100": 16}}, stored(d, "research/nlp")
    assert stored(d, "research")["guarantee"] == {"gpu": {"H100": 24}}
    # a child before the parent it creates
    apply_text(d, "tenants:\n  - path: ml/eval\n  - path: ml\n")
    assert stored(d, "ml/eval") == {} and stored(d, "ml") == {}
    # a tree that no order makes valid is refused, nothing changed
    p = apply_text(d, "tenants:\n  - path: research/nlp\n    guarantee: {gpu: {H100: 20}}\n", check=False)
    assert p.returncode != 0 and "research" in p.stderr, p.stderr
    assert stored(d, "research/nlp")["guarantee"] == {"gpu": {"H100": 16}}


def test_apply_keeps_the_fields_it_does_not_name(d):
    setup(d)
    assert stored(d, "research/nlp")["time_limit"] == {"training": 259200, "interactive": 28800}
    p = apply_text(d, SHRINK)
    assert "time_limit" not in p.stdout, p.stdout
    assert stored(d, "research/nlp") == {"guarantee": {"gpu": {"H100": 8}},
                                         "time_limit": {"training": 259200, "interactive": 28800}}
    view = d.ok("GET", "/v1/tenants/research/nlp")
    assert view["time_limit"]["training"] == 259200, view
    # null clears a field, and the diff says so
    p = apply_text(d, "tenants:\n  - path: research/nlp\n    time_limit: null\n")
    assert "time_limit.training: 259200 -> (none)" in p.stdout, p.stdout
    assert stored(d, "research/nlp") == {"guarantee": {"gpu": {"H100": 8}}}


if __name__ == "__main__":
    gpd.run([test_a_type_in_another_case_is_the_fleets, test_a_store_with_two_spellings_is_merged_at_start,
             test_a_fleet_file_naming_a_type_in_another_case_names_the_fleets, test_unknown_types_are_refused_in_quotas, test_a_declared_type_is_known_until_undeclared,
             test_a_declared_type_no_quota_names_takes_jobs_that_wait_for_its_nodes,
             test_types_declared_before_declarations_were_logged_are_learnt_at_start,
             test_apply_judges_the_tree_it_leaves, test_apply_keeps_the_fields_it_does_not_name])

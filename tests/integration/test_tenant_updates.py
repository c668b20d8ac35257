#!/usr/bin/env python3
"""Updates that change only what was said (issue 12, section 1).

Each test starts a real gpupoold (examples/fleet.yaml: 32 H100, 8 A100,
8 L40S; examples/tenants.yaml applied) with a fresh SQLite store:
  - PATCH /v1/tenants/{path} is a JSON merge patch of the stored spec, and
    `gpupool quota set` sends one: the fields not given stay as they are;
    null resets a field to its default;
  - neither creates a tenant: a typo is refused naming the nearest path;
    `gpupool tenants create` creates, refusing a path that exists;
  - apply resolves parents from the store, prints a field diff, and with
    --dry-run changes nothing (tenants, tenant events, audit rows, jobs);
    --prune deletes tenants missing from the file, refusing one with jobs.
"""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402


def setup(d):
    d.cli("apply", "-f", gpd.TENANTS)


def stored_specs(d):
    """The store's canonical specs, path -> dict (what PATCH merges into)."""
    db = sqlite3.connect(os.path.join(d.dir, "gpupool.db"))
    try:
        return {p: json.loads(s) for p, s in db.execute("SELECT path, spec_json FROM tenants")}
    finally:
        db.close()


def store_counts(d):
    db = sqlite3.connect(os.path.join(d.dir, "gpupool.db"))
    try:
        events = db.execute("SELECT count(*) FROM events WHERE kind LIKE 'tenant%'").fetchone()[0]
        audit = db.execute("SELECT count(*) FROM audit").fetchone()[0]
        return events, audit
    finally:
        db.close()


def apply_text(d, text, *flags, check=True):
    path = os.path.join(d.dir, "t.yaml")
    with open(path, "w") as f:
        f.write(text)
    return d.cli("apply", "-f", path, *flags, check=check)


FULL_SPEC = {"guarantee": {"gpu": {"L40S": 2}}, "limit": {"gpu": {"L40S": 8}}, "user_limit": {"gpu": {"L40S": 4}},
             "weight": 3.0, "lend": False, "trust": "untrusted", "time_limit": {"training": 3600}}


def make_full_tenant(d):
    """ml and ml/train with every field set, ml/train through the CLI."""
    d.ok("PUT", "/v1/tenants/ml", {"guarantee": {"gpu": {"L40S": 2}}})
    p = d.cli("tenants", "create", "ml/train", "--guarantee", "L40S=2", "--limit", "L40S=8", "--user-limit", "L40S=4",
              "--weight", "3", "--lend", "no", "--trust", "untrusted")
    assert "tenant ml/train created" in p.stdout, p.stdout
    d.ok("PATCH", "/v1/tenants/ml/train", {"time_limit": {"training": 3600}})
    assert stored_specs(d)["ml/train"] == FULL_SPEC, stored_specs(d)["ml/train"]


def test_quota_set_changes_only_the_fields_given(d):
    setup(d)
    make_full_tenant(d)
    p = d.cli("quota", "set", "ml/train", "--limit", "L40S=6")
    assert "tenant ml/train updated" in p.stdout, p.stdout
    assert "~ ml/train  limit.gpu.L40S: 8 -> 6" in p.stdout, p.stdout
    want = dict(FULL_SPEC, limit={"gpu": {"L40S": 6}})
    assert stored_specs(d)["ml/train"] == want, stored_specs(d)["ml/train"]
    view = d.ok("GET", "/v1/tenants/ml/train")
    assert view["guarantee"]["gpu"]["L40S"] == 2 and view["user_limit"]["gpu"] == {"L40S": 4}, view
    assert view["weight"] == 3 and view["lend"] is False and view["trust"] == "untrusted", view
    assert view["time_limit"]["training"] == 3600, view
    # the same again changes nothing and says so
    again = d.cli("quota", "set", "ml/train", "--limit", "L40S=6")
    assert "tenant ml/train unchanged" in again.stdout, again.stdout
    # --weight alone
    d.cli("quota", "set", "ml/train", "--weight", "5")
    assert stored_specs(d)["ml/train"] == dict(want, weight=5.0), stored_specs(d)["ml/train"]


def test_patch_changes_only_the_fields_given(d):
    setup(d)
    make_full_tenant(d)
    st, out = d.call("PATCH", "/v1/tenants/ml/train", {"guarantee": {"gpu": {"L40S": 1}}},
                     content_type="application/merge-patch+json")
    assert st == 200, (st, out)
    assert out["changes"] == [{"path": "ml/train", "op": "update", "field": "guarantee.gpu.L40S", "from": 2,
                               "to": 1}], out
    assert out["guarantee"]["gpu"]["L40S"] == 1 and out["limit"]["gpu"] == {"L40S": 8}, out
    assert stored_specs(d)["ml/train"] == dict(FULL_SPEC, guarantee={"gpu": {"L40S": 1}})
    # plain application/json is a merge patch too; other types are refused
    st, out = d.call("PATCH", "/v1/tenants/ml/train", {"lend": True})
    assert st == 200 and out["lend"] is True, (st, out)
    st, out = d.call("PATCH", "/v1/tenants/ml/train", raw=b"lend: false", content_type="application/yaml")
    assert st == 415, (st, out)
    # a bad patch names the field and changes nothing
    before = stored_specs(d)
    st, out = d.call("PATCH", "/v1/tenants/ml/train", {"limt": {"gpu": {"L40S": 1}}})
    assert st == 400 and out["error"]["field"] == "limt", (st, out)
    st, out = d.call("PATCH", "/v1/tenants/ml/train", {"limit": 5})
    assert st == 400 and out["error"]["field"] == "limit", (st, out)
    st, out = d.call("PATCH", "/v1/tenants/ml/train", raw=b"[]")
    assert st == 400, (st, out)
    assert stored_specs(d) == before
    # the same authorization as PUT: a member may not
    tok = d.ok("POST", "/v1/tokens", {"name": "m", "role": "member", "scope": "ml/train", "user": "m"})["token"]
    st, out = d.call("PATCH", "/v1/tenants/ml/train", {"weight": 1}, token=tok)
    assert st == 403, (st, out)


def test_merge_patch_null_resets_a_field_to_its_default(d):
    setup(d)
    make_full_tenant(d)
    out = d.ok("PATCH", "/v1/tenants/ml/train", {"limit": None, "weight": None, "trust": None,
                                                 "time_limit": {"training": None}})
    fields = sorted(c["field"] for c in out["changes"])
    assert fields == ["limit.gpu.L40S", "time_limit.training", "trust", "weight"], out["changes"]
    spec = stored_specs(d)["ml/train"]
    assert spec == {"guarantee": {"gpu": {"L40S": 2}}, "user_limit": {"gpu": {"L40S": 4}}, "lend": False}, spec
    view = d.ok("GET", "/v1/tenants/ml/train")
    assert view["limit"]["gpu"] == {} and view["trust"] == "trusted", view  # no limit; trust inherited from ml


def test_a_typo_is_refused_with_the_nearest_path_and_creates_nothing(d):
    setup(d)
    before = stored_specs(d)
    p = d.cli("quota", "set", "research/nlpp", "--limit", "H100=4", check=False)
    assert p.returncode == 5, (p.returncode, p.stdout, p.stderr)
    assert "no tenant research/nlpp; did you mean research/nlp?" in p.stderr, p.stderr
    st, out = d.call("PATCH", "/v1/tenants/prodcut/search", {"weight": 2})
    assert st == 404 and "did you mean product/search?" in out["error"]["message"], (st, out)
    st, out = d.call("GET", "/v1/tenants/research/vison")
    assert st == 404 and "did you mean research/vision?" in out["error"]["message"], (st, out)
    assert stored_specs(d) == before
    # creating is explicit, and refuses a path that exists
    p = d.cli("tenants", "create", "research/nlp", "--weight", "2", check=False)
    assert p.returncode == 7 and "exists already" in p.stderr, (p.returncode, p.stderr)
    st, out = d.call("PUT", "/v1/tenants/research/nlp", {"weight": 2}, headers={"If-None-Match": "*"})
    assert st == 409, (st, out)
    assert stored_specs(d) == before
    d.cli("tenants", "create", "research/audio")
    assert "research/audio" in stored_specs(d)
    assert "tenant research/audio deleted" in d.cli("tenants", "delete", "research/audio").stdout
    assert stored_specs(d) == before


DRY_FILE = """tenants:
  - path: research
    guarantee: {gpu: {H100: 24}}
    limit: {gpu: {H100: 30}}
  - path: research/nlp
    guarantee: {gpu: {H100: 16}}
    time_limit: {training: 259200, interactive: 28800}
  - path: research/audio
    guarantee: {gpu: {H100: 0}}
  - path: product
    guarantee: {gpu: {H100: 8, A100: 8, L40S: 4}}
  - path: product/search
    guarantee: {gpu: {H100: 8, A100: 8}}
"""


def test_apply_dry_run_prints_the_diff_and_changes_nothing(d):
    setup(d)
    job = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 2, "gpu_types": ["H100"]})
    specs, counts = stored_specs(d), store_counts(d)
    tenants, jobs = d.ok("GET", "/v1/tenants")["tenants"], d.ok("GET", "/v1/jobs")["jobs"]
    p = apply_text(d, DRY_FILE, "--dry-run", "--prune")
    out = p.stdout
    for line in ("~ research  limit.gpu.H100: (none) -> 30", "+ research/audio",
                 "+ research/audio  guarantee.gpu.H100: (none) -> 0", "- research/vision", "- product/ads",
                 "unchanged  research/nlp", "dry run: nothing was changed", "checked only when the file is applied"):
        assert line in out, (line, out)
    assert stored_specs(d) == specs
    assert store_counts(d) == counts, (store_counts(d), counts)
    strip = lambda ts: [{k: v for k, v in t.items() if k not in ("usage", "dominant_share")} for t in ts]  # noqa: E731
    assert strip(d.ok("GET", "/v1/tenants")["tenants"]) == strip(tenants)
    after_jobs = d.ok("GET", "/v1/jobs")["jobs"]
    assert [(j["id"], j["state"]) for j in after_jobs] == [(j["id"], j["state"]) for j in jobs], after_jobs
    assert any(j["id"] == job["id"] for j in after_jobs)
    # the API answers the same plan as JSON
    st, plan = d.call("POST", "/v1/tenants:apply?dry_run=true&prune=true", raw=DRY_FILE.encode(),
                      content_type="application/yaml")
    assert st == 200 and plan["dry_run"] is True, (st, plan)
    assert plan["created"] == ["research/audio"] and plan["updated"] == ["research"], plan
    assert sorted(plan["deleted"]) == ["product/ads", "research/vision"], plan
    assert {"path": "research", "op": "update", "field": "limit.gpu.H100", "from": None, "to": 30} in plan["changes"]
    st, bad = d.call("POST", "/v1/tenants:apply?dry_run=yes", raw=DRY_FILE.encode(), content_type="application/yaml")
    assert st == 400 and bad["error"]["field"] == "dry_run", (st, bad)
    # a dry run checks what it can: a missing parent is refused as by a real apply
    p = apply_text(d, "tenants:\n  - path: nosuch/child\n", "--dry-run", check=False)
    assert p.returncode == 5 and "parent tenant nosuch does not exist" in p.stderr, (p.returncode, p.stderr)
    assert store_counts(d) == counts
    # the real apply does what the dry run said
    p = apply_text(d, DRY_FILE)
    assert "~ research  limit.gpu.H100: (none) -> 30" in p.stdout and "- " not in p.stdout, p.stdout
    assert stored_specs(d)["research"]["limit"] == {"gpu": {"H100": 30}}


def test_apply_resolves_parents_from_the_store(d):
    setup(d)
    p = apply_text(d, "tenants:\n  - path: research/audio\n    guarantee: {gpu: {H100: 0}}\n")
    assert "created    research/audio" in p.stdout, p.stdout
    assert "research/audio" in stored_specs(d)
    before = stored_specs(d)
    p = apply_text(d, "tenants:\n  - path: nosuch/child\n", check=False)
    assert p.returncode == 5 and "parent tenant nosuch does not exist" in p.stderr, (p.returncode, p.stderr)
    assert stored_specs(d) == before
    # a child may come before the parent the file creates (issue 32)
    p = apply_text(d, "tenants:\n  - path: ml/eval\n  - path: ml\n")
    assert "ml" in stored_specs(d) and "ml/eval" in stored_specs(d), stored_specs(d)


def test_prune_deletes_what_is_missing_and_refuses_a_tenant_with_jobs(d):
    setup(d)
    d.ok("POST", "/v1/jobs", {"tenant": "product/ads", "gpus": 1, "gpu_types": ["L40S"],
                            "image": "docker://reg.example:5000/ads/base:1"})
    before, counts = stored_specs(d), store_counts(d)
    p = apply_text(d, DRY_FILE, "--prune", check=False)
    assert p.returncode == 7 and "product/ads" in p.stderr and "live jobs" in p.stderr, (p.returncode, p.stderr)
    assert stored_specs(d) == before
    # without prune nothing is deleted
    apply_text(d, DRY_FILE + "  - path: product/ads\n    guarantee: {gpu: {L40S: 4}}\n"
               "    limit: {gpu: {L40S: 8}}\n    trust: untrusted\n")
    assert "research/vision" in stored_specs(d)
    p = apply_text(d, DRY_FILE + "  - path: product/ads\n    guarantee: {gpu: {L40S: 4}}\n"
                   "    limit: {gpu: {L40S: 8}}\n    trust: untrusted\n", "--prune")
    assert "deleted    research/vision" in p.stdout and "- research/vision" in p.stdout, p.stdout
    specs = stored_specs(d)
    assert "research/vision" not in specs and "product/ads" in specs and "research" in specs, specs
    st, _ = d.call("GET", "/v1/tenants/research/vision")
    assert st == 404
    assert store_counts(d)[0] > counts[0]


def test_prune_reaches_only_the_callers_scope(d):
    setup(d)
    tok = d.ok("POST", "/v1/tokens", {"name": "ra", "role": "tenant-admin", "scope": "research"})["token"]
    d.ok("PUT", "/v1/tenants/research/audio", {})
    body = b"tenants:\n  - path: research/nlp\n    guarantee: {gpu: {H100: 16}}\n" \
           b"    time_limit: {training: 259200, interactive: 28800}\n"
    st, out = d.call("POST", "/v1/tenants:apply?prune=true", raw=body, content_type="application/yaml", token=tok)
    assert st == 200, (st, out)
    # research (its own scope) and product (outside it) stay; below research, what the file omits goes
    assert sorted(out["deleted"]) == ["research/audio", "research/vision"], out
    assert set(stored_specs(d)) == {"research", "research/nlp", "product", "product/search", "product/ads"}


if __name__ == "__main__":
    gpd.run([test_quota_set_changes_only_the_fields_given, test_patch_changes_only_the_fields_given,
             test_merge_patch_null_resets_a_field_to_its_default,
             test_a_typo_is_refused_with_the_nearest_path_and_creates_nothing,
             test_apply_dry_run_prints_the_diff_and_changes_nothing, test_apply_resolves_parents_from_the_store,
             test_prune_deletes_what_is_missing_and_refuses_a_tenant_with_jobs,
             test_prune_reaches_only_the_callers_scope])

#!/usr/bin/env python3
"""Authorization matrix: every endpoint x every role x own/other tenant.

Tokens: admin (bootstrap), operator, auditor, tenant-admin of research,
member of research/nlp.  "own" targets research/nlp (inside both scoped
tokens), "other" targets product/search (outside both).  Each cell is the
expected HTTP status; a scoped caller gets 404 for what it may not see.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

ROLES = ["admin", "operator", "auditor", "tenant-admin", "member", "none", "revoked"]


def setup(d):
    d.cli("apply", "-f", gpd.TENANTS)
    toks = {"admin": d.token, "none": "gpt_" + "0" * 64}
    specs = {"operator": {"role": "operator"}, "auditor": {"role": "auditor"},
             "tenant-admin": {"role": "tenant-admin", "scope": "research"},
             "member": {"role": "member", "scope": "research/nlp", "user": "alice"},
             "revoked": {"role": "admin"}}
    ids = {}
    for name, spec in specs.items():
        out = d.ok("POST", "/v1/tokens", dict(spec, name=name))
        toks[name], ids[name] = out["token"], out["id"]
    d.ok("DELETE", "/v1/tokens/" + ids["revoked"])
    return toks, ids


def job(d, tenant):
    return d.ok("POST", "/v1/jobs", {"tenant": tenant, "gpus": 1, "replicas": 20})["id"]  # stays pending


def cases(d, toks, ids):
    """(name, method, path-or-callable, body, {role: status})"""
    A, O, U, T, M, N, R = ROLES
    own_job, other_job = job(d, "research/nlp"), job(d, "product/search")
    all_read = {A: 200, O: 200, U: 200, T: 200, M: 200, N: 401, R: 401}
    fresh = lambda t: lambda: "/v1/jobs/%d" % job(d, t)  # noqa: E731 - a new job per role
    return [
        ("list jobs", "GET", "/v1/jobs", None, all_read),
        ("get own job", "GET", "/v1/jobs/%d" % own_job, None, all_read),
        ("get other job", "GET", "/v1/jobs/%d" % other_job, None, dict(all_read, **{T: 404, M: 404})),
        ("submit own", "POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1},
         {A: 201, O: 403, U: 403, T: 201, M: 201, N: 401, R: 401}),
        ("submit other", "POST", "/v1/jobs", {"tenant": "product/search", "gpus": 1},
         {A: 201, O: 403, U: 403, T: 404, M: 404, N: 401, R: 401}),
        # the admin's job in the member's tenant is another user's: a member cancels only its own
        # (test_job_control.py: its own, and all of its tenant's where the tenant's cancel is tenant)
        ("cancel own", "DELETE", fresh("research/nlp"), None,
         {A: 202, O: 202, U: 403, T: 202, M: 403, N: 401, R: 401}),
        ("cancel other", "DELETE", fresh("product/search"), None,
         {A: 202, O: 202, U: 403, T: 404, M: 404, N: 401, R: 401}),
        ("list tenants", "GET", "/v1/tenants", None, all_read),
        ("get own tenant", "GET", "/v1/tenants/research/nlp", None, all_read),
        ("get other tenant", "GET", "/v1/tenants/product/search", None, dict(all_read, **{T: 404, M: 404})),
        ("put child of own", "PUT", "/v1/tenants/research/nlp", {"guarantee": {"gpu": {"H100": 16}}},
         {A: 200, O: 403, U: 403, T: 200, M: 403, N: 401, R: 401}),
        ("put own scope", "PUT", "/v1/tenants/research", {"guarantee": {"gpu": {"H100": 24}}},
         {A: 200, O: 403, U: 403, T: 403, M: 403, N: 401, R: 401}),
        ("put other", "PUT", "/v1/tenants/product/search", {"guarantee": {"gpu": {"H100": 8, "A100": 8}}},
         {A: 200, O: 403, U: 403, T: 404, M: 403, N: 401, R: 401}),
        ("apply (examples/tenants.yaml: lists product too)", "POST", "/v1/tenants:apply", None,
         {A: 200, O: 403, U: 403, T: 404, M: 403, N: 401, R: 401}),
        ("delete other", "DELETE", "/v1/tenants/product/nothing", None,
         {A: 404, O: 403, U: 403, T: 404, M: 403, N: 401, R: 401}),
        ("nodes", "GET", "/v1/nodes", None, all_read),
        ("drain", "POST", "/v1/nodes/l40s-d-0/drain", {"drain": False},
         {A: 200, O: 200, U: 403, T: 403, M: 403, N: 401, R: 401}),
        ("usage", "GET", "/v1/usage", None, all_read),
        ("usage other", "GET", "/v1/usage?tenant=product/search", None, dict(all_read, **{T: 404, M: 404})),
        ("audit", "GET", "/v1/audit", None, {A: 200, O: 403, U: 200, T: 403, M: 403, N: 401, R: 401}),
        ("audit verify", "GET", "/v1/audit/verify", None, {A: 200, O: 403, U: 200, T: 403, M: 403, N: 401, R: 401}),
        ("ledger", "GET", "/v1/ledger", None, {A: 200, O: 403, U: 200, T: 403, M: 403, N: 401, R: 401}),
        ("ledger verify", "GET", "/v1/ledger/verify", None, {A: 200, O: 403, U: 200, T: 403, M: 403, N: 401, R: 401}),
        ("prices", "GET", "/v1/prices", None, all_read),
        ("prices set", "PUT", "/v1/prices", {"effective": "2099-01-01T00:00:00Z", "gpu_types": {"H100": "2.50"}},
         {A: 201, O: 403, U: 403, T: 403, M: 403, N: 401, R: 401}),
        ("billing mode", "PUT", "/v1/prices/modes/research", {"mode": "chargeback"},
         {A: 200, O: 403, U: 403, T: 403, M: 403, N: 401, R: 401}),
        ("bill", "GET", "/v1/bill?period=2026-11", None, all_read),
        ("bill other", "GET", "/v1/bill?period=2026-11&tenant=product/search", None,
         dict(all_read, **{T: 404, M: 404})),
        ("whoami", "GET", "/v1/whoami", None, all_read),
        ("approve a node", "POST", "/v1/nodes/l40s-d-0/approve", None,
         {A: 200, O: 200, U: 403, T: 403, M: 403, N: 401, R: 401}),
        ("secret set own", "PUT", "/v1/secrets/k?tenant=research/nlp", {"value": "v"},
         {A: 200, O: 403, U: 403, T: 200, M: 403, N: 401, R: 401}),
        ("secret set other", "PUT", "/v1/secrets/k?tenant=product/search", {"value": "v"},
         {A: 200, O: 403, U: 403, T: 404, M: 404, N: 401, R: 401}),
        ("secrets list own", "GET", "/v1/secrets?tenant=research/nlp", None, all_read),
        ("secrets list other", "GET", "/v1/secrets?tenant=product/search", None, dict(all_read, **{T: 404, M: 404})),
        ("secret delete (none there)", "DELETE", "/v1/secrets/none?tenant=research/nlp", None,
         {A: 404, O: 403, U: 403, T: 404, M: 403, N: 401, R: 401}),
        ("tokens list", "GET", "/v1/tokens", None, all_read),
        ("token create member", "POST", "/v1/tokens",
         {"name": "x", "role": "member", "scope": "research/nlp", "user": "x"},
         {A: 201, O: 403, U: 403, T: 201, M: 403, N: 401, R: 401}),
        ("token create admin", "POST", "/v1/tokens", {"name": "x", "role": "admin"},
         {A: 201, O: 403, U: 403, T: 403, M: 403, N: 401, R: 401}),
        ("users", "GET", "/v1/users", None, all_read),
        ("bind user", "PUT", "/v1/users/zed", {"tenant": "research/nlp"},
         {A: 200, O: 403, U: 403, T: 403, M: 403, N: 401, R: 401}),
        ("unbind user", "DELETE", "/v1/users/alice", None,
         {A: 200, O: 403, U: 403, T: 403, M: 403, N: 401, R: 401}),
        ("revoke other token", "DELETE", "/v1/tokens/" + ids["operator"], None,
         {A: None, O: 200, U: 404, T: 404, M: 404, N: 401, R: 401}),
        ("metrics", "GET", "/metrics", None, {A: 200, O: 200, U: 200, T: 403, M: 403, N: 401, R: 401}),
        ("health", "GET", "/v1/health", None, {r: 200 for r in ROLES}),
    ]


def test_matrix(d):
    toks, ids = setup(d)
    apply_body = open(gpd.TENANTS, "rb").read()
    failures = []
    for name, method, path, body, expect in cases(d, toks, ids):
        # the operator revokes itself last (it is still needed for the rows above)
        for role in ROLES:
            if role == "admin" and expect.get(role) is None:
                continue
            if name == "revoke other token" and role == "operator":
                continue
            p = path() if callable(path) else path
            if name.startswith("apply"):
                st, out = d.call(method, p, token=toks[role], raw=apply_body, content_type="application/yaml")
            else:
                st, out = d.call(method, p, body, token=toks[role])
            if st != expect[role]:
                failures.append("%s as %s: %d, expected %d (%s)" % (name, role, st, expect[role], out))
    st, _ = d.call("DELETE", "/v1/tokens/" + ids["operator"], token=toks["operator"])
    if st != 200:
        failures.append("operator revoking its own token: %d" % st)
    assert not failures, "\n".join(failures)


def test_member_sees_only_its_tenant(d):
    toks, _ = setup(d)
    mine, theirs = job(d, "research/nlp"), job(d, "product/search")
    listed = {j["id"] for j in d.ok("GET", "/v1/jobs", token=toks["member"])["jobs"]}
    assert mine in listed and theirs not in listed, listed
    assert {t["path"] for t in d.ok("GET", "/v1/tenants", token=toks["member"])["tenants"]} == {"research/nlp"}
    # filtering by the other tenant shows nothing rather than an error
    assert d.ok("GET", "/v1/jobs?tenant=product/search", token=toks["member"])["jobs"] == []
    # the member's jobs run as its user; it cannot name another
    st, err = d.call("POST", "/v1/jobs", {"tenant": "research/nlp", "user": "bob"}, token=toks["member"])
    assert st == 400 and err["error"]["field"] == "user", (st, err)
    own = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp"}, token=toks["member"])
    assert own["user"] == "alice", own
    # audit rows name the token that acted
    rows = d.ok("GET", "/v1/audit?limit=1000")["audit"]
    assert any(r["role"] == "member" and r["action"] == "job.submit" for r in rows)


def test_tenant_admin_apply(d):
    """A tenant-admin of research applies files that list research (parents
    first) but may change only what lies below it."""
    toks, _ = setup(d)
    head = "tenants:\n  - path: research\n    guarantee: {gpu: {H100: 24}}\n"
    below = head + "  - path: research/nlp\n    guarantee: {gpu: {H100: 12}}\n"
    st, out = d.call("POST", "/v1/tenants:apply", raw=below.encode(), content_type="application/yaml",
                     token=toks["tenant-admin"])
    assert st == 200 and out["updated"] == ["research/nlp"] and out["unchanged"] == ["research"], (st, out)
    own = "tenants:\n  - path: research\n    guarantee: {gpu: {H100: 20}}\n"
    st, out = d.call("POST", "/v1/tenants:apply", raw=own.encode(), content_type="application/yaml",
                     token=toks["tenant-admin"])
    assert st == 403 and out["error"]["field"] == "tenants[0].path", (st, out)
    other = "tenants:\n  - path: product\n"
    st, _ = d.call("POST", "/v1/tenants:apply", raw=other.encode(), content_type="application/yaml",
                   token=toks["tenant-admin"])
    assert st == 404, st


def test_untrusted_subtree_cannot_trust_its_children(d):
    """Trust is a floor: the tenant-admin of an untrusted subtree
    (product/ads) cannot make a child trusted, and so cannot get MPS work
    in through it; only an admin changing product/ads lifts it."""
    setup(d)
    tok = d.ok("POST", "/v1/tokens", {"name": "ads-admin", "role": "tenant-admin", "scope": "product/ads"})["token"]
    st, out = d.call("PUT", "/v1/tenants/product/ads/canary", {"trust": "trusted"}, token=tok)
    assert st == 400 and out["error"]["field"] == "trust", (st, out)
    st, _ = d.call("GET", "/v1/tenants/product/ads/canary")
    assert st == 404, st  # nothing created
    d.ok("PUT", "/v1/tenants/product/ads/canary", {}, token=tok)
    st, out = d.call("PUT", "/v1/tenants/product/ads/canary", {"trust": "trusted", "weight": 2}, token=tok)
    assert st == 400 and out["error"]["field"] == "trust", (st, out)
    canary = d.ok("GET", "/v1/tenants/product/ads/canary")
    assert canary["trust"] == "untrusted" and canary["weight"] == 1, canary  # nothing changed
    st, out = d.call("POST", "/v1/jobs", {"tenant": "product/ads/canary", "share": {"mps": 25}}, token=tok)
    assert st == 400 and out["error"]["field"] == "isolation", (st, out)
    # an admin can move it only under a trusted tenant, and lift it there
    st, out = d.call("POST", "/v1/tenants:move", {"from": "product/ads/canary", "to": "product/canary"})
    assert st == 200, (st, out)
    assert d.ok("GET", "/v1/tenants/product/canary")["trust"] == "trusted"


if __name__ == "__main__":
    gpd.run([test_matrix, test_member_sees_only_its_tenant, test_tenant_admin_apply,
             test_untrusted_subtree_cannot_trust_its_children])

#!/usr/bin/env python3
"""Images a team chooses (issue 31, section 1), the control plane's side,
against a real gpupoold:

  - a job's image, mounts, shm_mib, read_only_root and network are checked
    at submit: a bad reference, a relative target, one over /proc, /sys or
    /dev, a duplicate target are 400 naming the field, and nothing is
    stored; `gpupool submit --image ... --mount ...` sends them and
    `gpupool job ID` shows them;
  - a tenant's policy (container, image_sources, volumes, allow_userns) is
    inherited: an untrusted tenant's job without an image is 400 image
    saying containers are required, an image outside the allowed sources
    400 image (also one that only looks like a prefix), a volume the tenant
    does not see 400 mounts; a batch names the bad item; only an admin sets
    a policy (a tenant-admin gets 403, in a PATCH and in an apply);
  - a registry credential set by a tenant-admin reaches the node only in
    the run entry of a job whose image is on that registry (image_auth), the
    mounts arrive resolved to the volumes' host paths; the password is in
    no job view, listing, audit row, log or store byte, and a member of
    another tenant cannot list the credential;
  - a policy that tightens cancels the queued jobs it no longer allows,
    with a history line saying why, and leaves the others queued.
"""
import json
import os
import secrets
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

REG = "reg.example:5000"
IMAGE = "docker://%s/research/torch:2.3" % REG


def token(d, name, role, scope, user=None):
    args = ["token", "create", "--name", name, "--role", role, "--scope", scope] + (["--user", user] if user else [])
    return d.cli(*args, json_out=True)["token"]


def research_tree(d):
    """The tenants, and an agent node of 2 T4 GPUs (its credential returned)."""
    d.ok("PUT", "/v1/tenants/research", {
        "image_sources": ["docker://%s/research" % REG, "dir:/srv/images/"],
        "volumes": [{"name": "datasets", "path": "/srv/datasets"},
                    {"name": "scratch", "path": "/srv/scratch", "read_only": False}],
        "allow_userns": True})
    d.ok("PUT", "/v1/tenants/research/nlp", {"trust": "untrusted"})
    d.ok("PUT", "/v1/tenants/product", {})
    d.ok("PUT", "/v1/tenants/product/ads", {})
    return register_node(d, "c-1")


def job(tenant="research/nlp", **fields):
    body = {"tenant": tenant, "gpus": 1, "gpu_types": ["T4"], "command": ["sleep", "60"]}
    body.update(fields)
    return body


def refused(d, body, field, path="/v1/jobs", token=None, words=None):
    status, out = d.call("POST", path, body, token=token)
    assert status == 400 and out["error"]["field"] == field, (body, out)
    for w in words or []:
        assert w in out["error"]["message"], out
    return out


def test_bad_container_fields_are_400_and_store_nothing(d):
    d.ok("PUT", "/v1/tenants/t", {})
    for fields, field in [
            ({"image": "busybox"}, "image"),
            ({"image": "docker://busybox:1"}, "image"),
            ({"image": "docker://reg.example/a/b"}, "image"),
            ({"image": "oci:relative/x"}, "image"),
            ({"image": "dir:/srv/images/../../etc"}, "image"),
            ({"image": IMAGE, "mounts": [{"volume": "v", "target": "data"}]}, "mounts"),
            ({"image": IMAGE, "mounts": [{"volume": "v", "target": "/proc/self"}]}, "mounts"),
            ({"image": IMAGE, "mounts": [{"volume": "v", "target": "/sys"}]}, "mounts"),
            ({"image": IMAGE, "mounts": [{"volume": "v", "target": "/dev/nvidia0"}]}, "mounts"),
            ({"image": IMAGE, "mounts": [{"volume": "v", "target": "/a"}, {"volume": "w", "target": "/a"}]},
             "mounts"),
            ({"image": IMAGE, "mounts": [{"volume": "v", "target": "/a", "source": "/etc"}]}, "mounts"),
            ({"image": IMAGE, "shm_mib": 0}, "shm_mib"),
            ({"image": IMAGE, "shm_mib": 4096, "mem_mib": 1024}, "shm_mib"),
            ({"image": IMAGE, "network": "none"}, "network"),
            ({"image": IMAGE, "read_only_root": "yes"}, "read_only_root")]:
        refused(d, job("t", **fields), field)
    out = refused(d, {"job": job("t", image="nope"), "array": 3}, "job.image", path="/v1/jobs:batch")
    assert "no job of the batch" in out["error"]["message"], out
    assert d.ok("GET", "/v1/jobs")["jobs"] == []
    for spec, field in [({"container": "always"}, "container"),
                        ({"image_sources": ["registry.example"]}, "image_sources"),
                        ({"volumes": [{"name": "root", "path": "/"}]}, "volumes[0].path"),
                        ({"volumes": [{"name": "p", "path": "/proc"}]}, "volumes[0].path"),
                        ({"allow_userns": "yes"}, "allow_userns")]:
        status, out = d.call("PUT", "/v1/tenants/t/x", spec)
        assert status == 400 and out["error"]["field"] == field, (spec, out)
    assert [t["path"] for t in d.ok("GET", "/v1/tenants")["tenants"]] == ["t"]


def test_the_tenants_policy_holds_at_submit(d):
    research_tree(d)
    view = d.ok("GET", "/v1/tenants/research/nlp")
    assert view["container"] == "required" and view["allow_userns"] is True, view
    assert view["image_sources"] == ["docker://%s/research" % REG, "dir:/srv/images/"], view
    assert [v["name"] for v in view["volumes"]] == ["datasets", "scratch"], view
    assert d.ok("GET", "/v1/tenants/product/ads")["container"] == "optional"

    refused(d, job(), "image", words=["requires containers", "untrusted"])
    refused(d, job(image="docker://docker.io/library/busybox:1"), "image", words=["not under an image source"])
    refused(d, job(image="docker://%s/research-evil/x:1" % REG), "image")
    refused(d, job(image="docker://reg.example:5001/research/x:1"), "image")
    refused(d, job(image=IMAGE, mounts=[{"volume": "home", "target": "/home"}]), "mounts", words=["no volume home"])
    refused(d, job(image=IMAGE, mounts=[{"volume": "datasets", "target": "/data", "read_only": False}]), "mounts",
            words=["read-only"])
    refused(d, job("product/ads", image=IMAGE, mounts=[{"volume": "datasets", "target": "/data"}]), "mounts")
    out = refused(d, {"jobs": [job(image=IMAGE), job(image="dir:/etc")]}, "jobs[1].image", path="/v1/jobs:batch")
    assert d.ok("GET", "/v1/jobs")["jobs"] == [], out

    p = d.cli("submit", "--tenant", "research/nlp", "--gpus", "1", "--gpu-type", "T4", "--image", IMAGE,
              "--mount", "datasets:/data", "--mount", "scratch:/scratch:ro", "--shm-mib", "2048",
              "--read-only-root", "--network", "private", "--", "python", "train.py", json_out=True)
    got = d.ok("GET", "/v1/jobs/%d" % p["id"])
    assert got["image"] == IMAGE and got["shm_mib"] == 2048 and got["read_only_root"] is True, got
    assert got["network"] == "private", got
    assert got["mounts"] == [{"volume": "datasets", "target": "/data"},
                             {"volume": "scratch", "target": "/scratch", "read_only": True}], got
    shown = d.cli("job", str(p["id"])).stdout
    for words in ["image        " + IMAGE, "mount        datasets at /data", "scratch at /scratch (read-only)",
                  "network      private"]:
        assert words in shown, shown
    d.ok("POST", "/v1/jobs", job("product/ads"))  # trusted, no policy: a bare process still may
    jobfile = os.path.join(d.dir, "job.yaml")
    with open(jobfile, "w") as f:
        f.write("tenant: research/nlp\ngpus: 1\ngpu_types: [T4]\nimage: dir:/srv/images/base\n"
                "mounts:\n  - {volume: scratch, target: /scratch, read_only: false}\nshm_mib: 512\n")
    p = d.cli("submit", "-f", jobfile, "--array", "2", json_out=True)
    for j in p["jobs"]:
        assert j["mounts"] == [{"volume": "scratch", "target": "/scratch", "read_only": False}], j
        assert j["image"] == "dir:/srv/images/base" and j["shm_mib"] == 512, j
    with open(jobfile, "a") as f:
        f.write("network: none\n")
    p = d.cli("submit", "-f", jobfile, check=False)
    assert p.returncode != 0 and "network" in p.stderr, (p.returncode, p.stderr)

    tadmin = token(d, "ra", "tenant-admin", "research")
    status, out = d.call("PATCH", "/v1/tenants/research/nlp", {"volumes": [{"name": "etc", "path": "/etc"}]},
                         token=tadmin)
    assert status == 403 and out["error"]["field"] == "volumes", out
    status, out = d.call("PATCH", "/v1/tenants/research/nlp", {"weight": 2}, token=tadmin)
    assert status == 200, out  # the rest of the spec is still theirs
    status, out = d.call("POST", "/v1/tenants:apply?dry_run=true",
                         raw=b"tenants:\n  - path: research/nlp\n    trust: untrusted\n    weight: 2\n"
                             b"    image_sources: ['docker://docker.io/']\n",
                         token=tadmin, content_type="application/yaml")
    assert status == 403 and "image_sources" in out["error"]["field"], out
    status, plan = d.call("POST", "/v1/tenants:apply?dry_run=true",
                          raw=b"tenants:\n  - path: research/nlp\n    trust: untrusted\n    weight: 2\n"
                              b"    image_sources: ['docker://docker.io/']\n", content_type="application/yaml")
    assert status == 200, plan  # an admin's dry run: the policy's diff
    assert ("research/nlp", "image_sources") in [(c["path"], c["field"].split(".")[0].split("[")[0])
                                                 for c in plan["changes"]], plan
    assert d.ok("GET", "/v1/tenants/research/nlp")["image_sources"] == view["image_sources"]


def register_node(d, name):
    inventory = {"name": name, "gpu_type": "T4", "gpu_count": 2, "zone": "z1", "block": "blk-t",
                 "gpu_uuids": ["GPU-%s-%d" % (name, i) for i in range(2)], "gpu_mem_mib": 16384,
                 "cpu_millis": 32000, "mem_mib": 131072}
    return d.ok("POST", "/v1/agents:register", {"node": inventory})["token"]


def test_the_node_gets_the_container_and_only_its_registrys_credential(d):
    node = research_tree(d)
    password = "pw_" + secrets.token_hex(16)
    tadmin = token(d, "ra", "tenant-admin", "research")
    outsider = token(d, "pa", "tenant-admin", "product")
    member = token(d, "alice", "member", "research/nlp", user="alice")
    pwfile = os.path.join(d.dir, "pw")
    with open(pwfile, "w") as f:
        f.write(password + "\n")
    p = d.cli("secret", "set", "--tenant", "research", "--registry", REG, "--username", "robot",
              "--password-file", pwfile, token=tadmin)
    assert "registry credential of research for %s set" % REG in p.stdout, p.stdout
    status, out = d.call("PUT", "/v1/registries/%s?tenant=research/nlp" % REG, {"username": "x", "password": "y"},
                         token=member)
    assert status == 403, out
    status, out = d.call("PUT", "/v1/registries/bad%2Fhost?tenant=research", {"username": "x", "password": "y"})
    assert status in (400, 404), out
    status, out = d.call("PUT", "/v1/registries/%s?tenant=research" % REG, {"username": "x"})
    assert status == 400 and out["error"]["field"] == "password", out
    assert d.call("GET", "/v1/registries?tenant=research", token=outsider)[0] == 404
    listing = d.ok("GET", "/v1/registries?tenant=research", token=tadmin)
    [row] = listing["registries"]
    assert row["registry"] == REG and row["username"] == "robot" and "password" not in row, row
    assert d.ok("GET", "/v1/secrets?tenant=research")["secrets"] == []  # no job can name it
    assert "robot" in d.cli("secret", "list", "research", token=tadmin).stdout

    with_auth = d.ok("POST", "/v1/jobs", job(image=IMAGE, mounts=[{"volume": "datasets", "target": "/data"},
                                                                  {"volume": "scratch", "target": "/s"}],
                                             shm_mib=1024, read_only_root=True, network="private"), token=member)
    without = d.ok("POST", "/v1/jobs", job(image="dir:/srv/images/busybox"), token=member)  # no registry
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % without["id"])["state"] == "running", what="both bound")
    entries = {e["job"]: e for e in d.ok("GET", "/v1/agents/c-1/assignments", token=node)["assignments"]}
    e = entries[with_auth["id"]]
    assert e["image"] == IMAGE and e["image_auth"] == {"username": "robot", "password": password}, e
    assert e["mounts"] == [{"source": "/srv/datasets", "target": "/data", "read_only": True},
                           {"source": "/srv/scratch", "target": "/s", "read_only": False}], e
    assert e["shm_mib"] == 1024 and e["read_only_root"] is True and e["network"] == "private", e
    assert e["allow_userns"] is True and e["trust"] == "untrusted", e
    assert "image_auth" not in entries[without["id"]], entries[without["id"]]
    for tok in (member, outsider, tadmin):  # only the node's own credential reads its assignments
        assert d.call("GET", "/v1/agents/c-1/assignments", token=tok)[0] == 403

    views = [d.ok("GET", "/v1/jobs/%d" % with_auth["id"]), d.ok("GET", "/v1/jobs", token=member),
             d.ok("GET", "/v1/jobs?tenant=research"), listing, d.ok("GET", "/v1/tenants")]
    for view in views:
        assert password not in json.dumps(view), view
    audit = d.ok("GET", "/v1/audit?limit=1000")["audit"]
    assert ("registry.set", "registry/research/%s" % REG, "ok") in \
        [(r["action"], r["target"], r["result"]) for r in audit], audit
    assert password not in json.dumps(audit)
    assert password.encode() not in gpd.store_bytes(d)
    assert password not in d.read_log(tail=None)

    p = d.cli("secret", "rm", "--tenant", "research", "--registry", REG, token=tadmin)
    assert "deleted" in p.stdout, p.stdout
    assert d.ok("GET", "/v1/registries?tenant=research")["registries"] == []
    entries = {e["job"]: e for e in d.ok("GET", "/v1/agents/c-1/assignments", token=node)["assignments"]}
    assert "image_auth" not in entries[with_auth["id"]]
    assert "registry.delete" in [r["action"] for r in d.ok("GET", "/v1/audit?limit=1000")["audit"]]


def test_a_tightened_policy_cancels_the_queued_jobs_it_no_longer_allows(d):
    research_tree(d)
    big = {"replicas": 2, "gpus": 2, "wait_for_fleet": True}  # 4 T4 GPUs, the fleet has 2: queued
    scratch = d.ok("POST", "/v1/jobs", job(image=IMAGE, mounts=[{"volume": "scratch", "target": "/s"}], **big))
    plain = d.ok("POST", "/v1/jobs", job(image=IMAGE, **big))
    assert d.ok("GET", "/v1/jobs/%d" % scratch["id"])["state"] == "pending"
    out = d.ok("PATCH", "/v1/tenants/research", {"volumes": [{"name": "datasets", "path": "/srv/datasets"}]})
    assert out["cancelled_jobs"] == [scratch["id"]], out
    gone = d.ok("GET", "/v1/jobs/%d" % scratch["id"])
    assert gone["state"] == "cancelled", gone
    assert any(h["kind"] == "policy" and "no volume scratch" in h.get("reason", "") for h in gone["history"]), gone
    assert d.ok("GET", "/v1/jobs/%d" % plain["id"])["state"] == "pending"
    out = d.ok("PATCH", "/v1/tenants/research", {"image_sources": ["dir:/srv/images/"]})
    assert out["cancelled_jobs"] == [plain["id"]], out
    out = d.ok("PATCH", "/v1/tenants/research", {"weight": 3})
    assert "cancelled_jobs" not in out, out


if __name__ == "__main__":
    gpd.run([
        test_bad_container_fields_are_400_and_store_nothing,
        test_the_tenants_policy_holds_at_submit,
        test_the_node_gets_the_container_and_only_its_registrys_credential,
        test_a_tightened_policy_cancels_the_queued_jobs_it_no_longer_allows,
    ])

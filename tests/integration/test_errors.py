#!/usr/bin/env python3
"""Errors a person can act on (issue 32, item 12).

A YAML mistake names the file the person wrote, not the request body; a
near miss gets "did you mean" (a tenant file's field, a job's kind, a
tenant path in a submit, a token's name); a tenant path with a non-ASCII
letter is a JSON 400 naming the field, never a null body; a CLI that
cannot reach the built-in default server says it was the default and how
to name another.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402


def write(d, name, text):
    path = os.path.join(d.dir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_a_yaml_error_names_the_file_and_the_near_field(d):
    path = write(d, "tenants.yaml", "tenants:\n  - path: research\n    guarantees: {gpu: {H100: 8}}\n")
    p = d.cli("apply", "-f", path, check=False)
    assert p.returncode != 0, p
    assert "tenants.yaml:3" in p.stderr and "body:" not in p.stderr, p.stderr
    assert "did you mean guarantee?" in p.stderr, p.stderr


def test_a_job_file_field_gets_did_you_mean_at_its_line(d):
    d.cli("apply", "-f", gpd.TENANTS)
    one = write(d, "job.yaml", "tenant: research/nlp\nname: x\ngpu: 2\ncommand: [true]\n")
    p = d.cli("submit", "-f", one, check=False)
    assert p.returncode != 0 and "job.yaml:3: unknown field gpu; did you mean gpus?" in p.stderr, p.stderr
    # another scheduler's name for a field: Slurm's gpus_per_node is gpus
    slurm = write(d, "slurm.yaml", "tenant: research/nlp\ngpus_per_node: 8\n")
    p = d.cli("submit", "-f", slurm, check=False)
    assert "slurm.yaml:2: unknown field gpus_per_node; did you mean gpus?" in p.stderr, p.stderr
    # a list: the line of the item's field; an --array: the one job's
    many = write(d, "jobs.yaml", "- tenant: research/nlp\n  gpus: 1\n- tenant: research/nlp\n  replica: 2\n")
    p = d.cli("submit", "-f", many, check=False)
    assert "jobs.yaml:4: jobs[1]: unknown field replica; did you mean replicas?" in p.stderr, p.stderr
    p = d.cli("submit", "-f", one, "--array", "3", check=False)
    assert "job.yaml:3: job: unknown field gpu; did you mean gpus?" in p.stderr, p.stderr
    # a field the flags gave is not the file's: no line of the file
    p = d.cli("submit", "-f", slurm, "--kind", "train", check=False)
    assert "field kind" in p.stderr and "slurm.yaml" not in p.stderr, p.stderr
    assert d.ok("GET", "/v1/jobs")["jobs"] == [], "nothing submitted"


def test_a_fleet_file_field_gets_did_you_mean_at_its_line(d):
    d.stop()
    fleet = write(d, "fleet.yaml", "pool:\n  - name: default\nnodes:\n  - name: n\n    gpu_type: H100\n"
                                   "    gpus: 8\n")
    gpupoold = os.path.join(gpd.BIN, "gpupoold")
    db = "sqlite:" + os.path.join(d.dir, "fleet-test.db")
    p = subprocess.run([gpupoold, "--store", db, "--fleet", fleet, "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=30)
    out = p.stdout + p.stderr  # the daemon's log
    assert p.returncode != 0 and "fleet.yaml:2: unknown field pool; did you mean pools?" in out, out  # its list's line
    for typed, line, near in (("gpus_per_node: 8", 6, "gpus"), ("gpu_typ: H100", 5, "gpu_type")):
        text = "nodes:\n  - name: n\n    zone: z\n    block: b\n    gpu_type: H100\n    gpus: 8\n"
        text = text.replace("gpus: 8" if near == "gpus" else "gpu_type: H100", typed)
        with open(fleet, "w") as f:
            f.write(text)
        p = subprocess.run([gpupoold, "--store", db, "--fleet", fleet, "--listen", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=30)
        want = "fleet.yaml:%d: nodes[0]: unknown field %s; did you mean %s?" % (line, typed.split(":")[0], near)
        assert p.returncode != 0 and want in p.stdout + p.stderr, (want, p.stdout + p.stderr)


DEMO_CONFIG = os.path.join(gpd.ROOT, "scripts", "demo-config.sh")


def test_the_demo_points_a_new_shells_cli_at_itself_and_back(d):
    d.cli("apply", "-f", gpd.TENANTS)
    home = os.path.join(d.dir, "home")
    config_dir = os.path.join(home, ".config", "gpupool")
    config = os.path.join(config_dir, "config")
    os.makedirs(config_dir)
    mine = "# my own\nserver = http://gpupool.example:8750\n"
    with open(config, "w") as f:
        f.write(mine)
    token_file = os.path.join(d.dir, "admin.token")
    assert os.path.exists(token_file)
    # a new shell: no GPUPOOL_* in its environment, only HOME
    shell = {k: v for k, v in os.environ.items() if not k.startswith("GPUPOOL_") and k != "XDG_CONFIG_HOME"}
    shell["HOME"] = home

    def demo_config(*args):
        return subprocess.run([DEMO_CONFIG] + list(args), env=shell, capture_output=True, text=True, timeout=30,
                              check=True).stdout.splitlines()

    def new_shell_jobs():
        return subprocess.run([os.path.join(gpd.BIN, "gpupool"), "tenants"], env=shell, capture_output=True,
                              text=True, timeout=30)

    assert new_shell_jobs().returncode != 0, "nothing listens at gpupool.example"
    written, kept = demo_config("write", d.url, token_file)
    assert written == config and kept == config + ".before-demo", (written, kept)
    with open(kept) as f:
        assert f.read() == mine, "the user's config is kept as it was"
    assert os.stat(config).st_mode & 0o777 == 0o600
    p = new_shell_jobs()
    assert p.returncode == 0 and "research/nlp" in p.stdout, (p.stdout, p.stderr)
    with open(config) as f:
        assert d.token not in f.read(), "the token stays in its own file"
    # a demo that did not stop cleanly, then another: the first copy is still what comes back
    demo_config("write", d.url, token_file)
    demo_config("restore")
    with open(config) as f:
        assert f.read() == mine
    assert not os.path.exists(kept)
    # no config before: the demo's goes when it stops; a config the user rewrote meanwhile stays
    os.remove(config)
    demo_config("write", d.url, token_file)
    demo_config("restore")
    assert not os.path.exists(config)
    demo_config("write", d.url, token_file)
    with open(config, "w") as f:
        f.write(mine)
    demo_config("restore")
    with open(config) as f:
        assert f.read() == mine


def test_a_near_kind_and_tenant_are_suggested(d):
    d.cli("apply", "-f", gpd.TENANTS)
    st, out = d.call("POST", "/v1/jobs", {"tenant": "research/nlp", "kind": "train", "gpus": 1})
    assert st == 400 and out["error"]["field"] == "kind", out
    assert "did you mean training?" in out["error"]["message"], out
    p = d.cli("submit", "--tenant", "research/nlp", "--kind", "train", "--gpus", "1", "--", "true", check=False)
    assert p.returncode != 0 and "did you mean training?" in p.stderr, p
    st, out = d.call("POST", "/v1/jobs", {"tenant": "research/nlpp", "gpus": 1})
    assert st in (400, 404) and "did you mean research/nlp?" in out["error"]["message"], out


def test_a_token_is_revoked_by_name(d):
    d.cli("apply", "-f", gpd.TENANTS)
    d.cli("token", "create", "--name", "ci-bot", "--role", "auditor")
    p = d.cli("token", "revoke", "ci-bott", check=False)
    assert p.returncode == 5 and "did you mean ci-bot?" in p.stderr, p
    p = d.cli("token", "revoke", "ci-bot")
    assert "revoked" in p.stdout, p
    tokens = d.ok("GET", "/v1/tokens")["tokens"]
    assert [t["revoked"] is not None for t in tokens if t["name"] == "ci-bot"] == [True], tokens
    p = d.cli("token", "revoke", "ci-bot", check=False)  # no live token of that name is left
    assert p.returncode == 5, p


def test_a_non_ascii_tenant_path_is_a_json_400(d):
    body = "tenants:\n  - path: misc\n  - path: misc/caf\u00e9\n"
    st, out = d.call("POST", "/v1/tenants:apply", raw=body.encode(), content_type="application/yaml")
    assert st == 400 and isinstance(out, dict), (st, out)
    assert out["error"]["field"] == "tenants[1].path", out
    assert "\u00e9" in out["error"]["message"], out
    assert d.ok("GET", "/v1/tenants").get("tenants") in ([], None), "nothing was applied"


def test_cannot_reach_says_the_default_and_how_to_point_elsewhere(d):
    home = os.path.join(d.dir, "home")
    os.makedirs(home, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUPOOL_") and k != "XDG_CONFIG_HOME"}
    env.update(HOME=home, GPUPOOL_TOKEN="x")
    cmd = [os.path.join(gpd.BIN, "gpupool"), "--wait-leader", "0", "jobs"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    if p.returncode == 0:  # a gpupoold on the default port of this machine: nothing to test here
        return
    assert p.returncode == 3 and "built-in default" in p.stderr and "GPUPOOL_SERVER" in p.stderr, p.stderr
    env["GPUPOOL_SERVER"] = "http://127.0.0.1:1"
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 3 and "built-in default" not in p.stderr, p.stderr


if __name__ == "__main__":
    gpd.run([test_a_yaml_error_names_the_file_and_the_near_field, test_a_job_file_field_gets_did_you_mean_at_its_line,
             test_a_fleet_file_field_gets_did_you_mean_at_its_line,
             test_the_demo_points_a_new_shells_cli_at_itself_and_back, test_a_near_kind_and_tenant_are_suggested,
             test_a_token_is_revoked_by_name, test_a_non_ascii_tenant_path_is_a_json_400,
             test_cannot_reach_says_the_default_and_how_to_point_elsewhere])

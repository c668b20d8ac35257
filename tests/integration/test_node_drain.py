"""A drain's reason, who drained and since when (issue 32, item 11;
src/server/api_fleet.c, src/store/store_nodes.c, src/cli/cmd_drain.c).

An operator token of user olga drains h100-a-0 with `gpupool nodes drain
--reason`: the node's view (GET /v1/nodes/NAME and GET /v1/nodes) says
why, who and since when, `gpupool nodes` shows it in REASON and `nodes
show` on a line of its own; a gpupoold restart and a new leader (the
follower of two replicas on one store, the leader killed) read the same; an undrain
clears it.  Reasons that are not one bounded line of text are refused
with 400 naming "reason" and change nothing; --all-of-type drains every
node of a type; a named node that does not exist fails alone.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

NODE = "h100-a-0"


def operator(d):
    return d.ok("POST", "/v1/tokens", {"name": "ops", "role": "operator", "user": "olga"})["token"]


def drain_of(d, node=NODE):
    return d.ok("GET", "/v1/nodes/" + node)["drain"]


def listed_drains(d):
    return {n["name"]: n["drain"] for n in d.ok("GET", "/v1/nodes")["nodes"]}


def cli(d, *args, token=None, env=None):
    cmd = [os.path.join(gpd.BIN, "gpupool")] + list(args)
    e = dict(os.environ, GPUPOOL_SERVER=d.url, GPUPOOL_TOKEN=token or d.token, HOME=d.dir)
    e.pop("COLUMNS", None)
    e.update(env or {})
    return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=60)


def check_shown(d, since):
    want = {"reason": "kernel 6.19", "by": "olga", "since": since, "kind": "operator"}
    assert drain_of(d) == want, drain_of(d)
    listed = listed_drains(d)
    assert listed[NODE] == want and all(v is None for k, v in listed.items() if k != NODE), listed
    row = [line for line in cli(d, "nodes").stdout.splitlines() if line.startswith(NODE + " ")]
    assert row and row[0].endswith("drained  kernel 6.19 (olga)"), row
    shown = cli(d, "nodes", "show", NODE).stdout.splitlines()
    local = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since))
    assert shown[1].startswith("drain: kernel 6.19; by olga since " + local), shown


def test_the_reason_who_and_since_are_kept_across_a_restart(d):
    t0 = int(time.time())
    p = cli(d, "nodes", "drain", NODE, "--reason", "kernel 6.19", token=operator(d))
    assert p.returncode == 0 and p.stdout == "node %s draining: kernel 6.19\n" % NODE, (p.stdout, p.stderr)
    since = drain_of(d)["since"]
    assert t0 <= since <= time.time(), since
    check_shown(d, since)
    narrow = cli(d, "nodes", env={"COLUMNS": "60"}).stdout.splitlines()
    assert all(len(line) <= 60 for line in narrow) and "REASON" in narrow[0], narrow
    d.stop()
    d.start()
    check_shown(d, since)
    # draining again replaces the reason and who, and keeps since
    d.ok("POST", "/v1/nodes/%s/drain" % NODE, {"reason": "RMA ticket 4411"})
    again = drain_of(d)
    assert again["reason"] == "RMA ticket 4411" and again["since"] == since and again["by"] != "olga", again
    p = cli(d, "nodes", "resume", NODE)
    assert p.returncode == 0 and p.stdout == "node %s undrained\n" % NODE, (p.stdout, p.stderr)
    assert drain_of(d) is None and not d.ok("GET", "/v1/nodes/" + NODE)["draining"]
    d.stop()
    d.start()
    assert drain_of(d) is None and listed_drains(d)[NODE] is None
    assert "drain:" not in cli(d, "nodes", "show", NODE).stdout


def test_bad_reasons_are_refused_and_change_nothing(d):
    bad = [{"reason": ""}, {"reason": "x" * 201}, {"reason": "line\nbreak"}, {"reason": 7},
           {"reason": "\u202eevil"}, {"drain": False, "reason": "done"}]
    for body in bad:
        st, out = d.call("POST", "/v1/nodes/%s/drain" % NODE, body)
        assert st == 400 and out["error"]["field"] == "reason", (body, st, out)
    view = d.ok("GET", "/v1/nodes/" + NODE)
    assert not view["draining"] and view["drain"] is None, view
    d.ok("POST", "/v1/nodes/%s/drain" % NODE, {"reason": "é" * 100})  # 200 bytes of one line: fine
    assert drain_of(d)["reason"] == "é" * 100
    d.ok("PUT", "/v1/tenants/research", {})
    member = d.ok("POST", "/v1/tokens", {"name": "m", "role": "member", "scope": "research", "user": "bob"})["token"]
    st, _ = d.call("POST", "/v1/nodes/h100-b-0/drain", {"reason": "mine"}, token=member)
    assert st == 403 and listed_drains(d)["h100-b-0"] is None
    p = cli(d, "nodes", "undrain", NODE, "--reason", "x")
    assert p.returncode == 2 and "--reason goes with a drain" in p.stderr, (p.stdout, p.stderr)


def test_all_of_type_and_a_list_of_nodes(d):
    h100 = [n["name"] for n in d.ok("GET", "/v1/nodes")["nodes"] if n["gpu_type"] == "H100"]
    p = cli(d, "nodes", "drain", "--all-of-type", "h100", "--reason", "firmware")
    assert p.returncode == 0 and len(p.stdout.splitlines()) == len(h100) == 4, (p.stdout, p.stderr)
    drains = listed_drains(d)
    assert all(drains[n]["reason"] == "firmware" for n in h100), drains
    assert all(v is None for k, v in drains.items() if k not in h100), drains
    assert cli(d, "nodes", "undrain", "--all-of-type", "H100").returncode == 0
    assert all(v is None for v in listed_drains(d).values())
    p = cli(d, "nodes", "drain", "--all-of-type", "B300")
    assert p.returncode == 5 and "no node has GPU type B300" in p.stderr, (p.stdout, p.stderr)
    # a list: the node that does not exist fails alone, with the nearest name
    p = cli(d, "nodes", "drain", "h100-b-9", "h100-b-1", "--reason", "swap")
    assert p.returncode == 5 and "did you mean" in p.stderr and "node h100-b-1 draining: swap" in p.stdout, \
        (p.stdout, p.stderr)
    assert listed_drains(d)["h100-b-1"]["reason"] == "swap"
    p = cli(d, "nodes", "drain", NODE, "--all-of-type", "H100")
    assert p.returncode == 2, (p.stdout, p.stderr)


def test_a_new_leader_reads_the_drain(d):
    """Two replicas on one store (test_ha.py's group): the leader drains,
    is killed, and the follower that takes over shows the same drain."""
    import test_ha
    g = test_ha.Group()
    try:
        r0, r1 = g.replicas[0], g.replicas[1]
        r0.start()
        g.wait_leader([r0], 20)
        r1.start()
        r0.ok("POST", "/v1/nodes/%s/drain" % NODE, {"reason": "kernel 6.19"})
        first = r0.ok("GET", "/v1/nodes/" + NODE)["drain"]
        assert first["reason"] == "kernel 6.19", first
        r0.kill9()
        g.wait_leader([r1], 30)
        assert r1.ok("GET", "/v1/nodes/" + NODE)["drain"] == first
        r1.ok("POST", "/v1/nodes/%s/drain" % NODE, {"drain": False})
        assert r1.ok("GET", "/v1/nodes/" + NODE)["drain"] is None
    finally:
        g.cleanup()


if __name__ == "__main__":
    gpd.run([test_the_reason_who_and_since_are_kept_across_a_restart, test_bad_reasons_are_refused_and_change_nothing,
             test_all_of_type_and_a_list_of_nodes, test_a_new_leader_reads_the_drain])

#!/usr/bin/env python3
"""Nodes that are who they say (issue 29, finding 2), each tried as the
attacker would, against the real gpupoold (and the real agent where the
agent is what stops it):

  - an agent given --join-token on its command line (where `ps` shows it
    to every user) exits with a message naming the file and the variable;
    GPUPOOL_JOIN_TOKEN in its environment registers it;
  - a join token registers only the node names its --nodes patterns
    cover: a rogue name is 403 (field node.name), audited, and nothing is
    made; a join token without --nodes is refused at creation;
  - a single-use join token is spent by its first registration;
  - a join token alone cannot re-register a live node (409 naming
    `gpupool nodes approve`): the live agent's credential stays valid and
    it keeps its work; the node's own credential re-registers it, and a
    restarted real agent whose node was lost comes back on its own;
  - `gpupool nodes approve NAME` lets one join-token registration of an
    existing node in, within an hour (operator or admin; a member may
    not); a real agent
    whose state folder is gone stops with the 409 naming it, and comes in
    once approved;
  - gpupoold --approve-nodes: a new node is cordoned (nothing placed on
    it) until approved.
"""
import os
import sqlite3
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from agentproc import Agent, end_replicas, sim_nodes, submit, wait_state, write_node_file  # noqa: E402
from test_agent_api import FakeAgent  # noqa: E402

AGENT_BIN = os.path.join(gpd.BIN, "gpupool-agent")


def join(d, nodes="*", *flags):
    return d.cli("token", "create", "--name", "rack", "--role", "join", "--nodes", nodes, *flags,
                 json_out=True)["token"]


def inventory(name):
    return {"name": name, "gpu_type": "T4", "gpu_count": 2, "zone": "z1", "block": "blk-t",
            "gpu_uuids": ["GPU-%s-%d" % (name, i) for i in range(2)], "gpu_mem_mib": 16384}


def register(d, name, token):
    return d.call("POST", "/v1/agents:register", {"node": inventory(name)}, token=token)


def node_names(d):
    return {n["name"] for n in d.ok("GET", "/v1/nodes")["nodes"]}


def audit_rows(d, action):
    return [r for r in d.ok("GET", "/v1/audit?limit=1000")["audit"] if r["action"] == action]


def test_an_agent_given_a_join_token_on_its_command_line_exits_with_the_message(d):
    node_file = write_node_file(d.dir, sim_nodes("env", 1))
    p = subprocess.run([AGENT_BIN, "run", "--server", d.url, "--join-token", "gpt_visible_in_ps", "--backend", "sim",
                        "--node-file", node_file, "--state-dir", os.path.join(d.dir, "st")],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "--join-token-file" in p.stderr and "GPUPOOL_JOIN_TOKEN" in p.stderr, p.stderr
    env = dict(os.environ, GPUPOOL_JOIN_TOKEN=join(d, "env-*"))
    agent = subprocess.Popen([AGENT_BIN, "run", "--server", d.url, "--backend", "sim", "--node-file", node_file,
                              "--state-dir", os.path.join(d.dir, "st"), "--no-cgroups"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        gpd.wait_for(lambda: "env-0" in node_names(d), what="the agent registered with the variable's token")
    finally:
        agent.kill()
        agent.wait()


def test_a_join_token_registers_only_the_names_its_patterns_cover(d):
    status, out = d.call("POST", "/v1/tokens", {"name": "any", "role": "join"})
    assert status == 400 and out["error"]["field"] == "nodes", out
    status, out = d.call("POST", "/v1/tokens", {"name": "x", "role": "join", "nodes": "h100-*,,"})
    assert status == 400 and out["error"]["field"] == "nodes", out
    status, out = d.call("POST", "/v1/tokens", {"name": "x", "role": "member", "scope": "t", "user": "u",
                                                "nodes": "*"})
    assert status == 400 and out["error"]["field"] == "nodes", out
    token = join(d, "h100-*,a100-0[0-3]")
    status, out = register(d, "rogue-h100", token)
    assert status == 403 and out["error"]["field"] == "node.name", out
    assert "h100-*" in out["error"]["message"], out
    status, out = register(d, "a100-07", token)
    assert status == 403 and out["error"]["field"] == "node.name", out
    assert not {"rogue-h100", "a100-07"} & node_names(d)
    refused = audit_rows(d, "agent.register")
    assert [r["target"] for r in refused if r["result"].startswith("403")] == ["node/rogue-h100", "node/a100-07"]
    for name in ("h100-0", "a100-02"):
        status, out = register(d, name, token)
        assert status == 201 and out["awaiting_approval"] is False, out
    rows = {t["name"]: t for t in d.ok("GET", "/v1/tokens")["tokens"]}
    assert rows["rack"]["scope"] == "h100-*,a100-0[0-3]" and rows["rack"]["single_use"] is False, rows["rack"]
    d.stop()
    with sqlite3.connect(os.path.join(d.dir, "gpupool.db")) as db:  # a join token from before --nodes
        db.execute("UPDATE tokens SET scope = '' WHERE role = 'join'")
    d.start()
    status, out = register(d, "h100-1", token)
    assert status == 403 and "names no nodes" in out["error"]["message"], out


def test_a_single_use_join_token_is_spent_by_its_first_registration(d):
    token = join(d, "h100-*", "--single-use")
    status, out = register(d, "h100-0", token)
    assert status == 201, out
    status, out = register(d, "h100-1", token)
    assert status == 401, out
    assert "h100-1" not in node_names(d)
    rows = {t["name"]: t for t in d.ok("GET", "/v1/tokens")["tokens"]}
    assert rows["rack"]["single_use"] is True and rows["rack"]["revoked"] is not None, rows["rack"]
    racing = join(d, "race-*", "--single-use")  # registrations at once: one gets in
    results, start = [], threading.Barrier(24)

    def race(i):
        start.wait()
        results.append(register(d, "race-%d" % i, racing)[0])
    threads = [threading.Thread(target=race, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results).count(201) == 1 and set(results) <= {201, 401, 409}, results
    assert len([n for n in node_names(d) if n.startswith("race-")]) == 1


def test_a_join_token_alone_cannot_take_a_live_node(d):
    d.ok("PUT", "/v1/tenants/t", {})
    token = join(d)
    live = FakeAgent(d, "t4-9", join=token)
    job_id = d.ok("POST", "/v1/jobs", {"tenant": "t", "gpus": 2, "gpu_types": ["T4"], "command": ["true"],
                                       "env": {"NOT_FOR_ROGUES": "x"}})["id"]
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % job_id)["state"] == "running", what="job on t4-9")
    status, out = register(d, "t4-9", token)
    assert status == 409 and out["error"]["field"] == "node.name", out
    assert "gpupool nodes approve t4-9" in out["error"]["message"], out
    assert "token" not in out
    assert live.heartbeat()[0] == 200  # the live credential was not revoked
    [a] = [a for a in live.poll()["assignments"] if a["job"] == job_id]
    assert a["action"] == "run", a
    assert d.ok("GET", "/v1/jobs/%d" % job_id)["state"] == "running"
    assert audit_rows(d, "agent.register")[-1]["result"].startswith("409"), audit_rows(d, "agent.register")
    old = live.token
    out = live.register(old)  # its own credential re-registers it: a fresh one, the old revoked
    assert out["revoked"] and live.token != old, out
    assert d.call("GET", "/v1/agents/t4-9/assignments", token=old)[0] == 401
    other = FakeAgent(d, "t4-8", join=token)
    status, out = d.call("POST", "/v1/agents:register", {"node": inventory("t4-9")}, token=other.token)
    assert status == 403 and out["error"]["field"] == "node.name", out  # another node's credential: no


def test_an_approval_lets_one_join_token_registration_of_an_existing_node_in(d):
    token = join(d)
    live = FakeAgent(d, "t4-9", join=token)
    d.ok("PUT", "/v1/tenants/t", {})
    member = d.cli("token", "create", "--name", "m", "--role", "member", "--scope", "t", "--user", "u",
                   json_out=True)["token"]
    operator = d.cli("token", "create", "--name", "o", "--role", "operator", json_out=True)["token"]
    assert d.call("POST", "/v1/nodes/t4-9/approve", token=member)[0] == 403
    assert d.call("POST", "/v1/nodes/nope/approve")[0] == 404
    assert d.call("GET", "/v1/nodes/t4-9/approve")[0] == 405
    p = d.cli("nodes", "approve", "t4-9", token=operator)
    assert "approved" in p.stdout, p.stdout
    assert audit_rows(d, "node.approve")[-1]["result"] == "ok"
    status, out = register(d, "t4-9", token)
    assert status == 201 and out["revoked"], out
    assert live.heartbeat()[0] == 401  # the replaced agent's credential is gone, as the admin chose
    status, out = register(d, "t4-9", token)
    assert status == 409, out  # the approval was used up
    d.cli("nodes", "approve", "t4-9")
    with sqlite3.connect(os.path.join(d.dir, "gpupool.db")) as db:  # an approval an hour old
        db.execute("UPDATE node_approvals SET time = time - 3601 WHERE node = 't4-9'")
    status, out = register(d, "t4-9", token)
    assert status == 409, out  # a forgotten approval lets no one in


def test_approve_nodes_keeps_a_new_node_cordoned_until_approved(d):
    d.stop()
    d.extra = ["--approve-nodes"]
    d.start()
    d.ok("PUT", "/v1/tenants/t", {})
    status, out = register(d, "t4-new", join(d))
    assert status == 201 and out["awaiting_approval"] is True, out
    view = d.ok("GET", "/v1/nodes/t4-new")
    assert view["draining"] is True and view["drain"]["kind"] == "approval", view  # says why (issue 32, item 11)
    assert view["drain"]["reason"] == "awaiting an admin's approval", view["drain"]
    job_id = d.ok("POST", "/v1/jobs", {"tenant": "t", "gpus": 1, "gpu_types": ["T4"], "command": ["true"]})["id"]
    d.ok("POST", "/v1/agents/t4-new/heartbeat", {}, token=out["token"])
    assert d.ok("GET", "/v1/jobs/%d" % job_id)["state"] == "pending"
    d.cli("nodes", "approve", "t4-new")
    assert d.ok("GET", "/v1/nodes/t4-new")["draining"] is False and d.ok("GET", "/v1/nodes/t4-new")["drain"] is None
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % job_id)["state"] == "running", what="job on the approved node")


def test_a_restarted_agent_whose_node_was_lost_registers_again_with_its_credential(d):
    d.stop()
    d.fleet = None
    d.extra = ["--node-lost-after", "2"]
    d.start()
    d.ok("PUT", "/v1/tenants/t", {})
    nodes = sim_nodes("back", 1)
    a = Agent(d, write_node_file(d.dir, nodes), extra=["--no-cgroups", "--heartbeat-s", "1"],
              join=join(d, "back-*", "--single-use")).start()
    job_id = None
    try:
        a.wait_up(["back-0"])
        # up in gpupoold once its registration commits; the agent keeps its credential when the answer comes
        gpd.wait_for(lambda: "registered epoch=" in a.read_log(), what="the agent to keep its credential")
        a.kill9()
        gpd.wait_for(lambda: not d.ok("GET", "/v1/nodes/back-0")["up"], what="the node lost")
        a.start()  # the same state folder: its credential; the join token is spent
        a.wait_up(["back-0"])
        job_id = submit(d, gpu_types=["H100"])
        wait_state(d, job_id, "running")
    finally:
        a.stop()
        end_replicas([a], [job_id] if job_id else [])


def test_an_agent_that_lost_its_credential_waits_for_an_approval(d):
    nodes = sim_nodes("wiped", 1)
    node_file = write_node_file(d.dir, nodes)
    token = join(d, "wiped-*")
    first = Agent(d, node_file, extra=["--no-cgroups"], join=token, name="first").start()
    try:
        first.wait_up(["wiped-0"])
    finally:
        first.kill9()
    second = Agent(d, node_file, extra=["--no-cgroups"], join=token, name="second").start()  # a fresh state folder
    try:
        assert second.proc.wait(timeout=30) == 1
        log = second.read_log()
        assert "register refused (409)" in log and "gpupool nodes approve wiped-0" in log, log
        d.cli("nodes", "approve", "wiped-0")
        second.start()
        gpd.wait_for(lambda: "registered" in second.read_log(), what="the approved agent registered")
        second.wait_up(["wiped-0"])
    finally:
        second.stop()


if __name__ == "__main__":
    gpd.run([
        test_an_agent_given_a_join_token_on_its_command_line_exits_with_the_message,
        test_a_join_token_registers_only_the_names_its_patterns_cover,
        test_a_single_use_join_token_is_spent_by_its_first_registration,
        test_a_join_token_alone_cannot_take_a_live_node,
        test_an_approval_lets_one_join_token_registration_of_an_existing_node_in,
        test_approve_nodes_keeps_a_new_node_cordoned_until_approved,
        test_a_restarted_agent_whose_node_was_lost_registers_again_with_its_credential,
        test_an_agent_that_lost_its_credential_waits_for_an_approval,
    ], fleet=None)

#!/usr/bin/env python3
"""`gpupool top` (issue 15, section 6) against a real gpupoold:
  - on a terminal (a tmux pane: send-keys, capture-pane) it shows occupancy
    per GPU type, the top tenants against their guarantee, the queue heads
    with reasons and recent preemptions with reasons, redraws in place, and
    q or Ctrl-C ends it with the terminal restored (echo back on);
  - when stdout is not a terminal it prints one snapshot and exits;
  - GET /v1/preemptions is scoped like jobs;
  - (issue 32, item 13) a frame fits an 80 x 24 and a 90 x 30 terminal (a
    tmux pane of that size: the watch header stays on the first line, no
    line wraps) and $COLUMNS x $LINES off a terminal (every line's width,
    the line count), on a fleet of four GPU types (one on a sim agent) and
    six tenants; USE is the agents' SM activity ("-" for a type no agent
    reports), ALLOC what is allocated; OF-GUARANTEE is per GPU type (a type
    in use without a guarantee is "burst", never a sum of types); a parent's
    PENDING is its subtree's; a preemption's reason names who reclaims once.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentproc  # noqa: E402
import gpd  # noqa: E402


def busy_fleet(d):
    """vision borrows nlp's H100, nlp reclaims them (preemptions), search
    fills the rest and a big gang waits (the queue)."""
    d.cli("apply", "-f", gpd.TENANTS)
    d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 8, "gpu_types": ["H100"]})
    borrowed = [d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 4, "gpu_types": ["H100"],
                                          "checkpoint_grace_s": 1})["id"] for _ in range(4)]
    d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 8, "gpu_types": ["H100"]})
    nlp = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "replicas": 2, "gpus": 8, "gpu_types": ["H100"]})
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % nlp["id"])["state"] == "running", timeout=15, what="reclaim")
    waiting = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "replicas": 4, "gpus": 8,
                                        "gpu_types": ["H100"]})
    return borrowed, waiting["id"]


def test_a_snapshot_when_stdout_is_not_a_terminal(d):
    borrowed, waiting = busy_fleet(d)
    p = d.cli("top")  # capture_output: a pipe, so one snapshot and exit 0
    out = p.stdout
    assert "\033[" not in out, repr(out[:200])
    assert out.count("GPU ") == 1 and "H100" in out and "A100" in out, out
    h100 = [line.split() for line in out.splitlines() if line.startswith("H100")][0]
    assert h100[1] == "32" and h100[2] == "0" and h100[3] == "100%" and h100[4] == "-", h100  # GPUS FREE ALLOC USE
    assert "research/nlp" in out and "H100=16" in out and "100%" in out, out
    assert "%d " % waiting in out and "research/vision" in out, out
    assert "Recent preemptions" in out and "reclaims its guarantee" in out, out
    # no epoch seconds (issue 32): the engine's "expected to start at t=..." as a local time
    gpd.wait_for(lambda: any(" t=" in q["reason"] for q in d.cli("top", json_out=True)["queue"]), what="a t= reason")
    out = d.cli("top").stdout
    assert "expected to start at 20" in out and not re.search(r"(^| )t=[0-9]", out, re.M), out
    snap = d.cli("top", json_out=True)
    assert {b for b in borrowed} <= {p["job"] for p in snap["preemptions"]}, snap["preemptions"]
    queue = [q["id"] for q in snap["queue"]]
    assert queue[0] == borrowed[0] and waiting in queue, snap["queue"]  # oldest first: the requeued borrowers
    assert all(q["reason"] for q in snap["queue"]), snap["queue"]
    assert d.cli("top", "--interval", "0", check=False).returncode == 2


def test_preemptions_are_scoped_like_jobs(d):
    borrowed, _ = busy_fleet(d)
    member = d.ok("POST", "/v1/tokens", {"name": "m", "role": "member", "scope": "product/search",
                                         "user": "sam"})["token"]
    assert d.ok("GET", "/v1/preemptions", token=member)["preemptions"] == []
    seen = d.ok("GET", "/v1/preemptions?limit=2")["preemptions"]
    assert len(seen) == 2 and all(p["tenant"] == "research/vision" for p in seen), seen
    status, body = d.call("GET", "/v1/preemptions?limit=0")
    assert status == 400 and body["error"]["field"] == "limit", body


def pane(name, joined=False):
    """The pane's screen; joined: a wrapped line as the one line it was (capture-pane -J)."""
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", name] + (["-J"] if joined else []),
                          capture_output=True, text=True).stdout


def fleet_with_an_agent(d):
    """busy_fleet, plus a sim agent's two L4 nodes (telemetry) with a research/nlp job on one: the agent."""
    busy_fleet(d)
    nodes = agentproc.write_node_file(d.dir, agentproc.sim_nodes("l4-e", 2, gpus=2, gpu_type="L4", block="blk-e"))
    agent = agentproc.Agent(d, nodes, extra=["--no-cgroups"]).start()
    agent.wait_up(["l4-e-0", "l4-e-1"])
    job = agentproc.submit(d, tenant="research/nlp", gpu_types=["L4"], name="on-agent")
    agentproc.wait_state(d, job, "running")
    gpd.wait_for(lambda: all("sm_active_pct" in g for n in d.ok("GET", "/v1/nodes")["nodes"] if n["gpu_type"] == "L4"
                             for g in n["gpus"]), what="the agent's telemetry of every L4 GPU")
    return agent, job


def table(out, title):
    """The rows (split on blanks) of the table under title (None: the first), header first."""
    lines = out.splitlines()
    start = 0 if title is None else lines.index(title) + 1
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def check_fits(out, width, height):
    lines = out.splitlines()
    assert len(lines) <= height, "%d lines for %d:\n%s" % (len(lines), height, out)
    wide = [line for line in lines if len(line) > width]
    assert not wide, "wider than %d: %s" % (width, wide)
    for title in ("Top tenants by GPUs in use", "Queue (oldest pending first)", "Recent preemptions"):
        assert len(table(out, title)) >= 2, (title, out)  # its header and at least one row
    assert len(table(out, None)) == 5, out  # the header and four GPU types


def test_columns_fit_the_terminal_and_mean_what_they_say(d):
    agent, job = fleet_with_an_agent(d)
    try:
        full = d.cli("top").stdout  # a pipe without $COLUMNS/$LINES: no limit, every row
        gpus = {r[0]: dict(zip(table(full, None)[0], r)) for r in table(full, None)[1:]}
        assert gpus["H100"]["ALLOC"] == "100%" and gpus["H100"]["USE"] == "-", gpus  # no agent: no telemetry
        assert re.fullmatch(r"\d+%", gpus["L4"]["USE"]) and gpus["L4"]["ALLOC"] == "25%", gpus
        tenants = {r[0]: r for r in table(full, "Top tenants by GPUs in use")[1:]}
        # research/nlp: H100=16 against H100=16, and L4=1 with no L4 guarantee: burst, not 106 %
        assert tenants["research/nlp"][1:3] == ["L4", "burst"], tenants
        assert tenants["product/search"][1:3] == ["H100", "100%"], tenants
        listed = {t["path"]: t for t in d.ok("GET", "/v1/tenants")["tenants"]}
        pending = sum(t["pending_jobs"] for p, t in listed.items() if p == "research" or p.startswith("research/"))
        assert pending >= 5 and tenants["research"][3] == str(pending), (pending, tenants["research"])
        check_member_sees_no_other_tenants_use(d, job)
        for p in d.ok("GET", "/v1/preemptions")["preemptions"]:
            assert p["reason"].count("research/nlp") == 1 and "by job" not in p["reason"], p["reason"]
        for width, height in ((80, 24), (90, 30)):
            env = dict(os.environ, GPUPOOL_SERVER=d.url, GPUPOOL_TOKEN=d.token, COLUMNS=str(width),
                       LINES=str(height))
            out = subprocess.run([os.path.join(gpd.BIN, "gpupool"), "top"], env=env, capture_output=True, text=True,
                                 check=True).stdout
            check_fits(out, width, height)
            check_terminal(d, width, height)
    finally:
        agent.stop()
        agentproc.end_replicas([agent], [job])


def check_member_sees_no_other_tenants_use(d, job):
    """GET /v1/nodes gives USE's sm_active_pct: an admin gets every agent GPU's; a member of another tenant
    not that of the GPU research/nlp's job holds (its use is research/nlp's), but that of a free one."""
    member = d.ok("POST", "/v1/tokens", {"name": "pat", "role": "member", "scope": "product/search",
                                         "user": "pat"})["token"]
    held = {g for rep in d.ok("GET", "/v1/jobs/%d" % job)["placement"] for g in rep["gpus"]}
    for token, sees_held in ((d.token, True), (member, False)):
        l4 = [g for n in d.ok("GET", "/v1/nodes", token=token)["nodes"] if n["gpu_type"] == "L4" for g in n["gpus"]]
        assert all(("sm_active_pct" in g) == (sees_held or g["uuid"] not in held) for g in l4), (sees_held, l4)


def check_terminal(d, width, height):
    """top in a tmux pane of width x height: the watch header on the first line, no line wrapped."""
    if not shutil.which("tmux"):
        print("skip the %dx%d pane: tmux is not installed" % (width, height), flush=True)
        return
    session = "gpfit%d_%d" % (os.getpid(), width)
    cmd = "env GPUPOOL_SERVER=%s GPUPOOL_TOKEN=%s %s top --interval 1" % (d.url, d.token,
                                                                         os.path.join(gpd.BIN, "gpupool"))
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(width), "-y", str(height),
                    "env -i PATH=/usr/bin:/bin TERM=xterm HOME=%s %s" % (d.dir, cmd)], check=True)
    try:
        screen = gpd.wait_for(lambda: "Recent preemptions" in pane(session) and pane(session), what="top drawn")
        lines = screen.rstrip("\n").splitlines()
        assert lines[0].startswith("every 1s: gpupool top"), "the header scrolled away:\n" + screen
        assert len(lines) <= height, screen
        wrapped = [line for line in pane(session, joined=True).splitlines() if len(line) > width]
        assert not wrapped, "wrapped at %d columns: %s" % (width, wrapped)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_live_on_a_terminal_and_q_or_ctrl_c_quit_cleanly(d):
    busy_fleet(d)
    session = "gptop%d" % os.getpid()
    env = "GPUPOOL_SERVER=%s GPUPOOL_TOKEN=%s" % (d.url, d.token)
    shell = "env -i PATH=/usr/bin:/bin TERM=xterm HOME=%s PS1='$ ' bash --norc --noprofile" % d.dir
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "50", shell], check=True)
    try:
        for key in ("q", "C-c"):
            cmd = "%s %s top --interval 1; echo exit=$?" % (env, os.path.join(gpd.BIN, "gpupool"))
            subprocess.run(["tmux", "send-keys", "-t", session, "clear", "Enter"], check=True)
            subprocess.run(["tmux", "send-keys", "-t", session, cmd, "Enter"], check=True)
            first = gpd.wait_for(lambda: "every 1s: gpupool top" in pane(session) and
                                 "Recent preemptions" in pane(session) and pane(session), what="top drawn")
            assert "H100" in first and "research/nlp" in first and "reclaims its guarantee" in first, first
            stamp = [line for line in first.splitlines() if "every 1s" in line][0]
            # it redraws in place: the header's time moves, the screen holds one view
            redrawn = gpd.wait_for(lambda: stamp not in pane(session) and "every 1s" in pane(session) and
                                   pane(session), timeout=10, what="a redraw")
            assert redrawn.count("every 1s: gpupool top") == 1, redrawn
            subprocess.run(["tmux", "send-keys", "-t", session, key], check=True)
            gpd.wait_for(lambda: "exit=0" in pane(session), timeout=10, what="top to end on " + key)
            # the terminal is restored: what is typed echoes again
            subprocess.run(["tmux", "send-keys", "-t", session, "echo typed-$((40+2))", "Enter"], check=True)
            gpd.wait_for(lambda: "echo typed-$((40+2))" in pane(session) and "typed-42" in pane(session),
                         timeout=10, what="echo restored after " + key)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


if __name__ == "__main__":
    tests = [test_a_snapshot_when_stdout_is_not_a_terminal, test_preemptions_are_scoped_like_jobs,
             test_columns_fit_the_terminal_and_mean_what_they_say]
    if shutil.which("tmux"):
        tests.append(test_live_on_a_terminal_and_q_or_ctrl_c_quit_cleanly)
    else:
        print("skip test_live_on_a_terminal_and_q_or_ctrl_c_quit_cleanly: tmux is not installed", flush=True)
    gpd.run(tests)

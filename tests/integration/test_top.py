#!/usr/bin/env python3
"""`gpupool top` (issue 15, section 6) against a real gpupoold:
  - on a terminal (a tmux pane: send-keys, capture-pane) it shows occupancy
    per GPU type, the top tenants against their guarantee, the queue heads
    with reasons and recent preemptions with reasons, redraws in place, and
    q or Ctrl-C ends it with the terminal restored (echo back on);
  - when stdout is not a terminal it prints one snapshot and exits;
  - GET /v1/preemptions is scoped like jobs.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
    assert h100[1] == "32" and h100[2] == "32" and h100[3] == "0" and h100[4] == "100%", h100
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


def pane(name):
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout


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
    tests = [test_a_snapshot_when_stdout_is_not_a_terminal, test_preemptions_are_scoped_like_jobs]
    if shutil.which("tmux"):
        tests.append(test_live_on_a_terminal_and_q_or_ctrl_c_quit_cleanly)
    else:
        print("skip test_live_on_a_terminal_and_q_or_ctrl_c_quit_cleanly: tmux is not installed", flush=True)
    gpd.run(tests)

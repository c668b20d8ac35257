#!/usr/bin/env python3
"""The web dashboard end to end in headless Chromium (issue 15, section 5).

A demo-like system -- gpupoold with examples/fleet-mixed.yaml (H100 blocks,
a MIG A100 node, time-sliced and MPS L40S nodes), one simulated node agent
(sim backend) with two L4 nodes of its own block running a real process,
examples/tenants.yaml and a workload with borrowing, a reclaim (so
preemptions), a waiting gang and MIG instances -- and the dashboard opened
by tests/web/dashboard.js (Chromium over the DevTools protocol, Debian's
node-ws) with an admin token and with a member token:

  - nothing goes wrong in the page: no JavaScript exception, no console
    error, no failed request and no 4xx/5xx answer;
  - the admin sees every node and GPU, which tenant holds each (MIG
    instances drawn with their tenant), the whole queue and every
    preemption as the API lists them, every tenant's usage chart, and the
    bill with its fleet section;
  - a member of research/vision sees its tenant only: its queue, its
    preemptions, its chart, its bill without a fleet section; GPUs of others
    are just "other tenants";
  - the bookings calendar (issue 34): one per GPU type for the next 7 days,
    research/nlp's booking of 8 H100 drawn for the admin with what is left
    free to book that day, and not for the member of research/vision;
  - times are the viewer's local time (the browser's time zone set to
    Asia/Kathmandu, UTC+05:45);
  - a 6,250-node fleet is drawn as one tile per block, no GPU cell until a
    block is opened; opening one draws its 32 nodes and their 256 GPUs;
  - Sign out (clicked while a refresh is in flight) forgets everything at
    once (issue 32, item 3): no tenant, node, job name, bill figure or
    viewer name of the admin is left in the page's visible text, in any
    element's textContent or in its HTML (attributes included), no panel is
    visible, the token is gone from sessionStorage and the answers that come
    back afterwards are dropped; a member then signing in in the same tab
    sees its own tenant only.

Screenshots go to $GP_WEB_SHOTS (the build's web-screenshots/).  The bill
panel reads GET /v1/bill (part B of issue 15, branch i15-bill): until that
endpoint exists this test fails on the bill panel only, and says so.
Exit 77 (skipped) when chromium, node or node-ws is not installed.
"""
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zoneinfo

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import agentproc  # noqa: E402
import gpd  # noqa: E402

CHROMIUM = os.environ.get("GP_CHROMIUM", "/usr/bin/chromium")
NODE_WS = "/usr/share/nodejs/ws"
SHOTS = os.environ.get("GP_WEB_SHOTS", os.path.join(gpd.ROOT, "build", "web-screenshots"))
TZ = "Asia/Kathmandu"
BILL_NOTE = "GET /v1/bill is part B of issue 15 (branch i15-bill); this panel passes once it is merged"


def open_dashboard(d, token, png, **opts):
    """What the page shows to token, and what went wrong in it (dashboard.js)."""
    out = drive_dashboard(d, token, png, **opts)
    return out["report"], out["errors"]


def drive_dashboard(d, token, png, **opts):
    """dashboard.js's whole answer: report, errors, and signed_out and next when asked for."""
    cmd = ["node", os.path.join(HERE, "dashboard.js"), "--url", d.url + "/", "--token", token,
           "--png", os.path.join(SHOTS, png), "--tz", TZ]
    for k, v in opts.items():
        cmd += ["--" + k.replace("_", "-"), str(v)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        raise AssertionError("dashboard.js failed:\n" + p.stderr[-4000:])
    return json.loads(p.stdout)


def split_bill(errors, report):
    """(errors of everything but the bill panel, what is wrong with the bill panel)."""
    bill = [e for e in errors if "/v1/bill" in e["url"]]
    bill += [{"kind": "panel", "text": p["text"], "url": ""} for p in report["failed_panels"] if p["panel"] == "bill"]
    others = [e for e in errors if "/v1/bill" not in e["url"]]
    failed = [p for p in report["failed_panels"] if p["panel"] != "bill"]
    assert not failed, failed
    return others, bill


def assert_bill_shown(bill_errors, bill, tenants, fleet):
    """The bill panel drew without a failure: these tenants (None: some), a fleet section or not."""
    if bill_errors:
        raise AssertionError("bill panel: %s (%s)" % (bill_errors, BILL_NOTE))
    assert bill["tenants"] and (tenants is None or bill["tenants"] == tenants), bill
    assert bill["fleet"] == fleet, bill


def local(epoch):
    return datetime.datetime.fromtimestamp(epoch, zoneinfo.ZoneInfo(TZ)).strftime("%Y-%m-%d %H:%M:%S")


def demo_system(d):
    """The fleet, a sim agent's nodes, the tenants and a workload; the agent (to stop)."""
    d.cli("apply", "-f", gpd.TENANTS)
    node_file = agentproc.write_node_file(d.dir, agentproc.sim_nodes("l4-e", 2, gpus=2, gpu_type="L4", block="blk-e"))
    agent = agentproc.Agent(d, node_file, extra=["--no-cgroups"]).start()
    agent.wait_up(["l4-e-0", "l4-e-1"])
    on_agent = agentproc.submit(d, tenant="research/nlp", gpu_types=["L4"], name="on-agent")
    d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 8, "gpu_types": ["H100"], "name": "vit-floor"})
    for i in range(4):
        d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 4, "gpu_types": ["H100"], "name": "vit-%d" % i,
                                  "checkpoint_grace_s": 1})
    for profile in ("3g.40gb", "1g.10gb"):
        d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 1, "gpu_types": ["A100"], "name": "rank",
                                  "share": {"mig": profile}})
    d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 1, "gpu_types": ["L40S"], "name": "notebook",
                              "kind": "interactive", "share": {"timeslice": True}})
    nlp = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "replicas": 2, "gpus": 8, "gpu_types": ["H100"],
                                    "name": "llm"})
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % nlp["id"])["state"] == "running", timeout=20, what="reclaim")
    d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "replicas": 4, "gpus": 8, "gpu_types": ["H100"],
                              "name": "too-big"})
    agentproc.wait_state(d, on_agent, "running")
    gpd.wait_for(lambda: agent.starts(on_agent), what="the agent's replica started")
    d.ok("POST", "/v1/bookings", {"name": "nlp-eval", "tenant": "research/nlp", "gpu_type": "H100", "gpus": 8,
                                  "start": int(time.time()) + 3 * 3600, "duration_s": 7200})
    return agent, on_agent


def ids(rows):
    return sorted(r["job"] for r in rows)


def api_jobs(d, token, state):
    return d.ok("GET", "/v1/jobs?state=%s&limit=1000" % state, token=token)["jobs"]


def check_admin(d, agent):
    report, errors = open_dashboard(d, d.token, "dashboard-admin.png")
    others, bill = split_bill(errors, report)
    assert not others, others
    assert report["role"] == "admin" and report["loaded"] >= 1, report
    assert report["reason_time"] and "t=" not in report["reason_time"] and "(in 12m 0s)" in report["reason_time"], report
    assert not [r for r in report["reasons"] if re.search(r"(^| )t=[0-9]", r)], report["reasons"]
    nodes = d.ok("GET", "/v1/nodes")["nodes"]
    fleet = report["fleet"]
    assert sorted(fleet["nodes"]) == sorted(n["name"] for n in nodes), fleet["nodes"]
    assert fleet["gpus"] == sum(n["gpu_count"] for n in nodes), fleet
    assert "blk-e" in fleet["blocks_shown"], fleet  # the agent's nodes
    assert {"research/nlp", "research/vision"} <= set(fleet["gpu_tenants"]), fleet["gpu_tenants"]
    assert fleet["gpu_sharing"].keys() >= {"exclusive", "mig", "timeslice", "mps"}, fleet["gpu_sharing"]
    slices = sorted((s["profile"], s["tenant"]) for s in fleet["mig_slices"])
    assert slices == [("1g.10gb", "product/search"), ("3g.40gb", "product/search")], slices
    assert ids(report["queue"]) == sorted(j["id"] for j in api_jobs(d, d.token, "pending")), report["queue"]
    preempted = d.ok("GET", "/v1/preemptions?limit=20")["preemptions"]
    assert len(preempted) >= 2 and ids(report["preemptions"]) == sorted(p["job"] for p in preempted), report
    charts = {(c["tenant"], c["type"]) for c in report["usage_charts"]}
    assert {("research", "H100"), ("research/nlp", "H100"), ("research/vision", "H100"), ("product/search", "A100"),
            ("research/nlp", "L4")} <= charts, charts
    h100 = {c["tenant"]: c for c in report["usage_charts"] if c["type"] == "H100"}
    assert h100["research/nlp"]["guarantee"] and not h100["research/nlp"]["limit"], h100
    assert h100["research/vision"]["guarantee"] and h100["research/vision"]["limit"], h100
    calendar = {c["type"]: c for c in report["calendar"]}
    assert set(calendar) == {n["gpu_type"] for n in nodes}, calendar.keys()  # a calendar per GPU type
    booked = calendar["H100"]
    assert booked["bookings"] == [{"name": "nlp-eval", "tenant": "research/nlp"}], booked
    assert len(booked["free"]) == 7 and min(booked["free"]) == booked["capacity"] - 8, booked
    assert all(not c["bookings"] and set(c["free"]) == {c["capacity"]} for t, c in calendar.items() if t != "H100")
    t = report["first_time"]
    assert t and t["text"] == local(t["epoch"]), t  # Kathmandu time, not UTC
    assert t["text"] != datetime.datetime.fromtimestamp(t["epoch"], datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    assert "Katmandu" in report["status"] or "Kathmandu" in report["status"], report["status"]  # ICU's old name
    return bill, report


def check_member(d):
    member = d.ok("POST", "/v1/tokens", {"name": "ana", "role": "member", "scope": "research/vision",
                                         "user": "ana"})["token"]
    report, errors = open_dashboard(d, member, "dashboard-member.png", colour_by="tenant")
    others, bill = split_bill(errors, report)
    assert not others, others
    assert report["role"] == "member" and "research/vision" in report["who"], report["who"]
    assert report["queue"] and all(r["tenant"] == "research/vision" for r in report["queue"]), report["queue"]
    assert ids(report["queue"]) == sorted(j["id"] for j in api_jobs(d, member, "pending")), report["queue"]
    assert report["preemptions"] and all(p["tenant"] == "research/vision" for p in report["preemptions"]), report
    assert {c["tenant"] for c in report["usage_charts"]} == {"research/vision"}, report["usage_charts"]
    fleet = report["fleet"]
    # the whole fleet's capacity, but no other tenant's name: their GPUs are "other tenants"
    assert fleet["gpus"] == sum(n["gpu_count"] for n in d.ok("GET", "/v1/nodes")["nodes"]), fleet
    assert set(fleet["gpu_tenants"]) == {"research/vision", "other tenants"}, fleet["gpu_tenants"]
    assert {s["tenant"] for s in fleet["mig_slices"]} == {"other tenants"}, fleet["mig_slices"]
    assert "research/nlp" not in fleet["legend"] and "product/search" not in fleet["legend"], fleet["legend"]
    assert report["calendar"] and not [c for c in report["calendar"] if c["bookings"]], report["calendar"]  # nlp's: not its own
    return bill, report


def test_admin_and_member_see_what_their_roles_may_read(d):
    agent, on_agent = demo_system(d)
    try:
        admin_bill, admin = check_admin(d, agent)
        member_bill, member = check_member(d)
    finally:
        agent.stop()
        agentproc.end_replicas([agent], [on_agent])
    # last, so that everything above is checked while GET /v1/bill is still to come (BILL_NOTE)
    assert_bill_shown(admin_bill, admin["bill"], None, True)
    assert_bill_shown(member_bill, member["bill"], ["research/vision"], False)


def admin_secrets(d):
    """What only the admin's page showed: every tenant, node and job name, the nonzero bill figures, its name."""
    secrets = {t["path"] for t in d.ok("GET", "/v1/tenants")["tenants"]}
    secrets |= {n["name"] for n in d.ok("GET", "/v1/nodes")["nodes"]}
    secrets |= {j["name"] for j in d.ok("GET", "/v1/jobs?limit=1000")["jobs"] if j.get("name")}
    bill = d.ok("GET", "/v1/bill?period=" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m"))
    for t in bill["tenants"]:
        secrets |= {x for x in (t["amount"], t["subtotal"], t["due"]) if x.strip("0.")}
        secrets |= {line[k] for line in t.get("lines") or [] for k in ("amount", "gpu_hours") if line[k].strip("0.")}
    secrets.add(d.ok("GET", "/v1/whoami")["name"])
    return secrets


def test_sign_out_forgets_everything_then_a_member_sees_its_own(d):
    d.cli("apply", "-f", gpd.TENANTS)
    for tenant, gpus, gtype, name in (("research/nlp", 8, "H100", "nlp-pretrain"), ("research/vision", 4, "H100", "vit"),
                                      ("product/search", 8, "A100", "ranker")):
        d.ok("POST", "/v1/jobs", {"tenant": tenant, "gpus": gpus, "gpu_types": [gtype], "name": name})
    d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "replicas": 8, "gpus": 8, "gpu_types": ["H100"],
                              "name": "nlp-waits", "wait_for_fleet": True})
    member = d.ok("POST", "/v1/tokens", {"name": "vera", "role": "member", "scope": "research/vision",
                                         "user": "vera"})["token"]
    out = drive_dashboard(d, d.token, "signout-1-admin.png", sign_out_png=os.path.join(SHOTS, "signout-2-empty.png"),
                          next_token=member, next_png=os.path.join(SHOTS, "signout-3-member.png"))
    admin, gone, nxt = out["report"], out["signed_out"], out["next"]
    assert out["login_page"] == {"panels_visible": [], "dash_visible": False}, out["login_page"]  # no empty frames
    assert admin["role"] == "admin" and {"research/nlp", "product/search"} <= {c["tenant"] for c in admin["usage_charts"]}
    assert admin["bill"]["fleet"] and admin["fleet"]["nodes"], admin  # the admin saw data first
    secrets = admin_secrets(d)
    assert any(re.fullmatch(r"[0-9]+\.[0-9]+", x) for x in secrets), secrets  # the bill's figures are among them
    for where in ("visible_text", "text_content", "html"):
        left = sorted(x for x in secrets if x in gone[where])
        assert not left, "after sign-out the page's %s still holds %s" % (where, left)
    assert gone["panels_visible"] == [] and not gone["dash_visible"], gone["panels_visible"]
    assert gone["login_visible"] and not gone["signout_visible"] and gone["loaded"] is None, gone
    assert gone["session_storage"] == [], gone["session_storage"]
    assert not out["errors"], out["errors"]  # nothing was sent without a token after sign-out
    # the member, signed in in the same tab: its tenant, nothing of the others'
    assert nxt["role"] == "member" and "research/vision" in nxt["who"], nxt["who"]
    assert {c["tenant"] for c in nxt["usage_charts"]} == {"research/vision"}, nxt["usage_charts"]
    assert set(nxt["fleet"]["gpu_tenants"]) == {"research/vision", "other tenants"}, nxt["fleet"]["gpu_tenants"]
    assert nxt["bill"]["tenants"] == ["research/vision"] and not nxt["bill"]["fleet"], nxt["bill"]
    others = ("research/nlp", "product/search", "product/ads", "nlp-pretrain", "nlp-waits", "ranker")
    assert not [x for x in others if x in nxt["html"]], [x for x in others if x in nxt["html"]]


def console_system(d):
    """Tenants, a sim agent's two L4 nodes, a job of research/vision and one of research/nlp on them writing a
    log line each, a waiting job of each, and a job of research/vision no block can ever hold."""
    d.cli("apply", "-f", gpd.TENANTS)
    node_file = agentproc.write_node_file(d.dir, agentproc.sim_nodes("l4-e", 2, gpus=2, gpu_type="L4", block="blk-e"))
    agent = agentproc.Agent(d, node_file, extra=["--no-cgroups"]).start()
    agent.wait_up(["l4-e-0", "l4-e-1"])
    jobs = {}
    for tenant, word in (("research/vision", "vision"), ("research/nlp", "nlp")):
        shape = {"gpus": 2} if word == "vision" else {"gpus": 1, "replicas": 2}  # nlp: a log per replica
        jobs[word] = agentproc.submit(d, tenant=tenant, gpu_types=["L4"], name="log-" + word, **shape,
                                      command="echo '<b id=injected>hello-from-%s-log</b>' from-replica-$GPUPOOL_REPLICA; %s"
                                      % (word, agentproc.STARTS_THEN_WAIT))
        jobs[word + "-waits"] = d.ok("POST", "/v1/jobs", {"tenant": tenant, "gpus": 2, "gpu_types": ["L4"],
                                                          "name": word + "-waits"})["id"]
    jobs["never"] = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "replicas": 4, "gpus": 8, "gpu_types": ["H100"],
                                              "name": "never-fits"})["id"]
    for word in ("vision", "nlp"):
        agentproc.wait_state(d, jobs[word], "running")
        gpd.wait_for(lambda: "hello-from-%s-log" % word in log_of(d, jobs[word]), what="the %s log shipped" % word)
    gpd.wait_for(lambda: "from-replica-1" in log_of(d, jobs["nlp"], 1), what="the nlp log of replica 1 shipped")
    # finished jobs for the jobs panel's state filter: one cancelled while pending
    jobs["done"] = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "replicas": 4, "gpus": 8, "gpu_types": ["H100"],
                                             "name": "cancelled-early", "wait_for_fleet": True})["id"]
    d.ok("DELETE", "/v1/jobs/%d" % jobs["done"])
    jobs["never-code"] = gpd.wait_for(lambda: blocked_code(d.ok("GET", "/v1/jobs/%d" % jobs["never"])),
                                      what="the never-fit job's reason")
    return agent, jobs


def blocked_code(job):
    """The wait code of a job that cannot run as things stand (no block holds it, or its tenant's limit)."""
    w = job.get("wait") or {}
    return w.get("code") if w.get("code") == "topology" or (w.get("code") == "limit" and w["demand"] > w["limit"]) else None


def log_of(d, job, replica=0):
    import base64
    return base64.b64decode(d.ok("GET", "/v1/jobs/%d/logs?replica=%d" % (job, replica))["data"]).decode(errors="replace")


def test_jobs_panel_detail_logs_csv_and_actions(d):
    agent, jobs = console_system(d)
    try:
        check_console_admin(d, jobs)
        check_console_member(d, jobs)
    finally:
        agent.stop()
        agentproc.end_replicas([agent], [jobs["vision"], jobs["nlp"]])


def check_console_admin(d, jobs):
    # a deep link reloaded: the job's detail with its log; every live job listed, the never-fit one flagged
    out = drive_dashboard(d, d.token, "console-admin-job.png", hash="#/jobs/%d" % jobs["nlp"])
    report = out["report"]
    assert not [e for e in out["errors"] if "/v1/bill" not in e["url"]], out["errors"]
    assert ids(report["jobs"]) == sorted(j["id"] for j in api_jobs(d, d.token, "live")), report["jobs"]
    blocked = [r for r in report["jobs"] if r["blocked"]]
    assert [(r["job"], r["blocked"]) for r in blocked] == [(jobs["never"], jobs["never-code"])], report["jobs"]
    assert "1 blocked" in report["jobs_summary"], report["jobs_summary"]
    detail = report["job_detail"]
    assert detail["visible"] and detail["title"].startswith("%d · log-nlp" % jobs["nlp"]), detail
    assert "hello-from-nlp-log" in detail["log"] and detail["placement"] and detail["cancel_button"], detail
    # the log of every replica, each its own (issue 32: not only replica 0's)
    assert [l["replica"] for l in detail["logs"]] == [0, 1], detail["logs"]
    assert all("from-replica-%d" % l["replica"] in l["text"] for l in detail["logs"]), detail["logs"]
    assert "<b id=injected>" in detail["log"] and not report["injected"], detail["log"]  # a log is text, never markup
    assert "History" in detail["text"] and "submitted to research/nlp" in detail["text"], detail["text"]
    # filters and the CSV of what they show
    csv_dir = os.path.join(d.dir, "csv-admin")
    os.makedirs(csv_dir)
    out = drive_dashboard(d, d.token, "console-admin-blocked.png", jobs_filter=json.dumps({"state": "blocked"}),
                          csv_dir=csv_dir)
    assert ids(out["report"]["jobs"]) == [jobs["never"]], out["report"]["jobs"]
    lines = out["csv"].strip().split("\r\n")
    assert lines[0].startswith("job,tenant,user,name,state,GPUs,") and len(lines) == 2, lines
    assert lines[1].startswith("%d,research/vision," % jobs["never"]) and "never-fits" in lines[1], lines
    # finished jobs: the state filter loads them from the API (the live list has none)
    out = drive_dashboard(d, d.token, "console-admin-finished.png", jobs_filter=json.dumps({"state": "finished"}))
    finished = sorted(j["id"] for s in ("succeeded", "failed", "cancelled") for j in api_jobs(d, d.token, s))
    assert jobs["done"] in finished and ids(out["report"]["jobs"]) == finished, (out["report"]["jobs"], finished)
    assert {r["state"] for r in out["report"]["jobs"]} <= {"succeeded", "failed", "cancelled"}, out["report"]["jobs"]
    assert "finished jobs shown" in out["report"]["jobs_summary"], out["report"]["jobs_summary"]
    out = drive_dashboard(d, d.token, "console-admin-filter-7d.png",
                          jobs_filter=json.dumps({"tenant": "research", "text": "waits"}), range="7d")
    charts = out["report"]["usage_charts"]
    assert out["report"]["usage_title"] == "last 7 days" and charts, out["report"]["usage_title"]
    # 28 buckets of 6 hours, whole ones (UTC), the last holding now: the 7 days before it
    assert {(c["buckets"], c["span"]) for c in charts} == {(28, 21600)}, charts
    # rolled up: one chart per tenant (its types in it), children under their parent; a parent sums its subtree
    tree = {t["tenant"]: t for t in out["report"]["usage_tree"]}
    assert out["report"]["usage_chart_count"] == len(tree) and all(t["charts"] == 1 for t in tree.values()), tree
    assert {p for p, t in tree.items() if t["parent"] is None} == {"research", "product"}, tree
    assert tree["research/nlp"]["parent"] == "research" and tree["product/search"]["parent"] == "product", tree
    l4 = {c["tenant"]: c["now"] for c in charts if c["type"] == "L4"}
    assert l4["research"] == l4["research/nlp"] + l4["research/vision"] == 4, l4
    assert all(c["from"] % 21600 == 0 and time.time() - 7 * 86400 - 21600 < c["from"] <= time.time() - 7 * 86400 + 21600
               for c in charts), charts
    want = sorted(j["id"] for j in api_jobs(d, d.token, "live") if "waits" in j["name"])
    assert want and ids(out["report"]["jobs"]) == want, (out["report"]["jobs"], want)
    # a tenant's link: its chart unfolded and marked, the jobs of its subtree only
    out = drive_dashboard(d, d.token, "console-admin-tenant.png", hash="#/tenants/research/nlp")
    report = out["report"]
    assert report["usage_focus"] == [{"tenant": "research/nlp", "unfolded": True}], report["usage_focus"]
    nlp = sorted(j["id"] for j in api_jobs(d, d.token, "live") if j["tenant"] == "research/nlp")
    assert report["jobs_tenant_filter"] == "research/nlp" and ids(report["jobs"]) == nlp, report["jobs"]
    # a node's view: its GPUs' SM activity from the agent's telemetry, its jobs, Drain (which asks for a reason,
    # then keeps it on the node with who and when)
    def placed_on_node():
        return sorted(j["id"] for j in api_jobs(d, d.token, "live")
                      if any(p["node"] == "l4-e-0" for p in j.get("placement") or []))
    before = gpd.wait_for(placed_on_node, what="a job placed on l4-e-0")  # placement may lag on a loaded host
    out = drive_dashboard(d, d.token, "console-admin-node.png", node="l4-e-0", drain=1, drain_reason="PSU swap")
    node = out["report"]["node_detail"]
    assert out["drain_asked"] == "give a reason first", out.get("drain_asked")
    assert node["visible"] and node["title"] == "l4-e-0" and node["action_status"] == "draining", node
    assert node["drain_button"] == "Undrain" and len(node["sm_active"]) == 2, node
    drain = d.ok("GET", "/v1/nodes/l4-e-0")["drain"]
    assert drain["reason"] == "PSU swap" and drain["kind"] == "operator", drain
    assert "PSU swap (by %s since %s)" % (drain["by"], local(drain["since"])) in node["text"], node["text"]
    assert all(re.fullmatch(r"[0-9]+ %", x) for x in node["sm_active"]), node["sm_active"]
    after = placed_on_node()
    assert node["jobs"] in (before, after) and node["jobs"], (node["jobs"], before, after)
    assert d.ok("GET", "/v1/nodes/l4-e-0")["draining"], "the Drain button did not drain"
    d.ok("POST", "/v1/nodes/l4-e-0/drain", {"drain": False})


def check_console_member(d, jobs):
    member = d.ok("POST", "/v1/tokens", {"name": "mia", "role": "member", "scope": "research/vision",
                                         "user": "mia"})["token"]
    # its own tenant's jobs only, running and pending; another tenant's job is not in the page at all
    out = drive_dashboard(d, member, "console-member-job.png", hash="#/jobs/%d" % jobs["vision"])
    report = out["report"]
    assert not [e for e in out["errors"] if "/v1/bill" not in e["url"]], out["errors"]
    mine = sorted(j["id"] for j in api_jobs(d, member, "live"))
    assert ids(report["jobs"]) == mine and {jobs["vision"], jobs["never"]} <= set(mine), report
    assert {r["tenant"] for r in report["jobs"]} == {"research/vision"}, report["jobs"]
    assert jobs["nlp"] not in ids(report["jobs"]) and jobs["nlp-waits"] not in ids(report["jobs"]), report["jobs"]
    out_html = drive_dashboard(d, member, "console-member-list.png", next_token=member,
                               sign_out_png=os.path.join(SHOTS, "console-member-signout.png"),
                               next_png=os.path.join(SHOTS, "console-member-again.png"))["next"]["html"]
    for secret in ("log-nlp", "nlp-waits", "hello-from-nlp-log"):
        assert secret not in out_html, "a member's page holds %s" % secret
    detail = report["job_detail"]
    assert "hello-from-vision-log" in detail["log"] and detail["cancel_button"], detail
    # another tenant's job by its link: the API's 404, nothing of it
    out = drive_dashboard(d, member, "console-member-other.png", hash="#/jobs/%d" % jobs["nlp"])
    detail = out["report"]["job_detail"]
    assert detail["failed"] and "404" in detail["failed"] and "hello-from-nlp-log" not in detail["text"], detail
    assert "log-nlp" not in detail["text"], detail
    # a node's view: no Drain button for a member; the SM activity of research/nlp's GPUs is not shown to it
    nlp_node = d.ok("GET", "/v1/jobs/%d" % jobs["nlp"])["placement"][0]["node"]
    out = drive_dashboard(d, member, "console-member-node.png", node=nlp_node)
    node = out["report"]["node_detail"]
    assert node["visible"] and node["drain_button"] is None and node["jobs"] == [], node
    assert node["sm_active"] == ["", ""] and "log-nlp" not in node["text"], node
    # Cancel: the API's refusals are shown: another user's job (403: a member cancels only its own jobs
    # unless its tenant says `cancel: tenant`), then its own job cancelled meanwhile (409); then a real cancel
    others = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "replicas": 4, "gpus": 8, "gpu_types": ["H100"],
                                       "name": "someone-elses", "wait_for_fleet": True})["id"]
    out = drive_dashboard(d, member, "console-member-cancel-forbidden.png", hash="#/jobs/%d" % others, cancel=1)
    status = out["report"]["job_detail"]["action_status"]
    assert status.startswith("refused: 403"), status
    gone = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "replicas": 4, "gpus": 8, "gpu_types": ["H100"],
                                     "name": "cancelled-meanwhile", "wait_for_fleet": True}, token=member)["id"]
    out = drive_dashboard(d, member, "console-member-cancel-refused.png", hash="#/jobs/%d" % gone,
                          cancel=1, cancel_first="/v1/jobs/%d" % gone)
    status = out["report"]["job_detail"]["action_status"]
    assert status.startswith("refused: 409"), status
    own = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "replicas": 4, "gpus": 8, "gpu_types": ["H100"],
                                    "name": "mias-own", "wait_for_fleet": True}, token=member)["id"]
    out = drive_dashboard(d, member, "console-member-cancel.png", hash="#/jobs/%d" % own, cancel=1)
    assert out["report"]["job_detail"]["action_status"] == "cancel requested", out["report"]["job_detail"]
    assert d.ok("GET", "/v1/jobs/%d" % own)["state"] == "cancelled"
    auditor = d.ok("POST", "/v1/tokens", {"name": "audra", "role": "auditor"})["token"]
    out = drive_dashboard(d, auditor, "console-auditor-job.png", hash="#/jobs/%d" % jobs["vision"])
    assert not out["report"]["job_detail"]["cancel_button"], out["report"]["job_detail"]


def big_fleet_file(directory, nodes=6250, per_block=32):
    """Blocks of 32 H100 nodes; the last, smaller block holds the A100 and L40S the tenants guarantee."""
    entries = []
    for b in range((nodes + per_block - 1) // per_block):
        count = min(per_block, nodes - b * per_block)
        shape = {"block": "blk-%d" % b, "zone": "z1", "gpus": 8, "gpu_mem_mib": 81920, "cpu_millis": 192000,
                 "mem_mib": 2097152}
        if count == per_block:
            entries.append(dict(shape, name="n%03d" % b, count=count, gpu_type="H100"))
        else:
            entries.append(dict(shape, name="a%03d" % b, count=count // 2, gpu_type="A100"))
            entries.append(dict(shape, name="l%03d" % b, count=count - count // 2, gpu_type="L40S"))
    path = os.path.join(directory, "fleet-6250.json")
    with open(path, "w") as f:
        json.dump({"pools": [{"name": "default", "score": "default"}], "nodes": entries}, f)
    return path, len({e["block"] for e in entries})


def test_a_6250_node_fleet_is_drawn_per_block_and_zooms_into_one(d):
    path, blocks = big_fleet_file(d.dir)
    big = gpd.Daemon(fleet=path)  # a fleet of its own: d's nodes would stay known, lost
    try:
        big.start(timeout=120)
        check_big_fleet(big, blocks)
        big.stop()
    finally:
        big.cleanup()


def check_big_fleet(d, blocks):
    d.cli("apply", "-f", gpd.TENANTS)
    for _ in range(3):
        d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "replicas": 2, "gpus": 8, "gpu_types": ["H100"]})
    report, errors = open_dashboard(d, d.token, "dashboard-6250-blocks.png")
    others, _ = split_bill(errors, report)
    assert not others, others
    fleet = report["fleet"]
    assert len(fleet["tiles"]) == blocks == 196 and fleet["nodes"] == [] and fleet["gpus"] == 0, \
        {k: (v if not isinstance(v, list) else len(v)) for k, v in fleet.items()}
    assert fleet["summary"].startswith("6250 nodes in 196 blocks") and "H100: 48 of 49920 in use" in fleet["summary"], \
        fleet["summary"]
    report, errors = open_dashboard(d, d.token, "dashboard-6250-block.png", open_block="blk-7")
    others, _ = split_bill(errors, report)
    assert not others, others
    fleet = report["fleet"]
    assert fleet["blocks_shown"] == ["blk-7"] and len(fleet["nodes"]) == 32 and fleet["gpus"] == 256, fleet["nodes"]
    assert fleet["nodes"][0].startswith("n007-"), fleet["nodes"][:3]


def main():
    missing = [what for what, ok in (("chromium", os.access(CHROMIUM, os.X_OK)), ("node", shutil.which("node")),
                                     ("node-ws", os.path.isdir(NODE_WS))) if not ok]
    if missing:
        print("skip: %s not installed (Debian packages chromium, nodejs, node-ws)" % ", ".join(missing))
        sys.exit(77)
    os.makedirs(SHOTS, exist_ok=True)
    gpd.run([test_admin_and_member_see_what_their_roles_may_read,
             test_sign_out_forgets_everything_then_a_member_sees_its_own,
             test_jobs_panel_detail_logs_csv_and_actions,
             test_a_6250_node_fleet_is_drawn_per_block_and_zooms_into_one],
            fleet=os.path.join(gpd.ROOT, "examples", "fleet-mixed.yaml"))


if __name__ == "__main__":
    main()

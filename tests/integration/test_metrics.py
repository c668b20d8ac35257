#!/usr/bin/env python3
"""gpupoold's GET /metrics against a real daemon (docs/metrics.md).

Behaviours under test:
  - the scrape passes `promtool check metrics` (Debian's prometheus
    package; skipped, saying so, where promtool is absent) and says what
    the fleet, the tenants and the queue hold: GPUs per model, sharing mode
    and health, GPUs allocated, each tenant's usage, guarantee and limit,
    pending jobs and the oldest wait, nodes up;
  - API requests are counted by route pattern ("/v1/jobs/{id}"), never by
    raw path, with method and status; histograms of pass and commit time;
  - tenant labels are bounded: with --metrics-tenants 2 only the two
    tenants using or guaranteed the most GPUs are named, the queue of the
    rest is tenant="other";
  - a member token is refused (403); --metrics-open serves it without one;
  - an agent node's heartbeat age is there, labelled with its node;
  - a reclaim counts gpupool_preemptions_total{reason="reclaim"}.
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

PROMTOOL = shutil.which("promtool")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')


def scrape(d, token=None):
    status, text = d.call("GET", "/metrics", token=token)
    assert status == 200, text
    return text


def samples(text):
    """{'name{labels}': value} of every sample line."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def promtool_check(text):
    if not PROMTOOL:
        print("skip promtool check: promtool not installed (Debian package prometheus)")
        return
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), p.stdout + p.stderr


def submit(d, tenant, gpus, replicas=1, gpu_type="H100", token=None):
    body = {"tenant": tenant, "replicas": replicas, "gpus": gpus, "gpu_types": [gpu_type],
            "command": ["python3", "train.py"], "checkpoint_grace_s": 0}
    return d.ok("POST", "/v1/jobs", body, token=token)["id"]


def state(d, job_id):
    return d.ok("GET", "/v1/jobs/%d" % job_id)["state"]


def test_a_scrape_passes_promtool_and_tells_the_fleet_tenants_and_queue(d):
    d.cli("apply", "-f", gpd.TENANTS)
    running = submit(d, "research/nlp", gpus=8, replicas=4)  # all 32 H100
    gpd.wait_for(lambda: state(d, running) == "running", what="the big job running")
    d.ok("PUT", "/v1/tenants/web", {})
    waiting = submit(d, "web", gpus=8)  # no guarantee: it waits, reclaiming nothing
    d.ok("GET", "/v1/jobs/%d" % waiting)
    time.sleep(1.2)  # the waiting job's wait passes a second of engine time
    text = scrape(d)
    promtool_check(text)
    s = samples(text)
    assert s['gpupool_gpus{gpu_model="H100",sharing="exclusive",health="healthy"}'] == 32
    assert s['gpupool_gpus{gpu_model="A100",sharing="exclusive",health="healthy"}'] == 8
    assert s['gpupool_gpus_allocated{gpu_model="H100",sharing="exclusive"}'] == 32
    assert s['gpupool_gpus_allocated{gpu_model="A100",sharing="exclusive"}'] == 0
    assert s['gpupool_nodes{state="up"}'] == 6 and s['gpupool_nodes{state="lost"}'] == 0
    assert s['gpupool_tenant_usage_gpus{tenant="research/nlp",gpu_model="H100"}'] == 32
    assert s['gpupool_tenant_usage_gpus{tenant="research",gpu_model="H100"}'] == 32  # the subtree
    assert s['gpupool_tenant_guarantee_gpus{tenant="research/nlp",gpu_model="H100"}'] == 16
    assert s['gpupool_tenant_limit_gpus{tenant="research/vision",gpu_model="H100"}'] == 24
    assert not any(k.startswith("gpupool_tenant_limit_gpus{tenant=\"research/nlp\"") for k in s)  # unlimited
    assert s['gpupool_tenant_pending_jobs{tenant="web"}'] == 1
    assert s['gpupool_tenant_running_jobs{tenant="research/nlp"}'] == 1
    assert s['gpupool_tenant_oldest_pending_seconds{tenant="web"}'] >= 1
    assert 'gpupool_tenant_oldest_pending_seconds{tenant="research/nlp"}' not in s  # nothing waits
    assert s['gpupool_jobs{state="pending"}'] == 1
    # routes are patterns, with method and status
    assert s['gpupool_http_requests_total{route="/v1/jobs/{id}",method="GET",code="200"}'] >= 2
    assert s['gpupool_http_requests_total{route="/v1/jobs",method="POST",code="201"}'] == 2
    assert not any('route="/v1/jobs/%d"' % running in k for k in s)
    assert s['gpupool_http_request_duration_seconds_count{route="/v1/jobs/{id}",method="GET",code="200"}'] >= 2
    assert s['gpupool_scheduling_pass_duration_seconds_count'] >= 1
    assert s['gpupool_scheduling_pass_duration_seconds_bucket{le="+Inf"}'] == \
        s['gpupool_scheduling_pass_duration_seconds_count']
    assert s['gpupool_store_commit_duration_seconds_count'] >= 1
    d.call("GET", "/v1/nope")
    s = samples(scrape(d))
    assert s['gpupool_http_requests_total{route="unknown",method="GET",code="404"}'] == 1


def test_tenant_labels_are_the_top_n_and_the_rest_is_other(d):
    d.stop()
    d.extra = ["--metrics-tenants", "2"]
    d.start()
    d.cli("apply", "-f", gpd.TENANTS)
    d.ok("PUT", "/v1/tenants/web", {})
    big = submit(d, "research/nlp", gpus=8, replicas=4)
    gpd.wait_for(lambda: state(d, big) == "running", what="the big job running")
    submit(d, "web", gpus=8)
    submit(d, "web", gpus=8)
    s = samples(scrape(d))
    named = {re.search(r'tenant="([^"]*)"', k).group(1) for k in s if k.startswith("gpupool_tenant_")}
    # research and research/nlp hold 32 H100; product's guarantee is 20 GPUs, product/search 16
    assert named == {"research", "research/nlp", "other"}, named
    assert s['gpupool_tenant_pending_jobs{tenant="other"}'] == 2
    assert 'gpupool_tenant_usage_gpus{tenant="other",gpu_model="H100"}' not in s  # subtrees are not summed


def test_a_member_is_refused_and_metrics_open_needs_no_token(d):
    d.cli("apply", "-f", gpd.TENANTS)
    member = d.cli("token", "create", "--name", "m", "--role", "member", "--scope", "research/nlp", "--user",
                   "alice", json_out=True)["token"]
    status, out = d.call("GET", "/metrics", token=member)
    assert status == 403, out
    status, out = d.call("GET", "/metrics", token="")
    assert status == 401, out
    d.stop()
    d.extra = ["--metrics-open"]
    d.start()
    status, text = d.call("GET", "/metrics", token="")
    assert status == 200 and "gpupool_gpus{" in text, text
    status, out = d.call("GET", "/metrics?x=1", token="")
    assert status == 400 and out["error"]["field"] == "x", out


def join_token(d):
    return d.cli("token", "create", "--name", "rack1", "--role", "join", "--nodes", "*", "--ttl", "1h",
                 json_out=True)["token"]


def test_an_agent_nodes_heartbeat_age_is_labelled_with_its_node(d):
    inventory = {"name": "t4-1", "gpu_type": "T4", "gpu_count": 2, "zone": "z1", "block": "blk-t",
                 "gpu_uuids": ["GPU-t4-1-0", "GPU-t4-1-1"], "gpu_mem_mib": 16384, "cpu_millis": 32000,
                 "mem_mib": 131072}
    node = d.ok("POST", "/v1/agents:register", {"node": inventory}, token=join_token(d))["token"]
    d.ok("POST", "/v1/agents/t4-1/heartbeat", {"running": [], "gpus": []}, token=node)
    text = scrape(d)
    promtool_check(text)
    s = samples(text)
    age = s['gpupool_agent_heartbeat_age_seconds{node="t4-1"}']
    assert 0 <= age < 30, age
    assert s['gpupool_gpus{gpu_model="T4",sharing="exclusive",health="healthy"}'] == 2
    assert not any('node="h100-a-0"' in k for k in s)  # fleet nodes have no agent


def test_a_reclaim_counts_a_preemption_by_reason(d):
    d.cli("apply", "-f", gpd.TENANTS)
    burst = submit(d, "research/vision", gpus=8, replicas=3)  # 24 H100: 16 above its floor of 8
    gpd.wait_for(lambda: state(d, burst) == "running", what="the burst job running")
    before = samples(scrape(d))['gpupool_preemptions_total{reason="reclaim"}']
    claim = submit(d, "research/nlp", gpus=8, replicas=2)  # 16 H100: its floor, 8 of them held by vision
    gpd.wait_for(lambda: samples(scrape(d))['gpupool_preemptions_total{reason="reclaim"}'] > before,
                 what="a reclaim counted")
    assert state(d, claim) in ("pending", "admitted", "running")


if __name__ == "__main__":
    gpd.run([test_a_scrape_passes_promtool_and_tells_the_fleet_tenants_and_queue,
             test_tenant_labels_are_the_top_n_and_the_rest_is_other,
             test_a_member_is_refused_and_metrics_open_needs_no_token,
             test_an_agent_nodes_heartbeat_age_is_labelled_with_its_node,
             test_a_reclaim_counts_a_preemption_by_reason])

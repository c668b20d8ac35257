#!/usr/bin/env python3
"""A real Prometheus scrapes a real gpupoold; the shipped rules and dashboard.

Behaviours under test:
  - Prometheus (Debian's prometheus package) on loopback, with a generated
    config (scrape every second, the token from a credentials_file, the
    shipped alert rules loaded), scrapes gpupoold at least twice, and a
    metric comes back through its HTTP query API with the fleet's value;
    the rules load there (GET /api/v1/rules);
  - `promtool check rules` accepts examples/prometheus/alerts.yml;
  - `promtool test rules tests/prometheus/alerts_test.yml` passes: every
    rule, old and new, fires on series of its own and stays quiet beside;
    and every alert of alerts.yml has a case there;
  - examples/grafana/gpupool.json is a dashboard whose every query names
    only metrics gpupoold or the agent serve (docs/metrics.md).
Without promtool/prometheus the checks that need them are skipped, saying so.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

PROMETHEUS, PROMTOOL = shutil.which("prometheus"), shutil.which("promtool")
RULES = os.path.join(gpd.ROOT, "examples", "prometheus", "alerts.yml")
RULE_TESTS = os.path.join(gpd.ROOT, "tests", "prometheus", "alerts_test.yml")
DASHBOARD = os.path.join(gpd.ROOT, "examples", "grafana", "gpupool.json")
METRICS_DOC = os.path.join(gpd.ROOT, "docs", "metrics.md")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port, expr):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": expr}))
    with urllib.request.urlopen(url, timeout=10) as resp:
        out = json.load(resp)
    assert out["status"] == "success", out
    return out["data"]["result"]


def test_prometheus_scrapes_gpupoold_twice_and_answers_a_query(d):
    if not PROMETHEUS:
        print("skip: prometheus not installed (Debian package prometheus)")
        return
    work = tempfile.mkdtemp(prefix="gpupool-prom-")
    token_file = os.path.join(work, "token")
    with open(token_file, "w") as f:
        f.write(d.token)
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "rule_files:\n  - %s\n"
                "scrape_configs:\n  - job_name: gpupoold\n    authorization:\n      credentials_file: %s\n"
                "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % (RULES, token_file, d.port))
    port = free_port()
    log = open(os.path.join(work, "prometheus.log"), "wb")
    prom = subprocess.Popen([PROMETHEUS, "--config.file", config, "--storage.tsdb.path", os.path.join(work, "data"),
                             "--web.listen-address", "127.0.0.1:%d" % port], stdout=log, stderr=log)
    try:
        def scraped_twice():
            try:
                r = query(port, 'count_over_time(gpupool_gpus{gpu_model="H100",health="healthy"}[1m])')
            except OSError:
                return None
            return r if r and float(r[0]["value"][1]) >= 2 else None
        gpd.wait_for(scraped_twice, timeout=60, what="two scrapes of gpupoold")
        [sample] = query(port, 'gpupool_gpus{gpu_model="H100",sharing="exclusive",health="healthy"}')
        assert sample["metric"]["job"] == "gpupoold" and float(sample["value"][1]) == 32, sample
        [up] = query(port, 'up{job="gpupoold"}')
        assert float(up["value"][1]) == 1, up
        with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/rules" % port, timeout=10) as resp:
            rules = json.load(resp)["data"]["groups"]
        names = {r["name"] for g in rules for r in g["rules"]}
        assert {"GpupoolGPUUnhealthy", "GpupoolNodeLost", "GpupoolGuaranteedTenantWaiting",
                "GpupoolLedgerVerifyFailed"} <= names, names
    finally:
        prom.terminate()
        prom.wait(timeout=30)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


def test_promtool_accepts_the_alert_rules(d):
    if not PROMTOOL:
        print("skip: promtool not installed (Debian package prometheus)")
        return
    p = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "SUCCESS" in p.stdout, p.stdout + p.stderr


def test_promtool_tests_every_alert_rule(d):
    with open(RULES) as f:
        alerts = set(re.findall(r'^\s*- alert: (\w+)', f.read(), re.M))
    with open(RULE_TESTS) as f:
        tested = set(re.findall(r'^\s*alertname: (\w+)', f.read(), re.M))
    assert len(alerts) >= 12 and alerts == tested, (alerts - tested, tested - alerts)
    if not PROMTOOL:
        print("skip: promtool not installed (Debian package prometheus)")
        return
    p = subprocess.run([PROMTOOL, "test", "rules", RULE_TESTS], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "SUCCESS" in p.stdout, p.stdout + p.stderr


def documented_metrics():
    """Every metric name docs/metrics.md lists in its tables (`name` in the first column)."""
    with open(METRICS_DOC) as f:
        return set(re.findall(r'^\| `([A-Za-z_:][A-Za-z0-9_:]*)`', f.read(), re.M))


def test_the_grafana_dashboard_queries_only_served_metrics(d):
    with open(DASHBOARD) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 6, exprs
    known = documented_metrics()
    text = d.call("GET", "/metrics")[1]
    served = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    assert served <= known, served - known  # the doc lists everything gpupoold serves
    for e in exprs:
        names = {n for n in re.findall(r'\b(gpupool_[a-z_]+|DCGM_FI_[A-Z_]+)\b', e)}
        names = {re.sub(r'_(bucket|sum|count)$', '', n) for n in names}
        assert names and names <= known, (e, names - known)


if __name__ == "__main__":
    gpd.run([test_prometheus_scrapes_gpupoold_twice_and_answers_a_query,
             test_promtool_accepts_the_alert_rules,
             test_promtool_tests_every_alert_rule,
             test_the_grafana_dashboard_queries_only_served_metrics])

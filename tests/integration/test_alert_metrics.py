#!/usr/bin/env python3
"""The metrics the security alerts read (examples/prometheus/alerts.yml),
from a real gpupoold.

Behaviours under test:
  - failed sign-ins show up by address and by user: unknown tokens, a
    Basic password and an expired token from 127.0.0.1 count for that
    address, the expired one (alice's) for alice; a request with no
    Authorization at all is not a failed sign-in; the scrape passes
    `promtool check metrics`;
  - a crash-looping job shows up: an inference job whose replica fails is
    gpupool_job_restarts_total{job_id, tenant, cause="failure"} 1, and a
    job never sent back has no series;
  - the baseline from seeded usage: usage intervals written into the store
    1-5 weeks back give gpupool_tenant_gpu_baseline{tenant, stat="mean|p90"}
    and _weeks as docs/metrics.md says (a subtree counts for its parent,
    weeks before a tenant's first use do not count, a tenant without usage
    has no baseline).
"""
import os
import sqlite3
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from test_agent_api import FakeAgent, exited, job, join_token, mine, submit  # noqa: E402
from test_metrics import promtool_check, samples, scrape  # noqa: E402

WEEK = 7 * 24 * 3600


def test_failed_sign_ins_show_up_by_address_and_by_user(d):
    d.ok("PUT", "/v1/tenants/t", {})
    alice = d.cli("token", "create", "--name", "alice-laptop", "--role", "member", "--scope", "t", "--user",
                  "alice", "--ttl", "1s", json_out=True)["token"]
    for bad in ("gpt_" + "0" * 64, "gpt_" + "f" * 64, "not-even-a-token"):
        assert d.call("GET", "/v1/jobs", token=bad)[0] == 401
    try:  # no Authorization at all: nothing was guessed
        urllib.request.urlopen(d.url + "/v1/jobs", timeout=10)
        raise AssertionError("no token, yet answered")
    except urllib.error.HTTPError as e:
        assert e.code == 401, e.code
    basic = d.call("GET", "/v1/jobs", token="", headers={"Authorization": "Basic YWxpY2U6aHVudGVyMg=="})
    assert basic[0] == 401, basic  # a password tried is a failed sign-in too
    time.sleep(2.1)  # alice's token lives 1 s
    assert d.call("GET", "/v1/jobs", token=alice)[0] == 401
    text = scrape(d)
    promtool_check(text)
    s = samples(text)
    assert s['gpupool_signin_failures_by_address{address="127.0.0.1"}'] == 5, text
    assert s['gpupool_signin_failures_by_user{user="alice"}'] == 1, text
    assert s["gpupool_signin_failures_total"] == 5, text


def test_a_crash_looping_job_shows_its_restarts(d):
    d.ok("PUT", "/v1/tenants/t", {})
    node = FakeAgent(d, "t4-1", join=join_token(d))
    looping = submit(d, kind="inference", max_restarts=3)
    steady = submit(d)
    gpd.wait_for(lambda: job(d, looping)["state"] == "running" and job(d, steady)["state"] == "running",
                 what="both running")
    [a] = mine(node.poll(), looping)
    node.report(exited(a, code=1))
    assert job(d, looping)["state"] == "pending"
    s = samples(scrape(d))
    key = 'gpupool_job_restarts_total{job_id="%d",tenant="t",cause="%s"}'
    assert s[key % (looping, "failure")] == 1 and s[key % (looping, "requeue")] == 0, s
    assert not [k for k in s if 'job_id="%d"' % steady in k], s


def seed_usage(path, rows):
    """Closed usage intervals (tenant, start, end, milli_gpus) straight into the store."""
    with sqlite3.connect(path) as c:
        for i, (tenant, start, end, milli) in enumerate(rows):
            c.execute("INSERT INTO usage(interval_id, job_id, tenant, gpu_type, milli_gpus, class, topology, start,"
                      " end_time) VALUES (?, ?, ?, 'H100', ?, 'guaranteed', 'any', ?, ?)",
                      (10**12 + i, 10**9 + i, tenant, milli, start, end))


def baseline_of(s, tenant):
    mean = s.get('gpupool_tenant_gpu_baseline{tenant="%s",stat="mean"}' % tenant)
    p90 = s.get('gpupool_tenant_gpu_baseline{tenant="%s",stat="p90"}' % tenant)
    return mean, p90, s['gpupool_tenant_gpu_baseline_history{tenant="%s"}' % tenant]


def test_the_baseline_comes_from_seeded_usage(d):
    for t in ("ml", "ml/nlp", "web", "idle"):
        d.ok("PUT", "/v1/tenants/" + t, {})
    d.stop()
    hour = int(time.time()) // 3600 * 3600
    rows = [("ml/nlp", hour - 5 * WEEK - 7200, hour - 5 * WEEK - 3600, 2000)]  # its first use: 5 weeks back
    rows += [("ml/nlp", hour - w * WEEK, hour - w * WEEK + 3600, 8000) for w in (1, 2, 3)]  # 8 GPUs, not week 4
    rows += [("web", hour - WEEK - 1800, hour - WEEK + 1200, 6000)]  # first use: 30 min before last week's hour
    seed_usage(os.path.join(d.dir, "gpupool.db"), rows)
    d.start()
    s = samples(scrape(d))
    if int(time.time()) // 3600 * 3600 != hour:  # the hour turned meanwhile: the seeded weeks are another hour's
        print("note: the hour turned during the test; not compared")
        return
    # 18 slices of 8 and 6 of 0: mean 6, the 22nd of 24 sorted is 8; ml counts its subtree
    assert baseline_of(s, "ml/nlp") == (6, 8, 4), baseline_of(s, "ml/nlp")
    assert baseline_of(s, "ml") == (6, 8, 4), baseline_of(s, "ml")
    # one week of history: 6 GPUs in two slices of six
    assert baseline_of(s, "web") == (2, 6, 1), baseline_of(s, "web")
    assert baseline_of(s, "idle") == (None, None, 0), baseline_of(s, "idle")


if __name__ == "__main__":
    gpd.run([test_failed_sign_ins_show_up_by_address_and_by_user,
             test_a_crash_looping_job_shows_its_restarts,
             test_the_baseline_comes_from_seeded_usage])

"""Refused requests in the hash-chained audit log (issue 29, finding 6;
src/server/refusals.c), as docs/api.md "Audit" promises:

  - a 403 (a member calling an admin endpoint) and a 401 (an unknown token)
    are rows `request.refused` in `gpupool audit`: who (the token id, "-"
    when unknown), the method and path, the status and reason, the remote
    address; the chain still verifies;
  - a flood of 5,000 bad requests adds a bounded number of rows: 10 (the
    default --audit-refusals-per-min) and one that counts the rest;
  - --audit-refusals-per-min 0 audits none.
"""
import http.client
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

BAD = "gpt_" + "1" * 64  # well formed, no such token


def refusals(d):
    return [r for r in d.ok("GET", "/v1/audit?limit=1000")["audit"] if r["action"] == "request.refused"]


def test_a_403_and_a_401_are_in_gpupool_audit(d):
    d.cli("apply", "-f", gpd.TENANTS)
    member = d.ok("POST", "/v1/tokens", {"name": "m", "role": "member", "scope": "research/nlp", "user": "alice"})
    assert d.call("GET", "/v1/audit", token=member["token"])[0] == 403
    assert d.call("GET", "/v1/jobs?state=live", token=BAD)[0] == 401
    gpd.wait_for(lambda: len(refusals(d)) >= 2, what="the refusals' rows")
    rows = d.cli("audit", "--limit", "1000", json_out=True)["audit"]
    forbidden = [r for r in rows if r["action"] == "request.refused" and r["actor"] == member["id"]]
    assert len(forbidden) == 1, rows
    f = forbidden[0]
    assert f["role"] == "member" and f["target"] == "GET /v1/audit", f
    assert f["result"].startswith("403 forbidden: ") and f["result"].endswith("; from 127.0.0.1"), f
    unknown = [r for r in rows if r["action"] == "request.refused" and r["actor"] == "-"]
    assert len(unknown) == 1 and unknown[0]["target"] == "GET /v1/jobs?state=live", rows
    assert unknown[0]["result"].startswith("401 unauthorized: unknown or revoked token"), unknown
    table = d.cli("audit", "--limit", "1000").stdout
    assert "request.refused" in table and member["id"] in table, table
    assert d.ok("GET", "/v1/audit/verify")["ok"]


def flood(d, n):
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    for _ in range(n):
        conn.request("GET", "/v1/jobs", headers={"Authorization": "Bearer " + BAD})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 401, resp.status
    conn.close()


def counted(rows):
    """(rows, refusals they stand for): a row is one, a summary row N."""
    total = 0
    for r in rows:
        m = re.search(r": (\d+) more refusals suppressed", r["result"])
        total += int(m.group(1)) if m else 1
    return len(rows), total


def test_a_flood_of_bad_tokens_adds_a_bounded_number_of_rows(d):
    """5,000 bad tokens from one address: 10 rows a minute, then one that
    counts the rest (written when the minute ends or gpupoold stops)."""
    flood(d, 5000)
    gpd.wait_for(lambda: len(refusals(d)) >= 10, what="the first rows")
    time.sleep(0.5)  # a few batches more: nothing else may come
    assert len(refusals(d)) <= 20, len(refusals(d))  # 10 a minute (the flood may straddle two)
    d.stop()
    d.start()
    n_rows, total = counted(refusals(d))
    assert total == 5000 and n_rows <= 22, (n_rows, total, refusals(d))
    assert any("more refusals suppressed; from 127.0.0.1" in r["result"] for r in refusals(d)), refusals(d)
    assert d.ok("GET", "/v1/audit/verify")["ok"]


def test_zero_per_minute_audits_no_refusal(d):
    d.stop()
    d.extra = ["--audit-refusals-per-min", "0"]
    d.start()
    flood(d, 20)
    d.stop()
    d.start()
    assert refusals(d) == []


if __name__ == "__main__":
    gpd.run([test_a_403_and_a_401_are_in_gpupool_audit, test_a_flood_of_bad_tokens_adds_a_bounded_number_of_rows,
             test_zero_per_minute_audits_no_refusal])

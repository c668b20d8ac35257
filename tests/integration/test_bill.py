#!/usr/bin/env python3
"""Prices and bills against a real gpupoold (docs/metering.md "Prices and
bills", docs/api.md): the price table set and read, bad prices refused
naming the field, GET /v1/bill as JSON and CSV with the fleet identity,
what a member sees, showback against chargeback, and the offline
`gpupool bill --ledger --prices` giving the same bill as the daemon."""
import calendar
import csv
import io
import json
import os
import re
import sys
import time
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "metering"))
import billref  # noqa: E402  (the bill re-derived in Python from the specification, not from the C code)
import gpd  # noqa: E402

MICRO = Decimal("0.000001")


def month():
    """This UTC month as "YYYY-MM" and its first second."""
    t = time.gmtime()
    return "%04d-%02d" % (t.tm_year, t.tm_mon), calendar.timegm((t.tm_year, t.tm_mon, 1, 0, 0, 0))


def rounded(x):
    """A Fraction as THE BILL SPEC prints it: half to even at 6 decimals."""
    return str((Decimal(x.numerator) / Decimal(x.denominator)).quantize(MICRO, rounding=ROUND_HALF_EVEN))


def billed_world(d, chargeback_org):
    """examples/tenants.yaml, prices from the month's start, one org in
    chargeback, some work done; the month as "YYYY-MM" and its start."""
    period, start = month()
    d.cli("apply", "-f", gpd.TENANTS)
    d.ok("PUT", "/v1/prices?backdate=true", {"effective": start, "gpu_types": {"H100": "2.50", "A100": "1.20",
                                                                              "L40S": "0.90"},
                                             "premium": {"nvlink": "1.10", "block": "1.25"}})
    d.ok("PUT", "/v1/prices/modes/" + chargeback_org, {"mode": "chargeback"})
    run_some_work(d)
    return period, start


def member(d, scope, user="alice"):
    return d.ok("POST", "/v1/tokens", {"name": user, "role": "member", "scope": scope, "user": user})["token"]


def test_prices_are_set_read_and_bad_ones_refused_naming_the_field(d):
    d.cli("apply", "-f", gpd.TENANTS)
    assert d.ok("GET", "/v1/prices") == {"currency": "USD", "versions": [], "modes": {}}
    later = int(time.time()) + 3600
    body = {"effective": later, "gpu_types": {"H100": "2.50", "B300": "9.000001"}, "premium": {"nvlink": "1.10"}}
    st, out = d.call("PUT", "/v1/prices", body)
    assert st == 201 and out["effective"] == later and out["currency"] == "USD", (st, out)
    for bad, field in [({"H100": "2.5000001"}, "gpu_types.H100"), ({"H100": "-1"}, "gpu_types.H100"),
                       ({"H100": 2.5}, "gpu_types.H100")]:
        st, err = d.call("PUT", "/v1/prices", {"effective": later + 60, "gpu_types": bad})
        assert st == 400 and err["error"]["field"] == field, (bad, st, err)
    st, err = d.call("PUT", "/v1/prices", {"effective": later + 60, "gpu_types": {}, "premium": {"zone": "2"}})
    assert st == 400 and err["error"]["field"] == "premium.zone", (st, err)
    st, err = d.call("PUT", "/v1/prices", {"effective": later, "gpu_types": {"H100": "3"}})
    assert st == 409 and err["error"]["field"] == "effective", (st, err)  # taken
    past = "2020-01-01T00:00:00Z"
    st, err = d.call("PUT", "/v1/prices", {"effective": past, "gpu_types": {"H100": "3"}})
    assert st == 409 and "backdate" in err["error"]["message"], (st, err)
    st, err = d.call("PUT", "/v1/prices", {"effective": later + 60, "currency": "EUR", "gpu_types": {}})
    assert st == 409 and err["error"]["field"] == "currency", (st, err)
    assert d.ok("PUT", "/v1/prices?backdate=true", {"effective": past, "gpu_types": {"H100": "3"}})["effective"] == \
        1577836800
    tok = member(d, "research/nlp")
    st, err = d.call("PUT", "/v1/prices", {"effective": later + 60, "gpu_types": {}}, token=tok)
    assert st == 403, (st, err)
    table = d.ok("GET", "/v1/prices", token=tok)
    assert [v["effective"] for v in table["versions"]] == [1577836800, later], table
    assert table["versions"][1]["gpu_types"] == {"H100": "2.50", "B300": "9.000001"}, table
    said = d.cli("prices", "set", "--effective", str(later + 7200), "--gpu", "A100=1.20,L40S=0.90", "--premium",
                 "block=1.25").stdout
    # a local date-time, never epoch seconds (issue 32)
    assert str(later + 7200) not in said and re.match(r"price version effective \d{4}-\d\d-\d\d \d\d:\d\d", said), said
    out = d.cli("prices").stdout
    assert "A100" in out and "1.20" in out and "1.25" in out, out
    assert d.ok("PUT", "/v1/prices/modes/research", {"mode": "chargeback"}) == {"org": "research",
                                                                               "mode": "chargeback"}
    st, err = d.call("PUT", "/v1/prices/modes/nobody", {"mode": "chargeback"})
    assert st == 404 and err["error"]["field"] == "org", (st, err)
    st, err = d.call("PUT", "/v1/prices/modes/research", {"mode": "free"})
    assert st == 400 and err["error"]["field"] == "mode", (st, err)
    d.cli("prices", "mode", "product", "showback")
    assert d.ok("GET", "/v1/prices")["modes"] == {"product": "showback", "research": "chargeback"}
    actions = [a["action"] for a in d.ok("GET", "/v1/audit")["audit"] if a["result"] == "ok"]
    assert actions.count("prices.set") == 3 and actions.count("prices.mode") == 2, actions


def run_some_work(d):
    """research/nlp: a guaranteed nvlink job, cancelled; product/search: a running job."""
    done = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "user": "alice", "gpus": 2, "gpu_types": ["H100"],
                                     "topology": "nvlink", "checkpoint_grace_s": 0})
    d.ok("POST", "/v1/jobs", {"tenant": "product/search", "user": "bob", "gpus": 1, "gpu_types": ["A100"]})
    time.sleep(1.1)
    d.ok("DELETE", "/v1/jobs/%d" % done["id"])
    gpd.wait_for(lambda: any(r["record"]["kind"] == "close" for r in d.ok("GET", "/v1/ledger")["records"]),
                 what="the close record")


def check_identity(rows):
    for f in rows:
        parts = f["whole"] + f["mig"] + f["mps"] + f["timeslice"] + f["idle_in_guarantees"] + f["idle_unowned"]
        assert parts == f["physical"] and f["idle_unowned"] >= 0, f


def line(bill, tenant, kind, gpu_type):
    t = next(t for t in bill["tenants"] if t["tenant"] == tenant)
    return next(x for x in t["lines"] if x["kind"] == kind and x["gpu_type"] == gpu_type)


def test_bill_json_and_csv_add_up_and_a_member_sees_its_subtree(d):
    period, start = billed_world(d, "research")
    bill = d.ok("GET", "/v1/bill?period=%s&hourly=1" % period)
    assert bill["period"] == period and bill["from"] == start and bill["currency"] == "USD", bill
    paths = [t["tenant"] for t in bill["tenants"]]
    assert paths == sorted(paths) and "research/nlp" in paths and "product/ads" in paths, paths
    # nlp's own floor: 16 H100 from the apply to as_of, at 2.50, exactly
    floor = line(bill, "research/nlp", "floor", "H100")
    assert floor["milli_gpu_seconds"] > 0 and floor["milli_gpu_seconds"] % 16000 == 0, floor
    assert floor["amount"] == rounded(Fraction(floor["milli_gpu_seconds"]) / 3600000 * Fraction("2.50")), floor
    assert floor["gpu_hours"] == rounded(Fraction(floor["milli_gpu_seconds"], 3600000)), floor
    surcharge = line(bill, "research/nlp", "guaranteed", "H100")
    assert surcharge["topology"] == "nvlink" and surcharge["milli_gpu_seconds"] % 2000 == 0, surcharge
    assert surcharge["amount"] == rounded(Fraction(surcharge["milli_gpu_seconds"], 3600000) * Fraction("2.50") *
                                         Fraction("0.10"))
    research = next(t for t in bill["tenants"] if t["tenant"] == "research")
    product = next(t for t in bill["tenants"] if t["tenant"] == "product")
    assert research["mode"] == "chargeback" and research["due"] == research["subtotal"] != "0.000000", research
    assert product["mode"] == "showback" and product["due"] == "0.000000" != product["subtotal"], product
    check_identity(bill["fleet"])
    check_identity(bill["hourly"])
    assert {f["gpu_type"] for f in bill["fleet"]} == {"H100", "A100", "L40S"}, bill["fleet"]
    # the CSV: one line per ledger record billed, each re-checked as a spreadsheet would
    st, text = d.call("GET", "/v1/bill?period=%s&format=csv" % period)
    assert st == 200 and text.startswith("seq,kind,tenant,job,user,gpu_type"), (st, text[:200])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["kind"] for r in rows} >= {"close", "open", "guarantee"}, rows
    for r in rows:  # ISO 8601 UTC times and GPUs / GPU-hours; milli_gpu_seconds the exact figure
        mgs = int(r["milli_gpu_seconds"])
        billed = [calendar.timegm(time.strptime(r[k], "%Y-%m-%dT%H:%M:%SZ")) for k in ("billed_from", "billed_to")]
        assert mgs == round(Fraction(r["gpus"]) * 1000) * (billed[1] - billed[0]), r
        assert r["gpu_hours"] == rounded(Fraction(mgs, 3600000)), r
        want = Fraction(mgs, 3600000) * Fraction(r["price"]) * Fraction(r["premium"]) if r["price"] else 0
        assert r["amount"] == rounded(Fraction(want)), r
    out = d.cli("bill", "--period", period).stdout
    assert "research/nlp" in out and "IDLE UNOWNED" in out, out
    assert re.match(r"bill \S+ \(\S+\), as of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", out), out  # not epoch seconds
    # without --period: this UTC month (it was a usage error)
    assert d.cli("bill").stdout.startswith("bill %s " % period), d.cli("bill", check=False).stderr
    # a member of research/nlp: its subtree, no fleet; elsewhere 404
    tok = member(d, "research/nlp")
    mine = d.ok("GET", "/v1/bill?period=%s&hourly=1" % period, token=tok)
    assert [t["tenant"] for t in mine["tenants"]] == ["research/nlp"], mine
    assert "fleet" not in mine and "hourly" not in mine, mine
    for other in ("product", "research"):
        st, err = d.call("GET", "/v1/bill?period=%s&tenant=%s" % (period, other), token=tok)
        assert st == 404 and err["error"]["field"] == "tenant", (other, st, err)
    st, text = d.call("GET", "/v1/bill?period=%s&format=csv" % period, token=tok)
    assert st == 200 and all(r["tenant"] == "research/nlp" for r in csv.DictReader(io.StringIO(text))), text
    st, err = d.call("GET", "/v1/bill?period=2026-13")
    assert st == 400 and err["error"]["field"] == "period", (st, err)


def billref_difference(a, b):
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            return "billref vs gpupoold differ at %s: %r vs %r" % (k, a.get(k), b.get(k))
    return "equal"


def test_the_export_rebills_to_the_daemons_bill_in_c_and_in_python(d):
    period, _ = billed_world(d, "product")
    online = d.ok("GET", "/v1/bill?period=%s" % period)
    ledger = os.path.join(d.dir, "ledger.jsonl")
    with open(ledger, "w") as f:
        f.write(d.cli("ledger", "--limit", "1000").stdout)
    prices = os.path.join(d.dir, "prices.json")
    with open(prices, "w") as f:
        json.dump(d.ok("GET", "/v1/prices"), f)
    p = d.cli("bill", "--ledger", ledger, "--prices", prices, "--period", period, "--as-of",
                       str(online["as_of"]), "-o", "json")
    offline = json.loads(p.stdout)
    assert offline == online, (offline, online)
    # and independently: the ledger export (its chain verified) and the price table alone
    records, _ = billref.read_ledger(ledger)
    rederived = billref.bill(records, d.ok("GET", "/v1/prices"), period, as_of=online["as_of"])
    assert rederived == online, billref_difference(rederived, online)
    scoped = json.loads(d.cli("bill", "--ledger", ledger, "--prices", prices, "--period", period, "--as-of",
                              str(online["as_of"]), "--tenant", "product", "-o", "json").stdout)
    assert [t["tenant"] for t in scoped["tenants"]] == ["product", "product/ads", "product/search"], scoped


if __name__ == "__main__":
    gpd.run([test_prices_are_set_read_and_bad_ones_refused_naming_the_field,
             test_bill_json_and_csv_add_up_and_a_member_sees_its_subtree,
             test_the_export_rebills_to_the_daemons_bill_in_c_and_in_python])

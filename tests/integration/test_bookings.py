#!/usr/bin/env python3
"""Advance bookings through a real gpupoold (issue 34; docs/booking.md, docs/api.md "Bookings").

The example fleet (32 H100 in blocks blk-a and blk-b of two 8-GPU nodes each).
  - book, list, show and cancel through the API and the CLI, each change an
    audit row; a block booking lands in one block;
  - a booking the engine cannot honour is 409 with suggested_start (the CLI
    prints it and exits 7), and nothing is kept;
  - scope and roles: a member books only where its tenant's `booking` is
    `members`, changes only its own, never sees another tenant's; operators
    do not book; only an admin sets an org's allowance;
  - a restart replays the bookings from the event log, placement and all;
  - a job that names a booking waits for its start, then runs on its GPUs;
    a booking is shortened and extended (PATCH) and the CLI checks the
    direction;
  - a booking beyond its tenant's guarantee is a booking record on the
    ledger and a "booked" line on the bill once it started; a cancel cuts
    its window;
  - bad input is 400 naming the field and changes nothing.
"""
import calendar
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402


def setup_tree(d, booking=None):
    d.ok("PUT", "/v1/tenants/org", {})
    a = {"guarantee": {"gpu": {"H100": 16}}}
    if booking:
        a["booking"] = booking
    d.ok("PUT", "/v1/tenants/org/a", a)
    d.ok("PUT", "/v1/tenants/org/b", {"guarantee": {"gpu": {"H100": 16}}})


def block_booking(name, start, hours=2, gpus=16, tenant="org/a", **extra):
    body = {"name": name, "tenant": tenant, "gpu_type": "H100", "gpus": gpus, "topology": "block",
            "start": start, "duration_s": hours * 3600}
    body.update(extra)
    return body


def audit_actions(d):
    return [(r["action"], r["target"]) for r in d.ok("GET", "/v1/audit?limit=1000")["audit"]]


def blocks_of(booking):
    return {p["node"].rsplit("-", 1)[0] for p in booking["placement"]}


def test_book_list_show_and_cancel(d):
    setup_tree(d)
    start = int(time.time()) + 3600
    b = d.ok("POST", "/v1/bookings", block_booking("pretrain", start))
    assert b["state"] == "planned" and b["gpus"] == 16 and b["replicas"] == 2, b
    assert b["end"] == start + 7200 and b["tenant"] == "org/a" and b["lend"] is True, b
    assert sum(p["gpus"] for p in b["placement"]) == 16 and len(blocks_of(b)) == 1, b  # one fabric block
    assert b["guaranteed_gpus"] == 16 and b["allowance_gpus"] == 0, b
    listed = d.ok("GET", "/v1/bookings")["bookings"]
    assert [x["name"] for x in listed] == ["pretrain"], listed
    assert d.ok("GET", "/v1/bookings?from=%d&to=%d" % (start - 60, start))["bookings"] == []  # before it
    assert len(d.ok("GET", "/v1/bookings?tenant=org/a&from=%d" % start)["bookings"]) == 1
    out = d.cli("bookings").stdout
    assert "pretrain" in out and "org/a" in out and "H100" in out and "planned" in out, out
    out = d.cli("bookings", "show", "pretrain").stdout
    assert "placement:" in out and "h100-" in out and "16 H100" in out, out
    d.cli("bookings", "cancel", "pretrain")
    assert d.ok("GET", "/v1/bookings/pretrain")["state"] == "cancelled"
    acts = audit_actions(d)
    assert ("booking.create", "booking/pretrain") in acts and ("booking.cancel", "booking/pretrain") in acts, acts
    st, metrics = d.call("GET", "/metrics")
    assert st == 200 and 'gpupool_booking_changes_total{to="cancelled"} 1' in metrics, metrics[-2000:]
    # the CLI books too, with local times and a duration
    out = d.cli("book", "--type", "H100", "--gpus", "8", "--start", "+2h", "--duration", "1h", "--name", "eval",
                "--tenant", "org/a", "--no-lend").stdout
    assert "booked eval: 8 H100" in out, out
    assert d.ok("GET", "/v1/bookings/eval")["lend"] is False


def test_a_booking_that_cannot_be_honoured_is_refused_with_a_suggested_start(d):
    setup_tree(d)
    start = int(time.time()) + 3600
    d.ok("POST", "/v1/bookings", block_booking("first", start))
    # org/a's whole guarantee is booked for the window and it has no allowance beyond it
    st, out = d.call("POST", "/v1/bookings", block_booking("second", start + 600))
    assert st == 409, (st, out)
    assert out["error"]["message"] and isinstance(out.get("suggested_start"), int), out
    assert out["suggested_start"] >= start + 7200, out  # once the first one ends
    assert [x["name"] for x in d.ok("GET", "/v1/bookings")["bookings"]] == ["first"]  # nothing kept
    p = d.cli("book", "--type", "H100", "--gpus", "16", "--topology", "block", "--start", str(start + 600),
              "--duration", "2h", "--name", "second", "--tenant", "org/a", check=False)
    assert p.returncode == 7 and "suggested start:" in p.stderr and "--start" in p.stderr, (p.returncode, p.stderr)
    # a name in use is a conflict with no suggestion
    st, out = d.call("POST", "/v1/bookings", block_booking("first", start + 86400))
    assert st == 409 and out["error"]["field"] == "name" and "suggested_start" not in out, (st, out)
    # with an allowance the org books beyond its guarantee
    d.ok("PUT", "/v1/booking-allowances/org", {"gpu_hours_per_week": 100})
    b = d.ok("POST", "/v1/bookings", block_booking("second", start + 600, hours=1))
    assert b["allowance_gpus"] == 16, b
    left = d.ok("GET", "/v1/bookings")["allowances"]
    assert left and left[0]["org"] == "org" and left[0]["gpu_hours_left"] < 100, left
    assert "allowance /org:" in d.cli("bookings").stdout


def test_scope_and_roles(d):
    setup_tree(d)
    start = int(time.time()) + 3600
    member = d.ok("POST", "/v1/tokens", {"name": "alice", "role": "member", "scope": "org/a", "user": "alice"})["token"]
    other = d.ok("POST", "/v1/tokens", {"name": "bob", "role": "member", "scope": "org/b", "user": "bob"})["token"]
    tadmin = d.ok("POST", "/v1/tokens", {"name": "ta", "role": "tenant-admin", "scope": "org"})["token"]
    oper = d.ok("POST", "/v1/tokens", {"name": "op", "role": "operator"})["token"]
    body = block_booking("m1", start, gpus=8)
    del body["tenant"]  # a member's booking goes to its tenant
    st, out = d.call("POST", "/v1/bookings", body, token=member)
    assert st == 403 and out["error"]["field"] == "tenant", (st, out)  # default: admins book
    st, out = d.call("POST", "/v1/bookings", block_booking("o1", start, gpus=8), token=oper)
    assert st == 403, (st, out)
    st, out = d.call("POST", "/v1/bookings", block_booking("x1", start, gpus=8, tenant="org/b"), token=member)
    assert st == 404, (st, out)  # another tenant: as if it did not exist
    d.ok("PATCH", "/v1/tenants/org/a", {"booking": "members"})
    mine = d.ok("POST", "/v1/bookings", body, token=member)
    assert mine["tenant"] == "org/a" and mine["made_by"] == "alice", mine
    theirs = d.ok("POST", "/v1/bookings", block_booking("ta1", start + 86400, gpus=8), token=tadmin)
    assert theirs["made_by"] == "ta", theirs
    st, out = d.call("DELETE", "/v1/bookings/ta1", token=member)
    assert st == 403 and out["error"]["field"] == "name", (st, out)  # not its own
    st, out = d.call("GET", "/v1/bookings/m1", token=other)
    assert st == 404, (st, out)
    assert d.ok("GET", "/v1/bookings", token=other)["bookings"] == []
    assert len(d.ok("GET", "/v1/bookings", token=oper)["bookings"]) == 2  # operators read
    d.ok("DELETE", "/v1/bookings/m1", token=tadmin)  # a tenant-admin, in its subtree
    st, out = d.call("PUT", "/v1/booking-allowances/org", {"gpu_hours_per_week": 10}, token=tadmin)
    assert st == 403, (st, out)
    acts = audit_actions(d)
    assert ("booking.create", "booking/m1") in acts and ("booking.cancel", "booking/m1") in acts, acts


def test_a_restart_keeps_bookings(d):
    setup_tree(d)
    start = int(time.time()) + 3600
    before = d.ok("POST", "/v1/bookings", block_booking("keep", start))
    d.ok("POST", "/v1/bookings", block_booking("series", start + 86400, hours=1, gpus=8,
                                               repeat="daily", until=start + 4 * 86400))
    d.ok("PUT", "/v1/booking-allowances/org", {"gpu_hours_per_week": 50})
    d.stop()
    d.start()
    after = d.ok("GET", "/v1/bookings/keep")
    assert after["placement"] == before["placement"] and after["state"] == "planned", (before, after)
    names = sorted(x["name"] for x in d.ok("GET", "/v1/bookings")["bookings"])
    assert names == ["keep", "series.1", "series.2", "series.3"], names
    assert d.ok("GET", "/v1/bookings")["allowances"][0]["gpu_hours_per_week"] == 50


def test_a_job_that_names_a_booking_runs_at_its_start(d):
    setup_tree(d)
    start = int(time.time()) + 3
    b = d.ok("POST", "/v1/bookings", block_booking("soon", start, hours=1, gpus=8))
    job = d.ok("POST", "/v1/jobs", {"tenant": "org/a", "gpus": 8, "gpu_types": ["H100"], "booking": "soon",
                                    "command": ["sleep", "1"]})
    assert job["state"] == "pending", job
    running = gpd.wait_for(lambda: (lambda j: j if j["state"] == "running" else None)(
        d.ok("GET", "/v1/jobs/%d" % job["id"])), what="the booked job running")
    assert time.time() >= start - 1, "ran before the booking's start"
    assert {p["node"] for p in running["placement"]} == {p["node"] for p in b["placement"]}, (running, b)
    assert d.ok("GET", "/v1/bookings/soon")["state"] == "active"
    # shorten, then extend; the CLI refuses a "shorten" that moves the end later
    end = d.ok("GET", "/v1/bookings/soon")["end"]
    assert d.ok("PATCH", "/v1/bookings/soon", {"end": end - 600})["end"] == end - 600
    p = d.cli("bookings", "shorten", "soon", "--end", str(end), check=False)
    assert p.returncode == 2, (p.returncode, p.stderr)
    d.cli("bookings", "extend", "soon", "--end", str(end))
    assert d.ok("GET", "/v1/bookings/soon")["end"] == end
    assert ("booking.change", "booking/soon") in audit_actions(d)
    # a job may not name another tenant's booking, nor one that does not exist
    for tenant, name in (("org/b", "soon"), ("org/a", "nosuch")):
        st, out = d.call("POST", "/v1/jobs", {"tenant": tenant, "gpus": 1, "booking": name, "command": ["true"]})
        assert st in (400, 404, 409) and out["error"]["field"] == "booking", (st, out)


def test_a_booking_beyond_the_guarantee_is_a_booked_line_on_the_bill(d):
    setup_tree(d)
    t = time.gmtime()
    period = "%04d-%02d" % (t.tm_year, t.tm_mon)
    month_start = calendar.timegm((t.tm_year, t.tm_mon, 1, 0, 0, 0))
    d.ok("PUT", "/v1/prices?backdate=true", {"effective": month_start, "gpu_types": {"H100": "2.50"}})
    d.ok("PUT", "/v1/booking-allowances/org", {"gpu_hours_per_week": 1000})
    start = int(time.time()) + 1
    d.ok("POST", "/v1/bookings", block_booking("inside", start, hours=1))  # org/a's whole guarantee: free
    b = d.ok("POST", "/v1/bookings", block_booking("beyond", start, hours=1))
    assert b["allowance_gpus"] == 16, b
    records = [r["record"] for r in d.ok("GET", "/v1/ledger?limit=1000")["records"] if r["record"]["kind"] == "booking"]
    assert {(r["booking"], r["milli_gpus"]) for r in records} >= {("inside", 0), ("beyond", 16000)}, records
    gpd.wait_for(lambda: time.time() > start + 2, what="the bookings' start")
    bill = d.ok("GET", "/v1/bill?period=" + period)
    lines = next(x for x in bill["tenants"] if x["tenant"] == "org/a")["lines"]
    booked = [x for x in lines if x["kind"] == "booked"]
    assert len(booked) == 1 and booked[0]["gpu_type"] == "H100" and booked[0]["milli_gpu_seconds"] > 0, lines
    assert booked[0]["milli_gpu_seconds"] % 16000 == 0, booked  # 16 GPUs beyond the guarantee, whole seconds
    d.ok("DELETE", "/v1/bookings/beyond")
    cut = [r["record"] for r in d.ok("GET", "/v1/ledger?limit=1000")["records"]
           if r["record"]["kind"] == "booking" and r["record"]["booking"] == "beyond"][-1]
    assert cut["state"] == "cancelled" and cut["end"] <= int(time.time()), cut  # the window cut where it was cancelled


def test_bad_input_names_the_field_and_changes_nothing(d):
    setup_tree(d)
    start = int(time.time()) + 3600
    good = block_booking("ok", start)
    cases = [
        ({k: v for k, v in good.items() if k != "name"}, "name"),
        (dict(good, gpus="many"), "gpus"),
        (dict(good, gpus=0), "gpus"),
        (dict(good, gpus=12, replica_gpus=8), "gpus"),
        ({k: v for k, v in good.items() if k != "start"}, "start"),
        (dict(good, end=start + 60), "duration_s"),
        ({k: v for k, v in good.items() if k != "duration_s"}, "end"),
        (dict(good, duration_s=-5), "duration_s"),
        (dict(good, topology="ring"), "topology"),
        (dict(good, lend="sometimes"), "lend"),
        (dict(good, gpu="H100"), "gpu"),
        (dict(good, repeat="hourly", until=start + 86400), "repeat"),
        (dict(good, repeat="daily"), "until"),
        (dict(good, tenant="../etc"), "tenant"),
        (dict(good, name="a/b"), "name"),
        (dict(good, name="x" * 200), "name"),
        (dict(good, start=start - 7200), "start"),
    ]
    for body, field in cases:
        st, out = d.call("POST", "/v1/bookings", body)
        assert st == 400 and out["error"]["field"] == field, (body, st, out)
    st, out = d.call("POST", "/v1/bookings", raw=b"[1,2]")
    assert st == 400, (st, out)
    st, out = d.call("GET", "/v1/bookings?from=yesterday")
    assert st == 400 and out["error"]["field"] == "from", (st, out)
    st, out = d.call("GET", "/v1/bookings?colour=red")
    assert st == 400 and out["error"]["field"] == "colour", (st, out)
    assert d.ok("GET", "/v1/bookings")["bookings"] == []
    d.ok("POST", "/v1/bookings", good)
    for body, field in (({}, "end"), ({"end": "late"}, "end"), ({"ends": 5}, "ends")):
        st, out = d.call("PATCH", "/v1/bookings/ok", body)
        assert st == 400 and out["error"]["field"] == field, (body, st, out)
    st, out = d.call("PATCH", "/v1/bookings/nosuch", {"end": start + 60})
    assert st == 404, (st, out)
    for body, field in (({"gpu_hours_per_week": -5}, "gpu_hours_per_week"), ({}, "gpu_hours_per_week"),
                        ({"hours": 5}, "hours")):
        st, out = d.call("PUT", "/v1/booking-allowances/org", body)
        assert st == 400 and out["error"]["field"] == field, (body, st, out)
    st, out = d.call("PUT", "/v1/booking-allowances/nosuch", {"gpu_hours_per_week": 5})
    assert st == 404, (st, out)
    st, out = d.call("PATCH", "/v1/tenants/org/a", {"booking": "everyone"})
    assert st == 400 and out["error"]["field"] == "booking", (st, out)
    assert d.ok("GET", "/v1/bookings/ok")["end"] == start + 7200
    p = d.cli("book", "--type", "H100", "--gpus", "8", "--start", "someday", "--duration", "1h", "--name", "x",
              check=False)
    assert p.returncode == 2 and "--start" in p.stderr, (p.returncode, p.stderr)


if __name__ == "__main__":
    gpd.run([test_book_list_show_and_cancel,
             test_a_booking_that_cannot_be_honoured_is_refused_with_a_suggested_start,
             test_scope_and_roles,
             test_a_restart_keeps_bookings,
             test_a_job_that_names_a_booking_runs_at_its_start,
             test_a_booking_beyond_the_guarantee_is_a_booked_line_on_the_bill,
             test_bad_input_names_the_field_and_changes_nothing])

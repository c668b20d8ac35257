#!/usr/bin/env python3
"""billref.py - an independent re-derivation of gpupool's bill from a ledger.

Reads a usage ledger (JSON lines, one sealed record per line, as `gpupool
ledger` prints it and `gpupool-sim --ledger` writes it) and a price table
(as GET /v1/prices answers it) and prints the bill JSON of THE BILL SPEC
(docs/metering.md, "Prices and bills" and "The idle identity"), written
from the spec alone, in Python's standard library, without any of the C
code: the C bill (gpupoold's GET /v1/bill, `gpupool bill --ledger`) must
agree with it to the digit.

    billref.py --ledger L.jsonl --prices P.json --period 2026-11
               [--as-of EPOCH] [--tenant PATH] [--hourly]
    billref.py --ledger L.jsonl --verify

Before billing it verifies the chain: record i has "seq" i, "prev" the
SHA-256 of record i-1's line (64 zeros for the first), and its line is
its own canonical text (compact, keys sorted, integers and strings only).
A broken chain: exit 1, naming the first bad record.

Money is exact: price_u = price x 10^6, premium_u = premium x 10^6, and an
amount is the Fraction SUM(milli_gpu_seconds x price_u x premium_u) /
3.6e18, rounded once, half-even, to 6 decimals when printed.

Example: research {H100: 24 GPUs}, research/nlp {H100: 16}, H100 at
"2.50", a whole month of 30 days = 720 h:
  research/nlp floor: 16000 milli x 2,592,000 s = 41,472,000,000 milli-GPU-s
                      = 11,520 GPU-h x 2.50 = "28800.000000"
  research own floor: 24 - 16 = 8 GPUs -> "14400.000000"; subtotal "43200.000000".

Choices where the spec leaves room (docs/metering.md lists them too):
  - a tenant is listed when a usage interval of it overlaps [from, as_of)
    or a guarantee record of it with milli_gpus > 0 is in force during
    [from, as_of), plus its ancestors; a line is listed only when its milli_gpu_seconds > 0;
  - "unpriced" sums the unpriced floor and usage (both classes) seconds;
  - the offline --as-of is clipped to [from, to];
  - the fleet section is printed by the offline tool (it reads the whole
    ledger: an auditor's view), with --tenant too;
  - idle_in_guarantees within an hour in which guarantees change: each
    outermost guaranteed tenant's held milli-GPU-seconds (G x seconds while
    it is outermost) less its subtree's guaranteed-class milli-GPU-seconds
    in those same seconds, summed over the hour, then max(0, .) per tenant.
"""

import argparse
import bisect
import calendar
import hashlib
import json
import re
import sys
from fractions import Fraction

ZERO_HASH = "0" * 64
KIND_ORDER = {"floor": 0, "guaranteed": 1, "burst": 2, "dedicated_idle": 3, "unpriced": 4}
SHARES = ("whole", "mig", "mps", "timeslice")
FLEET_FIELDS = ("physical", "whole", "mig", "mps", "timeslice", "idle_in_guarantees", "idle_unowned")
UNIT = 10**6                      # price_u and premium_u per unit
AMOUNT_DIVISOR = 3600 * 1000 * UNIT * UNIT   # 3.6e18


class LedgerError(Exception):
    def __init__(self, seq, why):
        super().__init__(f"record {seq}: {why}")
        self.seq, self.why = seq, why


class InputError(Exception):
    pass


# ---- the chain --------------------------------------------------------------

def canonical(obj):
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def only_ints_and_strings(v):
    if isinstance(v, bool) or isinstance(v, float):
        return False
    if isinstance(v, dict):
        return all(only_ints_and_strings(x) for x in v.values())
    if isinstance(v, list):
        return all(only_ints_and_strings(x) for x in v)
    return v is None or isinstance(v, (int, str))


def read_ledger(path):
    """The records of a ledger file, the chain verified; (records, head hash)."""
    records, prev = [], ZERO_HASH
    with open(path, "rb") as f:
        for i, raw in enumerate(f, start=1):
            line = raw.rstrip(b"\n")
            try:
                rec = json.loads(line)
            except ValueError as e:
                raise LedgerError(i, f"not JSON: {e}")
            if not isinstance(rec, dict):
                raise LedgerError(i, "not an object")
            if rec.get("seq") != i:
                raise LedgerError(i, f"seq {rec.get('seq')!r} at position {i}")
            if rec.get("prev") != prev:
                raise LedgerError(i, "prev is not the hash of the record before")
            if not only_ints_and_strings(rec) or canonical(rec).encode() != line:
                raise LedgerError(i, "text is not canonical")
            prev = hashlib.sha256(line).hexdigest()
            records.append(rec)
    return records, prev


# ---- prices ------------------------------------------------------------------

DECIMAL = re.compile(r"^([0-9]+)(?:\.([0-9]{1,6}))?$")


def micro(text, field):
    """A decimal string with at most 6 decimals, x 10^6, as an integer."""
    m = DECIMAL.match(text) if isinstance(text, str) else None
    if not m:
        raise InputError(f"{field}: {text!r} is not a decimal >= 0 with at most 6 decimals")
    return int(m.group(1)) * UNIT + int((m.group(2) or "").ljust(6, "0"))


def read_prices(table):
    versions = []
    for k, v in enumerate(table.get("versions", [])):
        eff = v.get("effective")
        if not isinstance(eff, int) or isinstance(eff, bool):
            raise InputError(f"versions[{k}].effective: an integer (epoch seconds)")
        prices = {t: micro(p, f"versions[{k}].gpu_types.{t}") for t, p in v.get("gpu_types", {}).items()}
        premium = {"any": UNIT}
        for topo, p in (v.get("premium") or {}).items():
            if topo not in ("nvlink", "block"):
                raise InputError(f"versions[{k}].premium.{topo}: not a topology (nvlink, block)")
            premium[topo] = micro(p, f"versions[{k}].premium.{topo}")
        versions.append((eff, prices, premium))
    versions.sort(key=lambda x: x[0])
    modes = table.get("modes") or {}
    return versions, modes, table.get("currency", "USD")


# ---- amounts -----------------------------------------------------------------

def fmt6(value):
    """A Fraction rounded once, half-even, to 6 decimals."""
    q = round(value * UNIT)          # Fraction.__round__: half to even
    sign = "-" if q < 0 else ""
    q = abs(q)
    return f"{sign}{q // UNIT}.{q % UNIT:06d}"


def hours(mgs):
    return fmt6(Fraction(mgs, 3600 * 1000))


def amount(numerator):
    return fmt6(Fraction(numerator, AMOUNT_DIVISOR))


# ---- the ledger's state over time -------------------------------------------

def period_bounds(period):
    m = re.match(r"^([0-9]{4})-([0-9]{2})$", period or "")
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise InputError(f"period: {period!r} is not YYYY-MM")
    y, mo = int(m.group(1)), int(m.group(2))
    start = calendar.timegm((y, mo, 1, 0, 0, 0))
    end = calendar.timegm((y + (mo == 12), mo % 12 + 1, 1, 0, 0, 0))
    return start, end


def usage_intervals(records, as_of):
    """(tenant, gpu_type, share, class, topology, milli, start, end): every
    close, and every open without a close (running until as_of)."""
    closed = {r["interval"] for r in records if r.get("kind") == "close"}
    out = []
    for r in records:
        k = r.get("kind")
        if k == "close" or (k == "open" and r["interval"] not in closed):
            end = r["end"] if k == "close" else as_of
            out.append((r["tenant"], r["gpu_type"], r.get("share") or "whole", r["class"], r["topology"],
                        r["milli_gpus"], r["start"], end))
    return out


class StepFunction:
    """Per key, a value from each record's start until the next one's."""

    def __init__(self):
        self.changes = {}      # key -> [(start, seq, value)]

    def add(self, key, start, seq, value):
        self.changes.setdefault(key, []).append((start, seq, value))

    def finish(self):
        for v in self.changes.values():
            v.sort(key=lambda x: (x[0], x[1]))

    def at(self, key, t):
        ch = self.changes.get(key, [])
        i = bisect.bisect_right([c[0] for c in ch], t)
        return ch[i - 1][2] if i else 0

    def times(self):
        return {c[0] for v in self.changes.values() for c in v}


def ancestors(path):
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def guarantees_at(gstate, gtype, tenants, t):
    return {p: g for p in tenants if (g := gstate.at((p, gtype), t)) > 0}


def own_floor(g, path):
    """G of path minus its nearest guaranteed descendants' G, never below 0."""
    nearest = sum(gd for d, gd in g.items()
                  if d.startswith(path + "/") and not any(a in g and a.startswith(path + "/") for a in ancestors(d)))
    return max(0, g.get(path, 0) - nearest)


def outermost(g, path):
    """The topmost ancestor-or-self of path with a guarantee, or None."""
    for p in ancestors(path) + [path]:
        if p in g:
            return p
    return None


def cut(a, b, times):
    """[a, b) split at the times inside it."""
    pts = [a] + sorted(t for t in times if a < t < b) + [b]
    return list(zip(pts, pts[1:]))


# ---- the bill ---------------------------------------------------------------

def price_at(versions, t):
    i = bisect.bisect_right([v[0] for v in versions], t)
    return versions[i - 1] if i else None


def tenant_lines(intervals, gstate, g_tenants, versions, lo, hi):
    """{tenant: {(kind, gpu_type, topology): [milli_gpu_seconds, numerator]}}."""
    lines = {}
    eff = {v[0] for v in versions}

    def add(tenant, kind, gtype, topo, mgs, num):
        acc = lines.setdefault(tenant, {}).setdefault((kind, gtype, topo), [0, 0])
        acc[0] += mgs
        acc[1] += num

    def priced(gtype, t):
        v = price_at(versions, t)
        return (v[1][gtype], v[2]) if v and gtype in v[1] else None

    for tenant, gtype, share, cls, topo, milli, s, e in intervals:
        if min(e, hi) <= max(s, lo):
            continue
        for a, b in cut(max(s, lo), min(e, hi), eff):
            mgs = milli * (b - a)
            p = priced(gtype, a)
            if p is None:
                add(tenant, "unpriced", gtype, "any", mgs, 0)
            elif cls == "guaranteed":
                add(tenant, "guaranteed", gtype, topo, mgs, mgs * p[0] * (p[1].get(topo, UNIT) - UNIT))
            elif cls == "dedicated_idle":  # GPUs a dedicated tenant keeps idle: the price, no premium
                add(tenant, "dedicated_idle", gtype, topo, mgs, mgs * p[0] * UNIT)
            else:
                add(tenant, "burst", gtype, topo, mgs, mgs * p[0] * p[1].get(topo, UNIT))
    gtimes = gstate.times() | eff
    for gtype in {k[1] for k in gstate.changes}:
        for a, b in cut(lo, hi, gtimes):
            g = guarantees_at(gstate, gtype, g_tenants, a)
            p = priced(gtype, a)
            for path in g:
                mgs = own_floor(g, path) * (b - a)
                if mgs == 0:
                    continue
                if p is None:
                    add(path, "unpriced", gtype, "any", mgs, 0)
                else:
                    add(path, "floor", gtype, "any", mgs, mgs * p[0] * UNIT)
    return lines


def listed_tenants(intervals, gstate, lo, hi):
    """Tenants with usage in [lo, hi) or a guarantee > 0 in force then, and their ancestors."""
    names = {iv[0] for iv in intervals if min(iv[7], hi) > max(iv[6], lo)}
    for (path, _), ch in gstate.changes.items():
        for i, (start, _, g) in enumerate(ch):
            until = ch[i + 1][0] if i + 1 < len(ch) else None
            if g > 0 and start < hi and (until is None or until > lo):
                names.add(path)
    for n in list(names):
        names.update(ancestors(n))
    return names


def tenants_section(names, lines, modes, scope):
    subtotal = {n: Fraction(0) for n in names}
    own = {n: Fraction(sum(v[1] for v in lines.get(n, {}).values()), AMOUNT_DIVISOR) for n in names}
    for n in names:
        for p in [n] + ancestors(n):
            subtotal[p] += own[n]
    out = []
    for n in sorted(names):
        if scope and n != scope and not n.startswith(scope + "/"):
            continue
        org = n.split("/")[0]
        mode = modes.get(org, "showback")
        ls = [{"kind": k, "gpu_type": t, "topology": topo, "milli_gpu_seconds": v[0],
               "gpu_hours": hours(v[0]), "amount": amount(v[1])}
              for (k, t, topo), v in sorted(lines.get(n, {}).items(),
                                            key=lambda kv: (KIND_ORDER[kv[0][0]], kv[0][1], kv[0][2]))
              if v[0] > 0]
        out.append({"tenant": n, "org": org, "mode": mode, "lines": ls, "amount": fmt6(own[n]),
                    "subtotal": fmt6(subtotal[n]),
                    "due": fmt6(subtotal[n]) if mode == "chargeback" else "0.000000"})
    return out


# ---- the fleet and the idle identity ------------------------------------------

def fleet_hours(intervals, gstate, g_tenants, cap, lo, hi):
    """{(hour, gpu_type): {field: milli_gpu_seconds}} over [lo, hi)."""
    types = set(cap.changes) | {iv[1] for iv in intervals if iv[7] > lo and iv[6] < hi}
    hour_starts = list(range(lo, hi, 3600))
    out = {}
    for gtype in sorted(types):
        gtimes = {t for (p, ty), ch in gstate.changes.items() if ty == gtype for t, _, _ in ch}
        ctimes = {t for t, _, _ in cap.changes.get(gtype, [])}
        segs = cut(lo, hi, set(hour_starts) | gtimes | ctimes)
        seg_starts = [a for a, _ in segs]
        g_of = [guarantees_at(gstate, gtype, g_tenants, a) for a, _ in segs]
        alloc = [dict.fromkeys(SHARES, 0) for _ in segs]
        used = [{} for _ in segs]
        for tenant, t, share, cls, _, milli, s, e in intervals:
            if t != gtype or cls == "dedicated_idle":  # idle in the fleet section: nobody uses it
                continue
            a0, b0 = max(s, lo), min(e, hi)
            if b0 <= a0:
                continue
            k = bisect.bisect_right(seg_starts, a0) - 1
            while k < len(segs) and segs[k][0] < b0:
                mgs = milli * (min(b0, segs[k][1]) - max(a0, segs[k][0]))
                alloc[k][share] += mgs
                o = outermost(g_of[k], tenant) if cls == "guaranteed" else None
                if o is not None:
                    used[k][o] = used[k].get(o, 0) + mgs
                k += 1
        for h in hour_starts:
            row = dict.fromkeys(FLEET_FIELDS, 0)
            held = {}
            k = bisect.bisect_left(seg_starts, h)
            while k < len(segs) and segs[k][0] < h + 3600:
                a, b = segs[k]
                row["physical"] += cap.at(gtype, a) * (b - a)
                for sh in SHARES:
                    row[sh] += alloc[k][sh]
                for o, g in g_of[k].items():
                    if outermost(g_of[k], o) == o:
                        held[o] = held.get(o, 0) + g * (b - a) - used[k].get(o, 0)
                k += 1
            idle = row["physical"] - sum(row[sh] for sh in SHARES)
            row["idle_in_guarantees"] = min(idle, sum(max(0, v) for v in held.values()))
            row["idle_unowned"] = idle - row["idle_in_guarantees"]
            out[(h, gtype)] = row
    return out


# ---- putting it together ---------------------------------------------------

def bill(records, price_table, period, as_of=None, tenant=None, hourly=False):
    lo, to = period_bounds(period)
    hi = to if as_of is None else min(max(as_of, lo), to)
    versions, modes, currency = read_prices(price_table)
    intervals = usage_intervals(records, hi)
    gstate, cap = StepFunction(), StepFunction()
    for r in records:
        if r.get("kind") == "guarantee":
            gstate.add((r["tenant"], r["gpu_type"]), r["start"], r["seq"], r["milli_gpus"])
        elif r.get("kind") == "capacity":
            cap.add(r["gpu_type"], r["start"], r["seq"], r["milli_gpus"])
    gstate.finish()
    cap.finish()
    g_tenants = {p for p, _ in gstate.changes}
    lines = tenant_lines(intervals, gstate, g_tenants, versions, lo, hi)
    names = listed_tenants(intervals, gstate, lo, hi)
    hourly_rows = fleet_hours(intervals, gstate, g_tenants, cap, lo, hi)
    fleet = {}
    for (h, t), row in hourly_rows.items():
        acc = fleet.setdefault(t, dict.fromkeys(FLEET_FIELDS, 0))
        for f in FLEET_FIELDS:
            acc[f] += row[f]
    out = {"period": period, "from": lo, "to": to, "as_of": hi, "currency": currency,
           "tenants": tenants_section(names, lines, modes, tenant),
           "fleet": [dict({"gpu_type": t}, **fleet[t]) for t in sorted(fleet)]}
    if hourly:
        out["hourly"] = [dict({"hour": h, "gpu_type": t}, **row) for (h, t), row in sorted(hourly_rows.items())]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--prices")
    ap.add_argument("--period")
    ap.add_argument("--as-of", type=int)
    ap.add_argument("--tenant")
    ap.add_argument("--hourly", action="store_true")
    ap.add_argument("--verify", action="store_true", help="verify the chain only")
    a = ap.parse_args(argv)
    try:
        records, head = read_ledger(a.ledger)
    except LedgerError as e:
        print(json.dumps({"ok": False, "first_bad": e.seq, "why": e.why}))
        return 1
    if a.verify:
        print(json.dumps({"ok": True, "records": len(records), "head": {"seq": len(records), "hash": head}}))
        return 0
    if not a.prices or not a.period:
        ap.error("--prices and --period are needed for a bill")
    try:
        with open(a.prices) as f:
            table = json.load(f)
        print(json.dumps(bill(records, table, a.period, a.as_of, a.tenant, a.hourly)))
    except InputError as e:
        print(f"billref.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

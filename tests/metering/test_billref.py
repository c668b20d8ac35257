#!/usr/bin/env python3
"""The reference bill (billref.py) on small hand-written ledgers.

Every expected figure here is computed by hand in the comment beside it
(docs/metering.md has the same arithmetic): an amount is
milli_gpu_seconds / 3.6e6 GPU-hours x price x premium, rounded once,
half-even, to 6 decimals.  The chain tests edit, delete and reorder one
record each and check the first bad record is named.

Run: python3 tests/metering/test_billref.py (ctest: metering_billref).
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import billref  # noqa: E402

NOV = 1793491200            # 2026-11-01T00:00:00Z
DEC = NOV + 30 * 86400      # 2026-12-01T00:00:00Z
H = 3600
PRICES = {"currency": "USD",
          "versions": [{"effective": NOV, "gpu_types": {"H100": "2.50", "A100": "1.20", "L40S": "0.80"},
                        "premium": {"nvlink": "1.10", "block": "1.25"}}],
          "modes": {"research": "chargeback", "ads": "showback"}}


class Ledger:
    """Builds a sealed ledger the way gpupoold does: seq, prev, canonical text, SHA-256."""

    def __init__(self):
        self.lines, self.prev, self.interval = [], "0" * 64, 0

    def add(self, rec):
        rec = dict(rec, seq=len(self.lines) + 1, prev=self.prev)
        text = json.dumps(rec, separators=(",", ":"), sort_keys=True)
        self.lines.append(text)
        self.prev = hashlib.sha256(text.encode()).hexdigest()
        return rec["seq"]

    def capacity(self, gpu_type, milli, start=NOV):
        self.add({"kind": "capacity", "gpu_type": gpu_type, "milli_gpus": milli, "start": start})

    def guarantee(self, tenant, gpu_type, milli, start=NOV):
        self.add({"kind": "guarantee", "tenant": tenant, "gpu_type": gpu_type, "milli_gpus": milli, "start": start})

    def usage(self, tenant, gpu_type, milli, start, end=None, share="whole", cls="burstable", topology="any",
              closed="finished"):
        """An open record, and its close when end is given."""
        self.interval += 1
        rec = {"kind": "open", "interval": self.interval, "job": self.interval, "tenant": tenant, "user": None,
               "gpu_type": gpu_type, "milli_gpus": milli, "share": share, "placement": None, "class": cls,
               "topology": topology, "start": start}
        seq = self.add(rec)
        if end is not None:
            self.add(dict(rec, kind="close", end=end, closed=closed, open_seq=seq))

    def records(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write("".join(line + "\n" for line in self.lines))
        try:
            return billref.read_ledger(f.name)[0]
        finally:
            os.unlink(f.name)


def tenant(bill, path):
    return next(t for t in bill["tenants"] if t["tenant"] == path)


def line(bill, path, kind, gpu_type, topology="any"):
    return next(x for x in tenant(bill, path)["lines"]
                if (x["kind"], x["gpu_type"], x["topology"]) == (kind, gpu_type, topology))


class HandComputedBills(unittest.TestCase):
    def test_mig_1g_slice_for_90_minutes_bills_its_compute_share(self):
        # 142 milli x 5400 s = 766,800 milli-GPU-s = 0.213 GPU-h x 1.20 = 0.2556
        lg = Ledger()
        lg.usage("ads/web", "A100", 142, NOV + 10 * H, NOV + 10 * H + 5400, share="mig")
        b = billref.bill(lg.records(), PRICES, "2026-11")
        x = line(b, "ads/web", "burst", "A100")
        self.assertEqual((x["milli_gpu_seconds"], x["gpu_hours"], x["amount"]), (766800, "0.213000", "0.255600"))

    def test_burst_job_preempted_mid_hour_bills_its_seconds_with_the_topology_premium(self):
        # 2 H100 (nvlink) from 10:00 to 10:25 = 2000 x 1500 = 3,000,000 = 0.833333.. GPU-h
        # x 2.50 x 1.10 = 2.2916666.. -> 2.291667
        lg = Ledger()
        lg.usage("ads/web", "H100", 2000, NOV + 10 * H, NOV + 10 * H + 1500, topology="nvlink", closed="preempted")
        b = billref.bill(lg.records(), PRICES, "2026-11")
        x = line(b, "ads/web", "burst", "H100", "nvlink")
        self.assertEqual((x["milli_gpu_seconds"], x["gpu_hours"], x["amount"]), (3000000, "0.833333", "2.291667"))

    def test_a_guarantee_never_used_is_billed_as_floor_and_due_in_chargeback(self):
        # 8 H100 x 720 h = 5760 GPU-h x 2.50 = 14400
        lg = Ledger()
        lg.guarantee("research/nlp", "H100", 8000)
        b = billref.bill(lg.records(), PRICES, "2026-11")
        x = line(b, "research/nlp", "floor", "H100")
        self.assertEqual((x["gpu_hours"], x["amount"]), ("5760.000000", "14400.000000"))
        self.assertEqual(tenant(b, "research")["due"], "14400.000000")
        self.assertEqual(tenant(b, "research")["amount"], "0.000000")

    def test_showback_reports_the_same_lines_and_charges_nothing(self):
        lg = Ledger()
        lg.guarantee("ads/web", "H100", 8000)
        b = billref.bill(lg.records(), PRICES, "2026-11")
        self.assertEqual(line(b, "ads/web", "floor", "H100")["amount"], "14400.000000")
        self.assertEqual(tenant(b, "ads")["subtotal"], "14400.000000")
        self.assertEqual((tenant(b, "ads")["mode"], tenant(b, "ads")["due"]), ("showback", "0.000000"))

    def test_a_price_change_mid_interval_bills_each_second_at_the_price_in_force(self):
        # 1 H100 from Nov 15 12:00 to Nov 16 12:00; 3.00 from Nov 16 00:00:
        # 12 h x 2.50 + 12 h x 3.00 = 66
        change = NOV + 15 * 86400
        prices = json.loads(json.dumps(PRICES))
        prices["versions"].append({"effective": change, "gpu_types": {"H100": "3.00"}})
        lg = Ledger()
        lg.usage("ads/web", "H100", 1000, change - 12 * H, change + 12 * H)
        b = billref.bill(lg.records(), prices, "2026-11")
        x = line(b, "ads/web", "burst", "H100")
        self.assertEqual((x["milli_gpu_seconds"], x["gpu_hours"], x["amount"]), (86400000, "24.000000", "66.000000"))

    def test_a_time_sliced_replica_bills_its_share(self):
        # 250 milli x 2 h = 0.5 GPU-h x 0.80 = 0.40
        lg = Ledger()
        lg.usage("ads/nb", "L40S", 250, NOV, NOV + 2 * H, share="timeslice")
        x = line(billref.bill(lg.records(), PRICES, "2026-11"), "ads/nb", "burst", "L40S")
        self.assertEqual((x["gpu_hours"], x["amount"]), ("0.500000", "0.400000"))

    def test_nested_guarantees_bill_each_tenant_its_own_floor(self):
        # research 24, research/nlp 16, research/nlp/x 4: own floors 8, 12, 4 GPUs
        # x 720 h x 2.50 = 14400, 21600, 7200; research's subtotal 43200
        lg = Ledger()
        lg.guarantee("research", "H100", 24000)
        lg.guarantee("research/nlp", "H100", 16000)
        lg.guarantee("research/nlp/x", "H100", 4000)
        b = billref.bill(lg.records(), PRICES, "2026-11")
        self.assertEqual(line(b, "research", "floor", "H100")["amount"], "14400.000000")
        self.assertEqual(line(b, "research/nlp", "floor", "H100")["amount"], "21600.000000")
        self.assertEqual(line(b, "research/nlp/x", "floor", "H100")["amount"], "7200.000000")
        self.assertEqual(tenant(b, "research")["subtotal"], "43200.000000")

    def test_a_guarantee_change_mid_month_changes_the_floor_from_its_start(self):
        # 8 H100 for 15 days then 4: (8 x 360 + 4 x 360) GPU-h x 2.50 = 10800
        lg = Ledger()
        lg.guarantee("research/nlp", "H100", 8000)
        lg.guarantee("research/nlp", "H100", 4000, start=NOV + 15 * 86400)
        x = line(billref.bill(lg.records(), PRICES, "2026-11"), "research/nlp", "floor", "H100")
        self.assertEqual((x["gpu_hours"], x["amount"]), ("4320.000000", "10800.000000"))

    def test_guaranteed_usage_pays_only_the_topology_surcharge(self):
        # 4 H100 block for 1 h, guaranteed: 4 GPU-h x 2.50 x (1.25 - 1) = 2.50; "any": 0
        lg = Ledger()
        lg.guarantee("research/nlp", "H100", 8000)
        lg.usage("research/nlp", "H100", 4000, NOV, NOV + H, cls="guaranteed", topology="block")
        lg.usage("research/nlp", "H100", 1000, NOV, NOV + H, cls="guaranteed")
        b = billref.bill(lg.records(), PRICES, "2026-11")
        self.assertEqual(line(b, "research/nlp", "guaranteed", "H100", "block")["amount"], "2.500000")
        self.assertEqual(line(b, "research/nlp", "guaranteed", "H100")["amount"], "0.000000")
        self.assertEqual(tenant(b, "research/nlp")["amount"], "14402.500000")

    def test_amounts_and_hours_round_half_even_at_the_sixth_decimal(self):
        # price 0.000001: 1,800,000 milli-GPU-s = 0.5 h -> 0.0000005 -> 0.000000 (even);
        # 5,400,000 = 1.5 h -> 0.0000015 -> 0.000002.  9 milli x 1 s = 0.0000025 h -> 0.000002
        prices = {"versions": [{"effective": NOV, "gpu_types": {"H100": "0.000001", "A100": "0.000001"}}]}
        lg = Ledger()
        lg.usage("a/x", "H100", 1000, NOV, NOV + 1800)
        lg.usage("a/y", "H100", 1000, NOV, NOV + 5400)
        lg.usage("a/z", "A100", 9, NOV, NOV + 1)
        b = billref.bill(lg.records(), prices, "2026-11")
        self.assertEqual(line(b, "a/x", "burst", "H100")["amount"], "0.000000")
        self.assertEqual(line(b, "a/y", "burst", "H100")["amount"], "0.000002")
        self.assertEqual(line(b, "a/z", "burst", "A100")["gpu_hours"], "0.000002")

    def test_a_total_is_the_rounding_of_the_exact_sum_not_the_sum_of_rounded_lines(self):
        # two lines of 0.0000005 each print 0.000000; their tenant's amount is 0.000001
        prices = {"versions": [{"effective": NOV, "gpu_types": {"H100": "0.000001"}}]}
        lg = Ledger()
        lg.usage("a/x", "H100", 1000, NOV, NOV + 1800)
        lg.usage("a/x", "H100", 1000, NOV, NOV + 1800, topology="block")
        b = billref.bill(lg.records(), prices, "2026-11")
        self.assertEqual([x["amount"] for x in tenant(b, "a/x")["lines"]], ["0.000000", "0.000000"])
        self.assertEqual(tenant(b, "a/x")["amount"], "0.000001")

    def test_seconds_before_any_price_or_of_an_unpriced_type_are_unpriced_never_dropped(self):
        # 1 H100 for 2 h, the first hour before the first price; 1 B200 (no price) for 1 h
        prices = {"versions": [{"effective": NOV + H, "gpu_types": {"H100": "2.50"}}]}
        lg = Ledger()
        lg.usage("a/x", "H100", 1000, NOV, NOV + 2 * H)
        lg.usage("a/x", "B200", 1000, NOV, NOV + H)
        b = billref.bill(lg.records(), prices, "2026-11")
        self.assertEqual(line(b, "a/x", "unpriced", "H100")["gpu_hours"], "1.000000")
        self.assertEqual(line(b, "a/x", "unpriced", "B200")["amount"], "0.000000")
        self.assertEqual(line(b, "a/x", "burst", "H100")["amount"], "2.500000")

    def test_an_interval_still_open_runs_until_as_of_and_one_across_the_month_is_clipped(self):
        # open since Oct 31 23:00, as_of Nov 1 05:00: 5 h of November
        lg = Ledger()
        lg.usage("a/x", "H100", 1000, NOV - H)
        b = billref.bill(lg.records(), PRICES, "2026-11", as_of=NOV + 5 * H)
        self.assertEqual(b["as_of"], NOV + 5 * H)
        self.assertEqual(line(b, "a/x", "burst", "H100")["gpu_hours"], "5.000000")
        b = billref.bill(lg.records(), PRICES, "2026-11")
        self.assertEqual(line(b, "a/x", "burst", "H100")["gpu_hours"], "720.000000")

    def test_a_tenant_scope_shows_its_subtree_only(self):
        lg = Ledger()
        lg.usage("research/nlp", "H100", 1000, NOV, NOV + H)
        lg.usage("research/cv", "H100", 1000, NOV, NOV + H)
        lg.usage("ads/web", "H100", 1000, NOV, NOV + H)
        b = billref.bill(lg.records(), PRICES, "2026-11", tenant="research/nlp")
        self.assertEqual([t["tenant"] for t in b["tenants"]], ["research/nlp"])
        b = billref.bill(lg.records(), PRICES, "2026-11", tenant="research")
        self.assertEqual([t["tenant"] for t in b["tenants"]], ["research", "research/cv", "research/nlp"])

    def test_a_tenant_is_listed_for_usage_or_a_guarantee_in_the_period_not_for_older_records(self):
        # old/x: used and guaranteed in October only (guarantee removed Oct 31) -> not in November
        # new/y: guarantee from Nov 20 -> listed, with its ancestor
        lg = Ledger()
        lg.usage("old/x", "H100", 1000, NOV - 10 * H, NOV - 9 * H)
        lg.guarantee("old/x", "H100", 1000, start=NOV - 40 * 86400)
        lg.guarantee("old/x", "H100", 0, start=NOV - 86400)
        lg.guarantee("new/y", "H100", 1000, start=NOV + 19 * 86400)
        b = billref.bill(lg.records(), PRICES, "2026-11")
        self.assertEqual([t["tenant"] for t in b["tenants"]], ["new", "new/y"])
        self.assertEqual(line(b, "new/y", "floor", "H100")["gpu_hours"], "264.000000")

    def test_lines_are_sorted_by_kind_then_gpu_type_then_topology(self):
        lg = Ledger()
        lg.guarantee("a/x", "H100", 1000)
        lg.usage("a/x", "H100", 1000, NOV, NOV + H, topology="nvlink")
        lg.usage("a/x", "A100", 1000, NOV, NOV + H)
        lg.usage("a/x", "H100", 1000, NOV, NOV + H, cls="guaranteed")
        b = billref.bill(lg.records(), PRICES, "2026-11")
        self.assertEqual([(x["kind"], x["gpu_type"], x["topology"]) for x in tenant(b, "a/x")["lines"]],
                         [("floor", "H100", "any"), ("guaranteed", "H100", "any"), ("burst", "A100", "any"),
                          ("burst", "H100", "nvlink")])


class IdleIdentity(unittest.TestCase):
    def test_an_hour_splits_into_shares_idle_held_in_guarantees_and_unowned_idle(self):
        # 8 H100; a holds 4; in hour 0 a runs 2 whole (guaranteed), b an MPS 500 share (burst):
        # physical 28.8 M; whole 7.2 M; mps 1.8 M; idle 19.8 M; a's idle floor 4000 x 3600 - 7.2 M
        # = 7.2 M; unowned 12.6 M
        lg = Ledger()
        lg.capacity("H100", 8000)
        lg.guarantee("a", "H100", 4000)
        lg.usage("a/p", "H100", 2000, NOV, NOV + H, cls="guaranteed")
        lg.usage("b/p", "H100", 500, NOV, NOV + H, share="mps")
        b = billref.bill(lg.records(), PRICES, "2026-11", hourly=True)
        h0 = b["hourly"][0]
        self.assertEqual((h0["hour"], h0["gpu_type"]), (NOV, "H100"))
        self.assertEqual([h0[f] for f in billref.FLEET_FIELDS],
                         [28800000, 7200000, 0, 1800000, 0, 7200000, 12600000])
        self.assertEqual(len(b["hourly"]), 720)
        self.assertEqual(b["fleet"][0]["physical"], 8000 * 720 * H)

    def test_idle_in_guarantees_never_exceeds_idle(self):
        # 2 H100, a holds 2 but b bursts on 1.5 of them: idle 0.5 GPU, all of it in a's guarantee
        lg = Ledger()
        lg.capacity("H100", 2000)
        lg.guarantee("a", "H100", 2000)
        lg.usage("b/p", "H100", 1500, NOV, NOV + H)
        h0 = billref.bill(lg.records(), PRICES, "2026-11", hourly=True)["hourly"][0]
        self.assertEqual((h0["idle_in_guarantees"], h0["idle_unowned"]), (500 * H, 0))

    def test_a_nested_guarantee_is_held_once_by_its_outermost_tenant(self):
        # org 4 GPUs with team 3 inside: held 4 GPUs, not 7; team runs 1 guaranteed: idle held 3
        lg = Ledger()
        lg.capacity("H100", 8000)
        lg.guarantee("org", "H100", 4000)
        lg.guarantee("org/team", "H100", 3000)
        lg.usage("org/team/p", "H100", 1000, NOV, NOV + H, cls="guaranteed")
        h0 = billref.bill(lg.records(), PRICES, "2026-11", hourly=True)["hourly"][0]
        self.assertEqual((h0["idle_in_guarantees"], h0["idle_unowned"]), (3000 * H, 4000 * H))

    def test_capacity_added_mid_hour_counts_from_its_start(self):
        lg = Ledger()
        lg.capacity("H100", 8000)
        lg.capacity("H100", 16000, start=NOV + 1800)
        h0 = billref.bill(lg.records(), PRICES, "2026-11", hourly=True)["hourly"][0]
        self.assertEqual(h0["physical"], 8000 * 1800 + 16000 * 1800)


class Chain(unittest.TestCase):
    def setUp(self):
        lg = Ledger()
        lg.capacity("H100", 8000)
        lg.usage("a/x", "H100", 1000, NOV, NOV + H)
        lg.usage("a/y", "H100", 2000, NOV, NOV + H)
        self.lines = lg.lines
        fd, self.path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)

    def tearDown(self):
        os.unlink(self.path)

    def first_bad(self, lines):
        with open(self.path, "w") as f:
            f.write("".join(x + "\n" for x in lines))
        try:
            billref.read_ledger(self.path)
        except billref.LedgerError as e:
            return e.seq
        return None

    def test_an_intact_chain_verifies_and_the_cli_prints_its_head(self):
        self.assertIsNone(self.first_bad(self.lines))
        out = subprocess.run([sys.executable, billref.__file__, "--ledger", self.path, "--verify"],
                             capture_output=True, text=True, check=True)
        self.assertEqual(json.loads(out.stdout)["records"], 5)

    def test_an_edited_record_is_caught_by_the_next_ones_prev(self):
        # a JSON-lines export has no stored hashes: the edit shows as the next record's prev
        bad = list(self.lines)
        bad[2] = bad[2].replace('"milli_gpus":1000', '"milli_gpus":100')
        self.assertEqual(self.first_bad(bad), 4)

    def test_a_record_not_in_canonical_text_is_named(self):
        bad = list(self.lines)
        bad[2] = bad[2].replace('"milli_gpus":1000,', '"milli_gpus":1000 ,')
        self.assertEqual(self.first_bad(bad), 3)

    def test_a_deleted_record_is_named(self):
        self.assertEqual(self.first_bad(self.lines[:1] + self.lines[2:]), 2)

    def test_reordered_records_are_named(self):
        bad = list(self.lines)
        bad[1], bad[2] = bad[2], bad[1]
        self.assertEqual(self.first_bad(bad), 2)

    def test_the_cli_exits_1_naming_the_first_bad_record(self):
        with open(self.path, "w") as f:
            f.write("".join(x + "\n" for x in self.lines[:1] + self.lines[2:]))
        out = subprocess.run([sys.executable, billref.__file__, "--ledger", self.path, "--verify"],
                             capture_output=True, text=True)
        self.assertEqual((out.returncode, json.loads(out.stdout)["first_bad"]), (1, 2))


class BadInput(unittest.TestCase):
    def test_a_price_with_seven_decimals_or_negative_is_refused_naming_the_field(self):
        for p in ("2.5000001", "-1.00"):
            with self.assertRaisesRegex(billref.InputError, "versions\\[0\\].gpu_types.H100"):
                billref.bill([], {"versions": [{"effective": NOV, "gpu_types": {"H100": p}}]}, "2026-11")

    def test_a_bad_period_is_refused(self):
        with self.assertRaisesRegex(billref.InputError, "period"):
            billref.bill([], PRICES, "2026-13")


if __name__ == "__main__":
    unittest.main()

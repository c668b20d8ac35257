#!/usr/bin/env python3
"""coverage_summary.py - the per-folder table `make coverage` prints.

Reads gcovr's --json-summary (totals per source file, paths relative to the
repository root) and prints, for each folder of src/, the lines and branches
the tests reached, then the whole of src/, then the three files of each folder
with the most lines no test reaches (where a new test buys the most).

    scripts/coverage_summary.py build-cov/coverage/files.json
"""
import json
import sys

FOLDERS = ["core", "store", "agent", "server", "spec", "eventlog", "metering",
           "cli", "util", "sim", "config", "tools"]
WORST_FILES = 3


def folder_of(path):
    """The src/ folder a file belongs to ('agent' for src/agent/gpu/sim.c)."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "src" else None


def percent(covered, total):
    return "-" if total == 0 else f"{100.0 * covered / total:5.1f}%"


def row(name, t):
    return (f"{name:<12} {percent(t['lc'], t['lt']):>7} {t['lc']:>6}/{t['lt']:<6} "
            f"{percent(t['bc'], t['bt']):>7} {t['bc']:>6}/{t['bt']:<6}")


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: coverage_summary.py FILES_JSON\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        files = json.load(f)["files"]
    zero = {"lc": 0, "lt": 0, "bc": 0, "bt": 0}
    totals = {name: dict(zero) for name in FOLDERS}
    worst = {name: [] for name in FOLDERS}
    for entry in files:
        name = folder_of(entry["filename"])
        if name not in totals:
            continue
        t = totals[name]
        t["lc"] += entry["line_covered"]
        t["lt"] += entry["line_total"]
        t["bc"] += entry["branch_covered"]
        t["bt"] += entry["branch_total"]
        missed = entry["line_total"] - entry["line_covered"]
        worst[name].append((missed, entry["filename"], entry["line_covered"], entry["line_total"]))
    whole = dict(zero)
    for t in totals.values():
        for key in whole:
            whole[key] += t[key]

    print(f"{'src/':<12} {'lines':>7} {'reached':>13} {'branches':>8} {'reached':>13}")
    for name in FOLDERS:
        print(row(name, totals[name]))
    print(row("all of src", whole))
    print()
    print(f"files with the most lines no test reaches ({WORST_FILES} per folder):")
    for name in FOLDERS:
        for missed, path, covered, total in sorted(worst[name], reverse=True)[:WORST_FILES]:
            print(f"  {path:<40} {missed:>5} lines unreached ({percent(covered, total).strip()} reached)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

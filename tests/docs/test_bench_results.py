#!/usr/bin/env python3
"""bench/RESULTS.md's current table names every benchmark, with a date and a real commit.

bench/RESULTS.md opens with "## Current figures": one table, a row per
figure, whose columns include "benchmark", "date" and "commit".  This test
fails when

- a benchmark has no row: every `bench/AREA/run` script, every program
  built from `bench/AREA/bench_*.c` or named by an `add_executable(bench_...)`
  in the CMake files, every `build/bin/bench_*` of this build (GP_BIN), and
  every folder under bench/ with neither (an analysis, such as
  bench/fairness) must be named in some row's "benchmark" cell;
- a row names a benchmark that no longer exists;
- a row's date is not a date (YYYY-MM-DD) or its commit is not one that
  `git log` of this checkout reaches;
- a section below the table, about a benchmark, is dated later than that
  benchmark's newest row (figures added to the history, the table not
  updated).

Outside a git checkout of this tree (a tarball, even one unpacked inside
another repository) or in a shallow clone the commit check is skipped with
a note.  It runs no benchmark: it reads files, and asks git.
"""
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(ROOT, "bench", "RESULTS.md")


def current_table(text):
    """(header cells, [row cells]) of the first table under "## Current figures"."""
    start = text.find("\n## Current figures")
    assert start >= 0, "bench/RESULTS.md has no '## Current figures' section"
    section = text[start + 1:]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    assert len(lines) >= 3, "no table under '## Current figures'"
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    return [c.lower() for c in cells[0]], cells[2:]


def benchmarks():
    """{name that must appear in a row: where it comes from}."""
    want = {}
    for area in sorted(glob.glob(os.path.join(ROOT, "bench", "*", ""))):
        rel = os.path.relpath(area, ROOT)
        found = False
        run = os.path.join(area, "run")
        if os.path.isfile(run) and os.access(run, os.X_OK):
            want[rel + "/run"] = rel + "/run"
            found = True
        for src in glob.glob(os.path.join(area, "bench_*.c")):
            want[os.path.basename(src)[:-2]] = os.path.relpath(src, ROOT)
            found = True
        if not found:
            want[rel] = rel + "/ (no run script, no program)"
    for cm in [os.path.join(ROOT, "CMakeLists.txt")] + glob.glob(os.path.join(ROOT, "bench", "*", "CMakeLists.txt")):
        with open(cm) as f:
            for name in re.findall(r"add_executable\(\s*(bench_\w+)", f.read()):
                want[name] = os.path.relpath(cm, ROOT)
    bindir = os.environ.get("GP_BIN") or os.path.join(ROOT, "build", "bin")
    for prog in glob.glob(os.path.join(bindir, "bench_*")):
        if os.access(prog, os.X_OK):
            want[os.path.basename(prog)] = prog
    return want


def named(cell):
    """The benchmark names a "benchmark" cell gives, in backquotes."""
    return re.findall(r"`([^`]+)`", cell)


def newest_sections(text, known):
    """{benchmark: the newest date in the headings of the sections about it}.

    Below the current table each section's heading says its date; a heading
    names its benchmark in backquotes (`build/bin/` dropped), or else
    belongs to the benchmarks of the "## " section it sits in."""
    history = text[text.index("\n## Current figures") + 1:]
    history = history[history.find("\n## ", 1) + 1:]
    newest, area = {}, []
    for line in history.splitlines():
        m = re.match(r"(##+) (.*)", line)
        if not m:
            continue
        names = [n.replace("build/bin/", "", 1) for n in named(m.group(2))]
        names = [n for n in names if n in known]
        if len(m.group(1)) == 2:
            area = names
        for name in names or area:
            for date in re.findall(r"\d{4}-\d{2}-\d{2}", m.group(2)):
                newest[name] = max(newest.get(name, date), date)
    return newest


def git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True, text=True)
    except FileNotFoundError:  # no git installed: as outside a checkout
        return subprocess.CompletedProcess(args, 127, "", "git: not found")


def commits_checkable():
    top = git("rev-parse", "--show-toplevel")
    if top.returncode != 0 or os.path.realpath(top.stdout.strip()) != os.path.realpath(ROOT):
        return "not a git checkout"
    if git("rev-parse", "--verify", "--quiet", "HEAD").returncode != 0:
        return "a repository with no commit"
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        return "a shallow clone"
    return None


def check_rows(header, rows, want):
    """Failures of the rows themselves; the names they mention."""
    b, d, c = header.index("benchmark"), header.index("date"), header.index("commit")
    failures, mentioned = [], set()
    for row in rows:
        names = named(row[b])
        if not names:
            failures.append("row names no benchmark in backquotes: %s" % row[b])
        for name in names:
            mentioned.add(name)
            if not (name in want or os.path.exists(os.path.join(ROOT, name))):
                failures.append("row names %s, which is neither a benchmark nor a file" % name)
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", row[d]):
            failures.append("%s: date %r is not YYYY-MM-DD" % (row[b], row[d]))
        if not re.fullmatch(r"[0-9a-f]{7,40}", row[c]):
            failures.append("%s: commit %r is not a commit hash" % (row[b], row[c]))
    return failures, mentioned


def check_staleness(text, header, rows, known):
    """A section below dated later than its benchmark's newest row."""
    b, d = header.index("benchmark"), header.index("date")
    latest = {}
    for row in rows:
        for name in named(row[b]):
            latest[name] = max(latest.get(name, row[d]), row[d])
    return ["%s: a section below is dated %s, its newest row %s: is the row stale?" % (name, date, latest[name])
            for name, date in sorted(newest_sections(text, known).items())
            if name in latest and latest[name] < date]


def check_commits(header, rows):
    """Commits that git log does not reach (nothing where git cannot tell)."""
    why_not = commits_checkable()
    if why_not:
        print("note: %s, so the table's commits are not checked" % why_not)
        return []
    commits = {row[header.index("commit")] for row in rows}
    return ["commit %s is not in this checkout's git log" % commit for commit in sorted(commits)
            if re.fullmatch(r"[0-9a-f]{7,40}", commit)
            and git("merge-base", "--is-ancestor", commit, "HEAD").returncode != 0]


def main():
    with open(RESULTS) as f:
        text = f.read()
    try:
        header, rows = current_table(text)
    except AssertionError as e:
        print("FAIL %s" % e)
        return 1
    missing = [col for col in ("benchmark", "date", "commit") if col not in header]
    if missing:
        print("FAIL the current table has no %s column: %s" % (", ".join(missing), header))
        return 1
    failures = ["row has %d cells, the header %d: %s" % (len(row), len(header), row)
                for row in rows if len(row) != len(header)]
    rows = [row for row in rows if len(row) == len(header)]
    want = benchmarks()
    row_failures, mentioned = check_rows(header, rows, want)
    failures += row_failures
    failures += ["%s (%s) has no row in bench/RESULTS.md's current table" % (name, source)
                 for name, source in sorted(want.items()) if name not in mentioned]
    failures += check_staleness(text, header, rows, set(want) | mentioned)
    failures += check_commits(header, rows)
    for f in failures:
        print("FAIL " + f)
    if not failures:
        print("ok   %d rows, %d benchmarks named" % (len(rows), len(want)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

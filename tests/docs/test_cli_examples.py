#!/usr/bin/env python3
"""Every example of docs/cli.md still works, against a real gpupoold.

docs/cli.md shows commands in ```console blocks: a line "$ COMMAND" is run
(by bash, in the repository root, with this build's gpupool first on PATH
and GPUPOOL_SERVER / GPUPOOL_TOKEN pointing at a fresh daemon on
examples/fleet-mixed.yaml, the admin token), in document order; the lines
after it, up to the next "$", are its documented output.  A command must
exit 0, or the code its "# exit N" comment names.  Its output must start
like the documented one: the same first line when that line is a table
header (only upper-case words), else the same first word.  Ids, times and
usage figures are not compared: they differ from run to run.

README.md's quick tour may use only commands docs/cli.md documents.  The
same file is the source of man/gpupool.1: the test also regenerates
the man page and fails if man/gpupool.1 is stale (run
`scripts/md2man.py docs/cli.md gpupool 1 > man/gpupool.1`), and renders it
with `man -l` where man is installed.
"""
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import gpd  # noqa: E402

MAN_PAGES = [("docs/cli.md", "gpupool", "1"), ("docs/gpupoold.md", "gpupoold", "8")]


def examples(path):
    """[(command, expected exit code, documented output lines)] in order."""
    out, block, current = [], False, None
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("```"):
                block = line.strip() == "```console"
                current = None
                continue
            if not block:
                continue
            if line.startswith("$ "):
                cmd = line[2:]
                m = re.search(r"\s+#\s*exit (\d+)\s*$", cmd)
                code = int(m.group(1)) if m else 0
                cmd = cmd[:m.start()] if m else cmd
                current = (cmd, code, [])
                out.append(current)
            elif current:
                current[2].append(line)
    return out


def is_header(line):
    words = line.split()
    return bool(words) and all(re.fullmatch(r"[A-Z][A-Z-]*", w) for w in words)


def check(d, cmd, code, documented):
    env = dict(os.environ, GPUPOOL_SERVER=d.url, GPUPOOL_TOKEN=d.token, HOME=d.dir,
               PATH=gpd.BIN + os.pathsep + os.environ["PATH"])
    p = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    got = (p.stdout + p.stderr).splitlines()
    assert p.returncode == code, "%s: exit %d, documented %d\n%s%s" % (cmd, p.returncode, code, p.stdout, p.stderr)
    if documented:
        first = documented[0]
        if is_header(first):
            assert got and got[0].split() == first.split(), "%s: first line %r, documented %r" % (cmd, got[:1], first)
        else:
            assert got and got[0].split()[:1] == first.split()[:1], "%s: output %r, documented %r" % (cmd, got[:1], first)


def test_every_example_of_the_cli_reference_runs(d):
    cases = examples(os.path.join(ROOT, "docs", "cli.md"))
    assert len(cases) >= 20, len(cases)
    for cmd, code, documented in cases:
        check(d, cmd, code, documented)
        time.sleep(0.05)


def slurm_table_commands(path):
    """The gpupool commands of the "Coming from Slurm" table, as written."""
    with open(path) as f:
        text = f.read()
    section = text[text.index("## Coming from Slurm"):]
    section = section[:section.index("\n## ", 1)]
    cmds = []
    for row in re.findall(r"^\|(.*)\|\s*$", section, re.M):
        cells = [c.strip() for c in row.split("|")]
        if len(cells) >= 2:
            cmds += [c for c in re.findall(r"`([^`]*)`", cells[1]) if c.startswith("gpupool ")]
    return cmds


def test_the_slurm_table_names_real_commands_and_flags(d):
    """Each command of the table is one the CLI has (its --help answers),
    with every sub-command and flag it writes in that help."""
    cmds = slurm_table_commands(os.path.join(ROOT, "docs", "cli.md"))
    assert len(cmds) >= 30, cmds
    gpupool = os.path.join(gpd.BIN, "gpupool")
    for cmd in cmds:
        words = cmd.split()
        p = subprocess.run([gpupool, words[1], "--help"], capture_output=True, text=True, timeout=30)
        helptext = p.stdout + p.stderr
        assert p.returncode == 0 and "usage: gpupool " + words[1] in helptext, (cmd, helptext)
        if len(words) > 2 and re.fullmatch(r"[a-z][a-z-]*", words[2]):
            assert "gpupool %s %s" % (words[1], words[2]) in helptext, (cmd, helptext)
        for flag in (w.split("=")[0] for w in words[2:] if w.startswith("-") and w != "--"):
            if flag == "...":
                continue
            assert re.search(r"(^|[\s\[|(])%s\b" % re.escape(flag), helptext), (cmd, flag, helptext)


def test_the_readme_tour_uses_only_documented_commands(d):
    with open(os.path.join(ROOT, "docs", "cli.md")) as f:
        documented = set(re.findall(r"^### (\S+) ", f.read(), re.M))
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    tour = readme[readme.index("## Quick tour"):]
    tour = tour[:tour.index("\n## ", 1)]
    used = re.findall(r"^gpupool (\S+)", tour, re.M)
    assert len(used) >= 5, used
    for command in used:
        assert command in documented, "README's tour uses gpupool %s, which docs/cli.md does not document" % command


def test_the_man_pages_are_generated_from_the_docs(d):
    for doc, name, section in MAN_PAGES:
        gen = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "md2man.py"), os.path.join(ROOT, doc),
                              name, section], capture_output=True, text=True, check=True).stdout
        page = os.path.join(ROOT, "man", "%s.%s" % (name, section))
        with open(page) as f:
            assert f.read() == gen, "%s is stale: scripts/md2man.py %s %s %s > %s" % (page, doc, name, section,
                                                                                      os.path.relpath(page, ROOT))
        if shutil.which("man"):
            p = subprocess.run(["man", "-l", page], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="100"))
            assert p.returncode == 0 and name in p.stdout, p.stderr


if __name__ == "__main__":
    fleet = os.path.join(ROOT, "examples", "fleet-mixed.yaml")
    failed = 0
    for t in (test_every_example_of_the_cli_reference_runs, test_the_slurm_table_names_real_commands_and_flags,
              test_the_readme_tour_uses_only_documented_commands,
              test_the_man_pages_are_generated_from_the_docs):
        d = gpd.Daemon(fleet=fleet)
        t0 = time.time()
        try:
            d.start()
            t(d)
            print("ok   %s (%.1fs)" % (t.__name__, time.time() - t0), flush=True)
        except Exception as e:  # noqa: BLE001 - report and go on
            failed += 1
            print("FAIL %s: %s" % (t.__name__, e), flush=True)
        finally:
            d.stop()
    sys.exit(1 if failed else 0)

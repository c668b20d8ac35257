#!/usr/bin/env python3
"""md2man.py - a man page (roff) from one of the project's Markdown docs.

The CLI reference lives once, in docs/cli.md (and the daemon's in
docs/gpupoold.md); the man pages under man/ are generated from them so they
cannot drift:

    scripts/md2man.py docs/cli.md gpupool 1 > man/gpupool.1
    man -l man/gpupool.1

It knows the subset of Markdown those docs use: "# title - summary" (the
NAME line), "## heading" (.SH), "### heading" (.SS), paragraphs, "- " lists,
fenced code blocks (shown as is), tables (a tagged paragraph per row), `code`
(bold) and *emphasis* (italic), "1. " numbered lists.  Python standard library only; the output
depends on nothing but the input (no dates), so a test can regenerate it
and compare (tests/docs).
"""
import re
import sys


def escape(text):
    text = text.replace("\\", "\\e")
    text = text.replace("-", "\\-")
    return text


def inline(text):
    out = []
    for part in re.split(r"(`[^`]*`)", text):
        if part.startswith("`") and part.endswith("`") and len(part) >= 2:
            out.append("\\fB" + escape(part[1:-1]) + "\\fR")
        else:
            part = escape(part)
            part = re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", part)
            part = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\\fI\1\\fR", part)
            part = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", part)  # links: their text
            out.append(part)
    line = "".join(out)
    if line.startswith(".") or line.startswith("'"):
        line = "\\&" + line
    return line


def table(rows):
    """A table as a list of tagged paragraphs: the first column is the tag,
    the others (headed by their column names) the text, so rows wrap."""
    cells = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", r.strip().strip("|"))] for r in rows
             if not re.match(r"^\s*\|?\s*:?-+", r)]
    head, body = cells[0], cells[1:]
    lines = []
    for r in body:
        lines += [".TP", inline(r[0])]
        rest = ["%s: %s" % (head[i], c) if i < len(head) else c for i, c in enumerate(r) if i > 0 and c]
        lines.append(inline("; ".join(rest)))
    return lines


def convert(md, name, section):
    lines = md.splitlines()
    out = ['.TH %s %s "" "gpupool" "gpupool manual"' % (name.upper(), section)]
    i = 0
    para = []

    def flush():
        if para:
            out.append(".PP")
            out.extend(inline(p) for p in para)
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("# "):
            flush()
            title = line[2:].strip()
            summary = title.split(" - ", 1)[1] if " - " in title else title
            out += [".SH NAME", escape("%s \\- %s" % (name, summary)).replace("\\e\\-", "\\-")]
        elif line.startswith("## "):
            flush()
            out.append(".SH " + escape(line[3:].strip().upper()))
        elif line.startswith("### "):
            flush()
            out.append(".SS " + inline(line[4:].strip()))
        elif line.startswith("```"):
            flush()
            i += 1
            out += [".PP", ".nf", ".RS 2"]
            while i < len(lines) and not lines[i].startswith("```"):
                out.append(escape(lines[i]) if not lines[i].startswith(".") else "\\&" + escape(lines[i]))
                i += 1
            out += [".RE", ".fi"]
        elif line.lstrip().startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(lines[i])
                i += 1
            out += [".PP"] + table(rows)
            continue
        elif line.startswith("- ") or re.match(r"^\d+\. ", line):
            flush()
            bullet = "\\(bu" if line.startswith("- ") else line.split(" ", 1)[0]
            item = [line.split(" ", 1)[1]]
            while i + 1 < len(lines) and lines[i + 1].startswith("  ") and lines[i + 1].strip():
                i += 1
                item.append(lines[i].strip())
            out += [".IP %s %d" % (bullet, len(bullet) + 1 if bullet[0].isdigit() else 2)] + [inline(x) for x in item]
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: md2man.py DOC.md NAME SECTION")
    with open(sys.argv[1]) as f:
        sys.stdout.write(convert(f.read(), sys.argv[2], sys.argv[3]))


if __name__ == "__main__":
    main()

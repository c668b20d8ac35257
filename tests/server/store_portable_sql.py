#!/usr/bin/env python3
"""The store's files speak db.h's portable SQL only (src/store/db.h).

The same statements must run on SQLite and PostgreSQL, so the store's
files (src/store/store_*.c; store_schema.c and store_schema_pg.c, each
one database's own schema, excepted) must not call sqlite3 directly nor write SQL only
one database takes.  This reads their C string literals and names each
file:line that does, e.g.

    store_jobs.c:42: INSERT OR REPLACE: use ON CONFLICT ... DO UPDATE

Exit 0 when there is none, 1 otherwise.
"""
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STORE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src", "store")

# (pattern in a string literal, what to write instead)
RULES = [
    (r"\bINSERT\s+OR\s+(REPLACE|IGNORE)\b", "INSERT OR REPLACE/IGNORE: use ON CONFLICT ... DO UPDATE/NOTHING"),
    (r"\b(last_insert_rowid|rowid)\b", "rowid: use RETURNING"),
    (r"\bLIMIT\s+-1\b", "LIMIT -1: not PostgreSQL (count the newer rows instead)"),
    (r"\b(ifnull|json_extract|strftime|julianday|datetime|printf)\s*\(", "a SQLite-only function"),
    (r"\b(MAX|MIN|max|min)\([^()]*,", "two-argument max/min: use CASE"),
    (r"\bAS\s+'", "a string as a column alias: quote it with \"\""),
    (r"(\bWHERE|\bAND|\bOR|\()\s*[01]\b(?!\s*=)", "an integer as a boolean: write 1 = 1 or 1 = 0"),
    (r"(?<![\w\".])user(?![\w\"])|(?<=\.)user(?![\w\"])", "the column user unquoted: \"user\" is a PostgreSQL keyword"),
]
SQL_WORDS = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|FROM|WHERE|AND|ON CONFLICT|GROUP BY|ORDER BY|VALUES)\b|,")
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def problems(path):
    found = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    in_comment = False
    for number, line in enumerate(lines, 1):
        code = line
        if in_comment:
            if "*/" not in code:
                continue
            code = code.split("*/", 1)[1]
            in_comment = False
        code = re.sub(r"/\*.*?\*/", "", code)
        if "/*" in code:
            code, in_comment = code.split("/*", 1)[0], True
        if re.search(r"\bsqlite3", code):
            found.append((number, "calls sqlite3 directly: use db.h"))
        for literal in LITERAL.findall(code):
            text = literal.replace('\\"', '"')
            if not SQL_WORDS.search(text):
                continue  # a message or a JSON key, not SQL
            for pattern, why in RULES:
                if re.search(pattern, text):
                    found.append((number, why))
    return found


def main():
    dialect_only = {os.path.join(STORE, f) for f in ("store_schema.c", "store_schema_pg.c")}
    files = sorted(set(glob.glob(os.path.join(STORE, "store_*.c"))) - dialect_only)
    if not files:
        print("no store files under", STORE)
        return 1
    bad = 0
    for path in files:
        for number, why in problems(path):
            print(f"{os.path.basename(path)}:{number}: {why}")
            bad += 1
    print(f"{len(files)} files, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

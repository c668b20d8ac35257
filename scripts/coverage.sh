#!/usr/bin/env bash
# coverage.sh - `make coverage`: builds build-cov with gcov counters
# (GP_COVERAGE=ON, Debug so lines map one to one), runs `make test`'s plain
# suite there under ctest, then has gcovr read the counters of src/ and
# scripts/coverage_summary.py print lines and branches per folder.
# Writes build-cov/coverage/: summary.txt (the table, also printed),
# files.json (gcovr's totals per file), lines.json (gcovr's counts per line
# and function) and html/ (per file and line, for finding what no test
# reaches).  Exits with ctest's status once the figures are written.
set -uo pipefail
cd "$(dirname "$0")/.."

build=build-cov
out=$build/coverage
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S . -B "$build" -DGP_COVERAGE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null || exit 1
cmake --build "$build" -j"$jobs" || exit 1

# Counters add up across runs: start from zero so the figures are this run's.
find "$build" -name '*.gcda' -delete
rm -rf "$out"
mkdir -p "$out/html"

ctest --test-dir "$build" --output-on-failure -j2
rc=$?

# One gcov at a time: gcovr 5.2's -j hangs when a worker fails
# (gcovr/gcovr#673), as on a line it cannot parse; those are skipped and
# named on stderr rather than ending the report.
gcovr --root . --object-directory "$build" --filter 'src/' --gcov-ignore-parse-errors \
      --json-summary "$out/files.json" --json "$out/lines.json" \
      --html-details "$out/html/index.html" || exit 1
python3 scripts/coverage_summary.py "$out/files.json" | tee "$out/summary.txt"
echo "coverage: $out/summary.txt, per line in $out/html/index.html"
if [[ $rc -ne 0 ]]; then
    echo "coverage: ctest failed (status $rc); the figures above count the tests that ran" >&2
fi
exit $rc

#!/usr/bin/env bash
# The default run (`lockstep run`, no flags) passes on impl and reaches every coverage cell the generator can
# produce (docs/search-power.md): the JSON report's coverage.empty_cells is empty.
# Usage: check_default_run.sh LOCKSTEP WORKDIR
set -euo pipefail
lockstep=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
if ! "$lockstep" run --report-dir "$work" > "$work/out.txt" 2>&1; then
  tail -20 "$work/out.txt"; echo "check_default_run: the default run failed"; exit 1
fi
python3 - "$work/lockstep-report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
empty = report["coverage"]["empty_cells"]
cells = sum(len(row) for t in report["coverage"]["cells"].values() for row in t["rows"].values())
if report["count"] != 10000 or report["summary"]["failed"] != 0:
    sys.exit("check_default_run: expected 10,000 passing random programs, got %r" % report["summary"])
if empty:
    print("check_default_run: %d of %d coverage cells empty in the default run:" % (len(empty), cells))
    for e in empty: print("  " + e)
    sys.exit(1)
print("check_default_run: all %d coverage cells reached; %s" % (cells, report["summary"]))
PY

#!/usr/bin/env bash
# The wrong-driver battery: deliberately wrong implementations (plant_error.py) that lockstep MUST reject, each
# at the action that produced the wrong value.
#
#   bash tools/adapters/testing/check_plants.sh LOCKSTEP_BINARY IMPL_DRIVER [WORKDIR]
#   e.g. bash tools/adapters/testing/check_plants.sh build/lockstep build/lockstep-impl-driver build/plants
#
# For every plant kind (plant_error.py kinds) and three paths:
#   fixtures  the error planted into a copy of fixtures/corpus' expected traces, `lockstep replay --engine impl`
#   replay    `lockstep replay` of the shipped corpus on `plant_error.py driver -- IMPL_DRIVER`
#   live      `lockstep run` (named cases + $PLANT_LIVE_COUNT random programs, seed 7) on the same wrapper
# it asserts: every case with a planted error fails, at the planted record (setup or action index), with
# the planted field among the differences of that record (path "w → grad", "w → grad[1]", ...); a shrunk live program (the
# report's program is not the one planted into) need only fail; every case without a plant passes or is
# skipped. One line per (kind, path) with counts; exit 1 with the violations listed when any, 2 on bad usage.
#
# Environment: PLANT_KINDS (space-separated subset of the kinds), PLANT_PATHS (space-separated subset of
# "fixtures replay live", the default), PLANT_LIVE_COUNT (default 40), PYTHON,
# PLANT_JOBS (lockstep runs at a time, default nproc),
# PLANT_RECHECK=1 (run nothing: check the reports already in WORKDIR again).
set -u

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 LOCKSTEP_BINARY IMPL_DRIVER [WORKDIR]" >&2
  exit 2
fi
lockstep=$(realpath "$1")
impl_driver=$(realpath "$2")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
plant="$here/plant_error.py"
corpus="$root/fixtures/corpus"
python=${PYTHON:-python3}
live_count=${PLANT_LIVE_COUNT:-40}
# PLANT_INNER_ARGS: extra arguments for the inner driver, e.g. "--variant unfused": the errors are then planted in
# a legitimately different implementation, whose accepted rounding differences feed the error budget.
read -r -a inner_args <<< "${PLANT_INNER_ARGS:-}"
for f in "$lockstep" "$impl_driver"; do
  if [ ! -x "$f" ]; then echo "check_plants: $f is not an executable" >&2; exit 2; fi
done
if [ $# -eq 3 ]; then
  workdir=$3
  mkdir -p "$workdir" || exit 2
else
  workdir=$(mktemp -d "${TMPDIR:-/tmp}/plants.XXXXXX") || exit 2
fi
workdir=$(realpath "$workdir")
kinds=${PLANT_KINDS:-$("$python" "$plant" kinds)}
paths=${PLANT_PATHS:-fixtures replay live}
seen=" "
for p in $paths; do
  case "$p" in fixtures|replay|live) ;; *) echo "check_plants: unknown path '$p' in PLANT_PATHS (fixtures, replay, live)" >&2; exit 2 ;; esac
  case "$seen" in *" $p "*) echo "check_plants: '$p' twice in PLANT_PATHS" >&2; exit 2 ;; esac
  seen="$seen$p "
done
if [ "$seen" = " " ]; then echo "check_plants: PLANT_PATHS names no path (fixtures, replay, live)" >&2; exit 2; fi
has_path() { case " $paths " in *" $1 "*) return 0 ;; esac; return 1; }
manifest="$workdir/manifest.tsv"
if [ "${PLANT_RECHECK:-0}" = 1 ]; then
  if [ ! -f "$manifest" ]; then echo "check_plants: PLANT_RECHECK=1 but no $manifest" >&2; exit 2; fi
  kinds=""
else
  : > "$manifest"
fi

validate=""
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then validate=/usr/bin/python3; fi
max_jobs=${PLANT_JOBS:-$(nproc 2>/dev/null || echo 2)}

# Runs "$@" in the background, at most $max_jobs at a time.
spawn() {
  while [ "$(jobs -rp | wc -l)" -ge "$max_jobs" ]; do wait -n; done
  "$@" &
}

# One lockstep run: path label, plant log, report dir, then lockstep's arguments. Writes the manifest line of
# the run into its own file (the runs go in parallel).
run_path() {
  local kind=$1 label=$2 log=$3 dir=$4
  shift 4
  timeout 300 "$lockstep" "$@" --report-dir "$dir" > "$dir.out" 2>&1
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$label" "$log" "$dir" $? "$dir.out" > "$dir.manifest"
}

start=$(date +%s)
# The planted corpora first (every kind), checked against the schema in one go (only the fixtures path reads them).
planted_kinds=""
if has_path fixtures; then planted_kinds=$kinds; fi
for kind in $kinds; do
  rm -rf "${workdir:?}/$kind"
  mkdir -p "$workdir/$kind"
done
for kind in $planted_kinds; do
  spawn "$python" "$plant" fixtures --plant "$kind" --in "$corpus" --out "$workdir/$kind/corpus" \
    --log "$workdir/$kind/fixtures.log" 2> "$workdir/$kind/plant-fixtures.err"
done
wait
for kind in $planted_kinds; do
  err="$workdir/$kind/plant-fixtures.err"
  if [ ! -s "$workdir/$kind/fixtures.log" ] || ! grep -q "planted into" "$err" || grep -qv "planted into" "$err"; then
    echo "check_plants: $kind: planting into the corpus failed:" >&2
    cat "$err" >&2
    exit 2
  fi
done
if [ -n "$planted_kinds" ] && [ -n "$validate" ]; then
  corpora=()
  for kind in $planted_kinds; do corpora+=("$workdir/$kind/corpus"); done
  if ! "$validate" "$root/fixtures/validate_fixtures.py" "${corpora[@]}" > "$workdir/validate.out" 2>&1; then
    echo "check_plants: a planted corpus does not validate against fixtures/schema/fixture.schema.json:" >&2
    tail -20 "$workdir/validate.out" >&2
    exit 2
  fi
fi

for kind in $kinds; do
  d="$workdir/$kind"
  # (i) the error in the golden expected traces; the correct impl replayed in-process.
  if has_path fixtures; then
    spawn run_path "$kind" fixtures "$d/fixtures.log" "$d/fixtures" replay --fixtures "$d/corpus" --engine impl
  fi
  # (ii) the shipped corpus replayed through the wrong driver.
  if has_path replay; then
    engine="$(printf '%q ' "$python" "$plant" driver --plant "$kind" --log "$d/replay.log" -- "$impl_driver" "${inner_args[@]}")"
    spawn run_path "$kind" replay "$d/replay.log" "$d/replay" replay --engine "$engine"
  fi
  # (iii) live against LibTorch: the named cases and random programs through the wrong driver.
  if has_path live; then
    engine="$(printf '%q ' "$python" "$plant" driver --plant "$kind" --log "$d/live.log" -- "$impl_driver" "${inner_args[@]}")"
    spawn run_path "$kind" live "$d/live.log" "$d/live" run --engine "$engine" --count "$live_count" --seed 7 \
      --shrink-seconds 2
  fi
done
wait
if [ -n "$kinds" ]; then
  for kind in $kinds; do
    for label in $paths; do
      if [ -f "$workdir/$kind/$label.manifest" ]; then
        cat "$workdir/$kind/$label.manifest"
      else
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$label" "$workdir/$kind/$label.log" "$workdir/$kind/$label" \
          99 "$workdir/$kind/$label.out"
      fi
    done
  done > "$manifest"
  echo "check_plants: planted and ran lockstep in $(( $(date +%s) - start )) s ($max_jobs at a time); work in $workdir"
fi

"$python" - "$manifest" <<'EOF'
import hashlib
import json
import os
import sys

ARROW = " \u2192 "


def sha(program):
    text = json.dumps(program, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def at_path(path, prefix):
    return path == prefix or path.startswith(prefix + "[")


def report_file(d):
    for name in ("replay-report.json", "lockstep-report.json", "report.json"):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return None


def tail(path, n=15):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


# Known holes of lockstep's own checking, found by this battery and not yet closed (each listed in the closing note
# of the stop that found it): (fixture id, planted kind) -> why the plant is not caught. A listed plant must still be
# missed, or the entry fails (the hole closed: remove it); any other missed plant fails as always.
# The hole of AdamW with beta1 = 1 and a parameter listed twice is open (closing notes of issue 32's stops); the corpus
# regenerated for checkpoints shows it again, in the same fixture as before.
KNOWN_HOLES = {
    ("run-1128c5129f1d", "first-exp-avg-scale"): (
        "AdamW with betas (1, 0.999) and p0 listed twice in its group: exp_avg stays exactly 0, but the tolerance of "
        "a repeated update scales it by 2 |g| (2.4e6 here), so a planted 1 is within 4 ULP of that scale; a tighter "
        "scale, beta1 |m| + (1 - beta1) |g|, would catch it (issue 32's stop)"),
}
used_holes = set()

violations = []
notes = []
violation_count = 0
PER_ROW = 4  # violations listed per (kind, path)
missed_total = 0
rows = []
with open(sys.argv[1], encoding="utf-8") as m:
    lines = [l.rstrip("\n").split("\t") for l in m if l.strip()]
for kind, label, log_path, report_dir, rc, out_path in lines:
    where = "%s / %s" % (kind, label)
    rc = int(rc)
    problems = []
    report = report_file(report_dir)
    if rc not in (0, 1) or report is None:
        violations.append("%s: lockstep exited %d%s; its output ends:\n%s" % (
            where, rc, "" if report else " and wrote no JSON report", tail(out_path)))
        violation_count += 1
        rows.append((kind, label, "ERROR", "", "", "", "", ""))
        continue
    log = {}
    try:
        with open(log_path, encoding="utf-8") as f:
            for line in f:
                e = json.loads(line)
                log.setdefault(e["id"], []).append(e)
    except (OSError, ValueError) as e:
        problems.append("cannot read the plant log %s: %s" % (log_path, e))
    with open(report, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    planted = caught = missed = wrong = clean = clean_ok = shrunk = imprecise_planted = known_missed = ended_planted = 0
    paths = set()
    seen = set()
    for c in cases:
        id_ = c["id"]
        seen.add(id_)
        entries = log.get(id_)
        if not entries:
            problems.append("%s: no plant log entry (the wrapper never answered it?): status %s" % (id_, c["status"]))
            continue
        first = entries[0]
        failure = c.get("failure") or {}
        summary = failure.get("summary", "")
        if first["record"] is None:
            clean += 1
            skipped = c.get("skipped") or c.get("known_reason", "").startswith("skipped")
            # imprecise: values whose bound is their own size, listed and never passed (SEMANTICS §9.6), not an alarm
            imprecise = c.get("known_reason", "").startswith("imprecise")
            if c["status"] == "passed" or (c["status"] == "known" and (skipped or imprecise)):
                clean_ok += 1
            else:
                problems.append("%s: nothing was planted but it is %s: %s" % (
                    id_, c["status"], summary or c.get("known_reason", "")))
            continue
        planted += 1
        paths.add(first["path"])
        want = "setup (init)" if first["record"] == "init" else "action %s" % first["record"]
        if c["status"] != "failed":
            # SEMANTICS 9.6: an imprecise case is listed and never passed; a plant inside it is not a silent pass
            # (an L-BFGS step whose search decided within rounding ends the comparison, SEMANTICS 9.2).
            if c["status"] == "known" and c.get("known_reason", "").startswith("imprecise"):
                imprecise_planted += 1
                continue
            # SEMANTICS 9.2, 16: an L-BFGS decision within rounding ended the comparison at or before the planted action
            # (listed in the case's masked entries): every later record follows from it and is not compared.
            ended = [m for m in c.get("masked", []) if m.get("path", "").endswith("decisions") and
                     isinstance(first["record"], int) and m.get("action_index") is not None and
                     m["action_index"] <= first["record"]]
            if c["status"] == "passed" and ended:
                ended_planted += 1
                continue
            if (id_, kind) in KNOWN_HOLES:
                used_holes.add((id_, kind))
                known_missed += 1
                continue
            missed += 1
            problems.append("%s: NOT CAUGHT: planted at %s, %s (%s -> %s), but the case %s" % (
                id_, want, first["path"], ", ".join(first.get("before", [])), ", ".join(first.get("after", [])),
                c["status"]))
            continue
        if (id_, kind) in KNOWN_HOLES:
            problems.append("%s: the known hole is closed (the plant %s was caught): remove it from KNOWN_HOLES" % (
                id_, kind))
        program = failure.get("program")
        if label == "live" and id_.startswith("random-") and program is not None and \
                sha(program) != first.get("program_sha256"):
            shrunk += 1  # the shrunk program is not the one planted into: failing is enough
            caught += 1
            continue
        diffs = failure.get("differences") or []
        got = "setup" if failure.get("at") == "setup" else failure.get("action_index")
        expected_record = "setup" if first["record"] == "init" else first["record"]
        # The planted field must be among the differences of the record that produced it (a wrong moment also
        # makes the parameter disagree with it, and the parameter is listed first).
        if got != expected_record or not any(at_path(x["path"], first["path"]) for x in diffs):
            wrong += 1
            problems.append("%s: caught at the wrong place: planted at %s, %s; failed at %s: %s" % (
                id_, want, first["path"], failure.get("location", "?"), summary))
            continue
        caught += 1
    for id_, entries in log.items():
        if id_ not in seen:
            problems.append("%s: in the plant log but not in the report" % id_)
    missed_total += missed
    shown = problems[:PER_ROW]
    if len(problems) > PER_ROW:
        shown.append("... and %d more like these (all in %s)" % (len(problems) - PER_ROW, report))
    violations += ["%s: %s" % (where, p) for p in shown]
    violation_count += len(problems)
    if imprecise_planted or known_missed or ended_planted:
        notes.append("%s: %d planted case(s) imprecise (not passed), %d in a known hole, %d after an L-BFGS decision "
                     "within rounding ended the comparison" % (where, imprecise_planted, known_missed, ended_planted))
    rows.append((kind, label, str(planted), str(caught), str(missed), str(wrong),
                 "%d/%d" % (clean_ok, clean), ", ".join(sorted(paths, key=lambda p: (len(p), p))[:3]) +
                 (" ..." if len(paths) > 3 else "") + (" (%d shrunk)" % shrunk if shrunk else "")))

header = ("kind", "path", "planted", "caught", "missed", "wrong_place", "clean_ok", "fields")
widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header) - 1)]
for r in [header] + rows:
    print("  ".join(r[i].ljust(widths[i]) for i in range(len(header) - 1)) + "  " + r[-1])
labels_run = {r[1] for r in rows}
if labels_run & {"fixtures", "replay"}:
    for key in sorted(set(KNOWN_HOLES) - used_holes):
        violations.append("known hole %s / %s was not missed on a corpus path (its fixture gone, or the plant caught "
                          "elsewhere): remove it from KNOWN_HOLES" % key)
        violation_count += 1
for n in notes:
    print("note: " + n)
for (id_, kind), why in sorted(KNOWN_HOLES.items()):
    print("known hole: %s / %s%s: %s" % (id_, kind, "" if (id_, kind) in used_holes else " (not planted in this run)", why))
if violations:
    print("\nviolations (%d, at most %d listed per kind and path):" % (violation_count, PER_ROW))
    for v in violations:
        print("  " + v)
    print("\nwrong-driver battery FAILED: %d violation(s), %d planted error(s) not caught by lockstep" %
          (violation_count, missed_total))
    sys.exit(1)
print("\nwrong-driver battery passed: every planted error was caught at its record, every clean case passed")
EOF

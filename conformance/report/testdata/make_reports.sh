#!/usr/bin/env bash
# Writes the sample reports of this folder again (after a change to the report format): five small runs of the
# kinds the report reader must read back exactly (report_reader_test.cc "SampleReports"), also the seeds of
# fuzz/fuzz_report.cc. Paths in them are relative: the runs are made from a scratch folder holding `build`.
#
#   bash conformance/report/testdata/make_reports.sh build
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "$1" && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
ln -s "$build" build
mkdir cases
cp "$here/../../cases/sem12-zero-grad-default-by-version.json" "$here/../../cases/sem14-rmsprop-centered-subtracts-squared-mean.json" cases/
l=build/lockstep
d=build/lockstep-impl-driver
# name, expected exit status, command
sample() {
  local name="$1" expected="$2" code=0
  shift 2
  "$@" --report-dir "out-$name" > /dev/null || code=$?
  [[ $code -eq $expected ]] || { echo "make_reports: $name: exit $code, expected $expected" >&2; exit 1; }
  cp out-"$name"/*-report.json "$here/$name.json"
}
sample passing-in-process 0 $l run --count 3 --seed 1 --cases cases
sample failing-driver 1 $l run --engine "$d --mutant activation_grad_recomputed" --cases cases --count 14 --seed 11
sample shard-1-of-3 0 $l run --count 9 --seed 3 --shard 1/3
sample free-running-variant 0 $l run --engine "$d --variant unfused" --cases cases --count 2 --seed 4
sample replay-wrong-driver 1 $l replay --engine "$d --mutant sgd_dampening_first_step" --only 'tut00*,sem5*'
ls -l "$here"/*.json

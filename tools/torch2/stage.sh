#!/usr/bin/env bash
# The LibTorch 2.x stage (issue 27): lockstep built against Debian 13's LibTorch 2.6 (preset torch2, build-torch2/)
# and checked on it. Runs on a Debian 13 machine, or in tools/torch2/chroot.sh's chroot (tools/setup.sh test runs it
# there on Debian 12). Prints one line per check and a summary; exits non-zero when any check fails.
#
#   bash tools/torch2/stage.sh            # from the source tree's root
#
# The checks:
#   1. ctest --preset torch2: the unit tests (every GoogleTest binary, one test each), the fixtures' checks, replay of
#      the corpus in-process and through the impl driver, the Python adapter's and the capabilities' checks, and the
#      nm check that no binary loading LibTorch uses std::filesystem. Excluded: the long script batteries that the
#      1.13 stage runs (their subject is lockstep itself, not the LibTorch version), the JavaScript adapters, and
#      fixtures_regenerate_identical and fixtures_regenerate_python_oracle (the corpus is 1.13's recording, and
#      corpus/python-oracle python3-torch 1.13's), and maximize_python_oracle (it replays that 1.13 recording on the
#      adapter; step 4 runs its live checks against python3-torch 2.6 instead).
#   2. lockstep run at its defaults (named cases and 10,000 random programs, default --jobs): impl against LibTorch 2.6.
#   3. lockstep replay --engine oracle: the golden corpus (recorded by 1.13) on LibTorch 2.6.
#   4. The named cases alone, on the oracle and on the PyTorch adapter (python3-torch 2.6) in each mode it has; then
#      maximize (SEMANTICS §20): corpus/python-oracle replayed on impl and the impl driver, both run live against
#      python3-torch 2.6 as the oracle with its expectations turned around (SEMANTICS 20.4), and the maximize mutants
#      killed by `lockstep mutants --oracle`.
#   5. The corpus' 2.x recordings (fixtures/corpus/cases-torch2) regenerate byte-identical on this oracle.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=build-torch2
t_stage=$SECONDS
failed=()
step() {  # step NAME COMMAND...: runs it, prints its time and status
  local name="$1"; shift
  local t=$SECONDS
  echo "== torch2: $name"
  if "$@"; then
    echo "== torch2: $name: ok ($((SECONDS - t)) s)"
  else
    echo "== torch2: $name: FAILED ($((SECONDS - t)) s)"
    failed+=("$name")
  fi
}

if ! cmake --preset torch2 > /dev/null || ! cmake --build --preset torch2; then
  echo "== torch2: the build failed"
  exit 1
fi
echo "== torch2: built in $((SECONDS - t_stage)) s against $(./$build/lockstep run --count 0 --report-dir '' 2>/dev/null |
  grep -o 'libtorch-[0-9.]*' | head -1)"

step "ctest" ctest --preset torch2
step "lockstep run (defaults)" ./$build/lockstep run --report-dir $build/stage-run
step "replay of the corpus on the oracle" ./$build/lockstep replay --engine oracle --report-dir $build/stage-replay
named_cases() {
  local ok=0
  ./$build/lockstep run --count 0 --report-dir $build/stage-named || ok=1
  local python_driver="python3 tools/adapters/pytorch_driver.py"
  for mode in single foreach fused; do
    if ! $python_driver --mode $mode < /dev/null > /dev/null 2>&1; then
      echo "named cases: the PyTorch adapter has no mode $mode here (skipped)"
      continue
    fi
    local expectations=fixtures/expectations/pytorch-python.json
    [[ $mode == foreach ]] && expectations=fixtures/expectations/pytorch-python-foreach.json
    [[ $mode == fused ]] && expectations=fixtures/expectations/pytorch-python-fused.json
    ./$build/lockstep run --engine "$python_driver --mode $mode" --count 0 --expectations "$expectations" \
      --report-dir $build/stage-named-$mode || ok=1
  done
  return $ok
}
step "named cases (oracle, PyTorch adapter)" named_cases
# maximize (SEMANTICS §20): corpus/python-oracle (python3-torch 1.13's recording) replayed on impl and the impl
# driver built on 2.6; both live against python3-torch 2.6 as the oracle, whose 2.x differences from the C++ API are
# entries of its expectations file, applied turned around (SEMANTICS 20.4); the maximize mutants killed live and by
# replay.
maximize_checks() {
  local oracle="python3 tools/adapters/pytorch_driver.py"
  local turned=(--oracle "$oracle" --oracle-expectations fixtures/expectations/pytorch-python.json)
  ./$build/lockstep replay --fixtures fixtures/corpus/python-oracle --engine impl --report-dir $build/stage-maximize &&
    ./$build/lockstep replay --fixtures fixtures/corpus/python-oracle --engine ./$build/lockstep-impl-driver \
      --report-dir $build/stage-maximize-driver &&
    ./$build/lockstep run --engine impl "${turned[@]}" --count 3000 --seed 20 --report-dir $build/stage-maximize-live &&
    ./$build/lockstep run --engine ./$build/lockstep-impl-driver "${turned[@]}" --count 1000 --seed 21 \
      --report-dir $build/stage-maximize-live-driver &&
    ./$build/lockstep mutants "${turned[@]}" --only 'maximize_*' --report-dir $build/stage-maximize-mutants
}
step "maximize: against python3-torch 2.6 as the oracle" maximize_checks
# The corpus' 2.x recordings (fixtures/corpus/cases-torch2, SEMANTICS 12.5) are what this oracle records now.
torch2_recordings() {
  local out=$build/stage-recordings
  rm -rf "$out"; mkdir -p "$out"
  ./$build/lockstep fixtures generate --version-dependent-only --out "$out" &&
    diff -r fixtures/corpus/cases-torch2 "$out/corpus/cases-torch2" &&
    echo "the 2.x recordings regenerate byte-identical"
}
step "2.x recordings regenerate identical" torch2_recordings

echo "== torch2: stage took $((SECONDS - t_stage)) s"
if ((${#failed[@]})); then
  echo "== torch2: FAILED: ${failed[*]}"
  exit 1
fi
echo "== torch2: all checks passed"

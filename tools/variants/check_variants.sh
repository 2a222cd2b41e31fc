#!/usr/bin/env bash
# The legitimate variants of impl (tools/variants/variants.h) must pass in every mode: lockstep, free-running
# (error budget) and through impl's protocol driver. A bounded CI guard; the 100,000-program measurements are in
# docs/findings.md ("Soundness, variants and LibTorch's own behaviour"). Usage: check_variants.sh LOCKSTEP IMPL_DRIVER WORKDIR [COUNT]
set -uo pipefail
lockstep=$1 driver=$2 work=$3 count=${4:-2000}
mkdir -p "$work/no-cases"
failed=0
run() {  # NAME ARGS...: one lockstep run that must exit 0
  local name=$1; shift
  if ! out=$("$lockstep" run "$@" --seed 20261123 --max-size 60 --shrink-seconds 2 --report-dir "$work/$name" 2>&1); then
    echo "FAIL $name: $(echo "$out" | grep -m3 -E 'FAIL|lockstep')"
    failed=1
  else
    echo "ok   $name: $(echo "$out" | tail -1)"
  fi
}
for v in unfused reciprocal sqrt-ratio double-accumulate ulp-noise; do
  # ulp-noise moves exactly representable results by an ULP, which the tutorials' exact claims reject by design:
  # it runs on random programs only.
  cases=(); [[ $v == ulp-noise ]] && cases=(--cases "$work/no-cases")
  run "$v-lockstep" --engine impl --variant "$v" --count "$count" "${cases[@]}"
  run "$v-free-running" --engine impl --variant "$v" --free-running --count "$count" "${cases[@]}"
  run "$v-driver" --engine "$driver --variant $v" --count $((count / 2)) "${cases[@]}"
done
exit $failed

#!/usr/bin/env bash
# One command from a fresh machine to a result: installs the Debian packages lockstep needs (when missing),
# configures and builds with the CMake presets, then runs the main job or the tests.
#
#   bash tools/setup.sh run [ARGS...]   # build, then `lockstep run ARGS...` (named cases + random programs)
#   bash tools/setup.sh test            # build, then the whole test suite through ctest, then the sanitize build
#                                       # (Clang, ASan+UBSan: unit tests, a short random run, short fuzzing)
#   bash tools/setup.sh build           # build only
#   bash tools/setup.sh replay-only     # no LibTorch: the replay-only build (build-notorch/) and its tests, for an
#                                       # implementation checked against the fixtures and through its driver
#
# Two LibTorch generations (issue 27). On Debian 12 (LibTorch 1.13) `test` ends with the LibTorch 2.x stage: a Debian 13
# chroot with LibTorch 2.6 (tools/torch2/chroot.sh: made once with mmdebstrap from the same package archive, then
# reused) in which tools/torch2/stage.sh builds build-torch2/ and runs its checks. LOCKSTEP_SKIP_TORCH2=1 leaves it
# out. On Debian 13 itself the script installs tools/torch2/packages.txt and `test` runs that stage natively (there is
# no LibTorch 1.13 to run the 1.13 stage with, nor Clang 14 for the sanitize build).
#
# As root, missing packages are installed with apt-get (after one `apt-get update`); otherwise the script
# prints the exact `apt-get install` line and exits non-zero.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
# ccache keys on paths relative to the checkout, so a fresh clone in another folder (CI's) reuses earlier builds.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$here}"

mode="${1:-}"
case "$mode" in
  run|test|build|replay-only) shift ;;
  *) echo "usage: bash tools/setup.sh run [lockstep run args...] | test | build | replay-only" >&2; exit 2 ;;
esac

# The replay-only build needs no LibTorch, no Python torch, no Clang, no node (docs/install.md "Replay-only install").
replay_only_packages=(
  cmake ninja-build g++ pkg-config ccache
  libgtest-dev librapidcheck-dev libfmt-dev nlohmann-json3-dev libcli11-dev libexpat1-dev
  python3 python3-jsonschema  # the fixtures' JSON Schema check and the tests' scripts
)
packages=(
  cmake ninja-build g++ pkg-config
  ccache                # the no-torch build reuses the default build's objects
  libtorch-dev          # the oracle (LibTorch 1.13.0 on Debian 12)
  libgtest-dev          # GoogleTest
  librapidcheck-dev     # property-based random programs
  libfmt-dev nlohmann-json3-dev libcli11-dev
  libbenchmark-dev      # benchmarks (impl vs LibTorch)
  libexpat1-dev         # a real XML parser for the JUnit report test
  python3-jsonschema    # validates the fixtures against their JSON Schema (draft 2020-12)
  python3-torch         # the PyTorch Python adapter (tools/adapters/pytorch_driver.py)
  clang-14 libclang-rt-14-dev  # the sanitize build (ASan+UBSan, a second compiler) and libFuzzer (fuzz/)
)
# The Debian 13 chroot of the LibTorch 2.x stage (tools/torch2/chroot.sh), for `test` only.
[[ "$mode" == test && "${LOCKSTEP_SKIP_TORCH2:-0}" != 1 ]] && packages+=(mmdebstrap)

# The release decides the LibTorch generation: Debian 13 (trixie) ships 2.6 and builds natively with the torch2 preset.
codename="$( (. /etc/os-release && echo "${VERSION_CODENAME:-}") 2>/dev/null || true)"
native_torch2=0
if [[ "$codename" == trixie && "$mode" != replay-only ]]; then
  native_torch2=1
  mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' tools/torch2/packages.txt)
fi
[[ "$mode" == replay-only ]] && packages=("${replay_only_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
# The JavaScript adapters (tools/adapters/tfjs, tools/adapters/jspytorch) need node and npm, from Debian (nodejs and npm)
# unless the machine has them otherwise: a nodejs that ships its own npm conflicts with Debian's npm package.
if [[ "$mode" != replay-only && "$native_torch2" == 0 ]]; then
  command -v node > /dev/null || missing+=(nodejs)
  command -v npm > /dev/null || missing+=(npm)
fi

if ((${#missing[@]})); then
  if [[ "$(id -u)" == 0 ]]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "setup: missing Debian packages. Install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

# The JavaScript adapters' npm packages, exactly as their lockfiles pin them (tools/adapters/*/package-lock.json),
# installed again only when a lockfile changes; --ignore-scripts: no package builds native code or fetches anything
# outside npm's registry (js-pytorch's optional GPU dependency would).
for dir in tools/adapters/tfjs tools/adapters/jspytorch; do
  [[ "$mode" == run || "$mode" == replay-only || "$native_torch2" == 1 ]] && break  # no JS adapter run here
  if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.lockstep-installed-lock.json" 2>/dev/null; then
    echo "setup: npm ci in $dir"
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    cp "$dir/package-lock.json" "$dir/node_modules/.lockstep-installed-lock.json"
  fi
done

if [[ "$mode" == replay-only ]]; then
  cmake --preset no-torch
  cmake --build --preset no-torch
  exec ctest --preset no-torch
fi

if [[ "$native_torch2" == 1 ]]; then
  case "$mode" in
    run) cmake --preset torch2 && cmake --build --preset torch2 && exec ./build-torch2/lockstep run "$@" ;;
    build) cmake --preset torch2 && exec cmake --build --preset torch2 ;;
    test)
      bash tools/torch2/stage.sh
      cmake --preset no-torch
      cmake --build --preset no-torch
      exec ctest --preset no-torch
      ;;
  esac
fi

cmake --preset default
cmake --build --preset default

case "$mode" in
  run) exec ./build/lockstep run "$@" ;;
  test)
    ctest --preset default
    # The replay-only build (issue 15): a separate configure without LibTorch, and its tests.
    cmake --preset no-torch
    cmake --build --preset no-torch
    ctest --preset no-torch
    # The sanitize build (issue 14): Clang with ASan+UBSan (leaks included) runs the unit tests and the replays,
    # a short random run, and every reader's fuzz target: its seeds (the shipped files), then a few seconds of fuzzing.
    cmake --preset sanitize
    cmake --build --preset sanitize
    ctest --preset sanitize
    ./build-sanitize/lockstep run --engine impl --count 1000 --seed 20261121 --max-size 40 \
      --report-dir build-sanitize/reports
    bash fuzz/run_fuzzers.sh build-sanitize build-sanitize/fuzz-work --fuzz-seconds=8
    # The LibTorch 2.x stage (issue 27): LibTorch 2.6 in a Debian 13 chroot, made once and reused.
    if [[ "${LOCKSTEP_SKIP_TORCH2:-0}" == 1 ]]; then
      echo "setup: LOCKSTEP_SKIP_TORCH2=1: the LibTorch 2.x stage is left out"
    else
      t_torch2=$SECONDS
      bash tools/torch2/chroot.sh ensure
      echo "setup: the Debian 13 chroot took $((SECONDS - t_torch2)) s"
      bash tools/torch2/chroot.sh run bash tools/torch2/stage.sh
      echo "setup: the LibTorch 2.x stage took $((SECONDS - t_torch2)) s in all"
    fi
    ;;
  build) ;;
esac

#!/usr/bin/env bash
# No binary that loads LibTorch may use libstdc++'s std::filesystem (conformance/program/file_system.h says why:
# PyTorch's official binaries export their own copy, pytorch/pytorch#133437, and a call bound to it crashed
# `lockstep run --jobs 2` on LibTorch 2.11). Checks, with nm, every executable under BUILD_DIR whose dynamic section
# needs libtorch or libc10: none may reference a symbol of std::filesystem or std::experimental::filesystem, defined
# or undefined. Then proves that the check can fail: a canary built with CXX that calls std::filesystem is flagged.
#
#   bash tools/check_no_filesystem.sh BUILD_DIR CXX      # ctest binaries_import_no_libstdcxx_fs
set -euo pipefail
build="${1:?usage: check_no_filesystem.sh BUILD_DIR CXX}"
cxx="${2:?usage: check_no_filesystem.sh BUILD_DIR CXX}"
pattern='St10filesystem|St12experimental10filesystem'

loads_torch() { readelf -d "$1" 2>/dev/null | grep -E 'NEEDED.*\[(libtorch|libc10)[^]]*\]' > /dev/null; }
# The filesystem symbols of a binary, static and dynamic, demangled.
fs_symbols() { { nm "$1" 2>/dev/null; nm -D "$1" 2>/dev/null; } | { grep -E "$pattern" || true; } |
               awk '{print $NF}' | sort -u | c++filt | awk 'NR <= 5'; }

checked=0 bad=0
while IFS= read -r -d '' f; do
  [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == '177ELF' ]] || continue
  loads_torch "$f" || continue
  checked=$((checked + 1))
  syms="$(fs_symbols "$f")"
  if [[ -n "$syms" ]]; then
    bad=$((bad + 1))
    echo "FAIL $f loads LibTorch and uses std::filesystem:"
    echo "$syms" | sed 's/^/    /'
  fi
done < <(find "$build" -type f -perm -u+x -not -path '*/CMakeFiles/*' -print0)

if ((checked == 0)); then
  echo "FAIL no executable under $build loads LibTorch: nothing was checked (a build without the oracle?)"
  exit 1
fi

# The check must be able to fail: a canary that calls std::filesystem, linked like a binary that loads LibTorch
# would be (what matters is the symbol reference, so the canary need not link LibTorch itself).
canary_dir="$(mktemp -d)"
trap 'rm -rf "$canary_dir"' EXIT
printf '#include <filesystem>\nint main(int c, char** v) { return std::filesystem::exists(v[0]) ? 0 : 1; }\n' \
  > "$canary_dir/canary.cc"
"$cxx" -std=c++17 -O1 -o "$canary_dir/canary" "$canary_dir/canary.cc"
if [[ -z "$(fs_symbols "$canary_dir/canary")" ]]; then
  echo "FAIL the check does not see std::filesystem in a canary that calls it"
  exit 1
fi

if ((bad)); then
  echo "$bad of $checked binaries that load LibTorch use std::filesystem"
  exit 1
fi
echo "ok: $checked binaries that load LibTorch, none uses std::filesystem (the canary that does is caught)"

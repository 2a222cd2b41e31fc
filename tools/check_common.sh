# The shared start of the tools/check_*.sh scripts run as `SCRIPT LOCKSTEP IMPL_DRIVER WORK_DIR` (ctest): sourced
# after `set -euo pipefail` with the script's name and its arguments.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/check_common.sh" check_jobs "$@"
#
# Sets `lockstep` and `impl` (absolute paths: the checks cd around), `work` (emptied), `failures=0` and
# `fail MESSAGE` (prints "NAME: FAIL: MESSAGE" and counts it); exits 2 with a usage line on other arguments.
check_name="$1"
shift
if [[ $# -ne 3 ]]; then
  echo "usage: $0 LOCKSTEP IMPL_DRIVER WORK_DIR" >&2
  exit 2
fi
lockstep="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
impl="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
work="$3"
rm -rf "$work"
mkdir -p "$work"
failures=0
fail() {
  echo "$check_name: FAIL: $*" >&2
  failures=$((failures + 1))
}

#!/usr/bin/env bash
# The LibTorch 2.x stage's machine: a Debian 13 (trixie) chroot, made with mmdebstrap from the same package archive
# as the host (Debian 12 ships LibTorch 1.13, Debian 13 ships 2.6), kept outside the clone so that CI and later
# sessions reuse it.
#
#   bash tools/torch2/chroot.sh ensure            # create it when missing; install what tools/torch2/packages.txt
#                                                 # added since it was made; reuse it as it is otherwise
#   bash tools/torch2/chroot.sh run CMD [ARG...]  # run CMD inside, in the source tree (mounted at /lockstep)
#
# LOCKSTEP_TORCH2_ROOT chooses the folder (default /var/cache/lockstep/trixie). A chroot is made in ROOT.new and
# renamed into place only when complete, so an interrupted make leaves no half chroot behind.
#
# `run` works in its own mount and PID namespace (unshare --kill-child): /proc, /dev, the source tree and a ccache
# folder are mounted for that namespace only; when CMD ends, or unshare is killed (a signal to this script's process
# group, as a terminal or CI sends it), the kernel kills every process left in it and the mounts vanish with it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
root="${LOCKSTEP_TORCH2_ROOT:-/var/cache/lockstep/trixie}"
ccache_dir="${LOCKSTEP_TORCH2_CCACHE:-$(dirname "$root")/ccache-trixie}"
packages_file="$here/tools/torch2/packages.txt"
stamp=".lockstep-packages"

packages() { sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$packages_file" | sort -u; }

# The host's Debian mirror (the archive the host's own packages come from), else Debian's default address.
mirror() {
  local uri=""
  if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
    uri="$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
  fi
  if [[ -z "$uri" && -r /etc/apt/sources.list ]]; then
    uri="$(awk '$1 == "deb" && $3 !~ /security/ {print $2; exit}' /etc/apt/sources.list)"
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

need_root() {
  if [[ "$(id -u)" != 0 ]]; then
    echo "torch2: the chroot needs root (mmdebstrap, chroot, mounts); run as root or set LOCKSTEP_SKIP_TORCH2=1" >&2
    exit 1
  fi
}

# Runs "$@" inside the chroot, in a private mount and PID namespace (see the header).
in_chroot() {
  mkdir -p "$ccache_dir"
  unshare --mount --pid --fork --kill-child --propagation private -- \
    bash -euo pipefail -c '
      root="$1" src="$2" cc="$3"; shift 3
      mount -t proc proc "$root/proc"
      mount --rbind /dev "$root/dev"
      mount -t tmpfs -o size=8g,mode=1777 tmpfs "$root/tmp"
      mkdir -p "$root/lockstep" "$root/var/cache/lockstep-ccache"
      mount --bind "$src" "$root/lockstep"
      mount --bind "$cc" "$root/var/cache/lockstep-ccache"
      cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
      exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 CI="${CI:-}" CCACHE_DIR=/var/cache/lockstep-ccache CCACHE_MAXSIZE=4G \
        DEBIAN_FRONTEND=noninteractive LOCKSTEP_TORCH2_CHROOT=1 \
        bash -c "cd /lockstep && exec \"\$@\"" bash "$@"
    ' bash "$root" "$here" "$ccache_dir" "$@"
}

ensure() {
  need_root
  local wanted
  wanted="$(packages)"
  if [[ -f "$root/$stamp" ]]; then
    if [[ "$(cat "$root/$stamp")" == "$wanted" ]]; then
      echo "torch2: reusing the Debian 13 chroot $root"
      return 0
    fi
    echo "torch2: tools/torch2/packages.txt changed: installing into $root"
    # shellcheck disable=SC2046
    in_chroot bash -c 'apt-get update -q && apt-get install -y -q --no-install-recommends "$@"' bash $wanted
    printf '%s\n' "$wanted" > "$root/$stamp"
    return 0
  fi
  if [[ -e "$root" ]]; then
    echo "torch2: $root exists but holds no complete chroot (no $stamp); remove it or choose LOCKSTEP_TORCH2_ROOT" >&2
    exit 1
  fi
  if ! command -v mmdebstrap > /dev/null; then
    echo "torch2: installing mmdebstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap
  fi
  local url
  url="$(mirror)"
  echo "torch2: making the Debian 13 chroot $root from $url (a few minutes, about 2.5 GB)"
  mkdir -p "$(dirname "$root")"
  # --one-file-system: never into what an interrupted mmdebstrap may have left mounted there.
  rm -rf --one-file-system "$root.new"
  trap 'rm -rf --one-file-system "$root.new"' EXIT
  mmdebstrap --variant=apt --include="$(echo $wanted | tr ' ' ',')" \
    --aptopt='Acquire::Retries "3"' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/man/*' trixie "$root.new" "deb $url trixie main"
  printf '%s\n' "$wanted" > "$root.new/$stamp"
  mv "$root.new" "$root"
  trap - EXIT
  echo "torch2: chroot ready"
}

case "${1:-}" in
  ensure) ensure ;;
  run) shift; need_root; [[ -f "$root/$stamp" ]] || { echo "torch2: no chroot at $root; run 'ensure' first" >&2; exit 1; }
       in_chroot "$@" ;;
  *) echo "usage: bash tools/torch2/chroot.sh ensure | run CMD [ARG...]" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# tests/vm/setup.sh — prepare the qemu guest test harness (idempotent, quick when cached).
#
#  * installs the Debian packages the harness needs if missing:
#      qemu-system-x86 busybox-static cpio gcc libc6-dev (for the static probes)
#  * fetches Debian 12's stock kernel: the linux-image-6.1.0-N-amd64 package that
#    linux-image-amd64 depends on, via `apt-get download`, unpacks it with
#    `dpkg-deb -x` and keeps only vmlinuz, its config and the few modules
#    the guest may want, in $CHIDORI_VM_CACHE (default tests/vm/.cache/).
#
# Environment:
#   CHIDORI_VM_CACHE      cache dir (default: tests/vm/.cache)
#   CHIDORI_VM_KERNEL_PKG force a kernel package (e.g. linux-image-6.1.0-57-amd64)
#   CHIDORI_VM_OFFLINE=1  never touch apt for the kernel; use what is cached
#
# Result: $CACHE/vmlinuz and $CACHE/vmlinux (symlinks to the current kernel: the bzImage
# and the bare ELF extracted from it for a faster PVH boot), and
# $CACHE/kernel/<pkg>/{vmlinuz,vmlinux,config,release,pkg-version,modules/}
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${CHIDORI_VM_CACHE:-$HERE/.cache}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"

log() { echo "vm-setup: $*" >&2; }
SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

apt_locked() {
  # Others may run apt concurrently on the same machine: serialise on /tmp/apt.lock.
  if command -v flock >/dev/null; then $SUDO flock /tmp/apt.lock "$@"; else $SUDO "$@"; fi
}
apt_updated=0
apt_update_once() {
  ((apt_updated)) && return 0
  apt_locked apt-get update -qq
  apt_updated=1
}

# ---- 1. host packages ---------------------------------------------------------------
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
need=()
installed qemu-system-x86 || command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
installed busybox-static || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
command -v gcc >/dev/null || need+=(gcc)
command -v xz >/dev/null || need+=(xz-utils)
[[ -e /usr/lib/x86_64-linux-gnu/libc.a ]] || need+=(libc6-dev)
if ((${#need[@]})); then
  log "installing ${need[*]}"
  # An old or absent package list makes the install fail: refresh it first when the
  # packages are not even known to apt-cache.
  apt-cache show "${need[@]}" >/dev/null 2>&1 || apt_update_once
  apt_locked apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
    || { apt_update_once; apt_locked apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
fi

# ---- 2. the guest kernel ------------------------------------------------------------
current="$(readlink "$CACHE/vmlinuz" 2>/dev/null || true)"     # kernel/<pkg>/vmlinuz
have_pkg=""; [[ -n $current && -f $CACHE/$current ]] && have_pkg="$(basename "$(dirname "$current")")"

want_pkg="${CHIDORI_VM_KERNEL_PKG:-}"
resolve() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'; }
if [[ -z $want_pkg && ${CHIDORI_VM_OFFLINE:-0} != 1 ]]; then
  want_pkg="$(resolve)"
  if [[ -z $want_pkg && -z $have_pkg ]]; then apt_update_once; want_pkg="$(resolve)"; fi
fi
[[ -n $want_pkg ]] || want_pkg="$have_pkg"
[[ -n $want_pkg ]] || { log "cannot determine the kernel package (apt lists missing, nothing cached)"; exit 1; }

# The modules kept of the package (relative to kernel/): overlay, veth, dummy, tun, and
# a block filesystem that can be id-mapped before 6.3 (ext4 on a loop device: the
# privileged helper's case, tests/vm/cases/44-helper-cgroup2.sh).
KEEP_MODULES=(fs/overlayfs/overlay.ko drivers/net/veth.ko drivers/net/dummy.ko drivers/net/tun.ko
              drivers/block/loop.ko fs/ext4/ext4.ko fs/jbd2/jbd2.ko fs/mbcache.ko lib/crc16.ko
              crypto/crc32c_generic.ko)
missing_module() { # a kept module absent from the cache: fetch the package again
  local m f
  for m in "${KEEP_MODULES[@]}"; do
    for f in "$CACHE/kernel/$want_pkg/modules/lib/modules"/*/kernel/"$m"{,.xz,.zst}; do [[ -f $f ]] && continue 2; done
    return 0
  done
  return 1
}
if [[ $want_pkg != "$have_pkg" || ! -f $CACHE/kernel/$want_pkg/vmlinuz ]] || missing_module; then
  log "fetching $want_pkg"
  work="$(mktemp -d "$CACHE/tmp.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  # apt-get download writes into the cwd; it runs as _apt when it can, so make cwd writable.
  chmod 0777 "$work"
  if ! ( cd "$work" && apt_locked apt-get download -qq "$want_pkg" ) 2>/dev/null; then
    # Stale package lists (the mirror dropped that version): refresh, resolve again, retry.
    apt_update_once
    [[ -n ${CHIDORI_VM_KERNEL_PKG:-} ]] || want_pkg="$(resolve)"
    log "retrying with $want_pkg"
    ( cd "$work" && apt_locked apt-get download -qq "$want_pkg" )
  fi
  deb="$(ls "$work"/*.deb | head -1)"
  dpkg-deb -x "$deb" "$work/x"
  vz="$(ls "$work"/x/boot/vmlinuz-* | head -1)"
  kver="${vz##*/vmlinuz-}"
  dst="$CACHE/kernel/$want_pkg"
  rm -rf "$dst"; mkdir -p "$dst/modules"
  cp "$vz" "$dst/vmlinuz"
  cp "$work/x/boot/config-$kver" "$dst/config"
  echo "$kver" > "$dst/release"
  dpkg-deb -f "$deb" Version > "$dst/pkg-version"
  # Modules: everything the harness relies on (serial console, cgroups, namespaces,
  # seccomp, landlock, tmpfs, devtmpfs) is built in (=y) in Debian's config, and the
  # whole test payload lives in the initramfs, so no block/9p/virtio-fs drivers are
  # needed. Keep a few that chidori might want later (overlay, veth, dummy, tun) plus
  # modules.dep, and drop the remaining ~400 MB.
  mroot="$work/x/lib/modules/$kver"
  keep=("${KEEP_MODULES[@]}")
  for m in "${keep[@]}"; do
    for f in "$mroot/kernel/$m" "$mroot/kernel/$m".xz "$mroot/kernel/$m".zst; do
      [[ -f $f ]] || continue
      mkdir -p "$dst/modules/lib/modules/$kver/kernel/$(dirname "$m")"
      cp "$f" "$dst/modules/lib/modules/$kver/kernel/$(dirname "$m")/"
    done
  done
  for f in modules.builtin modules.builtin.modinfo modules.order; do
    [[ -f $mroot/$f ]] && cp "$mroot/$f" "$dst/modules/lib/modules/$kver/"
  done
  # Old kernels are dropped: only the current one is kept.
  for d in "$CACHE"/kernel/*/; do [[ ${d%/} == "$dst" ]] || rm -rf "$d"; done
  ln -sfn "kernel/$want_pkg/vmlinuz" "$CACHE/vmlinuz"
  rm -f "$CACHE/vmlinux"
  rm -rf "$work"; trap - EXIT
  log "kernel $kver ($(cat "$dst/pkg-version")) cached in $dst"
fi

# The bzImage decompresses itself, which under TCG costs ~3 s of every boot. Debian
# builds with CONFIG_PVH=y, so qemu can boot the bare ELF vmlinux directly (PVH entry):
# extract it once (the payload is xz, CONFIG_KERNEL_XZ) and run.sh prefers it.
kdir="$CACHE/kernel/$want_pkg"
if [[ ! -s $kdir/vmlinux ]] && grep -q '^CONFIG_PVH=y' "$kdir/config"; then
  off="$(LC_ALL=C grep -aboF $'\xfd7zXZ\x00' "$kdir/vmlinuz" | head -1 | cut -d: -f1 || true)"
  if [[ -n $off ]]; then
    tail -c +$((off + 1)) "$kdir/vmlinuz" | xz -dc --single-stream > "$kdir/vmlinux.tmp" 2>/dev/null || true
    if [[ "$(head -c4 "$kdir/vmlinux.tmp" | tr -d '\0')" == $'\x7fELF' ]]; then
      mv -f "$kdir/vmlinux.tmp" "$kdir/vmlinux"
    else
      rm -f "$kdir/vmlinux.tmp"; log "WARNING: could not extract vmlinux; booting the bzImage (slower)"
    fi
  fi
fi
[[ -s $kdir/vmlinux ]] && ln -sfn "kernel/$want_pkg/vmlinux" "$CACHE/vmlinux"

# Sanity: the features the harness counts on must be built in.
cfg="$CACHE/kernel/$want_pkg/config"
for opt in CONFIG_SERIAL_8250_CONSOLE CONFIG_DEVTMPFS CONFIG_MEMCG CONFIG_CGROUP_PIDS CONFIG_USER_NS \
           CONFIG_SECURITY_LANDLOCK CONFIG_SECCOMP_FILTER CONFIG_BLK_DEV_INITRD CONFIG_PVH; do
  grep -q "^$opt=y" "$cfg" || log "WARNING: $opt is not =y in $cfg"
done
log "ok: $(command -v qemu-system-x86_64), kernel $(cat "$kdir/release") at $CACHE/$([[ -e $CACHE/vmlinux ]] && echo vmlinux || echo vmlinuz)"

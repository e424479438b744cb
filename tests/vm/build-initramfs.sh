#!/usr/bin/env bash
# tests/vm/build-initramfs.sh OUT FILE...
#
# Build a self-contained initramfs for the qemu guest:
#   * busybox (static) with a symlink for every applet, /bin/sh = busybox ash
#   * a generated /init (see tests/vm/init.sh, copied as /init)
#   * each FILE at the same path inside (directories recursively, keeping structure);
#     HOST=GUEST puts a host path at another guest path (e.g. build/probe=/usr/local/bin/probe)
#   * every shared library those ELF files load: the ldd closure (incl. the dynamic
#     loader), plus libraries named in their strings that they may dlopen (libnss_*,
#     libidn2, ...) when the host has them, plus $CHIDORI_VM_EXTRA_LIBS; then an
#     /etc/ld.so.cache made with `ldconfig -r`
#   * /etc/passwd, /etc/group (root, tester 1000, nobody 65534), hosts, nsswitch.conf
#
# OUT's suffix picks the compression: .cpio (none: fastest boot under TCG),
# .cpio.gz, .cpio.zst, .cpio.lz4, .cpio.xz.
#
# Environment:
#   CHIDORI_VM_EXCLUDE     space-separated tar --exclude patterns for directories
#                          (default: "*.o *.d *.a .git .cache")
#   CHIDORI_VM_EXTRA_LIBS  extra libraries/files to add with their ldd closure
#   CHIDORI_VM_VERBOSE=1   list what is copied
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
[[ $# -ge 1 ]] || { echo "usage: $0 OUT.cpio[.gz|.zst|.lz4|.xz] [FILE|DIR|HOST=GUEST]..." >&2; exit 2; }
OUT="$1"; shift
log() { echo "vm-initramfs: $*" >&2; }
vlog() { [[ ${CHIDORI_VM_VERBOSE:-0} == 1 ]] && log "$@"; return 0; }

BUSYBOX=""
for b in /bin/busybox /usr/bin/busybox; do
  [[ -x $b ]] && file -L "$b" 2>/dev/null | grep -q 'statically linked' && { BUSYBOX=$b; break; }
done
if [[ -z $BUSYBOX ]]; then
  # `file` may be absent: fall back to ldd's verdict.
  for b in /bin/busybox /usr/bin/busybox; do
    [[ -x $b ]] && ! ldd "$b" >/dev/null 2>&1 && { BUSYBOX=$b; break; }
  done
fi
[[ -n $BUSYBOX ]] || { log "no static busybox (run tests/vm/setup.sh: busybox-static)"; exit 1; }
command -v cpio >/dev/null || { log "cpio missing (run tests/vm/setup.sh)"; exit 1; }

S="$(mktemp -d "${TMPDIR:-/tmp}/chidori-initramfs.XXXXXX")"
trap 'rm -rf "$S"' EXIT
declare -A SEEN=() ELF=()

# ---- skeleton, mirroring the host's /usr merge so ldd's paths resolve ----------------
mkdir -p "$S"/{usr/bin,usr/sbin,usr/lib,usr/local/bin,etc,proc,sys,dev,tmp,run,root,home/tester,var/tmp,mnt}
chmod 1777 "$S/tmp" "$S/var/tmp"; chmod 0700 "$S/root"
for d in bin sbin lib lib64 lib32; do
  if [[ -L /$d ]]; then ln -s "$(readlink "/$d")" "$S/$d"; mkdir -p "$S/$(readlink -f "/$d")"
  elif [[ -d /$d ]]; then mkdir -p "$S/$d"; fi
done
# dest GUESTPATH: where a guest path lives in the staging tree.
dest() { printf '%s%s' "$S" "$1"; }
declare -A RDIR=() MADE=()
mkdir_c() { [[ -n ${MADE[$1]:-} ]] || { mkdir -p "$1"; MADE[$1]=1; }; }
# ORIGIN tags ELF files: "top" ones get ldd, "lib" ones (already in an ldd closure)
# only get the dlopen scan.
ORIGIN=top

# add_path HOSTPATH [GUESTPATH]: copy one file/symlink/dir (directory part canonicalised;
# symlinks are kept and their targets copied too).
add_path() {
  local p="$1" g="${2:-}" dir base d
  [[ -e $p || -L $p ]] || { log "WARNING: $p does not exist, skipped"; return 0; }
  if [[ -n $g ]]; then    # explicit guest path: copy content (dereferenced)
    mkdir_c "$(dest "${g%/*}")"
    if [[ -d $p ]]; then add_dir "$p" "$g"; else cp -L --preserve=mode,timestamps "$p" "$(dest "$g")"; note_elf "$(realpath "$p")"; fi
    return 0
  fi
  [[ $p == */* ]] || p="./$p"
  dir="${p%/*}"; base="${p##*/}"; [[ -n $dir ]] || dir=/
  if [[ -z ${RDIR[$dir]:-} ]]; then RDIR[$dir]="$(realpath -e "$dir")"; fi
  dir="${RDIR[$dir]}"
  d="${dir%/}/$base"
  [[ -n ${SEEN[$d]:-} ]] && return 0
  SEEN[$d]=1
  if [[ -L $d ]]; then
    mkdir_c "$(dest "$dir")"
    cp -P "$d" "$(dest "$d")" 2>/dev/null || true
    local t; t="$(readlink "$d")"
    [[ $t == /* ]] || t="$dir/$t"
    add_path "$t"
  elif [[ -d $d ]]; then
    add_dir "$d" "$d"
  else
    mkdir_c "$(dest "$dir")"
    cp --preserve=mode,timestamps "$d" "$(dest "$d")"
    vlog "file $d"
    note_elf "$d"
  fi
}

# add_dir HOSTDIR GUESTDIR: recursive copy with exclusions; ELF files inside are scanned.
add_dir() {
  local src="$1" g="$2" ex=() pat f t
  for pat in ${CHIDORI_VM_EXCLUDE-*.o *.d *.a .git .cache}; do ex+=(--exclude="$pat"); done
  mkdir_c "$(dest "$g")"
  tar -C "$src" "${ex[@]}" -cf - . | tar -C "$(dest "$g")" -xf -
  vlog "dir $src -> $g"
  while IFS= read -r -d '' f; do note_elf "$f"; done < <(
    find "$src" \( -name .git -o -name .cache \) -prune -o -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -print0)
  # Absolute symlinks that leave the tree: bring their targets along.
  while IFS= read -r -d '' f; do
    t="$(readlink "$f")"
    [[ $t == /* && $t != "$src"/* ]] && add_path "$t"
  done < <(find "$src" \( -name .git -o -name .cache \) -prune -o -type l -print0)
  return 0
}

note_elf() {
  local magic=""
  IFS= read -r -N4 magic < "$1" 2>/dev/null || true
  [[ $magic == $'\x7fELF' ]] && { [[ ${ELF[$1]:-} == top ]] || ELF[$1]=$ORIGIN; }
  return 0
}

# ---- busybox -----------------------------------------------------------------------
# Only sh here; /init runs `busybox --install -s` first thing (400 ln processes on the
# host are slower than the same symlink() calls in the guest), which never replaces a
# file the image already has.
cp "$BUSYBOX" "$S/usr/bin/busybox"
ln -s busybox "$S/usr/bin/sh"

# ---- requested files ---------------------------------------------------------------
for a in "$@"; do
  if [[ $a == *=* ]]; then add_path "${a%%=*}" "${a#*=}"
  else
    add_path "$a"
  fi
done
for a in ${CHIDORI_VM_EXTRA_LIBS:-}; do add_path "$a"; done

# ---- shared libraries: ldd closure + dlopen'd names found in the binaries -----------
# ldd lists a file's whole closure, so it runs only on "top" files; every ELF file gets
# a scan of its strings for versioned sonames (dlopen candidates: libnss_files.so.2,
# libidn2.so.0, libsepol.so.2, ...) that the host's ld.so.cache resolves, and those
# become "top" files in turn.
declare -A SOPATH=() LDD_DONE=() GREP_DONE=() NAME_DONE=()
while read -r so rest; do   # "libz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1"
  [[ $rest == *x86-64*'=> '* ]] || continue
  [[ -n ${SOPATH[$so]:-} ]] || SOPATH[$so]="${rest##*=> }"
done < <(ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true)
for _ in $(seq 20); do
  ldd_todo=() grep_todo=()
  for f in "${!ELF[@]}"; do
    [[ ${ELF[$f]} == top && -z ${LDD_DONE[$f]:-} ]] && { ldd_todo+=("$f"); LDD_DONE[$f]=1; }
    [[ -z ${GREP_DONE[$f]:-} ]] && { grep_todo+=("$f"); GREP_DONE[$f]=1; }
  done
  ((${#ldd_todo[@]} + ${#grep_todo[@]})) || break
  ORIGIN=lib
  if ((${#ldd_todo[@]})); then
    out="$(ldd "${ldd_todo[@]}" 2>/dev/null || true)"
    while read -r lib; do add_path "$lib"; done < <(awk '/=> \//{print $3} /^[ \t]*\/[^ ]+ \(0x/{print $1}' <<<"$out" | sort -u)
    if grep -q 'not found' <<<"$out"; then
      log "WARNING: missing libraries: $(grep 'not found' <<<"$out" | awk '{print $1}' | sort -u | paste -sd' ' -)"
    fi
  fi
  ORIGIN=top
  if ((${#grep_todo[@]})); then
    while read -r so; do
      [[ -z ${NAME_DONE[$so]:-} ]] || continue
      NAME_DONE[$so]=1
      path="${SOPATH[$so]:-}"
      [[ -n $path && -e $path ]] || continue
      vlog "dlopen candidate $so"
      add_path "$path"
    done < <(grep -ahoE 'lib[A-Za-z0-9_+-]+(\.[A-Za-z0-9_+-]+)*\.so(\.[0-9]+)+' "${grep_todo[@]}" 2>/dev/null | sort -u)
  fi
done

# ---- /etc --------------------------------------------------------------------------
cat > "$S/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
tester:x:1000:1000:tester:/home/tester:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat > "$S/etc/group" <<'EOF'
root:x:0:
tester:x:1000:
nogroup:x:65534:
EOF
printf 'root:*:19000:0:99999:7:::\ntester:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n' > "$S/etc/shadow"
chmod 0640 "$S/etc/shadow"
printf 'tester:100000:65536\n' > "$S/etc/subuid"; cp "$S/etc/subuid" "$S/etc/subgid"
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' > "$S/etc/nsswitch.conf"
printf '127.0.0.1\tlocalhost chidori-vm\n::1\tlocalhost ip6-localhost\n' > "$S/etc/hosts"
echo chidori-vm > "$S/etc/hostname"
: > "$S/etc/fstab"
chown -R 1000:1000 "$S/home/tester"; chmod 0755 "$S/home/tester"
printf '/usr/local/lib\n/usr/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n' > "$S/etc/ld.so.conf"
ldconfig -r "$S" 2>/dev/null || /sbin/ldconfig -r "$S" || log "WARNING: ldconfig -r failed; no ld.so.cache"

# ---- /init -------------------------------------------------------------------------
install -m 0755 "$HERE/init.sh" "$S/init"

# ---- pack --------------------------------------------------------------------------
case "$OUT" in
  *.gz)  comp=(gzip -1) ;;
  *.zst) comp=(zstd -q -T0 -3) ;;
  *.lz4) comp=(lz4 -q -l) ;;     # legacy frame: the only lz4 format the kernel unpacks
  *.xz)  comp=(xz -T0 -1 --check=crc32) ;;
  *)     comp=(cat) ;;
esac
mkdir -p "$(dirname "$OUT")"
tmp_out="$OUT.tmp.$$"
( cd "$S" && find . -mindepth 1 -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet ) \
  | "${comp[@]}" > "$tmp_out"
mv -f "$tmp_out" "$OUT"
log "$OUT: $(du -sh "$S" | cut -f1) unpacked, $(du -h "$OUT" | cut -f1) packed, $(find "$S" -type f | wc -l) files, ${#ELF[@]} ELF files"

#!/usr/bin/env bash
# tests/vm/run.sh [OPTIONS] SCRIPT [FILES...]
#
# Boot Debian 12's kernel under qemu (TCG, no KVM needed) with an initramfs holding
# SCRIPT, FILES, the repo's build/ tests/ examples/ deploy/ (when present), the static probes
# of tests/vm/probes/ (as /usr/local/bin/vm-*), and every library they need; run
# SCRIPT as root inside, print what it printed, exit with its status.
#
# Options:
#   --kernel PATH     kernel: a bzImage, or an ELF vmlinux with a PVH note (default:
#                     tests/vm/.cache/vmlinux from setup.sh, else .cache/vmlinuz)
#   --timeout SECS    hard wall-clock limit for the whole boot+run (default 900);
#                     qemu is killed at the limit and run.sh exits 124
#   --mem MIB         guest memory (default 2048)      --smp N   guest CPUs (default 2)
#   --append ARGS     extra kernel command line
#   --arg A           argument for SCRIPT in the guest (repeatable; no spaces or commas)
#   --no-repo         do not add build/ tests/ examples/ deploy/
#   --keep            keep the work dir (initramfs, console log) and print its path
#   --quiet           do not stream the guest output live; print it at the end
#   --shell           interactive: boot to a shell on this terminal (debugging)
#
# Files can also be requested from inside SCRIPT or any tests/vm/cases/*.sh with lines
#   # vm-include: /usr/bin/sqlite3 /some/dir
# Exit status: the guest's (CHIDORI-VM-EXIT=N), 124 on timeout, 1 if no status was seen.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${CHIDORI_VM_CACHE:-$HERE/.cache}"
log() { echo "vm-run: $*" >&2; }

KERNEL="" TIMEOUT=900 MEM=2048 SMP=2 APPEND="" REPO_DIRS=1 KEEP=0 LIVE=1 SHELL_MODE=0
GUEST_ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kernel) KERNEL="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --mem) MEM="$2"; shift 2 ;;
    --smp) SMP="$2"; shift 2 ;;
    --append) APPEND="$2"; shift 2 ;;
    --arg) GUEST_ARGS+=("$2"); shift 2 ;;
    --no-repo) REPO_DIRS=0; shift ;;
    --keep) KEEP=1; shift ;;
    --quiet) LIVE=0; shift ;;
    --shell) SHELL_MODE=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) log "unknown option $1"; exit 2 ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { log "usage: $0 [--kernel PATH] [--timeout SECS] SCRIPT [FILES...]"; exit 2; }
SCRIPT="$(realpath -e "$1")"; shift
[[ $TIMEOUT =~ ^[0-9]+$ && $TIMEOUT -gt 0 ]] || { log "bad --timeout $TIMEOUT"; exit 2; }
if [[ -z $KERNEL ]]; then KERNEL="$CACHE/vmlinux"; [[ -f $KERNEL ]] || KERNEL="$CACHE/vmlinuz"; fi
[[ -f $KERNEL ]] || { log "no kernel at $KERNEL: run tests/vm/setup.sh first"; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { log "qemu-system-x86_64 missing: run tests/vm/setup.sh"; exit 1; }

T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/run.XXXXXX")"
QPID=""
cleanup() {
  [[ -n $QPID ]] && kill -KILL "$QPID" 2>/dev/null || true
  if ((KEEP)); then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- static probes (tests/vm/probes/*.c -> /usr/local/bin/NAME in the guest) ---------
PROBES="$CACHE/probes"; mkdir -p "$PROBES"
FILES=()
for c in "$HERE"/probes/*.c; do
  [[ -e $c ]] || continue
  n="$(basename "$c" .c)"
  if [[ ! -x $PROBES/$n || $c -nt $PROBES/$n ]]; then
    gcc -static -O2 -Wall -Wextra -Werror -o "$PROBES/$n.tmp.$$" "$c" && mv -f "$PROBES/$n.tmp.$$" "$PROBES/$n"
  fi
  FILES+=("$PROBES/$n=/usr/local/bin/$n")
done

# ---- what goes into the image --------------------------------------------------------
# Modules of the default kernel (overlay, veth, dummy, tun; see setup.sh) at /lib/modules.
if [[ $KERNEL == "$CACHE"/vmlinu[xz] ]]; then
  kdir="$(dirname "$(readlink -f "$KERNEL")")"
  for m in "$kdir"/modules/lib/modules/*; do [[ -d $m ]] && FILES+=("$m=/lib/modules/${m##*/}"); done
fi
FILES+=("$SCRIPT" "$HERE")      # the harness itself (cases, lib) at its host path
for f in "$@"; do FILES+=("$(realpath -e "$f")"); done
if ((REPO_DIRS)); then
  for d in tests examples deploy; do [[ -d $REPO/$d ]] && FILES+=("$REPO/$d"); done
  # The build under test (CHIDORI_BUILD: build-asan for make asan) at the
  # guest's $REPO/build, where the cases look.
  b=${CHIDORI_BUILD:-$REPO/build}
  [[ -d $b ]] && FILES+=("$b=$REPO/build")
fi
[[ -x /usr/bin/bash ]] && FILES+=(/usr/bin/bash)   # for cases written in bash; /bin/sh stays busybox
while read -r f; do [[ -e $f ]] && FILES+=("$f") || log "vm-include: $f not found on the host, skipped"; done < <(
  cat "$SCRIPT" "$HERE"/cases/*.sh 2>/dev/null | sed -n 's/^#[[:space:]]*vm-include:[[:space:]]*//p' | tr ' \t' '\n\n' | sed '/^$/d' | sort -u)

INITRD="$WORK/initramfs.cpio"
"$HERE/build-initramfs.sh" "$INITRD" "${FILES[@]}"
log "initramfs built in $(elapsed)s"

# ---- boot ----------------------------------------------------------------------------
NONCE="$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
GUEST_TIMEOUT=0; ((TIMEOUT > 40)) && GUEST_TIMEOUT=$((TIMEOUT - 20))
ARGS_CSV=""; ((${#GUEST_ARGS[@]})) && ARGS_CSV="$(IFS=,; echo "${GUEST_ARGS[*]}")"
CMDLINE="console=ttyS0 quiet loglevel=3 panic=-1 oops=panic"
CMDLINE+=" systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all"
# No keyboard/mouse probing, trust the TSC: shaves seconds off a TCG boot.
CMDLINE+=" i8042.noaux i8042.nokbd i8042.nopnp tsc=reliable no_timer_check"
CMDLINE+=" chidori.test=$SCRIPT chidori.nonce=$NONCE chidori.timeout=$GUEST_TIMEOUT"
[[ -n $ARGS_CSV ]] && CMDLINE+=" chidori.args=$ARGS_CSV"
((SHELL_MODE)) && CMDLINE+=" chidori.shell=1"
[[ -n $APPEND ]] && CMDLINE+=" $APPEND"

QEMU=(qemu-system-x86_64 -accel tcg -cpu max -m "$MEM" -smp "$SMP"
      -nodefaults -no-user-config -nographic -no-reboot
      -kernel "$KERNEL" -initrd "$INITRD" -append "$CMDLINE")

if ((SHELL_MODE)); then
  "${QEMU[@]}" -serial mon:stdio; exit 0
fi

LOG="$WORK/console.log"; : > "$LOG"
"${QEMU[@]}" -serial "file:$LOG" -monitor none -parallel none </dev/null >"$WORK/qemu.out" 2>&1 &
QPID=$!
TQ=$(date +%s.%N)
log "qemu pid $QPID started at $(elapsed)s (timeout ${TIMEOUT}s)"

BEGIN="===CHIDORI-VM-BEGIN-$NONCE==="
END="===CHIDORI-VM-END-$NONCE==="
STREAM_PID=""
if ((LIVE)); then
  # Print the framed output as it arrives (tail stops by itself when qemu is gone).
  tail -n +1 -F --pid="$QPID" "$LOG" 2>/dev/null | awk -v b="$BEGIN" -v e="$END" '
    { sub(/\r+$/, "") }
    on && index($0, e) { exit }
    on { print; fflush() }
    index($0, b) { on = 1 }' &
  STREAM_PID=$!
fi

timed_out=0
deadline=$(awk -v a="$T0" -v t="$TIMEOUT" 'BEGIN{printf "%d", a + t}')   # counted from run.sh's start
while kill -0 "$QPID" 2>/dev/null; do
  if (( $(date +%s) >= deadline )); then
    timed_out=1
    log "TIMEOUT after ${TIMEOUT}s: killing qemu (pid $QPID)"
    kill -TERM "$QPID" 2>/dev/null || true
    sleep 2
    kill -KILL "$QPID" 2>/dev/null || true
    break
  fi
  sleep 0.2
done
qrc=0; wait "$QPID" 2>/dev/null || qrc=$?
QPID=""
QWALL="$(awk -v a="$TQ" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')"
[[ -n $STREAM_PID ]] && wait "$STREAM_PID" 2>/dev/null || true

tr -d '\r' < "$LOG" > "$WORK/console.txt"
cp -f "$WORK/console.txt" "$CACHE/last-console.log" 2>/dev/null || true
if ((! LIVE)); then
  awk -v b="$BEGIN" -v e="$END" 'on && index($0, e) { exit } on { print } index($0, b) { on = 1 }' "$WORK/console.txt"
fi
status="$(awk -v e="$END" 'index($0, e) { on = 1; next } on && /^CHIDORI-VM-EXIT=[0-9]+$/ { sub(/.*=/, ""); print; exit }' "$WORK/console.txt")"

if [[ -z $status ]]; then
  if ! grep -qF "$BEGIN" "$WORK/console.txt"; then
    log "the guest never reached the test; last console lines:"
    tail -n 40 "$WORK/console.txt" >&2
  fi
  [[ -s $WORK/qemu.out ]] && { log "qemu said:"; cat "$WORK/qemu.out" >&2; }
  if ((timed_out)); then status=124; else log "no CHIDORI-VM-EXIT line (qemu exit $qrc)"; status=1; fi
fi
times="$(sed -n 's/^CHIDORI-VM-TIMES=//p' "$WORK/console.txt" | tail -1)"
log "guest exit status $status; qemu ${QWALL}s (guest uptime ${times:-?}), total $(elapsed)s; console log: $CACHE/last-console.log"
exit "$status"

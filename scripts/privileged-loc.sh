#!/usr/bin/env bash
# Lines of C that run with privilege: the sources compiled into a binary
# (its DWARF compile units, so only what the linker kept from the static
# archive; the generated seccomp tables, data not code, are left out)
# and the project headers they include (their .d files), and
# whether it links a library that parses hostile input.
#
#   scripts/privileged-loc.sh [--no-check] [--max-lines N] [BIN...]
#                                               default: $BUILD/chidori-monitor
#
# Prints, per binary:  "BIN: N lines in F .c files, H lines in G headers"
# then the libraries it links that the monitor must not (cJSON, libcurl, libpq (PostgreSQL),
# SQLite, JavaScriptCore, ICU) and the symbols it uses from them.  Exits 1
# if one is found, or (--max-lines) if its .c lines exceed N, unless
# --no-check (docs/architecture.md publishes the figures: 21,693 lines in
# chidori before the split, chidori-monitor's after; `make test` holds the
# monitor to its ceiling, tests/bats/broker.bats).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
check=1
max=0
bins=()
while (($#)); do
  case $1 in
    --no-check) check=0 ;;
    --max-lines)
      [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "privileged-loc: --max-lines needs a number of lines" >&2; exit 2; }
      max=$2; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) bins+=("$1") ;;
  esac
  shift
done
((${#bins[@]})) || bins=("$BUILD/chidori-monitor")
forbidden='libcjson|libcurl|libsqlite3|libpq|libjavascriptcoregtk|libicu'
symbols='^(cJSON_|curl_|sqlite3_|PQ|JS[A-Z]|jsc_|u_|ucol_|ubrk_)'
rc=0
for bin in "${bins[@]}"; do
  [[ -x $bin ]] || { echo "privileged-loc: $bin is not built (make all)"; exit 2; }
  mapfile -t srcs < <(readelf --debug-dump=info "$bin" 2>/dev/null |
    awk '/DW_TAG_compile_unit/ {cu = 1} cu && /DW_AT_name/ {print $NF; cu = 0}' |
    grep -E '\.c$' | grep -v '^/' | grep -vE "(^|/)gen/" | sort -u)
  if ((${#srcs[@]} == 0)); then
    echo "privileged-loc: $bin has no debug information (build with -g)"; exit 2
  fi
  clines=$(cat "${srcs[@]}" 2>/dev/null | wc -l)
  # Headers of the project the objects were compiled with.
  mapfile -t hdrs < <(for s in "${srcs[@]}"; do
      d=$BUILD/obj/${s%.c}.d
      [[ -f $d ]] && tr ' \\' '\n\n' <"$d" | grep -E '^[a-z].*\.h$' | grep -v '^/'
    done | sort -u)
  hlines=0
  ((${#hdrs[@]})) && hlines=$(cat "${hdrs[@]}" 2>/dev/null | wc -l)
  echo "$bin: $clines lines in ${#srcs[@]} .c files, $hlines lines in ${#hdrs[@]} headers"
  for dir in $(printf '%s\n' "${srcs[@]}" | awk -F/ '{NF--; print}' OFS=/ | sort | uniq -c | awk '{print $2}'); do
    n=$(printf '%s\n' "${srcs[@]}" | awk -F/ -v d="$dir" '{f=$0; NF--; if ($0 == d) print f}' OFS=/ | xargs cat | wc -l)
    printf '  %-22s %6d\n' "$dir/" "$n"
  done
  libs=$(ldd "$bin" 2>/dev/null | awk '{print $1}' | grep -E "$forbidden" | tr '\n' ' ')
  syms=$(nm -D --undefined-only "$bin" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' | grep -cE "$symbols")
  # What a binary linked in statically (all of a static one, such as
  # chidori-privhelper and chidori-monitor; an archive in a dynamic one, such
  # as chidori's SQLite) is in its own symbol table: named by its prefix.
  defined=$(nm --defined-only "$bin" 2>/dev/null | awk '{print $NF}' | grep -E "$symbols")
  if [[ -n $defined ]]; then
    syms=$((syms + $(wc -l <<<"$defined")))
    for pair in cJSON_:libcjson curl_:libcurl sqlite3_:libsqlite3 PQ:libpq 'JS[A-Z]:libjavascriptcoregtk' \
      jsc_:libjavascriptcoregtk 'u_:libicu' ucol_:libicu ubrk_:libicu; do
      grep -qE "^${pair%%:*}" <<<"$defined" && [[ $libs != *"${pair#*:} (static)"* ]] && libs+="${pair#*:} (static) "
    done
  fi
  if [[ -n $libs ]]; then
    echo "  links: $libs($syms symbols used from them)"
    rc=1
  else
    echo "  links none of cJSON, libcurl, SQLite, JavaScriptCore, ICU, libpq"
  fi
  if ((max && clines > max)); then
    echo "  over the ceiling: $clines lines of C, at most $max (--max-lines)"
    rc=1
  fi
done
((check)) || exit 0
exit $rc

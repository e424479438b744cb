#!/usr/bin/env bats
# The man pages chidori(1), chidori-launch(1), chidori-serve(1) (issue 12): made at
# build time from the binary's --help (scripts/man-from-help.py), so every flag
# --help lists is in the page; installed by make install.
load helpers

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

# render PAGE: the page as man shows it (wide, so no flag is cut at a line end).
render() {
  MANWIDTH=200 man -l "$1" 2>"$T/man.err"
}

# flags_of HELP...: every --flag the help texts list, one a line.
flags_of() {
  cat "$@" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

check_page() { # PAGE NAME HELP...
  local page=$1 name=$2; shift 2
  render "$page" >"$T/page.txt"
  [[ ! -s $T/man.err ]] || { echo "man said:"; cat "$T/man.err"; return 1; }
  grep -q "^NAME" "$T/page.txt"
  grep -q "^SYNOPSIS" "$T/page.txt"
  grep -qF "$name - " "$T/page.txt"
  local f missing=0 n=0
  while read -r f; do
    n=$((n + 1))
    grep -qF -- "$f" "$T/page.txt" || { echo "$page lacks $f"; missing=1; }
  done < <(flags_of "$@")
  [[ $missing -eq 0 && $n -gt 0 ]]
}

@test "man pages: each renders with man -l and holds every flag its --help lists" {
  command -v man >/dev/null || skip "man is not installed"
  "$CHIDORI" --help >"$T/chidori.help"
  for c in run replay doctor memory; do "$CHIDORI" "$c" --help >"$T/$c.help"; done
  check_page "$BUILD_DIR/man/chidori.1" chidori "$T/chidori.help" "$T"/{run,replay,doctor,memory}.help
  "$BUILD_DIR/chidori-launch" --help >"$T/launch.help"
  check_page "$BUILD_DIR/man/chidori-launch.1" chidori-launch "$T/launch.help"
  "$CHIDORI" serve --help >"$T/serve.help"
  check_page "$BUILD_DIR/man/chidori-serve.1" chidori-serve "$T/serve.help"
  # Not vacuous: a flag that is in no page is reported missing.
  echo "  --no-such-flag   x" >"$T/extra.help"
  run check_page "$BUILD_DIR/man/chidori-serve.1" chidori-serve "$T/serve.help" "$T/extra.help"
  [[ $status -ne 0 && $output == *"lacks --no-such-flag"* ]]
}

@test "man-from-help: a new help line lands in the page" {
  command -v man >/dev/null || skip "man is not installed"
  cat >"$T/x.help" <<'HELP'
Usage: tool [OPTIONS] FILE

Does a thing.  \backslash and .dot stay as they are.

Options:
  --alpha N             the first
                        continued here
  --unsafe-things=L,... fills its column
  -h, --help            show this help

Exit status: 0 ok, 2 usage.
HELP
  "$REPO/scripts/man-from-help.py" --name tool --summary "does a thing" --version 1.2 "$T/x.help" >"$T/tool.1"
  render "$T/tool.1" >"$T/tool.txt"
  [[ ! -s $T/man.err ]]
  grep -q '^SYNOPSIS' "$T/tool.txt"
  grep -qF 'tool [OPTIONS] FILE' "$T/tool.txt"
  grep -qF 'Does a thing.  \backslash and .dot stay as they are.' "$T/tool.txt"
  grep -qE '^ +--alpha N$' "$T/tool.txt"
  grep -qF 'the first continued here' "$T/tool.txt"
  grep -qE '^ +--unsafe-things=L,...$' "$T/tool.txt"
  grep -qF 'fills its column' "$T/tool.txt"
  grep -q '^EXIT STATUS' "$T/tool.txt"
}

@test "make install: chidori-launch and the man pages, found by man; uninstall removes them" {
  command -v man >/dev/null || skip "man is not installed"
  local b P=$T/prefix
  b=$(realpath --relative-to="$REPO" "$BUILD_DIR")
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$REPO" BUILD="$b" \
    -o "$b/chidori" -o "$b/chidori-worker" -o "$b/chidori-broker" -o "$b/chidori-monitor" -o "$b/libchidori-engine.so" \
    -o "$b/libchidori-net.so" install PREFIX="$P" >/dev/null
  [[ -L $P/bin/chidori-launch ]]
  run env -i PATH=/usr/bin:/bin "$P/bin/chidori-launch" --help
  [[ $status -eq 0 && ${lines[0]} == "Usage: chidori-launch [OPTIONS] -- PROGRAM [ARGS...]" ]]
  run bash -c "cd / && env -i PATH=/usr/bin:/bin '$P/bin/chidori-launch' --quiet -- /bin/echo boxed"
  [[ $status -eq 0 && $output == boxed ]]
  for p in chidori chidori-launch chidori-serve; do
    MANWIDTH=120 man -M "$P/share/man" "$p" >"$T/$p.txt" 2>"$T/err"
    grep -q "^NAME" "$T/$p.txt" || { echo "man $p:"; cat "$T/err"; false; }
  done
  grep -qF -- "--seccomp-errno" "$T/chidori-launch.txt"
  grep -qF -- "--max-queued" "$T/chidori-serve.txt"
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$REPO" BUILD="$b" -o "$b/chidori" uninstall PREFIX="$P" >/dev/null
  [[ ! -e $P/bin/chidori-launch && ! -e $P/share/man/man1/chidori-launch.1 && ! -e $P/share/man/man1/chidori.1 ]]
}

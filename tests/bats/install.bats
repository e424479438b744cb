#!/usr/bin/env bats
# `make install` / `make uninstall`, the installed binary finding its own
# files, `chidori doctor`'s lines for them, and the shell completions.
load helpers

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

# make_install ARGS...: the install target of this build, never rebuilding it
# (-o: the binaries are taken as they are, ASan build included).
make_install() {
  local b
  b=$(realpath --relative-to="$REPO" "$BUILD_DIR")
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$REPO" BUILD="$b" \
    -o "$b/chidori" -o "$b/chidori-worker" -o "$b/chidori-broker" -o "$b/chidori-monitor" -o "$b/chidori-privhelper" -o "$b/libchidori-engine.so" \
    -o "$b/libchidori-net.so" "$@"
}

# The installed binary, run from / with no CHIDORI_* override and no PATH
# entry that could lead back to the build tree.
installed() { # BIN ARGS...
  local bin=$1; shift
  (cd / && env -u CHIDORI_WORKER -u CHIDORI_ENGINE_LIB -u CHIDORI_NET_LIB -u CHIDORI_ESBUILD -u CHIDORI_BROKER -u CHIDORI_MONITOR \
     PATH=/usr/sbin:/usr/bin:/sbin:/bin "$bin" "$@")
}

agents() {
  agent a.js <<'JS'
module.exports = async (input) => ({ js: input });
JS
  agent b.ts <<'TS'
const n: number = await Promise.resolve(2);
export default async (input: number): Promise<number> => input * n;
TS
  agent f.js <<'JS'
module.exports = async (port) => {
  try { await fetch("http://127.0.0.1:" + port + "/"); return "fetched"; }
  catch (e) { return e.message; }
};
JS
}

# A TCP port on loopback with nothing listening (bound, never listened on).
closed_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

need_esbuild() {
  [[ -x $REPO/tools/node_modules/.bin/esbuild ]] || skip "no esbuild in tools/ (make deps)"
}

@test "make install PREFIX: the binary finds its worker, libraries and esbuild relative to itself" {
  need_esbuild
  P=$T/prefix
  make_install install PREFIX="$P" >/dev/null
  agents
  # doctor says where each file was found: all in this prefix
  run installed "$P/bin/chidori" doctor
  [[ $status -eq 0 ]]
  [[ $output == *"worker                     ok   $P/libexec/chidori/chidori-worker"* ]]
  [[ $output == *"engine library             ok   $P/libexec/chidori/libchidori-engine.so"* ]]
  [[ $output == *"network library            ok   $P/libexec/chidori/libchidori-net.so"* ]]
  [[ $output == *"esbuild                    ok   $P/libexec/chidori/esbuild"* ]]
  run installed "$P/bin/chidori" run --quiet "$T/a.js" --input 1
  [[ $status -eq 0 && $output == '{"js":1}' ]]
  run installed "$P/bin/chidori" run --quiet "$T/b.ts" --input 21
  [[ $status -eq 0 && $output == '42' ]]
  run installed "$P/bin/chidori" run --quiet --no-isolate "$T/a.js" --input 2
  [[ $status -eq 0 && $output == '{"js":2}' ]]
  # through the broker: chidori-monitor and chidori-broker from libexec
  run installed env CHIDORI_RUN_BROKER=1 "$P/bin/chidori" run --quiet "$T/a.js" --input 3
  [[ $status -eq 0 && $output == '{"js":3}' ]]
  # fetch loads libchidori-net.so: a refused connection is libcurl's answer
  port=$(closed_port)
  run installed "$P/bin/chidori" run --quiet --allow-host "127.0.0.1:$port" "$T/f.js" --input "$port"
  [[ $status -eq 0 ]]
  [[ $output == *"fetch failed"* && $output != *libchidori-net* ]]
}

@test "the installed tree runs with the build tree out of sight" {
  need_esbuild
  [[ $(id -u) -eq 0 ]] || skip "needs root: hides the build tree with a mount namespace"
  P=$T/prefix
  make_install install PREFIX="$P" >/dev/null
  agents
  # a tmpfs over the repository: nothing of the build tree is reachable
  run unshare --mount --propagation private sh -c '
    mount -t tmpfs none "$1" && cd / && [ ! -e "$1/build" ] &&
    env -u CHIDORI_WORKER -u CHIDORI_ESBUILD PATH=/usr/bin:/bin "$2/bin/chidori" run --quiet "$3/b.ts" --input 4' \
    sh "$REPO" "$P" "$T"
  [[ $status -eq 0 ]]
  [[ $output == '8' ]]
}

@test "make install DESTDIR stages the tree; the staged binary runs where it is" {
  need_esbuild
  make_install install DESTDIR="$T/stage" PREFIX=/usr >/dev/null
  [[ -x $T/stage/usr/bin/chidori && -x $T/stage/usr/libexec/chidori/chidori-worker ]]
  [[ -f $T/stage/usr/share/bash-completion/completions/chidori ]]
  [[ -f $T/stage/usr/share/zsh/site-functions/_chidori ]]
  agents
  run installed "$T/stage/usr/bin/chidori" run --quiet "$T/b.ts" --input 5
  [[ $status -eq 0 && $output == '10' ]]
}

@test "make uninstall removes exactly what make install put, in both forms" {
  need_esbuild
  P=$T/prefix
  mkdir -p "$P/bin" && echo keep >"$P/bin/other-tool"
  make_install install PREFIX="$P" >/dev/null
  [[ -x $P/bin/chidori ]]
  make_install uninstall PREFIX="$P" >/dev/null
  [[ $(find "$P" ! -type d | sort) == "$P/bin/other-tool" ]]
  [[ ! -e $P/libexec/chidori ]]
  make_install install DESTDIR="$T/stage" PREFIX=/opt/chidori >/dev/null
  [[ -x $T/stage/opt/chidori/bin/chidori ]]
  make_install uninstall DESTDIR="$T/stage" PREFIX=/opt/chidori >/dev/null
  [[ -z $(find "$T/stage" ! -type d) ]]
}

@test "doctor says when esbuild is missing, what that costs and how to fix it" {
  need_esbuild
  P=$T/prefix
  make_install install PREFIX="$P" >/dev/null
  rm "$P/libexec/chidori/esbuild"
  agents
  run installed "$P/bin/chidori" doctor
  [[ $status -eq 0 ]]
  [[ $output == *"esbuild                    no   not found: ES-module (.mjs) and TypeScript (.ts) agents cannot run (plain .js and CommonJS agents can); install esbuild on PATH"*"CHIDORI_ESBUILD=/path/to/esbuild"* ]]
  run installed "$P/bin/chidori" run --quiet "$T/b.ts"
  [[ $status -eq 2 && $output == *"esbuild was not found"* ]]
  # esbuild on PATH is found, and doctor says where
  mkdir "$T/pathbin" && ln -s "$REPO/tools/node_modules/.bin/esbuild" "$T/pathbin/esbuild"
  run bash -c 'cd / && env -u CHIDORI_ESBUILD PATH="$1:/usr/bin:/bin" "$2" doctor' sh "$T/pathbin" "$P/bin/chidori"
  [[ $output == *"esbuild                    ok   $T/pathbin/esbuild"* ]]
  run bash -c 'cd / && env -u CHIDORI_ESBUILD PATH="$1:/usr/bin:/bin" "$2" run --quiet "$3" --input 3' sh \
    "$T/pathbin" "$P/bin/chidori" "$T/b.ts"
  [[ $status -eq 0 && $output == '6' ]]
}

# complete_bash FILE WORDS...: COMPREPLY of the installed bash completion for
# the command line WORDS (the last one is the word being completed).
complete_bash() {
  local file=$1; shift
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _chidori; printf "%s\n" "${COMPREPLY[@]}"' \
    sh "$file" "$@"
}

@test "bash completion: commands and options from the binary's help, values by kind" {
  P=$T/prefix
  make_install install PREFIX="$P" >/dev/null
  C=$P/share/bash-completion/completions/chidori
  B=$P/bin/chidori
  mkdir -p "$T/w/sub" && touch "$T/w/a.ts" "$T/w/b.js" "$T/w/notes.txt"
  cd "$T/w"
  [[ $(complete_bash "$C" "$B" "") == $'run\nreplay\nlaunch\ndoctor\nmemory\nserve\n--help\n--version' ]]
  [[ $(complete_bash "$C" "$B" re) == "replay" ]]
  [[ $(complete_bash "$C" "$B" run --jo) == "--journal" ]]
  [[ $(complete_bash "$C" "$B" run --no-) == $'--no-jit\n--no-isolate' ]]
  [[ $(complete_bash "$C" "$B" serve --lis) == "--listen" ]]
  [[ $(complete_bash "$C" "$B" launch --ro) == "--ro-bind" ]]
  [[ $(complete_bash "$C" "$B" doctor --) == $'--require\n--json\n--seccomp-table' ]]
  [[ $(complete_bash "$C" "$B" memory --y) == "--yes" ]]
  # every option of `run --help` is offered
  for o in $("$B" run --help | grep -oE '^  (-h, )?--[a-z][a-z-]*' | grep -oE -- '--[a-z-]+'); do
    [[ $(complete_bash "$C" "$B" run "$o") == *"$o"* ]] || { echo "run $o not completed"; return 1; }
  done
  # the agent: scripts and folders only; --journal any file; --state-dir folders
  [[ $(complete_bash "$C" "$B" run "" | sort) == $'a.ts\nb.js\nsub' ]]
  [[ $(complete_bash "$C" "$B" run --journal "" | sort) == $'a.ts\nb.js\nnotes.txt\nsub' ]]
  [[ $(complete_bash "$C" "$B" run --state-dir "") == "sub" ]]
  [[ -z $(complete_bash "$C" "$B" run --input "") ]]
  # launch: after --, a command
  [[ $(complete_bash "$C" "$B" launch -- bashbu) == *bashbug* ]]
}

@test "zsh completion: commands, options and agent files in a real zsh" {
  command -v zsh >/dev/null || skip "zsh is not installed (scripts/deps.sh installs it)"
  P=$T/prefix
  make_install install PREFIX="$P" >/dev/null
  zsh -n "$P/share/zsh/site-functions/_chidori"
  mkdir -p "$T/w/sub" && touch "$T/w/a.ts" "$T/w/notes.txt"
  cd "$T/w"
  zc() { PATH="$P/bin:$PATH" timeout 60 zsh "$BATS_TEST_DIRNAME/complete.zsh" "$P/share/zsh/site-functions" "$1"; }
  [[ $(zc 'chidori ru') == 'chidori run ' ]]
  [[ $(zc 'chidori run --jo') == 'chidori run --journal ' ]]
  [[ $(zc 'chidori doctor --sec') == 'chidori doctor --seccomp-table ' ]]
  [[ $(zc 'chidori run a') == 'chidori run a.ts ' ]]
  [[ $(zc 'chidori launch -- bashbu') == 'chidori launch -- bashbug ' ]]
}

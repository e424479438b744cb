#!/usr/bin/env bash
# Install everything chidori needs to build and test on Debian 12, idempotently
# (zsh only to test the zsh completion).
# Run as root (or with sudo). Safe to re-run: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
  build-essential pkg-config clang libclang-rt-14-dev
  libjavascriptcoregtk-4.1-dev libcjson-dev libsqlite3-dev libcmocka-dev
  libseccomp-dev libcap-dev libmnl-dev libmicrohttpd-dev libcurl4-openssl-dev libicu-dev tzdata
  libpq-dev postgresql
  bats bc procps passwd util-linux bubblewrap nodejs npm
  python3 jq curl zsh runc crun
  kubernetes-client
  python3-venv python3-setuptools python3-wheel python3-pip python3-mypy python3-hypothesis
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from outside Debian's packages (e.g. a preinstalled node): accept them on PATH.
if command -v node >/dev/null && command -v npm >/dev/null; then
  tmp=(); for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || tmp+=("$p"); done
  missing=("${tmp[@]+"${tmp[@]}"}")
fi
# kubectl (kubernetes-client: `kubectl kustomize` builds deploy/kubernetes/ in
# tests/bats/k8s.bats) may come from another package (Google's, a newer one),
# which conflicts with Debian's on /usr/bin/kubectl: accept any on PATH.
if command -v kubectl >/dev/null; then
  tmp=(); for p in "${missing[@]}"; do [[ $p == kubernetes-client ]] || tmp+=("$p"); done
  missing=("${tmp[@]+"${tmp[@]}"}")
fi

if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The project-local npm packages (tools/package.json, pinned by
# tools/package-lock.json): esbuild, for ES-module and TypeScript agents and to
# bundle the engine's Node/Web surface (engine/node/), the packages that
# surface is made of, and kubernetes-models and yaml (tools/k8s-validate.mjs).
# Reinstalled when the lock file changes.
if [[ ! -x tools/node_modules/.bin/esbuild || ! -f tools/node_modules/.package-lock.json ||
      tools/package-lock.json -nt tools/node_modules/.package-lock.json ]]; then
  echo "deps: installing the npm packages of tools/package-lock.json into tools/"
  (cd tools && npm ci --no-audit --no-fund --silent)
fi
# The TypeScript SDK's dev dependencies (sdk/typescript/package-lock.json:
# typescript, @types/node), the same way.
if [[ ! -x sdk/typescript/node_modules/.bin/tsc || ! -f sdk/typescript/node_modules/.package-lock.json ||
      sdk/typescript/package-lock.json -nt sdk/typescript/node_modules/.package-lock.json ]]; then
  echo "deps: installing the npm packages of sdk/typescript/package-lock.json into sdk/typescript/"
  (cd sdk/typescript && npm ci --no-audit --no-fund --silent)
fi
# The qemu guest that tests cgroup v2 and kernel 6.1 (tests/vm): qemu,
# busybox-static and Debian's kernel package, cached under tests/vm/.cache.
if [[ ${CHIDORI_SKIP_VM:-0} != 1 && -x tests/vm/setup.sh ]]; then
  tests/vm/setup.sh >/dev/null || echo "deps: warning: the qemu guest could not be prepared (tests/vm/setup.sh); make test will report it"
fi
echo "deps: ok"

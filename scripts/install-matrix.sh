#!/usr/bin/env bash
# The README's install, as users with other Node/npm pairs meet it: a clean clone of this checkout's HEAD
# is installed with `npm ci` by each npm below, on a machine whose C/C++ toolchain is out of reach (cc, gcc,
# g++, make and python3 on PATH are stubs that fail the run if anything calls them), then `npm install` (the
# README's command) must leave package-lock.json as committed, then the service starts with `npm start` and
# answers /healthz and an upload (scripts/smoke.mjs); SIGTERM stops it.
#
#   bash scripts/install-matrix.sh              # Node 22 (this checkout's) + npm 10.9, and Node 22 + npm 11
#   PAIRS="22:10.9" bash scripts/install-matrix.sh
#
# Node 20 + npm 11 (the machine's own) is what .ci/run's own `npm ci` is. Needs this checkout installed first
# (its node_modules/.bin/node is the Node 22 used here).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
node22="$root/node_modules/.bin/node"
[ -x "$node22" ] || { echo "run npm ci in $root first (it brings Node 22)" >&2; exit 2; }
PAIRS="${PAIRS:-22:10.9 22:11}"

work="$(mktemp -d /tmp/pixvote-install-matrix.XXXXXX)"
server=""
cleanup() {
  [ -n "$server" ] && kill -KILL -- "-$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# No toolchain: each of these fails loudly, and leaves a mark the run checks.
mkdir -p "$work/no-toolchain" "$work/node22"
for tool in cc gcc g++ c++ make python python3; do
  printf '#!/bin/sh\necho "install-matrix: %s was called ($*): an install step needs a toolchain" >&2\n' "$tool" \
    >"$work/no-toolchain/$tool"
  printf 'touch "%s/toolchain-called"\nexit 1\n' "$work" >>"$work/no-toolchain/$tool"
  chmod +x "$work/no-toolchain/$tool"
done
ln -s "$node22" "$work/node22/node"
# A stranger's machine: no user npmrc (this one's sets nodedir, which npm 11 would warn about, for native builds).
: >"$work/npmrc"
export NPM_CONFIG_USERCONFIG="$work/npmrc" NPM_CONFIG_UPDATE_NOTIFIER=false

free_port() { "$node22" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

for pair in $PAIRS; do
  npm_version="${pair#*:}"
  dir="$work/clone-$npm_version"
  echo "=== Node $("$node22" --version) + npm $npm_version: clean clone, npm ci"
  git clone -q "$root" "$dir"
  export PATH="$work/no-toolchain:$work/node22:$PATH"
  npm_cli=(npx --yes "npm@$npm_version")
  # npx itself is the machine's; the npm it runs is npm@$npm_version, under the Node 22 first on PATH.
  (cd "$dir" && "${npm_cli[@]}" --version && "${npm_cli[@]}" ci --no-audit --no-fund) >"$work/ci.log" 2>&1 || {
    cat "$work/ci.log"
    echo "FAIL: npm $npm_version ci" >&2
    exit 1
  }
  cat "$work/ci.log"
  if grep -E '^npm (warn|error|ERR)' "$work/ci.log"; then
    echo "FAIL: npm $npm_version ci printed the warnings or errors above" >&2
    exit 1
  fi
  [ ! -e "$work/toolchain-called" ] || { echo "FAIL: an install step called a compiler or python" >&2; exit 1; }
  [ -x "$dir/node_modules/.bin/node" ] || { echo "FAIL: npm $npm_version ci brought no node_modules/.bin/node" >&2; exit 1; }
  # Contributors on either npm run `npm install`: it must not rewrite the lockfile (.npmrc says which form holds).
  (cd "$dir" && "${npm_cli[@]}" install --no-audit --no-fund) >"$work/install.log" 2>&1 || {
    cat "$work/install.log"
    echo "FAIL: npm $npm_version install" >&2
    exit 1
  }
  git -C "$dir" diff --exit-code --stat package-lock.json || {
    echo "FAIL: npm $npm_version install rewrote package-lock.json (see .npmrc and test/unit/install.test.ts)" >&2
    exit 1
  }

  port="$(free_port)"
  echo "=== npm $npm_version start (port $port), then the smoke test"
  # Its own process group (npx, npm and the server under it), so SIGTERM reaches all of them, as a terminal's
  # Ctrl-C or a supervisor's stop does, and nothing can outlive the check.
  (cd "$dir" && PORT="$port" HOST=127.0.0.1 DATA_DIR="$work/data-$npm_version" exec setsid "${npm_cli[@]}" start) \
    >"$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    kill -0 "$server" 2>/dev/null || { cat "$work/server.log"; echo "FAIL: the server exited" >&2; exit 1; }
    sleep 0.5
  done
  "$node22" "$root/scripts/smoke.mjs" "http://127.0.0.1:$port" || { cat "$work/server.log"; exit 1; }
  kill -TERM -- "-$server"
  for _ in $(seq 1 40); do pgrep -g "$server" >/dev/null || break; sleep 0.25; done
  if pgrep -g "$server" >/dev/null; then
    cat "$work/server.log"
    echo "FAIL: still running 10 s after SIGTERM" >&2
    exit 1
  fi
  wait "$server" || true
  server=""
  if grep -iE 'warning|"level":(50|60)' "$work/server.log"; then
    echo "FAIL: the server logged the warnings or errors above" >&2
    exit 1
  fi
  echo "=== Node 22 + npm $npm_version: installed, served, stopped"
  rm -rf "$dir" "$work/data-$npm_version"
done

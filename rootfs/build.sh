#!/usr/bin/env bash
# Builds a toolchain image from Debian 12 packages with no Docker, and imports it:
#   rootfs/build.sh [--push HOST:PORT] LANG [LANG...]   (python, go, cpp, ...; `all` for every recipe)
#   rootfs/build.sh --relock LANG...                    (accept new package versions, see below)
#   rootfs/build.sh --verify LANG...                    (rebuild from scratch: byte-identical?)
#   rootfs/build.sh --arch arm64 LANG...                (another architecture's image, built
#                                                        through qemu-user; not imported here)
#   rootfs/build.sh --no-import LANG...                 (the tarball only: builds can run side
#                                                        by side, the imports after them)
#   rootfs/build.sh swebench RECORDS.jsonl --repos DIR  (SWE-bench replica images, under the
#                                                        records' official names: rootfs/swebench.py)
#   rootfs/build.sh multi-swe-bench RECORDS --repos DIR (Multi-SWE-bench replica images, under the
#                                                        harness's names: rootfs/multi_swebench.py)
# A recipe is rootfs/LANG.packages (Debian packages, one per line; `pkg=version` pins), an
# optional rootfs/LANG.setup (a shell script run inside the new root, with network, to install
# what Debian does not package), an optional executable rootfs/LANG.customize (run on the
# host after it, with the new root as its argument: e.g. to make a generated file
# reproducible), optional rootfs/LANG.release (the Debian release, bookworm unless it names
# another, e.g. bullseye for its Python 3.9), optional rootfs/LANG.suites (more suites) with rootfs/LANG.preferences (apt
# pins saying which packages come from them), and any other rootfs/LANG.NAME
# file, handed to the setup script as /tmp/recipe/NAME (npm's
# package-lock.json, a Cargo.lock: the setup installs exactly what they pin).
# rootfs/LANG.lock pins every Debian package of the image (`pkg=version`, all of them, not
# only those asked for): a build installs exactly those versions, and an image whose packages
# differ from its lock is refused (Debian moved a package; point POLYSANDBOX_DEBIAN_MIRROR at
# snapshot.debian.org to rebuild the locked set, or --relock to accept the new versions).
# With SOURCE_DATE_EPOCH the tarball is reproducible. It is cached by the recipe's content:
# .cache/images/LANG-<hash>.tar, so a second run takes seconds. It is imported as
# localhost/polysandbox/LANG:bookworm.
# mmdebstrap runs in unshare mode: no root needed where unprivileged user namespaces work.
set -euo pipefail
cd "$(dirname "$0")/.."
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
MIRROR=${POLYSANDBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Part of every image's cache key: bump it when a change here changes what the images contain.
RECIPE_FORMAT=1
BIN=${POLYSANDBOX_BIN:-target/$(rustc -vV | sed -n 's/^host: //p')/release/polysandbox}
[ -x "$BIN" ] || cargo build --release --quiet
if [ "${1:-}" = swebench ]; then
  shift
  exec python3 rootfs/swebench.py --bin "$BIN" "$@"
fi
if [ "${1:-}" = multi-swe-bench ]; then
  shift
  exec python3 rootfs/multi_swebench.py --bin "$BIN" "$@"
fi
push=""
relock=""
verify=""
noimport=""
host_arch=$(dpkg --print-architecture)
arch=$host_arch
while [ $# -gt 0 ]; do
  case "$1" in
    --push) push=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --relock) relock=1; shift ;;
    --verify) verify=1; shift ;;
    --no-import) noimport=1; shift ;;
    *) break ;;
  esac
done
langs=("$@")
if [ "${langs[0]:-}" = all ]; then
  langs=()
  for p in rootfs/*.packages; do langs+=("$(basename "$p" .packages)"); done
fi
[ ${#langs[@]} -gt 0 ] || { echo "usage: rootfs/build.sh LANG... | all" >&2; exit 2; }
mkdir -p .cache/images

# The image's Debian packages, `pkg=version`, sorted.
installed() {
  tar -xOf "$1" ./var/lib/dpkg/status | awk '
    /^Package:/ { p = $2 } /^Version:/ { v = $2 } /^Status:/ { ok = ($0 ~ / installed$/) }
    /^$/ { if (p != "" && ok) print p "=" v; p = ""; ok = 0 }
    END { if (p != "" && ok) print p "=" v }' | LC_ALL=C sort
}

# Compares a built tarball with $lock: writes the lock if there is none (or with --relock),
# else fails naming what moved.
check_lock() {
  local got
  got=$(installed "$1")
  if [ ! -f "$lock" ] || [ -n "$relock" ]; then
    printf '%s\n' "$got" > "$lock"
    echo "build: $lang: wrote $lock ($(wc -l < "$lock") packages)"
    return 0
  fi
  if ! diff -u "$lock" <(printf '%s\n' "$got") > "$1.lockdiff"; then
    echo "build: $lang: the image's packages differ from $lock:" >&2
    grep '^[-+][^-+]' "$1.lockdiff" | head -20 >&2
    echo "build: $lang: Debian moved them; rebuild from a snapshot mirror (POLYSANDBOX_DEBIAN_MIRROR=https://snapshot.debian.org/archive/debian/DATE) or accept them: rootfs/build.sh --relock $lang" >&2
    return 1
  fi
  rm -f "$1.lockdiff"
}

# Builds the image of $lang's recipe into the tarball $1.
mmdebstrap_into() {
  include=$(grep -v '^\s*#' "$pkgs" | grep -v '^\s*$' | paste -sd, -)
  hooks=()
  # Locked: apt pins every package at its locked version (priority 1001, so even a downgrade),
  # from before the first package is installed; dependencies are still chosen and marked
  # automatic by apt as in an unlocked build, so a locked rebuild is the same image. A
  # version the mirror no longer has cannot be pinned: the check below then names it.
  if [ -f "$lock" ] && [ -z "$relock" ]; then
    prefs=.cache/images/.$lang$suffix.pin
    sed 's/^\([^=]*\)=\(.*\)$/Package: \1\nPin: version \2\nPin-Priority: 1001\n/' "$lock" > "$prefs"
    hooks+=(--setup-hook="mkdir -p \"\$1/etc/apt/preferences.d\" && cp '$prefs' \"\$1/etc/apt/preferences.d/polysandbox-lock\""
            --customize-hook='d="$1/etc/apt/preferences.d" t=$(mktemp) && touch -r "$d" "$t" && rm -f "$d/polysandbox-lock" && touch -r "$t" "$d" && rm -f "$t"')
  fi
  # A recipe's own apt preferences (rootfs/LANG.preferences): which packages may come from
  # another suite it names (e.g. a few from trixie, the rest from bookworm). In place while
  # apt installs, not left in the image.
  if [ -f "rootfs/$lang.preferences" ]; then
    hooks+=(--setup-hook="mkdir -p \"\$1/etc/apt/preferences.d\" && cp 'rootfs/$lang.preferences' \"\$1/etc/apt/preferences.d/polysandbox-recipe\""
            --customize-hook='d="$1/etc/apt/preferences.d" t=$(mktemp) && touch -r "$d" "$t" && rm -f "$d/polysandbox-recipe" && touch -r "$t" "$d" && rm -f "$t"')
  fi
  if [ ${#extra[@]} -gt 0 ]; then
    hooks+=(--customize-hook="mkdir -p \"\$1/tmp/recipe\"$(for f in "${extra[@]}"; do printf " && cp '%s' \"\$1/tmp/recipe/%s\"" "$f" "${f#rootfs/$lang.}"; done)")
  fi
  if [ -f "$setup" ]; then
    # The setup step may fetch from npm or crates.io: it borrows the host's CA bundle (a site
    # may add its own CA there), which is removed again and is not part of the image.
    hooks+=(--customize-hook="cp '$setup' \"\$1/tmp/setup.sh\" && cp /etc/ssl/certs/ca-certificates.crt \"\$1/tmp/host-ca.crt\""
            --customize-hook="chroot \"\$1\" env HOME=/root NODE_EXTRA_CA_CERTS=/tmp/host-ca.crt SSL_CERT_FILE=/tmp/host-ca.crt CARGO_HTTP_CAINFO=/tmp/host-ca.crt POLYSANDBOX_EMULATED='${suffix:+1}' sh -e /tmp/setup.sh"
            --customize-hook='rm -f "$1/tmp/setup.sh" "$1/tmp/host-ca.crt"')
  fi
  if [ -f "$customize" ]; then
    hooks+=(--customize-hook="'$PWD/$customize' \"\$1\"")
  fi
  # Suites: bookworm, plus any a recipe names in rootfs/LANG.suites (e.g. bookworm-backports).
  release=bookworm
  [ -f "rootfs/$lang.release" ] && release=$(tr -d ' \n' < "rootfs/$lang.release")
  sources=("deb $MIRROR $release main")
  if [ -f "rootfs/$lang.suites" ]; then
    while read -r suite; do
      case "$suite" in ''|'#'*) ;; *) sources+=("deb $MIRROR $suite main") ;; esac
    done < "rootfs/$lang.suites"
  fi
  echo "build: $lang${suffix} ($include)"
  mmdebstrap --quiet --mode=unshare --variant=apt --architectures="$arch" --include="$include" "${hooks[@]}" \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/tmp/recipe' \
    "$release" "$1" "${sources[@]}"
}

case "$arch" in amd64|arm64) ;; *) echo "rootfs/build.sh: --arch $arch: amd64 or arm64" >&2; exit 2 ;; esac
# Another architecture's image: its own lock and cache key; its maintainer scripts and setup run
# through qemu-user (binfmt_misc, as .ci/arm64-vm.sh sets up); it is not imported here.
suffix=""
if [ "$arch" != "$host_arch" ]; then
  suffix=".$arch"
  [ -e "/proc/sys/fs/binfmt_misc/qemu-${arch/arm64/aarch64}" ] || [ -e "/proc/sys/fs/binfmt_misc/qemu-${arch}" ] ||
    { echo "rootfs/build.sh: --arch $arch needs qemu-user-static registered with binfmt_misc" >&2; exit 2; }
fi
for lang in "${langs[@]}"; do
  pkgs=rootfs/$lang.packages
  [ -f "$pkgs" ] || { echo "rootfs/build.sh: no recipe rootfs/$lang.packages" >&2; exit 2; }
  setup=rootfs/$lang.setup
  lock=rootfs/$lang$suffix.lock
  customize=rootfs/$lang.customize
  # Files handed to the setup script (everything of the recipe but these five kinds).
  extra=()
  for f in rootfs/"$lang".*; do
    case "${f#rootfs/$lang.}" in packages|setup|customize|suites|preferences|release|lock|amd64.lock|arm64.lock) ;; *) extra+=("$f") ;; esac
  done
  # The lock is not part of the key: it describes the output, and is checked against it.
  hash=$( (echo "$RECIPE_FORMAT$suffix"; cat "$pkgs" $(for f in "$setup" "$customize" "rootfs/$lang.suites" "rootfs/$lang.preferences" "rootfs/$lang.release"; do [ -f "$f" ] && echo "$f"; done) "${extra[@]}") | sha256sum | cut -c1-16)
  tarball=.cache/images/$lang$suffix-$hash.tar
  tag=bookworm
  [ -f "rootfs/$lang.release" ] && tag=$(tr -d ' \n' < "rootfs/$lang.release")
  ref=localhost/polysandbox/$lang:$tag
  if [ ! -f "$tarball" ]; then
    start=$(date +%s)
    mmdebstrap_into "${tarball%.tar}.partial.tar"
    check_lock "${tarball%.tar}.partial.tar" || exit 1
    mv "${tarball%.tar}.partial.tar" "$tarball"
    # Older builds of this recipe are dead weight now.
    find .cache/images -name "$lang$suffix-*.tar" ! -name "$(basename "$tarball")" -delete
    echo "build: $lang: $(du -h "$tarball" | cut -f1) in $(( $(date +%s) - start )) s"
  elif ! check_lock "$tarball"; then
    echo "build: $lang: the cached $tarball is not what $lock pins: rebuild it (delete it)" >&2
    exit 1
  fi
  if [ -n "$verify" ]; then
    # Reproducible? The same recipe again, from scratch, must give the same bytes.
    again=.cache/images/.verify-$lang-$hash.tar
    mmdebstrap_into "$again"
    if cmp -s "$tarball" "$again"; then
      echo "build: $lang: rebuilt byte-identical ($(sha256sum < "$again" | cut -c1-16))"
      rm -f "$again"
    else
      echo "build: $lang: a rebuild differs from $tarball:" >&2
      d=$(mktemp -d)
      mkdir "$d/a" "$d/b"
      tar -xf "$tarball" -C "$d/a" --exclude=./dev 2>/dev/null || true
      tar -xf "$again" -C "$d/b" --exclude=./dev 2>/dev/null || true
      diff -rq --no-dereference "$d/a" "$d/b" | sed "s|$d/a|cached:|g; s|$d/b|rebuilt:|g" | head -20 >&2 || true
      cmp -s <(tar -tvf "$tarball") <(tar -tvf "$again") || echo "build: $lang: (and the archive listings differ)" >&2
      rm -rf "$d" "$again"
      exit 1
    fi
  fi
  if [ -n "$suffix" ] || [ -n "$noimport" ]; then
    echo "$ref $tarball"
    continue
  fi
  # Imported already (this tarball, this store, the name still there): nothing to do.
  store="${POLYSANDBOX_ROOT:-default}-$(id -u)"
  marker=.cache/images/.$lang-$hash.imported-$(echo "$store" | sha256sum | cut -c1-12)
  if [ ! -f "$marker" ] || ! "$BIN" images --format '{{.Repository}}:{{.Tag}}' | grep -x "$ref" >/dev/null; then
    "$BIN" import "$tarball" --tag "$ref" >/dev/null
    touch "$marker"
  fi
  if [ -n "$push" ]; then
    # Into a registry (e.g. Debian's docker-registry on 127.0.0.1) for tests and benchmarks.
    if [ -n "${POLYSANDBOX_ROOT:-}" ]; then store=$POLYSANDBOX_ROOT
    elif [ "$(id -u)" = 0 ]; then store=/var/lib/polysandbox
    else store=${XDG_DATA_HOME:-$HOME/.local/share}/polysandbox; fi
    # The store keeps layers as files and records: skopeo reads what `save` writes.
    saved=$(mktemp "${TMPDIR:-/tmp}/push-XXXXXX.oci.tar")
    "$BIN" save --root "$store" --format oci-archive -o "$saved" "$ref"
    skopeo copy --quiet --dest-tls-verify=false "oci-archive:$saved:$ref" "docker://$push/polysandbox/$lang:$tag"
    rm -f "$saved"
    echo "pushed $push/polysandbox/$lang:$tag"
  fi
  echo "$ref $tarball"
done

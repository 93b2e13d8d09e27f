#!/bin/sh
# Builds a minimal root filesystem from Debian's busybox-static, with no Docker and no root:
#   rootfs/busybox.sh DEST [OWNER]
# DEST gets bin/busybox, a link per applet, /etc/passwd and /etc/group, and empty /proc /dev
# /sys /tmp /root. With OWNER (as root), the tree is chowned to that user (a rootless user's
# own rootfs). Built in a temporary directory and renamed into place, so a half-built tree is
# never seen; an existing DEST is left as it is.
set -eu
dest=${1:?usage: rootfs/busybox.sh DEST [OWNER]}
owner=${2:-}
busybox=${BUSYBOX:-/bin/busybox}
[ -e "$dest" ] && exit 0
[ -x "$busybox" ] || { echo "rootfs/busybox.sh: $busybox not found (apt-get install busybox-static)" >&2; exit 1; }
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' || { echo "rootfs/busybox.sh: $busybox is not static (install busybox-static)" >&2; exit 1; }
mkdir -p "$(dirname "$dest")"
tmp=$(mktemp -d "$(dirname "$dest")/.busybox.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/etc" "$tmp/proc" "$tmp/dev" "$tmp/sys" "$tmp/tmp" "$tmp/root" "$tmp/mnt"
chmod 1777 "$tmp/tmp"
cp "$busybox" "$tmp/bin/busybox"
for a in $("$busybox" --list); do
    [ "$a" = busybox ] || ln -s busybox "$tmp/bin/$a"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$tmp/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$tmp/etc/group"
if [ -n "$owner" ]; then chown -R "$owner:" "$tmp"; fi
chmod 755 "$tmp"
mv -T "$tmp" "$dest"
trap - EXIT

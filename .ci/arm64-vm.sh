#!/bin/bash
# The sandbox test suite (tests/sandbox.rs) on a real arm64 kernel: Debian bookworm arm64 under
# qemu-system-aarch64 (TCG, no KVM) on an x86_64 Debian 12 host, booted with a pure cgroup v2
# hierarchy and a subtree delegated to the unprivileged user as systemd delegates
# user@UID.service (by default: the v1/v2 hybrid layout of this host is covered by the x86_64
# suites, and CI has no room for a second emulated boot), or with the hybrid layout on request.
# In each boot the suite runs as root and as psbtest (the suite does both). The v2 boot also
# pulls a multi-arch image, evaluates the python fixture (gold and stub) and checks the
# per-test usage of the resource fixture's python tests (as root).
# As root, from a checkout:   bash .ci/arm64-vm.sh [LAYOUT...]   (hybrid and/or v2; default: v2)
# Env: WORKDIR (default .cache/arm64; the rootfs and kernel are kept there as a cache),
# LEAK_RUNS (POLYSANDBOX_LEAK_RUNS in the VM, default 100), TEST_THREADS (4), VM_TIMEOUT (900 s
# a boot), CPU (max,pauth-impdef=on: about 3x faster under TCG than plain max), SUITES (the test
# suites run in the VM, default "sandbox host_safety"; empty: only the pull and the evals).
# Prints the suite's own `cargo test` lines; exits 0 only if every boot's suite passed.
# Leaves binfmt_misc mounted with qemu-aarch64 registered (the arm64 rootfs's maintainer
# scripts run through it).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
W=${WORKDIR:-$REPO/.cache/arm64}
CPU=${CPU:-max,pauth-impdef=on}
# --prepare: only what takes no cargo (packages, the arm64 toolchain image, rootfs and kernel,
# all cached), so that tests/run.sh can build them while the x86_64 suites run.
PREPARE=""; if [ "${1:-}" = --prepare ]; then PREPARE=1; shift; fi
LAYOUTS=("$@"); [ ${#LAYOUTS[@]} -gt 0 ] || LAYOUTS=(v2)
T0=$(date +%s)
phase() { echo "== arm64 [$(( $(date +%s) - T0 ))s] $*"; }
mkdir -p "$W"
# Debian's mirror as this machine's apt has it (mmdebstrap's default otherwise).
MIRROR=${POLYSANDBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}

phase "packages"
need=()
for p in qemu-system-arm qemu-user-static binfmt-support mmdebstrap cpio e2fsprogs file gcc-aarch64-linux-gnu; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
rustup target list --installed | grep -q aarch64-unknown-linux-gnu || rustup target add aarch64-unknown-linux-gnu
[ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
update-binfmts --enable qemu-aarch64 2>/dev/null || true
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || { echo "arm64: qemu-aarch64 is not registered with binfmt_misc" >&2; exit 1; }

if [ -z "$PREPARE" ]; then
phase "arm64 build: polysandbox and the sandbox test binary (static, non-PIE on aarch64)"
cargo build --release --quiet --target aarch64-unknown-linux-gnu
SUITES=${SUITES-sandbox host_safety}
TESTBINS=()
for suite in $SUITES; do
  t=$(cargo test --release --target aarch64-unknown-linux-gnu --no-run --test "$suite" 2>&1 |
      sed -n "s/.*Executable tests\/$suite.rs (\(.*\))/\1/p")
  [ -n "$t" ] || { echo "arm64: no test binary for $suite" >&2; exit 1; }
  case $t in /*) ;; *) t=$REPO/$t;; esac
  TESTBINS+=("$t")
done
file -L target/aarch64-unknown-linux-gnu/release/polysandbox | grep -q "ARM aarch64.*statically linked"

fi

# Python only: the Go image takes its packages' maintainer scripts through qemu-user for
# about ten minutes cold, which CI's 90 minutes no longer have room for.
phase "arm64 toolchain image for the eval in the VM: python (rootfs/build.sh --arch arm64, cached)"
EVAL_LANGS="python"
IMAGES=()
for lang in $EVAL_LANGS; do
  line=$(rootfs/build.sh --arch arm64 "$lang" | tail -1)
  IMAGES+=("$line")
done

if [ -z "$PREPARE" ]; then
phase "a local registry with a multi-arch image (amd64: busybox, no python; arm64/v8: python)"
for p in docker-registry skopeo; do command -v "$p" >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$p" >/dev/null; done
REG=$W/registry; rm -rf "$REG"; mkdir -p "$REG/data"
[ -d .cache/rootfs/busybox ] || sh rootfs/busybox.sh .cache/rootfs/busybox
tar -C .cache/rootfs/busybox -cf "$REG/busybox.tar" .
python3 .ci/multiarch-layout.py "$REG/layout" "$REG/busybox.tar" "$(echo "${IMAGES[0]}" | cut -d' ' -f2)" 1
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' "$REG/data" "$PORT" > "$REG/config.yml"
docker-registry serve "$REG/config.yml" >/dev/null 2>&1 &
REG_PID=$!
trap 'kill $REG_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
skopeo copy --quiet --all --dest-tls-verify=false "oci:$REG/layout:1" "docker://127.0.0.1:$PORT/polysandbox/multi:1"
rm -rf "$REG/layout" "$REG/busybox.tar"

fi

phase "arm64 rootfs (cached)"
# The marker names the package list: a changed list builds the rootfs anew.
PKGS=busybox-static,util-linux,gcc,libc6-dev,file,procps,python3-minimal
MARK="$W/root.$(echo "$PKGS" | sha256sum | cut -c1-12).done"
if [ ! -e "$MARK" ]; then
  rm -rf "$W/root" "$W"/root.*done
  mmdebstrap --quiet --arch=arm64 --variant=minbase \
    --include="$PKGS" \
    --customize-hook='chroot "$1" useradd -m -s /bin/sh psbtest' \
    bookworm "$W/root" "$MIRROR" </dev/null
  touch "$MARK"
fi
if [ ! -e "$W/kernel.done" ]; then
  rm -rf "$W/kernel"
  mmdebstrap --quiet --arch=arm64 --variant=extract --include=linux-image-arm64 bookworm "$W/kernel" "$MIRROR" </dev/null
  touch "$W/kernel.done"
fi
KMOD=$W/kernel/lib/modules; [ -d "$KMOD" ] || KMOD=$W/kernel/usr/lib/modules
KVER=$(ls "$KMOD" | head -1)

if [ -n "$PREPARE" ]; then phase "prepared"; exit 0; fi

phase "initrd: busybox, and the modules for root on virtio-blk/ext4 and for overlayfs"
I=$(mktemp -d); mkdir -p "$I"/{bin,proc,sys,dev,newroot,mod}
cp "$W/root/bin/busybox" "$I/bin/busybox"
for m in lib/crc16 crypto/crc32c_generic fs/mbcache fs/jbd2/jbd2 fs/ext4/ext4 \
         drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev \
         drivers/virtio/virtio_pci drivers/block/virtio_blk fs/overlayfs/overlay \
         net/core/failover drivers/net/net_failover drivers/net/virtio_net; do
  cp "$KMOD/$KVER/kernel/$m.ko" "$I/mod/"; basename "$m.ko" >> "$I/mod/order"
done
cat > "$I/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
for m in $(cat /mod/order); do insmod /mod/$m || echo "initrd: insmod $m failed"; done
i=0; while [ ! -b /dev/vda ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
mount -t ext4 -o rw /dev/vda /newroot || { echo "initrd: cannot mount /dev/vda"; poweroff -f; }
umount /proc /sys; mount --move /dev /newroot/dev
exec switch_root /newroot /psinit
EOF
chmod +x "$I/init"
(cd "$I" && find . | cpio -o -H newc --quiet | gzip -1) > "$W/initrd.gz"
rm -rf "$I"
cp "$W/kernel/boot/vmlinuz-$KVER" "$W/vmlinuz"

phase "stage the checkout's paths (CARGO_MANIFEST_DIR and CARGO_BIN_EXE_polysandbox are absolute)"
R="$W/root"
rm -rf "${R:?}/${REPO#/}"; mkdir -p "$R/$REPO/rootfs" "$R/$REPO/tests/fixtures"
cp rootfs/busybox.sh "$R/$REPO/rootfs/"
cp tests/fixtures/probe.c "$R/$REPO/tests/fixtures/"
cp -r tests/fixtures/eval "$R/$REPO/tests/fixtures/"
rm -rf "$R/images"; mkdir -p "$R/images"
IMPORTS=""
for line in "${IMAGES[@]}"; do
  ref=${line%% *}; tarball=${line#* }
  cp "$tarball" "$R/images/"
  IMPORTS="$IMPORTS $ref=/images/$(basename "$tarball")"
done
mkdir -p "$R/$REPO/target/aarch64-unknown-linux-gnu/release"
cp target/aarch64-unknown-linux-gnu/release/polysandbox "$R/$REPO/target/aarch64-unknown-linux-gnu/release/"
for t in "${TESTBINS[@]}"; do mkdir -p "$R/$(dirname "$t")"; cp "$t" "$R/$t"; done
# The per-test usage check of the resource fixture's eval in the VM (busybox awk, on junit.xml:
# the rootfs's python is the minimal one, without json).
cat > "$R/usage-check.awk" <<'AWK'
# Each test of python/usage measured in-runner; the burner charged with its 0.3 s of CPU, loosely
# (the pytest plugin's own work in the test's span is emulated too), the sleeper and the idle
# test with none of it; the allocator's peak at least 200 MiB; the sleeper's wall at least 0.5 s.
# The allocator's CPU is not bounded: its page faults cost many times their native time here.
function attr(k) {
  if (!match($0, k "=\"[^\"]*\"")) return ""
  return substr($0, RSTART + length(k) + 2, RLENGTH - length(k) - 3)
}
# junit.xml: a testcase per test (its time the wall), the test's figures as its suite's
# properties named "TEST: what" (JUnit's schema has properties on suites only).
/<testsuite / { inst = attr(" name") }
inst == "python/usage" && /<property name="[^"]*: (cpu_user_s|cpu_system_s|memory_peak_bytes|measured_by)"/ {
  p = attr(" name"); k = p; sub(/.*: /, "", k); t = p; sub(/: [a-z_]*$/, "", t); v = attr("value")
  seen[t] = 1
  if (k == "cpu_user_s" || k == "cpu_system_s") cpu[t] += v
  else if (k == "memory_peak_bytes") peak[t] = v + 0
  else how[t] = v
}
inst == "python/usage" && /<testcase / { wall[attr(" name")] = attr(" time") + 0 }
END {
  for (name in seen) {
    n++
    printf "PSVM: usage %s: cpu %.3f s, peak %d MiB, wall %.3f s, %s\n", name, cpu[name], peak[name] / 1048576, wall[name], how[name]
    if (how[name] != "in-runner") { print "PSVM: usage: " name " not measured in-runner"; bad = 1 }
    if (name ~ /burns_cpu/) { burner = 1; if (cpu[name] < 0.25 || cpu[name] > 0.6) { print "PSVM: usage: the burner's cpu is not about 0.3 s"; bad = 1 } }
    if (name ~ /sleeps/ && wall[name] < 0.5) { print "PSVM: usage: the sleeper's wall under 0.5 s"; bad = 1 }
    if ((name ~ /sleeps/ || name ~ /does_nothing/) && cpu[name] >= 0.1) { print "PSVM: usage: " name " charged with the burner's work"; bad = 1 }
    if (name ~ /allocates_memory/ && peak[name] < 200 * 1048576) { print "PSVM: usage: the allocator's peak under 200 MiB"; bad = 1 }
  }
  if (n != 4 || !burner) { print "PSVM: usage: " n + 0 " tests of python/usage measured, not 4"; bad = 1 }
  exit bad
}
AWK
cat > "$R/psinit" <<EOF
#!/bin/sh
# PID 1 of the VM: the mounts a host has, the cgroup layout the kernel command line names
# (psb.cgroups=hybrid|v2), the suite, power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -o remount,rw /; mount -t proc proc /proc; mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm /run; mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm; mount -t tmpfs tmpfs /run
layout=hybrid; grep -q 'psb.cgroups=v2' /proc/cmdline && layout=v2
if [ \$layout = v2 ]; then
  mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
  # As systemd delegates user@UID.service: the user owns the directory and its
  # cgroup.procs, cgroup.subtree_control and cgroup.threads; its processes live in a leaf.
  echo "+cpu +memory +pids" > /sys/fs/cgroup/cgroup.subtree_control
  u=\$(id -u psbtest); s=/sys/fs/cgroup/user.slice/user-\$u.slice/user@\$u.service
  mkdir -p \$s
  echo "+cpu +memory +pids" > /sys/fs/cgroup/user.slice/cgroup.subtree_control
  echo "+cpu +memory +pids" > /sys/fs/cgroup/user.slice/user-\$u.slice/cgroup.subtree_control
  mkdir \$s/tests
  chown psbtest \$s \$s/cgroup.procs \$s/cgroup.subtree_control \$s/cgroup.threads \
    \$s/tests \$s/tests/cgroup.procs \$s/tests/cgroup.subtree_control \$s/tests/cgroup.threads
  export POLYSANDBOX_TEST_USER_CGROUP=\$s/tests
else   # like the CI host: v1 controllers, and an empty v2 tree at unified/
  mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup
  for c in cpu cpuacct cpuset memory devices freezer blkio pids; do
    mkdir /sys/fs/cgroup/\$c; mount -t cgroup -o \$c cgroup /sys/fs/cgroup/\$c
  done
  mkdir /sys/fs/cgroup/systemd /sys/fs/cgroup/unified
  mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
  mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
fi
hostname vm; busybox ip link set lo up
# qemu's user network: the host's loopback is 10.0.2.2 (the registry for the pull test).
busybox ip link set eth0 up && busybox ip addr add 10.0.2.15/24 dev eth0 && busybox ip route add default via 10.0.2.2
echo "PSVM: booted (\$layout cgroups), uptime \$(cut -d' ' -f1 /proc/uptime) s, \$(uname -m) \$(uname -r), \$(nproc) cpus"
cd $REPO
rc=0
for t in ${TESTBINS[*]}; do
  echo "PSVM: running \$(basename \$t)"
  POLYSANDBOX_LEAK_RUNS=${LEAK_RUNS:-100} \$t --test-threads=${TEST_THREADS:-4} || rc=1
done
# Pull a multi-arch image from the host's registry (the native platform, then asked for by
# name) and run it: only its arm64/v8 entry has python3 (pure v2 boot).
if [ \$layout = v2 ]; then
  BIN=$REPO/target/aarch64-unknown-linux-gnu/release/polysandbox
  ref=10.0.2.2:$PORT/polysandbox/multi:1
  if \$BIN pull -q --tls-verify=false \$ref && \$BIN pull -q --tls-verify=false --platform linux/arm64 \$ref; then
    m=\$(\$BIN run \$ref -- python3 -c 'import platform; print(platform.machine())' 2>&1)
    echo "PSVM: pulled linux/arm64 of \$ref; python3 inside says: \$m"
    [ "\$m" = aarch64 ] || rc=1
  else
    echo "PSVM: pull of \$ref failed"; rc=1
  fi
fi
# One small eval with the arm64 toolchain image (pure v2 boot): gold resolves the python
# fixture, the stub does not.
if [ \$layout = v2 ]; then
  BIN=$REPO/target/aarch64-unknown-linux-gnu/release/polysandbox
  for i in $IMPORTS; do \$BIN import "\${i#*=}" --tag "\${i%%=*}" >/dev/null || rc=1; done
  for p in gold stub; do
    \$BIN eval tests/fixtures/eval/polyglot --predictions \$p --filter-category $EVAL_LANGS --jobs 2 -o /tmp/eval-\$p > /tmp/eval-\$p.out 2>&1
    total=\$(grep -c . /tmp/eval-\$p/results.jsonl)
    resolved=\$(grep -c '"verdict":"resolved"' /tmp/eval-\$p/results.jsonl)
    echo "PSVM: eval \$p: \$resolved resolved of \$total"
    cat /tmp/eval-\$p.out
    if [ \$p = gold ] && { [ "\$total" -lt 1 ] || [ "\$resolved" != "\$total" ]; }; then rc=1; fi
    if [ \$p = stub ] && [ "\$resolved" != 0 ]; then rc=1; fi
  done
  # Per-test usage on this kernel (the resource fixture's python exercise, four tests): each
  # measured, the burner the one charged with its CPU (/usage-check.awk).
  \$BIN eval tests/fixtures/eval/resources --predictions gold --filter-category python --no-calibration \
    -o /tmp/eval-usage > /tmp/eval-usage.out 2>&1 || { cat /tmp/eval-usage.out; rc=1; }
  n=\$(grep -c '"verdict":"resolved"' /tmp/eval-usage/results.jsonl)
  echo "PSVM: eval usage: \$n resolved of 1"; [ "\$n" = 1 ] || rc=1
  busybox awk -f /usage-check.awk /tmp/eval-usage/junit.xml || rc=1
fi
echo "PSVM: suite exit \$rc, uptime \$(cut -d' ' -f1 /proc/uptime) s"
sync; busybox poweroff -f
EOF
chmod +x "$R/psinit"

phase "disk image"
rm -f "$W/disk.img"
mkfs.ext4 -q -F -L root -d "$R" "$W/disk.img" 8G

fail=0
for layout in "${LAYOUTS[@]}"; do
  phase "boot ($layout cgroups; qemu-system-aarch64 -cpu $CPU -smp 2, TCG)"
  timeout "${VM_TIMEOUT:-900}" qemu-system-aarch64 -M virt -cpu "$CPU" -smp 2 -m 2048 -nographic -no-reboot \
    -netdev user,id=n0,restrict=off -device virtio-net-pci,netdev=n0,romfile= \
    -kernel "$W/vmlinuz" -initrd "$W/initrd.gz" \
    -drive file="$W/disk.img",format=raw,if=virtio,cache=unsafe \
    -append "console=ttyAMA0 quiet panic=-1 psb.cgroups=$layout" </dev/null | tr -d '\r' | tee "$W/console-$layout.log" || true
  rc=$(sed -n 's/^PSVM: suite exit \([0-9]*\),.*/\1/p' "$W/console-$layout.log")
  phase "$layout: suite exit ${rc:-none (the VM did not finish)}"
  [ "${rc:-1}" = 0 ] || fail=1
done
exit $fail

#!/usr/bin/env bash
# The test command (README and CI): every test on the real kernel, then the aarch64 build, then
# the sandbox and host-safety suites and a small eval on a real arm64 kernel (qemu-system-aarch64),
# booted with the hybrid cgroup layout and with pure cgroup v2 (.ci/arm64-vm.sh; needs root).
# As root it tests both ways, as root and as the unprivileged user psbtest; as another user,
# that user's way only.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release -- --test-threads="${TEST_THREADS:-4}"
echo "== aarch64-unknown-linux-gnu: cross build, and the unit tests under qemu-user"
cargo build --release --quiet --target aarch64-unknown-linux-gnu
file target/aarch64-unknown-linux-gnu/release/polysandbox | grep -q "ARM aarch64"
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L /usr/aarch64-linux-gnu" \
  cargo test --release --quiet --target aarch64-unknown-linux-gnu --lib
if [ "$(id -u)" = 0 ] && [ "${POLYSANDBOX_SKIP_ARM64_VM:-}" != 1 ]; then
  echo "== arm64 kernel (qemu-system-aarch64): sandbox and host-safety suites, hybrid and pure cgroup v2; eval"
  bash .ci/arm64-vm.sh
else
  echo "SKIPPED: the arm64 VM suites: they need root (binfmt_misc, packages)${POLYSANDBOX_SKIP_ARM64_VM:+; POLYSANDBOX_SKIP_ARM64_VM=1}"
fi

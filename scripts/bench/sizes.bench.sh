#!/usr/bin/env bash
# Sizes of the `bloodraven` users would run: the release build (default features, with the
# lab) and the `dist` profile without the lab (what users install:
# `cargo build --profile dist -p bloodraven-console --no-default-features`). File size and
# the size of its code (.text, from binutils `size` when present). bench.sh builds both first
# (the dist build is slow the first time: thin LTO).
set -euo pipefail
BENCH_ROOT=${BENCH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
for entry in "release=$BENCH_ROOT/target/release/bloodraven" "dist=$BENCH_ROOT/target/dist/bloodraven"; do
  name=${entry%%=*}; bin=${entry#*=}
  if [ ! -x "$bin" ]; then
    printf '== no %s binary at %s\n' "$name" "$bin" >&2
    continue
  fi
  bytes=$(stat -c %s "$bin")
  text=""
  if command -v size >/dev/null; then
    text=" code=$(size -A "$bin" | awk '$1 == ".text" { printf "%.1fMiB", $2 / 1048576 }')"
  fi
  printf 'BENCH size/bloodraven-%s %.1f MiB bytes=%s%s\n' "$name" "$(awk -v b="$bytes" 'BEGIN { print b / 1048576 }')" "$bytes" "$text"
done

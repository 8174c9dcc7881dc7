#!/usr/bin/env bash
# Runs every benchmark of the workspace and writes BENCHMARKS.md at the top level.
#
#   scripts/bench.sh              # everything (about 15 minutes on 2 cores, plus builds)
#   scripts/bench.sh --quick      # everything, briefly (criterion --quick, fewer runs)
#   scripts/bench.sh REGEX        # only the units REGEX matches; earlier results of the others stay
#   scripts/bench.sh --list       # the units
#
# Units: every `[[bench]]` of every workspace member (found with `cargo metadata`, run as
# `cargo bench -p <package> --bench <name>`, results read from criterion's JSON files in
# target/bench/criterion/<unit>/), and
# every executable scripts/bench/*.bench.sh (process-level benchmarks: `bloodraven` vs kubectl
# as new processes, the TUI's RSS, binary sizes; they use the release `bloodraven`, built
# here, and the `dist` one). Any unit may also print `BENCH <id> <value> <unit> [goal=...]`
# lines. Results: scripts/bench/results/<unit>.tsv (tracked, so a run of some units on a fresh
# clone keeps the others' rows), logs: target/bench/logs/<unit>.log;
# BENCHMARKS.md is generated from all results (scripts/bench/bench.py, goals in
# scripts/bench/goals.tsv). A failing unit is listed in BENCHMARKS.md and makes the script
# exit non-zero after the others ran; a unit that reports nothing (a placeholder) is listed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
quick=""; list=""; filter="."
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --list) list=1 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) filter=$arg ;;
  esac
done

# Units: cargo:<package>:<bench>[:<required features>] and script:<name>.
units=()
while IFS= read -r unit; do units+=("$unit"); done < <(
  cargo metadata --no-deps --format-version 1 --locked | python3 scripts/bench/bench.py units)
for script in scripts/bench/*.bench.sh; do
  units+=("script:$(basename "$script" .bench.sh)")
done
selected=()
for unit in "${units[@]}"; do
  name=${unit%:*}; [ "${unit%%:*}" = script ] && name=$unit
  [[ "$name" =~ $filter ]] && selected+=("$unit")
done
if [ -n "$list" ]; then printf '%s\n' "${units[@]}"; exit 0; fi
[ ${#selected[@]} -gt 0 ] || { printf 'no benchmark unit matches %s (scripts/bench.sh --list)\n' "$filter" >&2; exit 1; }

# shellcheck source=scripts/provision.sh
source "$root/scripts/provision.sh"
if ! command -v hyperfine >/dev/null 2>&1; then
  log "installing hyperfine (apt)"
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -q hyperfine >/dev/null \
    || { sudo_if_needed apt-get update -qq && sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -q hyperfine >/dev/null; }
fi
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export BENCH_ROOT="$root"
# The binlog bench's real MariaDB file: 256 MiB by default here (1 GiB in its README), cached.
export BLOODRAVEN_BENCH_MARIADB_MIB="${BLOODRAVEN_BENCH_MARIADB_MIB:-256}"
export BLOODRAVEN_BENCH_DIR="${BLOODRAVEN_BENCH_DIR:-$root/target/bench/cache}"
criterion_args=()
if [ -n "$quick" ]; then export BLOODRAVEN_BENCH_QUICK=1; criterion_args+=(--quick); fi

out="$root/target/bench"
results="$root/scripts/bench/results"
mkdir -p "$results" "$out/logs" "$BLOODRAVEN_BENCH_DIR"
load_start=$(cut -d' ' -f1 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

if printf '%s\n' "${selected[@]}" | grep -q '^script:'; then
  log "building the release bloodraven (and the dist one) for the process-level benchmarks"
  cargo build --release --locked -p bloodraven-console --bin bloodraven
  if [ -z "$quick" ] || [ ! -x target/dist/bloodraven ]; then
    cargo build --profile dist --locked -p bloodraven-console --no-default-features --bin bloodraven
  fi
fi

if printf '%s\n' "${selected[@]}" | grep -q '^cargo:bloodraven-console:admitting'; then
  # The live-lab benchmark runs the real operator as a process: the workspace's dev build.
  log "building bloodraven-operator (dev) for the live-lab console benchmark"
  cargo build --locked -p bloodraven-operator --bin bloodraven-operator
  export BLOODRAVEN_OPERATOR_BIN="${BLOODRAVEN_OPERATOR_BIN:-$root/target/debug/bloodraven-operator}"
fi

failed=0
for unit in "${selected[@]}"; do
  file=$(printf '%s' "${unit%:*}" | tr ':/' '--'); [ "${unit%%:*}" = script ] && file=${unit/:/-}
  log "$unit"
  rm -f "$results/$file.tsv" "$results/$file.failed" "$results/$file.empty"
  marker="$out/.marker-$file"; touch "$marker"; sleep 1 # criterion files must be strictly newer
  status=0
  case "$unit" in
    cargo:*)
      IFS=: read -r _ package bench features <<<"$unit"
      args=(-p "$package" --bench "$bench" --locked)
      [ -n "$features" ] && args+=(--features "$features")
      # A criterion folder per unit: others may run benchmarks at the same time.
      CRITERION_HOME="$out/criterion/$file" \
        cargo bench "${args[@]}" -- "${criterion_args[@]}" >"$out/logs/$file.log" 2>&1 || status=$?
      area=${package#bloodraven-} ;;
    script:*)
      "scripts/bench/${unit#script:}.bench.sh" >"$out/logs/$file.log" 2>&1 || status=$?
      area=${unit#script:} ;;
  esac
  CRITERION_HOME="$out/criterion/$file" python3 scripts/bench/bench.py collect "$unit" "$area" "$out/logs/$file.log" "$marker" "$results/$file.tsv" \
    || { log "$unit reported no result"; touch "$results/$file.empty"; }
  rm -f "$marker"
  if [ "$status" -ne 0 ]; then
    failed=1
    touch "$results/$file.failed"
    log "$unit failed (exit $status); the end of target/bench/logs/$file.log:"
    tail -15 "$out/logs/$file.log" >&2
  fi
done

python3 - "$out/machine.json" "$load_start" "$started" "${quick:+quick}" "$filter" <<'PY'
import json, os, platform, subprocess, sys
cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), platform.machine())
mem = next((line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal")), "0")
rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
json.dump({
    "date": sys.argv[3], "nproc": os.cpu_count(), "cpu": cpu, "memory": f"{int(mem) / 1048576:.1f} GiB RAM",
    "load_start": sys.argv[2], "load_end": open("/proc/loadavg").read().split()[0],
    "mode": ("quick (criterion --quick, fewer runs)" if sys.argv[4] else "full")
        + ("" if sys.argv[5] == "." else f"; this run: units matching `{sys.argv[5]}`, the other rows from earlier runs (see their dates)"),
    "rustc": rustc,
}, open(sys.argv[1], "w"))
PY
python3 scripts/bench/bench.py report "$results" scripts/bench/goals.tsv "$out/machine.json" >BENCHMARKS.md
log "wrote BENCHMARKS.md"
exit "$failed"

# Helpers for the process-level benchmarks in scripts/bench/*.bench.sh (sourced, not run).
#
# Every benchmark reports on stdout with lines of the form
#   BENCH <id> <value> <unit> [goal=<text>] [key=value ...]
# which scripts/bench.sh collects into BENCHMARKS.md (see its header).

bench_log() { printf '== %s\n' "$*" >&2; }

# The `bloodraven` binary to measure: $BLOODRAVEN_BIN, else the release build.
bench_bloodraven() {
  local bin="${BLOODRAVEN_BIN:-$BENCH_ROOT/target/release/bloodraven}"
  [ -x "$bin" ] || { bench_log "no bloodraven at $bin: run cargo build --release -p bloodraven-console"; return 1; }
  printf '%s\n' "$bin"
}

# Starts `bloodraven lab --scenario $1 --serve` in the background and sets LAB_PID and
# LAB_KUBECONFIG, waiting up to $2 seconds (default 60) for it. The caller stops it with
# bench_stop_lab (also from an EXIT trap).
bench_start_lab() {
  local scenario=$1 seconds=${2:-60} bin out
  bin=$(bench_bloodraven) || return 1
  out="$BENCH_TMP/lab-$scenario.out"
  "$bin" lab --scenario "$scenario" --serve >"$out" 2>"$BENCH_TMP/lab-$scenario.err" &
  LAB_PID=$!
  LAB_KUBECONFIG=""
  for _ in $(seq 1 $((seconds * 10))); do
    LAB_KUBECONFIG=$(sed -n 's/^kubeconfig: //p' "$out")
    [ -n "$LAB_KUBECONFIG" ] && return 0
    kill -0 "$LAB_PID" 2>/dev/null || break
    sleep 0.1
  done
  bench_log "the lab (scenario $scenario) printed no kubeconfig within $seconds s:"
  cat "$BENCH_TMP/lab-$scenario.err" >&2
  return 1
}

bench_stop_lab() {
  if [ -n "${LAB_PID:-}" ]; then
    kill "$LAB_PID" 2>/dev/null || true
    wait "$LAB_PID" 2>/dev/null || true
    LAB_PID=""
  fi
}

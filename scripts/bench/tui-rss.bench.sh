#!/usr/bin/env bash
# The TUI's memory with 1,000 groups: `bloodraven -A` (the real binary, in a private tmux
# server at 120x36) against the lab API server loaded with `fleet-1000`. Measures the time
# from spawning the process to the first screen listing "(1000 of 1000)" (polled every 50 ms),
# then peak RSS (VmHWM) and steady RSS (VmRSS, median and max of 1 s samples over 20 s, taken
# after 10 s idle with the watches open).
set -euo pipefail
BENCH_ROOT=${BENCH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=scripts/bench/lib.sh
source "$BENCH_ROOT/scripts/bench/lib.sh"
BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/bloodraven-bench-rss.XXXXXX")
tmux_bin=${BLOODRAVEN_TMUX:-tmux}
socket="$BENCH_TMP/tmux.sock"
trap '"$tmux_bin" -S "$socket" kill-server 2>/dev/null || true; bench_stop_lab; rm -rf "$BENCH_TMP"' EXIT

bin=$(bench_bloodraven)
bench_start_lab fleet-1000
settle=10; samples=20
if [ -n "${BLOODRAVEN_BENCH_QUICK:-}" ]; then settle=3; samples=5; fi

started=$(date +%s%N)
"$tmux_bin" -S "$socket" -f /dev/null new-session -d -x 120 -y 36 \
  "exec env NO_COLOR=1 $bin --kubeconfig $LAB_KUBECONFIG -A"
pid=$("$tmux_bin" -S "$socket" list-panes -F '#{pane_pid}')
first_frame_ms=""
for _ in $(seq 1 1200); do
  if "$tmux_bin" -S "$socket" capture-pane -p 2>/dev/null | grep -q '(1000 of 1000)'; then
    first_frame_ms=$(( ($(date +%s%N) - started) / 1000000 ))
    break
  fi
  sleep 0.05
done
if [ -z "$first_frame_ms" ]; then
  bench_log "the console showed no '(1000 of 1000)' within 60 s; its screen:"
  "$tmux_bin" -S "$socket" capture-pane -p >&2 || true
  exit 1
fi
status_kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$pid/status"; }
sleep "$settle"
rss=()
for _ in $(seq 1 "$samples"); do rss+=("$(status_kib VmRSS)"); sleep 1; done
peak=$(status_kib VmHWM)
python3 - "$first_frame_ms" "$peak" "${rss[@]}" <<'PY'
import statistics, sys
first, peak, rss = int(sys.argv[1]), int(sys.argv[2]), [int(v) for v in sys.argv[3:]]
mib = lambda kib: kib / 1024
print(f"BENCH tui/fleet-1000/first-complete-frame {first} ms process_spawn_to_screen=1 poll=50ms")
print(f"BENCH tui/fleet-1000/rss-peak {mib(peak):.1f} MiB source=VmHWM")
print(f"BENCH tui/fleet-1000/rss-steady {mib(statistics.median(rss)):.1f} MiB source=VmRSS_median samples={len(rss)} max={mib(max(rss)):.1f}MiB")
PY

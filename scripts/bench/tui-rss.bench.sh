#!/usr/bin/env bash
# The TUI's memory with 1,000 and with 10,000 groups: `bloodraven -A` (the real binary, in a
# private tmux server at 120x36) against the lab API server loaded with `fleet-1000`, then
# `fleet-10000`. For each: the time from spawning the process to the first screen listing
# "(N of N)" (polled every 50 ms), peak RSS (VmHWM) once the fleet is drawn, peak RSS again after
# scrolling through the whole list (PgDn, End, Home, ctrl-d, problems only, a filter, open the
# selected group and back), and steady RSS (VmRSS, median and max of 1 s samples, taken after
# idling with the watches open). Issue 15's goal: peak RSS at 10,000 groups <= 150 MiB.
set -euo pipefail
BENCH_ROOT=${BENCH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=scripts/bench/lib.sh
source "$BENCH_ROOT/scripts/bench/lib.sh"
BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/bloodraven-bench-rss.XXXXXX")
tmux_bin=${BLOODRAVEN_TMUX:-tmux}
socket="$BENCH_TMP/tmux.sock"
trap '"$tmux_bin" -S "$socket" kill-server 2>/dev/null || true; bench_stop_lab; rm -rf "$BENCH_TMP"' EXIT

bin=$(bench_bloodraven)
settle=10; samples=20
if [ -n "${BLOODRAVEN_BENCH_QUICK:-}" ]; then settle=3; samples=5; fi
# BLOODRAVEN_BENCH_TUI_FLEETS="10000" measures one size only.
fleets=${BLOODRAVEN_BENCH_TUI_FLEETS:-"1000 10000"}

screen() { "$tmux_bin" -S "$socket" capture-pane -p 2>/dev/null; }
# Waits up to $2 seconds (0.05 s polls) for the screen to show the fixed string $1.
wait_for() {
  local text=$1 seconds=$2
  for _ in $(seq 1 $((seconds * 20))); do
    screen | grep -qF -- "$text" && return 0
    sleep 0.05
  done
  bench_log "the console did not show '$text' within ${seconds} s; its screen:"
  screen >&2 || true
  return 1
}
keys() { "$tmux_bin" -S "$socket" send-keys "$@"; }

for size in $fleets; do
  # 10,000 groups take the lab a while to load (a debug build: minutes).
  bench_start_lab "fleet-$size" 600
  started=$(date +%s%N)
  "$tmux_bin" -S "$socket" -f /dev/null new-session -d -x 120 -y 36 \
    "exec env NO_COLOR=1 $bin --kubeconfig $LAB_KUBECONFIG -A"
  pid=$("$tmux_bin" -S "$socket" list-panes -F '#{pane_pid}')
  wait_for "($size of $size)" 120
  first_frame_ms=$(( ($(date +%s%N) - started) / 1000000 ))
  status_kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$pid/status"; }
  sleep 2
  drawn=$(status_kib VmHWM)
  # Scroll through the whole list and back; every step waits for its screen.
  for _ in $(seq 1 20); do keys PageDown; done
  keys End; wait_for "db-$(printf '%04d' $((size - 1)))" 30
  keys Home; wait_for "db-0000" 30
  for _ in $(seq 1 10); do keys C-d; done
  keys p; wait_for "problems only" 30
  keys p
  keys / 'db-0007$' Enter; wait_for "(1 of $size)" 30
  keys Enter; wait_for "Overview" 30
  # One key at a time: two escapes in one write read as alt-escape.
  keys Escape; wait_for "Failover groups (1 of $size)" 30
  keys Escape; wait_for "($size of $size)" 30
  keys End; keys Home; wait_for "db-0000" 30
  sleep 2
  scrolled=$(status_kib VmHWM)
  sleep "$settle"
  rss=()
  for _ in $(seq 1 "$samples"); do rss+=("$(status_kib VmRSS)"); sleep 1; done
  "$tmux_bin" -S "$socket" kill-server 2>/dev/null || true
  bench_stop_lab
  python3 - "$size" "$first_frame_ms" "$drawn" "$scrolled" "${rss[@]}" <<'PY'
import statistics, sys
size, first, drawn, scrolled = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rss = [int(v) for v in sys.argv[5:]]
mib = lambda kib: kib / 1024
print(f"BENCH tui/fleet-{size}/first-complete-frame {first} ms process_spawn_to_screen=1 poll=50ms")
# The ids of the 1,000-group run stay what they were (rss-peak = after drawing).
peak = "rss-peak" if size == "1000" else "rss-peak-drawn"
print(f"BENCH tui/fleet-{size}/{peak} {mib(drawn):.1f} MiB source=VmHWM after=first_complete_frame")
print(f"BENCH tui/fleet-{size}/rss-peak-scrolled {mib(scrolled):.1f} MiB source=VmHWM after=scrolling_filter_open_back")
print(f"BENCH tui/fleet-{size}/rss-steady {mib(statistics.median(rss)):.1f} MiB source=VmRSS_median samples={len(rss)} max={mib(max(rss)):.1f}MiB")
PY
done

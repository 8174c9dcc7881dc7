#!/usr/bin/env bash
# P1, process against process: `bloodraven status -A -o json` versus `kubectl get mfg -A -o json`
# against the same lab API server loaded with `fleet-1000` (1,000 groups in 20 namespaces),
# each a whole new process (hyperfine -N: no shell), in the same run.
#
# - warm: kubectl's discovery cache (--cache-dir) filled by one run before measuring, as on a
#   workstation that used kubectl in the last ten minutes; the console keeps no cache.
# - cold: kubectl's cache folder removed before every run (hyperfine --prepare), so each run
#   does discovery first.
# kubectl 1.20 (Debian, $BLOODRAVEN_KUBECTL_1_20) always; kubectl 1.36 ($BLOODRAVEN_KUBECTL_1_36)
# when provisioned; the release `bloodraven` (the ratios) and, when built, the `dist` one.
# Reports mean wall time per tool and kubectl/bloodraven ratios (> 1: the console is faster).
set -euo pipefail
BENCH_ROOT=${BENCH_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=scripts/bench/lib.sh
source "$BENCH_ROOT/scripts/bench/lib.sh"
BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/bloodraven-bench-process.XXXXXX")
trap 'bench_stop_lab; rm -rf "$BENCH_TMP"' EXIT
command -v hyperfine >/dev/null || { bench_log "hyperfine missing (scripts/bench.sh installs it)"; exit 1; }

bin=$(bench_bloodraven)
bench_start_lab fleet-1000
kc=$LAB_KUBECONFIG
runs=${BENCH_RUNS:-30}; cold_runs=${BENCH_COLD_RUNS:-15}
if [ -n "${BLOODRAVEN_BENCH_QUICK:-}" ]; then runs=10; cold_runs=5; fi

kubectls=()
[ -x "${BLOODRAVEN_KUBECTL_1_20:-}" ] && kubectls+=("1.20=$BLOODRAVEN_KUBECTL_1_20")
[ -x "${BLOODRAVEN_KUBECTL_1_36:-}" ] && kubectls+=("1.36=$BLOODRAVEN_KUBECTL_1_36")
[ ${#kubectls[@]} -gt 0 ] || { bench_log "no kubectl: source scripts/provision.sh"; exit 1; }

# Both answer the same question: check once that each lists the 1,000 groups.
"$bin" --kubeconfig "$kc" status -A -o json >"$BENCH_TMP/bloodraven.json"
console_bytes=$(wc -c <"$BENCH_TMP/bloodraven.json")
warm=(-n bloodraven "$bin --kubeconfig $kc status -A -o json")
cold=(-n bloodraven "$bin --kubeconfig $kc status -A -o json")
# The dist build (what users install: no lab, thin LTO, stripped) too, when built.
dist="$BENCH_ROOT/target/dist/bloodraven"
if [ -x "$dist" ]; then
  warm+=(-n bloodraven-dist "$dist --kubeconfig $kc status -A -o json")
fi
for entry in "${kubectls[@]}"; do
  version=${entry%%=*}; kubectl=${entry#*=}
  "$kubectl" --kubeconfig "$kc" --cache-dir "$BENCH_TMP/cache-warm-$version" get mfg -A -o json \
    >"$BENCH_TMP/kubectl-$version.json"
  python3 - "$BENCH_TMP/kubectl-$version.json" <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
assert len(items) == 1000, f"kubectl listed {len(items)} groups, not 1000"
PY
  warm+=(-n "kubectl-$version" "$kubectl --kubeconfig $kc --cache-dir $BENCH_TMP/cache-warm-$version get mfg -A -o json")
  cold+=(-n "kubectl-$version" "$kubectl --kubeconfig $kc --cache-dir $BENCH_TMP/cache-cold-$version get mfg -A -o json")
done
bench_log "warm: ${#kubectls[@]} kubectl(s) and bloodraven, $runs runs each"
hyperfine -N --style basic --warmup 3 --runs "$runs" --export-json "$BENCH_TMP/warm.json" "${warm[@]}" >&2
bench_log "cold: kubectl's cache removed before each run, $cold_runs runs each"
hyperfine -N --style basic --runs "$cold_runs" --prepare "rm -rf $BENCH_TMP/cache-cold-1.20 $BENCH_TMP/cache-cold-1.36" \
  --export-json "$BENCH_TMP/cold.json" "${cold[@]}" >&2

python3 - "$BENCH_TMP/warm.json" "$BENCH_TMP/cold.json" "$console_bytes" <<'PY'
import json, sys
for path, mode in ((sys.argv[1], "warm"), (sys.argv[2], "cold")):
    results = {r["command"]: r for r in json.load(open(path))["results"]}
    ours = results["bloodraven"]
    print(f"BENCH process/fleet-1000/{mode}/bloodraven-status {ours['mean']*1000:.1f} ms "
          f"median={ours['median']*1000:.1f}ms stddev={ours['stddev']*1000:.1f}ms runs={len(ours['times'])} "
          f"output={sys.argv[3]}B")
    for name, r in sorted(results.items()):
        if name == "bloodraven":
            continue
        if name == "bloodraven-dist":
            print(f"BENCH process/fleet-1000/{mode}/bloodraven-dist-status {r['mean']*1000:.1f} ms "
                  f"median={r['median']*1000:.1f}ms stddev={r['stddev']*1000:.1f}ms runs={len(r['times'])}")
            continue
        print(f"BENCH process/fleet-1000/{mode}/{name}-get {r['mean']*1000:.1f} ms "
              f"median={r['median']*1000:.1f}ms stddev={r['stddev']*1000:.1f}ms runs={len(r['times'])}")
        print(f"BENCH process/fleet-1000/{mode}/ratio-{name} {r['mean']/ours['mean']:.2f} x "
              f"meaning=kubectl_time/bloodraven_time")
PY

#!/usr/bin/env python3
"""scripts/bench.sh's helper: collects results and writes BENCHMARKS.md.

  bench.py collect UNIT AREA LOG MARKER OUT.tsv   # BENCH lines of LOG + criterion results newer than MARKER
  bench.py report RESULTS_DIR GOALS.tsv MACHINE.json > BENCHMARKS.md
  cargo metadata --no-deps --format-version 1 | bench.py units

A result row (TSV): area, id, value, unit, goal, extras, date, load.
"""
import datetime
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRITERION = os.environ.get("CRITERION_HOME") or os.path.join(ROOT, "target", "criterion")


def bench_lines(log):
    """`BENCH <id> <value> <unit> [goal=<text>] [key=value ...]` lines of a log."""
    rows = []
    for line in open(log, errors="replace"):
        parts = line.strip().split()
        if len(parts) < 4 or parts[0] != "BENCH":
            continue
        _, ident, value, unit, *rest = parts
        goal = ""
        extras = []
        for item in rest:
            if item.startswith("goal="):
                goal = item[len("goal="):].replace("_", " ")
            else:
                extras.append(item)
        try:
            float(value)
        except ValueError:
            continue
        # One table per package: `bloodraven-sites/x` and criterion's `sites/y` go together.
        if ident.startswith("bloodraven-"):
            ident = ident[len("bloodraven-"):]
        area = ident.split("/", 1)[0]
        rows.append((area, ident, value, unit, goal, " ".join(extras)))
    return rows


def human_bytes_per_second(per_second):
    for unit, size in (("GiB/s", 1 << 30), ("MiB/s", 1 << 20), ("KiB/s", 1 << 10)):
        if per_second >= size:
            return f"{per_second / size:.2f} {unit}"
    return f"{per_second:.0f} B/s"


def criterion_rows(area, marker):
    """Every criterion benchmark whose results were written after MARKER."""
    rows = []
    since = os.path.getmtime(marker)
    for directory, _, files in os.walk(CRITERION):
        if "benchmark.json" not in files or os.path.basename(directory) != "new":
            continue
        estimates = os.path.join(directory, "estimates.json")
        if not os.path.exists(estimates) or os.path.getmtime(estimates) < since:
            continue
        meta = json.load(open(os.path.join(directory, "benchmark.json")))
        median_ns = json.load(open(estimates))["median"]["point_estimate"]
        extras = []
        throughput = meta.get("throughput") or {}
        if "Bytes" in throughput or "BytesDecimal" in throughput:
            size = throughput.get("Bytes") or throughput.get("BytesDecimal")
            extras.append("throughput=" + human_bytes_per_second(size / (median_ns / 1e9)).replace(" ", ""))
        elif "Elements" in throughput:
            extras.append(f"throughput={throughput['Elements'] / (median_ns / 1e9) / 1e6:.3g}Melem/s")
        extras.append("criterion=median")
        rows.append((area, f"{area}/{meta['full_id']}", f"{median_ns:.1f}", "ns", "", " ".join(extras)))
    return sorted(rows)


def collect(unit, area, log, marker, out):
    rows = bench_lines(log)
    if unit.startswith("cargo:"):
        rows += criterion_rows(area, marker)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    load = open("/proc/loadavg").read().split()[0]
    with open(out, "w") as file:
        for row in rows:
            file.write("\t".join(row + (date, load)) + "\n")
    print(f"{unit}: {len(rows)} result(s)", file=sys.stderr)
    return 0 if rows else 1


SCALES = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def show(value, unit):
    value = float(value)
    if unit in SCALES:
        seconds = value * SCALES[unit]
        for name, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
            if seconds >= scale:
                return f"{seconds / scale:.3g} {name}", seconds, "s"
        return f"{seconds / 1e-9:.3g} ns", seconds, "s"
    return f"{value:g} {unit}", value, unit


def verdict(goal, value, base_unit):
    """✓ / ✗ for goals of the form `≤ 20 ms`, `≥ 1 x`, `≥ 1 GB/s` (throughput in extras)."""
    match = re.match(r"\s*(≤|<=|<|≥|>=|>)\s*([0-9.]+)\s*(\S+)", goal)
    if not match:
        return ""
    op, number, unit = match.group(1), float(match.group(2)), match.group(3)
    rates = {"GB/s": 1e9, "GiB/s": 1 << 30, "MB/s": 1e6, "MiB/s": 1 << 20, "KiB/s": 1 << 10, "B/s": 1}
    if unit in SCALES and base_unit == "s":
        number *= SCALES[unit]
    elif unit in rates and base_unit in rates:
        number, value = number * rates[unit], value * rates[base_unit]
    elif unit != base_unit:
        return ""
    ok = value <= number if op in ("≤", "<=", "<") else value >= number
    return "✓" if ok else "✗"


def load_goals(path):
    goals = []
    for line in open(path):
        if not line.strip() or line.startswith("#"):
            continue
        pattern, goal, *what = line.rstrip("\n").split("\t")
        goals.append((re.compile(pattern), goal, what[0] if what else ""))
    return goals


def report(results_dir, goals_path, machine_path):
    goals = load_goals(goals_path)
    machine = json.load(open(machine_path))
    rows = []
    for name in sorted(os.listdir(results_dir)):
        if name.endswith(".tsv"):
            rows += [line.rstrip("\n").split("\t") for line in open(os.path.join(results_dir, name)) if line.strip()]
    failed = sorted(name[:-len(".failed")] for name in os.listdir(results_dir) if name.endswith(".failed"))
    empty = sorted(name[:-len(".empty")] for name in os.listdir(results_dir) if name.endswith(".empty"))
    out = []
    out.append("# Benchmarks\n")
    out.append("Generated by `scripts/bench.sh` (do not edit by hand; run it again). Figures are from "
               "one run on the machine below, which is shared with other builds: read them as "
               "orders of magnitude and ratios, not as guarantees.\n")
    out.append(f"- generated: {machine['date']}")
    out.append(f"- machine: {machine['nproc']} CPUs, {machine['cpu']}, {machine['memory']}")
    out.append(f"- load average (1 min) at start {machine['load_start']}, at end {machine['load_end']}; "
               "each row also shows the load when its benchmark finished")
    out.append(f"- mode: {machine['mode']}; toolchain: {machine['rustc']}\n")
    out.append("""## How to add a benchmark

- A criterion bench (`[[bench]]` with `harness = false` in any workspace member) is found by
  `cargo metadata` and run with `cargo bench -p <package> --bench <name>`; its results are read
  from `target/bench/criterion/<unit>/**/new/{benchmark,estimates}.json` (median). Give it a goal by adding
  a line to `scripts/bench/goals.tsv` (`<regex over the id>`, tab, goal such as `≤ 20 ms` or
  `≥ 1 GiB/s`, tab, what it measures).
- Anything else prints lines `BENCH <id> <value> <unit> [goal=<text, _ for spaces>] [key=value ...]`
  on stdout (from a criterion bench, or from an executable `scripts/bench/<name>.bench.sh`,
  which bench.sh runs after building the release `bloodraven`). The first part of the id
  (before `/`) is the table it goes in; criterion results go in the table of their package
  (without `bloodraven-`), as `<package>/<criterion id>`.
- `scripts/bench.sh --quick` runs everything briefly; `scripts/bench.sh <regex>` runs only the
  units (`cargo:<package>:<bench>`, `script:<name>`) it matches and keeps earlier results of
  the others (kept in `scripts/bench/results/`, tracked).
""")
    headline = []
    for row in rows:
        ident, value, unit = row[1], row[2], row[3]
        match = re.match(r"process/fleet-1000/(warm|cold)/ratio-(.+)", ident)
        if match:
            headline.append(f"- P1, {match.group(1)} kubectl cache: `{match.group(2)} get mfg -A -o json` takes "
                            f"**{float(value):.2f}×** the time of `bloodraven status -A -o json` (1,000 groups, both new processes)")
        elif ident.startswith("size/"):
            headline.append(f"- `{ident[len('size/'):]}`: **{float(value):.1f} {unit}** ({row[5].replace(' ', ', ')})")
    if headline:
        out.append("## Headlines\n")
        out.extend(headline)
        out.append("")
    areas = {}
    for row in rows:
        areas.setdefault(row[0], []).append(row)
    for area in sorted(areas):
        out.append(f"## {area}\n")
        out.append("| figure | goal | measured | | notes | date (UTC) | load |")
        out.append("| --- | --- | --- | --- | --- | --- | --- |")
        for area_, ident, value, unit, goal, extras, date, load in areas[area]:
            what = ""
            for pattern, goal_text, description in goals:
                if pattern.search(ident):
                    goal = goal or goal_text
                    what = description
                    break
            shown, base, base_unit = show(value, unit)
            check = ""
            if goal:
                throughput = re.search(r"throughput=([0-9.]+)(\S+)", extras)
                if throughput and "/s" in goal:
                    check = verdict(goal, float(throughput.group(1)), throughput.group(2))
                else:
                    check = verdict(goal, base, base_unit)
            figure = f"`{ident}`" + (f" — {what}" if what else "")
            notes = extras.replace(" ", ", ")
            out.append(f"| {figure} | {goal or '—'} | {shown} | {check} | {notes} | {date} | {load} |")
        out.append("")
    if failed or empty:
        out.append("## Units that failed or reported nothing\n")
        for name in failed:
            out.append(f"- `{name}` failed: see `target/bench/logs/{name}.log`")
        for name in sorted(set(empty) - set(failed)):
            out.append(f"- `{name}` reported no result (a placeholder, or a bench that prints nothing bench.sh reads)")
        out.append("")
    sys.stdout.write("\n".join(out))
    return 0


def units():
    """`cargo:<package>:<bench>:<required features>` for every bench of the workspace."""
    meta = json.load(sys.stdin)
    members = set(meta["workspace_members"])
    for package in sorted(meta["packages"], key=lambda p: p["name"]):
        if package["id"] not in members:
            continue
        for target in sorted(package["targets"], key=lambda t: t["name"]):
            if "bench" in target["kind"]:
                features = ",".join(target.get("required-features", []))
                print(f"cargo:{package['name']}:{target['name']}:{features}")
    return 0


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "units":
        sys.exit(units())
    if command == "collect":
        sys.exit(collect(*args))
    if command == "report":
        sys.exit(report(*args))
    sys.exit(f"unknown command {command}")

#!/usr/bin/env bash
# Rebuilds the committed seed corpora of the fuzz targets (crates/*/fuzz/corpus/<target>/) from
# the repository's test data. File names are the SHA-1 of the contents (as libFuzzer names what
# it adds). The binlog, GTID and annotation seeds come out the same every time; the archive
# seeds (and the archives' binlogs) carry the lab's fresh UIDs and the current time, so a
# rebuild renames them. Run it after changing the test data; scripts/test.sh replays every
# corpus once (-runs=0).
#
# - binlog/scan: the real server binlogs of crates/binlog/test_data, and the binlogs of the
#   fixture archives `bloodraven lab` lays (healthy, archive-gap, pitr-divergent).
# - archive/manifest: the manifests of those archives; archive/open: each archive's
#   archive.json, 0xff, then one of its manifests (the target splits there).
# - gtid/parse: every set text of crates/gtid's check tables ($A.. expanded), and the GTID
#   sets of the binlog summaries.
# - crd/annotations: the string literals of crates/crd's annotation tests and the annotation
#   values of crates/crd/tests/fixtures.
#
# Needs a `bloodraven` with the lab: $BLOODRAVEN_BIN, else target/release/bloodraven, else
# target/debug/bloodraven.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bin=${BLOODRAVEN_BIN:-}
for candidate in target/release/bloodraven target/debug/bloodraven; do
  [ -z "$bin" ] && [ -x "$candidate" ] && bin=$candidate
done
[ -n "$bin" ] || { echo "build bloodraven first: cargo build -p bloodraven-console" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bloodraven-fuzz-seeds.XXXXXX")
lab_pid=""
trap 'if [ -n "$lab_pid" ]; then kill "$lab_pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
# Lay each scenario's fixture archives, copy them out, stop the lab.
for scenario in healthy archive-gap pitr-divergent; do
  "$bin" lab --scenario "$scenario" --serve >"$work/$scenario.out" 2>/dev/null &
  lab_pid=$!
  for _ in $(seq 1 300); do grep -q '^archive root: ' "$work/$scenario.out" && break; sleep 0.1; done
  dir=$(sed -n 's/^archive root: \([^ ]*\) .*/\1/p' "$work/$scenario.out")
  [ -d "$dir" ] || { echo "lab $scenario printed no archive root" >&2; exit 1; }
  mkdir -p "$work/archives/$scenario"
  cp -r "$dir"/. "$work/archives/$scenario/"
  kill "$lab_pid"; wait "$lab_pid" 2>/dev/null || true; lab_pid=""
done

python3 - "$work/archives" <<'PY'
import hashlib, os, re, shutil, sys
archives = sys.argv[1]

def put(crate, target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = f"crates/{crate}/fuzz/corpus/{target}"
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as out:
        out.write(data)

for crate, target in (("binlog", "scan"), ("archive", "manifest"), ("archive", "open"), ("gtid", "parse"), ("crd", "annotations")):
    shutil.rmtree(f"crates/{crate}/fuzz/corpus/{target}", ignore_errors=True)

# binlog/scan: real server files, then the archives' binlog objects.
test_data = "crates/binlog/test_data"
for name in sorted(os.listdir(test_data)):
    if re.search(r"\.\d{6}$", name):
        put("binlog", "scan", open(os.path.join(test_data, name), "rb").read())
for folder, _, files in sorted(os.walk(archives)):
    descriptor = None
    if "archive.json" in files:
        descriptor = open(os.path.join(folder, "archive.json"), "rb").read()
    for name in sorted(files):
        data = open(os.path.join(folder, name), "rb").read()
        if name.startswith("manifest-") and name.endswith(".json"):
            put("archive", "manifest", data)
            if descriptor is not None:
                put("archive", "open", descriptor + b"\xff" + data)
        elif data[:4] == b"\xfebin":
            put("binlog", "scan", data)
    if descriptor is not None:
        put("archive", "open", descriptor)

# gtid/parse: the check tables' inputs with $A.. expanded, and the binlog summaries' sets.
uuids = dict(re.findall(r'\("(\$[A-Z])",\s*"([0-9a-fA-F-]{36})"\)', open("crates/gtid/tests/it/main.rs").read()))
def expand(text):
    for name, uuid in uuids.items():
        text = text.replace(name, uuid)
    return text
for name in sorted(os.listdir("crates/gtid/tests/it")):
    source = open(os.path.join("crates/gtid/tests/it", name)).read()
    for literal in re.findall(r'check(?:_\w+)?\(\s*"((?:[^"\\]|\\.)*)"', source):
        put("gtid", "parse", expand(bytes(literal, "utf-8").decode("unicode_escape")))
for name in sorted(os.listdir(test_data)):
    if name.endswith(".summary"):
        for line in open(os.path.join(test_data, name)):
            match = re.match(r"(previous gtids|covered gtids): (.+)", line.strip())
            if match and match.group(2) not in ("", "none"):
                put("gtid", "parse", match.group(2))
for text in ("0-1-100", "0-1-100,1-2-200", "3e11fa47-71ca-11e1-9e33-c80aa9429562:tag:1-5:7"):
    put("gtid", "parse", text)

# crd/annotations: the annotation tests' string literals and the fixtures' annotation values.
sources = ["crates/crd/tests/it/annotations.rs", "crates/crd/src/annotations.rs",
           "crates/crd/src/annotations/grammar.rs", "crates/crd/src/annotations/values.rs",
           "crates/crd/src/annotations/values/tests.rs"]
for path in sources:
    if not os.path.exists(path):
        continue
    for literal in re.findall(r'"((?:[^"\\\n]|\\.){1,200})"', open(path).read()):
        if "{" in literal or literal.startswith("bloodraven.shipstream.io/"):
            continue  # format strings and annotation keys
        put("crd", "annotations", literal)
for name in sorted(os.listdir("crates/crd/tests/fixtures")):
    path = os.path.join("crates/crd/tests/fixtures", name)
    if os.path.isfile(path):
        for value in re.findall(r"bloodraven\.shipstream\.io/[\w.-]+:\s*\"?([^\"\n]+)\"?", open(path).read()):
            put("crd", "annotations", value.strip())
PY
for corpus in crates/*/fuzz/corpus/*; do
  printf '%s: %s files, %s\n' "$corpus" "$(ls "$corpus" | wc -l)" "$(du -sh "$corpus" | cut -f1)"
done

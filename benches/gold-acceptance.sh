#!/usr/bin/env bash
# Issue 38's acceptance, outside CI: the whole Aider Polyglot benchmark calibrated and graded with
# gold, twice, the second time while another sandbox fills the host's file table, tries AIO and
# takes memory. See usage() below and benches/README.md#gold-acceptance-the-whole-benchmark-calibrated-and-graded-twice.
set -uo pipefail

usage() {
    cat <<'EOF'
Usage: benches/gold-acceptance.sh [OPTIONS] [DATASET]

Issue 38's acceptance over the whole Aider Polyglot benchmark (225 exercises), with the images
of the usual store (run `bash .ci/setup` first; as root, or as the user whose store has them):

  run A  `polysandbox calibrate DATASET --jobs J --calibration A/calibration.json`, a fresh
         calibration file (the store's own calibration of the dataset is not touched), then
         `polysandbox eval DATASET -p gold --calibration A/calibration.json --jobs J`: gold
         graded against that calibration, so that instances it leaves out show up as excluded.
  run B  the same from scratch into B/, while a pressure sandbox (`polysandbox run`, --memory
         8G --pids 4096, the python toolchain image) repeats, until B ends: fill the host's
         file table (forked processes opening /dev/null until ENFILE, topped up while held),
         try AIO (io_setup, io_uring_setup; seccomp denies them with ENOSYS, recorded) and
         take memory; hold, release, hold... In both runs /proc/sys/fs/file-nr is sampled
         every second (a run A on a host whose table someone else fills is no run A).

Then a table: per run, instances calibrated, gold passes and exclusions (with causes), eval's
verdict counts and every exercise not resolved with its reason; and the verdict:
  PASS run A  every exercise resolved, except those excluded because a dependency is missing
              or because the dataset's tests run none (go/counter)
              (each named, its cause shown);
  PASS run B  no exercise run A resolved is excluded or charged (unresolved, timeout, oom, ...)
              in run B; errors (to rerun) are allowed, counted and listed.
Exit status: 0 PASS, 1 FAIL, 2 bad usage or missing prerequisites.

DATASET  A checkout of the whole benchmark: the public GitHub repository
         Aider-AI/polyglot-benchmark (../shared holds 114 of its 225 exercises), e.g.
           git clone https://github.com/Aider-AI/polyglot-benchmark /tmp/polyglot-benchmark
         Default: $POLYSANDBOX_POLYGLOT_FULL (the variable tests/tampering.rs reads too).

Options:
  --bin PATH             polysandbox to test (default: $POLYSANDBOX_BIN, else this tree's
                         target/<host>/release/polysandbox, else polysandbox on PATH)
  -o, --output DIR       where everything goes (default: a new /var/tmp/gold-acceptance.XXXXXX);
                         must not exist or be empty
  -j, --jobs N           --jobs of calibrate and eval (default 2)
  --exercises IDS        only these exercises, comma-separated (python/proverb,go/matrix)
  --languages LANGS      only these languages, comma-separated (python,go)
  --only A|B             run one of the two runs (B's verdict then has no run A to compare with:
                         every exercise B did not resolve is listed, and it is not judged)
  --as-prediction        grade the reference solutions as a model's prediction, a predictions
                         directory of the solution files (checked like a model's: tampering
                         flags, Cargo.toml), instead of `-p gold`. Reference solutions with
                         files beyond the solution's (six Java ones) cannot be written so; they
                         are named in the table.
  --pressure-image REF   the pressure sandbox's image, with python3
                         (default localhost/polysandbox/python:bookworm)
  --pressure-memory SIZE its --memory (default 8G)
  --pressure-take SIZE   memory it takes in each hold (default 5G; leave room under --pressure-
                         memory for the kernel's memory of the open files, about 0.7 GiB full)
  --pressure-pids N      its --pids (default 4096)
  --hold S, --release S  seconds each cycle holds, then releases (default 20 and 20)
  --keep-logs            keep every instance's logs (default: only those not resolved)
  --report DIR           print the table and verdict of a finished (or interrupted) output DIR,
                         running nothing
  -h, --help             this help

Takes about 1.5-2 hours on 2 cores at --jobs 2 (calibrate runs gold twice, again where it
failed, with the candidate controls, and the stubs: about 5 passes over the benchmark; eval one).
EOF
}

die() {
    echo "gold-acceptance: $*" >&2
    exit 2
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
dataset=${POLYSANDBOX_POLYGLOT_FULL:-}
bin=${POLYSANDBOX_BIN:-}
out=""
jobs=2
exercises=""
languages=""
only=""
as_prediction=0
pimage=localhost/polysandbox/python:bookworm
pmemory=8G
ptake=5G
ppids=4096
hold=20
release=20
keep_logs=0
report_only=""

while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --bin) bin=${2:?}; shift ;;
    -o | --output) out=${2:?}; shift ;;
    -j | --jobs) jobs=${2:?}; shift ;;
    --exercises) exercises=${2:?}; shift ;;
    --languages) languages=${2:?}; shift ;;
    --only) only=${2:?}; shift ;;
    --as-prediction) as_prediction=1 ;;
    --pressure-image) pimage=${2:?}; shift ;;
    --pressure-memory) pmemory=${2:?}; shift ;;
    --pressure-take) ptake=${2:?}; shift ;;
    --pressure-pids) ppids=${2:?}; shift ;;
    --hold) hold=${2:?}; shift ;;
    --release) release=${2:?}; shift ;;
    --keep-logs) keep_logs=1 ;;
    --report) report_only=${2:?}; shift ;;
    -*) die "unknown option $1 (--help)" ;;
    *) dataset=$1 ;;
    esac
    shift
done
case $only in "" | A | B) ;; *) die "--only takes A or B" ;; esac

# ---------------------------------------------------------------------------------------------
# The helpers, in Python (3.9 or later on the host; the pressure program runs in the image).

tools=$(mktemp -d /tmp/gold-acceptance-tools.XXXXXX) || die "mktemp"
trap 'case $tools in /tmp/gold-acceptance-tools.*) rm -rf "$tools" ;; esac' EXIT

cat >"$tools/select.py" <<'EOF'
# select.py DATASET EXERCISES LANGUAGES: the selected exercise ids, one a line, sorted.
import json, os, sys
root, ids, langs = sys.argv[1], sys.argv[2], sys.argv[3]
want = {i for i in ids.split(",") if i}
langs = {l for l in langs.split(",") if l}
found = []
for lang in sorted(os.listdir(root)):
    practice = os.path.join(root, lang, "exercises", "practice")
    if not os.path.isdir(practice):
        continue
    for name in sorted(os.listdir(practice)):
        if os.path.isfile(os.path.join(practice, name, ".meta", "config.json")):
            found.append(f"{lang}/{name}")
unknown = sorted(want - set(found))
if unknown:
    sys.exit(f"not in the dataset: {', '.join(unknown)}")
for i in found:
    if (not want or i in want) and (not langs or i.split("/")[0] in langs):
        print(i)
EOF

cat >"$tools/predictions.py" <<'EOF'
# predictions.py DATASET IDS_FILE OUT: the reference solutions as a predictions directory
# (<lang>/exercises/practice/<name>/<solution file>), paired as eval pairs gold's files
# (src/eval/formats/exercise.rs gold_files). Prints the exercises whose reference solution has
# files no prediction can carry (only the solution files are read from a predictions directory).
import json, os, shutil, sys
root, ids, out = sys.argv[1:4]
base = lambda p: p.rsplit("/", 1)[-1]
ext = lambda p: base(p).rsplit(".", 1)[1] if "." in base(p) else ""
for i in open(ids).read().split():
    lang, name = i.split("/")
    d = os.path.join(root, lang, "exercises", "practice", name)
    files = json.load(open(os.path.join(d, ".meta", "config.json")))["files"]
    sols, ex = list(files.get("solution", [])), files.get("example", [])
    pairs, rest, lost = [], [], []
    for e in ex:
        m = [s for s in sols if base(s) == base(e)]
        if m:
            pairs.append((e, m[0])); sols.remove(m[0])
        else:
            rest.append(e)
    for e in rest:
        same = [s for s in sols if ext(s) == ext(e)]
        if len(same) == 1:
            pairs.append((e, same[0])); sols.remove(same[0])
        else:
            lost.append(e)
    if os.path.isfile(os.path.join(d, ".meta", "Cargo-example.toml")) and "Cargo.toml" in files.get("solution", []):
        pairs.append((".meta/Cargo-example.toml", "Cargo.toml"))
    for e, s in pairs:
        dst = os.path.join(out, lang, "exercises", "practice", name, s)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(os.path.join(d, e), dst)
    if lost:
        print(f"{i}\t{', '.join(lost)}")
EOF

cat >"$tools/pressure.py" <<'EOF'
# pressure.py HOLD RELEASE TAKE_BYTES STOPFILE, in a sandbox: until STOPFILE exists, cycles of
# HOLD seconds filling the host's file table (forked children opening /dev/null until ENFILE,
# topped up every 0.25 s), AIO tried, TAKE_BYTES of memory taken; then RELEASE seconds of
# nothing. One JSON line per phase on stdout.
import errno, json, os, select, signal, sys, time
try:
    import ctypes  # now: with the file table full, no module can be read
except Exception as e:
    ctypes = e
hold, release, take, stop = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
name = lambda e: errno.errorcode.get(e, str(e))

def log(**kw):
    print(json.dumps({"t": round(time.time(), 1), **kw}), flush=True)

def stopped():
    return os.path.exists(stop)

def aio():
    """io_setup and io_uring_setup: what they answer; contexts io_setup gives are kept."""
    if isinstance(ctypes, Exception):
        return {"aio": f"no ctypes: {ctypes}"}, []
    libc = ctypes.CDLL(None, use_errno=True)
    nr = {"x86_64": (206, 207), "aarch64": (0, 1)}.get(os.uname().machine)
    res, ctxs = {}, []
    if nr:
        while len(ctxs) < 4096:
            ctx = ctypes.c_ulong(0)
            r = libc.syscall(nr[0], 1024, ctypes.byref(ctx))
            if r != 0:
                res["io_setup"] = f"{len(ctxs)} contexts, then {name(ctypes.get_errno())}"
                break
            ctxs.append((nr[1], ctx))
        else:
            res["io_setup"] = f"{len(ctxs)} contexts"
    params = (ctypes.c_ubyte * 120)()
    r = libc.syscall(425, 8, params)
    res["io_uring_setup"] = "ok" if r >= 0 else name(ctypes.get_errno())
    if r >= 0:
        os.close(r)
    return res, [(libc, n, c) for n, c in ctxs]

def child(report, work):
    """A forked child: work(), its result written to `report`, then held until killed."""
    try:
        pid = os.fork()
    except OSError as e:
        return None, name(e.errno)
    if pid == 0:
        try:
            msg = work()
        except BaseException as e:
            msg = {"error": repr(e)}
        os.write(report, (json.dumps(msg) + "\n").encode())
        if msg.get("keep", True):
            signal.pause()
        os._exit(0)
    return pid, None

def fill():
    n = 0
    while True:
        try:
            os.open("/dev/null", os.O_RDONLY)
            n += 1
        except OSError as e:
            return {"files": n, "stop": name(e.errno), "keep": n > 0}

def hog():
    buf = b"\x01" * take  # written, so resident
    return {"memory": len(buf), "keep": True, "_": len(buf[:1])}

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
cycle = 0
while not stopped():
    cycle += 1
    r, w = os.pipe()
    reader = os.fdopen(r, "r")
    kids = []

    def answer(timeout=60):
        if select.select([reader], [], [], timeout)[0]:
            return json.loads(reader.readline())
        return {"error": "no answer"}

    res, ctxs = aio()
    t0 = time.time()
    mem = "not taken"
    if take > 0:
        pid, err = child(w, hog)
        if pid:
            kids.append(pid)
            a = answer(120)
            mem = a.get("memory", a.get("error"))
        else:
            mem = f"fork: {err}"
    files, fillers, why = 0, 0, None
    while fillers < 4000:
        pid, err = child(w, fill)
        if not pid:
            why = f"fork: {err}"
            break
        a = answer()
        kids.append(pid)
        fillers += 1
        files += a.get("files", 0)
        why = a.get("stop", a.get("error"))
        if why != "EMFILE":
            break
    full_s = time.time() - t0
    log(cycle=cycle, phase="hold", files=files, children=fillers, stopped_by=why, seconds_to_fill=round(full_s, 1),
        memory=mem, **res)
    topped, end = 0, time.time() + hold
    while time.time() < end and not stopped():
        time.sleep(0.25)
        pid, err = child(w, fill)
        if pid:
            a = answer(10)
            if a.get("files", 0) > 0:
                kids.append(pid)
                topped += a["files"]
            else:
                os.waitpid(pid, 0)
    for k in kids:
        try:
            os.kill(k, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for k in kids:
        try:
            os.waitpid(k, 0)
        except ChildProcessError:
            pass
    for libc, n, c in ctxs:
        libc.syscall(n, c)
    reader.close()
    os.close(w)
    log(cycle=cycle, phase="release", topped_up=topped)
    end = time.time() + release
    while time.time() < end and not stopped():
        time.sleep(0.25)
log(phase="stopped", cycles=cycle)
EOF

cat >"$tools/report.py" <<'EOF'
# report.py OUT: the table and the verdict of an output directory; exit 0 PASS, 1 FAIL.
import glob, json, os, re, sys
out = sys.argv[1]

def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default

def one_line(s, n=220):
    s = " ".join((s or "").split())
    return s if len(s) <= n else s[: n - 3] + "..."

# A missing dependency, as the toolchains say it (else as polysandbox names one): what run A
# may exclude.
DEP = [re.compile(
    r"package [\w.]+ does not exist|cannot find (module|package) [^ ]+|Cannot find module [^ ]+|No module named [^ ]+|"
    r"no required module provides package [^ ;]+|unresolved import [^ ]+|can't find crate for [^ ]+|"
    r"no matching package named [^ ]+|fatal error: [^:]+: No such file or directory|"
    r"Could not find a package configuration file provided by [^ ]+",
    re.I,
), re.compile(r"missing dependenc(y|ies)", re.I)]

def dependency(cause):
    for d in DEP:
        m = d.search(cause)
        if m:
            return m.group(0)
    return None

selected = (read(f"{out}/selected.txt") or "").split()
settings = json.loads(read(f"{out}/settings.json") or "{}")
# --as-prediction: reference solutions with files no prediction can carry, named and not judged.
lost = dict(l.split("\t", 1) for l in (read(f"{out}/not-expressible.txt") or "").splitlines() if "\t" in l)
judged = [i for i in selected if i not in lost]

def verdict_of(r):
    return "excluded" if r.get("excluded") else r.get("verdict", "?")

def run(name):
    d = f"{out}/{name}"
    if not os.path.isdir(d):
        return None
    R = {"name": name}
    cal = read(f"{d}/calibration.json")
    R["cal"] = json.loads(cal)["instances"] if cal else None
    results = {}
    for line in (read(f"{d}/eval/results.jsonl") or "").splitlines():
        if line.strip():
            r = json.loads(line)
            results[r["instance_id"]] = r  # the last line of an instance is its result
    R["results"] = results
    for step in ("calibrate", "eval"):
        R[f"{step}_rc"] = read(f"{d}/{step}.rc", "-")
        R[f"{step}_s"] = float(read(f"{d}/{step}.seconds", "0") or 0)
    return R

runs = [r for r in (run("A"), run("B")) if r]
print()
print(f"gold acceptance (issue 38): {settings.get('dataset', '?')}, {len(selected)} exercises selected"
      f"{' (' + settings['selection'] + ')' if settings.get('selection') else ''}")
print(f"polysandbox: {settings.get('bin', '?')} ({settings.get('version', '?')}); predictions: "
      f"{settings.get('predictions', '?')}; --jobs {settings.get('jobs', '?')}")
print()
hdr = ("run", "calibrated", "gold pass", "gold fail", "resolved", "unresolved", "error", "excluded", "no result",
       "calibrate", "eval", "s/exercise")
print("{:<4}{:>11}{:>10}{:>10}{:>10}{:>11}{:>7}{:>9}{:>10}{:>11}{:>9}{:>11}".format(*hdr))
charged = {"unresolved", "empty_patch", "no_prediction", "patch_failed", "timeout", "oom"}
for R in runs:
    cal, res = R["cal"], R["results"]
    vs = [verdict_of(res[i]) for i in selected if i in res]
    n_cal = len(cal) if cal is not None else 0
    passes = sum(1 for e in (cal or {}).values() if e.get("gold_passes"))
    per = (R["calibrate_s"] + R["eval_s"]) / max(1, len(selected))
    print("{:<4}{:>11}{:>10}{:>10}{:>10}{:>11}{:>7}{:>9}{:>10}{:>10.0f}s{:>8.0f}s{:>10.1f}s".format(
        R["name"], n_cal if cal is not None else "none", passes, n_cal - passes, vs.count("resolved"),
        sum(v in charged for v in vs), vs.count("error"), vs.count("excluded"),
        sum(i not in res for i in selected), R["calibrate_s"], R["eval_s"], per))
for R in runs:
    print(f"  run {R['name']}: calibrate exit {R['calibrate_rc']}, eval exit {R['eval_rc']}")

for R in runs:
    cal, res = R["cal"] or {}, R["results"]
    fails = [(i, e) for i, e in sorted(cal.items()) if not e.get("gold_passes")]
    missing_cal = [i for i in selected if i not in cal]
    if fails or missing_cal:
        print(f"\nrun {R['name']}: calibration, gold fails here (left out of the score):")
        for i, e in fails:
            print(f"  {i:<34} {'/'.join(e.get('gold_verdicts', []))}: {one_line(e.get('cause'))}")
        for i in missing_cal:
            print(f"  {i:<34} not in the calibration")
    nots = [(i, res.get(i)) for i in selected if i not in res or verdict_of(res[i]) != "resolved"]
    if nots:
        print(f"\nrun {R['name']}: not resolved ({len(nots)}):")
        for i, r in nots:
            if r is None:
                print(f"  {i:<34} {'no result':<11} eval wrote no result for it")
            else:
                print(f"  {i:<34} {verdict_of(r):<11} {one_line(r.get('reason'))}")

print()
for R in runs:
    nr = [l.split() for l in (read(f"{out}/{R['name']}/file-nr.log") or "").splitlines()]
    nr = [(int(a), int(m)) for t, a, _, m in (x for x in nr if len(x) == 4)]
    if nr:
        full = sum(1 for a, m in nr if a >= 0.99 * m)
        print(f"run {R['name']}: host file table at most {max(a for a, _ in nr)} of {nr[0][1]} allocated;"
              f" at least 99% full in {full} of {len(nr)} samples (one a second)")

p = read(f"{out}/B/pressure.log")
if p is not None:
    lines = [json.loads(l) for l in p.splitlines() if l.startswith("{")]
    holds = [l for l in lines if l.get("phase") == "hold"]
    print(f"\nrun B's pressure ({settings.get('pressure', '?')}): {len(holds)} cycle{'s' * (len(holds) != 1)}")
    if holds:
        h = max(holds, key=lambda l: l["files"])
        stops = sorted({str(l.get("stopped_by")) for l in holds})
        print(f"  files opened per hold: up to {h['files']} in {h['children']} processes ({h['seconds_to_fill']} s),"
              f" stopped by {', '.join(stops)}")
        print(f"  AIO: io_setup {h.get('io_setup', '?')}; io_uring_setup {h.get('io_uring_setup', '?')}")
        gib = lambda m: f"{m / 2**30:.1f} GiB" if isinstance(m, int) else str(m)
        print(f"  memory taken per hold: {', '.join(sorted({gib(l.get('memory')) for l in holds}))}")
    if not holds:
        print("  the pressure never held: see B/pressure.log and B/pressure.err")

fail = []
if not settings.get("selection") and len(selected) != 225:
    fail.append(f"the benchmark holds {len(selected)} exercises, not 225")
A = next((R for R in runs if R["name"] == "A"), None)
B = next((R for R in runs if R["name"] == "B"), None)
print()
if A:
    res, cal, why = A["results"], A["cal"] or {}, []
    deps, resolved = [], 0
    for i in judged:
        r = res.get(i)
        if r is None:
            why.append(f"{i}: no result")
        elif verdict_of(r) == "resolved":
            resolved += 1
        elif verdict_of(r) == "excluded":
            cause = (cal.get(i) or {}).get("cause") or r.get("reason") or ""
            m = dependency(cause)
            if m:
                deps.append(f"{i} ({m})")
            elif "no tests: the dataset's tests run none" in cause:
                # Nothing to grade, whatever the solution (go/counter's test file is empty).
                deps.append(f"{i} (the dataset's tests run none)")
            else:
                why.append(f"{i}: excluded, not for a missing dependency")
        elif verdict_of(r) != "resolved":
            why.append(f"{i}: {verdict_of(r)}")
    if A["cal"] is None:
        why.insert(0, "no calibration written")
    print(f"{'PASS' if not why else 'FAIL'} run A: {resolved} of {len(judged)} resolved; "
          f"excluded for a missing dependency or no tests: {', '.join(deps) or 'none'}"
          + (f"; {len(why)} not: " + "; ".join(why) if why else ""))
    if why:
        fail.append("run A")
if B:
    res, errors, why = B["results"], [], []
    base = [i for i in judged if verdict_of(A["results"].get(i, {})) == "resolved"] if A else []
    for i in base:
        r = res.get(i)
        v = verdict_of(r) if r else "no result"
        if v == "error":
            errors.append(i)
        elif v != "resolved":
            why.append(f"{i}: {v}")
    if A:
        print(f"{'PASS' if not why else 'FAIL'} run B: of the {len(base)} run A resolved, {len(base) - len(why) - len(errors)}"
              f" resolved, {len(errors)} error (to rerun{': ' + ', '.join(errors) if errors else ''})"
              + (f"; {len(why)} excluded or charged: " + "; ".join(why) if why else "; none excluded or charged"))
        if why:
            fail.append("run B")
    else:
        print("run B alone (--only B): not judged; what it did not resolve is listed above")
if lost:
    print("not judged, reference solutions with files no prediction can carry (--as-prediction): "
          + "; ".join(f"{i} ({f})" for i, f in sorted(lost.items())))
partial = [x for x in (settings.get("selection") and "a selection", (not A or not B) and "one run") if x]
print(f"{'FAIL' if fail else 'PASS'}: issue 38's acceptance" + (f" ({', '.join(fail)})" if fail else "")
      + (f", on {' and '.join(partial)} only: not the acceptance" if partial else "") + f"; outputs in {out}")
sys.exit(1 if fail else 0)
EOF

if [ -n "$report_only" ]; then
    python3 "$tools/report.py" "$report_only"
    exit $?
fi

# ---------------------------------------------------------------------------------------------
# Prerequisites.

[ -n "$dataset" ] || die "no DATASET and no \$POLYSANDBOX_POLYGLOT_FULL (--help)"
d=$(cd "$dataset" 2>/dev/null && pwd) || die "$dataset: not a directory"
dataset=$d
if [ -z "$bin" ]; then
    host=$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')
    if [ -n "$host" ] && [ -x "$repo/target/$host/release/polysandbox" ]; then
        bin=$repo/target/$host/release/polysandbox
    else
        bin=$(command -v polysandbox) || die "no polysandbox: --bin PATH"
    fi
fi
[ -x "$bin" ] || die "$bin: not executable"
version=$("$bin" --version 2>/dev/null) || die "$bin --version failed"
python3 "$tools/select.py" "$dataset" "$exercises" "$languages" >"$tools/selected.txt" || die "no such selection"
n=$(wc -l <"$tools/selected.txt")
[ "$n" -gt 0 ] || die "no exercise selected"
if [ -z "$out" ]; then
    out=$(mktemp -d /var/tmp/gold-acceptance.XXXXXX) || die "mktemp"
elif [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
    die "$out: not empty (-o a new directory)"
fi
mkdir -p "$out" && out=$(cd "$out" && pwd) || die "$out: cannot create it"
mv "$tools" "$out/tools" && tools=$out/tools
mv "$tools/selected.txt" "$out/selected.txt"
select=()
if [ -n "$exercises" ]; then
    while read -r i; do select+=(-t "$i"); done <"$out/selected.txt"
elif [ -n "$languages" ]; then
    IFS=, read -ra ls <<<"$languages"
    for l in "${ls[@]}"; do select+=(--filter-category "$l"); done
fi
predictions=gold
if [ $as_prediction = 1 ]; then
    predictions=$out/predictions
    python3 "$tools/predictions.py" "$dataset" "$out/selected.txt" "$predictions" >"$out/not-expressible.txt" ||
        die "could not write the predictions directory"
fi
selection=""
[ -n "$exercises" ] && selection="--exercises $exercises"
[ -n "$languages" ] && selection="${selection:+$selection }--languages $languages"
pdesc="-p gold"
[ $as_prediction = 1 ] && pdesc="the reference solutions as a predictions directory (--as-prediction)"
DATASET=$dataset BIN=$bin VERSION="$version, sha256 $(sha256sum "$bin" | cut -c1-12)" JOBS=$jobs \
    SELECTION=$selection PREDICTIONS=$pdesc \
    PRESSURE="$pimage, --memory $pmemory --pids $ppids, takes $ptake, holds $hold s, releases $release s" \
    python3 -c 'import json, os, sys
keys = ["dataset", "bin", "version", "jobs", "selection", "predictions", "pressure"]
json.dump({k: os.environ[k.upper()] for k in keys}, open(sys.argv[1], "w"), indent=1)' "$out/settings.json"
echo "gold-acceptance: $n exercises of $dataset, $bin ($version), --jobs $jobs; outputs in $out" >&2

# ---------------------------------------------------------------------------------------------
# The runs.

pressure_pid=""
sampler_pid=""
stop_pressure() {
    if [ -n "$pressure_pid" ]; then
        touch "$out/B/pressure/stop"
        for _ in $(seq 60); do
            kill -0 "$pressure_pid" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$pressure_pid" 2>/dev/null; then
            echo "gold-acceptance: the pressure sandbox did not stop: killing it" >&2
            kill -TERM "$pressure_pid" 2>/dev/null
            sleep 3
            kill -KILL "$pressure_pid" 2>/dev/null
        fi
        wait "$pressure_pid" 2>/dev/null
        echo "$?" >"$out/B/pressure.rc"
        pressure_pid=""
    fi
}
# The host's file table, every second, into DIR/file-nr.log.
start_sampler() {
    (
        while :; do
            read -r a f m </proc/sys/fs/file-nr
            echo "$EPOCHSECONDS $a $f $m"
            sleep 1
        done
    ) >"$1/file-nr.log" &
    sampler_pid=$!
}
stop_sampler() {
    if [ -n "$sampler_pid" ]; then
        kill "$sampler_pid" 2>/dev/null
        wait "$sampler_pid" 2>/dev/null
        sampler_pid=""
    fi
}
cleanup() {
    stop_pressure
    stop_sampler
    [ -n "${out:-}" ] && [ -f "$out/B/file-nr.log" ] &&
        echo "gold-acceptance: host file table after the pressure: $(cat /proc/sys/fs/file-nr)" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# step NAME RUN COMMAND...: runs it, stderr to the terminal and RUN/NAME.err, stdout to
# RUN/NAME.out; its exit status and wall seconds in RUN/NAME.rc and .seconds.
step() {
    local name=$1 dir=$2
    shift 2
    echo "gold-acceptance: run $(basename "$dir"): $*" >&2
    local t0=$EPOCHREALTIME
    "$@" </dev/null >"$dir/$name.out" 2> >(tee "$dir/$name.err" >&2)
    local rc=$?
    echo "$rc" >"$dir/$name.rc"
    python3 -c "print(round($EPOCHREALTIME - $t0, 1))" >"$dir/$name.seconds"
    echo "gold-acceptance: run $(basename "$dir"): $name exit $rc, $(cat "$dir/$name.seconds") s" >&2
}

one_run() {
    local dir=$out/$1
    mkdir -p "$dir"
    [ -n "$sampler_pid" ] || start_sampler "$dir"
    step calibrate "$dir" "$bin" calibrate "$dataset" "${select[@]}" --jobs "$jobs" \
        --calibration "$dir/calibration.json" -o "$dir/calibrate"
    if [ -f "$dir/calibration.json" ]; then
        step eval "$dir" "$bin" eval "$dataset" "${select[@]}" -p "$predictions" --jobs "$jobs" \
            --calibration "$dir/calibration.json" -o "$dir/eval" --summary-md "$dir/eval-summary.md"
    else
        echo "gold-acceptance: run $1: no calibration written: no eval" >&2
    fi
}

start_pressure() {
    local dir=$out/B
    mkdir -p "$dir/pressure"
    cp "$tools/pressure.py" "$dir/pressure/"
    local take
    take=$(python3 -c "import sys; s=sys.argv[1].upper(); m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))" "$ptake") ||
        die "--pressure-take $ptake: a size (5G)"
    "$bin" run --memory "$pmemory" --pids "$ppids" --timeout 86400s -v "$dir/pressure:/pressure:ro" "$pimage" \
        -- python3 /pressure/pressure.py "$hold" "$release" "$take" /pressure/stop \
        </dev/null >"$dir/pressure.log" 2>"$dir/pressure.err" &
    pressure_pid=$!
    # The run starts under pressure: wait for the first hold.
    for _ in $(seq 600); do
        grep -q '"phase": "hold"' "$dir/pressure.log" 2>/dev/null && break
        kill -0 "$pressure_pid" 2>/dev/null || break
        sleep 0.5
    done
    if ! grep -q '"phase": "hold"' "$dir/pressure.log" 2>/dev/null; then
        echo "gold-acceptance: the pressure sandbox did not start: $(tail -n 3 "$dir/pressure.err" "$dir/pressure.log")" >&2
        exit 2
    fi
    echo "gold-acceptance: run B: pressure: $(head -n 1 "$dir/pressure.log")" >&2
}

if [ "$only" != B ]; then
    one_run A
    stop_sampler
fi
if [ "$only" != A ]; then
    mkdir -p "$out/B"
    start_sampler "$out/B"
    start_pressure
    one_run B
    stop_pressure
    stop_sampler
fi

# Only the logs of what did not resolve are kept (unless --keep-logs): the rest is gigabytes.
if [ $keep_logs = 0 ]; then
    python3 - "$out" <<'EOF'
import glob, json, os, shutil, sys
out = sys.argv[1]
for res in glob.glob(f"{out}/*/eval/results.jsonl") + glob.glob(f"{out}/*/calibrate/*/results.jsonl"):
    d = os.path.dirname(res)
    name = os.path.basename(d)
    for line in open(res):
        if line.strip():
            r = json.loads(line)
            # The stubs fail and the controls' runs are not resolved by design: not kept.
            drop = name == "stub" or name.startswith("gold-controls") or r.get("verdict") == "resolved"
            if drop and r.get("logs"):
                shutil.rmtree(os.path.join(d, r["logs"]), ignore_errors=True)
EOF
fi

python3 "$tools/report.py" "$out" | tee "$out/summary.txt"
exit "${PIPESTATUS[0]}"

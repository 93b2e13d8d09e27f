#!/usr/bin/env python3
"""Runs every exercise of an Aider-polyglot-layout benchmark in its language's image with
`polysandbox run`: the reference solution (gold) must pass, the unchanged stub must fail.

    python3 images/acceptance.py [--benchmark ../shared/polyglot-benchmark] [--jobs 2]
                                 [--langs python,go,...] [--mode both|gold|stub]

Each run gets a fresh copy of the exercise (test files always from the benchmark), mounted at
/work/<exercise> (the C++ CMakeLists derives its target from that name), and the catalogue's
setup, test command, limits and environment (images/<lang>.toml). Prints per-language counts,
every unexpected result with the tail of its output, and exits non-zero on any.
This is the acceptance check of the toolchain images; `polysandbox eval` supersedes it.
"""
import argparse
import concurrent.futures as cf
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_catalogue():
    cat = {}
    for name in sorted(os.listdir(os.path.join(ROOT, "images"))):
        if name.endswith(".toml"):
            with open(os.path.join(ROOT, "images", name), "rb") as f:
                entry = tomllib.load(f)
            cat[entry["language"]] = entry
    return cat


def gold_files(files):
    """(example, solution path) pairs, as Exercism lays reference solutions out: an example
    with a solution's file name replaces it; a generic `example.*` replaces the one solution
    file with its extension (C++: example.h is the header, a .cpp with no example keeps its
    stub); any other example file (Java's helper classes) goes beside the first solution file."""
    sols = list(files["solution"])
    pairs = []
    for ex in files["example"]:
        base, ext = os.path.basename(ex), os.path.splitext(ex)[1]
        named = [s for s in sols if os.path.basename(s) == base]
        same_ext = [s for s in sols if os.path.splitext(s)[1] == ext]
        if named:
            pairs.append((ex, named[0]))
        elif base.startswith("example") and len(same_ext) == 1:
            pairs.append((ex, same_ext[0]))
            sols.remove(same_ext[0])
        else:
            pairs.append((ex, os.path.join(os.path.dirname(files["solution"][0]), base)))
    return pairs


def prepare(src, dst, gold):
    shutil.copytree(src, dst, symlinks=True)
    if gold:
        files = json.load(open(os.path.join(src, ".meta", "config.json")))["files"]
        for ex, sol in gold_files(files):
            shutil.copy(os.path.join(src, ex), os.path.join(dst, sol))
        # Rust reference solutions declare their own dependencies.
        cargo_example = os.path.join(src, ".meta", "Cargo-example.toml")
        if os.path.exists(cargo_example):
            shutil.copy(cargo_example, os.path.join(dst, "Cargo.toml"))


def run_one(binary, entry, lang, name, src, gold, scratch):
    dst = os.path.join(scratch, "gold" if gold else "stub", lang, name)
    prepare(src, dst, gold)
    stats = dst + ".stats.json"
    script = " && ".join(entry.get("setup", []) + ['exec "$@"'])
    cmd = [binary, "run", "-q", "--timeout", entry["timeout"], "--memory", entry["memory"], "--cpus", str(entry["cpus"]),
           "--stats-json", stats, "-v", f"{dst}:/work/{name}", "-w", f"/work/{name}"]
    for e in entry.get("env", []):
        cmd += ["-e", e]
    cmd += [entry["image"], "--", "sh", "-c", script, "sh"] + entry["test"]
    start = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    record = json.load(open(stats)) if os.path.exists(stats) else {}
    return {
        "lang": lang, "name": name, "gold": gold, "code": p.returncode, "passed": p.returncode == 0,
        "status": record.get("status", "error"), "wall": time.time() - start,
        "cpu": record.get("cpu_total_s", 0.0), "peak_mib": record.get("memory_peak_bytes", 0) // 2**20,
        "tail": p.stdout.decode(errors="replace")[-1500:],
    }


def expected(r):
    """Gold passes; a stub fails its tests. An infrastructure error (polysandbox's 125, a
    missing toolchain, a timeout) is never the expected result, whichever side it is on."""
    if r["status"] not in ("exited", "signaled") or r["code"] == 125:
        return False
    return r["passed"] == r["gold"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--benchmark", default=os.path.join(ROOT, "..", "shared", "polyglot-benchmark"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--langs", default="")
    ap.add_argument("--mode", default="both", choices=["both", "gold", "stub"])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "polysandbox"))
    ap.add_argument("--json", help="write every result here")
    a = ap.parse_args()
    cat = load_catalogue()
    langs = [l for l in (a.langs.split(",") if a.langs else sorted(os.listdir(a.benchmark))) if l in cat]
    modes = {"both": [True, False], "gold": [True], "stub": [False]}[a.mode]
    scratch = tempfile.mkdtemp(prefix="polysandbox-accept-")
    jobs = []
    for lang in langs:
        base = os.path.join(a.benchmark, lang, "exercises", "practice")
        for name in sorted(os.listdir(base)):
            for gold in modes:
                jobs.append((lang, name, os.path.join(base, name), gold))
    start = time.time()
    results = []
    try:
        with cf.ThreadPoolExecutor(a.jobs) as pool:
            futs = [pool.submit(run_one, a.bin, cat[l], l, n, s, g, scratch) for (l, n, s, g) in jobs]
            for f in cf.as_completed(futs):
                r = f.result()
                results.append(r)
                ok = expected(r)
                print(f"{'ok ' if ok else 'BAD'} {r['lang']:<10} {r['name']:<28} {'gold' if r['gold'] else 'stub'} "
                      f"{r['status']:<8} exit {r['code']:<3} {r['wall']:6.1f}s wall {r['cpu']:6.1f}s cpu {r['peak_mib']:5d} MiB", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{'language':<12} {'gold passed':>12} {'stub passed':>12}")
    bad = [r for r in results if not expected(r)]
    for lang in langs:
        g = [r for r in results if r["lang"] == lang and r["gold"]]
        s = [r for r in results if r["lang"] == lang and not r["gold"]]
        print(f"{lang:<12} {sum(r['passed'] for r in g):>5} / {len(g):<5} {sum(r['passed'] for r in s):>5} / {len(s):<5}")
    print(f"wall time {time.time() - start:.0f} s at --jobs {a.jobs}")
    for r in sorted(bad, key=lambda r: (r["lang"], r["name"])):
        print(f"\n--- unexpected: {r['lang']}/{r['name']} {'gold failed' if r['gold'] and r['code'] != 125 else 'stub passed' if r['passed'] else 'infrastructure error'} ({r['status']}, exit {r['code']})\n{r['tail']}")
    if a.json:
        json.dump(results, open(a.json, "w"), indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

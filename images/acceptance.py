#!/usr/bin/env python3
"""Acceptance of `polysandbox eval` over an Aider-polyglot-layout benchmark (as root):

    python3 images/acceptance.py [--benchmark ../shared/polyglot-benchmark] [--jobs 2]
                                 [--langs python,go,...] [--runs 2] [--no-baseline]

Per language, alternating so drift hits both sides: `polysandbox eval --predictions gold`
(--runs times), `--predictions stub`, and the baseline: the same test commands (catalogue setup
and test, same environment) in the same unpacked images through plain `chroot` on an overlay,
with no namespaces beyond a private mount table, no limits and no measurement, at the same
--jobs. Prints per-language resolved counts, whether the runs agree, and wall times with the
ratio eval/baseline. Exits non-zero when gold misses, stub resolves, or the runs disagree.

The baseline runs without the images' read-only caches (the catalogue's `cache_env`), which
eval uses by default: for the same work on both sides, run this with POLYSANDBOX_CACHES=off
(eval reads it).
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

def _host_tuple():
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


# Cargo builds for the host's own target (static binary, see .cargo/config.toml).
BIN = os.environ.get("POLYSANDBOX_BIN") or os.path.join(ROOT, "target", _host_tuple(), "release", "polysandbox")


def catalogue():
    cat = {}
    for name in sorted(os.listdir(os.path.join(ROOT, "images"))):
        if name.endswith(".toml"):
            with open(os.path.join(ROOT, "images", name), "rb") as f:
                e = tomllib.load(f)
            cat[e["language"]] = e
    return cat


def run_eval(bench, lang, pred, jobs, out):
    shutil.rmtree(out, ignore_errors=True)
    start = time.time()
    subprocess.run([BIN, "eval", bench, "--filter-category", lang, "-p", pred, "-j", str(jobs), "-o", out],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.time() - start
    results = {}
    with open(os.path.join(out, "results.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            results[r["instance_id"]] = r
    return wall, results


def rootfs_of(image):
    out = subprocess.run([BIN, "inspect", image], capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]["Rootfs"]


def gold_tree(src, dst):
    """The exercise with its reference solution, as eval prepares it (shared logic: eval's
    gold_files rule, re-stated here for the baseline)."""
    skip = {".meta", ".docs", ".approaches", ".articles"}
    shutil.copytree(src, dst, symlinks=True, ignore=lambda d, names: [n for n in names if d == src and n in skip])
    files = json.load(open(os.path.join(src, ".meta", "config.json")))["files"]
    sols = list(files["solution"])
    base = os.path.basename
    rest = []
    for ex in files["example"]:
        m = [s for s in sols if base(s) == base(ex)]
        if m:
            shutil.copy(os.path.join(src, ex), os.path.join(dst, m[0]))
            sols.remove(m[0])
        else:
            rest.append(ex)
    for ex in rest:
        same = [s for s in sols if os.path.splitext(s)[1] == os.path.splitext(ex)[1]]
        target = same[0] if len(same) == 1 else os.path.join(os.path.dirname(files["solution"][0]), base(ex))
        if len(same) == 1:
            sols.remove(same[0])
        shutil.copy(os.path.join(src, ex), os.path.join(dst, target))
    if os.path.exists(os.path.join(src, ".meta", "Cargo-example.toml")):
        shutil.copy(os.path.join(src, ".meta", "Cargo-example.toml"), os.path.join(dst, "Cargo.toml"))


def baseline_one(entry, rootfs, src, name, gold, scratch):
    work = os.path.join(scratch, "tree")
    if gold:
        gold_tree(src, work)
    else:
        shutil.copytree(src, work, symlinks=True, ignore=shutil.ignore_patterns(".meta", ".docs", ".approaches", ".articles"))
    for d in ("upper", "work", "merged", "report"):
        os.makedirs(os.path.join(scratch, d), exist_ok=True)
    mem = "2147483648"
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
    for e in entry.get("env", []):
        k, v = e.split("=", 1)
        env[k] = v.replace("{memory}", mem)
    test = [a.replace("{report}", "/polysandbox-report") for a in entry["test"]]
    script = " && ".join(entry.get("setup", []) + ['exec "$@"'])
    m = os.path.join(scratch, "merged")
    mounts = (f"mount -t overlay overlay -o lowerdir={rootfs},upperdir={scratch}/upper,workdir={scratch}/work {m} && "
              f"mount --rbind /dev {m}/dev && mount -t proc proc {m}/proc && "
              f"mkdir -p {m}/work/{name} {m}/polysandbox-report && mount --bind {work} {m}/work/{name} && "
              f"mount --bind {scratch}/report {m}/polysandbox-report && "
              f"exec chroot {m} /usr/bin/env -i " + " ".join(f"'{k}={v}'" for k, v in env.items()) +
              f" sh -c 'cd /work/{name} && exec sh -c \"$0\" sh \"$@\"' " + shlex.join([script] + test))
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", mounts],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    shutil.rmtree(scratch, ignore_errors=True)
    return p.returncode == 0


def run_baseline(bench, lang, entry, gold, jobs, scratch):
    rootfs = rootfs_of(entry["image"])
    base = os.path.join(bench, lang, "exercises", "practice")
    names = sorted(n for n in os.listdir(base) if os.path.exists(os.path.join(base, n, ".meta", "config.json")))
    start = time.time()
    with cf.ThreadPoolExecutor(jobs) as pool:
        futs = {n: pool.submit(baseline_one, entry, rootfs, os.path.join(base, n), n, gold, os.path.join(scratch, f"{lang}-{n}-{gold}")) for n in names}
        passed = {n: f.result() for n, f in futs.items()}
    return time.time() - start, passed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--benchmark", default=os.path.join(ROOT, "..", "shared", "polyglot-benchmark"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--langs", default="")
    ap.add_argument("--runs", type=int, default=2, help="gold runs, to check they agree")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    cat = catalogue()
    langs = [l for l in (a.langs.split(",") if a.langs else sorted(os.listdir(a.benchmark))) if l in cat]
    scratch = tempfile.mkdtemp(prefix="polysandbox-accept-", dir="/var/tmp")
    rows, bad = [], []
    try:
        for lang in langs:
            row = {"lang": lang, "eval_gold_wall": [], "base_gold_wall": None}
            golds = []
            for i in range(a.runs):
                w, res = run_eval(a.benchmark, lang, "gold", a.jobs, os.path.join(scratch, f"gold{i}"))
                row["eval_gold_wall"].append(w)
                golds.append({k: r["verdict"] for k, r in res.items()})
                if i == 0 and not a.no_baseline:
                    # A B A B: the baseline between the eval runs.
                    bw, bpass = run_baseline(a.benchmark, lang, cat[lang], True, a.jobs, scratch)
                    row["base_gold_wall"], row["base_gold_passed"] = bw, sum(bpass.values())
            sw, sres = run_eval(a.benchmark, lang, "stub", a.jobs, os.path.join(scratch, "stub"))
            row["eval_stub_wall"] = sw
            if not a.no_baseline:
                bw, bpass = run_baseline(a.benchmark, lang, cat[lang], False, a.jobs, scratch)
                row["base_stub_wall"], row["base_stub_passed"] = bw, sum(bpass.values())
            g = golds[0]
            row["total"] = len(g)
            row["gold_resolved"] = sum(v == "resolved" for v in g.values())
            row["stub_resolved"] = sum(r["verdict"] == "resolved" for r in sres.values())
            row["runs_agree"] = all(x == g for x in golds)
            for k, v in sorted(g.items()):
                if v != "resolved":
                    bad.append(f"gold {k}: {v}")
            for k, r in sorted(sres.items()):
                if r["verdict"] == "resolved":
                    bad.append(f"stub {k}: resolved")
            if not row["runs_agree"]:
                bad.append(f"{lang}: gold runs disagree")
            rows.append(row)
            print(f"{lang}: gold {row['gold_resolved']}/{row['total']}, stub {row['stub_resolved']}/{row['total']}, agree {row['runs_agree']}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{'language':<11} {'gold':>7} {'stub':>7} {'agree':>5} {'eval gold s':>12} {'chroot s':>9} {'ratio':>6} {'eval stub s':>12} {'chroot s':>9} {'ratio':>6}")
    tot_e = tot_b = 0.0
    for r in rows:
        eg = min(r["eval_gold_wall"])
        bg, bs = r.get("base_gold_wall"), r.get("base_stub_wall")
        ratio = lambda e, b: f"{e / b:6.2f}" if b else "     -"
        print(f"{r['lang']:<11} {r['gold_resolved']:>3}/{r['total']:<3} {r['stub_resolved']:>3}/{r['total']:<3} {str(r['runs_agree']):>5} "
              f"{eg:12.1f} {bg or 0:9.1f} {ratio(eg, bg)} {r['eval_stub_wall']:12.1f} {bs or 0:9.1f} {ratio(r['eval_stub_wall'], bs)}")
        if bg:
            tot_e += eg + r["eval_stub_wall"]
            tot_b += bg + bs
    if tot_b:
        print(f"all: eval {tot_e:.1f} s, chroot baseline {tot_b:.1f} s, ratio {tot_e / tot_b:.3f} (goal <= 1.05)")
    for b in bad:
        print("unexpected:", b)
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""SWE-bench replica images, built without Docker, in the official images' layout.

    rootfs/build.sh swebench RECORDS.{json,jsonl,parquet} --repos DIR [--only ID ...] [--push HOST:PORT]
                             [--relock] [--list] [--verify]

For every record whose repository and version the harness's table (images/swebench.json,
SWE-bench v4.1.0's MAP_REPO_VERSION_TO_SPECS_PY) gives a Python that Debian has here (3.9 from
bullseye, 3.11 from bookworm), it builds what the harness's three Dockerfiles build:
  - base: Debian with that Python, git, patch, a C toolchain (rootfs/swebench-py39|py311.*,
    built and locked like every toolchain image);
  - env: a virtual environment named `testbed` at /opt/miniconda3/envs/testbed, which
    `source /opt/miniconda3/bin/activate; conda activate testbed` activates (a small
    /opt/miniconda3/bin/activate defines `conda activate|deactivate`; there is no conda), with the
    spec's `packages` (requirements.txt read from the repository at environment_setup_commit,
    `-r` inlined and cleaned as the harness does; conda package names installed from PyPI) and
    `pip_packages`;
  - instance: the repository at base_commit in /testbed, the spec's pre_install and install
    commands run, `git commit --allow-empty -am SWE-bench`. The repository holds only what the
    base commit needs: a fresh one into which exactly base_commit's ancestry is fetched from the
    mirror (its branch, the mirror's HEAD name, at it; the mirror's tags that are ancestors of
    it), no remote, no later commit, ref or reflog, objects gc'd. (The harness clones the whole
    repository and deletes the remote and the tags dated after the base: later commits stay
    reachable from other branches and older-dated tags, its issue #70; an agent in the image
    could read the fix there.)
Every Python package is pinned by rootfs/swebench/locks/<owner>__<repo>-<version>.txt (written
by the first build, `pip freeze` of the finished environment; later builds install under it as a
constraint, so they get the same versions). `--relock` accepts new versions.
The image is imported into the store (polysandbox import) as a docker-archive of two layers
(base, then /opt /testbed /root) under the record's official name,
`swebench/sweb.eval.<arch>.<instance_id with __ as _1776_>:latest`, or the record's `image`.
Records this cannot build are listed with the reason and skipped; the exit status is non-zero
only when a build fails.
"""
import argparse
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
# Bump when a change here changes what a replica contains (part of every cache key).
FORMAT = 5
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "1700000000"))
BASES = {"3.9": "swebench-py39", "3.11": "swebench-py311"}
# What the harness's conda environment brings besides Python (pip, setuptools, wheel): pinned.
BOOTSTRAP = ["pip==24.2", "setuptools==72.1.0", "wheel==0.43.0"]
REPLACE_REQ_PACKAGES = [("types-pkg_resources", "types-setuptools")]

ACTIVATE = """# A replica of conda's activation for SWE-bench images built by polysandbox: there is no
# conda here. `conda activate NAME` enters the virtual environment /opt/miniconda3/envs/NAME.
conda() {
    case "${1:-}" in
        activate)
            if [ -n "${VIRTUAL_ENV:-}" ] && command -v deactivate >/dev/null 2>&1; then deactivate; fi
            . "/opt/miniconda3/envs/${2:-testbed}/bin/activate"
            export CONDA_DEFAULT_ENV="${2:-testbed}" CONDA_PREFIX="/opt/miniconda3/envs/${2:-testbed}" ;;
        deactivate)
            if command -v deactivate >/dev/null 2>&1; then deactivate; fi
            unset CONDA_DEFAULT_ENV CONDA_PREFIX ;;
        *) echo "conda $*: this image has no conda, only \\`conda activate|deactivate\\`" >&2; return 1 ;;
    esac
}
export CONDA_EXE=/opt/miniconda3/bin/conda
"""
CONDA_BIN = """#!/bin/sh
echo "conda $*: this image has no conda; source /opt/miniconda3/bin/activate, then conda activate testbed" >&2
exit 1
"""


def log(msg):
    print(f"swebench: {msg}", file=sys.stderr, flush=True)


def load_records(path):
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic == b"PAR1":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ValueError("a Parquet file: this script reads it with pyarrow (pip install pyarrow), or give the records as JSONL")
        return pq.read_table(path).to_pylist()
    text = open(path, encoding="utf-8").read()
    s = text.lstrip()
    if s.startswith("["):
        return json.loads(text)
    if s.startswith("{"):
        try:
            v = json.loads(text)
            return v if isinstance(v, list) else [v]
        except json.JSONDecodeError:
            pass
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def image_name(rec, arch):
    if rec.get("image"):
        return rec["image"]
    a = {"amd64": "x86_64", "arm64": "arm64"}[arch]
    return f"swebench/sweb.eval.{a}.{rec['instance_id'].lower()}:latest".replace("__", "_1776_")


def find_mirror(repos, repo):
    flat = repo.replace("/", "__")
    name = repo.split("/")[-1]
    for c in [repo, repo + ".git", flat, flat + ".git", name, name + ".git"]:
        p = os.path.join(repos, c)
        if os.path.isdir(p):
            return os.path.abspath(p)
    return None


def git_show(mirror, commit, path):
    r = subprocess.run(["git", "-c", "safe.directory=*", "--git-dir", mirror if mirror.endswith(".git") or os.path.exists(os.path.join(mirror, "HEAD")) else os.path.join(mirror, ".git"), "show", f"{commit}:{path}"],
                       capture_output=True)
    return r.stdout.decode() if r.returncode == 0 else None


def requirements(mirror, repo, commit, paths):
    """The harness's get_requirements_by_commit + clean_requirements, read from the mirror."""
    for req_path in paths:
        text = git_show(mirror, commit, req_path)
        if text is not None:
            break
    else:
        raise Unsupported(f"none of {paths} at {commit[:12]}")
    req_dir = "/".join(req_path.split("/")[:-1])
    exclude = lambda line: any(line.strip().startswith(x) for x in ["-e .", "#", ".[test"])
    original, additional = [], []
    for line in text.split("\n"):
        if line.strip().startswith("-r"):
            name = line[len("-r"):].strip()
            extra = git_show(mirror, commit, os.path.normpath(os.path.join(req_dir, name)))
            if extra is not None:
                additional += [l for l in extra.split("\n") if not exclude(l)]
        elif not exclude(line):
            original.append(line)
    additional.append("\n".join(original))
    reqs = "\n".join(additional)
    for old, new in REPLACE_REQ_PACKAGES:
        reqs = re.sub(rf"^{re.escape(old)}([<>=!~]=?.*|$)", new, reqs, flags=re.MULTILINE)
    return reqs


class Unsupported(Exception):
    pass


def plan(rec, specs, repos):
    repo, version = rec.get("repo"), str(rec.get("version", ""))
    spec = specs["specs"].get(repo, {}).get(version)
    if spec is None:
        raise Unsupported(f"{repo} {version or '(no version)'} is not in the harness's table")
    py = spec.get("python")
    if py not in BASES:
        raise Unsupported(f"python {py} (Debian here has 3.9 in bullseye and 3.11 in bookworm)")
    mirror = find_mirror(repos, repo)
    if mirror is None:
        raise Unsupported(f"no mirror of {repo} in {repos}")
    pkgs = spec.get("packages", "")
    reqs = ""
    conda_pkgs = []
    if pkgs == "requirements.txt":
        reqs = requirements(mirror, repo, rec.get("environment_setup_commit") or rec["base_commit"], specs["reqs_paths"][repo])
    elif pkgs == "environment.yml":
        raise Unsupported("its environment is a conda environment.yml (no conda here)")
    elif pkgs:
        # Conda packages (e.g. requests' `pytest`): the same names from PyPI.
        conda_pkgs = pkgs.split()
    return {
        "repo": repo, "version": version, "python": py, "base": BASES[py], "mirror": mirror,
        "reqs": reqs, "conda_pkgs": conda_pkgs, "pip_packages": spec.get("pip_packages", []),
        "pre_install": spec.get("pre_install", []), "install": spec.get("install", ""),
        "base_commit": rec["base_commit"],
    }


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def run_in_root(root, script, mirror=None):
    """Runs `script` (bash) as root in `root`, in private mount and pid namespaces (a user
    namespace too when not root), with the network, the host's DNS and CA bundle, /dev and
    /proc; the mirror read-only at /tmp/mirror.git. Reproducibly: fixed dates for git, no
    bytecode written on import, a fixed hash seed, and C extensions built from sdists without
    debug information (which would name pip's random build directory)."""
    for d in ["dev", "proc", "tmp/mirror.git"]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy("/etc/resolv.conf", os.path.join(root, "etc/resolv.conf.polysandbox"))
    shutil.copy("/etc/ssl/certs/ca-certificates.crt", os.path.join(root, "tmp/host-ca.crt"))
    with open(os.path.join(root, "tmp/step.sh"), "w") as f:
        f.write(script)
    outer = f"""set -e
R={sh_quote(root)}
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
{"mount --bind " + sh_quote(mirror) + ' "$R/tmp/mirror.git" && mount -o remount,bind,ro "$R/tmp/mirror.git"' if mirror else ""}
cp "$R/etc/resolv.conf" "$R/etc/resolv.conf.image" 2>/dev/null || true
cat "$R/etc/resolv.conf.polysandbox" > "$R/etc/resolv.conf"
set +e
chroot "$R" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 SOURCE_DATE_EPOCH={EPOCH} PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 CFLAGS=-g0 CXXFLAGS=-g0 PIP_CERT=/tmp/host-ca.crt SSL_CERT_FILE=/tmp/host-ca.crt \
  PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=180 \
  GIT_AUTHOR_DATE=@{EPOCH} GIT_COMMITTER_DATE=@{EPOCH} /bin/bash -euxo pipefail /tmp/step.sh
rc=$?
if [ -f "$R/etc/resolv.conf.image" ]; then mv "$R/etc/resolv.conf.image" "$R/etc/resolv.conf"; else rm -f "$R/etc/resolv.conf"; fi
rm -f "$R/etc/resolv.conf.polysandbox" "$R/tmp/host-ca.crt" "$R/tmp/step.sh"
exit $rc
"""
    ns = ["unshare", "--mount", "--pid", "--fork"]
    if os.getuid() != 0:
        ns[1:1] = ["--user", "--map-root-user", "--map-auto"]
    r = subprocess.run(ns + ["bash", "-c", outer])
    for d in ["tmp/mirror.git"]:
        try:
            os.rmdir(os.path.join(root, d))
        except OSError:
            pass
    return r.returncode


def in_ns(cmd):
    """A command run as root of a user namespace when we are not root (to read and write a
    tree whose files belong to the image's users)."""
    if os.getuid() == 0:
        return cmd
    return ["unshare", "--user", "--map-root-user", "--map-auto"] + cmd


def normalise_git_index(path, mtime):
    """Rewrites a git index (version 2 or 3) with the stat data of every entry made the same on
    every build: ctime and mtime `mtime`, no device, inode, owner; mode and size kept."""
    import struct
    data = bytearray(open(path, "rb").read())
    sig, version, count = struct.unpack(">4sII", data[:12])
    if sig != b"DIRC" or version not in (2, 3):
        raise RuntimeError(f"{path}: git index version {version}: not one this normalises")
    pos = 12
    for _ in range(count):
        ctime_s, ctime_ns, mtime_s, mtime_ns, dev, ino, mode, uid, gid, size = struct.unpack(">10I", data[pos:pos + 40])
        struct.pack_into(">10I", data, pos, mtime, 0, mtime, 0, 0, 0, mode, 0, 0, size)
        flags = struct.unpack(">H", data[pos + 60:pos + 62])[0]
        head = 62 + (2 if version == 3 and flags & 0x4000 else 0)
        name_len = data.index(0, pos + head) - (pos + head)
        entry = head + name_len
        pos += (entry + 8) & ~7
    body = bytes(data[:-20])
    open(path, "wb").write(body + hashlib.sha1(body).digest())
    os.utime(path, (EPOCH, EPOCH))


def tar_dirs(root, dirs, out):
    """A reproducible tar of `dirs` (relative to root): sorted, mtimes clamped, numeric owners."""
    subprocess.run(in_ns(["tar", "--format=posix", "--sort=name", f"--mtime=@{EPOCH}", "--clamp-mtime", "--numeric-owner",
                          "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
                          "-C", root, "-cf", out] + dirs), check=True)


def extract(tarball, root):
    # Not /dev's nodes (a user namespace cannot make them; the host's /dev is bound there while
    # the steps run, and the image's own /dev is the base layer's, unchanged).
    subprocess.run(in_ns(["tar", "-xpf", tarball, "-C", root, "--exclude=./dev/*"]), check=True)


def remove(path):
    if os.path.exists(path):
        subprocess.run(in_ns(["rm", "-rf", path]), check=True)


def lock_path(p):
    return os.path.join(HERE, "swebench", "locks", f"{p['repo'].replace('/', '__')}-{p['version']}.txt")


def frozen(freeze_text):
    """`pip freeze --all` lines worth pinning: name==version, not the project itself."""
    out = []
    for l in freeze_text.splitlines():
        l = l.strip()
        if "==" in l and not l.startswith(("-e", "#")) and " @ " not in l:
            out.append(l)
    return sorted(set(out), key=str.lower)


def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def build_base(name):
    out = subprocess.run(["bash", os.path.join(HERE, "build.sh"), name], capture_output=True, text=True)
    sys.stderr.write(out.stderr)
    if out.returncode != 0:
        raise RuntimeError(f"building the base {name} failed")
    last = out.stdout.strip().splitlines()[-1]
    return last.split()[1]


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def named(spec_lines):
    """The package names a list of requirement lines names."""
    out = set()
    for l in spec_lines:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", l)
        if m and not l.strip().startswith(("-", "#")):
            out.add(norm(m.group(1)))
    return out


def constraints(lock, without):
    """The lock as constraints for one install step, less the packages that step names itself
    (the harness installs requirements, then pip_packages, whose pins may move a package the
    requirements pinned: each step must get what it asks for, and the lock pins the rest)."""
    return "\n".join(l for l in lock.splitlines() if "==" in l and not l.startswith("#") and norm(l.split("==")[0]) not in without) + "\n"


def env_steps(p, lock):
    """(script, {constraint file name: content}) for the environment."""
    lines = [
        "python3 -m venv /opt/miniconda3/envs/testbed",
        ". /opt/miniconda3/envs/testbed/bin/activate",
        f"python -m pip install --quiet {' '.join(BOOTSTRAP)}",
    ]
    files = {}
    steps = []
    if p["conda_pkgs"]:
        steps.append(("conda", p["conda_pkgs"], " ".join(sh_quote(x) for x in p["conda_pkgs"])))
    if p["reqs"].strip():
        steps.append(("reqs", p["reqs"].splitlines(), "-r /tmp/requirements.txt"))
    if p["pip_packages"]:
        steps.append(("pip", p["pip_packages"], " ".join(sh_quote(x) for x in p["pip_packages"])))
    for name, asked, args in steps:
        c = ""
        if lock:
            files[f"lock-{name}.txt"] = constraints(lock, named(asked) | {"pip", "setuptools", "wheel"})
            c = f"-c /tmp/lock-{name}.txt "
        lines.append(f"python -m pip install --quiet {c}{args}")
    return "\n".join(lines) + "\n", files


def env_script(p, lock):
    return env_steps(p, lock)[0]


BUILD_REQS = """python - > /tmp/build-reqs.txt <<'EOF_BUILD_REQS'
import os
from pip._vendor import tomli
if os.path.exists("pyproject.toml"):
    with open("pyproject.toml", "rb") as f:
        print("\\n".join(tomli.load(f).get("build-system", {}).get("requires", [])))
EOF_BUILD_REQS"""


def instance_script(p, rec, lock):
    base = p["base_commit"]
    return "\n".join([
        "git config --global --add safe.directory '*'",
        # Only the base commit's ancestry: a fresh repository, the base fetched by its hash
        # (nothing later comes along), the mirror's tags that are ancestors of it (not its
        # `c-<sha>` tags: the shallow mirrors of ../shared/swebench name the commits they hold
        # so, not the project's tags, and no version setuptools_scm can read), the branch the
        # mirror's HEAD names at it. No remote, no FETCH_HEAD, no reflog.
        'branch=$(git --git-dir=/tmp/mirror.git symbolic-ref --short HEAD 2>/dev/null || echo master)',
        'git init --quiet --initial-branch="$branch" /testbed',
        "chmod -R 777 /testbed",
        "cd /testbed",
        f"tags=$(git --git-dir=/tmp/mirror.git for-each-ref --merged {base} --format='%(refname)' refs/tags | {{ grep -Ev '^refs/tags/c-[0-9a-f]{{12}}$' || true; }} | sed 's/.*/&:&/')",
        f"git -c uploadpack.allowAnySHA1InWant=true fetch --quiet --no-tags --update-shallow /tmp/mirror.git {base} $tags",
        f"git reset --quiet --hard {base}",
        "rm -f .git/FETCH_HEAD",
        # Without a release tag reachable (a shallow mirror), a project versioned by
        # setuptools_scm gets the spec's version tagged on the base commit, so that its version
        # is the one the record names.
        f"git describe --tags >/dev/null 2>&1 || ! grep -Eqs 'setuptools[_-]scm|use_scm_version' pyproject.toml setup.py setup.cfg || git tag {sh_quote(p['version'] + '.0')}",
        "git reflog expire --expire=now --all",
        "git -c pack.threads=1 gc --quiet --prune=now",
        "source /opt/miniconda3/bin/activate",
        "conda activate testbed",
        *( [f"export PIP_CONSTRAINT=/tmp/lock.txt"] if lock else [] ),
        *p["pre_install"],
        # The project's own build requirements, in the environment: the eval script runs
        # `install` again, and a sandbox without network builds without isolation
        # (PIP_NO_INDEX, PIP_NO_BUILD_ISOLATION=0), from what the environment has.
        BUILD_REQS,
        '[ ! -s /tmp/build-reqs.txt ] || python -m pip install --quiet -r /tmp/build-reqs.txt',
        "rm -f /tmp/build-reqs.txt",
        p["install"] or "true",
        "unset PIP_CONSTRAINT",
        "python -m pip freeze --all > /tmp/freeze.txt",
        # Bytecode, reproducibly: pip's pycs depend on its process's state (marshal's
        # references, and set constants on the hash seed: PYTHONHASHSEED=0), so all of them
        # are made again by one compileall in a fresh process,
        # in sorted order, checked by hash (valid whatever the files' times).
        "find /opt/miniconda3 -name '*.pyc' -delete",
        "python -m compileall -q -j 1 --invalidation-mode checked-hash /opt/miniconda3/envs/testbed/lib >/dev/null 2>&1 || true",
        "rm -f /root/.gitconfig",
        "git config --global user.email setup@swebench.config",
        "git config --global user.name SWE-bench",
        "git commit --quiet --allow-empty -am SWE-bench",
        # Reproducible: every file of /testbed one second older than SOURCE_DATE_EPOCH (the
        # index, rewritten below with that time and no inode or device, stays newer, so git
        # trusts the stat data it keeps: checkStat=minimal, trustctime=false).
        "git config core.checkStat minimal",
        "git config core.trustctime false",
        f"find /testbed -exec touch -h -d @{EPOCH - 1} {{}} +",
        "git update-index --really-refresh -q >/dev/null || true",
        "rm -rf /root/.cache /tmp/lock.txt /tmp/requirements.txt",
    ]) + "\n"


def docker_archive(layers, ref, arch, out):
    diff_ids = []
    for l in layers:
        h = hashlib.sha256()
        with open(l, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        diff_ids.append("sha256:" + h.hexdigest())
    config = {
        "architecture": arch, "os": "linux", "created": "1970-01-01T00:00:00Z",
        "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"],
                   "WorkingDir": "/testbed/", "Cmd": ["/bin/bash"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created_by": "polysandbox rootfs/swebench.py: base"}, {"created_by": "polysandbox rootfs/swebench.py: env and instance"}],
    }
    cfg = json.dumps(config, sort_keys=True).encode()
    cfg_name = hashlib.sha256(cfg).hexdigest() + ".json"
    manifest = json.dumps([{"Config": cfg_name, "RepoTags": [ref], "Layers": [f"{d[7:]}/layer.tar" for d in diff_ids]}]).encode()
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        def add_bytes(name, data):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), EPOCH, 0o644
            t.addfile(ti, io.BytesIO(data))
        add_bytes(cfg_name, cfg)
        for l, d in zip(layers, diff_ids):
            ti = t.gettarinfo(l, f"{d[7:]}/layer.tar")
            ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname, ti.mode = EPOCH, 0, 0, "", "", 0o644
            with open(l, "rb") as f:
                t.addfile(ti, f)
        add_bytes("manifest.json", manifest)


def make_archive(rec, p, lock, lockf, base_tar, env_key, ref, arch, cache, archive, env_cache=True):
    """Builds the instance's docker-archive at `archive`: base, then env (from the cache when
    `env_cache` and it is there), then /testbed."""
    work = tempfile.mkdtemp(dir=cache, prefix=".work-")
    try:
        root = os.path.join(work, "root")
        os.makedirs(root)
        extract(base_tar, root)
        env_tar = os.path.join(cache, f"env-{p['repo'].replace('/', '__')}-{p['version']}-{env_key}.tar")
        if env_cache and os.path.exists(env_tar):
            extract(env_tar, root)
        else:
            log(f"{rec['instance_id']}: environment {p['repo']} {p['version']} (python {p['python']})")
            stage = os.path.join(root, "tmp")
            with open(os.path.join(stage, "requirements.txt"), "w") as f:
                f.write(p["reqs"])
            script, files = env_steps(p, lock)
            for name, content in files.items():
                with open(os.path.join(stage, name), "w") as f:
                    f.write(content)
            if run_in_root(root, script) != 0:
                raise RuntimeError(f"{rec['instance_id']}: installing the environment failed")
            os.makedirs(os.path.join(root, "opt/miniconda3/bin"), exist_ok=True)
            with open(os.path.join(root, "opt/miniconda3/bin/activate"), "w") as f:
                f.write(ACTIVATE)
            with open(os.path.join(root, "opt/miniconda3/bin/conda"), "w") as f:
                f.write(CONDA_BIN)
            os.chmod(os.path.join(root, "opt/miniconda3/bin/conda"), 0o755)
            for name in ["requirements.txt", *files]:
                remove(os.path.join(root, "tmp", name))
            remove(os.path.join(root, "root/.cache"))
            if env_cache:
                tar_dirs(root, ["opt"], env_tar + ".partial")
                os.rename(env_tar + ".partial", env_tar)
        log(f"{rec['instance_id']}: repository at {p['base_commit'][:12]}, {p['install'] or 'no install'}")
        if lock:
            with open(os.path.join(root, "tmp/lock.txt"), "w") as f:
                f.write(constraints(lock, {"pip", "setuptools", "wheel"}))
        if run_in_root(root, instance_script(p, rec, lock), mirror=p["mirror"]) != 0:
            raise RuntimeError(f"{rec['instance_id']}: setting up /testbed failed")
        freeze = frozen(open(os.path.join(root, "tmp/freeze.txt")).read())
        remove(os.path.join(root, "tmp/freeze.txt"))
        # The lock: written by the first build, grown by an instance that needs a package it
        # lacks, and never contradicted (a build installs under it).
        old = frozen(lock) if lock else []
        moved = sorted(set(old) - set(freeze), key=str.lower)
        have = {norm(l.split("==")[0]) for l in freeze}
        moved = [l for l in moved if norm(l.split("==")[0]) in have]
        if moved:
            got = {norm(l.split("==")[0]): l for l in freeze}
            raise RuntimeError(f"{rec['instance_id']}: the environment differs from {os.path.relpath(lockf, TOP)}: " + ", ".join(f"{l} -> {got[norm(l.split('==')[0])]}" for l in moved[:10]) + " (rebuild with --relock to accept)")
        names = {l.split("==")[0].lower() for l in old}
        merged = old + [l for l in freeze if l.split("==")[0].lower() not in names]
        if sorted(merged, key=str.lower) != old:
            os.makedirs(os.path.dirname(lockf), exist_ok=True)
            with open(lockf, "w") as f:
                f.write(f"# pip freeze of the {p['repo']} {p['version']} replica environments (rootfs/swebench.py); constraints for every later build\n")
                f.write("\n".join(sorted(merged, key=str.lower)) + "\n")
            log(f"wrote {os.path.relpath(lockf, TOP)} ({len(merged)} packages)")
        index = os.path.join(root, "testbed/.git/index")
        subprocess.run(in_ns([sys.executable, os.path.abspath(__file__), "--normalise-git-index", index]), check=True)
        layer = os.path.join(work, "instance.tar")
        tar_dirs(root, ["opt", "testbed", "root"], layer)
        docker_archive([base_tar, layer], ref, arch, archive + ".partial")
        os.rename(archive + ".partial", archive)
    finally:
        remove(work)


def verify(archive, again, rec):
    """Compares a rebuild with the cached archive: the same bytes, or what differs."""
    if subprocess.run(["cmp", "-s", archive, again]).returncode == 0:
        h = hashlib.sha256(open(again, "rb").read()).hexdigest()[:16]
        log(f"{rec['instance_id']}: rebuilt byte-identical ({h})")
        os.remove(again)
        return True
    d = tempfile.mkdtemp(prefix="swebench-verify-")
    try:
        lines = []
        for name, src in [("a", archive), ("b", again)]:
            os.makedirs(os.path.join(d, name))
            with tarfile.open(src) as t:
                layer = json.load(t.extractfile("manifest.json"))[0]["Layers"][-1]
                with open(os.path.join(d, name + ".tar"), "wb") as f:
                    shutil.copyfileobj(t.extractfile(layer), f)
            lines.append(subprocess.run(["tar", "-tvf", os.path.join(d, name + ".tar")], capture_output=True, text=True).stdout.splitlines())
        a, b = set(lines[0]), set(lines[1])
        log(f"{rec['instance_id']}: a rebuild differs from {archive}; instance layer entries that differ (cached -, rebuilt +):")
        for l in sorted(a - b)[:10]:
            log(f"  - {l}")
        for l in sorted(b - a)[:10]:
            log(f"  + {l}")
        if a == b:
            def digests(path):
                out = {}
                with tarfile.open(path) as t:
                    for m in t:
                        if m.isfile():
                            out[m.name] = hashlib.sha256(t.extractfile(m).read()).hexdigest()
                return out
            da, db = digests(os.path.join(d, "a.tar")), digests(os.path.join(d, "b.tar"))
            diff = sorted(k for k in da if da[k] != db.get(k))
            log(f"  the listings agree; {len(diff)} files' contents differ: {', '.join(diff[:12])}")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    os.remove(again)
    return False


def build_one(rec, p, args, cache):
    arch = args.arch
    ref = image_name(rec, arch)
    lockf = lock_path(p)
    lock = open(lockf).read() if os.path.exists(lockf) and not args.relock else ""
    base_tar = build_base(p["base"])
    env_key = sha(FORMAT, os.path.basename(base_tar), env_script(p, lock), p["reqs"], lock, ACTIVATE, CONDA_BIN)
    inst_key = sha(env_key, rec["instance_id"], instance_script(p, rec, lock), ref)
    archive = os.path.join(cache, f"{rec['instance_id']}-{inst_key}.tar")
    if not os.path.exists(archive):
        make_archive(rec, p, lock, lockf, base_tar, env_key, ref, arch, cache, archive)
        # Older builds of this instance, and environments of this repository and version other
        # than this one, are dead weight now (a replica is most of a gigabyte).
        for f in os.listdir(cache):
            stale_instance = f.startswith(rec["instance_id"] + "-") and not f.startswith(os.path.basename(archive))
            env_prefix = f"env-{p['repo'].replace('/', '__')}-{p['version']}-"
            stale_env = f.startswith(env_prefix) and f != f"{env_prefix}{env_key}.tar" and re.fullmatch(r"[0-9a-f]{16}\.tar", f[len(env_prefix):])
            if stale_instance or stale_env:
                os.remove(os.path.join(cache, f))
    if args.verify:
        # The same records again, from scratch (no cached environment), under the lock the
        # first build wrote: the same bytes?
        lock = open(lockf).read()
        again = os.path.join(cache, f".verify-{rec['instance_id']}.tar")
        make_archive(rec, p, lock, lockf, base_tar, env_key, ref, arch, cache, again, env_cache=False)
        if not verify(archive, again, rec):
            raise RuntimeError(f"{rec['instance_id']}: not reproducible")
    if not args.no_import:
        # Imported already (this archive, this store, the name still there): nothing to do.
        store_id = hashlib.sha256(f"{os.environ.get('POLYSANDBOX_ROOT', 'default')}-{os.getuid()}".encode()).hexdigest()[:12]
        marker = archive + f".imported-{store_id}"
        listed = subprocess.run([args.bin, "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True).stdout.split()
        if not os.path.exists(marker) or not any(x.endswith(ref.split("/", 1)[-1]) for x in listed):
            out = subprocess.run([args.bin, "import", archive, "--tag", ref], capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"{rec['instance_id']}: import: {out.stderr.strip()}")
            open(marker, "w").close()
    if args.push:
        store = os.environ.get("POLYSANDBOX_ROOT") or ("/var/lib/polysandbox" if os.getuid() == 0 else os.path.join(os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")), "polysandbox"))
        first = ref.split("/")[0]
        has_host = "/" in ref and ("." in first or ":" in first or first == "localhost")
        name = ref.split("/", 1)[1] if has_host else ref
        canon = ref if has_host else f"docker.io/{ref}"
        # The store keeps layers as files and records: skopeo reads what `save` writes.
        with tempfile.TemporaryDirectory() as t:
            saved = os.path.join(t, "image.oci.tar")
            subprocess.run([args.bin, "save", "--root", store, "--format", "oci-archive", "-o", saved, canon], check=True)
            subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", f"oci-archive:{saved}:{canon}", f"docker://{args.push}/{name}"], check=True)
        log(f"pushed {args.push}/{name}")
    print(f"{ref} {archive}")


def main():
    ap = argparse.ArgumentParser(prog="rootfs/build.sh swebench", description="SWE-bench replica images, without Docker")
    ap.add_argument("records")
    ap.add_argument("--repos", required=True, help="directory of git mirrors (owner__name.git, as ../shared/swebench/repos.tar.gz)")
    ap.add_argument("--only", nargs="+", default=[], help="these instance ids only")
    ap.add_argument("--push", help="also push each image to this registry (HOST:PORT), under its name")
    ap.add_argument("--relock", action="store_true", help="accept new package versions (rewrite the locks)")
    ap.add_argument("--list", action="store_true", help="say what would be built and what is not supported, build nothing")
    ap.add_argument("--no-import", action="store_true", help="build the archives only")
    ap.add_argument("--arch", default=subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip())
    ap.add_argument("--verify", action="store_true", help="rebuild each image from scratch and compare: byte-identical?")
    ap.add_argument("--bin", required=True)
    if sys.argv[1:2] == ["--normalise-git-index"]:
        normalise_git_index(sys.argv[2], EPOCH - 1)
        return 0
    args = ap.parse_args()
    specs = json.load(open(os.path.join(TOP, "images", "swebench.json")))
    try:
        records = load_records(args.records)
    except (OSError, ValueError) as e:
        log(f"{args.records}: {e}")
        return 2
    if not os.path.isdir(args.repos):
        log(f"--repos {args.repos}: not a directory")
        return 2
    cache = os.path.join(TOP, ".cache", "swebench")
    os.makedirs(cache, exist_ok=True)
    failed = 0
    todo = []
    for rec in records:
        if args.only and rec.get("instance_id") not in args.only:
            continue
        try:
            todo.append((rec, plan(rec, specs, args.repos)))
        except Unsupported as e:
            log(f"{rec.get('instance_id')}: not built: {e}")
    if args.list:
        for rec, p in todo:
            print(f"{rec['instance_id']}\t{image_name(rec, args.arch)}\tpython {p['python']}")
        return 0
    for rec, p in todo:
        try:
            build_one(rec, p, args, cache)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            log(f"error: {e}")
            failed += 1
    log(f"{len(todo) - failed} built, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

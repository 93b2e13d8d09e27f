#!/usr/bin/env python3
"""Multi-SWE-bench replica images, built without Docker, in the harness's layout.

    rootfs/build.sh multi-swe-bench RECORDS.{json,jsonl,parquet} --repos DIR [--only ID ...]
                                    [--push HOST:PORT] [--list] [--relock] [--no-import]

For every record whose repository the harness's definitions cover (images/multi_swebench.json:
per repository, the external base image `from` and the chain of images, each a Dockerfile and
its files, with placeholders for the record's fields; the record's key as the harness's
Instance.create makes it), this builds what the harness's Dockerfiles build and imports it
under the harness's name, `mswebench/<org>_m_<repo>:pr-<number>` (lowercase, as Docker wants):
  - The external base becomes one of polysandbox's Debian-built images (rootfs/build.sh LANG):
    rust:* -> rust (rustc and cargo 1.85; CARGO_HOME=/usr/local/cargo as in rust:latest, cargo
    itself in /usr/bin), node:* -> javascript (Node.js 18, npm 9, whatever the tag's Node),
    golang:* -> go, gcc:* and buildpack-deps:* -> cpp, openjdk:17* -> java; ubuntu:* and
    debian:* -> the one of our bases (all Debian 12 with apt: the Dockerfiles' apt lines install
    from Debian here, with network) that already holds most of the packages those lines name,
    python when none does (dayjs's `apt install git nodejs npm` -> javascript, where it is
    quick). What Docker's buildpack-deps-based images (rust, node, golang, gcc) hold and our
    recipes lack, that builds use (make, g++, pkg-config, autotools, libssl-dev...: crates'
    build scripts), a first step installs. Other bases, Alpine tags, JDKs other than 17 are
    listed as not built, with the reason.
  - The Dockerfiles' instructions are interpreted: FROM (the chain), ENV and ARG, WORKDIR, RUN
    (in a chroot of the image being built, in private mount and pid namespaces, as root of a
    user namespace when not root, with the network, the host's DNS and CA bundle), COPY of the
    image's files and of the repository; CMD, ENTRYPOINT, SHELL, USER root go to the config or
    the steps, LABEL, EXPOSE, VOLUME, STOPSIGNAL and HEALTHCHECK are ignored; anything else is
    refused. ENV accumulates into the steps and the image's Env, WORKDIR into its WorkingDir.
  - The repository (`COPY <repo> /home/<repo>`, or the harness's other form, `RUN git clone
    https://github.com/<org>/<repo>.git /home/<repo>`) holds only what the base commit needs: a
    fresh repository into which exactly the base commit's ancestry is fetched from the mirror
    (the branch base.ref at it, the mirror's tags that are ancestors of it; no remote, no later
    commit, ref or reflog, objects gc'd). The harness copies a full clone: later commits, and so
    the fix, stay in its images (its issue #70).
  - The image's files are the table's texts filled from the record, except the gold patch:
    fix.patch is written EMPTY (every @@FIX_PATCH@@ is filled with nothing; the fix patch is not
    part of the cache key either). An evaluation writes the prediction there; an image that
    held the answer would hand it to an agent working in it. test.patch is written as the
    harness writes it (the record's test_patch).
  - The tests run without network, from what the steps left (prepare.sh's cargo registry and
    built target/, node_modules): Rust bases get CARGO_NET_OFFLINE=true in the image's Env, Go
    bases GOPROXY=off; for Rust the build checks that `cargo test --no-run` succeeds offline in
    the finished tree (prepare.sh's `cargo test || true` would hide a failed build).
Dependencies are locked: the first build records what was resolved under
rootfs/multi-swe-bench/locks/<org>__<repo>-<number>/ (commit it):
  - repo/<path>: the lock files the steps left in the repository (Cargo.lock, package-lock.json,
    go.sum, yarn.lock, ...) that the base commit does not track, or tracks but the steps changed.
    Later builds put the untracked ones in place as the repository is copied, listed in
    .git/info/exclude while the steps run: prepare.sh's check_git_changes.sh wants `git status
    --porcelain` empty, and an excluded file is not listed there (the harness's exclude file is
    put back afterwards, so the image's `git status` is what the harness's is). A tracked one
    (dayjs's package-lock.json, rewritten by prepare.sh's npm) cannot be put in place before
    those checks: it is compared after the build, and npm.lock decides.
  - npm.lock: every package npm downloaded (name@version). npm reaches the registry through a
    proxy here which, under a lock, offers each locked package at its locked versions only,
    `latest` the newest of them: `npm install rollup@latest` gets the locked rollup.
  - debian.lock: the Debian packages the steps installed or changed (pkg=version), pinned by
    apt preferences while the steps run.
A build whose resolved versions differ from its lock fails, naming what moved; --relock accepts
them; a lock file a build produces that the lock lacks is added to it. Images are reproducible
in form (SOURCE_DATE_EPOCH, sorted numeric-owner tars, the repository's files and git index
normalised as rootfs/swebench.py does), not byte for byte (compilers' outputs differ).
The image is a docker-archive of two layers: the base's tarball (the same blob as the toolchain
image's) and what the steps changed (whiteouts for what they removed; apt's lists and .debs,
npm's cache and logs dropped), cached as .cache/multi-swe-bench/<id>-<key>.tar, the key made of
what goes in: the table's texts filled from the record, the base tarball's name (its recipe's
content), the locks, FORMAT. An archive already imported is not imported again; older archives
of the instance are removed. Records this cannot build are listed with the reason; the exit
status is non-zero only when a build fails.
"""
import argparse
import hashlib
import http.client
import http.server
import io
import json
import os
import re
import shlex
import shutil
import ssl
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import swebench  # noqa: E402  (records, mirrors, namespaces, bases: the SWE-bench builder's)

# Bump when a change here changes what a replica contains (part of every cache key).
FORMAT = 1
EPOCH = swebench.EPOCH
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
LOCKS = os.path.join(HERE, "multi-swe-bench", "locks")
# What Docker's buildpack-deps images (under rust:*, node:*, golang:*) have that builds use and
# our recipes may lack: crates' and node-gyp's build scripts run make, autotools, pkg-config.
BUILDPACK = ["make", "g++", "pkg-config", "libssl-dev", "autoconf", "automake", "libtool", "zlib1g-dev", "curl",
             "xz-utils", "unzip", "procps"]
# The external bases, as polysandbox's recipes: (pattern on the image's name, recipe, the Env
# the external image has that matters here, what the replica's Env adds for runs without network,
# Debian packages the external image has and the recipe lacks, installed by a first step).
BASES = [
    (r"rust", "rust", {"CARGO_HOME": "/usr/local/cargo", "PATH": "/usr/local/cargo/bin:" + PATH}, {"CARGO_NET_OFFLINE": "true"}, BUILDPACK),
    (r"node", "javascript", {}, {}, ["make", "g++", "python3"]),
    (r"golang", "go", {"GOPATH": "/go", "GOTOOLCHAIN": "local", "PATH": "/go/bin:" + PATH}, {"GOPROXY": "off"},
     ["gcc", "libc6-dev", "make", "pkg-config"]),
    # A plain distribution: any of our bases is Debian 12 with apt (see choose_debian_base).
    (r"ubuntu|debian", "python", {}, {}, []),
    (r"buildpack-deps", "cpp", {}, {}, BUILDPACK),
    (r"gcc", "cpp", {}, {}, BUILDPACK),
    # Java only where the JDK is the recipe's (17).
    (r"openjdk|eclipse-temurin", "java", {}, {}, []),
]
# Tags a base is refused with, and why.
REFUSED_TAGS = [(r".*alpine.*", "an Alpine image (its steps would use apk and musl): no Debian recipe stands in for it"),
                (r"(?!17\b).*", "a JDK other than 17 (the java recipe's)", r"openjdk|eclipse-temurin")]
DEBIAN_ANY = {"ubuntu", "debian", "buildpack-deps"}
# The bases a plain distribution may become, the default first.
DEBIAN_BASES = ["python", "cpp", "javascript", "go", "java", "rust"]
# Files that say which dependency versions a package manager resolved.
LOCKFILES = {"Cargo.lock", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "go.sum",
             "Gemfile.lock", "composer.lock", "poetry.lock", "Pipfile.lock"}
NOT_SOURCES = {".git", "node_modules", "target", "vendor"}
NPM_REGISTRY = "https://registry.npmjs.org"


def log(msg):
    print(f"multi-swe-bench: {msg}", file=sys.stderr, flush=True)


class Unsupported(Exception):
    pass


def instance_id(rec):
    return rec.get("instance_id") or f"{rec['org']}__{rec['repo']}-{rec['number']}"


def table_key(rec):
    """The harness's Instance.create: which definition a record uses."""
    if rec.get("number_interval"):
        return f"{rec['org']}/{rec['number_interval']}"
    if rec.get("tag"):
        return f"{rec['org']}/{rec['repo']}_{rec['tag'].replace('.', '_')}"
    return f"{rec['org']}/{rec['repo']}"


def base_of(rec):
    b = rec.get("base") or {}
    if isinstance(b, str):
        b = json.loads(b)
    return b


def fill(text, rec):
    """The table's text with the record's fields in place of its placeholders; @@FIX_PATCH@@
    with nothing (see above). A lowercase placeholder (image names) gets the lowercase value."""
    b = base_of(rec)
    values = {"ORG": rec["org"], "REPO": rec["repo"], "NUMBER": str(rec["number"]), "BASE_SHA": b.get("sha", ""),
              "BASE_REF": b.get("ref", ""), "BASE_LABEL": b.get("label", ""), "FIX_PATCH": "",
              "TEST_PATCH": rec.get("test_patch") or ""}

    def sub(m):
        v = values.get(m.group(1).upper())
        if v is None:
            raise Unsupported(f"the table has a placeholder @@{m.group(1)}@@ this does not know")
        return v.lower() if m.group(1).islower() else v
    return re.sub(r"@@([A-Za-z_]+)@@", sub, text)


def docker_name(ref):
    """(name, tag) of an image reference, docker.io's prefixes removed."""
    ref = ref.split("@")[0]
    name, _, tag = ref.rpartition(":") if ":" in ref.split("/")[-1] else (ref, "", "latest")
    for p in ("docker.io/", "index.docker.io/", "library/"):
        if name.startswith(p):
            name = name[len(p):]
    return name, tag or "latest"


def apt_installs(steps):
    """The packages the steps' `apt install` / `apt-get install` lines name."""
    out = set()
    for instr, a, _ in steps:
        if instr == "RUN":
            for m in re.finditer(r"apt(?:-get)?\s+(?:-\S+\s+)*install\s+([^&|;\n]*)", a):
                out |= {t.split("=")[0] for t in m.group(1).split() if not t.startswith("-")}
    return out


def choose_debian_base(default, steps):
    """For a plain distribution (ubuntu:*, debian:*, buildpack-deps:*): the base that already
    holds most of the packages the steps install with apt (they install from Debian here, so a
    base holding them makes those lines quick no-ops: dayjs's `apt install git nodejs npm` on the
    javascript base); `default` when none holds more."""
    want = apt_installs(steps)
    best, score = default, -1
    for recipe in [default] + [r for r in DEBIAN_BASES if r != default]:
        lock = os.path.join(HERE, f"{recipe}.lock")
        if not os.path.exists(lock):
            continue
        have = {l.split("=")[0] for l in open(lock).read().split()}
        n = len(want & have)
        if n > score:
            best, score = recipe, n
    return best


def map_base(ref):
    name, tag = docker_name(ref)
    for refused in REFUSED_TAGS:
        if re.fullmatch(refused[0], tag) and (len(refused) < 3 or re.fullmatch(refused[2], name)):
            raise Unsupported(f"base image {ref}: {refused[1]}")
    for pat, recipe, env, offline, apt in BASES:
        if re.fullmatch(pat, name):
            return recipe, env, offline, apt
    raise Unsupported(f"base image {ref} has no Debian recipe here")


# --- Dockerfiles ------------------------------------------------------------------------------

def instructions(text):
    """A Dockerfile's instructions, [(NAME, arguments)], continuation lines joined."""
    out, cur = [], ""
    for line in text.splitlines():
        s = line.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if cur and s.startswith("#"):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        name, _, rest = cur.strip().partition(" ")
        out.append((name.upper(), rest.strip()))
        cur = ""
    if cur.strip():
        name, _, rest = cur.strip().partition(" ")
        out.append((name.upper(), rest.strip()))
    return out


def expand(s, env):
    """Docker's $VAR, ${VAR}, ${VAR:-default} and ${VAR:+alt} in ENV, WORKDIR, COPY."""
    def sub(m):
        name = m.group(1) or m.group(2)
        op, word = m.group(3), m.group(4)
        v = env.get(name, "")
        if op == ":-":
            return v or word
        if op == ":+":
            return word if v else ""
        return v
    return re.sub(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:[-+])([^}]*))?\})", sub, s)


def exec_form(args):
    if args.startswith("["):
        try:
            v = json.loads(args)
            if isinstance(v, list) and all(isinstance(x, str) for x in v):
                return v
        except json.JSONDecodeError:
            pass
    return None


def key_values(args, env, what):
    """ENV/ARG/LABEL pairs: `K=V K2="v w"`, or the old `K V W`."""
    if "=" not in args.split(" ")[0]:
        k, _, v = args.partition(" ")
        return [(k, expand(v.strip(), env))]
    try:
        toks = shlex.split(args, posix=True)
    except ValueError as e:
        raise Unsupported(f"{what} {args!r}: {e}")
    out = []
    for t in toks:
        k, eq, v = t.partition("=")
        if not eq:
            raise Unsupported(f"{what} {args!r}: {t!r} is not KEY=VALUE")
        out.append((k, expand(v, env)))
    return out


def plan(rec, table, repos):
    """What to build for a record: the chain's steps, the base, the mirror; Unsupported if not."""
    for f in ("org", "repo", "number"):
        if rec.get(f) in (None, ""):
            raise Unsupported(f"the record has no {f}")
    b = base_of(rec)
    if not b.get("sha"):
        raise Unsupported("the record has no base.sha")
    key = table_key(rec)
    if key in (table.get("unrendered") or {}):
        raise Unsupported(f"the table could not render {key}: {table['unrendered'][key]}")
    entry = table.get("instances", {}).get(key)
    if entry is None:
        raise Unsupported(f"{key} is not in images/multi_swebench.json")
    external = entry.get("from") or ""
    recipe, base_env, offline_env, apt = map_base(external)
    texts = table.get("texts", {})

    def text(tid):
        if tid not in texts:
            raise Unsupported(f"{key}: text {tid!r} is not in the table")
        return texts[tid]
    repo = rec["repo"]
    mirror = swebench.find_mirror(repos, f"{rec['org']}/{repo}")
    if mirror is None:
        raise Unsupported(f"no mirror of {rec['org']}/{repo} in {repos}")
    if subprocess.run(["git", "-c", "safe.directory=*", "--git-dir", mirror, "cat-file", "-e", b["sha"] + "^{commit}"],
                      capture_output=True).returncode != 0:
        raise Unsupported(f"base commit {b['sha'][:12]} is not in {mirror}")
    steps = []
    prev = None
    images = entry.get("images") or []
    if not images:
        raise Unsupported(f"{key}: no images in the table")
    for i, im in enumerate(images):
        name, tag = fill(im["name"], rec).lower(), fill(im["tag"], rec).lower()
        files = {}
        for rel, tid in im.get("files", []):
            files[os.path.normpath(fill(rel, rec))] = fill(text(tid), rec)
        dockerfile = fill(text(im["dockerfile"]), rec)
        seen_from = False
        for instr, args in instructions(dockerfile):
            if instr == "FROM":
                ref = args.split()[0] if args else ""
                want = external if i == 0 else prev
                # (The harness names its images in lowercase, Docker's rule; the table keeps
                # @@ORG@@ where the record's org may have capitals.)
                if seen_from or ref.lower() != want.lower():
                    raise Unsupported(f"{name}:{tag}: FROM {ref}, not the chain's {want}")
                seen_from = True
                continue
            if not seen_from and instr != "ARG":
                raise Unsupported(f"{name}:{tag}: {instr} before FROM")
            if instr == "RUN" and "git clone" in args:
                # The harness's need_clone form of `COPY <repo> /home/<repo>`: the repository
                # (no network to GitHub needed: the mirror's base ancestry, as for COPY).
                m = re.fullmatch(r"git clone (?:-\S+ )*https://github\.com/([^/\s]+)/([^/\s]+?)(?:\.git)?/? +(\S+)", args.strip())
                if not m or (m.group(1).lower(), m.group(2).lower()) != (rec["org"].lower(), repo.lower()):
                    raise Unsupported(f"RUN {args[:80]}: a clone this does not interpret (only `git clone <the record's repository> DEST` alone)")
                steps.append(("REPO", m.group(3), files))
                continue
            steps.append((instr, args, files))
        if not seen_from:
            raise Unsupported(f"{name}:{tag}: no FROM")
        prev = f"{name}:{tag}"
        last = (name, tag)
    if docker_name(external)[0] in DEBIAN_ANY:
        recipe = choose_debian_base(recipe, steps)
    return {"id": instance_id(rec), "key": key, "rec": rec, "from": external, "recipe": recipe,
            "base_env": base_env, "offline_env": offline_env, "apt": apt, "steps": steps, "mirror": mirror,
            "ref": f"{last[0]}:{last[1]}", "repo": repo, "sha": b["sha"], "branch": b.get("ref") or "main",
            "fix_run": entry.get("fix_run", "")}


def check_steps(p):
    """Interprets the instructions once without building (so --list refuses what a build would)."""
    for instr, args, files in p["steps"]:
        if instr in ("ENV", "ARG", "WORKDIR", "RUN", "CMD", "ENTRYPOINT", "LABEL", "EXPOSE", "VOLUME", "STOPSIGNAL",
                     "HEALTHCHECK", "MAINTAINER"):
            if instr == "RUN" and (args.startswith("<<") or args.startswith("--")):
                raise Unsupported(f"RUN {args[:30]}...: heredocs and RUN options are not interpreted here")
            continue
        if instr in ("COPY", "ADD"):
            copy_sources(instr, args, files, p, {})
            continue
        if instr == "REPO":
            continue
        if instr == "USER" and args.split(":")[0] in ("root", "0"):
            continue
        if instr == "SHELL" and exec_form(args):
            continue
        raise Unsupported(f"{instr} {args[:40]}: not an instruction this interprets")


def copy_sources(instr, args, files, p, env):
    """[(source kind, content or None, destination)] of a COPY/ADD."""
    v = exec_form(args)
    toks = v if v is not None else args.split()
    opts = [t for t in toks if t.startswith("--")]
    toks = [expand(t, env) for t in toks if not t.startswith("--")]
    for o in opts:
        if not (o.startswith("--chown=") and o.split("=", 1)[1].split(":")[0] in ("root", "0")) and not o.startswith("--link"):
            raise Unsupported(f"{instr} {o}: not interpreted here")
    if len(toks) < 2:
        raise Unsupported(f"{instr} {args}: no source or destination")
    srcs, dest = toks[:-1], toks[-1]
    out = []
    for s in srcs:
        n = os.path.normpath(s)
        if n in files:
            if instr == "ADD" and re.search(r"\.(tar|tgz|tar\.\w+)$", n):
                raise Unsupported(f"ADD {s}: an archive (ADD would unpack it): not interpreted here")
            out.append(("file", n, dest))
        elif n == p["repo"]:
            out.append(("repo", n, dest))
        else:
            raise Unsupported(f"{instr} {s}: neither one of the image's files nor the repository {p['repo']}")
    if len(srcs) > 1 and not dest.endswith("/"):
        raise Unsupported(f"{instr} {args}: several sources need a directory destination")
    return out


# --- running steps -------------------------------------------------------------------------

def run_step(root, argv, env, cwd, logf, mirror=None):
    """Runs argv in the chroot `root` (see swebench.run_in_root: private mount and pid
    namespaces, a user namespace when not root, /dev and /proc, the network, the host's DNS and
    CA bundle at /tmp/host-ca.crt), with exactly `env`, in `cwd`; the mirror read-only at
    /tmp/mirror.git. Output to the open file logf."""
    for d in ["dev", "proc", "tmp", "etc"]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    times = {d: os.stat(os.path.join(root, d)) for d in ("etc", "tmp")}
    resolv = os.path.join(root, "etc/resolv.conf")
    saved = resolv + ".polysandbox-image"
    had = os.path.lexists(resolv)
    if had:
        os.rename(resolv, saved)
    shutil.copy("/etc/resolv.conf", resolv)
    shutil.copy("/etc/ssl/certs/ca-certificates.crt", os.path.join(root, "tmp/host-ca.crt"))
    if mirror:
        os.makedirs(os.path.join(root, "tmp/mirror.git"), exist_ok=True)
    inner = "cd " + swebench.sh_quote(cwd) + " && exec \"$@\""
    outer = f"""set -e
R={swebench.sh_quote(root)}
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
{"mount --bind " + swebench.sh_quote(mirror) + ' "$R/tmp/mirror.git" && mount -o remount,bind,ro "$R/tmp/mirror.git"' if mirror else ""}
exec chroot "$R" /usr/bin/env -i {" ".join(swebench.sh_quote(f"{k}={v}") for k, v in env.items())} /bin/sh -c {swebench.sh_quote(inner)} sh {" ".join(swebench.sh_quote(a) for a in argv)}
"""
    ns = ["unshare", "--mount", "--pid", "--fork"]
    if os.getuid() != 0:
        ns[1:1] = ["--user", "--map-root-user", "--map-auto"]
    logf.flush()
    try:
        r = subprocess.run(ns + ["bash", "-c", outer], stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    finally:
        os.remove(resolv)
        if had:
            os.rename(saved, resolv)
        os.remove(os.path.join(root, "tmp/host-ca.crt"))
        if mirror:
            try:
                os.rmdir(os.path.join(root, "tmp/mirror.git"))
            except OSError:
                pass
        for d, st in times.items():
            os.utime(os.path.join(root, d), ns=(st.st_atime_ns, st.st_mtime_ns))
    return r.returncode


def repo_script(p, dest, tracked_locks):
    """The repository at `dest`: only the base commit's ancestry (see above)."""
    sha, branch = p["sha"], p["branch"]
    g = "git -c safe.directory='*'"
    return "\n".join([
        "set -eu",
        f"mkdir -p {swebench.sh_quote(os.path.dirname(dest.rstrip('/')) or '/')}",
        f"git init --quiet --initial-branch={swebench.sh_quote(branch)} {swebench.sh_quote(dest)}",
        f"cd {swebench.sh_quote(dest)}",
        # The mirror's tags that are ancestors of the base (not the `c-<sha>` tags the shared
        # mirrors name the commits they hold by): fetched with it, nothing later comes along.
        f"tags=$({g} --git-dir=/tmp/mirror.git for-each-ref --merged {sha} --format='%(refname)' refs/tags | {{ grep -Ev '^refs/tags/c-[0-9a-f]{{12}}$' || true; }} | sed 's/.*/&:&/')",
        # (The upload-pack the fetch starts reads the mirror, which rootless shows as nobody's,
        # and git clears our -c options and GIT_CONFIG_* for it: its own -c, then.)
        f"{g} fetch --upload-pack='git -c safe.directory=/tmp/mirror.git -c uploadpack.allowAnySHA1InWant=true upload-pack' --quiet --no-tags --update-shallow /tmp/mirror.git {sha} $tags",
        f"git reset --quiet --hard {sha}",
        "rm -f .git/FETCH_HEAD .git/ORIG_HEAD",
        "git reflog expire --expire=now --all",
        "git -c pack.threads=1 gc --quiet --prune=now",
    ]) + "\n"


# --- npm through a lock ------------------------------------------------------------------------

def semver_key(v):
    m = re.match(r"(\d+)\.(\d+)\.(\d+)(?:-([^+]*))?", v)
    if not m:
        return (0, (0, 0, 0), ())
    pre = m.group(4)
    return (0 if pre else 1, tuple(int(x) for x in m.groups()[:3]), tuple((0, int(x)) if x.isdigit() else (1, x) for x in (pre or "").split(".")))


class NpmProxy:
    """npm's registry for the steps (npm_config_registry): packuments and tarballs fetched from
    registry.npmjs.org by the host. Records every tarball served (name@version). Under a lock,
    a locked package's packument offers only its locked versions, `latest` the newest of them,
    so that ranges and tags (`rollup@latest`) resolve to what the lock holds."""

    def __init__(self, locked):
        self.locked = locked
        self.served = set()
        self.errors = []
        self.cache = {}
        self.local = threading.local()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                proxy.handle(self, head=False)

            def do_HEAD(self):
                proxy.handle(self, head=True)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def fetch(self, path, accept):
        """(status, content type, body) of a GET from the registry, on this thread's own
        kept-alive connection."""
        host = urllib.parse.urlsplit(NPM_REGISTRY).hostname
        for attempt in range(4):
            c = getattr(self.local, "conn", None)
            if c is None:
                c = self.local.conn = http.client.HTTPSConnection(host, timeout=120, context=ssl.create_default_context())
            try:
                c.request("GET", path, headers={"Accept": accept or "application/json", "User-Agent": "polysandbox-msb-proxy"})
                r = c.getresponse()
                body = r.read()
                if r.status < 500 or attempt == 3:
                    return r.status, r.getheader("Content-Type", "application/octet-stream"), body
            except (OSError, http.client.HTTPException):
                c.close()
                self.local.conn = None
                if attempt == 3:
                    raise
            time.sleep(1 + attempt)

    def handle(self, h, head):
        path = h.path.split("?")[0]
        try:
            if "/-/" in path and path.endswith((".tgz", ".tar.gz")):
                status, ctype, body = self.fetch(path, "*/*")
                if status == 200:
                    name = urllib.parse.unquote(path.lstrip("/").split("/-/")[0])
                    file = path.rsplit("/", 1)[1]
                    base = name.split("/")[-1]
                    ver = file[len(base) + 1:].rsplit(".tgz", 1)[0] if file.startswith(base + "-") else file
                    self.served.add(f"{name}@{ver}")
            else:
                accept = h.headers.get("Accept", "application/json")
                ck = (path, accept)
                if ck not in self.cache:
                    status, ctype, body = self.fetch(path, accept)
                    name = urllib.parse.unquote(path.lstrip("/"))
                    if status == 200 and name in self.locked:
                        body = self.filter(name, body)
                    self.cache[ck] = (status, ctype, body)
                status, ctype, body = self.cache[ck]
        except Exception as e:  # noqa: BLE001 (npm is told, and the build fails below)
            self.errors.append(f"{path}: {e}")
            status, ctype, body = 502, "text/plain", str(e).encode()
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def filter(self, name, body):
        doc = json.loads(body)
        keep = self.locked[name]
        versions = {v: m for v, m in doc.get("versions", {}).items() if v in keep}
        doc["versions"] = versions
        tags = {t: v for t, v in doc.get("dist-tags", {}).items() if v in versions}
        if "latest" not in tags and versions:
            tags["latest"] = max(versions, key=semver_key)
        doc["dist-tags"] = tags
        if isinstance(doc.get("time"), dict):
            doc["time"] = {k: v for k, v in doc["time"].items() if k in versions or k in ("created", "modified")}
        return json.dumps(doc).encode()


# --- locks -----------------------------------------------------------------------------------

def lock_dir(p):
    r = p["rec"]
    return os.path.join(LOCKS, f"{r['org']}__{r['repo']}-{r['number']}")


def read_locks(d):
    out = {}
    if os.path.isdir(d):
        for dp, dns, fns in os.walk(d):
            for f in fns:
                full = os.path.join(dp, f)
                out[os.path.relpath(full, d)] = open(full, "rb").read()
    return out


def write_locks(d, locks):
    if os.path.isdir(d):
        shutil.rmtree(d)
    for rel, data in locks.items():
        full = os.path.join(d, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)


def resolved(rel, data):
    """{package: version} a lock file says, to name what moved."""
    text = data.decode(errors="replace")
    name = os.path.basename(rel)
    out = {}
    if name == "Cargo.lock":
        for m in re.finditer(r'\[\[package\]\]\s*\nname = "([^"]+)"\s*\nversion = "([^"]+)"', text):
            out.setdefault(m.group(1), []).append(m.group(2))
    elif name in ("package-lock.json", "npm-shrinkwrap.json"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            doc = {}
        for path, m in (doc.get("packages") or {}).items():
            if path and isinstance(m, dict) and m.get("version"):
                out.setdefault(m.get("name") or path.split("node_modules/")[-1], []).append(m["version"])
        if not out:
            def walk(deps):
                for n, m in (deps or {}).items():
                    out.setdefault(n, []).append(m.get("version", ""))
                    walk(m.get("dependencies"))
            walk(doc.get("dependencies"))
    elif name in ("npm.lock",):
        for l in text.splitlines():
            n, _, v = l.rpartition("@")
            out.setdefault(n, []).append(v)
    elif name == "debian.lock":
        for l in text.splitlines():
            n, _, v = l.partition("=")
            out.setdefault(n, []).append(v)
    elif name == "go.sum":
        for l in text.splitlines():
            f = l.split()
            if len(f) >= 2:
                out.setdefault(f[0], []).append(f[1].removesuffix("/go.mod"))
    else:
        for l in text.splitlines():
            out.setdefault(l, []).append("")
    return {k: sorted(set(v), key=semver_key) for k, v in out.items()}


def moved(old, new):
    """What differs between two sets of lock files, in words."""
    out = []
    for rel in sorted(set(old) | set(new)):
        if old.get(rel) == new.get(rel):
            continue
        if rel not in new:
            out.append(f"{rel}: no longer produced")
            continue
        if rel not in old:
            out.append(f"{rel}: new")
            continue
        a, b = resolved(rel, old[rel]), resolved(rel, new[rel])
        diffs = [f"{n} {','.join(a.get(n, [])) or '(none)'} -> {','.join(b.get(n, [])) or '(none)'}"
                 for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)]
        if diffs:
            out.append(f"{rel}: " + "; ".join(diffs[:12]) + (f"; and {len(diffs) - 12} more" if len(diffs) > 12 else ""))
    return out


def dpkg_status(text):
    pkgs, p, v, ok = {}, None, None, False
    for line in text.splitlines() + [""]:
        if line.startswith("Package:"):
            p = line.split(":", 1)[1].strip()
        elif line.startswith("Version:"):
            v = line.split(":", 1)[1].strip()
        elif line.startswith("Status:"):
            ok = line.rstrip().endswith(" installed")
        elif not line.strip():
            if p and ok:
                pkgs[p] = v
            p, v, ok = None, None, False
    return pkgs


# --- the layer of what the steps changed ---------------------------------------------------------

def base_index(base_tar, cache):
    """path -> [type, mode, uid, gid, size, mtime, linkname, sha256] of the base tarball,
    cached next to the archives."""
    idx_path = os.path.join(cache, f"base-{os.path.basename(base_tar)}.index.json")  # (a base's name is its content's)
    if os.path.exists(idx_path):
        return idx_path
    idx = {}
    with tarfile.open(base_tar) as t:
        for m in t:
            name = m.name[2:] if m.name.startswith("./") else m.name
            name = name.rstrip("/")
            if not name or name == ".":
                continue
            h = ""
            if m.isreg():
                hh = hashlib.sha256()
                f = t.extractfile(m)
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    hh.update(chunk)
                h = hh.hexdigest()
            kind = "f" if m.isreg() else "d" if m.isdir() else "l" if m.issym() else "h" if m.islnk() else "o"
            idx[name] = [kind, m.mode & 0o7777, m.uid, m.gid, m.size if m.isreg() else 0, int(m.mtime), m.linkname, h]
    # A hard link is the file it links to.
    for name, e in idx.items():
        if e[0] == "h":
            t = e[6][2:] if e[6].startswith("./") else e[6]
            if t in idx and idx[t][0] == "f":
                idx[name] = ["f"] + idx[t][1:6] + [""] + idx[t][7:]
    with open(idx_path + ".partial", "w") as f:
        json.dump(idx, f)
    os.rename(idx_path + ".partial", idx_path)
    for f in os.listdir(cache):
        if f.startswith("base-") and f.endswith(".index.json") and f != os.path.basename(idx_path):
            if not os.path.exists(os.path.join(TOP, ".cache", "images", f[len("base-"):-len(".index.json")])):
                os.remove(os.path.join(cache, f))
    return idx_path


def make_layer(root, index_path, out, since):
    """(Run as root of the build's user namespace.) A reproducible tar of what differs in `root`
    from the base: new and changed entries (mtimes clamped to SOURCE_DATE_EPOCH, numeric owners,
    sorted), whiteouts for removed ones. `since`: the time the steps started (an entry changed
    since then whose metadata is the base's is compared by content)."""
    import stat as st
    idx = json.load(open(index_path))
    skip = {"dev", "proc"}
    entries = []
    present = set()
    for dp, dns, fns in os.walk(root):
        rel_dir = os.path.relpath(dp, root)
        rel_dir = "" if rel_dir == "." else rel_dir
        if rel_dir == "":
            dns[:] = [d for d in dns if d not in skip]
        for name in dns + fns:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            present.add(rel)
            s = os.lstat(os.path.join(dp, name))
            b = idx.get(rel)
            if st.S_ISREG(s.st_mode):
                kind = "f"
            elif st.S_ISDIR(s.st_mode):
                kind = "d"
            elif st.S_ISLNK(s.st_mode):
                kind = "l"
            elif st.S_ISSOCK(s.st_mode):
                continue
            else:
                kind = "o"
            if b is not None:
                same = (b[0] == kind and b[1] == st.S_IMODE(s.st_mode) and b[2] == s.st_uid and b[3] == s.st_gid)
                if same and kind == "f":
                    same = b[4] == s.st_size and b[5] == int(s.st_mtime)
                    if same and s.st_ctime >= since:
                        h = hashlib.sha256()
                        with open(os.path.join(dp, name), "rb") as f:
                            for chunk in iter(lambda: f.read(1 << 20), b""):
                                h.update(chunk)
                        same = h.hexdigest() == b[7]
                elif same and kind == "d":
                    same = b[5] == int(s.st_mtime)
                elif same and kind == "l":
                    same = b[6] == os.readlink(os.path.join(dp, name))
                if same:
                    continue
            entries.append((tuple(rel.split("/")), rel, "add"))
    for rel in idx:
        if rel in present or rel.split("/")[0] in skip:
            continue
        parent = rel.rpartition("/")[0]
        if parent and parent not in present:
            continue  # its directory went: one whiteout for it
        d, _, n = rel.rpartition("/")
        wh = f"{d}/.wh.{n}" if d else f".wh.{n}"
        entries.append((tuple(wh.split("/")), wh, "whiteout"))
    entries.sort()
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT, encoding="utf-8", errors="surrogateescape") as t:
        for _, rel, what in entries:
            if what == "whiteout":
                ti = tarfile.TarInfo(rel)
                ti.mtime, ti.mode = EPOCH, 0o644
                t.addfile(ti)
                continue
            path = os.path.join(root, rel)
            ti = t.gettarinfo(path, rel)
            ti.mtime = min(int(ti.mtime), EPOCH)
            ti.uname = ti.gname = ""
            if ti.isreg():
                with open(path, "rb") as f:
                    t.addfile(ti, f)
            else:
                t.addfile(ti)


# --- the image -------------------------------------------------------------------------------

def docker_archive(layers, ref, arch, config, out):
    diff_ids = []
    for l in layers:
        h = hashlib.sha256()
        with open(l, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        diff_ids.append("sha256:" + h.hexdigest())
    cfg = {
        "architecture": arch, "os": "linux", "created": "1970-01-01T00:00:00Z", "config": config,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created_by": "polysandbox rootfs/build.sh: the base"},
                    {"created_by": "polysandbox rootfs/multi_swebench.py: the Dockerfiles' steps"}],
    }
    data = json.dumps(cfg, sort_keys=True).encode()
    cfg_name = hashlib.sha256(data).hexdigest() + ".json"
    manifest = json.dumps([{"Config": cfg_name, "RepoTags": [ref], "Layers": [f"{d[7:]}/layer.tar" for d in diff_ids]}]).encode()
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        def add_bytes(name, b):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(b), EPOCH, 0o644
            t.addfile(ti, io.BytesIO(b))
        add_bytes(cfg_name, data)
        for l, d in zip(layers, diff_ids):
            ti = t.gettarinfo(l, f"{d[7:]}/layer.tar")
            ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname, ti.mode = EPOCH, 0, 0, "", "", 0o644
            with open(l, "rb") as f:
                t.addfile(ti, f)
        add_bytes("manifest.json", manifest)


def first_steps(p):
    """What the external base has and ours lacks (BASES), installed before the Dockerfiles' steps."""
    if not p["apt"]:
        return []
    return [("RUN", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
             + " ".join(p["apt"]) + " >/dev/null", {})]


# Whether the tests build without network in the finished image: (a file at the repository's
# top, the command). prepare.sh's `cargo test || true` hides a build that failed.
OFFLINE_CHECKS = {"rust": ("Cargo.toml", ["cargo", "test", "--no-run"])}


def tracked_at_base(p, rel):
    return subprocess.run(["git", "-c", "safe.directory=*", "--git-dir", p["mirror"], "cat-file", "-e", f"{p['sha']}:{rel}"],
                          capture_output=True).returncode == 0


def in_root(root, path):
    return os.path.join(root, path.lstrip("/"))


def build(p, args, base_tar, locks, cache, out, logf):
    """Builds the docker-archive at `out`; returns the locks the build resolved."""
    arch = args.arch
    work = tempfile.mkdtemp(dir=cache, prefix=".work-")
    proxy = None
    try:
        root = os.path.join(work, "root")
        os.makedirs(root)
        started = time.time()

        def phase(what):
            logf.write(f"=== [{int(time.time() - started)} s] {what}\n")
            logf.flush()
        swebench.extract(base_tar, root)
        phase("base extracted")
        idx = base_index(base_tar, cache)
        phase("base indexed")
        base_pkgs = dpkg_status(open(in_root(root, "var/lib/dpkg/status"), errors="replace").read()) \
            if os.path.exists(in_root(root, "var/lib/dpkg/status")) else {}
        since = time.time()
        npm_locked = {}
        for l in locks.get("npm.lock", b"").decode().splitlines():
            n, _, v = l.rpartition("@")
            npm_locked.setdefault(n, set()).add(v)
        proxy = NpmProxy(npm_locked)
        pins = in_root(root, "etc/apt/preferences.d/polysandbox-msb-lock")
        if locks.get("debian.lock"):
            os.makedirs(os.path.dirname(pins), exist_ok=True)
            with open(pins, "w") as f:
                for l in locks["debian.lock"].decode().splitlines():
                    n, _, v = l.partition("=")
                    f.write(f"Package: {n}\nPin: version {v}\nPin-Priority: 1001\n\n")
        env = dict(p["base_env"])
        env.setdefault("PATH", PATH)
        build_args = {}
        workdir = "/"
        shell = ["/bin/sh", "-c"]
        cmd, entrypoint = ["/bin/bash"], None
        repos = []  # (destination, original .git/info/exclude)
        for instr, a, files in first_steps(p) + p["steps"]:
            if instr == "ENV":
                for k, v in key_values(a, {**build_args, **env}, "ENV"):
                    env[k] = v
            elif instr == "ARG":
                k, eq, v = a.partition("=")
                build_args[k.strip()] = expand(v, env) if eq else build_args.get(k.strip(), "")
            elif instr == "WORKDIR":
                workdir = os.path.normpath(os.path.join(workdir, expand(a, env)))
                os.makedirs(in_root(root, workdir), exist_ok=True)
            elif instr in ("COPY", "ADD", "REPO"):
                sources = [("repo", p["repo"], expand(a, env))] if instr == "REPO" else copy_sources(instr, a, files, p, env)
                for kind, src, dest in sources:
                    dest_abs = os.path.join(workdir, dest)
                    if kind == "file":
                        target = os.path.join(dest_abs, os.path.basename(src)) if dest.endswith("/") or os.path.isdir(in_root(root, dest_abs)) else dest_abs
                        os.makedirs(os.path.dirname(in_root(root, target)), exist_ok=True)
                        with open(in_root(root, target), "w", encoding="utf-8", newline="\n") as f:
                            f.write(files[src])
                        os.chmod(in_root(root, target), 0o644)
                        continue
                    target = os.path.normpath(dest_abs)
                    logf.write(f"\n=== the repository at {p['sha'][:12]} into {target}\n")
                    step_env = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8"}
                    with open(in_root(root, "tmp/repo.sh"), "w") as f:
                        f.write(repo_script(p, target, []))
                    rc = run_step(root, ["/bin/sh", "/tmp/repo.sh"], step_env, "/", logf, mirror=p["mirror"])
                    os.remove(in_root(root, "tmp/repo.sh"))
                    if rc != 0:
                        raise RuntimeError(f"{p['id']}: copying the repository failed (see {logf.name})")
                    exclude = in_root(root, os.path.join(target, ".git/info/exclude"))
                    original = open(exclude, "rb").read() if os.path.exists(exclude) else None
                    placed = []
                    for rel, data in locks.items():
                        if rel.startswith("repo/") and not tracked_at_base(p, rel[5:]):
                            full = in_root(root, os.path.join(target, rel[5:]))
                            os.makedirs(os.path.dirname(full), exist_ok=True)
                            with open(full, "wb") as f:
                                f.write(data)
                            placed.append("/" + rel[5:])
                    if placed:
                        os.makedirs(os.path.dirname(exclude), exist_ok=True)
                        with open(exclude, "ab") as f:
                            f.write(("".join(f"{x}\n" for x in placed)).encode())
                        logf.write(f"=== locks put in place: {', '.join(placed)}\n")
                    repos.append((target, exclude, original))
            elif instr == "RUN":
                argv = exec_form(a) or shell + [a]
                step_env = {**build_args, **env}
                step_env.setdefault("HOME", "/root")
                step_env.update({
                    "SOURCE_DATE_EPOCH": str(EPOCH), "SSL_CERT_FILE": "/tmp/host-ca.crt", "NODE_EXTRA_CA_CERTS": "/tmp/host-ca.crt",
                    "CARGO_HTTP_CAINFO": "/tmp/host-ca.crt", "GIT_SSL_CAINFO": "/tmp/host-ca.crt", "PIP_CERT": "/tmp/host-ca.crt",
                    "REQUESTS_CA_BUNDLE": "/tmp/host-ca.crt", "npm_config_registry": proxy.url, "npm_config_audit": "false",
                    "npm_config_fund": "false", "npm_config_update_notifier": "false",
                })
                logf.write(f"\n=== RUN {a}\n")
                log(f"{p['id']}: RUN {a[:100]}")
                t0 = time.time()
                rc = run_step(root, argv, step_env, workdir, logf)
                if proxy.errors:
                    raise RuntimeError(f"{p['id']}: npm's registry proxy: {'; '.join(proxy.errors[:3])}")
                if rc != 0:
                    raise RuntimeError(f"{p['id']}: RUN {a[:80]}: exit status {rc} (see {logf.name})")
                log(f"{p['id']}: ... {int(time.time() - t0)} s")
            elif instr == "CMD":
                cmd = exec_form(a) or shell + [a]
            elif instr == "ENTRYPOINT":
                entrypoint = exec_form(a) or shell + [a]
            elif instr == "SHELL":
                shell = exec_form(a)
            # USER root, LABEL, EXPOSE, VOLUME, STOPSIGNAL, HEALTHCHECK, MAINTAINER: nothing to do.
        proxy.close()
        phase("steps done")
        check = OFFLINE_CHECKS.get(p["recipe"])
        for target, _, _ in repos:
            if check and os.path.exists(in_root(root, os.path.join(target, check[0]))):
                logf.write(f"\n=== offline: {' '.join(check[1])} in {target}\n")
                if run_step(root, check[1], {**env, **p["offline_env"], "HOME": "/root"}, target, logf) != 0:
                    raise RuntimeError(f"{p['id']}: the tests do not build without network in the image "
                                       f"(`{' '.join(check[1])}` in {target} failed: see {logf.name})")
                phase("the tests build offline")
        # What was resolved.
        new = {}
        for target, exclude, original in repos:
            if original is None:
                if os.path.exists(exclude):
                    os.remove(exclude)
            else:
                with open(exclude, "wb") as f:
                    f.write(original)
            top = in_root(root, target)
            for dp, dns, fns in os.walk(top):
                dns[:] = sorted(d for d in dns if d not in NOT_SOURCES)
                for f in fns:
                    if f in LOCKFILES:
                        rel = os.path.relpath(os.path.join(dp, f), top)
                        data = open(os.path.join(dp, f), "rb").read()
                        r = subprocess.run(["git", "-c", "safe.directory=*", "--git-dir", p["mirror"], "show", f"{p['sha']}:{rel}"], capture_output=True)
                        if r.returncode != 0 or r.stdout != data:
                            new[f"repo/{rel}"] = data
        if proxy.served:
            new["npm.lock"] = ("\n".join(sorted(proxy.served)) + "\n").encode()
        if os.path.exists(pins):
            os.remove(pins)
        pkgs = dpkg_status(open(in_root(root, "var/lib/dpkg/status"), errors="replace").read()) \
            if os.path.exists(in_root(root, "var/lib/dpkg/status")) else {}
        delta = sorted(f"{k}={v}" for k, v in pkgs.items() if base_pkgs.get(k) != v)
        if delta:
            new["debian.lock"] = ("\n".join(delta) + "\n").encode()
        # Caches and logs the harness's images carry and a replica does not need: apt's lists
        # and downloaded packages (as in our bases), npm's cache and logs.
        for d in ["var/lib/apt/lists", "var/cache/apt", "root/.npm", "tmp"]:
            full = in_root(root, d)
            if os.path.isdir(full) and not os.path.islink(full):
                st = os.stat(full)
                for e in os.listdir(full):
                    if not (d == "var/lib/apt/lists" and e in ("partial", "lock")):
                        swebench.remove(os.path.join(full, e))
                subprocess.run(swebench.in_ns(["touch", "-d", f"@{st.st_mtime}", full]), check=True)
        phase("locks read, caches dropped")
        # The repositories reproducibly: every file one second older than SOURCE_DATE_EPOCH, the
        # git index with that time and no inode or device (as rootfs/swebench.py does).
        for target, _, _ in repos:
            subprocess.run(swebench.in_ns(["find", in_root(root, target), "-exec", "touch", "-h", "-d", f"@{EPOCH - 1}", "{}", "+"]), check=True)
            index = in_root(root, os.path.join(target, ".git/index"))
            if os.path.exists(index):
                subprocess.run(swebench.in_ns([sys.executable, os.path.join(HERE, "swebench.py"), "--normalise-git-index", index]), check=True)
        phase("repositories normalised")
        layer = os.path.join(work, "layer.tar")
        subprocess.run(swebench.in_ns([sys.executable, os.path.abspath(__file__), "--make-layer", root, idx, layer, repr(since)]), check=True)
        phase(f"layer written ({os.path.getsize(layer) >> 20} MiB)")
        final_env = {**env, **p["offline_env"]}
        config = {"Env": [f"{k}={v}" for k, v in final_env.items()], "WorkingDir": workdir, "Cmd": cmd}
        if entrypoint:
            config["Entrypoint"] = entrypoint
        docker_archive([base_tar, layer], p["ref"], arch, config, out)
        phase("archive written")
        return new
    finally:
        if proxy:
            try:
                proxy.close()
            except Exception:  # noqa: BLE001
                pass
        swebench.remove(work)


def key_of(p, base_tar, locks):
    parts = [FORMAT, os.path.basename(base_tar), p["recipe"], json.dumps(p["base_env"], sort_keys=True), json.dumps(first_steps(p)),
             json.dumps(p["offline_env"], sort_keys=True), p["ref"], p["sha"], p["branch"], p["repo"]]
    for instr, a, files in p["steps"]:
        parts.append(f"{instr} {a}")
        if instr in ("COPY", "ADD"):
            for n in sorted(files):
                parts += [n, files[n]]
    for rel in sorted(locks):
        parts += [rel, locks[rel]]
    return swebench.sha(*parts)


def build_one(p, args, cache):
    ref = p["ref"]
    ld = lock_dir(p)
    locks = {} if args.relock else read_locks(ld)
    base_tar = swebench.build_base(p["recipe"])
    archive = os.path.join(cache, f"{p['id']}-{key_of(p, base_tar, locks)}.tar")
    if not os.path.exists(archive):
        t0 = time.time()
        partial = archive + ".partial"
        log(f"{p['id']}: building {ref} on {p['recipe']} (for {p['from']}); log: {os.path.relpath(cache, TOP)}/{p['id']}.log")
        with open(os.path.join(cache, f"{p['id']}.log"), "w") as logf:
            try:
                new = build(p, args, base_tar, locks, cache, partial, logf)
            except BaseException:
                logf.flush()
                if os.path.exists(partial):
                    os.remove(partial)
                tail = open(logf.name, errors="replace").read().splitlines()[-25:]
                sys.stderr.write("".join(f"  | {l}\n" for l in tail))
                raise
        # The lock is never contradicted; it grows by what a build resolves that it did not
        # cover (a lock file the steps produce now, e.g. after a change of this builder).
        kept = {rel: data for rel, data in new.items() if rel in locks}
        if locks and kept != locks:
            os.remove(partial)
            raise RuntimeError(f"{p['id']}: the resolved versions differ from {os.path.relpath(ld, TOP)}: "
                               + " | ".join(moved(locks, kept)) + " (rebuild with --relock to accept)")
        if new != read_locks(ld):
            write_locks(ld, new)
            log(f"{p['id']}: wrote {os.path.relpath(ld, TOP)} ({', '.join(sorted(new)) or 'nothing to lock'})")
            # Built under what the lock now says: the archive is the one a locked build makes.
            archive = os.path.join(cache, f"{p['id']}-{key_of(p, base_tar, new)}.tar")
        os.rename(partial, archive)
        # Older builds of this instance are dead weight now.
        for f in os.listdir(cache):
            if f.startswith(p["id"] + "-") and re.fullmatch(r"[0-9a-f]{16}\.tar(\.imported-[0-9a-f]+)?", f[len(p["id"]) + 1:]) \
                    and not f.startswith(os.path.basename(archive)):
                os.remove(os.path.join(cache, f))
        log(f"{p['id']}: {os.path.getsize(archive) >> 20} MiB in {int(time.time() - t0)} s")
    if not args.no_import:
        store_id = hashlib.sha256(f"{os.environ.get('POLYSANDBOX_ROOT', 'default')}-{os.getuid()}".encode()).hexdigest()[:12]
        marker = archive + f".imported-{store_id}"
        listed = subprocess.run([args.bin, "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True).stdout.split()
        if not os.path.exists(marker) or not any(x.endswith(ref) for x in listed):
            out = subprocess.run([args.bin, "import", archive, "--tag", ref], capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"{p['id']}: import: {out.stderr.strip()}")
            open(marker, "w").close()
    if args.push:
        store = os.environ.get("POLYSANDBOX_ROOT") or ("/var/lib/polysandbox" if os.getuid() == 0 else os.path.join(os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")), "polysandbox"))
        # The store keeps layers as files and records: skopeo reads what `save` writes.
        with tempfile.TemporaryDirectory() as t:
            saved = os.path.join(t, "image.oci.tar")
            subprocess.run([args.bin, "save", "--root", store, "--format", "oci-archive", "-o", saved, f"docker.io/{ref}"], check=True)
            subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", f"oci-archive:{saved}:docker.io/{ref}", f"docker://{args.push}/{ref}"], check=True)
        log(f"pushed {args.push}/{ref}")
    print(f"{ref} {archive}", flush=True)


def main():
    if sys.argv[1:2] == ["--make-layer"]:
        make_layer(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
        return 0
    ap = argparse.ArgumentParser(prog="rootfs/build.sh multi-swe-bench", description="Multi-SWE-bench replica images, without Docker")
    ap.add_argument("records")
    ap.add_argument("--repos", required=True, help="directory of git mirrors (org__repo.git, as ../shared/multi-swe-bench/repos.tar.gz)")
    ap.add_argument("--only", nargs="+", default=[], help="these instances only (org__repo-number, or the image's name)")
    ap.add_argument("--push", help="also push each image to this registry (HOST:PORT), under its name")
    ap.add_argument("--relock", action="store_true", help="accept new dependency versions (rewrite the locks)")
    ap.add_argument("--list", action="store_true", help="say what would be built and what is not supported, build nothing")
    ap.add_argument("--no-import", action="store_true", help="build the archives only")
    ap.add_argument("--arch", default=subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip())
    ap.add_argument("--table", default=os.path.join(TOP, "images", "multi_swebench.json"), help="the harness's definitions (default: images/multi_swebench.json)")
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    table_path = args.table
    if not os.path.exists(table_path):
        log(f"{os.path.relpath(table_path, TOP)}: missing (the harness's per-repository definitions)")
        return 2
    table = json.load(open(table_path))
    try:
        records = swebench.load_records(args.records)
    except (OSError, ValueError) as e:
        log(f"{args.records}: {e}")
        return 2
    if not os.path.isdir(args.repos):
        log(f"--repos {args.repos}: not a directory")
        return 2
    if args.arch != "amd64" and not args.list:
        log(f"--arch {args.arch}: the replicas are built for this machine's architecture only")
        return 2
    cache = os.path.join(TOP, ".cache", "multi-swe-bench")
    os.makedirs(cache, exist_ok=True)
    todo = []
    for rec in records:
        try:
            rid = instance_id(rec)
        except KeyError as e:
            log(f"a record without {e}: not built")
            continue
        if args.only and rid not in args.only and not any(o.lower() in (f"mswebench/{rec['org']}_m_{rec['repo']}:pr-{rec['number']}".lower(),) for o in args.only):
            continue
        try:
            p = plan(rec, table, args.repos)
            check_steps(p)
            todo.append(p)
        except Unsupported as e:
            log(f"{rid}: not built: {e}")
    if args.list:
        for p in todo:
            print(f"{p['id']}\t{p['ref']}\t{p['from']} -> {p['recipe']}")
        return 0
    failed = 0
    for p in todo:
        try:
            build_one(p, args, cache)
        except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
            log(f"error: {e}")
            failed += 1
    log(f"{len(todo) - failed} built, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Multi-SWE-bench's per-repository instance definitions, carried over as data.

    python3 rootfs/multi_swebench_table.py --harness DIR_OR_GITDIR [--out images/multi_swebench.json]

Multi-SWE-bench (github.com/multi-swe-bench/multi-swe-bench) defines how to build and grade each
repository's instances in Python: multi_swe_bench/harness/repos/<language>/<org>/<repo>*.py
registers (`@Instance.register(org, name)`) an Instance class whose dependency() is a chain of
Image classes (each with a FROM, an image name and tag, a workdir, files rendered from the pull
request with str.format, and a Dockerfile), a fix_patch_run() command and a parse_log() (Python).
This script imports every one of those modules (from a checkout, or a git directory without a
work tree, which it `git archive`s to a temporary directory), renders every registered class
with a sentinel pull request (org, repo, number, base sha/ref/label, fix and test patch set to
unique values), walks the image chain, and writes images/multi_swebench.json with the sentinels
replaced by the placeholders listed in its "placeholders" (@@ORG@@ = pr.org, ...). Substituting
a record's values into the placeholders gives what the harness would have rendered for it; the
harness lowercases image names (image_name()), so names must be lowercased after substitution.
Every Dockerfile and file text is stored once under "texts" (id = first 16 hex of its sha256).
Each parse_log is classified into a family (msb- + 12 hex of the sha256 of ast.dump() of the
function without its docstring); FAMILY_PARSERS below names the families our own parsers
implement. Classes that cannot be rendered are listed under "unrendered" with the error.

Rendering uses the harness's defaults (run_evaluation.py): Config(need_clone=True,
global_env=None, clear_env=True), i.e. base images `git clone` the repository and carry no
ENV lines. What a sentinel cannot stand for is reported on stderr, not guessed: classes that
compare pr.number (or pr.org/pr.repo) to constants render the branch the sentinel takes (the
number sentinel is larger than any real PR number, i.e. the newest branch), and classes that
derive text from the test patch (SWEImageDefault: the list of files the test patch touches)
render it empty.

The output depends only on the harness commit: regenerating gives the same bytes. The harness
needs `dataclasses_json` and `unidiff` to import; when they are missing, small stand-ins are
used (nothing rendered depends on them). To regenerate:

    python3 rootfs/multi_swebench_table.py --harness /path/to/multi-swe-bench[.git]
"""
import argparse
import ast
import collections
import hashlib
import importlib
import inspect
import json
import os
import posixpath
import re
import subprocess
import sys
import tempfile
import textwrap
import types

REPOSITORY = "multi-swe-bench/multi-swe-bench"
GENERATED_BY = "rootfs/multi_swebench_table.py"

# Family id -> the name of our parser that reads that family's logs the way its parse_log does.
# Families not listed here (or listed as None) have no parser of ours.
#
# At harness commit 24f493f8a103 the 2020 rendered parse_logs fall into 1924 families, 1895 of
# them with one instance (most modules carry their own generated parse_log). Carried over: the
# libtest family (16 instances), the two go-test families (14 and 5), and the jest one of dayjs
# (2). The next largest, not carried, with their shapes as suggestions only:
#   msb-e4dc03950b13 (9, python/Qiskit/qiskit.py): SWE-bench's parse_log_pytest_v2 shape
#       (ANSI codes stripped; `STATUS name` lines, `FAILED name - msg`, or `name STATUS` for
#       old pytest), but STATUS is any of Multi-SWE-bench's TestStatus values (PASS, FAIL,
#       SKIP, NONE, PASSED, FAILED, SKIPPED, ERROR, XFAIL), then mapping_to_testresult.
#   msb-796b8c28ea9d (8, java/junitteam/junit5.py): Gradle `> Task :x [UP-TO-DATE|FROM-CACHE|
#       FAILED|SKIPPED|NO-SOURCE]` tasks plus `Class > test PASSED|FAILED|SKIPPED` lines.
FAMILY_PARSERS = {
    # libtest lines, `test (\S+) ... ok|FAILED|ignored` matched on stripped lines
    # (sharkdp/fd, tokio-rs/bytes, BurntSushi/ripgrep: 16 instances)
    "msb-4a5d5bacb3c0": "msb-libtest",
    # jest: `PASS|FAIL <suite>` lines and `✓|✕ <test>` lines, tests named `<suite>:<test>`
    # (iamkun/dayjs, anuraghazra/github-readme-stats)
    "msb-2ea228a85b3f": "msb-jest-suites",
    # go test -v: `--- PASS|FAIL|SKIP: (\S+)` and a loose `FAIL:?\s?(.+?)\s`, failure over pass,
    # a skip kept only for a failed test (beego, caddy, cli/cli, hugo, ...: 14 instances)
    "msb-7b628ad046d0": "msb-gotest",
    # the same, a subtest's name cut at its last `/` (etcd, gin, gorm, grpc-go, go-zero: 5)
    "msb-2f95ed406439": "msb-gotest-parents",
}

# Placeholder -> the pull request field it stands for, and the sentinel rendered in its place.
PLACEHOLDERS = {
    "@@ORG@@": "pr.org",
    "@@REPO@@": "pr.repo",
    "@@NUMBER@@": "pr.number",
    "@@BASE_SHA@@": "pr.base.sha",
    "@@BASE_REF@@": "pr.base.ref",
    "@@BASE_LABEL@@": "pr.base.label",
    "@@FIX_PATCH@@": "pr.fix_patch",
    "@@TEST_PATCH@@": "pr.test_patch",
}
NUMBER_SENTINEL = 918273645  # larger than any real pull request number
STRING_SENTINELS = {
    "@@ORG@@": "QzxOrgSntzQ",
    "@@REPO@@": "QzxRepoSntzQ",
    "@@BASE_SHA@@": "QzxBaseShaSntzQ",
    "@@BASE_REF@@": "QzxBaseRefSntzQ",
    "@@BASE_LABEL@@": "QzxBaseLabelSntzQ",
    "@@FIX_PATCH@@": "QzxFixPatchSntzQ",
    "@@TEST_PATCH@@": "QzxTestPatchSntzQ",
}
# Fields with no placeholder: if one shows up in a rendering, the class is unrendered.
UNPLACED_SENTINELS = {
    "pr.title": "QzxTitleSntzQ",
    "pr.body": "QzxBodySntzQ",
    "pr.state": "QzxStateSntzQ",
    "pr.tag": "QzxTagSntzQ",
    "pr.number_interval": "QzxIntervalSntzQ",
    "pr.lang": "QzxLangSntzQ",
}
SENTINEL_CORE = re.compile(r"qzx[a-z]*sntzq", re.IGNORECASE)

# Notes about the current rendering (what a sentinel could not stand for), per class.
NOTES = set()


class SentinelStr(str):
    """A sentinel string that notes being compared to something (a branch on its value)."""

    field = ""

    def _note(self, other):
        NOTES.add(f"compares {self.field} to {other!r}")

    def __eq__(self, other):
        self._note(other)
        return str.__eq__(self, other)

    def __ne__(self, other):
        self._note(other)
        return str.__ne__(self, other)

    def __contains__(self, item):
        NOTES.add(f"tests {item!r} in {self.field}")
        return str.__contains__(self, item)

    def startswith(self, *a):
        NOTES.add(f"tests {self.field}.startswith{a!r}")
        return str.startswith(self, *a)

    def endswith(self, *a):
        NOTES.add(f"tests {self.field}.endswith{a!r}")
        return str.endswith(self, *a)

    __hash__ = str.__hash__


def sentinel_str(field, value):
    s = SentinelStr(value)
    s.field = field
    return s


class SentinelInt(int):
    """The number sentinel: notes comparisons (a branch on the pull request number)."""

    def _note(self, op, other):
        NOTES.add(f"compares pr.number {op} {other!r}")

    def __lt__(self, o):
        self._note("<", o)
        return int.__lt__(self, o)

    def __le__(self, o):
        self._note("<=", o)
        return int.__le__(self, o)

    def __gt__(self, o):
        self._note(">", o)
        return int.__gt__(self, o)

    def __ge__(self, o):
        self._note(">=", o)
        return int.__ge__(self, o)

    def __eq__(self, o):
        self._note("==", o)
        return int.__eq__(self, o)

    def __ne__(self, o):
        self._note("!=", o)
        return int.__ne__(self, o)

    __hash__ = int.__hash__


def install_stand_ins():
    """Stand-ins for the harness's third-party imports that rendering does not need."""
    try:
        import dataclasses_json  # noqa: F401
    except ImportError:
        m = types.ModuleType("dataclasses_json")

        def dataclass_json(cls=None, **_):
            return cls if cls is not None else (lambda c: c)

        m.dataclass_json = dataclass_json
        m.config = lambda **kw: {}
        sys.modules["dataclasses_json"] = m
    try:
        import unidiff  # noqa: F401
    except ImportError:
        m = types.ModuleType("unidiff")

        class PatchSet(list):
            def __init__(self, *_a, **_k):
                super().__init__()

        m.PatchSet = PatchSet
        sys.modules["unidiff"] = m


def get_harness(path):
    """(directory holding multi_swe_bench/, commit); a git dir without a work tree is archived."""
    if os.path.isdir(os.path.join(path, "multi_swe_bench")):
        commit = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        return path, commit
    commit = subprocess.run(["git", "--git-dir", path, "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    out = tempfile.mkdtemp(prefix="msb-src-")
    archive = subprocess.Popen(["git", "--git-dir", path, "archive", "HEAD", "multi_swe_bench"],
                               stdout=subprocess.PIPE)
    subprocess.run(["tar", "x", "-C", out], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        sys.exit(f"git archive failed for {path}")
    return out, commit


def static_registrations(filename):
    """[(org, name)] of the @Instance.register decorators in a module, read without importing."""
    keys = []
    try:
        tree = ast.parse(open(filename, encoding="utf-8").read())
    except SyntaxError:
        return keys
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for d in node.decorator_list:
                if (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
                        and d.func.attr == "register" and len(d.args) == 2
                        and all(isinstance(a, ast.Constant) for a in d.args)):
                    keys.append((d.args[0].value, d.args[1].value))
    return keys


def family_of(func):
    """(family id, source) of a parse_log function."""
    source = textwrap.dedent(inspect.getsource(func))
    fn = ast.parse(source).body[0]
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        fn.body = body[1:] or [ast.Pass()]
    digest = hashlib.sha256(ast.dump(fn).encode()).hexdigest()
    return "msb-" + digest[:12], source


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--harness", required=True,
                    help="a multi-swe-bench checkout, or its git directory (no work tree needed)")
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "images",
        "multi_swebench.json"))
    ap.add_argument("--commit", help="the harness's commit, when --harness is a plain directory")
    args = ap.parse_args()

    root, commit = get_harness(args.harness)
    commit = args.commit or commit
    # Some harness modules print at import: keep our stdout for ourselves.
    sys.stdout = open(os.devnull, "w")
    if not re.fullmatch(r"[0-9a-f]{40}", commit or ""):
        sys.exit(f"cannot tell the harness's commit from {args.harness}")
    install_stand_ins()
    sys.path.insert(0, root)
    sys.dont_write_bytecode = True

    # (importing the harness package imports every module its repos/__init__ chain names)
    from multi_swe_bench.harness import image as h_image
    from multi_swe_bench.harness import instance as h_instance
    from multi_swe_bench.harness import pull_request as h_pr

    def get_modified_files(patch):
        NOTES.add("derives the test patch's file list (rendered empty)")
        return []

    h_image.get_modified_files = get_modified_files

    repos_dir = os.path.join(root, "multi_swe_bench", "harness", "repos")
    modules = []
    for dirpath, dirnames, filenames in os.walk(repos_dir):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(".py") and f != "__init__.py":
                modules.append(os.path.join(dirpath, f))
    modules.sort()

    unrendered = {}
    # Importing the harness package imported its own chain of repos modules (harness/__init__
    # imports repos): that is the harness's registry. Then any module that chain leaves out.
    registry = dict(h_instance.Instance._registry)
    not_in_chain = []
    for path in modules:
        rel = os.path.relpath(path, root)
        name = rel[:-3].replace(os.sep, ".")
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001
            for org, repo in static_registrations(path):
                unrendered.setdefault(f"{org}/{repo}", f"import {rel}: {type(e).__name__}: {e}")
            continue
        for key, cls in h_instance.Instance._registry.items():
            if key not in registry:
                registry[key] = cls
                not_in_chain.append(key)

    config = h_image.Config(need_clone=True, global_env=None, clear_env=True)

    def make_pr():
        return h_pr.PullRequest(
            org=sentinel_str("pr.org", STRING_SENTINELS["@@ORG@@"]),
            repo=sentinel_str("pr.repo", STRING_SENTINELS["@@REPO@@"]),
            number=SentinelInt(NUMBER_SENTINEL),
            state=UNPLACED_SENTINELS["pr.state"],
            title=UNPLACED_SENTINELS["pr.title"],
            body=UNPLACED_SENTINELS["pr.body"],
            base=h_pr.Base(label=sentinel_str("pr.base.label", STRING_SENTINELS["@@BASE_LABEL@@"]),
                           ref=sentinel_str("pr.base.ref", STRING_SENTINELS["@@BASE_REF@@"]),
                           sha=sentinel_str("pr.base.sha", STRING_SENTINELS["@@BASE_SHA@@"])),
            resolved_issues=[],
            fix_patch=sentinel_str("pr.fix_patch", STRING_SENTINELS["@@FIX_PATCH@@"]),
            test_patch=sentinel_str("pr.test_patch", STRING_SENTINELS["@@TEST_PATCH@@"]),
            tag=UNPLACED_SENTINELS["pr.tag"],
            number_interval=UNPLACED_SENTINELS["pr.number_interval"],
            lang=UNPLACED_SENTINELS["pr.lang"],
        )

    subst = [(re.compile(re.escape(s), re.IGNORECASE), p) for p, s in STRING_SENTINELS.items()]
    subst.append((re.compile(str(NUMBER_SENTINEL)), "@@NUMBER@@"))
    lowered = {s.lower(): p for p, s in STRING_SENTINELS.items()}

    def place(text, where, lower_notes):
        """The harness's text with sentinels replaced by placeholders (checked)."""
        text = str(text)
        if "@@" in text:
            raise ValueError(f"harness text ({where}) contains '@@' before substitution")
        for field, s in UNPLACED_SENTINELS.items():
            if s.lower() in text.lower():
                raise ValueError(f"{where} uses {field}, which has no placeholder")
        checked = text
        if where == "dockerfile":  # FROM lines name images, which the harness lowercases
            checked = "\n".join(x for x in text.splitlines() if not x.startswith("FROM "))
        for low, p in lowered.items():
            if low in checked and where != "image name":
                lower_notes.add(f"{p} lowercased in {where}")
        for rx, p in subst:
            text = rx.sub(p, text)
        if SENTINEL_CORE.search(text):
            raise ValueError(f"{where}: a sentinel survives transformed: "
                             f"{SENTINEL_CORE.search(text).group(0)!r}")
        return text

    texts = {}

    def text_id(text):
        tid = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        if texts.setdefault(tid, text) != text:
            raise SystemExit(f"text id collision: {tid}")
        return tid

    instances = {}
    notes = {}
    family_members = collections.defaultdict(list)
    family_source = {}
    nonstandard_names = []
    for key in sorted(registry):
        cls = registry[key]
        NOTES.clear()
        lower_notes = set()
        try:
            module_file = inspect.getsourcefile(cls)
            module = os.path.relpath(module_file, root).replace(os.sep, "/")
            language = module.split("/")[3]
            inst = cls(make_pr(), config)
            chain = []
            img = inst.dependency()
            while isinstance(img, h_image.Image):
                chain.append(img)
                if len(chain) > 50:
                    raise ValueError("image chain longer than 50")
                img = img.dependency()
            if not chain:
                raise ValueError(f"dependency() is not an Image: {img!r}")
            if not isinstance(img, str):
                raise ValueError(f"image chain ends in {img!r}, not an image name")
            chain.reverse()
            images = []
            for im in chain:
                files = []
                for f in im.files():
                    path = posixpath.normpath(posixpath.join(str(f.dir), str(f.name)))
                    files.append([place(path, "file path", lower_notes),
                                  text_id(place(f.content, f"file {f.name}", lower_notes))])
                images.append({
                    "name": place(im.image_name(), "image name", lower_notes),
                    "tag": place(im.image_tag(), "image tag", lower_notes),
                    "workdir": place(im.workdir(), "workdir", lower_notes),
                    "dockerfile": text_id(place(im.dockerfile(), "dockerfile", lower_notes)),
                    "files": files,
                })
            fix_run = place(inst.fix_patch_run(), "fix_patch_run", lower_notes)
            family, source = family_of(cls.parse_log)
        except Exception as e:  # noqa: BLE001
            unrendered[key] = f"{type(e).__name__}: {e}".strip()
            continue
        last = images[-1]
        if (last["name"], last["tag"]) != ("mswebench/@@ORG@@_m_@@REPO@@", "pr-@@NUMBER@@"):
            nonstandard_names.append((key, f"{last['name']}:{last['tag']}"))
        instances[key] = {
            "language": language,
            "module": module,
            "class": cls.__name__,
            "from": place(img, "from", lower_notes),
            "images": images,
            "fix_run": fix_run,
            "parser": FAMILY_PARSERS.get(family),
            "parser_family": family,
        }
        family_members[family].append((module, key))
        family_source.setdefault(family, {})[module] = source
        n = sorted(NOTES | {x for x in lower_notes if "dockerfile" in x or "file " in x})
        if n:
            notes[key] = n

    parsers = {}
    for family, members in family_members.items():
        example = min(members)[0]
        parsers[family] = {
            "parser": FAMILY_PARSERS.get(family),
            "instances": len(members),
            "example": example,
            "source": text_id(family_source[family][example]),
        }

    out = {
        "source": {"repository": REPOSITORY, "commit": commit, "generated_by": GENERATED_BY},
        "placeholders": PLACEHOLDERS,
        "texts": texts,
        "instances": instances,
        "parsers": parsers,
        "unrendered": unrendered,
    }
    data = json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".tmp", "w", encoding="utf-8") as f:
        f.write(data)
    os.replace(args.out + ".tmp", args.out)

    # Summary.
    err = sys.stderr
    print(f"{args.out}: {len(data.encode()) / 1e6:.2f} MB, {len(instances)} instances, "
          f"{len(texts)} texts, {len(parsers)} parser families, {len(unrendered)} unrendered; "
          f"{REPOSITORY}@{commit}", file=err)
    by_lang = collections.Counter(v["language"] for v in instances.values())
    print("instances per language: " + ", ".join(f"{k} {v}" for k, v in sorted(by_lang.items())),
          file=err)
    if not_in_chain:
        print(f"{len(not_in_chain)} registered only by modules the harness's __init__ chain does "
              f"not import: {', '.join(sorted(not_in_chain))}", file=err)
    print("top parser families (instances, example module, our parser):", file=err)
    top = sorted(parsers.items(), key=lambda kv: (-kv[1]["instances"], kv[0]))[:25]
    for family, p in top:
        print(f"  {family} {p['instances']:5d}  {p['example']}  {p['parser'] or '-'}", file=err)
    if nonstandard_names:
        shapes = collections.Counter(n for _, n in nonstandard_names)
        print(f"{len(nonstandard_names)} instance images not named "
              f"mswebench/@@ORG@@_m_@@REPO@@:pr-@@NUMBER@@ (kept as rendered):", file=err)
        for n, c in sorted(shapes.items(), key=lambda kv: (-kv[1], kv[0])):
            example = min(k for k, x in nonstandard_names if x == n)
            print(f"  {c:5d}  {n}  (e.g. {example})", file=err)
    if notes:
        kinds = collections.Counter()
        for k, n in notes.items():
            for x in n:
                kinds[re.sub(r" \S+$", "", x) if x.startswith("compares pr.number") else x] += 1
        print(f"{len(notes)} instances render a value a sentinel cannot stand for "
              f"(MSB_NOTES=1 lists them):", file=err)
        for x, c in kinds.most_common(20):
            print(f"  {c:5d}  {x}", file=err)
    if unrendered:
        print(f"{len(unrendered)} unrendered:", file=err)
        for k, v in sorted(unrendered.items()):
            print(f"  {k}: {v}", file=err)
    if os.environ.get("MSB_NOTES"):
        for k, n in sorted(notes.items()):
            print(f"note {k} ({instances[k]['module']}): {'; '.join(n)}", file=err)


if __name__ == "__main__":
    main()

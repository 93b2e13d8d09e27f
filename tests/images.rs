//! `import`, `images` and `run IMAGE`, as root and as the unprivileged user, with archives
//! made by skopeo (a peer) from our own store, and one crafted by hand.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn store_cmd(m: Mode, store: &Path) -> Command {
    let mut c = m.command();
    c.env("POLYSANDBOX_ROOT", store);
    c
}

fn ok(o: &std::process::Output, what: &str) {
    assert!(o.status.success(), "{what}: {} {}", stdout(o), stderr(o));
}

/// A rootfs tarball of the mode's busybox rootfs, readable by that mode's user.
fn rootfs_tarball(m: Mode) -> PathBuf {
    let t = m.writable_file("rootfs.tar.gz");
    let s = Command::new("tar").arg("-C").arg(m.rootfs()).args(["-czf"]).arg(&t).arg(".").status().unwrap();
    assert!(s.success());
    t
}

#[test]
fn import_a_rootfs_tarball_then_list_and_run_it() {
    for m in modes() {
        let store = m.owned_dir("store");
        let o = store_cmd(m, &store)
            .args(["import"])
            .arg(rootfs_tarball(m))
            .args(["--tag", "busybox:test"])
            .output()
            .unwrap();
        ok(&o, "import");
        assert!(stdout(&o).starts_with("docker.io/library/busybox:test sha256:"), "{m:?}: {}", stdout(&o));
        let o = store_cmd(m, &store).args(["images", "--format", "json"]).output().unwrap();
        let list: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(list[0]["Names"][0], "docker.io/library/busybox:test");
        let o = store_cmd(m, &store)
            .args(["run", "busybox:test", "--", "sh", "-c", "echo from-image; id -u"])
            .output()
            .unwrap();
        assert_eq!(stdout(&o), "from-image\n0\n", "{m:?}: {}", stderr(&o));
        // The image's own command (a rootfs tarball gets /bin/sh), reading stdin.
        let o = store_cmd(m, &store).args(["run", "busybox:test"]).output().unwrap();
        ok(&o, "run with the image's command");
        let o = store_cmd(m, &store).args(["run", "--pull", "never", "busybox:missing", "true"]).output().unwrap();
        assert_eq!(code(&o), 125);
        assert!(stderr(&o).contains("is not in the store"), "{}", stderr(&o));
        // By default a missing image is pulled; with no registry reachable that fails, in one
        // line that names the image.
        let o = store_cmd(m, &store).args(["run", "busybox:missing", "true"]).output().unwrap();
        assert_eq!(code(&o), 125);
        assert!(
            stderr(&o).contains("docker.io/library/busybox:missing") && stderr(&o).lines().count() == 1,
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn saved_images_are_what_skopeo_reads_and_archives_round_trip() {
    for m in modes() {
        let store = m.owned_dir("store");
        ok(
            &store_cmd(m, &store)
                .args(["import"])
                .arg(rootfs_tarball(m))
                .args(["--tag", "localhost/bb:1"])
                .output()
                .unwrap(),
            "import",
        );
        let out = m.owned_dir("skopeo");
        // skopeo reads what `save` writes (the store keeps layers as files and records).
        let saved = out.join("saved.oci.tar");
        ok(
            &store_cmd(m, &store)
                .args(["save", "--format", "oci-archive", "-o"])
                .arg(&saved)
                .arg("localhost/bb:1")
                .output()
                .unwrap(),
            "save",
        );
        let src = format!("oci-archive:{}:localhost/bb:1", saved.display());
        for (dst, tag) in [
            (format!("oci:{}/layout:v1", out.display()), "localhost/from-layout:1"),
            (format!("oci-archive:{}/img.oci.tar:v1", out.display()), "localhost/from-oci-archive:1"),
            (format!("docker-archive:{}/img.docker.tar:localhost/from-docker:1", out.display()), ""),
        ] {
            let s = Command::new("skopeo").args(["copy", "-q", &src, &dst]).output().unwrap();
            assert!(s.status.success(), "skopeo {dst}: {}", String::from_utf8_lossy(&s.stderr));
            if m == Mode::User && is_root() {
                Command::new("chown")
                    .args(["-R", &format!("{}:{}", fixtures().uid, fixtures().gid)])
                    .arg(&out)
                    .status()
                    .unwrap();
            }
            let path = dst.split(':').nth(1).unwrap().to_string();
            let mut c = store_cmd(m, &store);
            c.arg("import").arg(&path);
            if !tag.is_empty() {
                c.args(["--tag", tag]);
            }
            let o = c.output().unwrap();
            ok(&o, &format!("{m:?} import {dst}"));
            let name = if tag.is_empty() { "localhost/from-docker:1" } else { tag };
            let o = store_cmd(m, &store).args(["run", name, "--", "cat", "/etc/passwd"]).output().unwrap();
            assert!(stdout(&o).starts_with("root:"), "{m:?} {dst}: {}", stderr(&o));
        }
    }
}

#[test]
fn image_config_sets_entrypoint_cmd_env_workdir_and_user() {
    for m in modes() {
        // A docker-archive written by hand: one layer adding a user, a config with all fields.
        let dir = m.owned_dir("handmade");
        let layer_root = dir.join("layer");
        std::fs::create_dir_all(layer_root.join("etc")).unwrap();
        std::fs::copy(m.rootfs().join("etc/passwd"), layer_root.join("etc/passwd")).unwrap();
        let mut pw = std::fs::read_to_string(layer_root.join("etc/passwd")).unwrap();
        pw.push_str("app:x:1000:1000::/home/app:/bin/sh\n");
        std::fs::write(layer_root.join("etc/passwd"), pw).unwrap();
        let base = dir.join("base.tar");
        assert!(Command::new("tar")
            .arg("-C")
            .arg(m.rootfs())
            .arg("-cf")
            .arg(&base)
            .arg(".")
            .status()
            .unwrap()
            .success());
        let top = dir.join("top.tar");
        assert!(Command::new("tar")
            .arg("-C")
            .arg(&layer_root)
            .arg("-cf")
            .arg(&top)
            .arg(".")
            .status()
            .unwrap()
            .success());
        let sha = |p: &Path| {
            let o = Command::new("sha256sum").arg(p).output().unwrap();
            format!("sha256:{}", String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap())
        };
        let config = serde_json::json!({
            "architecture": "amd64", "os": "linux",
            "config": {"Env": ["GREETING=hello", "PATH=/bin", "PSB_CALLERS_SECRET", "=no-name"], "Entrypoint": ["/bin/sh", "-c"], "Cmd": ["echo $GREETING $(id -u) $(pwd)"], "WorkingDir": "/srv/app", "User": "app"},
            "rootfs": {"type": "layers", "diff_ids": [sha(&base), sha(&top)]}
        });
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
        std::fs::write(
            dir.join("manifest.json"),
            r#"[{"Config":"config.json","RepoTags":["localhost/handmade:1"],"Layers":["base.tar","top.tar"]}]"#,
        )
        .unwrap();
        let archive = m.writable_file("handmade.tar");
        assert!(Command::new("tar")
            .arg("-C")
            .arg(&dir)
            .arg("-cf")
            .arg(&archive)
            .args(["manifest.json", "config.json", "base.tar", "top.tar"])
            .status()
            .unwrap()
            .success());
        let store = m.owned_dir("store");
        ok(&store_cmd(m, &store).arg("import").arg(&archive).output().unwrap(), "import");
        let o = store_cmd(m, &store).args(["run", "localhost/handmade:1"]).output().unwrap();
        match m {
            Mode::Root => assert_eq!(stdout(&o), "hello 1000 /srv/app\n", "{m:?}: {}", stderr(&o)),
            // Rootless maps only uid 0: the image's user cannot exist, and that is said.
            Mode::User => {
                assert_eq!(code(&o), 125, "{}", stdout(&o));
                assert!(stderr(&o).contains("uid 1000 gid 1000 cannot exist in a rootless sandbox"), "{}", stderr(&o));
            }
        }
        // Each field overridden.
        let o = store_cmd(m, &store)
            .args([
                "run",
                "-e",
                "GREETING=bye",
                "-w",
                "/tmp",
                "--user",
                "0",
                "localhost/handmade:1",
                "echo $GREETING $(id -u) $(pwd)",
            ])
            .output()
            .unwrap();
        assert_eq!(stdout(&o), "bye 0 /tmp\n", "{m:?}: {}", stderr(&o));
        // An image's Env entry without a value is the image's own business: it never takes the
        // caller's variable of that name (an image naming HF_TOKEN would get the caller's); only
        // `-e NAME`, typed by the caller, passes one through.
        let env = |extra: &[&str]| {
            let o = store_cmd(m, &store)
                .env("PSB_CALLERS_SECRET", "the-callers-value")
                .args(["run", "--user", "0"])
                .args(extra)
                .args(["localhost/handmade:1", "env"])
                .output()
                .unwrap();
            assert_eq!(code(&o), 0, "{m:?}: {}", stderr(&o));
            stdout(&o)
        };
        assert!(!env(&[]).contains("the-callers-value"), "{m:?}: the image took the caller's variable");
        assert!(env(&["-e", "PSB_CALLERS_SECRET"]).contains("PSB_CALLERS_SECRET=the-callers-value"), "{m:?}");
    }
}

#[test]
fn a_refused_archive_leaves_the_store_as_it_was() {
    for m in modes() {
        let store = m.owned_dir("store");
        ok(
            &store_cmd(m, &store).args(["import"]).arg(rootfs_tarball(m)).args(["--tag", "ok:1"]).output().unwrap(),
            "import",
        );
        let before = std::fs::read_to_string(store.join("oci/index.json")).unwrap();
        let rootfs_before = std::fs::read_dir(store.join("rootfs")).unwrap().count();
        // A tarball whose second entry climbs out of the root.
        let evil = m.writable_file("evil.tar");
        let dir = m.owned_dir("evil");
        std::fs::write(dir.join("a"), "a").unwrap();
        let s = Command::new("tar")
            .arg("-C")
            .arg(&dir)
            .args(["-cf"])
            .arg(&evil)
            .args(["a", "--transform", "s,^a$,../../escape,", "--absolute-names", "a"])
            .status()
            .unwrap();
        assert!(s.success());
        let o = store_cmd(m, &store).args(["import"]).arg(&evil).args(["--tag", "evil:1"]).output().unwrap();
        assert_eq!(code(&o), 125, "{m:?}: {}", stdout(&o));
        assert!(stderr(&o).contains("escapes the root"), "{m:?}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(store.join("oci/index.json")).unwrap(), before, "{m:?}: index changed");
        assert_eq!(std::fs::read_dir(store.join("rootfs")).unwrap().count(), rootfs_before, "{m:?}: rootfs left");
        assert_eq!(std::fs::read_dir(store.join("tmp")).unwrap().count(), 0, "{m:?}: temporary files left");
        assert!(!store.parent().unwrap().join("escape").exists());
    }
}

#[test]
fn eight_concurrent_imports_of_one_image_make_one_copy() {
    for m in modes() {
        let store = m.owned_dir("store");
        let tarball = rootfs_tarball(m);
        let children: Vec<_> = (0..8)
            .map(|_| {
                store_cmd(m, &store)
                    .arg("import")
                    .arg(&tarball)
                    .args(["--tag", "same:1"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let digests: Vec<String> = children
            .into_iter()
            .map(|c| {
                let o = c.wait_with_output().unwrap();
                ok(&o, "concurrent import");
                stdout(&o).split_whitespace().nth(1).unwrap().to_string()
            })
            .collect();
        assert!(digests.iter().all(|d| d == &digests[0]), "{m:?}: {digests:?}");
        let index: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(store.join("oci/index.json")).unwrap()).unwrap();
        assert_eq!(index["manifests"].as_array().unwrap().len(), 1, "{m:?}: {index}");
        let rootfs: Vec<_> =
            std::fs::read_dir(store.join("rootfs")).unwrap().flatten().filter(|e| e.path().is_dir()).collect();
        assert_eq!(rootfs.len(), 1, "{m:?}: one image directory");
        let chains: Vec<_> =
            std::fs::read_dir(store.join("chains")).unwrap().flatten().filter(|e| e.path().is_dir()).collect();
        assert_eq!(chains.len(), 1, "{m:?}: one unpacked copy");
        assert_eq!(std::fs::read_dir(store.join("tmp")).unwrap().count(), 0, "{m:?}: temporary files left");
        let o = store_cmd(m, &store).args(["run", "same:1", "--", "true"]).output().unwrap();
        ok(&o, "run");
    }
}

#[test]
fn inspect_rmi_and_prune() {
    for m in modes() {
        let store = m.owned_dir("store");
        let tarball = rootfs_tarball(m);
        ok(&store_cmd(m, &store).arg("import").arg(&tarball).args(["--tag", "a:1"]).output().unwrap(), "import a");
        ok(&store_cmd(m, &store).arg("import").arg(&tarball).args(["--tag", "b:1"]).output().unwrap(), "import b");
        let o = store_cmd(m, &store).args(["inspect", "a:1"]).output().unwrap();
        ok(&o, "inspect");
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let v = &v[0];
        assert_eq!(v["RepoTags"][0], "docker.io/library/a:1");
        assert_eq!(v["Manifest"]["layers"].as_array().unwrap().len(), 1);
        assert!(v["UnpackChanges"]["entries"].as_u64().unwrap() > 100, "{v}");
        let blobs = || std::fs::read_dir(store.join("oci/blobs/sha256")).unwrap().count();
        let roots = || std::fs::read_dir(store.join("rootfs")).unwrap().flatten().filter(|e| e.path().is_dir()).count();
        let chains =
            || std::fs::read_dir(store.join("chains")).unwrap().flatten().filter(|e| e.path().is_dir()).count();
        assert_eq!(
            (blobs(), roots(), chains()),
            (2, 1, 1),
            "{m:?}: config and manifest (the layer is its files and record); one tree shared by both names"
        );
        // Removing one name keeps the rootfs the other name uses.
        ok(&store_cmd(m, &store).args(["rmi", "a:1"]).output().unwrap(), "rmi a");
        assert_eq!(roots(), 1);
        let o = store_cmd(m, &store).args(["run", "b:1", "--", "true"]).output().unwrap();
        ok(&o, "run b after rmi a");
        // The last name takes the rootfs; prune then drops the unreferenced blobs.
        ok(&store_cmd(m, &store).args(["rmi", "b:1"]).output().unwrap(), "rmi b");
        assert_eq!(roots(), 0);
        let o = store_cmd(m, &store).arg("prune").output().unwrap();
        ok(&o, "prune");
        assert!(stdout(&o).starts_with("removed 2 blobs"), "{m:?}: {}", stdout(&o));
        assert_eq!((blobs(), chains()), (0, 0), "{m:?}");
        assert_eq!(std::fs::read_dir(store.join("layers")).unwrap().count(), 0, "{m:?}: a layer record left");
        let o = store_cmd(m, &store).args(["rmi", "b:1"]).output().unwrap();
        assert_eq!(code(&o), 125);
        assert!(stderr(&o).contains("is not in the store"));
    }
}

/// A scratch copy of the python recipe (build.sh, packages, lock), with the python image
/// tarball .ci/setup built as its cache.
fn python_recipe(name: &str) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tarball = std::fs::read_dir(repo.join(".cache/images"))
        .ok()
        .and_then(|d| {
            d.flatten().map(|e| e.path()).find(|p| {
                p.file_name().unwrap().to_string_lossy().starts_with("python-")
                    && p.extension().is_some_and(|x| x == "tar")
            })
        })
        .unwrap_or_else(|| panic!("no .cache/images/python-*.tar: run bash .ci/setup"));
    let scratch = Mode::Root.owned_dir(name);
    std::fs::create_dir_all(scratch.join("rootfs")).unwrap();
    std::fs::create_dir_all(scratch.join(".cache/images")).unwrap();
    for f in ["build.sh", "python.packages", "python.lock"] {
        std::fs::copy(repo.join("rootfs").join(f), scratch.join("rootfs").join(f)).unwrap();
    }
    std::os::unix::fs::symlink(&tarball, scratch.join(".cache/images").join(tarball.file_name().unwrap())).unwrap();
    scratch
}

/// `rootfs/build.sh ARGS...` in a scratch recipe tree, importing into a store of its own.
fn build_sh(scratch: &Path, args: &[&str]) -> std::process::Output {
    Command::new("bash")
        .arg(scratch.join("rootfs/build.sh"))
        .args(args)
        .env("POLYSANDBOX_BIN", &fixtures().bin)
        .env("POLYSANDBOX_ROOT", scratch.join("store"))
        .output()
        .unwrap()
}

#[test]
fn an_image_whose_packages_differ_from_its_lock_is_refused() {
    // rootfs/build.sh checks every image, built or cached, against rootfs/LANG.lock. Here the
    // python recipe: its own lock passes and imports; a lock with one version changed is
    // refused, naming it.
    let scratch = python_recipe("lock");
    let o = build_sh(&scratch, &["python"]);
    ok(&o, "build.sh with the image's own lock");
    assert!(stdout(&o).contains("localhost/polysandbox/python:bookworm"), "{}", stdout(&o));
    // One package "moved": the lock now asks for a version the image does not hold.
    let lock = std::fs::read_to_string(scratch.join("rootfs/python.lock")).unwrap();
    let first = lock.lines().find(|l| l.starts_with("python3-pytest=")).expect("pytest in the lock").to_string();
    std::fs::write(scratch.join("rootfs/python.lock"), lock.replace(&first, "python3-pytest=0.0-locked")).unwrap();
    let o = build_sh(&scratch, &["python"]);
    assert_eq!(code(&o), 1, "a lock the image does not match was accepted: {}", stderr(&o));
    assert!(
        stderr(&o).contains("differ from rootfs/python.lock") && stderr(&o).contains("python3-pytest=0.0-locked"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_toolchain_image_rebuilds_byte_identical() {
    // rootfs/build.sh --verify rebuilds an image from scratch (same recipe, same lock, same
    // SOURCE_DATE_EPOCH) and compares it byte for byte with the cached one. The python image
    // here (the quickest to build); the README lists the other five, verified the same way.
    let scratch = python_recipe("verify");
    let o = build_sh(&scratch, &["--verify", "python"]);
    ok(&o, "build.sh --verify python");
    assert!(stdout(&o).contains("build: python: rebuilt byte-identical"), "{}", stdout(&o));
    let left: Vec<_> = std::fs::read_dir(scratch.join(".cache/images"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().contains("verify"))
        .collect();
    assert!(left.is_empty(), "the rebuild was left behind: {left:?}");
}

/// The SWE-bench and Multi-SWE-bench replicas in root's store (`bash .ci/setup` builds them)
/// carry no commit after their base: each image's repository holds the base, its ancestors,
/// and commits made in the image on top of it (SWE-bench's own), and none of the other commits
/// its mirror holds, not even unreachable (the harness's own images keep later commits, and so
/// the fix: its issue #70).
#[test]
fn replicas_hold_no_commit_after_their_base() {
    use std::collections::BTreeSet;
    let test = "replicas_hold_no_commit_after_their_base";
    if !is_root() {
        return skip(test, "the replica images are in root's store (bash .ci/setup builds them as root)");
    }
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let listed =
        stdout(&Mode::Root.command().args(["images", "--format", "{{.Repository}}:{{.Tag}}"]).output().unwrap());
    let git = |mirror: &Path, args: &[&str]| -> BTreeSet<String> {
        let o = Command::new("git")
            .arg("-c")
            .arg("safe.directory=*")
            .arg("--git-dir")
            .arg(mirror)
            .args(args)
            .output()
            .unwrap();
        ok(&o, &format!("git {args:?} in {}", mirror.display()));
        stdout(&o).lines().map(str::to_string).collect()
    };
    let mut checked = 0;
    for (records, mirrors) in [
        ("../shared/swebench/instances.jsonl", ".cache/swebench-repos"),
        ("../shared/multi-swe-bench/instances.jsonl", ".cache/msb-repos"),
    ] {
        let Ok(text) = std::fs::read_to_string(top.join(records)) else {
            skip(test, &format!("no {records}"));
            continue;
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            // (image, repository in it, base commit, mirror)
            let (image, dir, base, mirror) = match r["base_commit"].as_str() {
                Some(base) => {
                    let repo = r["repo"].as_str().unwrap();
                    (
                        r["image"].as_str().unwrap().to_string(),
                        "/testbed".to_string(),
                        base,
                        format!("{}.git", repo.replace('/', "__")),
                    )
                }
                None => {
                    let (org, repo) = (r["org"].as_str().unwrap(), r["repo"].as_str().unwrap());
                    (
                        format!("mswebench/{org}_m_{repo}:pr-{}", r["number"]).to_lowercase(),
                        format!("/home/{repo}"),
                        r["base"]["sha"].as_str().unwrap(),
                        format!("{org}__{repo}.git"),
                    )
                }
            };
            let mirror = top.join(mirrors).join(mirror);
            if !listed.lines().any(|l| l.split_whitespace().next().is_some_and(|n| n.ends_with(&image)))
                || !mirror.exists()
            {
                skip(test, &format!("{image} or its mirror {} is missing: run bash .ci/setup", mirror.display()));
                continue;
            }
            let ancestry = git(&mirror, &["rev-list", base]);
            let others: BTreeSet<String> =
                git(&mirror, &["rev-list", "--all"]).difference(&ancestry).cloned().collect();
            // Every commit object in the image, reachable or not; then each reachable commit
            // that is not an ancestor of the base, and whether the base is one of its ancestors.
            let script = format!(
                "cd {dir} && git cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' | sed -n 's/^commit //p' \
                 && echo --- && git rev-list --all --reflog HEAD ^{base} | while read c; do \
                 if git merge-base --is-ancestor {base} $c; then echo \"after $c\"; else echo \"beside $c\"; fi; done"
            );
            let o =
                Mode::Root.command().args(["run", "--timeout", "120s", &image, "sh", "-c", &script]).output().unwrap();
            ok(&o, &format!("git in {image}"));
            let out = stdout(&o);
            let (objects, reachable) = out.split_once("---\n").unwrap_or_else(|| panic!("{image}: {out}"));
            let objects: BTreeSet<String> = objects.lines().map(str::to_string).collect();
            assert!(objects.contains(base), "{image}: the base commit {base} is not in {dir}");
            let leaked: Vec<&String> = objects.intersection(&others).collect();
            assert!(
                leaked.is_empty(),
                "{image}: {dir} holds commits of the mirror that are not the base's ancestors: {leaked:?}"
            );
            for l in reachable.lines() {
                let (how, c) = l.split_once(' ').unwrap();
                assert!(
                    how == "after" && !others.contains(c),
                    "{image}: {dir} reaches {c}, which is not made on top of the base"
                );
            }
            checked += 1;
        }
    }
    eprintln!("{checked} replicas checked");
}

/// A listing read by a reader that stops early (`images | head -1`, `grep -q`) ends quietly
/// with 141, as SIGPIPE ends podman; it used to panic with a backtrace on stderr.
#[test]
fn a_reader_that_goes_away_ends_the_listing_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    for m in modes() {
        let store = m.owned_dir("pipe");
        let o = store_cmd(m, &store).args(["import"]).arg(rootfs_tarball(m)).args(["--tag", "a:1"]).output().unwrap();
        ok(&o, "import");
        // A pipe whose reader is gone before the listing starts: a reader that went away while
        // the listing ran could also find it already written into the pipe's buffer.
        let mut fds = [0i32; 2];
        // SAFETY: a two-int array for pipe(2) to fill.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both were just made and are ours; the read end is closed at once.
        let (rd, wr) = unsafe {
            use std::os::fd::FromRawFd;
            (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1]))
        };
        drop(rd);
        let mut child =
            store_cmd(m, &store).args(["images"]).stdout(Stdio::from(wr)).stderr(Stdio::piped()).spawn().unwrap();
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(141), "{m:?}: {err}");
        assert!(err.is_empty(), "{m:?}: {err}");
    }
}

/// `images` as podman lists them: REPOSITORY, TAG, IMAGE ID (the config digest), CREATED, SIZE;
/// `-q`, `--noheading`, `--format json|TEMPLATE`; `tag` adds names; `--root` before the
/// subcommand.
#[test]
fn images_are_listed_as_podman_lists_them() {
    for m in modes() {
        let store = m.owned_dir("store");
        let o = store_cmd(m, &store)
            .arg("import")
            .arg(rootfs_tarball(m))
            .args(["--tag", "localhost/bb:1"])
            .output()
            .unwrap();
        ok(&o, "import");
        let o = m
            .command()
            .arg("--root")
            .arg(&store)
            .args(["tag", "localhost/bb:1", "localhost/bb:2", "quay.io/x/bb"])
            .output()
            .unwrap();
        ok(&o, "tag");
        let o = m
            .command()
            .arg("--root")
            .arg(&store)
            .args(["inspect", "--format", "{{.Id}}", "localhost/bb:1"])
            .output()
            .unwrap();
        ok(&o, "inspect");
        let id = stdout(&o).trim().to_string();
        assert_eq!(id.len(), 64, "{m:?}: {id}");
        let o = m.command().arg("--root").arg(&store).arg("images").output().unwrap();
        ok(&o, "images");
        let text = stdout(&o);
        let lines: Vec<&str> = text.lines().collect();
        let header: Vec<&str> = lines[0].split("  ").filter(|c| !c.is_empty()).map(str::trim).collect();
        assert_eq!(header, ["REPOSITORY", "TAG", "IMAGE ID", "CREATED", "SIZE"], "{m:?}: {text}");
        assert_eq!(lines.len(), 4, "{m:?}: a row per name: {text}");
        let row: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(&row[..3], ["localhost/bb", "1", &id[..12]], "{m:?}: {text}");
        assert!(text.contains("quay.io/x/bb") && text.contains("latest"), "{m:?}: {text}");
        let o = store_cmd(m, &store).args(["images", "-q"]).output().unwrap();
        assert_eq!(stdout(&o), format!("{}\n", &id[..12]), "{m:?}: one image, one ID");
        let o = store_cmd(m, &store)
            .args(["images", "--noheading", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}"])
            .output()
            .unwrap();
        assert_eq!(
            stdout(&o),
            format!("localhost/bb:1 {0}\nlocalhost/bb:2 {0}\nquay.io/x/bb:latest {0}\n", &id[..12]),
            "{m:?}"
        );
        let o = store_cmd(m, &store).args(["images", "--format", "json"]).output().unwrap();
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 1, "{m:?}: {v}");
        assert_eq!(v[0]["Id"], id.as_str());
        assert_eq!(v[0]["Names"].as_array().unwrap().len(), 3, "{m:?}: {v}");
        let o = store_cmd(m, &store).args(["images", "--format", "{{range .Names}}"]).output().unwrap();
        assert_ne!(code(&o), 0);
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    }
}

/// Short names find `localhost/` images (and a unique stored name ending in the short one);
/// image IDs, in full or a prefix, name images to `run`, `inspect` (a JSON array), `rmi`.
#[test]
fn short_names_and_ids_find_local_images() {
    for m in modes() {
        let store = m.owned_dir("store");
        let o = store_cmd(m, &store)
            .arg("import")
            .arg(rootfs_tarball(m))
            .args(["--tag", "localhost/polysandbox/bb:1"])
            .output()
            .unwrap();
        ok(&o, "import");
        for name in ["polysandbox/bb:1", "bb:1", "localhost/polysandbox/bb:1"] {
            let o =
                store_cmd(m, &store).args(["run", "--rm", "--pull", "never", name, "echo", "found"]).output().unwrap();
            assert_eq!(stdout(&o), "found\n", "{m:?} {name}: {}", stderr(&o));
        }
        let o = store_cmd(m, &store).args(["inspect", "bb:1", "polysandbox/bb:1"]).output().unwrap();
        ok(&o, "inspect");
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2, "{m:?}: {v}");
        let id = v[0]["Id"].as_str().unwrap().to_string();
        assert_eq!(v[0]["RepoTags"][0], "localhost/polysandbox/bb:1");
        assert_eq!(v[0]["Architecture"], if cfg!(target_arch = "aarch64") { "arm64" } else { "amd64" });
        for by_id in [&id[..12], &id[..], &format!("sha256:{id}")] {
            let o = store_cmd(m, &store).args(["run", "--pull", "never", by_id, "echo", "by-id"]).output().unwrap();
            assert_eq!(stdout(&o), "by-id\n", "{m:?} {by_id}: {}", stderr(&o));
            let o = store_cmd(m, &store)
                .args(["inspect", "--format", "{{.Id}} {{json .RepoTags}}", by_id])
                .output()
                .unwrap();
            assert_eq!(stdout(&o), format!("{id} [\"localhost/polysandbox/bb:1\"]\n"), "{m:?}");
        }
        let o = store_cmd(m, &store).args(["inspect", "nope:1"]).output().unwrap();
        assert_eq!(code(&o), 125, "{m:?}");
        // An ID with two names is removed with -f; by name, one name at a time.
        ok(&store_cmd(m, &store).args(["tag", &id[..12], "localhost/other:1"]).output().unwrap(), "tag");
        let o = store_cmd(m, &store).args(["rmi", &id[..12]]).output().unwrap();
        assert_eq!(code(&o), 125, "{m:?}");
        assert!(stderr(&o).contains("has 2 names"), "{m:?}: {}", stderr(&o));
        ok(&store_cmd(m, &store).args(["rmi", "-f", &id[..12]]).output().unwrap(), "rmi -f");
        let o = store_cmd(m, &store).args(["images", "-q"]).output().unwrap();
        assert_eq!(stdout(&o), "", "{m:?}");
    }
}

/// `save` writes a docker-archive or an oci-archive that `import` reads back, and the image ID
/// (the config digest) is the same whatever the archive.
#[test]
fn save_round_trips_and_the_image_id_is_the_same_whatever_the_archive() {
    for m in modes() {
        let store = m.owned_dir("store");
        let o = store_cmd(m, &store)
            .arg("import")
            .arg(rootfs_tarball(m))
            .args(["--tag", "localhost/rt:1"])
            .output()
            .unwrap();
        ok(&o, "import");
        let id = |store: &Path, name: &str| {
            let o = store_cmd(m, store).args(["inspect", "--format", "{{.Id}}", name]).output().unwrap();
            ok(&o, "inspect");
            stdout(&o).trim().to_string()
        };
        let want = id(&store, "localhost/rt:1");
        let dir = m.owned_dir("archives");
        for format in ["docker-archive", "oci-archive"] {
            let file = dir.join(format!("rt.{format}.tar"));
            let o =
                store_cmd(m, &store).args(["save", "--format", format, "-o"]).arg(&file).arg("rt:1").output().unwrap();
            ok(&o, &format!("save {format}"));
            let fresh = m.owned_dir("fresh");
            let o = store_cmd(m, &fresh).arg("import").arg(&file).output().unwrap();
            ok(&o, &format!("import {format}"));
            assert!(stdout(&o).starts_with("localhost/rt:1 "), "{m:?} {format}: {}", stdout(&o));
            assert_eq!(id(&fresh, "localhost/rt:1"), want, "{m:?} {format}: the ID changed");
            let o = store_cmd(m, &fresh).args(["run", "rt:1", "--", "echo", "round-trip"]).output().unwrap();
            assert_eq!(stdout(&o), "round-trip\n", "{m:?} {format}: {}", stderr(&o));
        }
        // skopeo's archives of the same image: one ID too.
        let out = m.owned_dir("skopeo");
        let saved = out.join("saved.oci.tar");
        ok(
            &store_cmd(m, &store)
                .args(["save", "--format", "oci-archive", "-o"])
                .arg(&saved)
                .arg("localhost/rt:1")
                .output()
                .unwrap(),
            "save",
        );
        let src = format!("oci-archive:{}:localhost/rt:1", saved.display());
        for dst in [
            format!("docker-archive:{}/d.tar:localhost/rt:1", out.display()),
            format!("oci-archive:{}/o.tar:localhost/rt:1", out.display()),
        ] {
            let s = Command::new("skopeo").args(["copy", "-q", &src, &dst]).output().unwrap();
            assert!(s.status.success(), "skopeo {dst}: {}", String::from_utf8_lossy(&s.stderr));
            if m == Mode::User && is_root() {
                Command::new("chown")
                    .args(["-R", &format!("{}:{}", fixtures().uid, fixtures().gid)])
                    .arg(&out)
                    .status()
                    .unwrap();
            }
            let fresh = m.owned_dir("fresh");
            let path = dst.split(':').nth(1).unwrap();
            let o = store_cmd(m, &fresh).arg("import").arg(path).args(["--tag", "localhost/rt:1"]).output().unwrap();
            ok(&o, &format!("import {dst}"));
            assert_eq!(id(&fresh, "localhost/rt:1"), want, "{m:?} {dst}: the ID changed with the archive's format");
        }
        // Nothing left behind by a refused save.
        let o = store_cmd(m, &store).args(["save", "-o"]).arg(dir.join("nope.tar")).arg("nope:1").output().unwrap();
        assert_eq!(code(&o), 125);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "{m:?}: leftovers");
        // A link at the output path is replaced, never written through.
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.join("linked.tar");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let o = store_cmd(m, &store).args(["save", "-o"]).arg(&link).arg("rt:1").output().unwrap();
        ok(&o, "save over a link");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep", "{m:?}: written through the link");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file(), "{m:?}");
    }
}

/// A store another user can change is refused: its owner could swap what it holds (images,
/// unpacked trees) or put links where it is written. The default rootless store without HOME
/// is /tmp/polysandbox-UID, never a shared /tmp/polysandbox.
#[test]
fn a_store_another_user_can_change_is_refused() {
    if !is_root() {
        eprintln!("SKIP a_store_another_user_can_change_is_refused: needs root to make another user's directory");
        return;
    }
    let base = Mode::Root.owned_dir("foreign-stores");
    std::fs::set_permissions(&base, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // Another user's directory, used by root; root's directory that anyone can write, used by
    // the user; and as the user, a directory of root's that only root writes (allowed).
    let theirs = base.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(fixtures().uid), Some(fixtures().gid)).unwrap();
    let open = base.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    for (m, dir) in [(Mode::Root, &theirs), (Mode::User, &open)] {
        let o = store_cmd(m, dir).arg("images").output().unwrap();
        assert_eq!(code(&o), 125, "{m:?} {}: {}", dir.display(), stderr(&o));
        assert!(stderr(&o).contains("another user could change what it holds"), "{m:?}: {}", stderr(&o));
        assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0, "{m:?}: wrote into it");
    }
    let own = PathBuf::from(format!("/tmp/polysandbox-{}", fixtures().uid));
    let existed = own.exists();
    let o = Mode::User
        .command()
        .env_remove("HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("POLYSANDBOX_ROOT")
        .arg("images")
        .output()
        .unwrap();
    ok(&o, "images without HOME");
    assert!(own.join("oci/index.json").is_file(), "no store at {}", own.display());
    if !existed {
        std::fs::remove_dir_all(&own).unwrap();
    }
}

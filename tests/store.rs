//! The store's layout at scale (issue #26): every file once whatever image it came in, the
//! layers under an image's last one kept once as a chain every image on them shares, the last
//! layer as an overlayfs layer over it (whiteouts kept), records that recreate each layer's
//! tar; `rmi`, `prune`, `save` and concurrent imports keeping it whole. As root and as the
//! unprivileged user, each with a store of its own.

mod common;

use common::*;
use sha2::{Digest, Sha256};
use std::os::unix::fs::MetadataExt;
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

fn sh(cmd: &str) {
    let o = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(o.status.success(), "{cmd}: {}", stderr(&o));
}

fn sha256_file(p: &Path) -> String {
    let mut h = Sha256::new();
    std::io::copy(&mut std::fs::File::open(p).unwrap(), &mut h).unwrap();
    format!("sha256:{:x}", h.finalize())
}

/// A layer's tar of the directory `dir`: everything in it, or (`only_files`) its
/// non-directories alone, as a layer that changes files without naming their directories is.
fn tar_layer(work: &Path, dir: &Path, only_files: bool) -> PathBuf {
    let out = work.join(format!("{}-layer.tar", unique()));
    let what = if only_files { "find . ! -type d | sort | tar --no-recursion -T - " } else { "tar --sort=name . " };
    sh(&format!("cd '{}' && {what} --numeric-owner --mtime=@1700000000 -cf '{}'", dir.display(), out.display()));
    out
}

/// A layer's tar with one hard link, `name` to `target` (a file of a layer below).
fn tar_hard_link(work: &Path, name: &str, target: &str) -> PathBuf {
    let out = work.join(format!("{}-link.tar", unique()));
    let py = format!(
        "import tarfile\nt=tarfile.open('{}','w',format=tarfile.PAX_FORMAT)\ni=tarfile.TarInfo('{name}')\ni.type=tarfile.LNKTYPE\ni.linkname='{target}'\nt.addfile(i)\nt.close()\n",
        out.display()
    );
    let o = Command::new("python3").args(["-c", &py]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// A docker-archive of the layer tars `layers` (in order) named `name`, readable by every
/// user.
fn archive(dir: &Path, name: &str, layers: &[PathBuf]) -> PathBuf {
    archive_with(dir, name, layers, |_| {})
}

/// [`archive`], the config's DiffIDs changed by `edit` first.
fn archive_with(dir: &Path, name: &str, layers: &[PathBuf], edit: impl Fn(&mut Vec<String>)) -> PathBuf {
    let work = dir.join(format!("{}-archive", unique()));
    std::fs::create_dir_all(&work).unwrap();
    let mut files = Vec::new();
    let mut diff_ids = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        let f = format!("layer{i}.tar");
        std::fs::copy(l, work.join(&f)).unwrap();
        diff_ids.push(sha256_file(&work.join(&f)));
        files.push(f);
    }
    edit(&mut diff_ids);
    let config = serde_json::json!({
        "architecture": std::env::consts::ARCH.replace("x86_64", "amd64").replace("aarch64", "arm64"),
        "os": "linux",
        "config": {"Cmd": ["/bin/sh"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    });
    let cfg = serde_json::to_vec(&config).unwrap();
    let cfg_name = format!("{:x}.json", Sha256::digest(&cfg));
    std::fs::write(work.join(&cfg_name), &cfg).unwrap();
    let manifest = serde_json::json!([{"Config": cfg_name, "RepoTags": [name], "Layers": files}]);
    std::fs::write(work.join("manifest.json"), serde_json::to_vec(&manifest).unwrap()).unwrap();
    let out = dir.join(format!("{}-{}.tar", unique(), name.replace(['/', ':'], "_")));
    sh(&format!("tar -C '{}' -cf '{}' . && chmod a+r '{}'", work.display(), out.display(), out.display()));
    std::fs::remove_dir_all(&work).unwrap();
    out
}

/// A layer directory from `(path, content)` files and `(path)` empty whiteouts/markers.
fn layer(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    let d = dir.join(format!("{}-layer", unique()));
    for (p, content) in files {
        let f = d.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, content).unwrap();
    }
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(m: Mode, store: &Path, image: &str, script: &str) -> String {
    let o = store_cmd(m, store).args(["run", "--timeout=60s", image, "--", "sh", "-c", script]).output().unwrap();
    ok(&o, &format!("run {image}: {script}"));
    stdout(&o)
}

/// Every object of the store: (path, link count).
fn objects(store: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    for shard in std::fs::read_dir(store.join("objects")).into_iter().flatten().flatten() {
        for e in std::fs::read_dir(shard.path()).into_iter().flatten().flatten() {
            let m = e.path().symlink_metadata().unwrap();
            out.push((e.path(), m.nlink()));
        }
    }
    out
}

fn dirs_in(p: &Path) -> usize {
    std::fs::read_dir(p)
        .map(|r| r.flatten().filter(|e| e.path().is_dir() && !e.file_name().to_string_lossy().starts_with('.')).count())
        .unwrap_or(0)
}

#[test]
fn images_share_their_files_and_their_lower_layers() {
    let f = fixtures();
    for m in modes() {
        let store = m.scratch_dir("store");
        // The base: the busybox rootfs, and a directory the top layers change.
        let base = f.dir.join(format!("{}-base", unique()));
        sh(&format!("cp -a '{}' '{}'", m.rootfs().display(), base.display()));
        for (p, c) in [("srv/keep/a.txt", "a\n"), ("srv/keep/b.txt", "b\n"), ("srv/gone.txt", "gone\n")] {
            std::fs::create_dir_all(base.join(p).parent().unwrap()).unwrap();
            std::fs::write(base.join(p), c).unwrap();
        }
        sh(&format!("chmod 0750 '{}/srv' && ln -s /etc '{}/etc-link'", base.display(), base.display()));
        let shared = "the same content in both images\n".repeat(1000);
        // A: deletes a file of the base (whiteout), makes srv/keep opaque, adds its own.
        let a = layer(
            &f.dir,
            &[
                ("srv/.wh.gone.txt", ""),
                ("srv/keep/.wh..wh..opq", ""),
                ("srv/keep/new.txt", "new\n"),
                ("data/shared.txt", &shared),
                ("data/only-a.txt", "a\n"),
            ],
        );
        let b = layer(&f.dir, &[("data/shared.txt", &shared), ("data/only-b.txt", "b\n")]);
        // The top layers name their files only, not srv/ or srv/keep/: the directories they
        // pass through keep what the base has.
        let base_tar = tar_layer(&f.dir, &base, false);
        let arch_a = archive(&f.dir, "localhost/t/a:1", &[base_tar.clone(), tar_layer(&f.dir, &a, true)]);
        let arch_b = archive(&f.dir, "localhost/t/b:1", &[base_tar, tar_layer(&f.dir, &b, true)]);
        for arch in [&arch_a, &arch_b] {
            let o = store_cmd(m, &store).arg("import").arg(arch).output().unwrap();
            ok(&o, "import");
        }
        assert_eq!(dirs_in(&store.join("chains")), 1, "{m:?}: the base is unpacked once for both images");
        assert_eq!(dirs_in(&store.join("rootfs")), 2, "{m:?}: each image has its last layer's tree");

        // The images' views: the whiteout and the opaque directory hide the base's files,
        // a directory only passed through keeps the base's mode.
        assert_eq!(
            run(m, &store, "localhost/t/a:1", "ls /srv; ls /srv/keep; stat -c %a /srv; cat /data/only-a.txt"),
            "keep\nnew.txt\n750\na\n",
            "{m:?}"
        );
        assert_eq!(
            run(
                m,
                &store,
                "localhost/t/b:1",
                "ls /srv; ls /srv/keep; cat /data/only-b.txt; test -L /etc-link && echo linked"
            ),
            "gone.txt\nkeep\na.txt\nb.txt\nb\nlinked\n",
            "{m:?}"
        );
        // One object for the file both images hold, and the image's own link structure:
        // no two paths of one image are one inode unless the image links them.
        let ino = |img: &str, p: &str| {
            let out = run(m, &store, img, &format!("stat -c %i {p}"));
            out.trim().to_string()
        };
        assert_ne!(ino("localhost/t/a:1", "/data/shared.txt"), ino("localhost/t/a:1", "/data/only-a.txt"));
        let shared_objects = objects(&store)
            .iter()
            .filter(|(p, _)| std::fs::read(p).map(|c| c == shared.as_bytes()).unwrap_or(false))
            .count();
        assert_eq!(shared_objects, 1, "{m:?}: the file both images hold is stored once");

        // A sandbox's writes never reach the store or the other image.
        assert_eq!(
            run(m, &store, "localhost/t/a:1", "echo changed >> /data/shared.txt; chmod 600 /data/shared.txt; touch -d @0 /data/shared.txt; tail -1 /data/shared.txt"),
            "changed\n"
        );
        assert_eq!(
            run(m, &store, "localhost/t/b:1", "tail -1 /data/shared.txt; stat -c %a /data/shared.txt"),
            "the same content in both images\n644\n"
        );

        // The disk figures: sharing saves.
        let o = store_cmd(m, &store).args(["system", "df", "--format", "json"]).output().unwrap();
        ok(&o, "system df");
        let df: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert!(df["Saved"].as_u64().unwrap() > shared.len() as u64 / 2, "{m:?}: sharing saves nothing: {df}");

        // save recreates each layer byte for byte: re-imported, the image is the same.
        let saved = m.owned_dir("out").join("saved.tar");
        let o = store_cmd(m, &store).args(["save", "localhost/t/a:1", "-o"]).arg(&saved).output().unwrap();
        ok(&o, "save");
        let other = m.scratch_dir("store2");
        let o = store_cmd(m, &other).arg("import").arg(&saved).output().unwrap();
        ok(&o, "import the saved archive");
        let id = |s: &Path| {
            let o = store_cmd(m, s).args(["images", "-q", "--no-trunc"]).output().unwrap();
            stdout(&o).lines().map(String::from).collect::<Vec<_>>()
        };
        assert!(id(&store).contains(&id(&other)[0]), "{m:?}: the saved image's ID changed");
        assert_eq!(run(m, &other, "localhost/t/a:1", "ls /srv/keep"), "new.txt\n");

        // rmi of one image frees what only it held, the other stays whole; then nothing.
        let o = store_cmd(m, &store).args(["rmi", "localhost/t/a:1"]).output().unwrap();
        ok(&o, "rmi");
        let o = store_cmd(m, &store).arg("prune").output().unwrap();
        ok(&o, "prune");
        assert_eq!(dirs_in(&store.join("chains")), 1, "{m:?}: b still stands on the base");
        assert!(objects(&store).iter().all(|(_, n)| *n > 1), "{m:?}: an object nothing links was left");
        assert_eq!(
            run(m, &store, "localhost/t/b:1", "ls /srv/keep; wc -c < /data/shared.txt"),
            format!("a.txt\nb.txt\n{}\n", shared.len())
        );
        let o = store_cmd(m, &store).args(["rmi", "localhost/t/b:1"]).output().unwrap();
        ok(&o, "rmi");
        let o = store_cmd(m, &store).arg("prune").output().unwrap();
        ok(&o, "prune");
        assert_eq!(dirs_in(&store.join("chains")), 0, "{m:?}: the base went with its last image");
        assert!(objects(&store).is_empty(), "{m:?}: objects left: {:?}", objects(&store));
        assert_eq!(dirs_in(&store.join("layers")), 0, "{m:?}: layer records left");
        let _ = std::fs::remove_dir_all(&base);
    }
}

#[test]
fn a_last_layer_cannot_write_through_a_symlink_of_the_layers_below() {
    let f = fixtures();
    for m in modes() {
        let store = m.scratch_dir("store");
        let base = f.dir.join(format!("{}-base", unique()));
        sh(&format!("cp -a '{}' '{}' && ln -s /etc '{}/escape'", m.rootfs().display(), base.display(), base.display()));
        // The top layer names escape/planted: in a flattened tree that goes through the
        // symlink and is refused; over the chain it must be refused too (a directory made in
        // the top tree would hide the symlink and change what the image is).
        let top = layer(&f.dir, &[("escape/planted", "x\n")]);
        let base_tar = tar_layer(&f.dir, &base, false);
        let arch = archive(&f.dir, "localhost/t/escape:1", &[base_tar.clone(), tar_layer(&f.dir, &top, true)]);
        let o = store_cmd(m, &store).arg("import").arg(&arch).output().unwrap();
        assert_ne!(code(&o), 0, "{m:?}: imported: {}", stdout(&o));
        assert!(stderr(&o).contains("symlink"), "{m:?}: {}", stderr(&o));
        assert_eq!(dirs_in(&store.join("rootfs")), 0, "{m:?}: a refused image left its tree");
        // A hard link in the top layer to a file of the base: the base's file, by another name.
        let arch =
            archive(&f.dir, "localhost/t/link:1", &[base_tar, tar_hard_link(&f.dir, "bin/again", "bin/busybox")]);
        let o = store_cmd(m, &store).arg("import").arg(&arch).output().unwrap();
        ok(&o, "import a hard link to a file below");
        assert_eq!(
            run(m, &store, "localhost/t/link:1", "test $(stat -c %i /bin/again) = $(stat -c %i /bin/busybox) && cmp /bin/again /bin/busybox && echo same"),
            "same\n"
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}

#[test]
fn concurrent_imports_rmis_prunes_and_runs_keep_every_image_whole() {
    let f = fixtures();
    for m in modes() {
        let store = m.scratch_dir("store");
        let base = f.dir.join(format!("{}-base", unique()));
        sh(&format!("cp -a '{}' '{}'", m.rootfs().display(), base.display()));
        let content: Vec<String> = (0..3).map(|i| format!("image {i}\n").repeat(500)).collect();
        let archives: Vec<PathBuf> = (0..3)
            .map(|i| {
                let top = layer(&f.dir, &[("data/common.txt", "common\n"), ("data/own.txt", &content[i])]);
                archive(
                    &f.dir,
                    &format!("localhost/t/c{i}:1"),
                    &[tar_layer(&f.dir, &base, false), tar_layer(&f.dir, &top, false)],
                )
            })
            .collect();
        std::thread::scope(|s| {
            for (i, arch) in archives.iter().enumerate() {
                let store = &store;
                s.spawn(move || {
                    for _ in 0..4 {
                        let o = store_cmd(m, store).arg("import").arg(arch).output().unwrap();
                        ok(&o, "concurrent import");
                        let o = store_cmd(m, store)
                            .args([
                                "run",
                                "--timeout=60s",
                                &format!("localhost/t/c{i}:1"),
                                "--",
                                "cat",
                                "/data/own.txt",
                            ])
                            .output()
                            .unwrap();
                        // A run may meet the image removed by the rmi of another thread's
                        // turn (said, exit 125); one that runs reads the image whole.
                        if o.status.success() {
                            assert_eq!(stdout(&o), format!("image {i}\n").repeat(500));
                        } else {
                            assert!(
                                stderr(&o).contains("not in the store") || stderr(&o).contains("removed"),
                                "{}",
                                stderr(&o)
                            );
                        }
                        if i == 0 {
                            let o = store_cmd(m, store).args(["rmi", "localhost/t/c0:1"]).output().unwrap();
                            ok(&o, "concurrent rmi");
                        }
                    }
                });
            }
            let store = &store;
            s.spawn(move || {
                for _ in 0..6 {
                    let o = store_cmd(m, store).arg("prune").output().unwrap();
                    ok(&o, "concurrent prune");
                }
            });
        });
        // Whole: every image named reads back as made; after a prune no object is unlinked.
        let o = store_cmd(m, &store).arg("prune").output().unwrap();
        ok(&o, "prune");
        for (i, own) in content.iter().enumerate().skip(1) {
            assert_eq!(
                run(m, &store, &format!("localhost/t/c{i}:1"), "cat /data/own.txt /data/common.txt"),
                own.clone() + "common\n"
            );
        }
        assert!(objects(&store).iter().all(|(_, n)| *n > 1), "{m:?}: an object nothing links was left");
        let _ = std::fs::remove_dir_all(&base);
    }
}

/// A layer's tar made by python's tarfile from `entries`, a Python list of tuples:
/// ("d", name, mtime), ("f", name, content, mtime), ("l", name, target), ("pax-d", name, {key: bytes}).
fn tar_py(work: &Path, entries: &str) -> PathBuf {
    let out = work.join(format!("{}-py.tar", unique()));
    let py = format!(
        r#"
import tarfile, io
t = tarfile.open('{}', 'w', format=tarfile.PAX_FORMAT)
for e in {entries}:
    k, name = e[0], e[1]
    i = tarfile.TarInfo(name)
    if k == 'd':
        i.type = tarfile.DIRTYPE; i.mode = 0o755; i.mtime = e[2]; t.addfile(i)
    elif k == 'f':
        data = e[2].encode(); i.size = len(data); i.mode = 0o644; i.mtime = e[3]; t.addfile(i, io.BytesIO(data))
    elif k == 'l':
        i.type = tarfile.LNKTYPE; i.linkname = e[2]; t.addfile(i)
    elif k == 'fifo':
        i.type = tarfile.FIFOTYPE; i.mode = 0o644; t.addfile(i)
    elif k == 'pax-d':
        i.type = tarfile.DIRTYPE; i.mode = 0o755; i.mtime = 1700000000
        i.pax_headers = {{kk: vv.decode('utf-8', 'surrogateescape') for kk, vv in e[2].items()}}
        t.addfile(i)
t.close()
"#,
        out.display()
    );
    let o = Command::new("python3").args(["-c", &py]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

fn mtime_in(m: Mode, store: &Path, image: &str, path: &str) -> String {
    run(m, store, image, &format!("stat -c %Y {path}")).trim().to_string()
}

#[test]
fn an_image_cannot_change_the_times_of_files_other_images_share() {
    // The tenth red team's: a directory entry replaced, later in its layer, by a file that is
    // another image's object (same content and metadata) or a hard link into the chain; the
    // directory's time, set last, went to the shared inode.
    let f = fixtures();
    for m in modes() {
        let store = m.scratch_dir("store");
        let base = f.dir.join(format!("{}-base", unique()));
        sh(&format!(
            "cp -a '{}' '{}' && touch -d @1700000000 '{}/bin/busybox'",
            m.rootfs().display(),
            base.display(),
            base.display()
        ));
        let base_tar = tar_layer(&f.dir, &base, false);
        let honest = archive(
            &f.dir,
            "localhost/t/two:1",
            &[base_tar.clone(), tar_py(&f.dir, "[('f', 'hello', 'hi\\n', 1700000000)]")],
        );
        ok(&store_cmd(m, &store).arg("import").arg(&honest).output().unwrap(), "import");
        let before = (
            mtime_in(m, &store, "localhost/t/two:1", "/hello"),
            mtime_in(m, &store, "localhost/t/two:1", "/bin/busybox"),
        );
        let evil = archive(
            &f.dir,
            "localhost/t/evil:1",
            &[
                base_tar,
                tar_py(
                    &f.dir,
                    "[('d', 'x', 4000000000), ('f', 'x', 'hi\\n', 1700000000), ('d', 'y', 4100000000), ('l', 'y', 'bin/busybox')]",
                ),
            ],
        );
        let o = store_cmd(m, &store).arg("import").arg(&evil).output().unwrap();
        ok(&o, "import the hostile image");
        let after = (
            mtime_in(m, &store, "localhost/t/two:1", "/hello"),
            mtime_in(m, &store, "localhost/t/two:1", "/bin/busybox"),
        );
        assert_eq!(before, after, "{m:?}: an image changed the times of files another image has");
        // And a later honest image with that file comes out as it says.
        let later = archive(
            &f.dir,
            "localhost/t/later:1",
            &[
                tar_layer(&f.dir, &base, false),
                tar_py(&f.dir, "[('f', 'hello', 'hi\\n', 1700000000), ('f', 'other', 'o\\n', 1)]"),
            ],
        );
        ok(&store_cmd(m, &store).arg("import").arg(&later).output().unwrap(), "import a later image");
        assert_eq!(mtime_in(m, &store, "localhost/t/later:1", "/hello"), "1700000000", "{m:?}");
        let _ = std::fs::remove_dir_all(&base);
    }
}

#[test]
fn a_shared_store_keeps_no_acl_that_gives_write_back() {
    // The tenth red team's: system.posix_acl_access in a directory's PAX record, applied
    // after the mode, gave a --shared store drwxrwxrwx+ directories any local user wrote into.
    if !is_root() {
        skip("a_shared_store_keeps_no_acl_that_gives_write_back", "a --shared store is root's");
        return;
    }
    let f = fixtures();
    let store = Mode::Root.scratch_dir("shared");
    // version 2; USER_OBJ rwx, GROUP_OBJ r-x, MASK rwx, OTHER rwx.
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, perm) in [(1u16, 7u16), (4, 5), (0x10, 7), (0x20, 7)] {
        acl.extend(tag.to_le_bytes());
        acl.extend(perm.to_le_bytes());
        acl.extend(u32::MAX.to_le_bytes());
    }
    let acl_py: String = acl.iter().map(|b| format!("\\x{b:02x}")).collect();
    let layer = tar_py(&f.dir, &format!("[('pax-d', 'pub', {{'SCHILY.xattr.system.posix_acl_access': b'{acl_py}'}}), ('f', 'pub/x', 'x\\n', 1700000000)]"));
    let arch = archive(&f.dir, "localhost/t/acl:1", &[layer]);
    let o = Mode::Root.command().args(["import", "--shared", "--root"]).arg(&*store).arg(&arch).output().unwrap();
    ok(&o, "import --shared");
    let chains = store.join("chains");
    let tree = std::fs::read_dir(&chains).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).unwrap();
    let pubdir = tree.join("pub");
    let mode = std::fs::metadata(&pubdir).unwrap().mode() & 0o777;
    assert_eq!(mode & 0o022, 0, "a shared store's directory is writable by others: {mode:o}");
    let o = Command::new("getfattr").args(["-d", "-m", "system"]).arg(&pubdir).output();
    if let Ok(o) = o {
        assert!(!stdout(&o).contains("posix_acl"), "an ACL came through: {}", stdout(&o));
    }
    let o = Command::new("setpriv")
        .args([format!("--reuid={}", f.uid), format!("--regid={}", f.gid), "--clear-groups".into()])
        .args(["sh", "-c", &format!("echo x > '{}/planted'", pubdir.display())])
        .output()
        .unwrap();
    assert!(!o.status.success() && !pubdir.join("planted").exists(), "another user wrote into a shared image");
}

#[test]
fn a_link_group_filled_by_one_image_leaves_room_for_the_next() {
    // The tenth red team's: an image whose file had 64997 hard links left its object one link
    // short of ext4's limit, and the next image with that file and a hard link to it failed.
    if !is_root() {
        skip("a_link_group_filled_by_one_image_leaves_room_for_the_next", "heavy: run as root only");
        return;
    }
    let f = fixtures();
    let m = Mode::Root;
    let store = m.scratch_dir("store");
    let many = tar_py(&f.dir, "[('f', 't', 'TOOL\\n', 1700000000)] + [('l', 'l%d' % i, 't') for i in range(64997)]");
    ok(
        &store_cmd(m, &store).arg("import").arg(archive(&f.dir, "localhost/t/many:1", &[many])).output().unwrap(),
        "import",
    );
    let next = tar_py(
        &f.dir,
        "[('d', 'usr', 1700000000), ('f', 'usr/tool', 'TOOL\\n', 1700000000), ('l', 'usr/tool2', 'usr/tool')]",
    );
    let o = store_cmd(m, &store).arg("import").arg(archive(&f.dir, "localhost/t/next:1", &[next])).output().unwrap();
    ok(&o, "import an image with the same file and a hard link to it");
}

#[test]
fn a_last_layer_may_delete_a_directory_and_make_it_anew() {
    let f = fixtures();
    for m in modes() {
        let store = m.scratch_dir("store");
        let base = f.dir.join(format!("{}-base", unique()));
        sh(&format!(
            "cp -a '{}' '{}' && mkdir -p '{}/d' && echo old > '{}/d/old' && echo f > '{}/d/f'",
            m.rootfs().display(),
            base.display(),
            base.display(),
            base.display(),
            base.display()
        ));
        let base_tar = tar_layer(&f.dir, &base, false);
        // .wh.d, then d/new: d is a new directory, the base's files gone from it.
        let top = tar_py(&f.dir, "[('f', '.wh.d', '', 0), ('f', 'd/new', 'new\\n', 1700000000)]");
        ok(
            &store_cmd(m, &store)
                .arg("import")
                .arg(archive(&f.dir, "localhost/t/anew:1", &[base_tar.clone(), top]))
                .output()
                .unwrap(),
            "import",
        );
        assert_eq!(run(m, &store, "localhost/t/anew:1", "ls /d"), "new\n", "{m:?}");
        // A hard link to a file of the base this layer hides (an opaque directory) is refused,
        // as in a flattened tree, where it is gone.
        let top = tar_py(&f.dir, "[('f', 'd/.wh..wh..opq', '', 0), ('l', 'y', 'd/f')]");
        let o = store_cmd(m, &store)
            .arg("import")
            .arg(archive(&f.dir, "localhost/t/hidden:1", &[base_tar, top]))
            .output()
            .unwrap();
        assert_ne!(code(&o), 0, "{m:?}: a hard link to a hidden file was made");
        assert!(stderr(&o).contains("does not exist"), "{m:?}: {}", stderr(&o));
        let _ = std::fs::remove_dir_all(&base);
    }
}

#[test]
fn an_image_whose_config_names_a_path_for_a_layer_is_refused() {
    // The eleventh red team's: a DiffID of `../chains/<chain>/evil/x` made the store look for
    // a layer record inside the image's own tree, and replaying it made root link a file the
    // image chose into any directory (a pins symlink): a cron file as root, a setuid copy of
    // `id` in a user's directory, a sandbox whose root was the host's /etc.
    let f = fixtures();
    for m in modes() {
        let store = m.scratch_dir("store");
        let target = m.owned_dir("target");
        let base = tar_layer(&f.dir, m.rootfs(), false);
        let top = tar_py(&f.dir, "[('f', 'x', 'x\\n', 1)]");
        for bad in ["../chains/x/evil/x", "sha256:../../../../tmp/x", "sha256:ABCDEF", "x"] {
            let arch =
                archive_with(&f.dir, "localhost/t/path:1", &[base.clone(), top.clone()], |d| d[1] = bad.to_string());
            let o = store_cmd(m, &store).arg("import").arg(&arch).output().unwrap();
            assert_ne!(code(&o), 0, "{m:?}: {bad}: imported");
            assert!(stderr(&o).contains("not a sha256 digest"), "{m:?}: {bad}: {}", stderr(&o));
            let o = store_cmd(m, &store)
                .arg("import")
                .arg(archive_with(&f.dir, "localhost/t/path:2", &[base.clone(), top.clone()], |d| {
                    d[0] = bad.to_string()
                }))
                .output()
                .unwrap();
            assert_ne!(code(&o), 0, "{m:?}: {bad} as the first layer: imported");
        }
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "{m:?}");
    }
}

#[test]
fn hard_links_past_the_limit_to_a_fifo_are_refused_at_once() {
    // The eleventh red team's: past the link limit the store re-keyed a hard link's target by
    // reading it: a device (as root /dev/zero read without end) or a FIFO (blocked for good,
    // with the store's collection lock held).
    if !is_root() {
        skip("hard_links_past_the_limit_to_a_fifo_are_refused_at_once", "heavy: run as root only");
        return;
    }
    let f = fixtures();
    for m in modes() {
        let store = m.scratch_dir("store");
        let layer = tar_py(&f.dir, "[('fifo', 'p')] + [('l', 'l%d' % i, 'p') for i in range(65001)]");
        let mut c = store_cmd(m, &store);
        c.arg("import").arg(archive(&f.dir, "localhost/t/fifo:1", &[layer]));
        let mut child = c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        let done = eventually(120, || child.try_wait().unwrap().is_some());
        if !done {
            let _ = child.kill();
        }
        let o = child.wait_with_output().unwrap();
        assert!(done, "{m:?}: the import hung on a FIFO");
        assert_ne!(code(&o), 0, "{m:?}: imported");
        assert!(stderr(&o).contains("refused"), "{m:?}: {}", stderr(&o));
    }
}

/// A `--shared` store of `m`'s user holding a two-layer image `localhost/t/shared:1` (the
/// fixture's rootfs under a layer with `/x`): the store, a store of the caller's own, the
/// manifest's hex.
fn shared_store(m: Mode) -> (Scratch, Scratch, String) {
    let f = fixtures();
    let shared = m.scratch_dir("shared");
    let own = m.scratch_dir("own");
    let base = tar_layer(&f.dir, m.rootfs(), false);
    let top = tar_layer(&f.dir, &layer(&f.dir, &[("x", "from the image\n")]), false);
    let arch = archive(&f.dir, "localhost/t/shared:1", &[base, top]);
    let o = m.command().args(["import", "--shared", "--root"]).arg(&*shared).arg(&arch).output().unwrap();
    ok(&o, "import --shared");
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(shared.join("oci/index.json")).unwrap()).unwrap();
    let hex = index["manifests"][0]["digest"].as_str().unwrap().trim_start_matches("sha256:").to_string();
    (shared, own, hex)
}

/// `run` of the shared image from `m`'s own store `own`, with `shared` as
/// POLYSANDBOX_SHARED_STORES.
fn run_shared(m: Mode, own: &Path, shared: &Path, script: &str) -> std::process::Output {
    store_cmd(m, own)
        .env("POLYSANDBOX_SHARED_STORES", shared)
        .args(["run", "--pull", "never", "--timeout=60s", "localhost/t/shared:1", "--", "sh", "-c", script])
        .output()
        .unwrap()
}

/// Refused: a non-zero exit and one line that says so, naming what.
fn refused_once(o: &std::process::Output, want: &str, what: &str) {
    assert_ne!(code(o), 0, "{what}: ran: {}", stdout(o));
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("refused")).collect();
    assert_eq!(lines.len(), 1, "{what}: {}", stderr(o));
    assert!(lines[0].contains(want), "{what}: {lines:?} lacks {want:?}");
    eprintln!("{what}: {}", lines[0]);
    assert!(!stdout(o).contains("from the image"), "{what}: {}", stdout(o));
}

#[test]
fn a_shared_store_record_naming_a_path_is_refused() {
    // Issue 37: the owner of a shared store rewrote an image record's `chain` to an absolute
    // path (a root-only directory), and root's sandbox mounted it as its lower layer. Every
    // name a record holds is checked for the form the store makes, and the trees it names are
    // opened beneath the store's root with no symlink.
    for m in modes() {
        let (shared, own, hex) = shared_store(m);
        let o = run_shared(m, &own, &shared, "cat /x");
        ok(&o, "the shared image");
        assert_eq!(stdout(&o), "from the image\n", "{m:?}");
        let record = shared.join("rootfs").join(format!("{hex}.json"));
        let text = std::fs::read_to_string(&record).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Outside the store: the fixture's own rootfs (a tree that boots), by an absolute path
        // and by `..`.
        let up = format!("../../{}", m.rootfs().file_name().unwrap().to_string_lossy());
        for chain in [m.rootfs().to_string_lossy().into_owned(), up] {
            let mut bad = v.clone();
            bad["chain"] = chain.clone().into();
            std::fs::write(&record, serde_json::to_string(&bad).unwrap()).unwrap();
            refused_once(
                &run_shared(m, &own, &shared, "cat /x"),
                "not a name the store makes",
                &format!("{m:?}: {chain}"),
            );
        }
        std::fs::write(&record, &text).unwrap();
        // The image's own tree a symlink to a tree outside.
        let tree = shared.join("rootfs").join(&hex);
        let kept = shared.join("kept");
        std::fs::rename(&tree, &kept).unwrap();
        std::os::unix::fs::symlink(m.rootfs(), &tree).unwrap();
        refused_once(&run_shared(m, &own, &shared, "cat /x"), "symlink", &format!("{m:?}: rootfs/<hex> a link"));
        std::fs::remove_file(&tree).unwrap();
        std::fs::rename(&kept, &tree).unwrap();
        ok(&run_shared(m, &own, &shared, "cat /x"), "the shared image again");
    }
}

#[test]
fn a_shared_store_another_user_can_change_is_refused() {
    // Issue 37: `Store::shared` skipped `Store::open`'s ownership and mode checks. A shared
    // store is used only when owned by root or the caller and writable by no one else, and
    // the same of the directories its records point into.
    use std::os::unix::fs::PermissionsExt;
    let chmod = |p: &Path, mode: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    for m in modes() {
        let (shared, own, _) = shared_store(m);
        ok(&run_shared(m, &own, &shared, "cat /x"), "the shared image");
        for (rel, mode) in [("", 0o757), ("", 0o775), ("rootfs", 0o775), ("chains", 0o777)] {
            let p = shared.join(rel);
            let was = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
            chmod(&p, mode);
            refused_once(
                &run_shared(m, &own, &shared, "cat /x"),
                "writable by others",
                &format!("{m:?}: {rel} {mode:o}"),
            );
            chmod(&p, was);
        }
        ok(&run_shared(m, &own, &shared, "cat /x"), "the shared image again");
    }
    if !is_root() {
        return skip("a_shared_store_another_user_can_change_is_refused: a third user's", "not running as root");
    }
    // Root's run of a store another user (the test user) owns.
    let f = fixtures();
    let (shared, own, _) = shared_store(Mode::Root);
    let o = Command::new("chown").args(["-R", &format!("{}:{}", f.uid, f.gid)]).arg(&*shared).output().unwrap();
    ok(&o, "chown");
    refused_once(
        &run_shared(Mode::Root, &own, &shared, "cat /x"),
        &format!("owned by uid {}", f.uid),
        "a third user's store",
    );
}

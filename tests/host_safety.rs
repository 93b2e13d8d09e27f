//! Host safety (issue: nothing a hostile image, bind or command does may reach the host, another
//! user, or a limit). Each test attacks one class from inside a sandbox, or through what the
//! sandbox is given, as root and as the unprivileged user, and checks the host afterwards.

mod common;

use common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;

/// The raw `security.capability` xattr of `p`, if any.
fn file_caps(p: &Path) -> Option<Vec<u8>> {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    let mut buf = [0u8; 64];
    // SAFETY: valid C strings and a buffer of the size given.
    let n = unsafe { libc::lgetxattr(c.as_ptr(), c"security.capability".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    (n > 0).then(|| buf[..n as usize].to_vec())
}

/// Class 1: privilege planted through a read-write bind. Every way to make a setuid or setgid
/// file, a file capability or a device node, from inside; then, seen from the host, nothing in
/// the directory is owned by host root, setuid/setgid, or carries a capability for host root.
#[test]
fn nothing_written_through_a_read_write_bind_carries_privilege_on_the_host() {
    for m in modes() {
        let dir = m.owned_dir("plant");
        // As root the directory is root's: open to all, as a shared scratch directory would be
        // (the sandbox's root is an unprivileged host id there, and must still not plant root's
        // privilege).
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        // Another sandbox running meanwhile: as root this one is not slot 0, so its read-write
        // bind is idmapped (its writes land as slot 0's ids), and the directory of root's must
        // still take them (it did not: an id the mount does not map refuses every write).
        let (mut other, up) = holding(m, &[], &["sh", "-c", "echo up; sleep 3"]);
        assert_eq!(up, "up", "{m:?}");
        let o = m.run(
            &["-v", &format!("{}:/b", dir.display())],
            &[
                "/bin/sh",
                "-c",
                "probe setuid-creat=/b/a setgid-open=/b/b setuid-chmod=/b/c setuid-fchmodat=/b/d openat2=/b/e setcap=/b/f mknod=/b/g; \
                 cp /bin/probe /b/h; chmod u+s /b/h; chmod g+s /b/h; cp -p /bin/probe /b/i; chmod 6755 /b/i; \
                 grep ' /b ' /proc/mounts",
            ],
        );
        let out = stdout(&o);
        for (call, want) in [
            ("setuid-creat", "EPERM"),
            ("setgid-open", "EPERM"),
            ("setuid-chmod", "EPERM"),
            ("setuid-fchmodat", "EPERM"),
            ("openat2", "ENOSYS"),
        ] {
            assert!(out.contains(&format!("{call}: {want}\n")), "{m:?}: {call} not {want}: {out}{}", stderr(&o));
        }
        let mount_line =
            out.lines().find(|l| l.contains(" /b ")).unwrap_or_else(|| panic!("{m:?}: /b not mounted: {out}"));
        assert!(mount_line.contains("nosuid") && mount_line.contains("nodev"), "{m:?}: {mount_line}");
        let mut seen = 0;
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let md = e.metadata().unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            seen += 1;
            assert_ne!(md.uid(), 0, "{m:?}: {name} is owned by host root");
            assert_eq!(md.mode() & 0o6000, 0, "{m:?}: {name} is setuid/setgid on the host: {:o}", md.mode());
            assert!(
                !md.file_type().is_char_device() && !md.file_type().is_block_device(),
                "{m:?}: {name} is a device node"
            );
            if let Some(cap) = file_caps(&e.path()) {
                // A v3 capability (magic 0x03000000) holds for the namespace whose root is its
                // rootid; host root is 0, and a v2 one holds for host root.
                let magic = u32::from_le_bytes(cap[0..4].try_into().unwrap()) & 0xff00_0000;
                assert_eq!(magic, 0x0300_0000, "{m:?}: {name} has a host-wide file capability {cap:x?}");
                let rootid = u32::from_le_bytes(cap[20..24].try_into().unwrap());
                assert_ne!(rootid, 0, "{m:?}: {name} has a file capability for host root");
            }
            use std::os::unix::fs::FileTypeExt;
        }
        let _ = other.wait();
        assert!(
            seen >= 3,
            "{m:?}: the sandbox wrote almost nothing ({seen} files): the test shows nothing: {out} {}",
            stderr(&o)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Class 1, the other direction: a setuid file that is in a bind (put there by whoever) gives
/// nothing inside: binds are nosuid. As root, a file owned by host root appears owned by the
/// sandbox's root through an idmapped (read-only) bind; a command running as uid 1000 inside
/// must not become 0 by executing it.
#[test]
fn a_setuid_file_in_a_bind_does_not_raise_privilege_inside() {
    if !is_root() {
        skip(
            "a_setuid_file_in_a_bind_does_not_raise_privilege_inside",
            "needs root to make a setuid file and run as another uid inside",
        );
        return;
    }
    let dir = Mode::Root.owned_dir("suid");
    let f = dir.join("su");
    std::fs::copy(fixtures().dir.join("probe"), &f).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o4755)).unwrap();
    for ro in ["ro", "rw"] {
        let base = root_base();
        // Read-write binds are not idmapped: make it the sandbox root's there.
        let owner = if ro == "rw" { base } else { 0 };
        std::os::unix::fs::chown(&f, Some(owner), Some(owner)).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o4755)).unwrap();
        let o = Mode::Root.run(
            &["--user", "1000:1000", "-v", &format!("{}:/s:{ro}", dir.display())],
            &["/bin/sh", "-c", "ls -ln /s/su; /s/su euid"],
        );
        let out = stdout(&o);
        assert!(
            out.contains("-rwsr-xr-x") && out.contains(" 0 "),
            "{ro}: the file does not look setuid root inside: {out} {}",
            stderr(&o)
        );
        assert!(out.contains("euid: 1000\n"), "{ro}: setuid worked through a bind: {out} {}", stderr(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Class 9: every run reaps what it created before it exits. Under a subreaper that never
/// reaps (a container's or CI step's pid 1, a Slurm step), runs must leave no zombie behind.
#[test]
fn runs_leave_no_zombie_under_a_subreaper_that_never_reaps() {
    // The subreaper (the probe) waits for each run's own pid only, as subprocess does, then
    // counts its zombie children.
    for m in modes() {
        let f = fixtures();
        let mut c = std::process::Command::new(f.dir.join("probe"));
        c.args(["subreaper", "20"]);
        if m == Mode::User && is_root() {
            c.args(["setpriv", &format!("--reuid={}", f.uid), &format!("--regid={}", f.gid), "--clear-groups"]);
        }
        c.arg(&f.bin).args(["run", "-q", "--rootfs"]).arg(m.rootfs()).args(["--", "true"]);
        let o = c.env("HOME", "/tmp").stdin(Stdio::null()).output().unwrap();
        assert_eq!(code(&o), 0, "{m:?}: {}", stderr(&o));
        assert_eq!(stdout(&o).trim(), "zombies: 0", "{m:?}: {}", stderr(&o));
    }
}

/// Class 5: symlinks met while setting up mounts. A mount target in the image that is a
/// dangling symlink to a host path (resolved in the image it leads nowhere; resolved against
/// the host's root, where the init still is, it is a real directory): nothing on the host may
/// be touched, whatever the run does with it.
#[test]
fn mount_targets_that_are_symlinks_to_host_paths_touch_nothing_on_the_host() {
    let f = fixtures();
    for m in modes() {
        for how in ["--tmpfs", "-v", "-w"] {
            let n = unique();
            let victim = f.dir.join(format!("victim-{n}"));
            std::fs::create_dir(&victim).unwrap();
            std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o700)).unwrap();
            // Owned by whoever the sandbox's setup runs as on the host, so that a chmod
            // through the link would succeed.
            let owner = match m {
                Mode::Root => root_base(),
                Mode::User => f.uid,
            };
            std::os::unix::fs::chown(&victim, Some(owner), Some(owner)).unwrap();
            let link = m.rootfs().join(format!("evil-{n}"));
            std::os::unix::fs::symlink(&victim, &link).unwrap();
            let target = format!("/evil-{n}");
            let src = m.bind_dir("evil-src");
            let vol = format!("{}:{target}", src.display());
            let opts: Vec<&str> = match how {
                "--tmpfs" => vec!["--tmpfs", &target],
                "-v" => vec!["-v", &vol],
                _ => vec!["-w", &target],
            };
            let o = m.run(&opts, &["/bin/sh", "-c", "touch planted; true"]);
            let md = std::fs::metadata(&victim).unwrap();
            assert_eq!(md.mode() & 0o7777, 0o700, "{m:?} {how}: the host directory's mode changed: {}", stderr(&o));
            assert_eq!(
                std::fs::read_dir(&victim).unwrap().count(),
                0,
                "{m:?} {how}: something was made in the host directory"
            );
            // A refusal is one clear line.
            if code(&o) == 125 {
                assert_eq!(stderr(&o).lines().count(), 1, "{m:?} {how}: {}", stderr(&o));
            }
            std::fs::remove_file(&link).unwrap();
            let _ = std::fs::remove_dir_all(&victim);
        }
    }
}

/// Class 6: mount propagation. With the bind sources on a shared mount (as systemd makes
/// every mount), a bind nested in another bind must not appear on the host, and a host mount
/// made under a bind source after the start must not appear in the sandbox. Done in a mount
/// namespace of the test's own (its mounts never reach the real host's table).
#[test]
fn mounts_never_propagate_between_the_sandbox_and_the_host() {
    if !is_root() {
        skip(
            "mounts_never_propagate_between_the_sandbox_and_the_host",
            "needs root for a mount namespace with a shared mount to test in",
        );
        return;
    }
    let f = fixtures();
    for m in modes() {
        let d = f.dir.join(format!("prop-{}", unique()));
        std::fs::create_dir(&d).unwrap();
        let runas = match m {
            Mode::Root => String::new(),
            Mode::User => format!("setpriv --reuid={} --regid={} --clear-groups", f.uid, f.gid),
        };
        let owner = match m {
            Mode::Root => root_base(),
            Mode::User => f.uid,
        };
        // (/x is world-writable for the mount target y: a tmpfs cannot be idmapped before
        // Linux 6.3 (the arm64 VM's 6.1), and a plain bind shows it to the sandbox's own slot's
        // ids, which are root_base()'s only in slot 0.)
        let script = format!(
            r#"set -e
D={d}
mount -t tmpfs tmpfs $D; mount --make-shared $D; mkdir -p $D/a/late $D/b; chown -R {owner} $D/a $D/b; chmod 777 $D/a
{runas} {bin} run --timeout 30s --rootfs {rootfs} -v $D/a:/x -v $D/b:/x/y -- sh -c 'sleep 2; grep -c " /x/late " /proc/mounts || true' > $D/out 2>$D/err &
sleep 1
mount -t tmpfs late $D/a/late
echo "host sees nested: $(grep -c " $D/a/y " /proc/self/mountinfo || true)"
wait
echo "sandbox sees late: $(cat $D/out)"
cat $D/err >&2
"#,
            d = d.display(),
            bin = f.bin.display(),
            rootfs = m.rootfs().display()
        );
        let o = std::process::Command::new("unshare")
            .args(["-m", "--propagation", "unchanged", "sh", "-c", &script])
            .output()
            .unwrap();
        let out = stdout(&o);
        assert_eq!(code(&o), 0, "{m:?}: {out} {}", stderr(&o));
        assert!(out.contains("host sees nested: 0\n"), "{m:?}: a sandbox mount propagated out: {out} {}", stderr(&o));
        assert!(out.contains("sandbox sees late: 0\n"), "{m:?}: a host mount propagated in: {out} {}", stderr(&o));
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// Class 8: the caller's stdin. A file given to read must not be writable back through
/// /proc/self/fd/0 (the reopen checks the file, not the fd's mode).
#[test]
fn a_file_given_as_stdin_cannot_be_written_through_proc() {
    for m in modes() {
        let p = m.writable_file("stdin.txt");
        std::fs::write(&p, "original\n").unwrap();
        let file = std::fs::File::open(&p).unwrap();
        let o = m.run_stdin(
            &[],
            &["/bin/sh", "-c", "cat; echo pwned > /proc/self/fd/0; echo pwned >> /dev/stdin; true"],
            Stdio::from(file),
        );
        assert_eq!(stdout(&o), "original\n", "{m:?}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "original\n", "{m:?}: the caller's stdin file was written");
    }
}

/// Class 7: the init trusts only signals from outside. A process inside can queue a signal
/// to pid 1 claiming si_pid 0 (rt_sigqueueinfo): it must not end the run.
#[test]
fn a_forged_signal_does_not_stop_the_run() {
    for m in modes() {
        let o = m.run(&[], &["/bin/sh", "-c", "probe forge-stop; sleep 1; echo finished"]);
        assert!(
            stdout(&o).contains("forge-stop: ok"),
            "{m:?}: the forged signal was not even sent: {} {}",
            stdout(&o),
            stderr(&o)
        );
        assert!(stdout(&o).contains("finished"), "{m:?}: a forged signal ended the run: {} {}", stdout(&o), stderr(&o));
        assert_eq!(code(&o), 0, "{m:?}");
    }
}

/// Class 7: the command cannot reach the init's rlimits or priority (same uid inside), and
/// cannot widen the CPU affinity that holds --cpus where no cgroup does.
#[test]
fn the_init_is_out_of_reach_and_affinity_cannot_be_widened() {
    for m in modes() {
        let o = m.run(&[], &["probe", "prlimit-init", "renice-init", "setaffinity"]);
        let out = stdout(&o);
        assert!(out.contains("prlimit-init: EPERM") && out.contains("renice-init: EPERM"), "{m:?}: {out}");
        assert!(out.contains("setaffinity: ok"), "{m:?}: affinity refused without --cpus: {out}");
        let (o, s) = m.run_stats(&["--cpus", "1"], &["probe", "setaffinity"]);
        let held_by_affinity = s["limits"]["cpus"]["enforced_by"] == "cpu affinity";
        let want = if held_by_affinity { "setaffinity: EPERM" } else { "setaffinity: ok" };
        assert!(stdout(&o).contains(want), "{m:?}: {} {s}", stdout(&o));
    }
}

/// Class 7: --cpu-time counts every process, also those reaped by nobody (their parent
/// ignores SIGCHLD, so no parent's counts hold their CPU). Where a cgroup counts CPU the run
/// must be stopped; where none does, the record must say the limit is sampled and misses them.
#[test]
fn cpu_time_counts_processes_reaped_by_nobody() {
    for m in modes() {
        let (o, s) = m.run_stats(
            &["--cpu-time", "1s", "--timeout", "30s"],
            &["/bin/sh", "-c", "trap '' CHLD; for i in $(seq 12); do probe spin=250; done; echo finished"],
        );
        let rec = &s["limits"]["cpu_time_s"];
        if rec["enforced_by"].as_str().unwrap_or("").starts_with("cgroup") {
            assert_eq!(s["status"], "cpu_time", "{m:?}: 3 s of CPU under --cpu-time 1s: {s}");
            assert_eq!(code(&o), 121, "{m:?}");
            assert!(!stdout(&o).contains("finished"), "{m:?}");
            assert!(s["cpu_total_s"].as_f64().unwrap() >= 0.9, "{m:?}: CPU not counted: {s}");
        } else {
            assert_eq!(rec["enforced_by"], "watchdog", "{m:?}: {s}");
            assert!(
                rec["trip_detection"].as_str().unwrap_or("").contains("reaped by nobody"),
                "{m:?}: the record does not say what the watchdog misses: {s}"
            );
            skip(
                "cpu_time_counts_processes_reaped_by_nobody",
                &format!("{m:?}: no cgroup counts CPU here; the record says the limit is sampled"),
            );
        }
    }
}

/// Class 7: the OOM killer takes the command's processes before the init (which holds the
/// report): the command runs with oom_score_adj 1000, the init keeps 0.
#[test]
fn the_command_not_the_init_is_the_oom_killers_choice() {
    for m in modes() {
        // The init lowers its score once the command has exec'd; on a loaded machine the
        // command can read it before the init has run again: wait for it (up to 10 s).
        let script = "cat /proc/self/oom_score_adj; for i in $(seq 1000); do [ \"$(cat /proc/1/oom_score_adj)\" = 0 ] && break; sleep 0.01; done; cat /proc/1/oom_score_adj";
        let o = m.run(&[], &["/bin/sh", "-c", script]);
        assert_eq!(stdout(&o), "1000\n0\n", "{m:?}: {}", stderr(&o));
    }
}

/// Class 7: memory held where no RSS shows it (a memfd written, never mapped) still counts
/// against --memory when the watchdog holds it (no cgroup).
#[test]
fn memory_in_a_memfd_counts_against_the_limit() {
    for m in modes() {
        let (o, s) =
            m.run_stats(&["--memory", "64M", "--timeout", "30s"], &["/bin/sh", "-c", "probe memfd=160; echo held"]);
        if s["limits"]["memory"]["enforced_by"] == "watchdog" {
            assert_eq!(s["status"], "oom", "{m:?}: 160 MB in a memfd under --memory 64M: {} {s}", stdout(&o));
            assert!(!stdout(&o).contains("held"), "{m:?}");
        } else {
            // A memory cgroup charges the memfd's pages to the sandbox: it is killed, or (with
            // swap) the pages go to swap and the peak shows them.
            assert!(s["status"] == "oom" || s["memory_peak_bytes"].as_u64().unwrap() >= 60 << 20, "{m:?}: {s}");
        }
    }
}

fn sha256_hex(p: &Path) -> String {
    let o = std::process::Command::new("sha256sum").arg(p).output().unwrap();
    stdout(&o).split_whitespace().next().unwrap().to_string()
}

/// Every file under `dir` whose content contains `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let o = std::process::Command::new("grep").args(["-rlsa", needle]).arg(dir).output().unwrap();
    stdout(&o).lines().map(String::from).collect()
}

/// `polysandbox import` as `m`, with a timeout (a FIFO must not hang it).
fn import_as(m: Mode, store: &Path, src: &Path, extra: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new("timeout");
    c.arg("20");
    match m {
        Mode::User if is_root() => {
            let f = fixtures();
            c.args(["setpriv", &format!("--reuid={}", f.uid), &format!("--regid={}", f.gid), "--clear-groups"]);
        }
        _ => {}
    }
    c.arg(&fixtures().bin)
        .args(["import", "--root"])
        .arg(store)
        .arg(src)
        .args(["--tag", "localhost/evil:1"])
        .args(extra);
    c.env("HOME", "/tmp").stdin(Stdio::null()).output().unwrap()
}

/// Class 3: import follows nothing. Image layouts and docker-archives (as directories and as
/// tar files) whose members are symlinks to a host file, FIFOs or devices: each is refused in
/// one line, the host file's content never lands in the store, nothing hangs, nothing is left.
#[test]
fn import_never_reads_a_host_file_through_a_member() {
    let f = fixtures();
    // A secret only root can read (as root, the import could read it); as the test user, one
    // of its own, 0600.
    for m in modes() {
        let secret_text = format!("host-secret-{}-{}", std::process::id(), unique());
        let secret = m.writable_file("secret");
        std::fs::write(&secret, &secret_text).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A real layer, to point a manifest at.
        let layer_dir = m.owned_dir("layer-src");
        std::fs::write(layer_dir.join("hello"), "hi\n").unwrap();
        let layer = f.dir.join(format!("layer-{}.tar", unique()));
        assert!(std::process::Command::new("tar")
            .arg("-C")
            .arg(&layer_dir)
            .arg("-cf")
            .arg(&layer)
            .arg("hello")
            .status()
            .unwrap()
            .success());
        let layer_hex = sha256_hex(&layer);
        let config = format!(
            r#"{{"architecture":"amd64","os":"linux","rootfs":{{"type":"layers","diff_ids":["sha256:{layer_hex}"]}},"config":{{}}}}"#
        );
        let mut cases: Vec<(String, std::path::PathBuf)> = Vec::new();
        // docker-archive directories: config, layer, manifest.json as symlink / FIFO / device.
        for (what, member) in [
            ("config-symlink", "config.json"),
            ("layer-symlink", "layer.tar"),
            ("manifest-symlink", "manifest.json"),
            ("layer-fifo", "layer.tar"),
            ("layer-zero", "layer.tar"),
            ("layer-dotdot", ""),
        ] {
            let d = m.owned_dir(&format!("docker-{what}"));
            std::fs::write(d.join("config.json"), &config).unwrap();
            std::fs::copy(&layer, d.join("layer.tar")).unwrap();
            std::fs::write(
                d.join("manifest.json"),
                r#"[{"Config":"config.json","RepoTags":["localhost/evil:1"],"Layers":["layer.tar"]}]"#,
            )
            .unwrap();
            let p = d.join(member);
            match what {
                "layer-fifo" => {
                    std::fs::remove_file(&p).unwrap();
                    nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
                }
                "layer-zero" => {
                    std::fs::remove_file(&p).unwrap();
                    std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
                }
                "layer-dotdot" => {
                    std::fs::write(d.join("manifest.json"), format!(r#"[{{"Config":"config.json","RepoTags":["localhost/evil:1"],"Layers":["../../../../../..{}"]}}]"#, secret.display())).unwrap();
                }
                _ => {
                    std::fs::remove_file(&p).unwrap();
                    std::os::unix::fs::symlink(&secret, &p).unwrap();
                }
            }
            if m == Mode::User && is_root() {
                std::process::Command::new("chown")
                    .args(["-hR", &format!("{}:{}", f.uid, f.gid)])
                    .arg(&d)
                    .status()
                    .unwrap();
            }
            cases.push((format!("docker dir {what}"), d));
        }
        // An OCI layout whose blob is a symlink to the secret.
        {
            let d = m.owned_dir("layout-symlink");
            std::fs::create_dir_all(d.join("blobs/sha256")).unwrap();
            std::fs::write(d.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
            let cfg_path = f.dir.join(format!("cfg-{}", unique()));
            std::fs::write(&cfg_path, &config).unwrap();
            let cfg_hex = sha256_hex(&cfg_path);
            std::fs::copy(&cfg_path, d.join("blobs/sha256").join(&cfg_hex)).unwrap();
            // The layer blob: a symlink, named by the digest of the secret (so only reading it
            // could tell).
            let secret_hex = sha256_hex(&secret);
            std::os::unix::fs::symlink(&secret, d.join("blobs/sha256").join(&secret_hex)).unwrap();
            let manifest = format!(
                r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:{cfg_hex}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:{secret_hex}","size":{}}}]}}"#,
                config.len(),
                secret_text.len()
            );
            let mpath = f.dir.join(format!("man-{}", unique()));
            std::fs::write(&mpath, &manifest).unwrap();
            let mhex = sha256_hex(&mpath);
            std::fs::copy(&mpath, d.join("blobs/sha256").join(&mhex)).unwrap();
            std::fs::write(d.join("index.json"), format!(r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:{mhex}","size":{}}}]}}"#, manifest.len())).unwrap();
            if m == Mode::User && is_root() {
                std::process::Command::new("chown")
                    .args(["-hR", &format!("{}:{}", f.uid, f.gid)])
                    .arg(&d)
                    .status()
                    .unwrap();
            }
            // The same layout as an oci-archive (a tar file): the symlink travels inside it.
            let tar = f.dir.join(format!("layout-{}.tar", unique()));
            assert!(std::process::Command::new("tar")
                .arg("-C")
                .arg(&d)
                .arg("-cf")
                .arg(&tar)
                .arg(".")
                .status()
                .unwrap()
                .success());
            cases.push(("oci layout, blob symlink".into(), d));
            cases.push(("oci-archive, blob symlink".into(), tar));
        }
        // The docker-archive with a symlinked layer, as a tar file.
        {
            let d = &cases[1].1;
            let tar = f.dir.join(format!("docker-{}.tar", unique()));
            assert!(std::process::Command::new("tar")
                .arg("-C")
                .arg(d)
                .arg("-cf")
                .arg(&tar)
                .arg(".")
                .status()
                .unwrap()
                .success());
            cases.push(("docker-archive, layer symlink".into(), tar));
        }
        for (name, src) in &cases {
            let store = m.owned_dir("import-store");
            let o = import_as(m, &store, src, &[]);
            assert_ne!(code(&o), 0, "{m:?} {name}: imported: {}", stdout(&o));
            assert_ne!(code(&o), 124, "{m:?} {name}: import hung");
            assert_eq!(stderr(&o).lines().count(), 1, "{m:?} {name}: {}", stderr(&o));
            assert!(
                files_containing(&store, &secret_text).is_empty(),
                "{m:?} {name}: the host file's content is in the store: {:?}",
                files_containing(&store, &secret_text)
            );
            let leftovers: Vec<_> = std::fs::read_dir(store.join("tmp"))
                .map(|d| d.flatten().map(|e| e.file_name()).collect())
                .unwrap_or_default();
            assert!(leftovers.is_empty(), "{m:?} {name}: left in tmp: {leftovers:?}");
            let _ = std::fs::remove_dir_all(&store);
        }
        // The honest version of the docker-archive imports (the test is not refusing everything).
        let d = m.owned_dir("docker-ok");
        std::fs::write(d.join("config.json"), &config).unwrap();
        std::fs::copy(&layer, d.join("layer.tar")).unwrap();
        std::fs::write(
            d.join("manifest.json"),
            r#"[{"Config":"config.json","RepoTags":["localhost/evil:1"],"Layers":["layer.tar"]}]"#,
        )
        .unwrap();
        if m == Mode::User && is_root() {
            std::process::Command::new("chown")
                .args(["-hR", &format!("{}:{}", f.uid, f.gid)])
                .arg(&d)
                .status()
                .unwrap();
        }
        let store = m.owned_dir("import-store-ok");
        let o = import_as(m, &store, &d, &[]);
        assert_eq!(code(&o), 0, "{m:?}: {}", stderr(&o));
    }
}

/// Class 2: the store gives other users nothing. As root, an image with a setuid-root binary
/// and a device node: the store's root is 0700, so another user cannot reach either; a store
/// meant for other users (`--shared`) is readable, and holds neither the setuid bit nor the
/// device node (and says so).
#[test]
fn the_store_hands_no_privilege_to_other_users() {
    if !is_root() {
        skip(
            "the_store_hands_no_privilege_to_other_users",
            "needs root to build an image with a setuid-root file and a device node",
        );
        return;
    }
    let f = fixtures();
    let src = Mode::Root.owned_dir("priv-image");
    std::fs::copy(f.dir.join("probe"), src.join("su")).unwrap();
    std::fs::set_permissions(src.join("su"), std::fs::Permissions::from_mode(0o4755)).unwrap();
    nix::sys::stat::mknod(
        &src.join("mem"),
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 1),
    )
    .unwrap();
    std::fs::create_dir(src.join("wide")).unwrap();
    std::fs::set_permissions(src.join("wide"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let tar = f.dir.join(format!("priv-{}.tar", unique()));
    assert!(std::process::Command::new("tar")
        .arg("-C")
        .arg(&src)
        .args(["--numeric-owner", "-cf"])
        .arg(&tar)
        .arg(".")
        .status()
        .unwrap()
        .success());
    for shared in [false, true] {
        let store = f.dir.join(format!("store-{}-{shared}", unique()));
        let o = import_as(Mode::Root, &store, &tar, if shared { &["--shared"] } else { &[] });
        assert_eq!(code(&o), 0, "shared {shared}: {}", stderr(&o));
        let root_mode = std::fs::metadata(&store).unwrap().mode() & 0o777;
        // The image's tree: a one-layer image's is its chain's (chains/), an older layout's
        // its own (rootfs/).
        let rootfs = ["chains", "rootfs"]
            .iter()
            .filter_map(|d| std::fs::read_dir(store.join(d)).ok())
            .flat_map(|r| r.flatten().map(|e| e.path()))
            .find(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .unwrap();
        let as_user = |cmd: &str| {
            std::process::Command::new("setpriv")
                .args([
                    format!("--reuid={}", f.uid),
                    format!("--regid={}", f.gid),
                    "--clear-groups".into(),
                    "sh".into(),
                    "-c".into(),
                    cmd.into(),
                ])
                .output()
                .unwrap()
        };
        let o = as_user(&format!(
            "ls -ln {}/su {}/mem 2>&1; echo x > {}/wide/planted 2>&1; echo rc=$?",
            rootfs.display(),
            rootfs.display(),
            rootfs.display()
        ));
        let out = stdout(&o);
        if shared {
            assert_eq!(root_mode, 0o755, "a shared store must be readable");
            assert!(out.contains("-rwxr-xr-x") && !out.contains("rws"), "shared: the setuid bit survived: {out}");
            assert!(!rootfs.join("mem").exists(), "shared: the device node was made");
            assert!(store.join("SHARED").is_file(), "shared: not marked");
            assert!(out.contains("rc=") && !out.contains("rc=0"), "shared: another user wrote into an image: {out}");
            assert!(!rootfs.join("wide/planted").exists(), "shared: another user wrote into an image");
        } else {
            assert_eq!(root_mode, 0o700, "a private store must be its owner's alone");
            assert!(
                out.contains("Permission denied") && out.contains("rc=") && !out.contains("rc=0"),
                "private: another user reached the image: {out}"
            );
            // The image itself is kept as it is (setuid inside works through the user namespace).
            assert!(
                std::fs::symlink_metadata(rootfs.join("su")).unwrap().mode() & 0o4000 != 0,
                "private: the setuid bit was stripped"
            );
        }
        let _ = std::fs::remove_dir_all(&store);
    }
}

/// Starts `polysandbox run` in `m` in the background and waits for the first line of its
/// stdout (what its probe holds); the run goes on until its probe's 5 s are up.
fn holding(m: Mode, opts: &[&str], cmd: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut c = m.command();
    c.arg("run").arg("--rootfs").arg(m.rootfs()).arg("--timeout=60s").args(opts).arg("--").args(cmd);
    let mut child = c.stdout(Stdio::piped()).stderr(Stdio::inherit()).stdin(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    (child, line.trim().to_string())
}

/// Class: budgets the kernel keeps per host user (pipe buffers, epoll watches, descriptors in
/// flight) or per user and the creator of each user namespace above (inotify instances and
/// watches, message queues, pending signals). As root each sandbox runs as host ids of its own
/// (a slot of the range) and creates its user namespace as them: a sandbox that spends such a
/// budget takes it neither from another sandbox nor from the host's root. (Before, every
/// root-run sandbox was host uid 1610612736 in a namespace root created: one took the next
/// one's pipe buffers, and all of root's inotify instances.) Rootless the budgets are the
/// caller's own; one sandbox takes at most 32 of its inotify instances.
#[test]
fn kernel_budgets_kept_per_user_are_each_sandboxs_own() {
    for m in modes() {
        if m == Mode::Root {
            // Past pipe-user-pages-soft (1024 pipes of 16 pages): a user over it gets one-page
            // pipes. Another sandbox's new pipe must still be the full 64 KiB.
            let (mut a, held) = holding(m, &["--nofile=4096"], &["probe", "pipes=1100"]);
            assert_eq!(held, "pipes: 1100", "{m:?}");
            let o = m.run(&[], &["probe", "pipesize"]);
            let _ = a.wait();
            assert_eq!(stdout(&o).trim(), "pipesize: 65536", "{m:?}: another sandbox's pipe buffers: {}", stderr(&o));

            // Two sandboxes at once: each its own ids, and its user namespace owned by them.
            let (mut a, first) = holding(m, &[], &["sh", "-c", "cat /proc/self/uid_map; sleep 5"]);
            let o = m.run(&[], &["cat", "/proc/self/uid_map"]);
            let _ = a.wait();
            let ids = |s: &str| s.split_whitespace().filter_map(|w| w.parse::<u64>().ok()).collect::<Vec<_>>();
            let (a_ids, b_ids) = (ids(&first), ids(&stdout(&o)));
            assert!(a_ids.len() == 3 && b_ids.len() == 3, "{first} / {}", stdout(&o));
            assert_ne!(a_ids[1], b_ids[1], "{m:?}: two sandboxes at once share host ids");

            // inotify: every instance the sandbox can make is charged to its own ids, none to
            // the host's root, which can still make one while the sandbox holds them all.
            let (mut a, held) = holding(m, &[], &["probe", "inotify=100000"]);
            let n: u64 = held.trim_start_matches("inotify: ").parse().unwrap();
            // SAFETY: a plain syscall; the fd is closed at once.
            let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
            let err = std::io::Error::last_os_error();
            let _ = a.wait();
            assert!(fd >= 0, "{m:?}: the sandbox ({n} instances) left the host's root none: {err}");
            // SAFETY: our own fd.
            unsafe { libc::close(fd) };
        } else {
            let (mut a, held) = holding(m, &[], &["probe", "inotify=100000"]);
            let _ = a.wait();
            let n: u64 = held.trim_start_matches("inotify: ").parse().unwrap();
            assert!(n <= 32, "{m:?}: one sandbox took {n} of the caller's inotify instances");
        }
    }
}

/// Class: kernel memory no process maps. SysV message queues hold at most 32 x 64 KiB in a
/// sandbox's IPC namespace (the kernel's defaults allow 32000 queues of 16 KiB: 500 MiB that,
/// rootless, no --memory saw), and what they hold counts against the rootless --memory watch.
#[test]
fn message_queues_are_capped_and_counted() {
    for m in modes() {
        let (mut a, held) = holding(m, &[], &["probe", "msgq=64"]);
        let _ = a.wait();
        let bytes: u64 = held.rsplit(", ").next().unwrap().trim_end_matches(" bytes").parse().unwrap();
        assert!(bytes <= 2 << 20, "{m:?}: {held}");
    }
}

/// Class: writes outside the disk limit. /dev/shm is a directory of the writable layer, so
/// what the command keeps there counts against --disk; /dev itself takes no writes.
#[test]
fn dev_shm_counts_against_the_disk_limit_and_dev_is_read_only() {
    for m in modes() {
        let (o, s) = m.run_stats(
            &["--disk=4M"],
            &["sh", "-c", "dd if=/dev/zero of=/dev/shm/fill bs=1M count=16 2>/dev/null; touch /dev/planted; echo done"],
        );
        assert!(stdout(&o).contains("done"), "{m:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("Read-only file system"), "{m:?}: /dev took a write: {}", stderr(&o));
        assert_eq!(s["disk_limit_reached"], true, "{m:?}: /dev/shm outside --disk: {s}");
        assert!(s["disk_used_bytes"].as_u64().unwrap() <= 4 << 20, "{m:?}: {s}");
    }
}

/// Class: the caller's stdout as a file. The command gets a pipe, never the caller's file: it
/// can neither read back what the file held nor grow it with fallocate past --disk.
#[test]
fn a_file_given_as_stdout_is_written_by_polysandbox_only() {
    for m in modes() {
        let p = m.writable_file("stdout.txt");
        std::fs::write(&p, "SECRET-BEFORE\n").unwrap();
        let out = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        let mut c = m.command();
        c.arg("run").arg("--rootfs").arg(m.rootfs()).args(["--timeout=60s", "--disk=1M", "--"]);
        c.args(["probe", "stdout-file"]).stdout(Stdio::from(out)).stdin(Stdio::null());
        let o = c.output().unwrap();
        let err = stderr(&o);
        assert!(!err.contains("SECRET-BEFORE"), "{m:?}: the command read the caller's file: {err}");
        assert!(!err.contains("fallocate: ok"), "{m:?}: the command grew the caller's file: {err}");
        assert!(std::fs::metadata(&p).unwrap().len() < 1 << 20, "{m:?}: {err}");
    }
}

/// Class: the supervisor's own record. Its file is made, with room for the record, before the
/// command starts: output that fills the filesystem it is on cannot keep the record from being
/// written. (Before, the run failed with ENOSPC and left an empty record.)
#[test]
fn output_filling_the_records_filesystem_leaves_the_record_whole() {
    if !is_root() {
        skip("the record on a full filesystem", "mounting a small tmpfs needs root");
        return;
    }
    for m in modes() {
        let dir = m.owned_dir("small-fs");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m,mode=0777", "psb-small"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(mounted.success());
        let log = dir.join("out.log");
        let stats = dir.join("usage.json");
        std::fs::write(&log, "").unwrap();
        std::fs::write(&stats, "").unwrap();
        if m == Mode::User {
            let f = fixtures();
            for p in [&log, &stats] {
                std::os::unix::fs::chown(p, Some(f.uid), Some(f.gid)).unwrap();
            }
        }
        let out = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
        let mut c = m.command();
        c.arg("run")
            .arg("--rootfs")
            .arg(m.rootfs())
            .arg("--timeout=60s")
            .arg(format!("--stats-json={}", stats.display()));
        c.args(["--", "sh", "-c", "yes 0123456789abcdef | head -c 4000000"])
            .stdout(Stdio::from(out))
            .stdin(Stdio::null());
        let o = c.output().unwrap();
        let record = std::fs::read_to_string(&stats).unwrap_or_default();
        let _ = std::process::Command::new("umount").arg(&dir).status();
        let v: serde_json::Value = serde_json::from_str(&record)
            .unwrap_or_else(|e| panic!("{m:?}: no whole record ({e}): {record:?}; {}", stderr(&o)));
        assert_eq!(v["status"], "exited", "{m:?}: {v}");
        assert_ne!(code(&o), 125, "{m:?}: {}", stderr(&o));
    }
}

/// Class: the caller's own objects reached from a sandbox, here its binary. The init is a fork
/// of polysandbox, so a command exec'd straight from it would be exec'd by a process whose
/// image is the host binary: a script naming `/proc/self/exe` as its interpreter then ran the
/// host's polysandbox inside the sandbox, where /proc/PID/exe reached the file (rootless, the
/// caller's own: `chmod 4755` made it setuid for every local user). The command goes through
/// a private sealed trampoline; the binary, owned by the caller here, runs in no sandbox and
/// keeps its mode.
#[test]
fn the_host_binary_is_no_process_image_in_the_sandbox() {
    let f = fixtures();
    for m in modes() {
        let dir = m.owned_dir("own-binary");
        let bin = dir.join("polysandbox");
        std::fs::copy(&f.bin, &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        if m == Mode::User && is_root() {
            std::os::unix::fs::chown(&bin, Some(f.uid), Some(f.gid)).unwrap();
        }
        let name = format!("self-exe-{}", unique());
        let script = m.rootfs().join("bin").join(&name);
        std::fs::write(&script, "#!/proc/self/exe --version\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The script as the command itself (exec'd by the init's child), and from a shell
        // while the others look for a process image to change.
        let run = |cmd: &[&str]| {
            m.command_of(&bin)
                .args(["run", "--rootfs"])
                .arg(m.rootfs())
                .args(["--timeout=30s", "--"])
                .args(cmd)
                .stdin(Stdio::null())
                .output()
                .unwrap()
        };
        let direct = run(&[&format!("/bin/{name}")]);
        let attack = format!(
            "{name} & for i in 1 2 3 4 5; do for p in /proc/[0-9]*; do chmod 4755 $p/exe 2>/dev/null; done; done; \
             wait; echo done"
        );
        let shell = run(&["sh", "-c", &attack]);
        let _ = std::fs::remove_file(&script);
        let out = stdout(&direct);
        assert!(!out.contains("polysandbox 0."), "{m:?}: the host binary ran inside the sandbox: {out}");
        assert!(stdout(&shell).contains("done"), "{m:?}: {}", stderr(&shell));
        let mode = std::fs::metadata(&bin).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o755, "{m:?}: the caller's binary became {mode:o}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Class: budgets the kernel keeps for the whole host, which no cgroup or rlimit bounds per
/// sandbox (docs/threat-model.md's census). Native AIO contexts (`fs.aio-nr`, one counter for
/// the host: one sandbox took all 65536 events) are refused as a kernel without AIO refuses
/// them, whatever the seccomp profile; pseudo-terminals (the pool every devpts instance but
/// the host's shares) are at most 32 a sandbox, and another sandbox still gets one.
#[test]
fn budgets_the_kernel_keeps_for_the_whole_host_are_denied_or_capped() {
    for m in modes() {
        for seccomp in [&[][..], &["--security-opt=seccomp=unconfined"][..]] {
            let (mut a, held) = holding(m, seccomp, &["probe", "aio=64"]);
            let _ = a.wait();
            assert_eq!(held, "aio: 0, ENOSYS", "{m:?} {seccomp:?}");
        }
        let (mut a, held) = holding(m, &[], &["probe", "ptys=4000"]);
        let o = m.run(&[], &["probe", "ptys=1"]);
        let _ = a.wait();
        assert_eq!(held, "ptys: 32", "{m:?}");
        assert_eq!(stdout(&o).trim(), "ptys: 1", "{m:?}: another sandbox got no pty: {}", stderr(&o));
    }
}

/// Class: kernel memory a cgroup v1 counts apart. Socket buffers are charged to the memory
/// cgroup's TCP counter only once its limit is written: unwritten, a sandbox at --memory 32M
/// held 600 MiB of TCP buffers on its own loopback, peak 0, from the memory every TCP socket
/// of the host shares. Now they are limited, and the peak counts them.
#[test]
fn tcp_buffers_count_against_the_memory_limit() {
    for m in modes() {
        let (o, s) = m.run_stats(&["--memory=32M"], &["probe", "tcp=600"]);
        let held: u64 =
            stdout(&o).trim().trim_start_matches("tcp: ").trim_end_matches(" bytes").parse().unwrap_or(u64::MAX);
        let peak = s["memory_peak_bytes"].as_u64();
        if s["cgroup"].as_str() != Some("cgroup v1") {
            skip("TCP buffers against a v1 memory cgroup", &format!("{m:?}: this run's cgroup is {}", s["cgroup"]));
            continue;
        }
        assert!(peak.is_some_and(|p| p >= held), "{m:?}: {held} bytes held, peak {peak:?}");
    }
}

/// Class: a sandbox that cannot be ended. A fork bomb at its pids limit under a CPU quota: its
/// killed processes cannot finish exiting while the quota throttles them, and the init that
/// ends them shared their group. The quota is lifted before anything is killed (by the
/// supervisor at a timeout, by the init when the supervisor is gone), and the v1 init leaves
/// the throttled group once the command runs: the run ends within its timeout and a grace,
/// and a supervisor killed outright (as eval's children are when eval dies) leaves nothing.
#[test]
fn a_throttled_fork_bomb_ends_on_time_and_with_its_supervisor() {
    for m in modes() {
        let marker = format!("forkbomb-{}-{}", std::process::id(), unique());
        let bomb = format!("f(){{ f & f; }}; f 2>/dev/null & exec sleep 600; : {marker}");
        let opts = ["--cpus=0.01", "--pids=1500", "--memory=1G"];
        let t = std::time::Instant::now();
        let (_, s) = m.run_stats(&[&opts[..], &["--timeout=3s"]].concat(), &["sh", "-c", &bomb]);
        assert_eq!(s["status"], "timeout", "{m:?}: {s}");
        let took = t.elapsed().as_secs();
        assert!(took < 3 + 20, "{m:?}: a 3 s timeout ended the fork bomb after {took} s");
        let gone = eventually(20, || processes_with(&marker).is_empty());
        let ps = |pids: Vec<u32>| -> Vec<String> {
            pids.iter().take(5).filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok()).collect()
        };
        assert!(gone, "{m:?}: the fork bomb outlived its run: {:?}", ps(processes_with(&marker)));

        let mut c = m.command();
        c.args(["run", "--rootfs"]).arg(m.rootfs()).args(opts).args(["--timeout=600s", "--", "sh", "-c", &bomb]);
        let mut run = c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let started = eventually(30, || processes_with(&marker).len() > 20);
        std::thread::sleep(std::time::Duration::from_secs(1));
        // SAFETY: plain kill(2) of our own child (polysandbox itself, or setpriv exec'd into it).
        unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
        let _ = run.wait();
        assert!(started, "{m:?}: the fork bomb did not start");
        let left = || processes_with(&marker).len();
        assert!(eventually(20, || left() == 0), "{m:?}: {} processes outlived their killed supervisor", left());
    }
}

/// Class: the caller's own objects handed to a sandbox by descriptor. Rootless, the sandbox's
/// root is the caller: a terminal given as stdin, stdout or stderr (without -t) was the
/// caller's /dev/pts/N, which the command left 0666 for any local user to read and write. Such
/// descriptors are relayed through pipes now, as podman relays them; input still arrives.
#[test]
fn the_callers_terminal_is_relayed_not_handed_in() {
    use std::os::fd::FromRawFd;
    let f = fixtures();
    for m in modes() {
        // SAFETY: posix_openpt and friends on a new pty of our own.
        let (master, slave_path) = unsafe {
            let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(fd >= 0 && libc::grantpt(fd) == 0 && libc::unlockpt(fd) == 0);
            let name = std::ffi::CStr::from_ptr(libc::ptsname(fd)).to_string_lossy().into_owned();
            (std::fs::File::from_raw_fd(fd), name)
        };
        if m == Mode::User && is_root() {
            std::os::unix::fs::chown(&slave_path, Some(f.uid), Some(f.gid)).unwrap();
        }
        std::fs::set_permissions(&slave_path, std::fs::Permissions::from_mode(0o620)).unwrap();
        let tty = || std::fs::OpenOptions::new().read(true).write(true).open(&slave_path).unwrap();
        use std::io::Write;
        (&master).write_all(b"typed-line\n").unwrap();
        let o = m
            .command()
            .args(["run", "--rootfs"])
            .arg(m.rootfs())
            .args(["--timeout=20s", "--", "sh", "-c"])
            .arg("for fd in 0 1 2; do chmod 666 /proc/self/fd/$fd 2>/dev/null; done; head -n1; echo done >&2")
            .stdin(tty())
            .stdout(Stdio::piped())
            .stderr(tty())
            .output()
            .unwrap();
        let mode = std::fs::metadata(&slave_path).unwrap().mode() & 0o777;
        assert!(stdout(&o).contains("typed-line"), "{m:?}: the input did not arrive: {}", stdout(&o));
        assert_eq!(mode, 0o620, "{m:?}: the caller's terminal became {mode:o}");
    }
}

/// The tests that make the host short of a budget it shares, one at a time: each would see the
/// other's shortage in what it checks.
static HOST_SHORT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Class: the host running short of a budget it shares while a run goes (another process took
/// it: the file table, AIO events, ptys, processes, memory). What the run met then may be the
/// host's doing: its record names the budget, and eval makes it an error to rerun. Tried with
/// the one such budget a test may take from the host without disturbing the tests running
/// beside it: AIO events, which no sandbox may use (fs.aio-max-nr lowered to what is in use).
#[test]
fn a_run_during_which_the_host_ran_short_says_so() {
    if !is_root() {
        skip("the host's AIO budget exhausted during a run", "fs.aio-max-nr needs root");
        return;
    }
    let _alone = HOST_SHORT.lock().unwrap_or_else(|e| e.into_inner());
    let max = std::fs::read_to_string("/proc/sys/fs/aio-max-nr").unwrap();
    let mut ctx: libc::c_ulong = 0;
    // SAFETY: io_setup with a context for the kernel to fill; destroyed below.
    assert_eq!(unsafe { libc::syscall(libc::SYS_io_setup, 1, &mut ctx) }, 0);
    let used = std::fs::read_to_string("/proc/sys/fs/aio-nr").unwrap();
    struct Restore(String);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = std::fs::write("/proc/sys/fs/aio-max-nr", &self.0);
        }
    }
    let restore = Restore(max);
    std::fs::write("/proc/sys/fs/aio-max-nr", used.trim()).unwrap();
    let short = Mode::Root.run_stats(&[], &["true"]).1;
    drop(restore);
    // SAFETY: the context made above.
    unsafe { libc::syscall(libc::SYS_io_destroy, ctx) };
    let healthy = Mode::Root.run_stats(&[], &["true"]).1;
    assert!(
        short["host_short"].as_array().is_some_and(|a| a.iter().any(|n| n.as_str().unwrap().contains("AIO"))),
        "{short}"
    );
    assert!(healthy.get("host_short").is_none(), "{healthy}");
}

/// Class: a sandbox that cannot be ended, through its output. The supervisor relays the
/// command's output (counted, to a file, rootless to the caller's terminal); it wrote each
/// chunk with a blocking write, so a reader of ours that stopped reading (a paused pager, a
/// FIFO's reader) stopped its wait loop, and with it the timeout, the signals and the host
/// watch: a 2 s timeout ran for as long as the reader slept (the red team's). The relay waits
/// for room by poll now; the command waits meanwhile, as on a full pipe.
#[test]
fn a_reader_that_stops_reading_does_not_stop_the_timeout() {
    for m in modes() {
        let marker = format!("stalled-{}-{}", std::process::id(), unique());
        let stats = m.writable_file("stalled.json");
        let mut c = m.command();
        c.args(["run", "--rootfs"]).arg(m.rootfs()).args(["--output-limit=100M", "--timeout=2s"]);
        c.arg(format!("--stats-json={}", stats.display()));
        c.args(["--", "sh", "-c", &format!("probe spin=60 & yes; : {marker}")]);
        let mut run = c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        // Nobody reads: the pipe fills, then the relay has to wait.
        // (The supervisor and the init, which waits for it to close, carry the marker too.)
        let command = |p: &u32| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sh");
        let inside = || processes_with(&marker).iter().filter(|p| command(p)).count();
        let started = eventually(20, || inside() > 0);
        let ended = started && eventually(20, || inside() == 0);
        let mut out = run.stdout.take().unwrap();
        std::io::copy(&mut out, &mut std::io::sink()).unwrap();
        let _ = run.wait();
        assert!(started, "{m:?}: the command did not start");
        assert!(ended, "{m:?}: the sandbox ran on while its output waited for a reader");
        let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(s["status"], "timeout", "{m:?}: {s}");
    }
}

/// The host's file table made short for as long as it lives, and put back however the test
/// ends: a few shells hold about [`FileTableShort::HELD`] files open between them, and
/// fs.file-max is lowered so that they and what the host has open are 97% of it. The watch
/// and eval count 95% short; the 3% left (about 1500 files) is room for the host's other
/// processes (root's are exempt from fs.file-max anyway), where lowering it to what is open
/// would refuse them every file. The shells end when their stdin closes: with this process,
/// whatever becomes of it.
struct FileTableShort {
    max: String,
    holders: Vec<std::process::Child>,
}

impl FileTableShort {
    const HELD: usize = 48_000;
    /// Files per holder: under the hard RLIMIT_NOFILE of most hosts.
    const EACH: usize = 16_000;

    fn new() -> FileTableShort {
        let max = std::fs::read_to_string("/proc/sys/fs/file-max").unwrap();
        let mut short = FileTableShort { max, holders: Vec::new() };
        let script = format!(
            "ulimit -n $(ulimit -Hn); for ((i = 0; i < {}; i++)); do exec {{fd}}</dev/null || break; done; echo held; read -r _",
            Self::EACH
        );
        for _ in 0..Self::HELD / Self::EACH {
            let mut h = std::process::Command::new("bash")
                .args(["-c", &script])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(h.stdout.take().unwrap()), &mut line).unwrap();
            assert_eq!(line.trim(), "held");
            short.holders.push(h);
        }
        let nr = std::fs::read_to_string("/proc/sys/fs/file-nr").unwrap();
        let used: f64 = nr.split_whitespace().next().unwrap().parse().unwrap();
        let was: f64 = short.max.trim().parse().unwrap_or(f64::MAX);
        let lowered = (used / 0.97).ceil().min(was) as u64;
        std::fs::write("/proc/sys/fs/file-max", lowered.to_string()).unwrap();
        short
    }
}

impl Drop for FileTableShort {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/fs/file-max", self.max.trim());
        for mut h in self.holders.drain(..) {
            drop(h.stdin.take());
            let _ = h.wait();
        }
    }
}

/// Class: a run graded while the host is short of a budget it shares. Correct solutions were
/// `unresolved` while another process held the file table (rustc could not install its Ctrl-C
/// handler, jest could not write its cache), and an `error` after the prediction was charged to
/// it when the calibration said gold passes here. eval now checks the host's budgets before
/// each attempt, waits while one is exhausted (within POLYSANDBOX_HOST_WAIT, saying so once),
/// and checks again after: a run the host was short for is a host fault, an `error` retried
/// and never arbitrated, whatever the runner printed (a correct prediction here, with a
/// calibration saying gold passes); results.jsonl keeps no verdict of it, and `--resume` on a
/// healthy host grades it. As root and as the unprivileged user (root lowers fs.file-max).
#[test]
fn a_run_the_host_was_short_for_is_an_error_never_a_verdict() {
    use common::eval::{data, eval_env, polyglot, USER_STORE};
    if !is_root() {
        skip("eval while the host's file table is short", "fs.file-max needs root");
        return;
    }
    let _alone = HOST_SHORT.lock().unwrap_or_else(|e| e.into_inner());
    for m in modes() {
        // A calibration made while the host is healthy: gold passes here.
        let root = m.owned_dir("host-fault");
        let cal = root.join("calibration.json");
        let mut c = m.command();
        c.args(["calibrate", &polyglot(), "-t", "python/sum-two", "-o"]).arg(root.join("cal"));
        c.arg("--calibration").arg(&cal);
        if m == Mode::User {
            c.args(["--root", USER_STORE]);
        }
        let o = c.stdin(Stdio::null()).output().unwrap();
        let c: Option<serde_json::Value> =
            std::fs::read_to_string(&cal).ok().and_then(|t| serde_json::from_str(&t).ok());
        if !c.is_some_and(|c| c["instances"]["python/sum-two"]["gold_passes"] == true) {
            let last = stderr(&o).lines().last().unwrap_or("").to_string();
            skip(
                &format!("{m:?}: eval while the host's file table is short"),
                &format!("gold does not pass here: {last}"),
            );
            continue;
        }
        let good = data().join("predictions/good-patch.jsonl").display().to_string();
        let cal = cal.display().to_string();
        let args = [polyglot(), "-t".into(), "python/sum-two".into(), "-p".into(), good, "--calibration".into(), cal];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let dir = root.join("out");
        let short = {
            let _short = FileTableShort::new();
            eval_env(m, &dir, &args, &[("POLYSANDBOX_HOST_WAIT", "1s")])
        };
        let err = stderr(&short.out);
        let results = short.results();
        assert_eq!(results.len(), 1, "{m:?}: {err}");
        let r = &results[0];
        assert_eq!(r["verdict"], "error", "{m:?}: never a verdict while the host is short: {r}\n{err}");
        assert_eq!(r["host_fault"], true, "{m:?}: {r}");
        let why = r["reason"].as_str().unwrap_or("");
        assert!(
            why.contains("file table") && why.contains("rerun") && !why.contains("prediction's doing"),
            "{m:?}: {r}"
        );
        assert_eq!(r["attempts"], 2, "{m:?}: a host fault is retried: {r}");
        assert!(
            err.lines().any(|l| l.contains("waiting for the host") && l.contains("file table")),
            "{m:?}: eval waited for the host, and said what for: {err}"
        );
        assert_eq!(code(&short.out), 3, "{m:?}: an error remains: {err}");
        assert!(short.report()["rerun_ids"].as_array().is_some_and(|a| a.iter().any(|i| i == "python/sum-two")));
        // The host healthy again: the error is run again and graded.
        let healthy = eval_env(m, &dir, &[args.as_slice(), &["--resume"]].concat(), &[]);
        let r = healthy.result("python/sum-two");
        assert_eq!(r["verdict"], "resolved", "{m:?}: {r}\n{}", stderr(&healthy.out));
        assert!(r.get("host_fault").is_none(), "{m:?}: {r}");
    }
}

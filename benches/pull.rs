//! Cold pull+unpack of the python toolchain image (python3 + pytest from Debian 12, built by
//! `rootfs/build.sh python`) from a local docker-registry, side by side in one run:
//! `polysandbox pull` against `skopeo copy` + `umoci unpack` and against `podman pull`, run by
//! run alternating (A B C A B C ...), each into a fresh directory; then a warm re-pull.
//!
//! The tools write into a tmpfs of the bench's own (private) mount namespace: on this
//! machine's ext4 without a journal, trees deleted by an earlier run cost the next one seconds
//! of kernel time, whichever tool it is; on tmpfs every run starts equal and nothing needs
//! deleting. BENCH_DISK=1 writes to /var/tmp instead.
//!
//! `cargo bench --bench pull` (as root; skopeo, umoci, podman, docker-registry from Debian).
//! Environment: BENCH_RUNS (default 3 per tool), BENCH_DISK, POLYSANDBOX_BIN (a build to time).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn sh(c: &mut Command) {
    let o = c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // POLYSANDBOX_BIN: another build to time (e.g. to compare two builds).
    let bin =
        PathBuf::from(std::env::var_os("POLYSANDBOX_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_polysandbox").into()));
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let work = PathBuf::from(format!("/var/tmp/polysandbox-bench-pull-{}", std::process::id()));
    let trees = work.join("t");
    std::fs::create_dir_all(&trees).unwrap();
    let on_disk = std::env::var_os("BENCH_DISK").is_some();
    if !on_disk {
        // SAFETY: unshare of our own process, single-threaded so far.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNS) }, 0, "unshare (run as root)");
        sh(Command::new("mount").args(["--make-rprivate", "/"]));
        sh(Command::new("mount").args(["-t", "tmpfs", "-o", "size=8g", "bench", trees.to_str().unwrap()]));
    }
    sh(Command::new(root.join("rootfs/build.sh")).arg("python"));
    // A registry with the image, pushed gzip-compressed by skopeo (as from any registry).
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    std::fs::write(work.join("registry.yml"), format!("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}/registry\nhttp:\n  addr: 127.0.0.1:{port}\n", work.display())).unwrap();
    let _reg = Killed(
        Command::new("docker-registry")
            .arg("serve")
            .arg(work.join("registry.yml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(800));
    let store = Command::new(&bin).args(["inspect", "localhost/polysandbox/python:bookworm"]).output().unwrap();
    assert!(store.status.success(), "the python image: rootfs/build.sh python");
    let default_store = if std::env::var_os("POLYSANDBOX_ROOT").is_some() {
        std::env::var("POLYSANDBOX_ROOT").unwrap()
    } else {
        "/var/lib/polysandbox".into()
    };
    let image = format!("127.0.0.1:{port}/bench/python:bookworm");
    // The store keeps layers as files and records: skopeo reads what `save` writes (its
    // uncompressed layers are gzipped on the way into the registry).
    let saved = std::env::temp_dir().join(format!("bench-pull-{}.oci.tar", std::process::id()));
    sh(Command::new(&bin)
        .args(["save", "--root", &default_store, "--format", "oci-archive", "-o"])
        .arg(&saved)
        .arg("localhost/polysandbox/python:bookworm"));
    sh(Command::new("skopeo").args([
        "copy",
        "--quiet",
        "--dest-tls-verify=false",
        &format!("oci-archive:{}:localhost/polysandbox/python:bookworm", saved.display()),
        &format!("docker://{image}"),
    ]));
    let _ = std::fs::remove_file(&saved);
    let inspect =
        Command::new("skopeo").args(["inspect", "--tls-verify=false", &format!("docker://{image}")]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let layers: Vec<String> = v["Layers"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect();
    let gz: u64 = layers
        .iter()
        .map(|d| {
            std::fs::metadata(
                work.join("registry/docker/registry/v2/blobs/sha256").join(&d[7..9]).join(&d[7..]).join("data"),
            )
            .map(|m| m.len())
            .unwrap_or(0)
        })
        .sum();
    println!(
        "image: {image}, {} layer(s), {:.1} MB compressed (gzip); trees on {}",
        layers.len(),
        gz as f64 / 1e6,
        if on_disk { "/var/tmp (ext4)" } else { "tmpfs" }
    );

    type Run = Box<dyn Fn(&Path) -> Command>;
    let mut tools: Vec<(&str, Run)> = Vec::new();
    {
        let (bin, image) = (bin.clone(), image.clone());
        tools.push((
            "polysandbox pull",
            Box::new(move |d: &Path| {
                let mut c = Command::new(&bin);
                c.args(["pull", "-q", "--root"]).arg(d).arg(&image);
                c
            }),
        ));
    }
    if have("skopeo") && have("umoci") {
        let image = image.clone();
        tools.push((
            "skopeo copy + umoci unpack",
            Box::new(move |d: &Path| {
                let mut c = Command::new("sh");
                c.arg("-c").arg(format!(
                    "skopeo copy --quiet --src-tls-verify=false docker://{image} oci:{d}/layout:img && umoci unpack --image {d}/layout:img {d}/bundle >/dev/null",
                    d = d.display()
                ));
                c
            }),
        ));
    }
    if have("podman") {
        let image = image.clone();
        tools.push((
            "podman pull",
            Box::new(move |d: &Path| {
                let mut c = Command::new("podman");
                c.arg("--root").arg(d.join("storage")).arg("--runroot").arg(d.join("run")).args([
                    "--storage-driver",
                    "overlay",
                    "pull",
                    "-q",
                    "--tls-verify=false",
                    &image,
                ]);
                c
            }),
        ));
    } else {
        println!("podman: not installed (apt install podman); left out");
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); tools.len()];
    for run in 0..runs {
        for (i, (name, cmd)) in tools.iter().enumerate() {
            let d = trees.join(format!("t{i}-r{run}"));
            std::fs::create_dir_all(&d).unwrap();
            sh(&mut Command::new("sync"));
            let t = Instant::now();
            let o = cmd(&d).output().unwrap();
            let el = t.elapsed();
            assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
            times[i].push(el);
        }
    }
    println!("\ncold pull + unpack, median of {runs}:");
    let ours = median(&mut times[0].clone());
    for (i, (name, _)) in tools.iter().enumerate() {
        let m = median(&mut times[i]);
        let ratio = m.as_secs_f64() / ours.as_secs_f64();
        println!(
            "  {name:<28} {:>7.2} s   {}",
            m.as_secs_f64(),
            if i == 0 {
                "".to_string()
            } else {
                format!(
                    "polysandbox is {ratio:.2}x faster{}",
                    if name.starts_with("podman") {
                        format!(" (goal >= 2.5x: {})", if ratio >= 2.5 { "met" } else { "NOT met" })
                    } else {
                        String::new()
                    }
                )
            }
        );
    }
    // Warm: the same store again; nothing moves.
    let d = trees.join("t0-r0");
    let t = Instant::now();
    let o = Command::new(&bin).args(["pull", "--root"]).arg(&d).arg(&image).output().unwrap();
    let el = t.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    println!("\nwarm re-pull: {:.3} s, {}", el.as_secs_f64(), err.lines().last().unwrap_or(""));
    assert!(err.contains("0 blobs fetched"), "a warm re-pull moved blobs: {err}");
    // The trees go with the tmpfs (on disk: in one go at the end).
    if !on_disk {
        sh(Command::new("umount").arg(&trees));
    }
    let _ = std::fs::remove_dir_all(&work);
}

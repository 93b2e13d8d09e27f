//! `polysandbox pull` against a real registry: Debian's docker-registry on 127.0.0.1, started
//! and stopped here, plain, with htpasswd basic auth, and behind a bearer token server; images
//! pushed with skopeo from fixtures built here (a busybox rootfs, a multi-arch index).
mod common;

use common::*;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_port(port: u16) {
    assert!(eventually(20, || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()), "nothing listens on {port}");
}

/// A process killed when dropped.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn fixture_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/registry_fixture.py")
}

/// A docker-registry over `data` (a storage directory), with an optional auth section.
fn registry(data: &Path, auth: &str) -> (Proc, u16) {
    let port = free_port();
    let dir = data.parent().unwrap().join(format!("reg-{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config.yml");
    std::fs::write(&cfg, format!("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n{auth}", data.display())).unwrap();
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("docker-registry (apt install docker-registry)");
    wait_port(port);
    (Proc(child), port)
}

fn sh(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(o.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
    o
}

struct Shared {
    dir: PathBuf,
    /// The registry storage with the pushed images.
    data: PathBuf,
    _plain: Proc,
    plain: u16,
    layer_digest: String,
}

/// Pushes the busybox image and a two-platform index once, through a plain registry.
fn shared() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    S.get_or_init(|| {
        let f = fixtures();
        let dir = f.dir.join("registry");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let data = dir.join("data");
        let (plain_proc, plain) = registry(&data, "");
        // The busybox rootfs as an image, via our own import into a scratch store.
        let store = dir.join("push-store");
        let tar = dir.join("busybox.tar");
        sh(Command::new("tar").arg("-C").arg(&f.rootfs_root).arg("-cf").arg(&tar).arg("."));
        sh(Command::new(&f.bin).args(["import", "--root"]).arg(&store).arg(&tar).args(["--tag", "localhost/fixture/busybox:1"]));
        // The store keeps layers as their files and records, not as blobs: an OCI layout of the
        // image for skopeo is what `save --format oci-archive` writes.
        let saved = dir.join("busybox.oci.tar");
        sh(Command::new(&f.bin).args(["save", "--root"]).arg(&store).args(["--format", "oci-archive", "-o"]).arg(&saved).arg("localhost/fixture/busybox:1"));
        let layout = dir.join("push-layout");
        std::fs::create_dir_all(&layout).unwrap();
        sh(Command::new("tar").arg("-C").arg(&layout).arg("-xf").arg(&saved));
        let push = |src: String, dst: String, all: bool| {
            let mut c = Command::new("skopeo");
            c.args(["copy", "--quiet", "--dest-tls-verify=false"]);
            if all {
                c.arg("--all");
            }
            sh(c.arg(src).arg(dst));
        };
        push(format!("oci:{}:localhost/fixture/busybox:1", layout.display()), format!("docker://127.0.0.1:{plain}/fixture/busybox:1"), false);
        // The same image as a Docker schema 2 manifest, and with a zstd layer.
        sh(Command::new("skopeo").args(["copy", "--quiet", "--dest-tls-verify=false", "--format", "v2s2"]).arg(format!("oci:{}:localhost/fixture/busybox:1", layout.display())).arg(format!("docker://127.0.0.1:{plain}/fixture/busybox-docker:1")));

        // A multi-arch layout: the same layer under an amd64 and an arm64/v8 config, and an
        // attestation-like unknown/unknown entry, in one index.
        let oci = layout.clone();
        let index: serde_json::Value = serde_json::from_slice(&std::fs::read(oci.join("index.json")).unwrap()).unwrap();
        let mdesc = index["manifests"].as_array().unwrap().iter().find(|m| m["annotations"]["org.opencontainers.image.ref.name"].as_str().is_some_and(|n| n.contains("busybox"))).unwrap().clone();
        let blob = |d: &str| oci.join("blobs/sha256").join(d.trim_start_matches("sha256:"));
        let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(blob(mdesc["digest"].as_str().unwrap())).unwrap()).unwrap();
        let config: serde_json::Value = serde_json::from_slice(&std::fs::read(blob(manifest["config"]["digest"].as_str().unwrap())).unwrap()).unwrap();
        let local_layer = manifest["layers"][0]["digest"].as_str().unwrap().to_string();
        let multi = dir.join("multi");
        std::fs::create_dir_all(multi.join("blobs/sha256")).unwrap();
        std::fs::write(multi.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        std::fs::copy(blob(&local_layer), multi.join("blobs/sha256").join(local_layer.trim_start_matches("sha256:"))).unwrap();
        let put = |bytes: Vec<u8>| -> (String, usize) {
            let d = format!("{:x}", sha2_digest(&bytes));
            std::fs::write(multi.join("blobs/sha256").join(&d), &bytes).unwrap();
            (format!("sha256:{d}"), bytes.len())
        };
        let mut entries = Vec::new();
        for (arch, variant) in [("amd64", None), ("arm64", Some("v8"))] {
            let mut c = config.clone();
            c["architecture"] = arch.into();
            if let Some(v) = variant {
                c["variant"] = v.into();
            }
            let (cd, cs) = put(serde_json::to_vec(&c).unwrap());
            let mut m = manifest.clone();
            m["config"]["digest"] = cd.into();
            m["config"]["size"] = cs.into();
            let (md, ms) = put(serde_json::to_vec(&m).unwrap());
            let mut platform = serde_json::json!({"architecture": arch, "os": "linux"});
            if let Some(v) = variant {
                platform["variant"] = v.into();
            }
            entries.push(serde_json::json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms, "platform": platform}));
        }
        // A zstd-compressed layer (skopeo here reuses the registry's gzip blob when asked to
        // recompress, so the layout is written by hand).
        let zst = zstd::encode_all(&std::fs::read(blob(&local_layer)).unwrap()[..], 3).unwrap();
        let (zd, zs) = put(zst);
        let mut zm = manifest.clone();
        zm["layers"][0]["digest"] = zd.into();
        zm["layers"][0]["size"] = zs.into();
        zm["layers"][0]["mediaType"] = "application/vnd.oci.image.layer.v1.tar+zstd".into();
        let (cd, cs) = put(serde_json::to_vec(&config).unwrap());
        zm["config"]["digest"] = cd.into();
        zm["config"]["size"] = cs.into();
        let (zmd, zms) = put(serde_json::to_vec(&zm).unwrap());
        let idx = serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": entries});
        let (idd, ids) = put(serde_json::to_vec(&idx).unwrap());
        let top = serde_json::json!({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.index.v1+json", "digest": idd, "size": ids, "annotations": {"org.opencontainers.image.ref.name": "1"}},
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": zmd, "size": zms, "annotations": {"org.opencontainers.image.ref.name": "zstd"}}]});
        std::fs::write(multi.join("index.json"), serde_json::to_vec(&top).unwrap()).unwrap();
        push(format!("oci:{}:1", multi.display()), format!("docker://127.0.0.1:{plain}/fixture/multi:1"), true);
        push(format!("oci:{}:zstd", multi.display()), format!("docker://127.0.0.1:{plain}/fixture/busybox-zstd:1"), false);
        Command::new("chmod").args(["-R", "a+rX"]).arg(&dir).status().unwrap();
        // skopeo compresses the layer on the way in: the registry's digest is the one to use.
        let inspect = sh(Command::new("skopeo").args(["inspect", "--tls-verify=false"]).arg(format!("docker://127.0.0.1:{plain}/fixture/busybox:1")));
        let v: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
        let layer_digest = v["Layers"][0].as_str().unwrap().to_string();
        Shared { dir, data, _plain: plain_proc, plain, layer_digest }
    })
}

fn sha2_digest(b: &[u8]) -> impl std::fmt::LowerHex {
    use sha2::Digest;
    sha2::Sha256::digest(b)
}

/// `polysandbox pull` (or any subcommand) in mode `m` with its own store.
fn ps(m: Mode, store: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = m.command();
    c.args(args).arg("--root").arg(store).stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn plain_pull_runs_and_a_warm_repull_moves_no_blob() {
    let s = shared();
    for m in modes() {
        let store = m.owned_dir("store");
        let image = format!("127.0.0.1:{}/fixture/busybox:1", s.plain);
        let p = ps(m, &store, &["pull", &image], &[]);
        assert_eq!(code(&p), 0, "{m:?}: {}", stderr(&p));
        assert!(stderr(&p).contains("2 blobs fetched"), "{m:?}: {}", stderr(&p));
        let mut c = m.command();
        let r = c
            .args(["run", "-q", "--root"])
            .arg(&store)
            .args([image.as_str(), "--", "sh", "-c", "echo pulled; cat /etc/os-release 2>/dev/null | head -0"])
            .output()
            .unwrap();
        assert_eq!(stdout(&r), "pulled\n", "{m:?}: {}", stderr(&r));
        // run IMAGE pulls what is missing, then starts the sandbox from the same process.
        let fresh = m.owned_dir("store-run-pulls");
        let mut c = m.command();
        let r = c
            .args(["run", "-q", "--root"])
            .arg(&fresh)
            .args([image.as_str(), "--", "echo", "pulled and ran"])
            .output()
            .unwrap();
        assert_eq!(stdout(&r), "pulled and ran\n", "{m:?}: {}", stderr(&r));
        let again = ps(m, &store, &["pull", &image], &[]);
        assert_eq!(code(&again), 0);
        assert!(stderr(&again).contains("0 blobs fetched"), "{m:?}: {}", stderr(&again));
        // The pulled layer is kept as its files and record, not as its blob: `save` writes it
        // back (uncompressed) as a layout skopeo reads, with the same image ID.
        let out = m.owned_dir("skopeo-out");
        let saved = out.join("saved.oci.tar");
        let sv = ps(m, &store, &["save", "--format", "oci-archive", "-o", saved.to_str().unwrap(), &image], &[]);
        assert_eq!(code(&sv), 0, "{m:?}: {}", stderr(&sv));
        assert_eq!(
            std::fs::read_dir(store.join("oci/blobs/sha256")).unwrap().count(),
            2,
            "{m:?}: the manifest and config only: a layer blob is kept beside the layer's files"
        );
        let sk = Command::new("skopeo")
            .args(["copy", "--quiet"])
            .arg(format!("oci-archive:{}:{image}", saved.display()))
            .arg(format!("dir:{}", out.join("img").display()))
            .output()
            .unwrap();
        assert!(sk.status.success(), "{}", String::from_utf8_lossy(&sk.stderr));
    }
}

#[test]
fn a_registry_named_by_host_name_is_found() {
    // The binary is static: host names go through glibc's built-in files and dns lookups
    // (/etc/hosts here), never through the host's NSS modules.
    let s = shared();
    for m in modes() {
        let store = m.owned_dir("store-by-name");
        let image = format!("localhost:{}/fixture/busybox:1", s.plain);
        let p = ps(m, &store, &["pull", &image], &[]);
        assert_eq!(code(&p), 0, "{m:?}: {}", stderr(&p));
        let bad = ps(m, &store, &["pull", "no-such-host.invalid:5000/fixture/busybox:1"], &[]);
        assert_ne!(code(&bad), 0, "{m:?}");
        assert!(stderr(&bad).contains("no-such-host.invalid"), "{m:?}: {}", stderr(&bad));
    }
}

#[test]
fn docker_schema2_manifests_and_zstd_layers() {
    let s = shared();
    let m = modes()[0];
    for (name, media) in [
        ("busybox-docker", "application/vnd.docker.image.rootfs.diff.tar.gzip"),
        ("busybox-zstd", "application/vnd.oci.image.layer.v1.tar+zstd"),
    ] {
        let store = m.owned_dir(name);
        let image = format!("127.0.0.1:{}/fixture/{name}:1", s.plain);
        let p = ps(m, &store, &["pull", &image], &[]);
        assert_eq!(code(&p), 0, "{name}: {}", stderr(&p));
        let i = ps(m, &store, &["inspect", &image], &[]);
        let v: serde_json::Value = serde_json::from_slice(&i.stdout).unwrap();
        assert_eq!(v[0]["Manifest"]["layers"][0]["mediaType"], media, "{name}: {v}");
        let r = m
            .command()
            .args(["run", "-q", "--root"])
            .arg(&store)
            .args([image.as_str(), "--", "echo", "ok"])
            .output()
            .unwrap();
        assert_eq!(stdout(&r), "ok\n", "{name}: {}", stderr(&r));
    }
}

#[test]
fn multi_arch_index_selects_the_platform() {
    let s = shared();
    let m = modes()[0];
    let image = format!("127.0.0.1:{}/fixture/multi:1", s.plain);
    for (platform, arch) in [
        (None, "amd64"),
        (Some("linux/arm64"), "arm64"),
        (Some("linux/arm64/v8"), "arm64"),
        (Some("linux/amd64"), "amd64"),
    ] {
        let store = m.owned_dir("multi");
        let mut args = vec!["pull", image.as_str()];
        if let Some(p) = platform {
            args.extend(["--platform", p]);
        }
        let p = ps(m, &store, &args, &[]);
        assert_eq!(code(&p), 0, "{platform:?}: {}", stderr(&p));
        let i = ps(m, &store, &["inspect", &image], &[]);
        let v: serde_json::Value = serde_json::from_slice(&i.stdout).unwrap();
        assert_eq!(v[0]["Architecture"], arch, "{platform:?}");
    }
    let store = m.owned_dir("multi");
    let p = ps(m, &store, &["pull", &image, "--platform", "linux/s390x"], &[]);
    assert_eq!(code(&p), 125);
    assert!(stderr(&p).contains("no image for linux/s390x") && stderr(&p).contains("linux/arm64/v8"), "{}", stderr(&p));
}

fn auth_file(dir: &Path, host: &str, user: &str, pass: &str) -> PathBuf {
    use base64::Engine;
    let f = dir.join(format!("auth-{}.json", unique()));
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    std::fs::write(&f, serde_json::json!({"auths": {host: {"auth": token}}}).to_string()).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    f
}

/// A registry over the shared storage that wants basic auth: tester / s3cret.
fn htpasswd_registry(s: &Shared) -> (Proc, u16) {
    let htpasswd = s.dir.join(format!("htpasswd-{}", unique()));
    let o = sh(Command::new("htpasswd").args(["-Bbn", "tester", "s3cret"]));
    std::fs::write(&htpasswd, &o.stdout).unwrap();
    std::fs::set_permissions(&htpasswd, std::fs::Permissions::from_mode(0o644)).unwrap();
    registry(&s.data, &format!("auth:\n  htpasswd:\n    realm: polysandbox-test\n    path: {}\n", htpasswd.display()))
}

#[test]
fn basic_auth_uses_the_auth_file() {
    let s = shared();
    let (_reg, port) = htpasswd_registry(s);
    let host = format!("127.0.0.1:{port}");
    let image = format!("{host}/fixture/busybox:1");
    for m in modes() {
        let store = m.owned_dir("basic");
        let none = ps(m, &store, &["pull", &image], &[("REGISTRY_AUTH_FILE", "/nonexistent")]);
        assert_eq!(code(&none), 125);
        assert!(stderr(&none).contains("needs a user name and password"), "{m:?}: {}", stderr(&none));
        assert!(!stdout(&ps(m, &store, &["images"], &[])).contains("busybox"), "nothing tagged");
        let wrong = auth_file(&s.dir, &host, "tester", "wrong");
        let w = ps(m, &store, &["pull", &image], &[("REGISTRY_AUTH_FILE", wrong.to_str().unwrap())]);
        assert_eq!(code(&w), 125);
        assert!(stderr(&w).contains("credentials refused"), "{m:?}: {}", stderr(&w));
        let good = auth_file(&s.dir, &host, "tester", "s3cret");
        let g = ps(m, &store, &["pull", &image], &[("REGISTRY_AUTH_FILE", good.to_str().unwrap())]);
        assert_eq!(code(&g), 0, "{m:?}: {}", stderr(&g));
    }
}

#[test]
fn bearer_tokens_from_a_token_server() {
    let s = shared();
    let dir = s.dir.join(format!("token-{}", unique()));
    std::fs::create_dir_all(&dir).unwrap();
    let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
    sh(Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=polysandbox-test-issuer",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert));
    let tport = free_port();
    let log = dir.join("token.log");
    let _token = Proc(
        Command::new("python3")
            .arg(fixture_script())
            .args(["token", &tport.to_string()])
            .arg(&key)
            .arg(&cert)
            .arg(&log)
            .arg("tester:t0ken-pass")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(tport);
    let (_reg, port) = registry(
        &s.data,
        &format!("auth:\n  token:\n    realm: http://127.0.0.1:{tport}/token\n    service: polysandbox-test\n    issuer: polysandbox-test-issuer\n    rootcertbundle: {}\n", cert.display()),
    );
    let host = format!("127.0.0.1:{port}");
    let image = format!("{host}/fixture/busybox:1");
    for m in modes() {
        let store = m.owned_dir("bearer");
        let none = ps(m, &store, &["pull", &image], &[("REGISTRY_AUTH_FILE", "/nonexistent")]);
        assert_eq!(code(&none), 125);
        assert!(stderr(&none).contains("no credentials found"), "{m:?}: {}", stderr(&none));
        let good = auth_file(&s.dir, &host, "tester", "t0ken-pass");
        let g = ps(m, &store, &["pull", &image], &[("REGISTRY_AUTH_FILE", good.to_str().unwrap())]);
        assert_eq!(code(&g), 0, "{m:?}: {}", stderr(&g));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("token scope=repository:fixture/busybox:pull service=polysandbox-test auth"), "{text}");
}

#[test]
fn a_corrupted_blob_is_rejected_and_nothing_is_stored() {
    let s = shared();
    // A copy of the registry's storage with the layer's bytes changed (same size).
    let data = s.dir.join(format!("corrupt-{}", unique()));
    sh(Command::new("cp").arg("-a").arg(&s.data).arg(&data));
    let hex = s.layer_digest.trim_start_matches("sha256:");
    let file = data.join("docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data");
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&file, bytes).unwrap();
    let (_reg, port) = registry(&data, "");
    for m in modes() {
        let store = m.owned_dir("corrupt");
        let image = format!("127.0.0.1:{port}/fixture/busybox:1");
        let p = ps(m, &store, &["pull", &image], &[]);
        assert_eq!(code(&p), 125, "{m:?}");
        assert!(stderr(&p).contains("digest mismatch"), "{m:?}: {}", stderr(&p));
        assert!(!store.join("oci/blobs/sha256").join(hex).exists(), "the bad blob was stored");
        assert!(std::fs::read_dir(store.join("tmp")).unwrap().next().is_none(), "leftovers in tmp");
        assert!(std::fs::read_dir(store.join("rootfs")).unwrap().next().is_none(), "a rootfs was unpacked");
        assert!(!stdout(&ps(m, &store, &["images"], &[])).contains("busybox"));
    }
}

fn proxy(upstream: u16, mode: &[&str]) -> (Proc, u16, PathBuf) {
    proxy_on("127.0.0.1", upstream, mode)
}

fn proxy_on(host: &str, upstream: u16, mode: &[&str]) -> (Proc, u16, PathBuf) {
    let port = free_port();
    let log = shared().dir.join(format!("proxy-{port}.log"));
    let child = Command::new("python3")
        .arg(fixture_script())
        .args(["proxy", &port.to_string(), &upstream.to_string()])
        .arg(&log)
        .args(mode)
        .env("PROXY_HOST", host)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(eventually(20, || std::net::TcpStream::connect((host, port)).is_ok()), "proxy on {host}:{port}");
    (Proc(child), port, log)
}

#[test]
fn credentials_never_follow_a_redirect_to_another_host() {
    let s = shared();
    let (_reg, port) = htpasswd_registry(s);
    // The "CDN": another host (127.0.0.2) serving the blobs from the plain registry.
    let (_cdn, cdn_port, cdn_log) = proxy_on("127.0.0.2", s.plain, &[]);
    let (_front, front_port, front_log) = proxy(port, &["redirect", &format!("127.0.0.2:{cdn_port}")]);
    let m = modes()[0];
    let host = format!("127.0.0.1:{front_port}");
    let good = auth_file(&s.dir, &host, "tester", "s3cret");
    let store = m.owned_dir("redirect");
    let p = ps(
        m,
        &store,
        &["pull", &format!("{host}/fixture/busybox:1")],
        &[("REGISTRY_AUTH_FILE", good.to_str().unwrap())],
    );
    assert_eq!(code(&p), 0, "{}", stderr(&p));
    let front = std::fs::read_to_string(&front_log).unwrap();
    let cdn = std::fs::read_to_string(&cdn_log).unwrap();
    assert!(
        front.lines().any(|l| l.contains("/manifests/") && l.ends_with(" auth")),
        "the registry got the credentials: {front}"
    );
    assert!(cdn.contains("/blobs/sha256:"), "the blobs came from the other host: {cdn}");
    assert!(cdn.lines().all(|l| l.ends_with(" noauth")), "credentials went to another host: {cdn}");
}

/// A registry's answers are read into memory only up to a bound: a manifest that never ends
/// is refused at 4 MiB, not read until the host's memory is gone.
#[test]
fn a_manifest_without_end_is_refused_at_its_bound() {
    let s = shared();
    let (_front, port, log) = proxy(s.plain, &["huge"]);
    let m = modes()[0];
    let store = m.owned_dir("huge");
    let p = ps(m, &store, &["pull", &format!("127.0.0.1:{port}/fixture/busybox:1")], &[]);
    assert_eq!(code(&p), 125, "{}", stderr(&p));
    assert!(stderr(&p).contains("larger than 4194304 bytes"), "{}", stderr(&p));
    assert_eq!(stderr(&p).lines().count(), 1, "{}", stderr(&p));
    // (The fixture notes the hang-up when its next write fails: after the pull has exited.)
    assert!(
        eventually(30, || std::fs::read_to_string(&log).unwrap_or_default().contains("client hung up")),
        "read to the end"
    );
}

#[test]
fn an_interrupted_download_resumes_with_a_range_request() {
    let s = shared();
    let hex = s.layer_digest.trim_start_matches("sha256:").to_string();
    for m in modes() {
        // In one process: the connection drops after 256 KiB; the pull carries on from there.
        let (_p, port, log) = proxy(s.plain, &["drop", "262144"]);
        let store = m.owned_dir("resume");
        let image = format!("127.0.0.1:{port}/fixture/busybox:1");
        let p = ps(m, &store, &["pull", &image], &[]);
        assert_eq!(code(&p), 0, "{m:?}: {}", stderr(&p));
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains(&format!("/blobs/sha256:{hex} bytes=262144-")), "{m:?}: {text}");

        // Across processes: the pull hangs after 256 KiB and is killed; the next one resumes.
        let (stall, port, log) = proxy(s.plain, &["stall", "262144"]);
        let store = m.owned_dir("resume2");
        let image = format!("127.0.0.1:{port}/fixture/busybox:1");
        let mut c = m.command();
        let mut child = c
            .args(["pull", "-q", "--root"])
            .arg(&store)
            .arg(&image)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let partial = store.join("tmp").join(format!("pull-{hex}.partial"));
        assert!(
            eventually(20, || std::fs::metadata(&partial).map(|m| m.len() >= 262144).unwrap_or(false)),
            "{m:?}: no partial download"
        );
        child.kill().unwrap();
        child.wait().unwrap();
        drop(stall);
        let (_p2, port2, log2) = proxy(s.plain, &[]);
        let image2 = format!("127.0.0.1:{port2}/fixture/busybox:1");
        // The stalled proxy's port is gone; the same repository through another port resumes
        // the same blob (partial downloads are keyed by digest).
        let p = ps(m, &store, &["pull", &image2], &[]);
        assert_eq!(code(&p), 0, "{m:?}: {}", stderr(&p));
        let text = std::fs::read_to_string(&log2).unwrap();
        assert!(text.contains(&format!("/blobs/sha256:{hex} bytes=262144-")), "{m:?}: {text}");
        assert!(!partial.exists());
        let _ = log;
    }
}

#[test]
fn eight_concurrent_pulls_end_with_one_copy() {
    let s = shared();
    let m = modes()[0];
    let store = m.owned_dir("concurrent");
    let image = format!("127.0.0.1:{}/fixture/busybox:1", s.plain);
    let children: Vec<Child> = (0..8)
        .map(|_| {
            let mut c = m.command();
            c.args(["pull", "-q", "--root"])
                .arg(&store)
                .arg(&image)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for ch in children {
        let o = ch.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let rootfs: Vec<_> =
        std::fs::read_dir(store.join("rootfs")).unwrap().flatten().filter(|e| e.path().is_dir()).collect();
    assert_eq!(rootfs.len(), 1, "one rootfs");
    assert!(std::fs::read_dir(store.join("tmp")).unwrap().next().is_none(), "leftovers in tmp");
    let r = m
        .command()
        .args(["run", "-q", "--root"])
        .arg(&store)
        .args([image.as_str(), "--", "echo", "ok"])
        .output()
        .unwrap();
    assert_eq!(stdout(&r), "ok\n");
}

#[test]
fn a_read_only_shared_store_sits_under_the_users_own() {
    let s = shared();
    let image = format!("127.0.0.1:{}/fixture/busybox:1", s.plain);
    // The cluster's store, filled once by its admin, read-only to everyone else.
    let shared_store = s.dir.join(format!("shared-{}", unique()));
    let p = ps(Mode::Root, &shared_store, &["pull", "-q", &image], &[]);
    assert_eq!(code(&p), 0, "{}", stderr(&p));
    Command::new("chmod").args(["-R", "a+rX,go-w"]).arg(&shared_store).status().unwrap();
    let listing = |d: &Path| -> Vec<String> {
        let o = Command::new("find").arg(d).output().unwrap();
        let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect();
        v.sort();
        v
    };
    let before = listing(&shared_store);
    for m in modes() {
        let own = m.owned_dir("own-store");
        let mut c = m.command();
        let r = c
            .args(["run", "-q", "--pull", "never", "--root"])
            .arg(&own)
            .args([image.as_str(), "--", "echo", "from the shared store"])
            .env("POLYSANDBOX_SHARED_STORES", format!("/nonexistent:{}", shared_store.display()))
            .output()
            .unwrap();
        assert_eq!(stdout(&r), "from the shared store\n", "{m:?}: {}", stderr(&r));
        // Without it, the image is not there and --pull never says so.
        let mut c = m.command();
        let r = c
            .args(["run", "-q", "--pull", "never", "--root"])
            .arg(&own)
            .args([image.as_str(), "--", "true"])
            .output()
            .unwrap();
        assert_eq!(code(&r), 125, "{m:?}");
        assert!(stderr(&r).contains("not in the store"), "{m:?}: {}", stderr(&r));
    }
    assert_eq!(listing(&shared_store), before, "nothing was written to the shared store");
}

/// `login` checks the credentials with the registry and keeps them where podman does
/// (`$XDG_RUNTIME_DIR/containers/auth.json`, 0600, or `--authfile`); `pull` reads them there;
/// `logout` takes them away.
#[test]
fn login_keeps_credentials_in_the_containers_auth_file_and_pull_uses_them() {
    use std::os::unix::fs::MetadataExt;
    let s = shared();
    let (_reg, port) = htpasswd_registry(s);
    let host = format!("127.0.0.1:{port}");
    let image = format!("{host}/fixture/busybox:1");
    for m in modes() {
        let runtime = m.owned_dir("xdg-runtime");
        let home = m.owned_dir("home");
        let env: Vec<(&str, &str)> =
            vec![("XDG_RUNTIME_DIR", runtime.to_str().unwrap()), ("HOME", home.to_str().unwrap())];
        let cmd = |args: &[&str], stdin: &str| {
            let mut c = m.command();
            c.args(args).env_remove("REGISTRY_AUTH_FILE").env_remove("DOCKER_CONFIG");
            for (k, v) in &env {
                c.env(k, v);
            }
            let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
            use std::io::Write;
            child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
            child.wait_with_output().unwrap()
        };
        let file = runtime.join("containers/auth.json");
        let wrong = cmd(&["login", "-u", "tester", "--password-stdin", &host], "wrong\n");
        assert_eq!(code(&wrong), 125, "{m:?}: {}", stderr(&wrong));
        assert!(stderr(&wrong).contains("credentials refused"), "{m:?}: {}", stderr(&wrong));
        assert!(!file.exists(), "{m:?}: refused credentials were kept");
        let good = cmd(&["login", "-u", "tester", "--password-stdin", &host], "s3cret\n");
        assert_eq!(code(&good), 0, "{m:?}: {}", stderr(&good));
        assert!(stdout(&good).contains("Login Succeeded"), "{m:?}");
        let md = std::fs::metadata(&file).unwrap();
        assert_eq!(md.mode() & 0o777, 0o600, "{m:?}: the auth file is the user's alone");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert!(v["auths"][&host]["auth"].is_string(), "{m:?}: {v}");
        let store = m.owned_dir("login-store");
        let p = cmd(&["pull", "--root", store.to_str().unwrap(), &image], "");
        assert_eq!(code(&p), 0, "{m:?}: {}", stderr(&p));
        let out = cmd(&["logout", &host], "");
        assert_eq!(code(&out), 0, "{m:?}: {}", stderr(&out));
        let again = cmd(&["logout", &host], "");
        assert_eq!(code(&again), 125, "{m:?}");
        assert!(stderr(&again).contains("not logged into"), "{m:?}: {}", stderr(&again));
        let store = m.owned_dir("login-store");
        let p = cmd(&["pull", "--root", store.to_str().unwrap(), &image], "");
        assert_eq!(code(&p), 125, "{m:?}: credentials were left: {}", stderr(&p));
        // --authfile, on login and pull alike; the usual files are not read then.
        let chosen = m.owned_dir("authfile").join("mine.json");
        let l = cmd(&["login", "--authfile", chosen.to_str().unwrap(), "-u", "tester", "-p", "s3cret", &host], "");
        assert_eq!(code(&l), 0, "{m:?}: {}", stderr(&l));
        assert!(!file.exists() || !std::fs::read_to_string(&file).unwrap().contains(&host), "{m:?}");
        let store = m.owned_dir("login-store");
        let p = cmd(&["pull", "--authfile", chosen.to_str().unwrap(), "--root", store.to_str().unwrap(), &image], "");
        assert_eq!(code(&p), 0, "{m:?}: {}", stderr(&p));
        let store = m.owned_dir("login-store");
        let p = cmd(&["--root", store.to_str().unwrap(), "pull", &image], "");
        assert_eq!(code(&p), 125, "{m:?}: the default file has no credentials now: {}", stderr(&p));
    }
}

/// `run --platform` runs the image of that platform (pulled when the stored one is another's),
/// and `run --pull newer` asks the registry, or runs the stored image when it cannot.
#[test]
fn run_platform_and_pull_newer() {
    let s = shared();
    let m = modes()[0];
    let store = m.owned_dir("run-platform");
    let image = format!("127.0.0.1:{}/fixture/multi:1", s.plain);
    let run = |args: &[&str]| {
        m.command().arg("--root").arg(&store).arg("run").args(args).stdin(Stdio::null()).output().unwrap()
    };
    let arch = |name: &str| {
        let o = ps(m, &store, &["inspect", "--format", "{{.Architecture}}", name], &[]);
        stdout(&o).trim().to_string()
    };
    let o = run(&["-q", "--platform", "linux/arm64", &image, "--", "true"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(arch(&image), "arm64");
    let o = run(&["-q", "--pull", "never", "--platform", "linux/amd64", &image, "--", "true"]);
    assert_eq!(code(&o), 125);
    assert!(stderr(&o).contains("not for linux/amd64"), "{}", stderr(&o));
    let o = run(&["-q", "--platform", "linux/amd64", &image, "--", "true"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(arch(&image), "amd64", "the other platform's image was pulled");
    // --pull newer through a registry that goes away: the stored image, and a note.
    let (proxy_proc, port, _log) = proxy(s.plain, &[]);
    let through = format!("127.0.0.1:{port}/fixture/busybox:1");
    let o = run(&["--pull", "newer", &through, "--", "echo", "fresh"]);
    assert_eq!(stdout(&o), "fresh\n", "{}", stderr(&o));
    drop(proxy_proc);
    let o = run(&["--pull", "newer", &through, "--", "echo", "stored"]);
    assert_eq!(stdout(&o), "stored\n", "{}", stderr(&o));
    assert!(stderr(&o).contains("--pull newer"), "{}", stderr(&o));
    let o = run(&["--pull", "always", &through, "--", "echo", "never"]);
    assert_eq!(code(&o), 125, "{}", stdout(&o));
}

//! `pull`: endpoints (mirrors first, from a registries.conf-like file), the manifest (an index
//! resolved to one platform), the config and layers downloaded in parallel into the store with
//! every digest verified and interrupted downloads resumed, then the rootfs unpacked (DiffIDs
//! verified) and the name tagged.

use super::auth;
use super::import::{self, Imported};
use super::oci::{self, Descriptor, Index, Manifest, Platform};
use super::registry::{Endpoint, Registry};
use super::store::Store;
use super::unpack::Options as UnpackOptions;
use crate::reference::Reference;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Mutex;

#[derive(Debug, Clone)]
pub struct Options {
    pub platform: Platform,
    /// Layers downloaded at once.
    pub jobs: usize,
    /// Some(false): plain http and unchecked TLS allowed for every registry.
    pub tls_verify: Option<bool>,
    /// Extra CA certificates (*.crt), as containers' certs.d.
    pub cert_dir: Option<PathBuf>,
    /// The registries file (default: $POLYSANDBOX_REGISTRIES_CONF, then
    /// ~/.config/polysandbox/registries.conf, then /etc/polysandbox/registries.conf).
    pub registries_conf: Option<PathBuf>,
    pub progress: bool,
    pub unpack: UnpackOptions,
}

/// `linux/amd64`, `linux/arm64`, `linux/arm64/v8`.
pub fn parse_platform(s: &str) -> Result<Platform, String> {
    let parts: Vec<&str> = s.split('/').collect();
    let (os, arch, variant) = match parts.as_slice() {
        [os, arch] => (*os, *arch, None),
        [os, arch, v] => (*os, *arch, Some(v.to_string())),
        _ => return Err(format!("--platform {s}: expected OS/ARCH[/VARIANT], e.g. linux/arm64")),
    };
    let arch = match arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        a => a,
    };
    if os != "linux" {
        return Err(format!("--platform {s}: only linux images run here"));
    }
    Ok(Platform { architecture: arch.into(), os: os.into(), variant })
}

pub fn native_platform() -> Platform {
    Platform { architecture: oci::native_arch().into(), os: "linux".into(), variant: None }
}

/// The index entry for `want`: attestation entries (`unknown/unknown`) skipped; on arm64 an
/// entry with variant v8 or none matches a request without a variant or with v8.
pub fn select_platform<'a>(entries: &'a [Descriptor], want: &Platform) -> Option<&'a Descriptor> {
    let arm64_v8 = |v: Option<&str>| matches!(v, None | Some("v8"));
    let ok = |p: &Platform| {
        if p.os != want.os || p.architecture != want.architecture || p.architecture == "unknown" {
            return false;
        }
        if want.architecture == "arm64" {
            return arm64_v8(p.variant.as_deref()) && arm64_v8(want.variant.as_deref()) || p.variant == want.variant;
        }
        want.variant.is_none() || p.variant == want.variant
    };
    let matching: Vec<&Descriptor> = entries.iter().filter(|d| d.platform.as_ref().is_some_and(ok)).collect();
    // An exact variant match first (arm64/v8 asked, both v8 and no-variant listed).
    matching.iter().find(|d| d.platform.as_ref().unwrap().variant == want.variant).or(matching.first()).copied()
}

#[derive(Deserialize, Default)]
struct Conf {
    #[serde(default)]
    registry: Vec<ConfRegistry>,
}

#[derive(Deserialize, Clone)]
struct ConfRegistry {
    prefix: Option<String>,
    location: Option<String>,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    mirror: Vec<ConfMirror>,
}

#[derive(Deserialize, Clone)]
struct ConfMirror {
    location: String,
    #[serde(default)]
    insecure: bool,
}

fn load_conf(o: &Options) -> Result<Conf, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let candidates: Vec<PathBuf> = match &o.registries_conf {
        Some(p) => vec![p.clone()],
        None => std::env::var_os("POLYSANDBOX_REGISTRIES_CONF")
            .map(PathBuf::from)
            .into_iter()
            .chain(home.map(|h| h.join(".config/polysandbox/registries.conf")))
            .chain([PathBuf::from("/etc/polysandbox/registries.conf")])
            .collect(),
    };
    for p in candidates {
        match std::fs::read_to_string(&p) {
            Ok(t) => return toml::from_str(&t).map_err(|e| format!("{}: {e}", p.display())),
            Err(e) if o.registries_conf.is_some() => return Err(format!("{}: {e}", p.display())),
            Err(_) => {}
        }
    }
    Ok(Conf::default())
}

/// Docker treats loopback registries as insecure (plain http allowed); so do we.
fn loopback(host: &str) -> bool {
    let h = host
        .rsplit_once(':')
        .map(|(h, p)| if p.chars().all(|c| c.is_ascii_digit()) { h } else { host })
        .unwrap_or(host);
    h == "localhost" || h.starts_with("127.") || h == "[::1]"
}

/// Where to try, in order: the mirrors, then the registry itself (or its configured location).
fn endpoints(r: &Reference, o: &Options) -> Result<Vec<Endpoint>, String> {
    let conf = load_conf(o)?;
    let full = format!("{}/{}", r.registry, r.repository);
    let entry = conf
        .registry
        .iter()
        .filter(|e| {
            let p = e.prefix.as_deref().or(e.location.as_deref()).unwrap_or("");
            !p.is_empty() && (full == p || full.starts_with(&format!("{p}/")) || r.registry == p)
        })
        .max_by_key(|e| e.prefix.as_deref().or(e.location.as_deref()).unwrap_or("").len());
    let mk = |location: &str, prefix: &str, insecure: bool| -> Endpoint {
        let rest = full.strip_prefix(prefix).unwrap_or(&full).trim_start_matches('/');
        let target =
            if rest.is_empty() { location.to_string() } else { format!("{}/{rest}", location.trim_end_matches('/')) };
        let (host, repo) = target.split_once('/').unwrap_or((&target, ""));
        let host = if host == "docker.io" { crate::reference::DOCKER_HUB_API.to_string() } else { host.to_string() };
        let insecure = insecure || o.tls_verify == Some(false) || loopback(&host);
        Endpoint { host, repository: repo.to_string(), insecure }
    };
    let mut v = Vec::new();
    match entry {
        Some(e) => {
            let prefix = e.prefix.clone().or(e.location.clone()).unwrap();
            for m in &e.mirror {
                v.push(mk(&m.location, &prefix, m.insecure));
            }
            v.push(mk(e.location.as_deref().unwrap_or(&prefix), &prefix, e.insecure));
        }
        None => v.push(mk(&r.registry, &r.registry, false)),
    }
    Ok(v)
}

/// Host names are looked up by glibc's getaddrinfo. The binary is static (see
/// .cargo/config.toml), and a static glibc must not load the host's NSS modules (they link
/// the host's own libc, maybe of another version): lookups use the modules built in, files
/// (/etc/hosts) and dns (/etc/resolv.conf), whatever /etc/nsswitch.conf lists.
fn static_name_lookup() {
    #[cfg(all(target_env = "gnu", target_feature = "crt-static"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        extern "C" {
            fn __nss_configure_lookup(db: *const libc::c_char, services: *const libc::c_char) -> libc::c_int;
        }
        // SAFETY: two valid C strings; called once, before any lookup of ours.
        ONCE.call_once(|| unsafe {
            __nss_configure_lookup(c"hosts".as_ptr(), c"files dns".as_ptr());
        });
    }
}

fn http_client(o: &Options, insecure: bool, host: &str) -> Result<reqwest::blocking::Client, String> {
    static_name_lookup();
    let mut b = reqwest::blocking::Client::builder()
        .user_agent(concat!("polysandbox/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(std::time::Duration::from_secs(30))
        .timeout(None)
        .danger_accept_invalid_certs(insecure);
    let mut dirs: Vec<PathBuf> = o.cert_dir.iter().cloned().collect();
    dirs.push(PathBuf::from("/etc/containers/certs.d").join(host));
    if let Some(h) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(h).join(".config/containers/certs.d").join(host));
    }
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "crt") {
                let pem = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                let cert = reqwest::Certificate::from_pem(&pem).map_err(|e| format!("{}: {e}", p.display()))?;
                b = b.add_root_certificate(cert);
            }
        }
    }
    b.build().map_err(|e| format!("http client: {e}"))
}

fn sha256_of(body: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(body))
}

/// Fetches `reference`'s manifest from the first endpoint that has it; an index is resolved
/// to `platform`. Returns (registry, manifest media type, manifest bytes, digest).
fn resolve(r: &Reference, o: &Options) -> Result<(Registry, String, Vec<u8>, String), String> {
    let mut errors = Vec::new();
    let creds_for =
        |host: &str| auth::lookup(if host == crate::reference::DOCKER_HUB_API { "docker.io" } else { host });
    for ep in endpoints(r, o)? {
        let creds = creds_for(&ep.host)?;
        let reg = Registry::new(http_client(o, ep.insecure, &ep.host)?, ep.clone(), creds);
        if let Err(e) = reg.ping() {
            errors.push(e);
            continue;
        }
        let (mut media, mut body) = match reg.manifest(r.manifest_ref()) {
            Ok(x) => x,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let mut digest = sha256_of(&body);
        if let Some(want) = &r.digest {
            if &digest != want {
                return Err(format!("{r}: the registry sent a manifest with digest {digest}"));
            }
        }
        let v: serde_json::Value = serde_json::from_slice(&body).map_err(|e| format!("{r}: manifest: {e}"))?;
        if v["schemaVersion"] == 1 {
            return Err(format!("{r}: a Docker schema 1 manifest (deprecated); push it again with a current client"));
        }
        if media.is_empty() || media == "application/json" {
            media = v["mediaType"].as_str().map(String::from).unwrap_or_else(|| {
                if v.get("manifests").is_some() {
                    oci::MEDIA_INDEX.into()
                } else {
                    oci::MEDIA_MANIFEST.into()
                }
            });
        }
        if media == oci::MEDIA_INDEX || media == oci::DOCKER_LIST {
            let idx: Index = serde_json::from_slice(&body).map_err(|e| format!("{r}: index: {e}"))?;
            let want = &o.platform;
            let pick = select_platform(&idx.manifests, want).ok_or_else(|| {
                let have: Vec<String> = idx
                    .manifests
                    .iter()
                    .filter_map(|d| d.platform.as_ref())
                    .filter(|p| p.architecture != "unknown")
                    .map(|p| {
                        format!(
                            "{}/{}{}",
                            p.os,
                            p.architecture,
                            p.variant.as_ref().map(|v| format!("/{v}")).unwrap_or_default()
                        )
                    })
                    .collect();
                format!("{r}: no image for {}/{} (the index has {})", want.os, want.architecture, have.join(", "))
            })?;
            let (m2, b2) = reg.manifest(&pick.digest)?;
            if sha256_of(&b2) != pick.digest {
                return Err(format!("{r}: manifest {} does not match its digest", pick.digest));
            }
            media = if m2.is_empty() || m2 == "application/json" { pick.media_type.clone() } else { m2 };
            body = b2;
            digest = pick.digest.clone();
        }
        if media != oci::MEDIA_MANIFEST && media != oci::DOCKER_MANIFEST {
            return Err(format!("{r}: unsupported manifest type {media}"));
        }
        return Ok((reg, media, body, digest));
    }
    Err(format!("{r}: {}", errors.join("; ")))
}

/// Downloads one blob into the store, resuming a partial download left by this process (a
/// dropped connection) or an earlier one (`tmp/pull-<hex>.partial`, locked while in use).
fn fetch_blob(reg: &Registry, store: &Store, d: &Descriptor, bar: &ProgressBar) -> Result<bool, String> {
    let dest = store.blob_path(&d.digest)?;
    if dest.exists() {
        bar.set_length(d.size);
        bar.set_position(d.size);
        return Ok(false);
    }
    let hex = d.digest.strip_prefix("sha256:").ok_or_else(|| format!("unsupported digest {}", d.digest))?;
    let partial = store.root.join("tmp").join(format!("pull-{hex}.partial"));
    let mut f = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(&partial)
        .map_err(|e| format!("{}: {e}", partial.display()))?;
    // One writer per blob across processes: a second pull of the same image waits here.
    // SAFETY: flock on our own fd.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
    if dest.exists() {
        let _ = std::fs::remove_file(&partial);
        return Ok(false);
    }
    let mut h = Sha256::new();
    let mut have = 0u64;
    {
        let mut r = File::open(&partial).map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = r.read(&mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            have += n as u64;
        }
    }
    if have > d.size {
        f.set_len(0).map_err(|e| e.to_string())?;
        h = Sha256::new();
        have = 0;
    }
    bar.set_length(d.size);
    bar.set_position(have);
    let mut attempt = 0;
    let mut buf = vec![0u8; 256 << 10];
    while have < d.size {
        let (mut resp, ranged) = reg.blob(&d.digest, have)?;
        if have > 0 && !ranged {
            // The server ignored the range: start over.
            f.set_len(0).map_err(|e| e.to_string())?;
            f.seek(std::io::SeekFrom::End(0)).map_err(|e| e.to_string())?;
            h = Sha256::new();
            have = 0;
            bar.set_position(0);
        }
        let mut dropped = None;
        loop {
            match resp.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if have + n as u64 > d.size {
                        let _ = std::fs::remove_file(&partial);
                        return Err(format!("blob {}: the registry sent more than its {} bytes", d.digest, d.size));
                    }
                    f.write_all(&buf[..n]).map_err(|e| format!("{}: {e}", partial.display()))?;
                    h.update(&buf[..n]);
                    have += n as u64;
                    bar.set_position(have);
                }
                Err(e) => {
                    dropped = Some(e);
                    break;
                }
            }
        }
        if have < d.size {
            attempt += 1;
            if attempt >= super::registry::ATTEMPTS {
                return Err(format!(
                    "blob {}: {} of {} bytes after {attempt} attempts ({}); run pull again to resume",
                    d.digest,
                    have,
                    d.size,
                    dropped.map(|e| e.to_string()).unwrap_or("connection closed".into())
                ));
            }
            std::thread::sleep(super::registry::backoff(attempt - 1, None));
        }
    }
    let got = format!("sha256:{:x}", h.finalize());
    if got != d.digest {
        let _ = std::fs::remove_file(&partial);
        return Err(format!("blob {}: digest mismatch (got {got}); nothing was stored", d.digest));
    }
    f.sync_data().map_err(|e| e.to_string())?;
    std::fs::rename(&partial, &dest).map_err(|e| format!("store blob: {e}"))?;
    Ok(true)
}

pub struct Pulled {
    pub imported: Imported,
    pub blobs_fetched: usize,
    pub bytes_fetched: u64,
}

/// Checks `creds` against `registry` (host[:port]), as `login` does before it keeps them: the
/// registry's `/v2/` with them, answering its challenge (basic, or a bearer token for them).
pub fn check_login(registry: &str, creds: super::auth::Credentials, o: &Options) -> Result<(), String> {
    let host = if registry == crate::reference::DEFAULT_REGISTRY { crate::reference::DOCKER_HUB_API } else { registry };
    let insecure = o.tls_verify == Some(false) || loopback(host);
    let ep = Endpoint { host: host.to_string(), repository: String::new(), insecure };
    let reg = Registry::new(http_client(o, insecure, host)?, ep, Some(creds));
    reg.ping()?;
    let r = reg.send(|c, u| c.get(u), "", &reqwest::header::HeaderMap::new())?;
    if r.status().is_success() {
        Ok(())
    } else {
        Err(format!("{registry}: {}", r.status()))
    }
}

/// Pulls `reference` into the store.
pub fn pull(store: &Store, reference: &str, o: &Options) -> Result<Pulled, String> {
    let r = Reference::parse(reference)?;
    let (reg, media, body, mdigest) = resolve(&r, o)?;
    let manifest: Manifest = serde_json::from_slice(&body).map_err(|e| format!("{r}: manifest: {e}"))?;
    // The config is read into memory whole: a registry does not choose how much.
    if manifest.config.size > super::registry::MAX_CONFIG {
        return Err(format!(
            "{r}: the image config is {} bytes, more than the {} allowed",
            manifest.config.size,
            super::registry::MAX_CONFIG
        ));
    }
    for l in &manifest.layers {
        let ok = [
            oci::MEDIA_LAYER,
            oci::MEDIA_LAYER_GZIP,
            oci::MEDIA_LAYER_ZSTD,
            "application/vnd.docker.image.rootfs.diff.tar.gzip",
            "application/vnd.docker.image.rootfs.diff.tar",
        ];
        if !ok.contains(&l.media_type.as_str()) {
            return Err(format!("{r}: layer {} has unsupported media type {}", l.digest, l.media_type));
        }
    }
    // Held until the image is named: what the store has (objects, layer records) stays.
    let gc = store.gc_shared()?;
    // The config first: its DiffIDs say which layers the store holds already (as records,
    // their blobs long gone): those are not fetched.
    let mut blobs: Vec<Descriptor> = Vec::new();
    let mut config_fetched = false;
    if !store.blob_path(&manifest.config.digest)?.exists() {
        let bar = ProgressBar::hidden();
        config_fetched = fetch_blob(&reg, store, &manifest.config, &bar).map_err(|e| format!("{r}: {e}"))?;
    }
    let config: oci::ImageConfig = serde_json::from_slice(&store.read_blob(&manifest.config.digest)?)
        .map_err(|e| format!("{r}: image config: {e}"))?;
    let opts = store.unpack_options(&o.unpack);
    let recs = store.layers()?;
    for (i, l) in manifest.layers.iter().enumerate() {
        let held = config.rootfs.diff_ids.get(i).is_some_and(|d| recs.find(d, super::layers::variant(&opts)).is_some());
        if !held {
            blobs.push(l.clone());
        }
    }
    let multi = MultiProgress::new();
    if !o.progress {
        multi.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let total: u64 = blobs.iter().map(|b| b.size).sum();
    let overall = multi.add(ProgressBar::new(total));
    overall.set_style(
        ProgressStyle::with_template("{prefix:>14} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}").unwrap(),
    );
    overall.set_prefix("total");
    let style = ProgressStyle::with_template("{prefix:>14} {bar:30} {bytes}/{total_bytes}").unwrap();
    let queue: Mutex<VecDeque<Descriptor>> = Mutex::new(blobs.into());
    let results: Mutex<Vec<Result<(bool, u64), String>>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..o.jobs.max(1) {
            s.spawn(|| loop {
                let Some(d) = queue.lock().unwrap().pop_front() else { return };
                let bar = multi.insert_before(&overall, ProgressBar::new(d.size));
                bar.set_style(style.clone());
                bar.set_prefix(d.digest.trim_start_matches("sha256:")[..12].to_string());
                let before = bar.position();
                let r = fetch_blob(&reg, store, &d, &bar);
                overall.inc(bar.position().saturating_sub(before));
                bar.finish_and_clear();
                if !o.progress {
                    match &r {
                        Ok(true) => eprintln!("pull: {} {} fetched", d.digest, crate::units::human_bytes(d.size)),
                        Ok(false) => eprintln!("pull: {} already in the store", d.digest),
                        Err(_) => {}
                    }
                }
                let failed = r.is_err();
                results.lock().unwrap().push(r.map(|f| (f, if f { d.size } else { 0 })));
                if failed {
                    queue.lock().unwrap().clear();
                }
            });
        }
    });
    overall.finish_and_clear();
    let results = results.into_inner().unwrap();
    if let Some(Err(e)) = results.iter().find(|r| r.is_err()) {
        return Err(format!("{r}: {e}"));
    }
    let blobs_fetched = results.iter().filter(|r| matches!(r, Ok((true, _)))).count() + usize::from(config_fetched);
    let bytes_fetched = results.iter().map(|r| r.as_ref().map(|x| x.1).unwrap_or(0)).sum::<u64>()
        + if config_fetched { manifest.config.size } else { 0 };
    store.put_blob(&body[..], Some(&mdigest))?;
    let name = r.to_string();
    let imported = import::finish(store, &gc, &mdigest, &manifest, Vec::new(), &name, &media, &o.unpack)?;
    Ok(Pulled { imported, blobs_fetched, bytes_fetched })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(arch: &str, variant: Option<&str>, digest: &str) -> Descriptor {
        Descriptor {
            media_type: oci::MEDIA_MANIFEST.into(),
            digest: digest.into(),
            size: 1,
            annotations: None,
            platform: Some(Platform {
                architecture: arch.into(),
                os: if arch == "unknown" { "unknown".into() } else { "linux".into() },
                variant: variant.map(String::from),
            }),
        }
    }

    #[test]
    fn platform_rules() {
        let idx = vec![
            d("unknown", None, "att"),
            d("amd64", None, "amd"),
            d("arm", Some("v7"), "arm7"),
            d("arm64", Some("v8"), "arm64v8"),
        ];
        let p = |s| parse_platform(s).unwrap();
        assert_eq!(select_platform(&idx, &p("linux/amd64")).unwrap().digest, "amd");
        assert_eq!(select_platform(&idx, &p("linux/arm64")).unwrap().digest, "arm64v8");
        assert_eq!(select_platform(&idx, &p("linux/arm64/v8")).unwrap().digest, "arm64v8");
        assert!(select_platform(&idx, &p("linux/arm64/v9")).is_none());
        let novariant = vec![d("arm64", None, "a")];
        assert_eq!(select_platform(&novariant, &p("linux/arm64/v8")).unwrap().digest, "a");
        assert!(select_platform(&[d("unknown", None, "x")], &p("linux/amd64")).is_none());
        assert!(parse_platform("windows/amd64").is_err());
        assert_eq!(p("linux/aarch64").architecture, "arm64");
    }

    #[test]
    fn mirrors_and_locations() {
        let dir = std::env::temp_dir().join(format!("ps-regconf-{}", std::process::id()));
        std::fs::write(&dir, "[[registry]]\nprefix = \"docker.io\"\nlocation = \"docker.io\"\n[[registry.mirror]]\nlocation = \"mirror.example:5000/hub\"\ninsecure = true\n").unwrap();
        let o = Options {
            platform: native_platform(),
            jobs: 1,
            tls_verify: None,
            cert_dir: None,
            registries_conf: Some(dir.clone()),
            progress: false,
            unpack: Default::default(),
        };
        let eps = endpoints(&Reference::parse("python:3").unwrap(), &o).unwrap();
        assert_eq!(eps.len(), 2);
        assert_eq!(
            (eps[0].host.as_str(), eps[0].repository.as_str(), eps[0].insecure),
            ("mirror.example:5000", "hub/library/python", true)
        );
        assert_eq!(
            (eps[1].host.as_str(), eps[1].repository.as_str(), eps[1].insecure),
            ("registry-1.docker.io", "library/python", false)
        );
        let local = endpoints(&Reference::parse("127.0.0.1:5000/x/y:1").unwrap(), &o).unwrap();
        assert!(local[0].insecure, "loopback registries may be plain http");
        std::fs::remove_file(&dir).unwrap();
    }
}

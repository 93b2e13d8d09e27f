//! Registry credentials, from the files podman and docker use: `$REGISTRY_AUTH_FILE`,
//! `$XDG_RUNTIME_DIR/containers/auth.json`, `~/.config/containers/auth.json`,
//! `$DOCKER_CONFIG/config.json`, `~/.docker/config.json`; `auths` entries (base64 user:secret),
//! and `credHelpers`/`credsStore` through `docker-credential-<name> get`.

use base64::Engine;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

#[derive(Clone)]
pub struct Credentials {
    pub username: String,
    pub secret: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({}, <secret>)", self.username)
    }
}

/// `--authfile`: the one file searched instead of the usual ones.
static AUTHFILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Uses `path` alone for credentials from now on (`--authfile`).
pub fn use_file(path: PathBuf) {
    let _ = AUTHFILE.set(path);
}

/// The file `login` writes and `logout` edits, as podman picks it: `--authfile`,
/// `$REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`, else
/// `~/.config/containers/auth.json`.
pub fn file_to_write() -> Result<PathBuf, String> {
    if let Some(p) = AUTHFILE.get() {
        return Ok(p.clone());
    }
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = env("REGISTRY_AUTH_FILE") {
        return Ok(p);
    }
    if let Some(d) = env("XDG_RUNTIME_DIR").filter(|d| d.is_dir()) {
        return Ok(d.join("containers/auth.json"));
    }
    env("HOME")
        .map(|h| h.join(".config/containers/auth.json"))
        .ok_or_else(|| "no auth file: set XDG_RUNTIME_DIR or HOME, or give --authfile".into())
}

/// The registry key a name is filed under: `docker.io` for Docker Hub's names, else host[:port].
pub fn registry_key(name: &str) -> String {
    let host = name.trim_start_matches("https://").trim_start_matches("http://");
    let host = host.split('/').next().unwrap_or(host);
    match host {
        "index.docker.io" | "registry-1.docker.io" | "docker.io" => "docker.io".into(),
        h => h.to_string(),
    }
}

/// Writes (`Some`) or removes (`None`) the credentials for `registry` in the auth file, its
/// other entries kept; the file is the user's alone (0600, in a 0700 directory if made here),
/// written under a temporary name and renamed. Returns the file, and whether an entry was
/// there before.
pub fn store(registry: &str, creds: Option<&Credentials>) -> Result<(PathBuf, bool), String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let path = file_to_write()?;
    let shown = path.display().to_string();
    let mut v: serde_json::Value = match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => serde_json::from_str(&t).map_err(|e| format!("{shown}: {e}"))?,
        Ok(_) => serde_json::json!({}),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::json!({}),
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    if !v.is_object() {
        return Err(format!("{shown}: not a JSON object"));
    }
    if !v["auths"].is_object() {
        v["auths"] = serde_json::json!({});
    }
    let auths = v["auths"].as_object_mut().unwrap();
    let keys = keys(registry);
    let had = auths.keys().any(|k| keys.contains(k));
    auths.retain(|k, _| !keys.contains(k));
    if let Some(c) = creds {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", c.username, c.secret));
        auths.insert(registry.to_string(), serde_json::json!({ "auth": token }));
    }
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let tmp = path.with_file_name(format!(".auth.json.{}", std::process::id()));
    let r = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        f.write_all(serde_json::to_string_pretty(&v).unwrap_or_default().as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_data()?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{shown}: {e}"));
    }
    Ok((path, had))
}

/// The auth files, in the order they are searched.
pub fn files() -> Vec<PathBuf> {
    if let Some(p) = AUTHFILE.get() {
        return vec![p.clone()];
    }
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = env("HOME");
    let mut v = Vec::new();
    if let Some(p) = env("REGISTRY_AUTH_FILE") {
        v.push(p);
    }
    if let Some(d) = env("XDG_RUNTIME_DIR") {
        v.push(d.join("containers/auth.json"));
    }
    if let Some(h) = &home {
        v.push(h.join(".config/containers/auth.json"));
    }
    if let Some(d) = env("DOCKER_CONFIG") {
        v.push(d.join("config.json"));
    }
    if let Some(h) = &home {
        v.push(h.join(".docker/config.json"));
    }
    v
}

/// The keys an auth file may file `registry` under.
fn keys(registry: &str) -> Vec<String> {
    let mut k = vec![
        registry.to_string(),
        format!("https://{registry}"),
        format!("http://{registry}"),
        format!("https://{registry}/v1/"),
        format!("https://{registry}/v2/"),
    ];
    if registry == "docker.io" {
        k.extend(
            ["index.docker.io", "https://index.docker.io/v1/", "registry-1.docker.io", "https://registry-1.docker.io"]
                .map(String::from),
        );
    }
    k
}

fn helper(name: &str, registry: &str) -> Result<Option<Credentials>, String> {
    let prog = format!("docker-credential-{name}");
    let server = if registry == "docker.io" { "https://index.docker.io/v1/".to_string() } else { registry.to_string() };
    let mut child = match Command::new(&prog)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Err(format!("credential helper {prog}: {e}")),
    };
    let _ = child.stdin.take().unwrap().write_all(server.as_bytes());
    let out = child.wait_with_output().map_err(|e| format!("{prog}: {e}"))?;
    if !out.status.success() {
        // "credentials not found in native keychain": no entry, not an error.
        return Ok(None);
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("{prog}: {e}"))?;
    let (u, s) = (v["Username"].as_str().unwrap_or(""), v["Secret"].as_str().unwrap_or(""));
    Ok((!s.is_empty()).then(|| Credentials { username: u.to_string(), secret: s.to_string() }))
}

/// Credentials for `registry` (host[:port]), from the first auth file that has them.
pub fn lookup(registry: &str) -> Result<Option<Credentials>, String> {
    for path in files() {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(_) => continue,
        };
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        for k in keys(registry) {
            if let Some(h) = v["credHelpers"][&k].as_str() {
                return helper(h, registry);
            }
        }
        for k in keys(registry) {
            let entry = &v["auths"][&k];
            if let Some(a) = entry["auth"].as_str().filter(|a| !a.is_empty()) {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(a.trim())
                    .map_err(|e| format!("{}: auths.{k}.auth: {e}", path.display()))?;
                let raw = String::from_utf8_lossy(&raw).to_string();
                let (u, s) = raw
                    .split_once(':')
                    .ok_or_else(|| format!("{}: auths.{k}.auth is not user:secret", path.display()))?;
                return Ok(Some(Credentials { username: u.to_string(), secret: s.to_string() }));
            }
            if let Some(t) = entry["identitytoken"].as_str() {
                return Ok(Some(Credentials { username: "<token>".into(), secret: t.to_string() }));
            }
        }
        if let Some(store) = v["credsStore"].as_str() {
            if let Some(c) = helper(store, registry)? {
                return Ok(Some(c));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_file_entries_and_helpers() {
        let dir = std::env::temp_dir().join(format!("ps-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let helper = dir.join("docker-credential-fixture");
        std::fs::write(
            &helper,
            "#!/bin/sh\nread server\necho \"{\\\"Username\\\":\\\"h-user\\\",\\\"Secret\\\":\\\"h-$server\\\"}\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let file = dir.join("auth.json");
        std::fs::write(&file, r#"{"auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYSQ6cw=="}, "reg.example:5000": {"auth": ""}}, "credHelpers": {"ghcr.io": "fixture"}}"#).unwrap();
        // SAFETY (test): the environment is this test's; the other tests do not read these.
        std::env::set_var("REGISTRY_AUTH_FILE", &file);
        std::env::set_var("PATH", format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default()));
        let c = lookup("docker.io").unwrap().unwrap();
        assert_eq!((c.username.as_str(), c.secret.as_str()), ("user", "pa$:s"));
        let h = lookup("ghcr.io").unwrap().unwrap();
        assert_eq!((h.username.as_str(), h.secret.as_str()), ("h-user", "h-ghcr.io"));
        assert!(format!("{h:?}").contains("<secret>") && !format!("{h:?}").contains("h-ghcr"));
        std::env::remove_var("REGISTRY_AUTH_FILE");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

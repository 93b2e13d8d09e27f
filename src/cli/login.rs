//! `polysandbox login REGISTRY` and `logout REGISTRY`: credentials kept in the containers auth
//! file as podman keeps them (`$XDG_RUNTIME_DIR/containers/auth.json`, else
//! `~/.config/containers/auth.json`; `--authfile` or `$REGISTRY_AUTH_FILE` to choose), mode
//! 0600. `login` checks them with the registry first.

use crate::image::{auth, pull};
use clap::Args;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct LoginArgs {
    /// The registry: host[:port] (docker.io for Docker Hub).
    registry: String,
    /// User name (asked for on a terminal when not given).
    #[arg(short, long)]
    username: Option<String>,
    /// Password (better: --password-stdin; asked for on a terminal when neither is given).
    #[arg(short, long)]
    password: Option<String>,
    /// Read the password from stdin.
    #[arg(long = "password-stdin")]
    password_stdin: bool,
    /// The auth file to write.
    #[arg(long, value_name = "FILE")]
    authfile: Option<PathBuf>,
    /// false: allow plain http and unverified TLS (loopback registries always may).
    #[arg(long = "tls-verify", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    tls_verify: Option<bool>,
    /// A directory of extra CA certificates (*.crt) for the registry.
    #[arg(long = "cert-dir")]
    cert_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct LogoutArgs {
    /// The registry: host[:port].
    #[arg(required_unless_present = "all")]
    registry: Option<String>,
    /// Remove every registry's credentials from the auth file.
    #[arg(short, long)]
    all: bool,
    /// The auth file to edit.
    #[arg(long, value_name = "FILE")]
    authfile: Option<PathBuf>,
}

/// A line from the terminal, echoed or not.
fn ask(prompt: &str, echo: bool) -> Result<String, String> {
    if !std::io::stdin().is_terminal() {
        return Err(format!("{} not given, and stdin is not a terminal to ask on", prompt.trim_end_matches(": ")));
    }
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    // SAFETY: termios calls on our own stdin, restored below.
    let mut saved: libc::termios = unsafe { std::mem::zeroed() };
    let quiet = !echo && unsafe { libc::tcgetattr(0, &mut saved) } == 0;
    if quiet {
        let mut t = saved;
        t.c_lflag &= !libc::ECHO;
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &t) };
    }
    let mut line = String::new();
    let r = std::io::stdin().lock().read_line(&mut line);
    if quiet {
        // SAFETY: as above.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &saved) };
        eprintln!();
    }
    r.map_err(|e| format!("stdin: {e}"))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

pub fn login(a: LoginArgs) -> i32 {
    if let Some(f) = a.authfile.clone() {
        auth::use_file(f);
    }
    let r = (|| -> Result<PathBuf, String> {
        let registry = auth::registry_key(&a.registry);
        let username = match a.username.clone() {
            Some(u) => u,
            None => ask("Username: ", true)?,
        };
        let secret = match (&a.password, a.password_stdin) {
            (Some(_), true) => return Err("--password and --password-stdin: give one".into()),
            (Some(p), false) => p.clone(),
            (None, true) => {
                let mut s = String::new();
                std::io::stdin().lock().read_line(&mut s).map_err(|e| format!("stdin: {e}"))?;
                s.trim_end_matches(['\n', '\r']).to_string()
            }
            (None, false) => ask("Password: ", false)?,
        };
        if username.is_empty() || secret.is_empty() {
            return Err("a user name and a password are needed".into());
        }
        let creds = auth::Credentials { username, secret };
        let o = pull::Options {
            platform: pull::native_platform(),
            jobs: 1,
            tls_verify: a.tls_verify,
            cert_dir: a.cert_dir.clone(),
            registries_conf: None,
            progress: false,
            unpack: Default::default(),
        };
        pull::check_login(&registry, creds.clone(), &o).map_err(|e| format!("login to {registry}: {e}"))?;
        auth::store(&registry, Some(&creds)).map(|(p, _)| p)
    })();
    match r {
        Ok(_) => {
            out!("Login Succeeded!");
            0
        }
        Err(e) => super::error(e),
    }
}

pub fn logout(a: LogoutArgs) -> i32 {
    if let Some(f) = a.authfile.clone() {
        auth::use_file(f);
    }
    let r = (|| -> Result<String, String> {
        if a.all {
            let path = auth::file_to_write()?;
            let v: serde_json::Value = match std::fs::read_to_string(&path) {
                Ok(t) => serde_json::from_str(&t).map_err(|e| format!("{}: {e}", path.display()))?,
                Err(_) => return Ok("Removed login credentials for all registries".into()),
            };
            let registries: Vec<String> =
                v["auths"].as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
            for r in registries {
                auth::store(&r, None)?;
            }
            return Ok("Removed login credentials for all registries".into());
        }
        let registry = auth::registry_key(a.registry.as_deref().unwrap_or_default());
        let (path, had) = auth::store(&registry, None)?;
        if !had {
            return Err(format!("not logged into {registry} (in {})", path.display()));
        }
        Ok(format!("Removed login credentials for {registry}"))
    })();
    match r {
        Ok(m) => {
            out!("{m}");
            0
        }
        Err(e) => super::error(e),
    }
}

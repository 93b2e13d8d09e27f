//! Image references, normalised as podman and docker do: `python:3.12` is
//! `docker.io/library/python:3.12`, `ghcr.io/o/r@sha256:…` keeps its digest, a missing tag is
//! `latest`. The grammar is the distribution spec's (docker/distribution `reference`).

use std::fmt;

pub const DEFAULT_REGISTRY: &str = "docker.io";
/// Where `docker.io` is actually served.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    /// Registry host, with port if any: `docker.io`, `localhost:5000`, `ghcr.io`.
    pub registry: String,
    /// Repository path: `library/python`, `org/repo`.
    pub repository: String,
    /// Tag, if given (or `latest` when neither tag nor digest was given).
    pub tag: Option<String>,
    /// `sha256:<64 hex>`, if given.
    pub digest: Option<String>,
}

impl Reference {
    /// Parses and normalises `s`.
    pub fn parse(s: &str) -> Result<Reference, String> {
        let bad = |why: &str| format!("invalid image reference '{s}': {why}");
        if s.is_empty() || s.len() > 4096 {
            return Err(bad("empty or too long"));
        }
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("contains white space"));
        }
        let (name_tag, digest) = match s.split_once('@') {
            Some((n, d)) => (n, Some(parse_digest(d).map_err(|e| bad(&e))?)),
            None => (s, None),
        };
        // A tag is after the last ':' that follows the last '/' (a ':' before it is a port).
        let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name_tag[last_slash..].rfind(':') {
            Some(i) => (&name_tag[..last_slash + i], Some(&name_tag[last_slash + i + 1..])),
            None => (name_tag, None),
        };
        if let Some(t) = tag {
            let ok = !t.is_empty()
                && t.len() <= 128
                && t.chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                && t.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
            if !ok {
                return Err(bad("a tag is 1-128 of [A-Za-z0-9_.-], not starting with '.' or '-'"));
            }
        }
        // The first component is a registry when it looks like a host: has '.' or ':', or is
        // 'localhost' (docker's rule).
        let (registry, path) = match name.split_once('/') {
            Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => {
                (first.to_string(), rest.to_string())
            }
            _ => (DEFAULT_REGISTRY.to_string(), name.to_string()),
        };
        let registry = if registry == "index.docker.io" || registry == DOCKER_HUB_API {
            DEFAULT_REGISTRY.to_string()
        } else {
            registry
        };
        if !valid_host(&registry) {
            return Err(bad("invalid registry host"));
        }
        let repository =
            if registry == DEFAULT_REGISTRY && !path.contains('/') { format!("library/{path}") } else { path };
        if repository.is_empty() || repository.len() > 255 || !repository.split('/').all(valid_component) {
            return Err(bad("repository components are lowercase [a-z0-9] separated by '.', '_', '__' or '-'"));
        }
        let tag = match (tag, &digest) {
            (Some(t), _) => Some(t.to_string()),
            (None, Some(_)) => None,
            (None, None) => Some("latest".to_string()),
        };
        Ok(Reference { registry, repository, tag, digest })
    }

    /// Where a local store looks for `s`, in order, as podman does: a name that names its
    /// registry is that name alone; a short name (`python:3.12`, `polysandbox/python:bookworm`)
    /// is first the local one (`localhost/...`), then Docker Hub's (`docker.io/library/python`).
    pub fn local_candidates(s: &str) -> Result<Vec<Reference>, String> {
        let r = Reference::parse(s)?;
        if names_registry(s) {
            return Ok(vec![r]);
        }
        // (A short name whose `localhost/` form is too long is still Docker Hub's.)
        Ok(Reference::parse(&format!("localhost/{s}")).ok().into_iter().chain([r]).collect())
    }

    /// The host to talk to: `registry-1.docker.io` for Docker Hub.
    pub fn api_host(&self) -> &str {
        if self.registry == DEFAULT_REGISTRY {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    /// The digest if pinned, else the tag: what a manifest request asks for.
    pub fn manifest_ref(&self) -> &str {
        self.digest.as_deref().or(self.tag.as_deref()).unwrap_or("latest")
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// Whether `s` names its registry: a first component that looks like a host (has '.' or ':',
/// or is `localhost`), as docker decides.
pub fn names_registry(s: &str) -> bool {
    let name = s.split('@').next().unwrap_or(s);
    match name.split_once('/') {
        Some((first, _)) => first.contains('.') || first.contains(':') || first == "localhost",
        None => false,
    }
}

/// `sha256:` and 64 lowercase hex digits (`sha512:` and 128 accepted too).
pub fn parse_digest(d: &str) -> Result<String, String> {
    let (alg, hex) = d.split_once(':').ok_or("a digest is ALGORITHM:HEX")?;
    let len = match alg {
        "sha256" => 64,
        "sha512" => 128,
        _ => return Err(format!("unsupported digest algorithm '{alg}'")),
    };
    if hex.len() != len || !hex.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)) {
        return Err(format!("a {alg} digest has {len} lowercase hex digits"));
    }
    Ok(d.to_string())
}

fn valid_component(c: &str) -> bool {
    // [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)*
    if c.is_empty() || !c.starts_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit()) {
        return false;
    }
    if !c.ends_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit()) {
        return false;
    }
    let mut prev_sep = String::new();
    for ch in c.chars() {
        if ch.is_ascii_lowercase() || ch.is_ascii_digit() {
            if !(prev_sep.is_empty()
                || prev_sep == "."
                || prev_sep == "_"
                || prev_sep == "__"
                || prev_sep.chars().all(|x| x == '-'))
            {
                return false;
            }
            prev_sep.clear();
        } else if ".-_".contains(ch) {
            prev_sep.push(ch);
        } else {
            return false;
        }
    }
    true
}

fn valid_host(h: &str) -> bool {
    let (host, port) = match h.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || h.starts_with('[') => (host, Some(port)),
        _ => (h, None),
    };
    if let Some(p) = port {
        if p.parse::<u16>().is_err() {
            return false;
        }
    }
    !host.is_empty()
        && host
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') || l.starts_with('['))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> String {
        Reference::parse(s).unwrap().to_string()
    }

    #[test]
    fn normalises_like_podman() {
        assert_eq!(norm("python:3.12"), "docker.io/library/python:3.12");
        assert_eq!(norm("python"), "docker.io/library/python:latest");
        assert_eq!(norm("library/python"), "docker.io/library/python:latest");
        assert_eq!(norm("docker.io/python:3.12-slim"), "docker.io/library/python:3.12-slim");
        assert_eq!(norm("index.docker.io/org/app:1"), "docker.io/org/app:1");
        assert_eq!(norm("org/app"), "docker.io/org/app:latest");
        assert_eq!(norm("ghcr.io/owner/repo/sub:v1.2"), "ghcr.io/owner/repo/sub:v1.2");
        assert_eq!(norm("localhost:5000/busybox"), "localhost:5000/busybox:latest");
        assert_eq!(norm("localhost/busybox:x"), "localhost/busybox:x");
        assert_eq!(norm("127.0.0.1:5000/a/b:c"), "127.0.0.1:5000/a/b:c");
        let d = "sha256:".to_string() + &"a".repeat(64);
        assert_eq!(norm(&format!("python@{d}")), format!("docker.io/library/python@{d}"));
        assert_eq!(norm(&format!("python:3.12@{d}")), format!("docker.io/library/python:3.12@{d}"));
        let r = Reference::parse("python:3.12").unwrap();
        assert_eq!(r.api_host(), "registry-1.docker.io");
        assert_eq!(r.manifest_ref(), "3.12");
        let r = Reference::parse(&format!("localhost:5000/x@{d}")).unwrap();
        assert_eq!(r.api_host(), "localhost:5000");
        assert_eq!(r.manifest_ref(), d);
    }

    #[test]
    fn short_names_are_local_first() {
        let c = |s: &str| -> Vec<String> {
            Reference::local_candidates(s).unwrap().iter().map(|r| r.to_string()).collect()
        };
        assert_eq!(
            c("polysandbox/python:bookworm"),
            ["localhost/polysandbox/python:bookworm", "docker.io/polysandbox/python:bookworm"]
        );
        assert_eq!(c("python"), ["localhost/python:latest", "docker.io/library/python:latest"]);
        assert_eq!(c("localhost/python:3"), ["localhost/python:3"]);
        assert_eq!(c("docker.io/python:3"), ["docker.io/library/python:3"]);
        assert_eq!(c("127.0.0.1:5000/x:1"), ["127.0.0.1:5000/x:1"]);
        assert!(names_registry("ghcr.io/a/b") && !names_registry("a/b") && !names_registry("python:3"));
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "Python:3",
            "python:",
            "python:-x",
            "python::1",
            "a b",
            "python@sha256:abc",
            "python@md5:0123",
            "localhost:notaport/x",
            "org//app",
            "org/app-/x",
            "/abs",
            "python:3.12/extra",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_digest(&("sha256:".to_string() + &"A".repeat(64))).is_err(), "uppercase hex");
    }
}

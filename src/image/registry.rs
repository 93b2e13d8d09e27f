//! The registry client (OCI distribution spec): ping and WWW-Authenticate challenges, bearer
//! tokens and basic auth, manifests and indexes, blobs with retries, backoff and HTTP Range
//! resume. Redirects (blob CDNs) are followed by reqwest, which drops the Authorization header
//! when the host changes.

use super::auth::Credentials;
use base64::Engine;
use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::header::{HeaderMap, ACCEPT, AUTHORIZATION, RANGE, RETRY_AFTER, WWW_AUTHENTICATE};
use reqwest::StatusCode;
use std::sync::Mutex;
use std::time::Duration;

pub const MANIFEST_ACCEPT: &str =
    "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json";

/// The most a manifest or index may be (as containers/image's MaxManifestBodySize): a
/// registry is not trusted to keep its answers small, and they are read into memory.
pub const MAX_MANIFEST: u64 = 4 << 20;
/// The most a token answer may be (containers/image's MaxAuthTokenBodySize).
pub const MAX_TOKEN: u64 = 1 << 20;
/// The most an image config may be (containers/image allows 4 MiB; some real images' configs,
/// with long histories, are larger).
pub const MAX_CONFIG: u64 = 16 << 20;

/// A response's body, refused past `limit` bytes before more is read (a Content-Length is not
/// believed either way).
pub fn read_capped(r: Response, limit: u64, what: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    if r.content_length().is_some_and(|n| n > limit) {
        return Err(format!("{what}: the registry's answer is larger than {limit} bytes"));
    }
    let mut body = Vec::new();
    r.take(limit + 1).read_to_end(&mut body).map_err(|e| format!("{what}: {e}"))?;
    if body.len() as u64 > limit {
        return Err(format!("{what}: the registry's answer is larger than {limit} bytes"));
    }
    Ok(body)
}

/// Attempts per request before giving up (429, 5xx, dropped connections).
pub const ATTEMPTS: u32 = 6;

/// Where to reach one registry.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// host[:port]
    pub host: String,
    /// The repository path on this endpoint.
    pub repository: String,
    /// Plain http allowed and TLS certificates not checked.
    pub insecure: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Auth {
    None,
    Basic(String),
    Bearer(String),
}

pub struct Registry {
    http: Client,
    pub ep: Endpoint,
    scheme: Mutex<&'static str>,
    creds: Option<Credentials>,
    auth: Mutex<Auth>,
}

/// A `WWW-Authenticate` challenge: scheme and parameters.
#[derive(Debug, PartialEq)]
pub struct Challenge {
    pub scheme: String,
    pub params: Vec<(String, String)>,
}

impl Challenge {
    pub fn param(&self, k: &str) -> Option<&str> {
        self.params.iter().find(|(n, _)| n.eq_ignore_ascii_case(k)).map(|(_, v)| v.as_str())
    }
}

/// Parses `Bearer realm="...",service="...",scope="a,b"` (quoted values may hold commas).
pub fn parse_challenge(h: &str) -> Option<Challenge> {
    let h = h.trim();
    let (scheme, rest) = h.split_once(' ').unwrap_or((h, ""));
    let mut params = Vec::new();
    let mut s = rest.trim();
    while !s.is_empty() {
        let (k, after) = s.split_once('=')?;
        let k = k.trim().trim_start_matches(',').trim().to_string();
        let after = after.trim_start();
        let (v, next) = if let Some(q) = after.strip_prefix('"') {
            let end = q.find('"')?;
            (q[..end].to_string(), &q[end + 1..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        params.push((k, v));
        s = next.trim_start().trim_start_matches(',').trim_start();
    }
    Some(Challenge { scheme: scheme.to_string(), params })
}

/// Seconds to wait before attempt `n` (from 0): Retry-After when the server says, else
/// exponential backoff from 0.25 s, capped at 8 s.
pub fn backoff(n: u32, retry_after: Option<&str>) -> Duration {
    if let Some(s) = retry_after.and_then(|v| v.trim().parse::<u64>().ok()) {
        return Duration::from_secs(s.min(60));
    }
    Duration::from_millis((250u64 << n.min(5)).min(8000))
}

fn retryable(s: StatusCode) -> bool {
    s == StatusCode::TOO_MANY_REQUESTS || s.is_server_error()
}

impl Registry {
    pub fn new(http: Client, ep: Endpoint, creds: Option<Credentials>) -> Registry {
        Registry { http, ep, scheme: Mutex::new("https"), creds, auth: Mutex::new(Auth::None) }
    }

    fn url(&self, path: &str) -> String {
        format!("{}://{}/v2/{path}", self.scheme.lock().unwrap(), self.ep.host)
    }

    /// `GET /v2/`: finds the scheme (https, or plain http for an insecure endpoint). A 401
    /// here is fine: the challenge is answered on the first real request.
    pub fn ping(&self) -> Result<(), String> {
        let mut errors = Vec::new();
        for scheme in ["https", "http"] {
            if scheme == "http" && !self.ep.insecure {
                break;
            }
            let url = format!("{scheme}://{}/v2/", self.ep.host);
            match self.http.get(&url).send() {
                Ok(r) if r.status().is_success() || r.status() == StatusCode::UNAUTHORIZED => {
                    *self.scheme.lock().unwrap() = scheme;
                    return Ok(());
                }
                Ok(r) => errors.push(format!("{url}: {}", r.status())),
                Err(e) => errors.push(format!("{url}: {}", chain(&e))),
            }
        }
        Err(errors.join("; "))
    }

    fn token(&self, ch: &Challenge) -> Result<String, String> {
        let realm = ch.param("realm").ok_or("bearer challenge without a realm")?;
        let mut req = self.http.get(realm);
        let mut q = Vec::new();
        if let Some(s) = ch.param("service") {
            q.push(("service", s.to_string()));
        }
        let scope =
            ch.param("scope").map(String::from).unwrap_or_else(|| format!("repository:{}:pull", self.ep.repository));
        for s in scope.split(' ') {
            q.push(("scope", s.to_string()));
        }
        req = req.query(&q);
        if let Some(c) = &self.creds {
            req = req.basic_auth(&c.username, Some(&c.secret));
        }
        let r = req.send().map_err(|e| format!("token from {realm}: {e}"))?;
        if !r.status().is_success() {
            return Err(format!(
                "token from {realm}: {}{}",
                r.status(),
                if self.creds.is_none() {
                    " (no credentials found for this registry)"
                } else {
                    " (credentials refused)"
                }
            ));
        }
        let v: serde_json::Value = serde_json::from_slice(&read_capped(r, MAX_TOKEN, &format!("token from {realm}"))?)
            .map_err(|e| format!("token from {realm}: {e}"))?;
        v["token"]
            .as_str()
            .or(v["access_token"].as_str())
            .map(String::from)
            .ok_or_else(|| format!("token from {realm}: no token in the answer"))
    }

    /// Sends a request with the current auth; answers a 401 challenge (once per kind), retries
    /// 429/5xx and connection failures with backoff.
    pub fn send(
        &self,
        build: impl Fn(&Client, &str) -> RequestBuilder,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<Response, String> {
        let url = self.url(path);
        let mut answered: Vec<String> = Vec::new();
        let mut attempt = 0;
        loop {
            let mut req = build(&self.http, &url).headers(headers.clone());
            match &*self.auth.lock().unwrap() {
                Auth::Basic(b) => req = req.header(AUTHORIZATION, format!("Basic {b}")),
                Auth::Bearer(t) => req = req.header(AUTHORIZATION, format!("Bearer {t}")),
                Auth::None => {}
            }
            let r = match req.send() {
                Ok(r) => r,
                Err(e)
                    if attempt + 1 < ATTEMPTS
                        && !e.is_builder()
                        && !e.is_redirect()
                        && (e.is_timeout() || e.is_body() || (e.is_request() && !e.is_connect())) =>
                {
                    std::thread::sleep(backoff(attempt, None));
                    attempt += 1;
                    continue;
                }
                Err(e) => return Err(format!("{url}: {}", chain(&e))),
            };
            if r.status() == StatusCode::UNAUTHORIZED {
                let ch = r.headers().get(WWW_AUTHENTICATE).and_then(|h| h.to_str().ok()).and_then(parse_challenge);
                let Some(ch) = ch else { return Err(format!("{url}: 401 Unauthorized without a challenge")) };
                let key = format!("{}:{:?}", ch.scheme, ch.param("scope"));
                if answered.contains(&key) {
                    return Err(format!(
                        "{url}: unauthorized{}",
                        if self.creds.is_none() {
                            " (no credentials found for this registry)"
                        } else {
                            " (credentials refused)"
                        }
                    ));
                }
                answered.push(key);
                let new = if ch.scheme.eq_ignore_ascii_case("bearer") {
                    Auth::Bearer(self.token(&ch)?)
                } else if ch.scheme.eq_ignore_ascii_case("basic") {
                    let c = self.creds.as_ref().ok_or_else(|| {
                        format!("{}: needs a user name and password (none found in the auth files)", self.ep.host)
                    })?;
                    Auth::Basic(
                        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", c.username, c.secret)),
                    )
                } else {
                    return Err(format!("{url}: unsupported auth scheme {}", ch.scheme));
                };
                *self.auth.lock().unwrap() = new;
                continue;
            }
            if retryable(r.status()) && attempt + 1 < ATTEMPTS {
                let wait = backoff(attempt, r.headers().get(RETRY_AFTER).and_then(|h| h.to_str().ok()));
                std::thread::sleep(wait);
                attempt += 1;
                continue;
            }
            return Ok(r);
        }
    }

    /// A manifest or index by tag or digest: (media type, bytes).
    pub fn manifest(&self, reference: &str) -> Result<(String, Vec<u8>), String> {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, MANIFEST_ACCEPT.parse().unwrap());
        let r = self.send(|c, u| c.get(u), &format!("{}/manifests/{reference}", self.ep.repository), &h)?;
        if r.status() == StatusCode::NOT_FOUND {
            return Err(format!(
                "{}/{}:{reference}: manifest unknown to the registry",
                self.ep.host, self.ep.repository
            ));
        }
        if !r.status().is_success() {
            return Err(format!("{}/{}: manifest {reference}: {}", self.ep.host, self.ep.repository, r.status()));
        }
        let ct = r
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        let body = read_capped(r, MAX_MANIFEST, &format!("manifest {reference}"))?;
        Ok((ct, body))
    }

    /// Starts a blob download from `offset` (a Range request when > 0). Returns the response
    /// and whether it honours the range (206).
    pub fn blob(&self, digest: &str, offset: u64) -> Result<(Response, bool), String> {
        let mut h = HeaderMap::new();
        if offset > 0 {
            h.insert(RANGE, format!("bytes={offset}-").parse().unwrap());
        }
        let r = self.send(|c, u| c.get(u), &format!("{}/blobs/{digest}", self.ep.repository), &h)?;
        match r.status() {
            StatusCode::PARTIAL_CONTENT => Ok((r, true)),
            s if s.is_success() => Ok((r, false)),
            StatusCode::NOT_FOUND => Err(format!("blob {digest}: unknown to the registry")),
            s => Err(format!("blob {digest}: {s}")),
        }
    }
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s += &format!(": {t}");
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse() {
        let c = parse_challenge(r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/python:pull,push",error="insufficient_scope""#).unwrap();
        assert_eq!(c.scheme, "Bearer");
        assert_eq!(c.param("realm"), Some("https://auth.docker.io/token"));
        assert_eq!(c.param("scope"), Some("repository:library/python:pull,push"));
        assert_eq!(c.param("error"), Some("insufficient_scope"));
        let b = parse_challenge("Basic realm=\"Registry Realm\"").unwrap();
        assert_eq!((b.scheme.as_str(), b.param("realm")), ("Basic", Some("Registry Realm")));
    }

    #[test]
    fn backoff_honours_retry_after() {
        assert_eq!(backoff(0, Some("3")), Duration::from_secs(3));
        assert_eq!(backoff(0, None), Duration::from_millis(250));
        assert_eq!(backoff(10, None), Duration::from_millis(8000));
    }
}

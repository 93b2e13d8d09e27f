//! `polysandbox images`: the store's images as podman lists them: REPOSITORY, TAG, IMAGE ID
//! (the config digest), CREATED, SIZE (unpacked); `-q`, `--noheading`, `--no-trunc`, and
//! `--format json|TEMPLATE` with podman's field names, and `{{.UniqueSize}}` (the disk only
//! that image holds: images share files; `system df -v` shows it by default).

use super::format::{columns, Template};
use crate::image::store::{Image, Store};
use crate::image::usage::ImageUsage;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ImagesArgs {
    /// json, or a Go template over podman's fields: {{.Repository}}, {{.Tag}}, {{.ID}},
    /// {{.Digest}}, {{.Created}}, {{.CreatedAt}}, {{.CreatedSince}}, {{.Size}}, {{.Names}},
    /// {{.Labels}}, and {{.UniqueSize}}, {{.SharedSize}} (disk); `table ...` adds a header.
    #[arg(long)]
    format: Option<String>,
    /// Image IDs only.
    #[arg(short, long)]
    quiet: bool,
    /// No header row.
    #[arg(short = 'n', long = "noheading")]
    noheading: bool,
    /// Full image IDs.
    #[arg(long = "no-trunc")]
    no_trunc: bool,
    /// Accepted for podman's sake: there are no intermediate images to show.
    #[arg(short, long)]
    all: bool,
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

/// Seconds since the epoch of an RFC 3339 time (`2024-05-01T12:00:00.123Z`, `+02:00`).
pub fn unix_time(s: &str) -> Option<i64> {
    let (date, rest) = s.split_once(['T', 't', ' '])?;
    let d: Vec<i64> = date.split('-').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let [y, mo, da] = d.as_slice() else { return None };
    let (clock, offset) = match rest.find(['Z', 'z', '+', '-']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "Z"),
    };
    let t: Vec<f64> = clock.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let [h, mi, se] = t.as_slice() else { return None };
    let off = match offset {
        "Z" | "z" => 0,
        o => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let (oh, om) = o[1..].split_once(':')?;
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60)
        }
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if *mo <= 2 { (y - 1, mo + 9) } else { (*y, mo - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + da - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some(days * 86400 + (*h as i64) * 3600 + (*mi as i64) * 60 + *se as i64 - off)
}

/// "3 days ago", as podman says it.
pub fn since(t: Option<i64>) -> String {
    let Some(t) = t else { return "N/A".into() };
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let s = (now - t).max(0);
    let (n, unit) = match s {
        0..=59 => (s, "second"),
        60..=3599 => (s / 60, "minute"),
        3600..=86399 => (s / 3600, "hour"),
        86400..=1209599 => (s / 86400, "day"),
        1209600..=5183999 => (s / 604800, "week"),
        5184000..=63071999 => (s / 2592000, "month"),
        _ => (s / 31536000, "year"),
    };
    match (n, unit) {
        (1, "hour") => "About an hour ago".into(),
        (1, u) => format!("1 {u} ago"),
        (n, u) => format!("{n} {u}s ago"),
    }
}

/// Bytes in decimal units, as podman shows sizes: `7.6 MB`.
pub fn decimal_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < UNITS.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        // Three significant digits, as go-units' HumanSize.
        let n = if v >= 100.0 {
            format!("{v:.0}")
        } else if v >= 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        };
        let n = if n.contains('.') { n.trim_end_matches('0').trim_end_matches('.') } else { &n };
        format!("{n} {}", UNITS[i])
    }
}

/// (repository, tag) of a stored name; a digest-only name has tag `<none>`.
pub fn repo_tag(name: &str) -> (String, String) {
    let base = name.split('@').next().unwrap_or(name);
    let slash = base.rfind('/').map_or(0, |i| i + 1);
    match base[slash..].rfind(':') {
        Some(i) => (base[..slash + i].to_string(), base[slash + i + 1..].to_string()),
        None => (base.to_string(), "<none>".into()),
    }
}

/// One image as `images --format json` shows it (podman's keys; `SharedSize` the disk it
/// shares with other images, `UniqueSize` ours: the disk only it holds).
pub fn json_of(img: &Image, usage: Option<&ImageUsage>) -> serde_json::Value {
    let created = img.config["created"].as_str();
    let repo_digests: Vec<String> = img.names.iter().map(|n| format!("{}@{}", repo_tag(n).0, img.manifest)).collect();
    serde_json::json!({
        "Id": img.id.trim_start_matches("sha256:"),
        "ParentId": "",
        "RepoTags": img.names,
        "RepoDigests": repo_digests,
        "Size": img.size,
        "SharedSize": usage.map(|u| u.disk - u.unique).unwrap_or(0),
        "UniqueSize": usage.map(|u| u.unique).unwrap_or(0),
        "VirtualSize": img.size,
        "Labels": img.config["config"]["Labels"],
        "Containers": 0,
        "Names": img.names,
        "Digest": img.manifest,
        "Created": created.and_then(unix_time).unwrap_or(0),
        "CreatedAt": created.unwrap_or(""),
    })
}

/// The header of a `table` template's field, as podman labels it.
fn label(field: &str) -> String {
    match field.to_ascii_lowercase().as_str() {
        "id" => "IMAGE ID".into(),
        "createdsince" | "createdat" => "CREATED".into(),
        "uniquesize" => "UNIQUE SIZE".into(),
        "sharedsize" => "SHARED SIZE".into(),
        other => other.to_uppercase(),
    }
}

pub fn main(a: ImagesArgs) -> i32 {
    let store = match Store::open(&a.root.clone().unwrap_or_else(Store::default_root)) {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    let images = match store.images() {
        Ok(i) => i,
        Err(e) => return super::error(e),
    };
    // Disk per image only when asked for (it reads every image's layer records).
    let wants_usage =
        a.format.as_deref().is_some_and(|f| f == "json" || f.contains("UniqueSize") || f.contains("SharedSize"));
    let usage =
        if a.quiet || !wants_usage { Vec::new() } else { crate::image::usage::images(&store).unwrap_or_default() };
    let usage_of = |i: &Image| usage.iter().find(|u| u.manifest == i.manifest);
    let short = |id: &str| -> String {
        if a.no_trunc {
            id.to_string()
        } else {
            id.trim_start_matches("sha256:").chars().take(12).collect()
        }
    };
    if a.quiet {
        let mut seen = Vec::new();
        for i in &images {
            if !seen.contains(&i.id) {
                out!("{}", short(&i.id));
                seen.push(i.id.clone());
            }
        }
        return 0;
    }
    if a.format.as_deref() == Some("json") {
        // One entry per image ID, every name of it.
        let mut by_id: Vec<Image> = Vec::new();
        for i in images {
            match by_id.iter_mut().find(|x| x.id == i.id) {
                Some(x) => x.names.extend(i.names),
                None => by_id.push(i),
            }
        }
        let list: Vec<serde_json::Value> = by_id.iter().map(|i| json_of(i, usage_of(i))).collect();
        out!("{}", serde_json::to_string_pretty(&list).unwrap());
        return 0;
    }
    // One row per name, as podman lists them.
    let rows: Vec<serde_json::Value> = images
        .iter()
        .flat_map(|i| {
            let names = if i.names.is_empty() { vec!["<none>:<none>".to_string()] } else { i.names.clone() };
            names.into_iter().map(move |n| {
                let (repo, tag) = repo_tag(&n);
                let created = i.config["created"].as_str();
                serde_json::json!({
                    "ID": short(&i.id), "Id": i.id.trim_start_matches("sha256:"), "Repository": repo, "Tag": tag,
                    "Digest": i.manifest, "Created": since(created.and_then(unix_time)),
                    "CreatedAt": created.unwrap_or("N/A"), "CreatedSince": since(created.and_then(unix_time)),
                    "Size": decimal_bytes(i.size), "VirtualSize": decimal_bytes(i.size), "Names": i.names,
                    "UniqueSize": usage_of(i).map(|u| decimal_bytes(u.unique)).unwrap_or_else(|| "N/A".into()),
                    "SharedSize": usage_of(i).map(|u| decimal_bytes(u.disk - u.unique)).unwrap_or_else(|| "N/A".into()),
                    "Labels": i.config["config"]["Labels"], "ReadOnly": false, "Dangling": i.names.is_empty(),
                })
            })
        })
        .collect();
    let template =
        a.format.as_deref().unwrap_or("table {{.Repository}}\t{{.Tag}}\t{{.ID}}\t{{.CreatedSince}}\t{{.Size}}");
    let t = match Template::parse(template) {
        Ok(t) => t,
        Err(e) => return super::error(e),
    };
    let mut lines = Vec::new();
    if t.table && !a.noheading {
        lines.push(t.header(label));
    }
    for r in &rows {
        match t.render(r) {
            Ok(l) => lines.push(l),
            Err(e) => return super::error(e),
        }
    }
    if t.table {
        // Tab-separated cells laid out in columns.
        let cells: Vec<Vec<String>> = lines.iter().map(|l| l.split('\t').map(String::from).collect()).collect();
        lines = columns(&cells);
    }
    for l in lines {
        out!("{}", l.trim_end());
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_sizes_and_names() {
        assert_eq!(unix_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_time("2024-02-29T12:30:15.5Z"), Some(1709209815));
        assert_eq!(unix_time("2024-02-29T14:30:15+02:00"), Some(1709209815));
        assert_eq!(since(None), "N/A");
        assert_eq!(decimal_bytes(7_600_000), "7.6 MB");
        assert_eq!(decimal_bytes(999), "999 B");
        assert_eq!(decimal_bytes(2_000_000_000), "2 GB");
        assert_eq!(repo_tag("localhost:5000/a/b:1"), ("localhost:5000/a/b".into(), "1".into()));
        assert_eq!(repo_tag("docker.io/library/x@sha256:ab"), ("docker.io/library/x".into(), "<none>".into()));
    }
}

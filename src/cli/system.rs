//! `polysandbox system df [-v]`: the store's disk use in podman's shape (the images row:
//! how many, how many a sandbox runs on, their size on disk, what removing the unused ones
//! would free), with what sharing files between images saves; `-v` per image (SIZE on disk,
//! SHARED SIZE, UNIQUE SIZE) and per kind of store content.
//! `polysandbox system migrate`: moves the images an older version unpacked (a tree and
//! blobs of their own) into the shared layout.

use super::format::columns;
use super::images::{decimal_bytes, repo_tag, since, unix_time};
use crate::image::store::Store;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SystemArgs {
    #[command(subcommand)]
    command: SystemCommand,
}

#[derive(Subcommand, Debug)]
enum SystemCommand {
    /// Show the store's disk use: per image with -v, and what sharing files saves.
    Df(DfArgs),
    /// Move images unpacked by an older version (a tree and blobs each) into the shared layout.
    Migrate(MigrateArgs),
}

#[derive(Args, Debug)]
pub struct DfArgs {
    /// Per image, and per kind of store content.
    #[arg(short, long)]
    verbose: bool,
    /// json: the figures as one JSON object.
    #[arg(long)]
    format: Option<String>,
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct MigrateArgs {
    /// Store directory.
    #[arg(long)]
    root: Option<PathBuf>,
}

pub fn main(a: SystemArgs) -> i32 {
    match a.command {
        SystemCommand::Df(d) => df(d),
        SystemCommand::Migrate(m) => migrate(m),
    }
}

fn percent(part: u64, whole: u64) -> u64 {
    (part as f64 * 100.0 / whole.max(1) as f64).round() as u64
}

fn df(a: DfArgs) -> i32 {
    let r = (|| -> Result<(), String> {
        let store = Store::open(&a.root.clone().unwrap_or_else(Store::default_root))?;
        let images = store.images()?;
        let usage = crate::image::usage::images(&store)?;
        let totals = crate::image::usage::totals(&store)?;
        let active: Vec<bool> = images.iter().map(|i| store.rootfs_in_use(&i.manifest)).collect();
        let unshared: u64 = usage.iter().map(|u| u.disk).sum();
        let saved = unshared.saturating_sub(totals.total);
        let reclaimable: u64 =
            usage.iter().zip(&active).filter(|(_, a)| !**a).map(|(u, _)| u.unique).sum::<u64>() + totals.garbage_bytes;
        if a.format.as_deref() == Some("json") {
            let per: Vec<serde_json::Value> = images
                .iter()
                .zip(&usage)
                .zip(&active)
                .map(|((i, u), act)| {
                    serde_json::json!({
                        "Id": i.id.trim_start_matches("sha256:"), "Names": i.names, "Digest": i.manifest,
                        "Size": u.disk, "SharedSize": u.disk - u.unique, "UniqueSize": u.unique,
                        "UnpackedSize": i.size, "Active": act, "OldLayout": u.old_layout,
                    })
                })
                .collect();
            let v = serde_json::json!({
                "Images": per, "Totals": totals, "Unshared": unshared, "Saved": saved,
                "Reclaimable": reclaimable, "Active": active.iter().filter(|a| **a).count(),
            });
            out!("{}", serde_json::to_string_pretty(&v).unwrap());
            return Ok(());
        }
        if a.format.is_some() {
            return Err("--format: only json".into());
        }
        let n_active = active.iter().filter(|a| **a).count();
        let rows = vec![
            vec!["TYPE".into(), "TOTAL".into(), "ACTIVE".into(), "SIZE".into(), "RECLAIMABLE".into()],
            vec![
                "Images".into(),
                images.len().to_string(),
                n_active.to_string(),
                decimal_bytes(totals.total),
                format!("{} ({}%)", decimal_bytes(reclaimable), percent(reclaimable, totals.total)),
            ],
        ];
        for l in columns(&rows) {
            out!("{}", l.trim_end());
        }
        out!(
            "Shared files: the images take {} as copies of their own, {} in this store (sharing saves {}, {}%)",
            decimal_bytes(unshared),
            decimal_bytes(totals.total),
            decimal_bytes(saved),
            percent(saved, unshared)
        );
        let old = usage.iter().filter(|u| u.old_layout).count();
        if old > 0 {
            out!("{old} images are in an older version's layout (a tree and blobs each): `polysandbox system migrate` shares their files");
        }
        if !a.verbose {
            return Ok(());
        }
        out!("");
        out!("Images space usage:");
        out!("");
        let mut rows: Vec<Vec<String>> =
            vec![["REPOSITORY", "TAG", "IMAGE ID", "CREATED", "SIZE", "SHARED SIZE", "UNIQUE SIZE", "ACTIVE"]
                .iter()
                .map(|s| s.to_string())
                .collect()];
        for ((i, u), act) in images.iter().zip(&usage).zip(&active) {
            let names = if i.names.is_empty() { vec!["<none>:<none>".to_string()] } else { i.names.clone() };
            for n in names {
                let (repo, tag) = repo_tag(&n);
                rows.push(vec![
                    repo,
                    tag,
                    i.id.trim_start_matches("sha256:").chars().take(12).collect(),
                    since(i.config["created"].as_str().and_then(unix_time)),
                    decimal_bytes(u.disk),
                    decimal_bytes(u.disk - u.unique),
                    decimal_bytes(u.unique),
                    if *act { "yes" } else { "no" }.into(),
                ]);
            }
        }
        for l in columns(&rows) {
            out!("{}", l.trim_end());
        }
        out!("");
        out!("Store space usage ({}):", store.root.display());
        out!("");
        let rows = vec![
            vec!["KIND".into(), "COUNT".into(), "SIZE".into(), "WHAT".into()],
            vec![
                "objects".into(),
                totals.objects.to_string(),
                decimal_bytes(totals.objects_bytes),
                "the images' files, each once".into(),
            ],
            vec![
                "layers".into(),
                totals.layers.to_string(),
                decimal_bytes(totals.layers_bytes),
                "tar-splits and object lists: what recreates each layer".into(),
            ],
            vec![
                "trees".into(),
                totals.trees.to_string(),
                decimal_bytes(totals.trees_bytes),
                "directories and symlinks: each image's last layer, each chain of lower layers once".into(),
            ],
            vec![
                "blobs".into(),
                totals.blobs.to_string(),
                decimal_bytes(totals.blobs_bytes),
                "manifests, configs (and layers of images in the older layout)".into(),
            ],
            vec![
                "garbage".into(),
                totals.garbage_objects.to_string(),
                decimal_bytes(totals.garbage_bytes),
                "objects no image uses: `prune` removes them".into(),
            ],
        ];
        for l in columns(&rows) {
            out!("{}", l.trim_end());
        }
        Ok(())
    })();
    match r {
        Ok(()) => 0,
        Err(e) => super::error(e),
    }
}

fn migrate(a: MigrateArgs) -> i32 {
    let store = match Store::open(&a.root.clone().unwrap_or_else(Store::default_root)) {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    let opts = crate::image::unpack::Options::default();
    match crate::image::import::migrate(&store, &opts) {
        Ok(done) => {
            let mut code = 0;
            for (manifest, r) in done {
                match r {
                    Ok(freed) => out!("migrated {manifest}: {} freed", decimal_bytes(freed)),
                    Err(e) => code = super::error(format!("{manifest}: {e}")),
                }
            }
            code
        }
        Err(e) => super::error(e),
    }
}

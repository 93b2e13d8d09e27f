//! Disk use of a store and of each image in it: what `images` (UNIQUE SIZE) and `system df`
//! show.
//!
//! An image's disk size is what it would take in a store of its own: its tree (directories,
//! symlinks), the objects its layers name (each once, times the most copies one layer needs),
//! its layers' records, its manifest and config; for an image in an older version's layout,
//! its tree and blobs as they are. Its unique size is the part no other image in the index
//! uses: what removing it (and `prune`) frees. Computed from the layers' object lists, not by
//! walking the trees; kept in `usage.json` until the index changes.

use super::layers::Record;
use super::objects::Key;
use super::store::Store;
use std::collections::{HashMap, HashSet};

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ImageUsage {
    pub manifest: String,
    /// Disk bytes it takes with everything it uses.
    pub disk: u64,
    /// Disk bytes only it holds.
    pub unique: u64,
    /// Unpacked by an older version: a tree and blobs of its own.
    pub old_layout: bool,
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Cache {
    index: String,
    images: Vec<ImageUsage>,
}

fn index_fingerprint(store: &Store) -> String {
    use sha2::Digest;
    let data = std::fs::read(store.root.join("oci/index.json")).unwrap_or_default();
    format!("{:x}", sha2::Sha256::digest(&data))
}

/// Each image's disk and unique size (cached until the index changes).
pub fn images(store: &Store) -> Result<Vec<ImageUsage>, String> {
    let fp = index_fingerprint(store);
    let cache_path = store.root.join("usage.json");
    if let Some(c) = std::fs::read(&cache_path).ok().and_then(|d| serde_json::from_slice::<Cache>(&d).ok()) {
        if c.index == fp {
            return Ok(c.images);
        }
    }
    let images = compute(store)?;
    // SAFETY: geteuid cannot fail.
    let mine = std::fs::metadata(&store.root)
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == unsafe { libc::geteuid() })
        .unwrap_or(false);
    if mine {
        let data = serde_json::to_vec(&Cache { index: fp, images: images.clone() }).map_err(|e| e.to_string())?;
        let _ = store.write_atomic(&cache_path, &data);
    }
    Ok(images)
}

fn blob_disk(store: &Store, digest: &str) -> u64 {
    use std::os::unix::fs::MetadataExt;
    store.blob_path(digest).ok().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.blocks() * 512).unwrap_or(0)
}

fn compute(store: &Store) -> Result<Vec<ImageUsage>, String> {
    let images = store.images()?;
    let layers = store.layers()?;
    // Per image: its layers' records (objects layout) or its tree and blobs (older layout).
    let mut out = Vec::new();
    let mut image_records: Vec<Vec<String>> = Vec::new();
    let mut records: HashMap<String, (Record, Vec<usize>)> = HashMap::new();
    let mut blob_users: HashMap<String, Vec<usize>> = HashMap::new();
    // Chains (the trees of images' lower layers) and the images on each.
    let mut chain_users: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, img) in images.iter().enumerate() {
        let changes = store.changes_of(&img.manifest).unwrap_or_default();
        let manifest: Option<super::oci::Manifest> =
            store.read_blob(&img.manifest).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let mut blobs = vec![img.manifest.clone(), img.id.clone()];
        let mut used = Vec::new();
        let old = changes.layout != super::unpack::LAYOUT_OBJECTS;
        let mut u = ImageUsage { manifest: img.manifest.clone(), old_layout: old, ..Default::default() };
        if old {
            let tree = store.rootfs_path(&img.manifest);
            u.disk = super::layers::du(&tree);
            u.unique = u.disk;
            blobs.extend(manifest.iter().flat_map(|m| m.layers.iter().map(|l| l.digest.clone())));
        } else {
            u.disk = changes.tree_bytes;
            u.unique = changes.tree_bytes;
            if let Some(c) = &changes.chain {
                chain_users.entry(c.clone()).or_default().push(i);
            }
            let diff_ids: Vec<String> = img.config["rootfs"]["diff_ids"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| d.as_str().map(String::from))
                .collect();
            for d in diff_ids {
                let Some(r) = layers.find_any(&d) else { continue };
                let key = r.dir.to_string_lossy().into_owned();
                let e = records.entry(key.clone()).or_insert_with(|| (r, Vec::new()));
                if !e.1.contains(&i) {
                    e.1.push(i);
                    used.push(key);
                }
            }
        }
        for b in blobs {
            let e = blob_users.entry(b).or_default();
            if !e.contains(&i) {
                e.push(i);
            }
        }
        image_records.push(used);
        out.push(u);
    }
    // Objects: each key's bytes (one member times the most copies a layer holds), and whose.
    const MANY: usize = usize::MAX;
    let mut keys: HashMap<Key, (u64, usize)> = HashMap::new();
    let mut lists: HashMap<String, Vec<super::layers::Entry>> = HashMap::new();
    for (dir, (r, users)) in &records {
        let owner = if users.len() == 1 { users[0] } else { MANY };
        let entries = r.objects();
        for e in &entries {
            let bytes = e.blocks * e.count as u64;
            let k = keys.entry(e.key).or_insert((bytes, owner));
            k.0 = k.0.max(bytes);
            if k.1 != owner {
                k.1 = MANY;
            }
        }
        let disk = r.disk();
        for &i in users {
            out[i].disk += disk;
            if users.len() == 1 {
                out[i].unique += disk;
            }
        }
        lists.insert(dir.clone(), entries);
    }
    for (i, used) in image_records.iter().enumerate() {
        let mut seen: HashSet<Key> = HashSet::new();
        for dir in used {
            for e in lists.get(dir).into_iter().flatten() {
                if seen.insert(e.key) {
                    let (bytes, owner) = keys[&e.key];
                    out[i].disk += bytes;
                    if owner == i {
                        out[i].unique += bytes;
                    }
                }
            }
        }
    }
    for (c, users) in &chain_users {
        let disk = super::store::chain_tree_bytes(store, c);
        for &i in users {
            out[i].disk += disk;
            if users.len() == 1 {
                out[i].unique += disk;
            }
        }
    }
    for (b, users) in &blob_users {
        let disk = blob_disk(store, b);
        for &i in users {
            out[i].disk += disk;
            if users.len() == 1 {
                out[i].unique += disk;
            }
        }
    }
    Ok(out)
}

/// The store's disk use by kind.
#[derive(Debug, Default, serde::Serialize)]
pub struct Totals {
    pub objects: u64,
    pub objects_bytes: u64,
    /// Objects nothing links (what `prune` removes).
    pub garbage_objects: u64,
    pub garbage_bytes: u64,
    pub layers: u64,
    pub layers_bytes: u64,
    pub trees: u64,
    pub trees_bytes: u64,
    pub blobs: u64,
    pub blobs_bytes: u64,
    /// Everything under the store's root, each inode once.
    pub total: u64,
}

/// Walks the store (every object, record, tree, blob).
pub fn totals(store: &Store) -> Result<Totals, String> {
    use std::os::unix::fs::MetadataExt;
    let mut t = Totals::default();
    let objects = store.objects()?;
    super::objects::walk(&objects, |_, _, st| {
        t.objects += 1;
        t.objects_bytes += st.st_blocks as u64 * 512;
        if st.st_nlink <= 1 {
            t.garbage_objects += 1;
            t.garbage_bytes += st.st_blocks as u64 * 512;
        }
    })?;
    let layers = store.layers()?;
    for (_, _, dir) in layers.list() {
        t.layers += 1;
        t.layers_bytes += super::layers::du(&dir);
    }
    for e in std::fs::read_dir(store.root.join("rootfs")).map_err(|e| e.to_string())?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.contains('.') || !e.path().is_dir() {
            continue;
        }
        t.trees += 1;
        let d = format!("sha256:{name}");
        t.trees_bytes += match store.changes_of(&d) {
            Some(c) if c.layout == super::unpack::LAYOUT_OBJECTS => c.tree_bytes,
            _ => super::layers::du(&e.path()),
        };
    }
    // The chains' trees (the lower layers images share).
    if let Ok(rd) = std::fs::read_dir(store.root.join("chains")) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name.ends_with(".json") || !e.path().is_dir() {
                continue;
            }
            t.trees += 1;
            t.trees_bytes += super::store::chain_tree_bytes(store, &name);
        }
    }
    for e in std::fs::read_dir(store.root.join("oci/blobs/sha256")).map_err(|e| e.to_string())?.flatten() {
        t.blobs += 1;
        t.blobs_bytes += e.metadata().map(|m| m.blocks() * 512).unwrap_or(0);
    }
    t.total = t.objects_bytes + t.layers_bytes + t.trees_bytes + t.blobs_bytes;
    Ok(t)
}

//! Assembling an image in the store's layout (see `store.rs`): layers applied by
//! `unpack.rs` into a tree whose regular files are the object directory's, each layer read
//! from its bytes recorded (objects, tar-split) or applied from its record, and the objects a
//! layer has that the tree does not show pinned in the layer's record.

use super::layers::{Draft, Layers, Meta, Record};
use super::objects::{Key, Linker};
use super::tarsplit::{Recorder, Replay};
use super::unpack::{
    apply_layer_to, apply_stream, into_place, list_dir, lstat_at, open_beneath, open_dir, partial_dir, Changes, Error,
    Files, Layer, Options, Result, Seen, Streamed, LAYOUT_OBJECTS,
};
use crate::sys::cstr;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// Per layer applied: its draft (made here) or record (stored), its DiffID, the files it gave.
type Applied = (Option<Draft>, Option<Record>, String, Vec<Seen>);

/// One layer for [`unpack_to_store`].
pub(crate) enum Source<R> {
    /// Its bytes, checked against its digest and DiffID.
    Stream(Layer<R>),
    /// A layer the store holds already: applied from its record, no content read.
    Stored(Record),
}

/// Builds the image `sources` make into a new directory `dest` (which must not exist),
/// atomically, with its regular files in the store's object directory: each layer applied
/// from its bytes is recorded (objects, tar-split), each stored one is applied from its
/// record; objects of a layer that the image does not show are pinned in the layer's record;
/// new records are published. Returns what unpacking changed and, per layer applied from its
/// bytes, what was read.
///
/// `below`: the tree this one goes over as an overlayfs layer (an image's top layer over the
/// tree of the layers under it): then whiteouts are kept as overlayfs has them (a 0/0
/// character device; an opaque directory's `user.overlay.opaque`), a directory made only to
/// hold an entry takes the metadata the same directory has below, a path that goes through a
/// symlink below is refused as it is in a flattened tree, and a hard link may name a file
/// below.
pub(crate) fn unpack_to_store<R: Read + Send>(
    sources: Vec<Source<R>>,
    dest: &Path,
    opts: &Options,
    layers: &Layers,
    linker: &mut Linker,
    below: Option<&Path>,
) -> Result<(Changes, Vec<Option<Streamed>>)> {
    let tmp = partial_dir(dest)?;
    let variant = super::layers::variant(opts);
    let below = match below {
        Some(b) => Some(open_dir(b)?),
        None => None,
    };
    let below = below.as_ref().map(|b| b.as_raw_fd());
    let result = (|| {
        let root = open_dir(&tmp)?;
        let mut total = Changes::default();
        let mut streamed = Vec::new();
        // Per layer: its draft (made here) or record (stored), and the files it gave.
        let mut applied: Vec<Applied> = Vec::new();
        for (i, source) in sources.into_iter().enumerate() {
            let what = |e: Error| Error(format!("layer {}: {e}", i + 1));
            let mut seen = Vec::new();
            let c = match source {
                Source::Stream(layer) => {
                    let draft = layers.draft().map_err(Error)?;
                    let file = draft.create("tar-split.zst").map_err(Error)?;
                    let rec = Recorder::new(file).map_err(|e| Error(format!("tar-split: {e}")))?;
                    let (c, s) = apply_layer_to(
                        layer,
                        root.as_raw_fd(),
                        opts,
                        total.bytes,
                        &mut Files::Record { linker: &mut *linker, rec: rec.clone(), seen: &mut seen },
                        below,
                    )
                    .map_err(what)?;
                    rec.finish().map_err(|e| what(Error(format!("tar-split: {e}"))))?;
                    let mut by_key: std::collections::HashMap<Key, (u64, u32)> = Default::default();
                    for f in &seen {
                        let e = by_key.entry(f.key).or_default();
                        e.0 = e.0.max(f.blocks);
                        e.1 += 1;
                    }
                    let entries = by_key
                        .into_iter()
                        .map(|(key, (blocks, count))| super::layers::Entry { key, blocks, count })
                        .collect();
                    let meta = Meta {
                        diff_id: c.diff_ids[0].clone(),
                        size: c.bytes,
                        files: seen.len() as u64,
                        changes: Changes { diff_ids: Vec::new(), ..c.clone() },
                    };
                    draft.finish(&meta, entries).map_err(Error)?;
                    streamed.push(Some(s));
                    applied.push((Some(draft), None, c.diff_ids[0].clone(), seen));
                    c
                }
                Source::Stored(record) => {
                    if total.bytes.saturating_add(record.meta.size) > opts.max_unpacked {
                        return Err(what(Error(format!(
                            "unpacked size exceeds the limit of {} bytes (--max-unpacked-size)",
                            opts.max_unpacked
                        ))));
                    }
                    let file = record.tar_split().map_err(Error)?;
                    let replay = Replay::open(file, None).map_err(|e| what(Error(format!("tar-split: {e}"))))?;
                    let c = apply_stream(
                        replay.clone(),
                        root.as_raw_fd(),
                        opts,
                        &mut Files::Replay { linker: &mut *linker, replay, seen: &mut seen },
                        below,
                    )
                    .map_err(what)?;
                    let c = Changes { bytes: record.meta.size, diff_ids: vec![record.meta.diff_id.clone()], ..c };
                    streamed.push(None);
                    let diff_id = record.meta.diff_id.clone();
                    applied.push((None, Some(record), diff_id, seen));
                    c
                }
            };
            total.add(c);
        }
        // What the image does not show of each layer is pinned in the layer's record; then
        // the new records are published.
        for (draft, record, diff_id, seen) in applied {
            let pins = shadowed(root.as_raw_fd(), &seen);
            match (draft, record) {
                (Some(d), _) => {
                    for k in &pins {
                        super::layers::pin(d.dir(), linker.objects, k).map_err(Error)?;
                    }
                    d.publish(layers, linker.objects, &diff_id, variant, &pins).map_err(Error)?;
                }
                (None, Some(r)) => {
                    for k in &pins {
                        super::layers::pin(&r.dir, linker.objects, k).map_err(Error)?;
                    }
                }
                (None, None) => {}
            }
        }
        total.layout = LAYOUT_OBJECTS;
        total.tree_bytes = tree_disk(root.as_raw_fd())?;
        Ok((total, streamed))
    })();
    into_place(result, &tmp, dest)
}

/// The objects of `seen` no longer at their path in the tree under `root`.
fn shadowed(root: RawFd, seen: &[Seen]) -> Vec<Key> {
    let mut out = Vec::new();
    let mut cached: Option<(&[String], Option<OwnedFd>)> = None;
    for s in seen {
        if cached.as_ref().is_none_or(|(p, _)| *p != s.parent.as_slice()) {
            cached = Some((&s.parent, open_beneath(root, &s.parent, "").ok()));
        }
        let parent = cached.as_ref().and_then(|(_, fd)| fd.as_ref());
        let shown = parent.and_then(|p| lstat_at(p.as_raw_fd(), &s.name)).is_some_and(|st| st.st_ino == s.ino);
        if !shown {
            out.push(s.key);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Disk bytes of everything in the tree under `dir` but its regular files (directories,
/// symlinks, device nodes): what an image's tree holds of its own.
fn tree_disk(dir: RawFd) -> Result<u64> {
    // SAFETY: st is plain data the kernel fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and pointer.
    unsafe { libc::fstat(dir, &mut st) };
    let mut total = st.st_blocks as u64 * 512;
    for name in list_dir(dir)? {
        let Some(st) = lstat_at(dir, &name) else { continue };
        match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => {}
            libc::S_IFDIR => {
                // SAFETY: valid C string and dirfd; O_NOFOLLOW: never through a symlink.
                let fd = unsafe {
                    libc::openat(
                        dir,
                        cstr(&name).as_ptr(),
                        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                    )
                };
                if fd >= 0 {
                    // SAFETY: a new fd we own.
                    let sub = unsafe { OwnedFd::from_raw_fd(fd) };
                    total += tree_disk(sub.as_raw_fd())?;
                }
            }
            _ => total += st.st_blocks as u64 * 512,
        }
    }
    Ok(total)
}

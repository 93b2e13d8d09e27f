//! A layer kept as its unpacked files plus what recreates its tar byte for byte, as
//! containers/storage's tar-split does: every byte of the uncompressed stream that is not a
//! regular file's content (headers, PAX records, padding, the end-of-archive blocks and
//! anything after them) as it came, and for each file's content the object that holds it.
//!
//! ```text
//! zstd( "PSBTS1\n"  { 'R' len:u32 bytes | 'F' size:u64 key:32 }*  'E' total:u64 )
//! ```
//!
//! [`Recorder`] writes one while a layer is unpacked (the tar parser reads through it);
//! [`Replay`] reads one back, either as the whole tar (file contents from the objects: `save`,
//! and re-unpacking with other options), or as a skeleton whose file contents read as zeros
//! and whose files are found by their offset (a stored layer applied to a new image without
//! reading a byte of content).

use super::objects::{Key, Objects};
use std::cell::RefCell;
use std::io::{self, BufReader, Read, Write};
use std::rc::Rc;

const MAGIC: &[u8] = b"PSBTS1\n";
/// Raw segments are cut at this size.
const SEGMENT: usize = 1 << 20;

/// What the recorder has seen.
struct RecState {
    out: zstd::stream::write::Encoder<'static, std::fs::File>,
    raw: Vec<u8>,
    /// Offset in the tar stream of the next byte read.
    pos: u64,
    /// A file's content being read: [start, end), not recorded.
    skip: Option<(u64, u64)>,
    error: Option<io::Error>,
}

impl RecState {
    fn flush_raw(&mut self) -> io::Result<()> {
        for chunk in self.raw.chunks(SEGMENT) {
            self.out.write_all(b"R")?;
            self.out.write_all(&(chunk.len() as u32).to_le_bytes())?;
            self.out.write_all(chunk)?;
        }
        self.raw.clear();
        Ok(())
    }
}

/// Records a tar stream as it is read through [`Recorder::reader`].
#[derive(Clone)]
pub struct Recorder(Rc<RefCell<RecState>>);

impl Recorder {
    pub fn new(file: std::fs::File) -> io::Result<Recorder> {
        let mut out = zstd::stream::write::Encoder::new(file, 3)?;
        out.write_all(MAGIC)?;
        Ok(Recorder(Rc::new(RefCell::new(RecState { out, raw: Vec::new(), pos: 0, skip: None, error: None }))))
    }

    /// `inner`, read through the recorder.
    pub fn reader<R: Read>(&self, inner: R) -> Tee<R> {
        Tee { inner, rec: self.clone() }
    }

    /// A regular file's content starts at `pos` (the tar stream's offset) and is `size` bytes:
    /// it is not recorded, its object is (with [`Recorder::file`], once known).
    pub fn begin_file(&self, pos: u64, size: u64) -> io::Result<()> {
        let mut s = self.0.borrow_mut();
        if s.pos != pos {
            return Err(io::Error::other(format!("tar-split: a file at offset {pos}, the stream is at {}", s.pos)));
        }
        s.flush_raw()?;
        s.skip = Some((pos, pos + size));
        Ok(())
    }

    /// The object holding the content begun with [`Recorder::begin_file`].
    pub fn file(&self, size: u64, key: &Key) -> io::Result<()> {
        let mut s = self.0.borrow_mut();
        match s.skip {
            Some((start, end)) if end - start == size && s.pos == end => {}
            _ => return Err(io::Error::other("tar-split: a file's content was not read whole")),
        }
        s.skip = None;
        s.out.write_all(b"F")?;
        s.out.write_all(&size.to_le_bytes())?;
        s.out.write_all(key)?;
        Ok(())
    }

    /// Ends the record; returns the stream's length.
    pub fn finish(self) -> io::Result<u64> {
        let state = Rc::try_unwrap(self.0).map_err(|_| io::Error::other("tar-split: still being read"))?;
        let mut s = state.into_inner();
        if let Some(e) = s.error.take() {
            return Err(e);
        }
        s.flush_raw()?;
        s.out.write_all(b"E")?;
        s.out.write_all(&s.pos.to_le_bytes())?;
        let f = s.out.finish()?;
        f.sync_data()?;
        Ok(s.pos)
    }
}

/// A reader whose bytes the recorder sees.
pub struct Tee<R> {
    inner: R,
    rec: Recorder,
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut s = self.rec.0.borrow_mut();
        let mut at = 0usize;
        while at < n {
            let pos = s.pos;
            match s.skip {
                Some((start, end)) if pos >= start && pos < end => {
                    let take = ((end - pos) as usize).min(n - at);
                    s.pos += take as u64;
                    at += take;
                }
                Some((start, _)) if pos < start => {
                    let take = ((start - pos) as usize).min(n - at);
                    s.raw.extend_from_slice(&buf[at..at + take]);
                    s.pos += take as u64;
                    at += take;
                }
                _ => {
                    s.raw.extend_from_slice(&buf[at..n]);
                    s.pos += (n - at) as u64;
                    at = n;
                }
            }
        }
        if s.raw.len() >= SEGMENT && s.skip.is_none() {
            if let Err(e) = s.flush_raw() {
                s.error = Some(io::Error::new(e.kind(), e.to_string()));
                return Err(e);
            }
        }
        Ok(n)
    }
}

/// One record, decoded.
enum Rec {
    Raw(Vec<u8>),
    File(u64, Key),
    End(u64),
}

fn read_rec(r: &mut impl Read) -> io::Result<Rec> {
    let mut tag = [0u8; 1];
    r.read_exact(&mut tag)?;
    match tag[0] {
        b'R' => {
            let mut len = [0u8; 4];
            r.read_exact(&mut len)?;
            let len = u32::from_le_bytes(len) as usize;
            if len > SEGMENT {
                return Err(io::Error::other("tar-split: a segment larger than allowed"));
            }
            let mut v = vec![0u8; len];
            r.read_exact(&mut v)?;
            Ok(Rec::Raw(v))
        }
        b'F' => {
            let mut size = [0u8; 8];
            r.read_exact(&mut size)?;
            let mut key = [0u8; 32];
            r.read_exact(&mut key)?;
            Ok(Rec::File(u64::from_le_bytes(size), key))
        }
        b'E' => {
            let mut total = [0u8; 8];
            r.read_exact(&mut total)?;
            Ok(Rec::End(u64::from_le_bytes(total)))
        }
        t => Err(io::Error::other(format!("tar-split: unknown record {t:#x}"))),
    }
}

/// What a replay is producing now.
enum Cur {
    Raw(Vec<u8>, usize),
    /// A file's content: bytes left, and the object's reader (None in a skeleton: zeros).
    File(u64, Option<std::io::Take<std::fs::File>>),
    /// Between records.
    Idle,
    Done,
}

struct ReplayState<'a> {
    dec: zstd::stream::read::Decoder<'static, BufReader<std::fs::File>>,
    objects: Option<&'a Objects>,
    cur: Cur,
    pos: u64,
}

/// A recorded layer read back: with `objects`, the whole tar; without, its skeleton.
#[derive(Clone)]
pub struct Replay<'a>(Rc<RefCell<ReplayState<'a>>>);

impl<'a> Replay<'a> {
    pub fn open(file: std::fs::File, objects: Option<&'a Objects>) -> io::Result<Replay<'a>> {
        let mut dec = zstd::stream::read::Decoder::new(file)?;
        let mut magic = [0u8; MAGIC.len()];
        dec.read_exact(&mut magic)?;
        if magic != MAGIC {
            return Err(io::Error::other("not a tar-split record"));
        }
        Ok(Replay(Rc::new(RefCell::new(ReplayState { dec, objects, cur: Cur::Idle, pos: 0 }))))
    }

    /// The object of the regular file whose content starts at `pos` and is `size` bytes: in a
    /// skeleton, asked when its header has been read and its content not yet.
    pub fn file_at(&self, pos: u64, size: u64) -> io::Result<Key> {
        let mut s = self.0.borrow_mut();
        if s.pos != pos || !matches!(s.cur, Cur::Idle | Cur::Raw(..)) {
            return Err(io::Error::other(format!("tar-split: no file at offset {pos}")));
        }
        if let Cur::Raw(v, at) = &s.cur {
            if *at != v.len() {
                return Err(io::Error::other(format!("tar-split: no file at offset {pos}")));
            }
        }
        let rec = read_rec(&mut s.dec)?;
        match rec {
            Rec::File(sz, key) if sz == size => {
                s.cur = Cur::File(size, None);
                Ok(key)
            }
            _ => Err(io::Error::other(format!("tar-split: the record has no file of {size} bytes at offset {pos}"))),
        }
    }
}

impl Read for Replay<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut s = self.0.borrow_mut();
        loop {
            match &mut s.cur {
                Cur::Done => return Ok(0),
                Cur::Raw(v, at) if *at < v.len() => {
                    let n = buf.len().min(v.len() - *at);
                    buf[..n].copy_from_slice(&v[*at..*at + n]);
                    *at += n;
                    s.pos += n as u64;
                    return Ok(n);
                }
                Cur::File(left, src) if *left > 0 => {
                    let want = buf.len().min(*left as usize);
                    let n = match src {
                        Some(f) => {
                            let n = f.read(&mut buf[..want])?;
                            if n == 0 {
                                return Err(io::Error::other("tar-split: an object is shorter than its file"));
                            }
                            n
                        }
                        None => {
                            buf[..want].fill(0);
                            want
                        }
                    };
                    *left -= n as u64;
                    s.pos += n as u64;
                    return Ok(n);
                }
                _ => {
                    let rec = read_rec(&mut s.dec)?;
                    s.cur = match rec {
                        Rec::Raw(v) => Cur::Raw(v, 0),
                        Rec::File(size, key) => match s.objects {
                            Some(o) => {
                                let f = o.open_member(&key).map_err(io::Error::other)?;
                                let len = f.metadata()?.len();
                                if len != size {
                                    return Err(io::Error::other(format!(
                                        "tar-split: object {} holds {len} bytes, its file {size}",
                                        super::objects::hex(&key)
                                    )));
                                }
                                Cur::File(size, Some(f.take(size)))
                            }
                            None => Cur::File(size, None),
                        },
                        Rec::End(total) => {
                            if total != s.pos {
                                return Err(io::Error::other("tar-split: the record's length does not add up"));
                            }
                            Cur::Done
                        }
                    };
                }
            }
        }
    }
}

/// Every object a record names, with the size of its file, in order.
pub fn files(file: std::fs::File) -> io::Result<Vec<(u64, Key)>> {
    let mut dec = zstd::stream::read::Decoder::new(file)?;
    let mut magic = [0u8; MAGIC.len()];
    dec.read_exact(&mut magic)?;
    if magic != MAGIC {
        return Err(io::Error::other("not a tar-split record"));
    }
    let mut out = Vec::new();
    loop {
        match read_rec(&mut dec)? {
            Rec::Raw(_) => {}
            Rec::File(size, key) => out.push((size, key)),
            Rec::End(_) => return Ok(out),
        }
    }
}

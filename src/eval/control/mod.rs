//! Control tests: copies of the dataset's own tests that must fail, planted among them in every
//! exercise run, so that a run whose results were forged, neutered or cut short shows it.
//!
//! A control is a copy of one of the instance's real test units (a method of the same class,
//! a `test(...)` in the same `describe`, a row of the same Go table, a `TEST_CASE` beside the
//! others), with an expectation changed so that it fails for every solution that passes the
//! original, under a fresh name of the same form as its neighbours' (words from the file's own
//! test names), inserted at a random place among its siblings. Several per run, chosen anew
//! each run. Shape, place and name do not tell a control from a real test; only the original
//! test sources do.
//!
//! - With a calibration, the controls come from a pool calibration verified: copies with an
//!   expectation *and* an input changed (so no control sits beside its original as a near
//!   twin), each one gold was seen to fail, in an instance whose real tests gold passes
//!   alike with and without them.
//! - Without one, a copy changes only an expectation where the change is exact (a literal on
//!   one side of an exact equality, or a check turned over): sure to fail for any solution that
//!   passes the original, but beside its original, a near twin.
//!
//! A run's results are believed only if the runner reports every control failed, by name.
//! Whatever forges or short-cuts the results without telling controls from real tests
//! (a summary printed ahead of the runner, frames or reports written by the solution, results
//! rewritten after a re-run, assertions neutered, names filtered) reports some control passed
//! or missing, and is caught.

#[cfg(test)]
mod adversary;
pub mod lex;
pub mod model;
pub mod values;

use super::parsers::{Parsed, Parser, Status};
use lex::Lang;
use model::{Site, Style, Unit};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

#[cfg(test)]
thread_local! {
    /// A seed for the tests: the draws of this thread come from it while it is set.
    static SEEDED: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Draws from `s` on this thread from now on (splitmix64), until [`unseed`].
#[cfg(test)]
pub(crate) fn seed(s: u64) {
    SEEDED.with(|c| c.set(Some(s)));
}

#[cfg(test)]
pub(crate) fn unseed() {
    SEEDED.with(|c| c.set(None));
}

pub fn random_u64() -> u64 {
    #[cfg(test)]
    if let Some(s) = SEEDED.with(|c| c.get()) {
        let s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        SEEDED.with(|c| c.set(Some(s)));
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        return z ^ (z >> 31);
    }
    let mut b = [0u8; 8];
    // getrandom(2) never fails for 8 bytes once the pool is initialised (always, by now).
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    assert_eq!(n, 8, "getrandom");
    u64::from_ne_bytes(b)
}

fn below(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (random_u64() % n as u64) as usize
    }
}

/// How this build makes candidates (kept in a calibration as `controls_made`): 2 since their
/// changed literals take values of the file's own (values.rs). Raise it whenever a change to
/// the candidates would make an older pool tell its controls apart.
pub const CANDIDATES: u32 = 2;

/// A fresh tag: `t` and 16 hex digits (a snippet's completion line).
pub fn new_tag() -> String {
    format!("t{:016x}", random_u64())
}

/// How a control's name shows in the runner's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matcher {
    text: String,
    how: How,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum How {
    /// The reported name ends with it, after a separator (`::`, `/`, ` `, `.`) or alone.
    Suffix,
    /// The reported name contains it (JUnit's `Class.method()`).
    Contains,
}

impl Matcher {
    /// A control reported under this name, or ending with it after a separator.
    #[cfg(test)]
    pub fn suffix(text: &str) -> Matcher {
        Matcher { text: text.into(), how: How::Suffix }
    }

    /// `reported` with this name given back as `to` (same form), if it names it: the name
    /// itself, or (Go) a subtest of it.
    fn give_back(&self, reported: &str, to: &str) -> Option<String> {
        match self.how {
            How::Contains => {
                reported.find(&self.text).map(|i| format!("{}{to}{}", &reported[..i], &reported[i + self.text.len()..]))
            }
            How::Suffix if self.matches(reported) => {
                Some(format!("{}{to}", &reported[..reported.len() - self.text.len()]))
            }
            // go test: `TestX/name/sub`, a subtest of a renamed row or function.
            How::Suffix if reported.starts_with("Test") && reported.split('/').any(|p| p == self.text) => {
                Some(reported.split('/').map(|p| if p == self.text { to } else { p }).collect::<Vec<_>>().join("/"))
            }
            How::Suffix => None,
        }
    }

    fn matches(&self, reported: &str) -> bool {
        match self.how {
            How::Contains => reported.contains(&self.text),
            How::Suffix => {
                reported == self.text
                    || reported
                        .strip_suffix(&self.text)
                        .is_some_and(|p| p.ends_with("::") || p.ends_with('/') || p.ends_with(' ') || p.ends_with('.'))
            }
        }
    }
}

/// A run's controls: how each shows in the results (in the order of `planted`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Control {
    pub names: Vec<Matcher>,
    /// The real tests that run under a fresh name beside their controls: how each shows in
    /// the results, and its own name (in the same form) to report it by.
    pub renamed: Vec<(Matcher, String)>,
    /// The candidates planted, one per name (none for a synthetic control).
    pub planted: Vec<Candidate>,
    /// Why these controls are weaker than calibrated ones, if they are (uncalibrated, or no
    /// unit of the dataset's could be copied).
    pub weak: Option<String>,
}

/// A copy calibration may verify: which unit, its text's hash (the dataset may change), and
/// the edits that make it a control (byte ranges within the unit's text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub file: String,
    pub unit: String,
    pub hash: String,
    pub edits: Vec<(usize, usize, String)>,
}

/// What to plant.
pub enum Plan<'a> {
    /// Several controls, drawn from a verified pool (calibrated) or made exact here.
    Run(Option<&'a [Candidate]>),
    /// Every candidate of the instance, each once (calibration verifies them).
    All(&'a [Candidate]),
}

/// What eval asks of `polysandbox plant-controls` (see [`plant_contained`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub language: String,
    pub parser: Parser,
    pub tree: std::path::PathBuf,
    pub tests: Vec<String>,
    pub plan: PlanRequest,
}

/// A [`Plan`] that crosses a process boundary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PlanRequest {
    /// Every candidate of the instance ([`candidates`], with `inputs`), each once.
    All { inputs: bool },
    /// Several, from this verified pool or (none) made exact.
    Run(Option<Vec<Candidate>>),
}

/// Plants as `req` says, in this process.
pub fn serve(req: &Request) -> Result<Option<Control>, String> {
    match &req.plan {
        PlanRequest::All { inputs } => {
            let all = candidates(&req.language, &req.tree, &req.tests, *inputs);
            plant(&req.language, req.parser, &req.tree, &req.tests, Plan::All(&all))
        }
        PlanRequest::Run(pool) => plant(&req.language, req.parser, &req.tree, &req.tests, Plan::Run(pool.as_deref())),
    }
}

/// How long the controls of one instance may take to make.
const PLANT_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Plants as `req` says in a child process, `binary plant-controls` (the request on its
/// stdin, the answer as JSON on its stdout). The model reads the dataset's test files, data
/// of any shape: whatever goes wrong there (a panic aborts the process: `panic = "abort"`, so
/// no `catch_unwind` could hold it; an endless loop) ends that child, and is this instance's
/// error, never the end of eval and every other instance's result. The outer error is the
/// child's failure (it died, took too long, could not start: worth another attempt, its draws
/// are random); the inner one its answer.
pub fn plant_contained(binary: &Path, req: &Request) -> Result<Result<Option<Control>, String>, String> {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};
    let input = serde_json::to_vec(req).map_err(|e| e.to_string())?;
    let mut child = Command::new(binary)
        .arg("plant-controls")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let (Some(mut stdin), Some(mut stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("the control generator's pipes".into());
    };
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let errors = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = stderr.read_to_string(&mut err);
        err
    });
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if started.elapsed() > PLANT_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("the control generator took more than {}s", PLANT_LIMIT.as_secs()));
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(5)),
            Err(e) => break Err(format!("the control generator: {e}")),
        }
    };
    let _ = writer.join();
    let out = reader.join().unwrap_or_default();
    let err = errors.join().unwrap_or_default();
    let status = status?;
    if !status.success() {
        let why = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return Err(format!(
            "the control generator failed ({status}){}",
            if why.is_empty() { String::new() } else { format!(": {why}") }
        ));
    }
    serde_json::from_slice::<Result<Option<Control>, String>>(&out)
        .map_err(|e| format!("the control generator's answer: {e}"))
}

/// `polysandbox plant-controls`: a [`Request`] on stdin, its answer on stdout.
pub fn plant_controls_main() -> i32 {
    use std::io::{Read, Write};
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("polysandbox plant-controls: stdin: {e}");
        return 1;
    }
    let answer = match serde_json::from_slice::<Request>(&input) {
        Ok(req) => serve(&req),
        Err(e) => Err(format!("the request: {e}")),
    };
    let Ok(text) = serde_json::to_string(&answer) else { return 1 };
    if std::io::stdout().write_all(text.as_bytes()).and_then(|_| std::io::stdout().flush()).is_err() {
        return 1;
    }
    0
}

/// The language of an exercise's tests, by the catalogue's language name.
pub fn lang_of(language: &str) -> Option<Lang> {
    Some(match language {
        "python" => Lang::Python,
        "rust" => Lang::Rust,
        "javascript" | "typescript" => Lang::Js,
        "java" => Lang::Java,
        "go" => Lang::Go,
        "cpp" | "c++" => Lang::Cpp,
        _ => return None,
    })
}

/// The files controls may go into: the dataset's test files, and for Go every `_test.go` of
/// their package (Exercism keeps the cases in `cases_test.go`).
fn test_files(lang: Lang, tree: &Path, tests: &[String]) -> Vec<String> {
    let mut out: Vec<String> = tests.to_vec();
    if lang == Lang::Go {
        if let Some(dir) = tests.first().map(|t| t.rsplit_once('/').map(|x| x.0.to_string()).unwrap_or_default()) {
            let full = if dir.is_empty() { tree.to_path_buf() } else { tree.join(&dir) };
            let mut more: Vec<String> = std::fs::read_dir(full)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with("_test.go"))
                .map(|n| if dir.is_empty() { n } else { format!("{dir}/{n}") })
                .collect();
            more.sort();
            for m in more {
                if !out.contains(&m) {
                    out.push(m);
                }
            }
        }
    }
    let ext: &[&str] = match lang {
        Lang::Python => &[".py"],
        Lang::Rust => &[".rs"],
        Lang::Js => &[".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx"],
        Lang::Java => &[".java"],
        Lang::Go => &[".go"],
        Lang::Cpp => &[".cpp", ".cc", ".cxx"],
    };
    out.retain(|f| ext.iter().any(|e| f.ends_with(e)));
    out
}

fn read(tree: &Path, rel: &str) -> Option<String> {
    let p = super::prepare::plain_path(tree, rel).ok()?;
    std::fs::read_to_string(p).ok()
}

fn hash(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))[..16].to_string()
}

/// Another value of the literal `text`, none of `avoid`: a number moved, a string with one
/// letter or digit changed (or, empty, given one), a boolean turned, a char changed.
fn mutate(text: &str, avoid: &[&str]) -> Option<String> {
    for _ in 0..16 {
        let m = mutate_once(text)?;
        if m != text && !avoid.contains(&m.as_str()) {
            return Some(m);
        }
    }
    None
}

fn mutate_once(text: &str) -> Option<String> {
    match text {
        "true" => return Some("false".into()),
        "false" => return Some("true".into()),
        "True" => return Some("False".into()),
        "False" => return Some("True".into()),
        _ => {}
    }
    let first = text.chars().next()?;
    // 0x7f, 0b101, 0o17 (and a type suffix): one digit changed to another of its base, so the
    // literal keeps its width and fits its type.
    if let Some((prefix, base)) =
        [("0x", 16), ("0X", 16), ("0b", 2), ("0B", 2), ("0o", 8)].iter().find(|(p, _)| text.starts_with(p))
    {
        let body = &text[prefix.len()..];
        let n = body.chars().take_while(|c| c.is_digit(*base) || *c == '_').count();
        let (digits, suffix) = body.split_at(n);
        let spots: Vec<usize> = digits.char_indices().filter(|(_, c)| *c != '_').map(|(i, _)| i).collect();
        if spots.is_empty()
            || !suffix
                .trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '_')
                .chars()
                .all(|c| c.is_ascii_digit())
        {
            return None;
        }
        let i = spots[below(spots.len())];
        let c = digits.as_bytes()[i] as char;
        let upper = digits.chars().any(|c| c.is_ascii_uppercase());
        let new = loop {
            let d = std::char::from_digit(below(*base as usize) as u32, *base)?;
            let d = if upper { d.to_ascii_uppercase() } else { d };
            if !d.eq_ignore_ascii_case(&c) {
                break d;
            }
        };
        return Some(format!("{prefix}{}{new}{}{suffix}", &digits[..i], &digits[i + 1..]));
    }
    if first.is_ascii_digit() {
        let digits: String = text.chars().take_while(|c| c.is_ascii_digit()).collect();
        let rest = &text[digits.len()..];
        // Plain decimals, with a type suffix (5u64, 5L) or a fraction (1.5): nothing else.
        if let Some(frac) = rest.strip_prefix('.') {
            if !frac.chars().all(|c| c.is_ascii_digit()) || frac.is_empty() {
                return None;
            }
            let n: u64 = digits.parse().ok()?;
            return Some(format!("{}.{frac}", n.checked_add(1 + below(9) as u64)?));
        }
        // A type suffix: letters, then digits (u64, i32, L).
        let suffix = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '_');
        if digits.len() > 1 && digits.starts_with('0')
            || !suffix.chars().all(|c| c.is_ascii_digit())
            || rest.starts_with(['e', 'E', 'x', 'X', 'b', 'B', 'o'])
        {
            return None;
        }
        let n: u64 = digits.parse().ok()?;
        let delta = [1, 2, 3, 7, 10][below(5)];
        let m = if n >= delta && (random_u64() % 2 == 0 || n.checked_add(delta).is_none()) {
            n - delta
        } else {
            n.checked_add(delta)?
        };
        return Some(format!("{m}{rest}"));
    }
    let quote = first;
    if !['"', '\'', '`'].contains(&quote) || text.len() < 2 || !text.ends_with(quote) {
        return None;
    }
    let inner = &text[1..text.len() - 1];
    let chars: Vec<char> = inner.chars().collect();
    // Letters and digits not inside an escape.
    let spots: Vec<usize> =
        (0..chars.len()).filter(|&i| chars[i].is_ascii_alphanumeric() && (i == 0 || chars[i - 1] != '\\')).collect();
    if spots.is_empty() {
        if chars.is_empty() {
            return Some(format!("{quote}{}{quote}", ['a', 'x', 'e', 'o'][below(4)]));
        }
        return None;
    }
    let i = spots[below(spots.len())];
    let c = chars[i];
    let pool: Vec<char> = if c.is_ascii_digit() {
        ('0'..='9').collect()
    } else if c.is_ascii_uppercase() {
        ('A'..='Z').collect()
    } else {
        ('a'..='z').collect()
    };
    let new = loop {
        let n = pool[below(pool.len())];
        if !n.eq_ignore_ascii_case(&c) {
            break n;
        }
    };
    let mut out = chars.clone();
    out[i] = new;
    Some(format!("{quote}{}{quote}", out.into_iter().collect::<String>()))
}

/// Whether a literal is an array type's length (Go's `[2][2]int{...}`): part of a type, not
/// of an expectation; changed, the file no longer compiles.
fn is_array_length(src: &str, start: usize, end: usize) -> bool {
    src[..start].ends_with('[')
        && src[end..].starts_with(']')
        && src[end + 1..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '[' || c == '*')
}

/// The edit for one changed site, and what a count of the file tells of it: a literal of the
/// site given another value (none of the values in its display, so a set or a list cannot come
/// out equal; of a display's literals, the one a count tells least of), or the check turned
/// over.
fn site_edit(corpus: &values::Corpus, src: &str, u: &Unit, site: &Site) -> Option<((usize, usize, String), f64)> {
    match site {
        Site::Toggle(s, e, to) => Some(((*s, *e, to.clone()), corpus.tell_toggle(u, &src[*s..*e], to))),
        Site::Lits(lits) => {
            let avoid: Vec<&str> = lits.iter().map(|l| &src[l.start..l.end]).collect();
            least_told(corpus, u, lits.iter().filter(|l| !is_array_length(src, l.start, l.end)), &avoid)
        }
    }
}

/// Of `sites`, the edit a count of the file tells least of (ties drawn at random).
fn least_told_site(
    corpus: &values::Corpus,
    src: &str,
    u: &Unit,
    sites: &[&Site],
) -> Option<((usize, usize, String), f64)> {
    pick_least(sites.iter().filter_map(|s| site_edit(corpus, src, u, s)).collect())
}

fn pick_least(mut options: Vec<((usize, usize, String), f64)>) -> Option<((usize, usize, String), f64)> {
    let best = options.iter().map(|o| o.1.abs()).fold(f64::INFINITY, f64::min);
    options.retain(|o| o.1.abs() <= best + 1e-9);
    (!options.is_empty()).then(|| options.swap_remove(below(options.len())))
}

/// Of `lits`, the one whose replacement changes the least that a forger counting the file can
/// see (ties drawn at random), with its replacement and what a count tells of it.
fn least_told<'a>(
    corpus: &values::Corpus,
    u: &Unit,
    lits: impl Iterator<Item = &'a model::Lit>,
    avoid: &[&str],
) -> Option<((usize, usize, String), f64)> {
    pick_least(lits.filter_map(|l| corpus.replace(u, l, avoid).map(|(m, gap)| ((l.start, l.end, m), gap))).collect())
}

/// A count of the file that tells more than this (in logs: about 2.7 times as often) says
/// which is the control: a turned check whose other form the file never uses.
const TELLING: f64 = 1.0;

/// Candidate copies of every unit of `file`: `exact` ones (an exact site changed), and, when
/// `strong`, ones with an input changed as well (a site, exact or loose, plus an input). Each
/// changed literal takes a value a real test of the file could have had (values.rs). A unit
/// whose name another unit of the file shares gives none: its original, renamed while it has a
/// control beside it, could not be told from its namesake when its name is given back.
fn unit_candidates(file: &str, src: &str, lang: Lang, units: &[Unit], strong: bool, inputs: bool) -> Vec<Candidate> {
    let corpus = values::Corpus::new(src, lang, units);
    let mut out = Vec::new();
    for u in units {
        if units.iter().filter(|x| x.name == u.name).count() > 1 {
            continue;
        }
        let rel = |(s, e, m): (usize, usize, String)| (s - u.start, e - u.start, m);
        let h = hash(&src[u.start..u.end]);
        let mk = |edits: Vec<(usize, usize, String)>| Candidate {
            file: file.to_string(),
            unit: u.name.clone(),
            hash: h.clone(),
            edits: edits.into_iter().map(rel).collect(),
        };
        if !strong {
            let sites: Vec<&Site> = u.sites.iter().collect();
            if let Some((e, _)) = least_told_site(&corpus, src, u, &sites) {
                out.push(mk(vec![e]));
            }
            continue;
        }
        let all: Vec<&Site> = u.sites.iter().chain(&u.loose).collect();
        let free = |e: Option<(usize, usize)>| {
            u.inputs.iter().filter(move |i| {
                !is_array_length(src, i.start, i.end) && e.is_none_or(|e| i.end <= e.0 || i.start >= e.1)
            })
        };
        for _ in 0..2 {
            // A site changed (the one a count tells least of); without one, or when every one
            // tells (a turned check the file never turns), an input alone: gold then decides
            // whether it fails.
            let site = least_told_site(&corpus, src, u, &all);
            let telling = site.as_ref().is_none_or(|(_, t)| t.abs() > TELLING);
            let alone = inputs && telling && free(None).next().is_some();
            let first = if alone { least_told(&corpus, u, free(None), &[]).map(|x| x.0) } else { site.map(|x| x.0) };
            let Some(e) = first else { break };
            let mut edits = vec![e.clone()];
            if inputs && !alone {
                if let Some((m, _)) = least_told(&corpus, u, free(Some((e.0, e.1))), &[]) {
                    edits.push(m);
                }
            }
            let c = mk(edits);
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// The candidates calibration verifies for an exercise: copies with an expectation and (when
/// `inputs`) an input changed, or an input alone where every expectation of the unit would
/// tell (a check the file never turns), two per unit where it can.
pub fn candidates(language: &str, tree: &Path, tests: &[String], inputs: bool) -> Vec<Candidate> {
    let Some(lang) = lang_of(language) else { return vec![] };
    let (files, pkg) = sources(lang, tree, tests);
    files
        .iter()
        .flat_map(|(f, src)| unit_candidates(f, src, lang, &model::units_in(src, lang, &pkg), true, inputs))
        .collect()
}

/// The test files' sources, and (Go) what their package says of its tables.
fn sources(lang: Lang, tree: &Path, tests: &[String]) -> (Vec<(String, String)>, model::GoPkg) {
    let files: Vec<(String, String)> =
        test_files(lang, tree, tests).into_iter().filter_map(|f| read(tree, &f).map(|s| (f, s))).collect();
    let pkg = model::go_package(&files.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>());
    (files, pkg)
}

/// Words for names: those of the file's own test names, and a few common ones when they are
/// too few to vary.
fn word_pool<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    // No word that starts with a digit: a Rust or Python name cannot start with one.
    let mut w: Vec<String> = names
        .flat_map(model::words)
        .filter(|w| w != "test" && w.len() > 1 && !w.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    w.sort();
    w.dedup();
    if w.len() < 6 {
        w.extend(
            ["value", "input", "single", "several", "empty", "large", "small", "returns", "handles", "case"]
                .iter()
                .map(|s| s.to_string()),
        );
    }
    w
}

/// The fewest and most words a fresh name has.
const NAME_WORDS: (usize, usize) = (2, 8);

/// The range of word counts fresh names take in a file whose test names have `counts` words:
/// theirs, within [`NAME_WORDS`] (java/two-bucket's names have 9 or more words).
fn name_lengths(counts: &[usize]) -> (usize, usize) {
    let (min, max) = NAME_WORDS;
    let lo = counts.iter().min().copied().unwrap_or(2).clamp(min, max);
    let hi = counts.iter().max().copied().unwrap_or(4).clamp(lo, max);
    (lo, hi)
}

/// A fresh name in `style`, of `n` words from `pool` (within [`NAME_WORDS`]), not among
/// `taken` (case folded, spaces as underscores, as Go reports subtests); `None` if none is
/// found in a bounded number of draws.
fn fresh_name(style: &Style, pool: &[String], n: usize, taken: &mut Vec<String>, capital: bool) -> Option<String> {
    if pool.is_empty() {
        return None;
    }
    let n = n.clamp(NAME_WORDS.0, NAME_WORDS.1);
    for attempt in 0usize..16_000 {
        // A word more every thousand draws, should the pool be too small for `n` words.
        let ws: Vec<String> = (0..n + attempt / 1000).map(|_| pool[below(pool.len())].clone()).collect();
        let name = match style {
            Style::Snake { prefix } => format!("{prefix}{}", ws.join("_")),
            Style::Camel { prefix } => {
                let mut s = prefix.clone();
                for (i, w) in ws.iter().enumerate() {
                    if i == 0 && prefix.is_empty() {
                        s.push_str(w);
                    } else {
                        let mut c = w.chars();
                        s.extend(c.next().map(|x| x.to_ascii_uppercase()));
                        s.push_str(c.as_str());
                    }
                }
                s
            }
            Style::Sentence => {
                let mut s = ws.join(" ");
                if capital {
                    let mut c = s.chars();
                    s = c.next().map(|x| x.to_ascii_uppercase()).into_iter().chain(c).collect();
                }
                s
            }
        };
        let key = name.to_ascii_lowercase().replace(' ', "_");
        // Nor the end of a name taken (a runner's `Suite name` would end with it).
        if !taken.iter().any(|t| *t == key || t.ends_with(&format!("_{key}")) || key.ends_with(&format!("_{t}"))) {
            taken.push(key);
            return Some(name);
        }
    }
    None
}

fn uuid() -> String {
    let a = random_u64();
    let b = random_u64();
    let h = format!("{a:016x}{b:016x}");
    format!("{}-{}-4{}-{}{}-{}", &h[..8], &h[8..12], &h[13..16], ["8", "9", "a", "b"][below(4)], &h[17..20], &h[20..32])
}

/// How a test named `name` (unquoted, in the unit's primary style) shows in `lang`'s results.
fn matcher(lang: Lang, name: &str) -> Matcher {
    Matcher { text: shown(lang, name), how: if lang == Lang::Java { How::Contains } else { How::Suffix } }
}

/// The part of `lang`'s reported name that is a test's own name: JUnit's `.method(`, go
/// test's subtest name (spaces as underscores), the name elsewhere.
fn shown(lang: Lang, name: &str) -> String {
    match lang {
        Lang::Java => format!(".{name}("),
        Lang::Go => name.replace(' ', "_"),
        _ => name.to_string(),
    }
}

/// What [`write`] planted: each control (its candidate, how it shows in the results), and each
/// original renamed beside it (how it shows, its own name in the same form).
type Written = (Vec<(Candidate, Matcher)>, Vec<(Matcher, String)>);

/// Writes the controls into the test files of `tree` (the host's own copy of the exercise).
/// Each unit that gives controls becomes a set of alike units: the original and its controls
/// (the candidate's edits), every one under a fresh name of the file's words (fresh tags too),
/// so that no name says which is the dataset's; and the original's own place goes to one of
/// them drawn at random, the others to random places among the siblings, so that no place
/// says it either. Returns how each control shows in the results, and how each renamed
/// original does with the name it is to be reported by.
fn write(lang: Lang, tree: &Path, chosen: &[&Candidate], pkg: &model::GoPkg) -> Result<Written, String> {
    let mut by_file: BTreeMap<&str, Vec<&Candidate>> = BTreeMap::new();
    for c in chosen {
        by_file.entry(c.file.as_str()).or_default().push(c);
    }
    let mut matchers = Vec::new();
    let mut renamed = Vec::new();
    for (file, cs) in by_file {
        let path = super::prepare::plain_path(tree, file)?;
        let src = std::fs::read_to_string(&path).map_err(|e| format!("{file}: {e}"))?;
        let units = model::units_in(&src, lang, pkg);
        let pool = word_pool(units.iter().map(|u| u.name.as_str()));
        let mut taken: Vec<String> = units.iter().map(|u| u.name.to_ascii_lowercase().replace(' ', "_")).collect();
        let counts: Vec<usize> = units.iter().map(|u| model::words(&u.name).len()).collect();
        let (lo, hi) = name_lengths(&counts);
        // The unit's text with `edits`, fresh names and fresh tags; and its new name.
        let mut named = |u: &Unit, edits: &[(usize, usize, String)]| -> Result<(String, String), String> {
            let mut text = src[u.start..u.end].to_string();
            let mut edits: Vec<(usize, usize, String)> = edits.to_vec();
            let primary_words = lo + below(hi.saturating_sub(lo) + 1);
            let mut reported = String::new();
            for (k, (s, e, style)) in u.names.iter().enumerate() {
                let old = &src[*s..*e];
                let quoted = old.starts_with(['"', '\'', '`']);
                let capital = old.chars().nth(usize::from(quoted)).is_some_and(|c| c.is_uppercase());
                let n = if k == 0 { primary_words } else { model::words(old).len() };
                let name = fresh_name(style, &pool, n, &mut taken, capital)
                    .ok_or_else(|| format!("{file}: no fresh name for a copy of {}", u.name))?;
                if k == 0 {
                    reported = name.clone();
                }
                let q = if quoted { old[..1].to_string() } else { String::new() };
                edits.push((s - u.start, e - u.start, format!("{q}{name}{q}")));
            }
            for (s, e) in &u.tags {
                let old = &src[*s..*e];
                if old.contains('[') && old.len() > 30 {
                    edits.push((s - u.start, e - u.start, format!("\"[{}]\"", uuid())));
                }
            }
            edits.sort_by_key(|e| std::cmp::Reverse(e.0));
            for (s, e, to) in &edits {
                if s <= e && *e <= text.len() && text.is_char_boundary(*s) && text.is_char_boundary(*e) {
                    text.replace_range(*s..*e, to);
                }
            }
            if !text.ends_with('\n') {
                text.push('\n');
            }
            Ok((text, reported))
        };
        // Each unit with its candidates, in the order drawn.
        let mut groups: Vec<(usize, Vec<&Candidate>)> = Vec::new();
        for c in cs {
            let Some(i) = units.iter().position(|u| u.name == c.unit && hash(&src[u.start..u.end]) == c.hash) else {
                continue;
            };
            match groups.iter_mut().find(|g| g.0 == i) {
                Some(g) => g.1.push(c),
                None => groups.push((i, vec![c])),
            }
        }
        // Byte range replaced (an insertion when empty), and its text.
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        for (i, cands) in groups {
            let u = &units[i];
            let mut pieces: Vec<(String, String, Option<&Candidate>)> = Vec::new();
            let (text, name) = named(u, &[])?;
            pieces.push((text, name, None));
            for c in cands {
                let (text, name) = named(u, &c.edits)?;
                pieces.push((text, name, Some(c)));
            }
            // Which piece keeps the original's place: any, alike.
            let first = below(pieces.len());
            pieces.swap(0, first);
            let siblings: Vec<&Unit> = units.iter().filter(|x| x.container == u.container).collect();
            let blank = src[u.end..].starts_with('\n') || src[..u.start].ends_with("\n\n");
            for (k, (text, name, cand)) in pieces.into_iter().enumerate() {
                if k == 0 {
                    edits.push((u.start, u.end, text));
                } else {
                    // Among its siblings: before one of them, or after the last.
                    let j = below(siblings.len() + 1);
                    let at = if j < siblings.len() {
                        siblings[j].start
                    } else {
                        siblings.last().map(|x| x.end).unwrap_or(u.end)
                    };
                    edits.push((at, at, if blank { format!("{text}\n") } else { text }));
                }
                match cand {
                    Some(c) => matchers.push((c.clone(), matcher(lang, &name))),
                    None => renamed.push((matcher(lang, &name), shown(lang, &u.name))),
                }
            }
        }
        // From the end: at one place, a unit's own text is replaced before what goes in front.
        edits.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
        let mut out = src.clone();
        for (s, e, text) in edits {
            if s > e || e > out.len() || !out.is_char_boundary(s) || !out.is_char_boundary(e) {
                return Err(format!("{file}: overlapping copies of its tests"));
            }
            out.replace_range(s..e, &text);
        }
        std::fs::write(&path, out).map_err(|e| format!("{file}: {e}"))?;
    }
    Ok((matchers, renamed))
}

/// Plants the controls among the exercise's test files in `tree` (its language's). `None` when
/// the runner gives no per-test results (exit-code runners) or the language is not one the
/// model knows.
pub fn plant(
    language: &str,
    parser: Parser,
    tree: &Path,
    tests: &[String],
    plan: Plan,
) -> Result<Option<Control>, String> {
    if parser == Parser::ExitCode {
        return Ok(None);
    }
    let Some(lang) = lang_of(language) else { return Ok(None) };
    let (files, pkg) = sources(lang, tree, tests);
    let mut units_n = 0;
    let mut exact: Vec<Candidate> = Vec::new();
    // Each unit that may give controls: (file, name, hash).
    let mut current: Vec<(String, String, String)> = Vec::new();
    for (f, src) in &files {
        let (f, src) = (f, src.as_str());
        let units = model::units_in(src, lang, &pkg);
        units_n += units.len();
        current.extend(
            units
                .iter()
                .filter(|u| units.iter().filter(|x| x.name == u.name).count() == 1)
                .map(|u| (f.clone(), u.name.clone(), hash(&src[u.start..u.end]))),
        );
        exact.extend(unit_candidates(f, src, lang, &units, false, true));
    }
    let fresh = |c: &&Candidate| current.iter().any(|(f, n, h)| *f == c.file && *n == c.unit && *h == c.hash);
    let (pool, weak): (Vec<&Candidate>, Option<String>) = match plan {
        Plan::All(all) => (all.iter().filter(fresh).collect(), None),
        Plan::Run(Some(verified)) if verified.iter().filter(fresh).count() > 0 => {
            (verified.iter().filter(fresh).collect(), None)
        }
        Plan::Run(_) => (
            exact.iter().collect(),
            Some(
                "uncalibrated: each control is a copy of a real test with one expectation changed, beside its original"
                    .into(),
            ),
        ),
    };
    if pool.is_empty() {
        return synthetic(lang, tree, tests).map(Some);
    }
    let chosen: Vec<&Candidate> = match plan {
        Plan::All(_) => pool,
        Plan::Run(_) => {
            // Several: a third of the tests, at least three (as many as there are), at most 12;
            // from different units where the pool allows; weighed so that a count of the file
            // does not say which of a control and its original is which.
            let k = units_n.div_ceil(3).clamp(3, 12).min(pool.len());
            let facts = facts(lang, &files, &pkg, &pool);
            let tells: Vec<f64> = facts.iter().map(|f| f.tell).collect();
            let mut left: Vec<(usize, f64)> = balanced(&tells).into_iter().enumerate().collect();
            let mut out: Vec<usize> = Vec::new();
            while out.len() < k && !left.is_empty() {
                let used = |c: &Candidate| out.iter().any(|&o| pool[o].file == c.file && pool[o].unit == c.unit);
                // A control that takes a rare value of another unit's, with that unit's own
                // control planted too, or one another control takes too, would leave its value
                // more frequent than its original's: drawn last.
                let clash = |i: usize| {
                    out.iter().any(|&o| {
                        let (a, b) = (&facts[i], &facts[o]);
                        pool[i].file == pool[o].file
                            && (a.brings.iter().any(|t| b.has.contains(t) || b.brings.contains(t))
                                || b.brings.iter().any(|t| a.has.contains(t)))
                    })
                };
                let open: Vec<usize> = (0..left.len()).filter(|&j| !used(pool[left[j].0])).collect();
                let from: Vec<usize> = if open.is_empty() { (0..left.len()).collect() } else { open };
                let w = |j: usize| left[j].1 * if clash(left[j].0) { 1e-3 } else { 1.0 };
                let total: f64 = from.iter().map(|&j| w(j)).sum();
                let mut at = (random_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
                let mut pick = from[from.len() - 1];
                for &j in &from {
                    if at < w(j) {
                        pick = j;
                        break;
                    }
                    at -= w(j);
                }
                out.push(left.remove(pick).0);
            }
            out.into_iter().map(|i| pool[i]).collect()
        }
    };
    let (written, renamed) = write(lang, tree, &chosen, &pkg)?;
    if written.is_empty() {
        return synthetic(lang, tree, tests).map(Some);
    }
    let (planted, names) = written.into_iter().unzip();
    Ok(Some(Control { names, renamed, planted, weak }))
}

/// What the draw weighs of each candidate of `pool`: what a count of its file tells of it
/// (for each edit, how much more often its new text occurs outside the unit than its old text
/// does, in natural logs of one more than the counts, summed; a turned Rust `assert!(x)`
/// counts the file's `assert!(!` against its other `assert!(`), the rare literal texts (at most
/// twice in the file) its edits bring in, and those its unit has.
fn facts(lang: Lang, files: &[(String, String)], pkg: &model::GoPkg, pool: &[&Candidate]) -> Vec<Facts> {
    struct File<'a> {
        src: &'a str,
        units: Vec<Unit>,
        toks: Vec<lex::Token>,
        count: std::collections::HashMap<&'a str, usize>,
    }
    let mut per_file: BTreeMap<&str, File> = BTreeMap::new();
    for (f, src) in files {
        let toks = lex::lex(src, lang);
        let mut count = std::collections::HashMap::new();
        for t in &toks {
            *count.entry(t.text(src)).or_insert(0) += 1;
        }
        per_file.insert(f.as_str(), File { src, units: model::units_in(src, lang, pkg), toks, count });
    }
    let ln = |n: usize| (1.0 + n as f64).ln();
    pool.iter()
        .map(|c| {
            let Some(f) = per_file.get(c.file.as_str()) else { return Facts::default() };
            let src = f.src;
            let Some(u) = f.units.iter().find(|u| u.name == c.unit && hash(&src[u.start..u.end]) == c.hash) else {
                return Facts::default();
            };
            let mine: Vec<&lex::Token> = f.toks.iter().filter(|t| t.start >= u.start && t.end <= u.end).collect();
            let all = |t: &str| f.count.get(t).copied().unwrap_or(0);
            let outside =
                |form: &str| -> usize { all(form).saturating_sub(mine.iter().filter(|t| t.text(src) == form).count()) };
            let unit_text = &src[u.start..u.end];
            let forms = |neg: bool| {
                let ((a, n), (ua, un)) = (values::negated_checks(src), values::negated_checks(unit_text));
                if neg {
                    n.saturating_sub(un)
                } else {
                    a.saturating_sub(ua)
                }
            };
            let tell = c
                .edits
                .iter()
                .filter_map(|(s, e, to)| {
                    let from = src.get(u.start + s..u.start + e)?;
                    Some(if *to == format!("!({from})") {
                        ln(forms(true)) - ln(forms(false))
                    } else {
                        ln(outside(to)) - ln(outside(from))
                    })
                })
                .sum();
            let lit = |t: &&&lex::Token| matches!(t.kind, lex::Kind::Num | lex::Kind::Str | lex::Kind::Char);
            Facts {
                tell,
                brings: c.edits.iter().map(|e| e.2.clone()).filter(|t| all(t) <= 2).collect(),
                has: mine.iter().filter(lit).map(|t| t.text(src).to_string()).filter(|t| all(t) <= 2).collect(),
            }
        })
        .collect()
}

#[derive(Default)]
struct Facts {
    tell: f64,
    brings: Vec<String>,
    has: Vec<String>,
}

/// The weights that make the draw's controls as often more frequent in their file than their
/// originals as less (each tell's sign, see [`tell_of`], balanced; a tell near 0 weighs 1).
fn balanced(tells: &[f64]) -> Vec<f64> {
    let (pos, neg) = (tells.iter().filter(|&&t| t > 0.05).count(), tells.iter().filter(|&&t| t < -0.05).count());
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { (a as f64 / b as f64).min(1.0) };
    tells
        .iter()
        .map(|&t| {
            let w = if t > 0.05 {
                ratio(neg, pos)
            } else if t < -0.05 {
                ratio(pos, neg)
            } else {
                1.0
            };
            w.max(1e-3)
        })
        .collect()
}

/// When no unit of the dataset's can be copied (a test file of a shape the model does not
/// know, a Go table whose rows name no case): one plain failing test, named as the file's own
/// tests are (their words, their style), so that nothing in its name sets it apart.
fn synthetic(lang: Lang, tree: &Path, tests: &[String]) -> Result<Control, String> {
    let a = 100_000 + below(900_000) as u64;
    let b = a + 1 + below(1000) as u64;
    let first = tests.first().ok_or("the exercise names no test file")?;
    let texts: Vec<String> = test_files(lang, tree, tests).iter().filter_map(|f| read(tree, f)).collect();

    let (style, names) = synthetic_names(lang, &texts);
    let pool = word_pool(names.iter().map(String::as_str));
    let mut taken: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase().replace(' ', "_")).collect();
    let name = fresh_name(&style, &pool, 2 + below(2), &mut taken, false)
        .ok_or_else(|| format!("{first}: no fresh name for a synthetic control"))?;
    let append = |rel: &str, text: &str| -> Result<(), String> {
        use std::io::Write;
        let p = super::prepare::plain_path(tree, rel)?;
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).map_err(|e| format!("{rel}: {e}"))?;
        f.write_all(text.as_bytes()).map_err(|e| format!("{rel}: {e}"))
    };
    let text = match lang {
        Lang::Python => format!("\n\ndef {name}():\n    assert {a} == {b}\n"),
        Lang::Rust => format!("\n#[test]\nfn {name}() {{\n    assert_eq!({a}u64, {b}u64);\n}}\n"),
        Lang::Js => {
            // `it` where the file's tests are all `it(...)` (javascript/grep), `test` otherwise.
            let uses = |w: &str| {
                let re = regex::Regex::new(&format!(r"(^|[^\w.$])x?{w}\s*\(")).ok();
                texts.iter().any(|t| re.as_ref().is_some_and(|r| r.is_match(t)))
            };
            let call = if uses("it") && !uses("test") { "it" } else { "test" };
            format!("\n{call}('{name}', () => {{\n  expect({a}).toBe({b});\n}});\n")
        }
        Lang::Cpp => format!("\nTEST_CASE(\"{name}\") {{ REQUIRE({a} == {b}); }}\n"),
        Lang::Go => format!("\nfunc {name}(t *testing.T) {{\n\tif a, b := {a}, {b}; a != b {{\n\t\tt.Fatalf(\"%d != %d\", a, b)\n\t}}\n}}\n"),
        Lang::Java => {
            // A method of the test class, before its closing brace; JUnit's own names spelled
            // out in full where the file does not import them, so it compiles whatever the file
            // imports (AssertJ alone, java/mazy-mice).
            let src = read(tree, first).ok_or_else(|| format!("{first}: unreadable"))?;
            let at = java_class_end(&src).ok_or_else(|| format!("{first}: no test class to add a control to"))?;
            let junit4 = src.contains("import org.junit.Test;") && !src.contains("org.junit.jupiter");
            let imported = |name: &str| src.contains(&format!("import {name};"));
            let (test, asserts) = if junit4 {
                ("org.junit.Test", "org.junit.Assert")
            } else {
                ("org.junit.jupiter.api.Test", "org.junit.jupiter.api.Assertions")
            };
            let ann = if imported(test) || src.contains(&format!("import {}.*;", test.rsplit_once('.').map(|x| x.0).unwrap_or(""))) { "Test" } else { test };
            let method = format!("\n    @{ann}\n    public void {name}() {{\n        {asserts}.assertEquals({a}L, {b}L);\n    }}\n");
            let mut out = src.clone();
            if at > out.len() || !out.is_char_boundary(at) {
                return Err(format!("{first}: no test class to add a control to"));
            }
            out.insert_str(at, &method);
            let p = super::prepare::plain_path(tree, first)?;
            std::fs::write(&p, out).map_err(|e| format!("{first}: {e}"))?;
            return Ok(Control {
                names: vec![matcher(lang, &name)],
                renamed: vec![],
                planted: vec![],
                weak: Some(SYNTHETIC.into()),
            });
        }
    };
    append(first, &text)?;
    Ok(Control { names: vec![matcher(lang, &name)], renamed: vec![], planted: vec![], weak: Some(SYNTHETIC.into()) })
}

const SYNTHETIC: &str = "no test of the dataset's could be copied: one synthetic control";

/// Where a method goes in a Java test file: the start of the line of its first top-level
/// class's closing brace.
fn java_class_end(src: &str) -> Option<usize> {
    let toks = lex::lex(src, Lang::Java);
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate() {
        match t.text(src) {
            "{" => depth += 1,
            "}" => depth = depth.saturating_sub(1),
            "class" if depth == 0 => {
                let open = (i..toks.len()).find(|&k| toks[k].text(src) == "{")?;
                let close = lex::matching(src, &toks, open)?;
                let at = toks.get(close)?.start;
                return Some(src[..at].rfind('\n').map(|n| n + 1).unwrap_or(at));
            }
            _ => {}
        }
    }
    None
}

/// The style the test files name their tests in, and the names they use (for the pool of
/// words, and to stay clear of). `go test` runs `TestXxx` only when Xxx does not start with a
/// lower-case letter; a Python test must start with `test`.
fn synthetic_names(lang: Lang, texts: &[String]) -> (Style, Vec<String>) {
    use regex::Regex;
    static RES: std::sync::OnceLock<[Regex; 6]> = std::sync::OnceLock::new();
    let res = RES.get_or_init(|| {
        [
            Regex::new(r"(?m)^\s*def (test_?\w+)\s*\(").unwrap(),
            Regex::new(r"(?m)^\s*(?:pub\s+)?fn (\w+)\s*\(").unwrap(),
            Regex::new(r#"\b(?:test|it)\s*\(\s*['"`]([^'"`\n]+)['"`]"#).unwrap(),
            Regex::new(r#"\b(?:TEST_CASE|SECTION)\s*\(\s*"([^"\n]+)""#).unwrap(),
            Regex::new(r"(?m)^func (Test\w+)\s*\(").unwrap(),
            Regex::new(r"(?m)^\s*(?:public\s+|protected\s+|private\s+)?void\s+(\w+)\s*\(").unwrap(),
        ]
    });
    let (i, style) = match lang {
        Lang::Python => (0, Style::Snake { prefix: "test_".into() }),
        Lang::Rust => (1, Style::Snake { prefix: String::new() }),
        Lang::Js => (2, Style::Sentence),
        Lang::Cpp => (3, Style::Sentence),
        Lang::Go => (4, Style::Camel { prefix: "Test".into() }),
        Lang::Java => (5, Style::Camel { prefix: String::new() }),
    };
    let names =
        texts.iter().flat_map(|t| res[i].captures_iter(t).map(|c| c[1].to_string()).collect::<Vec<_>>()).collect();
    (style, names)
}

/// What the runner's results say of the controls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// Every one reported failed: the results are the runner's.
    Held,
    /// Reported passed or skipped (as many): forged, neutered, or a wrong answer that happens
    /// to meet a control's changed expectation.
    Passed(usize),
    /// Not reported (as many): the run ended before its tests, or the results came from
    /// elsewhere.
    Missing(usize),
}

/// Gives each real test that ran under a fresh name beside its controls its own name back,
/// before anything reads the results: the results, calibration, per-test usage and the
/// reports know the dataset's tests by their own names only.
pub fn restore(parsed: &mut Parsed, c: &Control) {
    let back = |name: &str| c.renamed.iter().find_map(|(m, to)| m.give_back(name, to));
    for t in &mut parsed.tests {
        if let Some(n) = back(&t.name) {
            t.name = n;
        }
    }
    parsed.spoke = std::mem::take(&mut parsed.spoke).into_iter().map(|n| back(&n).unwrap_or(n)).collect();
}

/// What the results reported under one control's name say of it: `None` when there is none,
/// `Some(true)` when it held (one of them failed), `Some(false)` when every one passed or was
/// skipped. One rule for calibration (which keeps the candidates that held under gold) and for
/// grading: a row of a Go table that several test functions loop over (go/matrix) runs under
/// each, and fails only in those that compare what its copy changed.
fn held(tests: &[super::parsers::TestResult], m: &Matcher) -> Option<bool> {
    let mut mine = tests.iter().filter(|t| m.matches(&t.name)).peekable();
    mine.peek()?;
    Some(mine.any(|t| matches!(t.status, Status::Failed | Status::Error)))
}

/// Whether each control (in order) was reported failed, by the rule grading judges it by.
pub fn failed_each(parsed: &Parsed, c: &Control) -> Vec<bool> {
    c.names.iter().map(|m| held(&parsed.tests, m) == Some(true)).collect()
}

/// Takes the controls' results out of `parsed` and says what they were.
pub fn check(parsed: &mut Parsed, c: &Control) -> Outcome {
    let is_control = |name: &str| c.names.iter().any(|m| m.matches(name));
    let (ctl, mut rest): (Vec<super::parsers::TestResult>, Vec<super::parsers::TestResult>) =
        std::mem::take(&mut parsed.tests).into_iter().partition(|t| is_control(&t.name));
    // A control planted as a row of a Go table runs as a subtest, and its failure fails the
    // parent test: the parent counts as passed when every failure under it is a control's,
    // every other subtest under it passed, and it wrote nothing of its own (no `t.Error` of
    // its own body). So the table's test is graded exactly as without the row.
    let ctl_failed: Vec<&str> =
        ctl.iter().filter(|t| matches!(t.status, Status::Failed | Status::Error)).map(|t| t.name.as_str()).collect();
    let mut cleared: Vec<String> = Vec::new();
    loop {
        let mut changed = false;
        for i in 0..rest.len() {
            let t = &rest[i];
            if t.status != Status::Failed || cleared.contains(&t.name) || parsed.spoke.contains(&t.name) {
                continue;
            }
            let under =
                |n: &str| n.len() > t.name.len() + 1 && n.starts_with(&t.name) && n.as_bytes()[t.name.len()] == b'/';
            if !ctl_failed.iter().any(|n| under(n)) {
                continue;
            }
            let others_clean =
                rest.iter().filter(|x| under(&x.name)).all(|x| x.status == Status::Passed || cleared.contains(&x.name));
            if others_clean {
                cleared.push(t.name.clone());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for t in rest.iter_mut().filter(|t| cleared.contains(&t.name)) {
        t.status = Status::Passed;
    }
    parsed.tests = rest;
    let failed = c.names.iter().filter(|m| held(&ctl, m) == Some(true)).count();
    let passed = c.names.iter().filter(|m| held(&ctl, m) == Some(false)).count();
    // Catch2's console totals count the controls' failures too.
    if let Some((_, f)) = parsed.totals.as_mut() {
        *f = f.saturating_sub(failed as u64);
    }
    if passed > 0 {
        return Outcome::Passed(passed);
    }
    if failed < c.names.len() {
        return Outcome::Missing(c.names.len() - failed);
    }
    Outcome::Held
}

/// A snippet's completion line: printed by code appended after the test code, so a run that
/// left early (exit 0 from the solution, before the tests) lacks it. Python and JavaScript,
/// whose files run top to bottom; other snippet languages start at a `main`.
pub fn snippet_trailer(file: &str, tag: &str) -> Option<String> {
    if file.ends_with(".py") {
        Some(format!("\nimport sys as _ps_sys\n_ps_sys.stdout.flush()\nprint('{tag}', flush=True)\n"))
    } else if file.ends_with(".js") || file.ends_with(".mjs") {
        Some(format!("\nconsole.log('{tag}');\n"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::parsers::TestResult;

    #[test]
    fn literals_get_other_values_of_their_kind() {
        for _ in 0..50 {
            let n = mutate("42", &[]).unwrap();
            assert!(n.parse::<u64>().is_ok() && n != "42", "{n}");
            let s = mutate("\"zero\"", &[]).unwrap();
            assert!(
                s.len() == 6
                    && s.starts_with('"')
                    && s != "\"zero\""
                    && s[1..5].chars().all(|c| c.is_ascii_lowercase()),
                "{s}"
            );
            assert_eq!(mutate("True", &[]).unwrap(), "False");
            assert!(mutate("5u64", &[]).unwrap().ends_with("u64"));
            assert!(mutate("1.5", &[]).unwrap().ends_with(".5"));
            assert!(mutate("\"\"", &[]).unwrap().len() == 3);
            let set = mutate("1", &["1", "2", "0", "3", "4", "8", "11"]).unwrap_or_default();
            assert!(!["1", "2", "0", "3", "4", "8", "11"].contains(&set.as_str()));
        }
        for _ in 0..50 {
            let h = mutate("0x1F", &[]).unwrap();
            assert!(
                h.len() == 4
                    && h.starts_with("0x")
                    && h != "0x1F"
                    && u8::from_str_radix(&h[2..], 16).is_ok()
                    && !h[2..].chars().any(|c| c.is_ascii_lowercase()),
                "{h}"
            );
            let h = mutate("0xffu8", &[]).unwrap();
            assert!(h.ends_with("u8") && h != "0xffu8" && u8::from_str_radix(&h[2..4], 16).is_ok(), "{h}");
            let b = mutate("0b101", &[]).unwrap();
            assert!(b != "0b101" && u8::from_str_radix(&b[2..], 2).is_ok(), "{b}");
        }
        assert_eq!(mutate("\"\\n\"", &[]), None);
    }

    fn tr(name: &str, status: Status) -> TestResult {
        TestResult { name: name.into(), status, duration_s: None, usage: None }
    }

    #[test]
    fn every_control_must_be_reported_failed_by_name() {
        let c = Control {
            names: vec![
                Matcher { text: "test_large_input".into(), how: How::Suffix },
                Matcher { text: "Two_books".into(), how: How::Suffix },
            ],
            renamed: vec![],
            planted: vec![],
            weak: None,
        };
        let mut p = Parsed {
            tests: vec![
                tr("t.py::T::test_a", Status::Passed),
                tr("t.py::T::test_large_input", Status::Failed),
                tr("TestCost/Two_books", Status::Failed),
            ],
            ..Parsed::default()
        };
        assert_eq!(check(&mut p, &c), Outcome::Held);
        assert_eq!(p.tests.len(), 1);
        let mut p = Parsed {
            tests: vec![tr("t.py::T::test_large_input", Status::Failed), tr("TestCost/Two_books", Status::Passed)],
            ..Parsed::default()
        };
        assert_eq!(check(&mut p, &c), Outcome::Passed(1));
        let mut p = Parsed {
            tests: vec![
                tr("t.py::T::test_large_input", Status::Failed),
                tr("t.py::T::not_test_large_input", Status::Passed),
            ],
            ..Parsed::default()
        };
        assert_eq!(check(&mut p, &c), Outcome::Missing(1));
        assert_eq!(p.tests.len(), 1, "a name that only ends the same is not the control's");
    }

    /// The shared polyglot benchmark's instances; without it, a skip said on stderr itself (the
    /// harness keeps a passing test's eprintln! to itself).
    fn shared_exercises(test: &str) -> Option<Vec<crate::eval::instance::Instance>> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/polyglot-benchmark");
        if !root.is_dir() {
            let line = format!("SKIPPED: {test}: no ../shared/polyglot-benchmark\n");
            // SAFETY: a write of a valid buffer to fd 2.
            unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
            return None;
        }
        Some(crate::eval::dataset::load(&root).unwrap())
    }

    /// Every exercise of the shared polyglot benchmark: its test files give units to copy,
    /// nearly all with an exact site, and planting controls keeps every unit the file had.
    #[test]
    fn the_shared_benchmark_gives_units_to_copy() {
        let Some(insts) = shared_exercises("the_shared_benchmark_gives_units_to_copy") else { return };
        let mut report = Vec::new();
        let mut bare = Vec::new();
        let mut with_exact = 0;
        for i in &insts {
            let crate::eval::instance::Kind::Exercise { dir, test, .. } = &i.kind else { continue };
            let lang = lang_of(&i.language).unwrap();
            let (files, pkg) = sources(lang, dir, test);
            let (mut n, mut exact, mut strong) = (0, 0, 0);
            for (_, src) in &files {
                let us = model::units_in(src, lang, &pkg);
                n += us.len();
                exact += us.iter().filter(|u| !u.sites.is_empty()).count();
                strong +=
                    us.iter().filter(|u| !(u.sites.is_empty() && u.loose.is_empty() && u.inputs.is_empty())).count();
            }
            report.push(format!("{:<40} units {n:>3} exact {exact:>3} strong {strong:>3}", i.id));
            if strong == 0 {
                bare.push(i.id.clone());
            }
            if exact > 0 {
                with_exact += 1;
            }
        }
        eprintln!("{}\n{with_exact} of {} with an exact site; none to copy: {bare:?}", report.join("\n"), insts.len());
        // Tests whose results name no single case (a Go table looped over without subtests,
        // go/counter's none at all) give a synthetic control, said in the result.
        let expected_bare = ["go/counter", "go/octal", "go/zebra-puzzle"];
        assert!(bare.iter().all(|b| expected_bare.contains(&b.as_str())), "nothing to copy in {bare:?}");
        assert!(with_exact * 100 >= insts.len() * 75, "{with_exact} of {} with an exact site", insts.len());
    }

    /// Planting in a copy of a real exercise's tests: the controls are the file's own units
    /// with new names of the same form, among their siblings, and they parse as the language.
    /// Every candidate of every shared exercise, planted at once (as calibration's verification
    /// does), leaves test files their language still reads: one bad copy would take every
    /// control from its instance. Python: `ast.parse`; Rust and C++: names are identifiers and
    /// no copy lands in (or is taken from) a preprocessor conditional.
    #[test]
    fn every_candidate_planted_at_once_is_valid_code() {
        let Some(insts) = shared_exercises("every_candidate_planted_at_once_is_valid_code") else { return };
        let mut bad = Vec::new();
        for i in &insts {
            let crate::eval::instance::Kind::Exercise { dir, test, .. } = &i.kind else { continue };
            if !["python", "rust", "cpp"].contains(&i.language.as_str()) {
                continue;
            }
            let d =
                std::env::temp_dir().join(format!("ps-plant-all-{}-{}", std::process::id(), i.id.replace('/', "_")));
            let _ = std::fs::remove_dir_all(&d);
            assert!(std::process::Command::new("cp").arg("-a").arg(dir).arg(&d).status().unwrap().success());
            let all = candidates(&i.language, &d, test, true);
            let c = plant(&i.language, Parser::JunitXml, &d, test, Plan::All(&all)).unwrap().unwrap();
            for f in test_files(lang_of(&i.language).unwrap(), &d, test) {
                let text = std::fs::read_to_string(d.join(&f)).unwrap();
                match i.language.as_str() {
                    "python" => {
                        let script = "import ast,sys\nsrc=open(sys.argv[1]).read()\ntry:\n    ast.parse(src)\nexcept SyntaxError as e:\n    sys.exit('%s: %r' % (e, src.splitlines()[max(0, e.lineno - 8):e.lineno]))";
                        let o = std::process::Command::new("python3")
                            .args(["-c", script])
                            .arg(d.join(&f))
                            .output()
                            .unwrap();
                        if !o.status.success() {
                            bad.push(format!("{} {f}: {}", i.id, String::from_utf8_lossy(&o.stderr).trim()));
                        }
                    }
                    _ => {
                        // No name that is not an identifier; no control inside an #if.
                        for m in &c.names {
                            let n = &m.text;
                            if i.language == "rust" && n.starts_with(|ch: char| ch.is_ascii_digit()) {
                                bad.push(format!("{} {f}: name {n}", i.id));
                            }
                            if let Some(at) = text.find(&format!("\"{n}\"")).or_else(|| text.find(&format!("fn {n}(")))
                            {
                                if model::in_conditional(&text[..at]) {
                                    bad.push(format!("{} {f}: {n} inside #if", i.id));
                                }
                            }
                        }
                    }
                }
            }
            let _ = std::fs::remove_dir_all(&d);
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// The red team's adversary (adversary.rs) over every shared exercise, controls planted as
    /// eval plants them from the candidates calibration would verify: within each pair of a
    /// control and its original, neither its guess nor any single clue nor all the clues
    /// weighed by a model trained on other exercises is right much more often than a coin.
    /// (Before values.rs and the renamed originals: red team 0.895, best clue 0.821, model
    /// 0.950.)
    #[test]
    fn the_adversary_tells_a_control_from_its_original_at_chance() {
        let Some(insts) = shared_exercises("the_adversary_tells_a_control_from_its_original_at_chance") else {
            return;
        };
        adversary_at_chance(&insts, true);
    }

    /// The same with controls as `--no-calibration` plants them (an exact expectation changed).
    #[test]
    fn the_adversary_tells_uncalibrated_controls_at_chance() {
        let Some(insts) = shared_exercises("the_adversary_tells_uncalibrated_controls_at_chance") else {
            return;
        };
        adversary_at_chance(&insts, false);
    }

    fn adversary_at_chance(insts: &[crate::eval::instance::Instance], calibrated: bool) {
        let pairs = adversary::pairs(insts, 3, calibrated);
        let m = adversary::measure(&pairs);
        let what = if calibrated { "calibrated" } else { "uncalibrated" };
        let mut table = format!("{what}\nlanguage      pairs  red-team  best-clue  model  per-language  twin-found\n");
        for r in &m.rows {
            table += &format!(
                "{:<12} {:>6}  {:>8.3}  {:>9.3}  {:>5.3}  {:>12.3}  {:>10.3}\n",
                r.language, r.pairs, r.red_team, r.best_clue, r.model, r.lang_model, r.found
            );
        }
        table += &format!("best single clue: {} ({:.3})\n", m.best_clue.0, m.best_clue.1);
        let clues = adversary::clue_table(&pairs);
        for ((c, a), (_, w)) in clues.iter().zip(&m.weights) {
            table += &format!("  {c:<52} {a:.3}  weight {w:+.2}\n");
        }
        eprintln!("{table}");
        if std::env::var_os("PS_ADVERSARY_DUMP").is_some() {
            for p in &pairs {
                let sign = if p.a_is_control { 1.0 } else { -1.0 };
                let f: Vec<String> = p.diff.iter().map(|d| format!("{:+.2}", d * sign)).collect();
                eprintln!("{:+.2} {} {} || {}", p.diff[3] * sign, p.id, p.what, f.join(" "));
            }
        }
        let all = m.rows.iter().find(|r| r.language == "all").unwrap();
        assert!(all.pairs >= 1000, "too few pairs to measure: {}", all.pairs);
        // Each clue alone (either direction, over every pair), the best one learned on other
        // exercises, the red team's rule and both models.
        let worst = [all.red_team, all.best_clue, all.model, all.lang_model]
            .into_iter()
            .chain(clues.iter().map(|c| c.1))
            .fold(0.0, f64::max);
        assert!(worst <= 0.60, "the adversary tells controls apart:\n{table}");
    }

    #[test]
    fn a_synthetic_control_is_named_as_the_files_own_tests() {
        // go/octal's shape: one test looping over a table whose rows name no case.
        let go = "package octal\n\nimport \"testing\"\n\nvar testCases = []struct {\n\tinput string\n\texpectedNum int64\n\texpectErr bool\n}{\n\t{\"1\", 1, false},\n}\n\nfunc TestParseOctal(t *testing.T) {\n\tfor _, tc := range testCases {\n\t\tif n, _ := ParseOctal(tc.input); n != tc.expectedNum {\n\t\t\tt.Fatal(n)\n\t\t}\n\t}\n}\n\nfunc BenchmarkParseOctal(b *testing.B) {}\n";
        let py = "def helper():\n    pass\n\nfor x in []:\n    def test_converts_digits(): pass\n";
        for (lang, file, text, prefix) in [("go", "octal_test.go", go, "Test"), ("python", "x_test.py", py, "test_")] {
            let mut names = Vec::new();
            for k in 0..8 {
                let d = std::env::temp_dir().join(format!("ps-synthetic-{}-{lang}-{k}", std::process::id()));
                let _ = std::fs::remove_dir_all(&d);
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(d.join(file), text).unwrap();
                let c = synthetic(lang_of(lang).unwrap(), &d, &[file.into()]).unwrap();
                let name = c.names[0].text.clone();
                let after = std::fs::read_to_string(d.join(file)).unwrap();
                assert!(after.contains(&format!("{name}(")), "{after}");
                let rest = name.strip_prefix(prefix).unwrap_or_else(|| panic!("{name}"));
                // Words, not a tag: no run of hex digits, no digit at all.
                assert!(!rest.chars().any(|c| c.is_ascii_digit()) && rest.len() >= 4, "{name}");
                if lang == "go" {
                    assert!(rest.starts_with(|c: char| c.is_ascii_uppercase()), "go test would not run {name}");
                    assert_ne!(name, "TestParseOctal");
                }
                names.push(name);
                let _ = std::fs::remove_dir_all(&d);
            }
            names.sort();
            names.dedup();
            assert!(names.len() > 1, "{lang}: always {names:?}");
        }
    }

    #[test]
    fn controls_are_copies_among_the_real_tests() {
        let d = std::env::temp_dir().join(format!("ps-control-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let py = "import unittest\n\nfrom x import f\n\n\nclass FTest(unittest.TestCase):\n    def test_one_item(self):\n        self.assertEqual(f([1]), 1)\n\n    def test_two_items(self):\n        self.assertEqual(f([1, 2]), 3)\n\n    def test_no_items(self):\n        self.assertEqual(f([]), 0)\n\n    def test_many_items(self):\n        self.assertEqual(f([1, 2, 3]), 6)\n";
        std::fs::write(d.join("f_test.py"), py).unwrap();
        let c = plant("python", Parser::JunitXml, &d, &["f_test.py".into()], Plan::Run(None)).unwrap().unwrap();
        assert_eq!(c.names.len(), 3);
        assert!(c.weak.is_some());
        let after = std::fs::read_to_string(d.join("f_test.py")).unwrap();
        let units = model::units(&after, Lang::Python);
        assert_eq!(units.len(), 7, "{after}");
        assert!(units.iter().all(|u| u.name.starts_with("test_") && u.container == units[0].container), "{after}");
        let o = std::process::Command::new("python3")
            .args(["-c", "import ast,sys; ast.parse(open(sys.argv[1]).read())"])
            .arg(d.join("f_test.py"))
            .output();
        if let Ok(o) = o {
            assert!(o.status.success(), "{}\n{after}", String::from_utf8_lossy(&o.stderr));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A scratch directory with `files` written into it.
    fn scratch(tag: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ps-control-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for (f, text) in files {
            let p = d.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        d
    }

    /// java/two-bucket's test names have 9 or more words, more than a fresh name's most: the
    /// range of lengths once underflowed (`hi - lo + 1`) and `fresh_name` aborted the run.
    #[test]
    fn names_longer_than_a_fresh_names_most_words_plant() {
        assert_eq!(name_lengths(&[9, 10, 12]), (8, 8));
        assert_eq!(name_lengths(&[1, 3]), (2, 3));
        assert_eq!(name_lengths(&[]), (2, 4));
        let java = "import org.junit.jupiter.api.Test;\n\nimport static org.assertj.core.api.Assertions.assertThat;\n\npublic class TwoBucketTest {\n\n    @Test\n    public void testBucketOneSizeThreeBucketTwoSizeFiveStartWithOne() {\n        TwoBucket twoBucket = new TwoBucket(3, 5, 1, \"one\");\n        assertThat(twoBucket.getTotalMoves()).isEqualTo(4);\n    }\n\n    @Test\n    public void testBucketOneSizeThreeBucketTwoSizeFiveStartWithTwo() {\n        TwoBucket twoBucket = new TwoBucket(3, 5, 1, \"two\");\n        assertThat(twoBucket.getTotalMoves()).isEqualTo(8);\n    }\n\n    @Test\n    public void testBucketOneSizeSevenBucketTwoSizeElevenStartWithOne() {\n        TwoBucket twoBucket = new TwoBucket(7, 11, 2, \"one\");\n        assertThat(twoBucket.getTotalMoves()).isEqualTo(14);\n    }\n}\n";
        let f = "src/test/java/TwoBucketTest.java";
        for k in 0..20 {
            let d = scratch(&format!("long-names-{k}"), &[(f, java)]);
            let c = plant("java", Parser::JunitXml, &d, &[f.into()], Plan::Run(None)).unwrap().unwrap();
            assert!(!c.names.is_empty());
            let after = std::fs::read_to_string(d.join(f)).unwrap();
            for u in model::units(&after, Lang::Java) {
                let n = model::words(&u.name).len();
                assert!((2..=9).contains(&n) || u.name.starts_with("testBucket"), "{}", u.name);
            }
            let _ = std::fs::remove_dir_all(&d);
        }
    }

    /// go/matrix: one table feeds TestNew, TestRows and TestCols, so a control row runs under
    /// each and fails only where its changed field is compared. Calibration kept it (one of its
    /// results failed) and grading refused it (one passed): gold was unresolved. One rule now.
    #[test]
    fn a_control_is_judged_alike_in_calibration_and_grading() {
        let c = Control {
            names: vec![Matcher { text: "two_rows_again".into(), how: How::Suffix }],
            renamed: vec![],
            planted: vec![],
            weak: None,
        };
        let results = || Parsed {
            tests: vec![
                tr("TestNew", Status::Passed),
                tr("TestNew/two_rows_again", Status::Passed),
                tr("TestRows", Status::Failed),
                tr("TestRows/two_rows_again", Status::Failed),
                tr("TestCols", Status::Passed),
                tr("TestCols/two_rows_again", Status::Passed),
            ],
            ..Parsed::default()
        };
        assert_eq!(failed_each(&results(), &c), [true]);
        let mut p = results();
        assert_eq!(check(&mut p, &c), Outcome::Held);
        assert!(p.tests.iter().all(|t| t.status == Status::Passed), "{:?}", p.tests);
        // Every result of its name passed: passed, in both.
        let mut p = Parsed {
            tests: vec![tr("TestRows/two_rows_again", Status::Passed), tr("TestCols/two_rows_again", Status::Passed)],
            ..Parsed::default()
        };
        assert_eq!(failed_each(&p, &c), [false]);
        assert_eq!(check(&mut p, &c), Outcome::Passed(1));
    }

    /// Every exercise of the benchmark there is here: ../shared's 114, and the whole 225 when
    /// `POLYSANDBOX_POLYGLOT_FULL` names a checkout of Aider-AI/polyglot-benchmark. Each one's
    /// controls made as calibration makes them (every candidate at once) and as a run does
    /// (uncalibrated): no error, no panic, at least one control, and no call the file cannot
    /// make (a name called unqualified that the original never calls, Catch2's `_FALSE` forms
    /// aside); Python files still parse and JavaScript files pass `node --check`.
    #[test]
    fn every_exercise_gets_controls_its_file_can_run() {
        let mut insts = shared_exercises("every_exercise_gets_controls_its_file_can_run").unwrap_or_default();
        match std::env::var_os("POLYSANDBOX_POLYGLOT_FULL") {
            Some(full) => {
                let more = crate::eval::dataset::load(Path::new(&full)).unwrap();
                insts.retain(|i| !more.iter().any(|m| m.id == i.id));
                insts.extend(more);
            }
            None => {
                let line = "SKIPPED in part: every_exercise_gets_controls_its_file_can_run: no POLYSANDBOX_POLYGLOT_FULL (the 111 held-out exercises)\n";
                // SAFETY: a write of a valid buffer to fd 2.
                unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
            }
        }
        let calls = |src: &str, lang: Lang| -> std::collections::BTreeSet<String> {
            let toks = lex::lex(src, lang);
            (0..toks.len())
                .filter(|&k| {
                    toks[k].kind == lex::Kind::Ident
                        && toks.get(k + 1).is_some_and(|t| t.text(src) == "(")
                        && (k == 0 || ![".", "::", "->", "fn", "func", "def", "void"].contains(&toks[k - 1].text(src)))
                })
                .map(|k| toks[k].text(src).to_string())
                .collect()
        };
        let mut bad = Vec::new();
        let mut checked = 0;
        for i in &insts {
            let crate::eval::instance::Kind::Exercise { dir, test, .. } = &i.kind else { continue };
            let lang = lang_of(&i.language).unwrap();
            for all in [true, false] {
                let d = std::env::temp_dir().join(format!(
                    "ps-every-{}-{}-{all}",
                    std::process::id(),
                    i.id.replace('/', "_")
                ));
                let _ = std::fs::remove_dir_all(&d);
                assert!(std::process::Command::new("cp").arg("-a").arg(dir).arg(&d).status().unwrap().success());
                let files = test_files(lang, &d, test);
                let before: Vec<String> =
                    files.iter().map(|f| std::fs::read_to_string(d.join(f)).unwrap_or_default()).collect();
                let req = Request {
                    language: i.language.clone(),
                    parser: Parser::JunitXml,
                    tree: d.clone(),
                    tests: test.clone(),
                    plan: if all { PlanRequest::All { inputs: true } } else { PlanRequest::Run(None) },
                };
                let got = std::panic::catch_unwind(|| serve(&req));
                match got {
                    Err(_) => bad.push(format!("{} (all: {all}): panicked", i.id)),
                    Ok(Err(e)) => bad.push(format!("{} (all: {all}): {e}", i.id)),
                    Ok(Ok(None)) => bad.push(format!("{} (all: {all}): no controls", i.id)),
                    Ok(Ok(Some(c))) if c.names.is_empty() => bad.push(format!("{} (all: {all}): no controls", i.id)),
                    Ok(Ok(Some(_))) => {}
                }
                for (f, old) in files.iter().zip(&before) {
                    let new = std::fs::read_to_string(d.join(f)).unwrap_or_default();
                    let had = calls(old, lang);
                    let fresh: Vec<String> = calls(&new, lang)
                        .into_iter()
                        .filter(|n| {
                            let catch2 = ["REQUIRE", "CHECK", "REQUIRE_FALSE", "CHECK_FALSE"].contains(&n.as_str());
                            !(had.contains(n) || lang == Lang::Cpp && catch2)
                        })
                        .collect();
                    if !fresh.is_empty() {
                        bad.push(format!("{} {f} (all: {all}): calls {fresh:?}, which the file never did", i.id));
                    }
                    let check: Option<Vec<&str>> = match lang {
                        Lang::Python => {
                            Some(vec!["python3", "-c", "import ast,sys; ast.parse(open(sys.argv[1]).read())"])
                        }
                        Lang::Js if f.ends_with(".js") => Some(vec!["node", "--check"]),
                        _ => None,
                    };
                    if let Some(cmd) = check {
                        if let Ok(o) = std::process::Command::new(cmd[0]).args(&cmd[1..]).arg(d.join(f)).output() {
                            if !o.status.success() {
                                bad.push(format!(
                                    "{} {f} (all: {all}): {}",
                                    i.id,
                                    String::from_utf8_lossy(&o.stderr).trim()
                                ));
                            }
                        }
                    }
                }
                let _ = std::fs::remove_dir_all(&d);
            }
            checked += 1;
        }
        eprintln!("checked {checked} exercises");
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// java/mazy-mice: no test of its file can be copied (no literal expectation, no check to
    /// turn), and Java had no synthetic control, so every prediction, gold included, was an
    /// `error`. A synthetic control is a method of the test class, and compiles with what the
    /// file imports (AssertJ alone here): JUnit's names spelled out. Checked with javac, over
    /// stand-ins for JUnit and AssertJ, where there is one.
    #[test]
    fn a_java_file_with_nothing_to_copy_gets_a_synthetic_control() {
        let java = "import org.junit.jupiter.api.BeforeEach;\nimport org.junit.jupiter.api.Test;\n\nimport static org.assertj.core.api.Assertions.assertThat;\n\npublic class MazeGeneratorTest {\n    private MazeGenerator sut;\n\n    @BeforeEach\n    public void setup() {\n        sut = new MazeGenerator();\n    }\n\n    @Test\n    public void theDimensionsOfTheMazeAreCorrect() {\n        var maze = sut.generatePerfectMaze(6, 18);\n        assertThat(maze).as(\"dimensions\").hasDimensions(13, 37);\n    }\n\n    @Test\n    public void theMazeIsPerfect() {\n        var maze = sut.generatePerfectMaze(6, 18);\n        assertThat(maze).as(\"perfect\").satisfies(m -> {});\n    }\n}\n";
        let f = "src/test/java/MazeGeneratorTest.java";
        let d = scratch("java-synthetic", &[(f, java)]);
        let c = plant("java", Parser::JunitXml, &d, &[f.into()], Plan::Run(None)).unwrap().unwrap();
        assert_eq!(c.names.len(), 1);
        assert_eq!(c.weak.as_deref(), Some(SYNTHETIC));
        let after = std::fs::read_to_string(d.join(f)).unwrap();
        let name = c.names[0].text.trim_start_matches('.').trim_end_matches('(').to_string();
        assert!(name.starts_with(|ch: char| ch.is_ascii_lowercase()), "{name}");
        let at = after.find(&format!("public void {name}()")).unwrap_or_else(|| panic!("{after}"));
        assert!(
            at < after.rfind('}').unwrap() && after[at..].contains("org.junit.jupiter.api.Assertions.assertEquals("),
            "{after}"
        );
        assert!(c.names[0].matches(&format!("MazeGeneratorTest.{name}()")));
        if std::process::Command::new("javac").arg("-version").output().is_ok_and(|o| o.status.success()) {
            let stubs = [
                ("org/junit/jupiter/api/Test.java", "package org.junit.jupiter.api;\npublic @interface Test {}\n"),
                ("org/junit/jupiter/api/BeforeEach.java", "package org.junit.jupiter.api;\npublic @interface BeforeEach {}\n"),
                ("org/junit/jupiter/api/Assertions.java", "package org.junit.jupiter.api;\npublic class Assertions {\n    public static void assertEquals(long a, long b) {}\n}\n"),
                ("org/assertj/core/api/Assertions.java", "package org.assertj.core.api;\npublic class Assertions {\n    public static Obj assertThat(Object o) { return new Obj(); }\n    public static class Obj {\n        public Obj as(String s) { return this; }\n        public Obj hasDimensions(int a, int b) { return this; }\n        public Obj satisfies(java.util.function.Consumer<Object> c) { return this; }\n    }\n}\n"),
                ("MazeGenerator.java", "public class MazeGenerator {\n    public char[][] generatePerfectMaze(int r, int c) { return new char[0][0]; }\n}\n"),
            ];
            for (p, text) in stubs {
                let p = d.join("stubs").join(p);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            let mut cmd = std::process::Command::new("sh");
            cmd.arg("-c")
                .arg("javac -d out $(find stubs -name '*.java') src/test/java/MazeGeneratorTest.java")
                .current_dir(&d);
            let o = cmd.output().unwrap();
            assert!(o.status.success(), "{}\n{after}", String::from_utf8_lossy(&o.stderr));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A control generator that dies (here by SIGABRT, as `panic = "abort"` ends a process) is
    /// its instance's error, said, and eval's process goes on; before, planting ran in eval's own
    /// process and java/two-bucket's panic ended the whole run (no result, no report).
    #[test]
    fn a_generator_that_aborts_is_one_error_not_the_end_of_eval() {
        let d = scratch(
            "abort",
            &[("gen", "#!/bin/sh\ncat >/dev/null\necho 'thread panicked: capacity overflow' >&2\nkill -ABRT $$\n")],
        );
        let gen = d.join("gen");
        std::fs::set_permissions(&gen, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let req = Request {
            language: "java".into(),
            parser: Parser::JunitXml,
            tree: d.clone(),
            tests: vec!["T.java".into()],
            plan: PlanRequest::Run(None),
        };
        let e = plant_contained(&gen, &req).unwrap_err();
        assert!(plant_contained(&d.join("nowhere"), &req).is_err());
        assert!(e.contains("the control generator failed") && e.contains("capacity overflow"), "{e}");
        // The real one answers, in a process of its own, what `serve` answers here.
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Literals at the edges of their kind give another value or none, never a panic: a float
    /// whose fraction has more digits than a u64 scales (`10^64` wraps to 0 and divided by
    /// zero), the largest u64.
    #[test]
    fn literals_at_the_edges_of_their_kind_never_panic() {
        let frac = "0.".to_string() + &"1".repeat(70);
        let py = format!("import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(f(1), {frac})\n\n    def test_b(self):\n        self.assertEqual(f(2), 18446744073709551615)\n\n    def test_c(self):\n        self.assertEqual(f(3), 0.5)\n");
        for _ in 0..30 {
            let d = scratch("edges", &[("t_test.py", &py)]);
            let _ = candidates("python", &d, &["t_test.py".into()], true);
            let _ = plant("python", Parser::JunitXml, &d, &["t_test.py".into()], Plan::Run(None)).unwrap();
            let _ = std::fs::remove_dir_all(&d);
        }
        assert_eq!(mutate("18446744073709551615.5", &[]), None);
        for _ in 0..20 {
            let m = mutate("18446744073709551615", &[]).unwrap();
            assert!(m.parse::<u64>().is_ok(), "{m}");
        }
    }
}

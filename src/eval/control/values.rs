//! Values a control's changed literal takes: ones a real test of the same file could have had,
//! so that nothing in the changed literal tells the copy from its original.
//!
//! A forger who reads the planted file sees a control beside its original, the two alike but
//! for a literal or two, and wants to know which value is the dataset's. What it can look at:
//! whether a value is of the kind the file uses there (a `Relation` the tests name, an English
//! word rather than a one-letter typo), and how often each value occurs elsewhere in the file.
//! So a changed literal takes, in order of preference:
//!
//! - the original's own frequency: a value that occurs elsewhere in the file exactly as often
//!   as the original's does (outside the original's unit), of the same kind (a number of the
//!   same suffix, a string with the same quotes, a char), preferably one the file uses in the
//!   same role (an expectation, an input). Then a count of occurrences says nothing, either way.
//! - where the original occurs nowhere else (most expectations): a value that occurs nowhere in
//!   the file either, made from the file's own material: a number among the file's numbers
//!   (from one of them by one of the gaps between them), a string with one of its words
//!   replaced by another of the file's words of the same shape, itself as frequent in the
//!   file's strings as the word it replaces.
//! - a boolean is turned (there is no other value), as a check is (`assertTrue` for
//!   `assertFalse`); the draw of a run's controls balances the directions (`balanced` in
//!   mod.rs).
//!
//! Only where the file gives nothing of the kind does a literal fall back to [`super::mutate`]
//! (one digit or letter changed).

use super::lex::{lex, Kind, Lang};
use super::model::{Lit, Site, Unit};
use super::{below, mutate};
use std::collections::HashMap;

/// What a literal is used as in its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Expected,
    Input,
}

/// The literals of a test file, counted: what a forger counts, and where values come from.
pub struct Corpus<'a> {
    src: &'a str,
    lang: Lang,
    /// Every literal token of the file (numbers, strings, chars, booleans): (start, end).
    lits: Vec<(usize, usize, Kind)>,
    /// How often each literal text occurs in the file.
    count: HashMap<&'a str, usize>,
    /// Every token of the file (for turned checks: `assertTrue`, `REQUIRE_FALSE`).
    toks: Vec<(usize, usize)>,
    /// How often each word occurs in the file's strings (as written: case kept).
    words: HashMap<&'a str, usize>,
    /// The role of each literal of a unit's, by start.
    roles: HashMap<usize, Role>,
    /// The words of the file's test names that no string of it has, lower case and
    /// capitalised: English of the exercise's own, found in no literal.
    named: Vec<String>,
}

/// Letter-and-digit runs of a string literal's text (quotes included), as byte ranges of
/// `text`; none just after a backslash (an escape).
pub fn runs(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphanumeric() && (i == 0 || b[i - 1] != b'\\') {
            let s = i;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

/// A word's shape: all lower case, capitalised, all upper case, digits, or mixed. A word is
/// replaced only by one of its shape.
fn shape(w: &str) -> u8 {
    if w.chars().all(|c| c.is_ascii_digit()) {
        3
    } else if w.chars().all(|c| c.is_ascii_lowercase()) {
        0
    } else if w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase()) {
        2
    } else if w.starts_with(|c: char| c.is_ascii_uppercase()) && w.chars().skip(1).all(|c| c.is_ascii_lowercase()) {
        1
    } else {
        4
    }
}

/// The kind of a literal, finer than the lexer's: values are exchanged only within one.
#[derive(Debug, Clone, PartialEq)]
enum Class {
    Bool,
    /// A decimal integer and its type suffix (`u64`, `L`; or none).
    Int(String),
    /// A decimal fraction with this many digits after the point.
    Float(usize),
    /// A string between these quotes.
    Str(char),
    /// A character literal between these quotes.
    Char(char),
    /// A hexadecimal, octal or binary integer: its prefix, digits in upper case, and suffix.
    Radix(String, bool, String),
    /// Anything else (hex, binary, exponents, raw strings): the old mutation.
    Other,
}

fn class(text: &str, lang: Lang) -> Class {
    if ["true", "false", "True", "False"].contains(&text) {
        return Class::Bool;
    }
    let first = text.chars().next().unwrap_or(' ');
    if let Some((prefix, base)) =
        [("0x", 16), ("0X", 16), ("0b", 2), ("0B", 2), ("0o", 8)].into_iter().find(|(p, _)| text.starts_with(p))
    {
        let body = &text[2..];
        let n = body.chars().take_while(|c| c.is_digit(base)).count();
        let suffix = &body[n..];
        let upper = body[..n].chars().any(|c| c.is_ascii_uppercase());
        let plain = n > 0
            && suffix.chars().all(|c| c.is_ascii_alphanumeric())
            && !suffix.starts_with(|c: char| c.is_digit(base));
        return if plain { Class::Radix(prefix.to_string(), upper, suffix.to_string()) } else { Class::Other };
    }
    if first.is_ascii_digit() {
        let digits: String = text.chars().take_while(|c| c.is_ascii_digit()).collect();
        let rest = &text[digits.len()..];
        if digits.len() > 1 && digits.starts_with('0') {
            return Class::Other;
        }
        if let Some(frac) = rest.strip_prefix('.') {
            return if !frac.is_empty() && frac.chars().all(|c| c.is_ascii_digit()) {
                Class::Float(frac.len())
            } else {
                Class::Other
            };
        }
        let suffix_ok = rest.chars().next().is_none_or(|c| c.is_ascii_alphabetic() && !"eExXbBoO".contains(c))
            && rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '_')
                .chars()
                .all(|c| c.is_ascii_digit());
        return if suffix_ok { Class::Int(rest.to_string()) } else { Class::Other };
    }
    if text.len() >= 2 && text.ends_with(first) {
        let char_quote = first == '\'' && matches!(lang, Lang::Rust | Lang::Java | Lang::Go | Lang::Cpp);
        if char_quote {
            return Class::Char(first);
        }
        if ['"', '\'', '`'].contains(&first) {
            return Class::Str(first);
        }
    }
    Class::Other
}

/// The largest value a replacement for the integer `n` may take: the largest of the usual
/// integer types' maxima that `n` fits under (so a `u8` stays a `u8`, an `i32` an `i32`).
fn limit(n: u64) -> u64 {
    [127, 255, 32_767, 65_535, 2_147_483_647, 4_294_967_295, 9_223_372_036_854_775_807]
        .into_iter()
        .find(|&m| n <= m)
        .unwrap_or(u64::MAX)
}

fn int_of(text: &str) -> Option<u64> {
    text.chars().take_while(|c| c.is_ascii_digit()).collect::<String>().parse().ok()
}

fn radix_of(text: &str) -> Option<u64> {
    let base = match text.get(..2)? {
        "0x" | "0X" => 16,
        "0b" | "0B" => 2,
        "0o" => 8,
        _ => return None,
    };
    let digits: String = text[2..].chars().take_while(|c| c.is_digit(base)).collect();
    u64::from_str_radix(&digits, base).ok()
}

/// Whether two strings' texts are of one shape: both empty or not, both with spaces or not,
/// of lengths within a factor of two (or both short).
fn similar(a: &str, b: &str) -> bool {
    let (x, y) = (a.len(), b.len());
    let word = |s: &str| runs(&format!("\"{s}\"")).first().is_some_and(|&(s0, e0)| s0 == 1 && e0 == s.len() + 1);
    (x == 0) == (y == 0)
        && a.contains(' ') == b.contains(' ')
        && word(a) == word(b)
        && (!word(a) || shape(a) == shape(b))
        && (x.max(y) <= 6 || x.max(y) <= 2 * x.min(y))
}

fn float_of(text: &str) -> Option<f64> {
    text.parse().ok()
}

impl<'a> Corpus<'a> {
    pub fn new(src: &'a str, lang: Lang, units: &[Unit]) -> Corpus<'a> {
        let toks = lex(src, lang);
        let mut lits = Vec::new();
        let mut count: HashMap<&str, usize> = HashMap::new();
        let mut words: HashMap<&str, usize> = HashMap::new();
        let mut all = Vec::new();
        for t in &toks {
            let text = t.text(src);
            all.push((t.start, t.end));
            let lit = matches!(t.kind, Kind::Num | Kind::Str | Kind::Char)
                || (t.kind == Kind::Ident && ["true", "false", "True", "False"].contains(&text));
            if !lit {
                continue;
            }
            lits.push((t.start, t.end, t.kind));
            *count.entry(text).or_default() += 1;
            if matches!(t.kind, Kind::Str | Kind::Char) {
                for (s, e) in runs(text) {
                    *words.entry(&text[s..e]).or_default() += 1;
                }
            }
        }
        let mut roles = HashMap::new();
        for u in units {
            for s in u.sites.iter().chain(&u.loose) {
                if let Site::Lits(l) = s {
                    for x in l {
                        roles.insert(x.start, Role::Expected);
                    }
                }
            }
            for x in &u.inputs {
                roles.insert(x.start, Role::Input);
            }
        }
        let mut named: Vec<String> = units
            .iter()
            .flat_map(|u| super::model::words(&u.name))
            .filter(|w| w.len() > 2 && w.chars().all(|c| c.is_ascii_lowercase()) && w != "test")
            .flat_map(|w| {
                let cap = w[..1].to_ascii_uppercase() + &w[1..];
                [w, cap]
            })
            .filter(|w| !words.contains_key(w.as_str()))
            .collect();
        named.sort_unstable();
        named.dedup();
        Corpus { src, lang, lits, count, toks: all, words, roles, named }
    }

    /// The literal tokens within a unit.
    fn within(&self, u: &Unit) -> impl Iterator<Item = &(usize, usize, Kind)> + '_ {
        let (a, b) = (u.start, u.end);
        self.lits.iter().filter(move |l| l.0 >= a && l.1 <= b)
    }

    /// How often `text` occurs as a literal outside `u`.
    fn count_else(&self, text: &str, u: &Unit) -> usize {
        let inside = self.within(u).filter(|l| &self.src[l.0..l.1] == text).count();
        self.count.get(text).copied().unwrap_or(0).saturating_sub(inside)
    }

    /// What a count of the file tells of a check turned from `from` to `to` (the text the edit
    /// replaces, and its replacement) in unit `u`: how much more often the new form occurs
    /// outside the unit than the old, in logs. A Rust `x` turned `!(x)` counts `assert!(!`
    /// against the file's other `assert!(`.
    ///
    /// A condition turned over (`assert!(!(c))`, Java's `assertTrue(!(c))`) counts the file's
    /// checks of a negated condition against its others.
    pub fn tell_toggle(&self, u: &Unit, from: &str, to: &str) -> f64 {
        let outside = |form: &str| -> usize {
            self.toks.iter().filter(|t| (t.1 <= u.start || t.0 >= u.end) && &self.src[t.0..t.1] == form).count()
        };
        let (a, b) = if to == format!("!({from})") {
            let text = format!("{}{}", &self.src[..u.start], &self.src[u.end..]);
            negated_checks(&text)
        } else {
            (outside(from), outside(to))
        };
        (1.0 + b as f64).ln() - (1.0 + a as f64).ln()
    }

    /// Another value for the literal `lit` of unit `u` (see the module's text), none of
    /// `avoid` (the other values of its display, so that a set cannot come out equal); and what
    /// a forger counting the file would see change: how much more often the new value (and, in
    /// a string, the new word) occurs elsewhere than the old, in logs. 0 is nothing to see.
    pub fn replace(&self, u: &Unit, lit: &Lit, avoid: &[&str]) -> Option<(String, f64)> {
        let text = &self.src[lit.start..lit.end];
        let cls = class(text, self.lang);
        let ln = |n: usize| (1.0 + n as f64).ln();
        let c = self.count_else(text, u);
        let gap = |s: &str| ln(self.count_else(s, u)) - ln(c);
        if matches!(cls, Class::Bool | Class::Other) {
            return mutate(text, avoid).map(|m| {
                let g = gap(&m);
                (m, g)
            });
        }
        let role = self.roles.get(&lit.start).copied().unwrap_or(Role::Input);
        let distinct = |s: &str| -> bool {
            if s == text || avoid.contains(&s) {
                return false;
            }
            match &cls {
                Class::Int(_) => match (int_of(text), int_of(s)) {
                    (Some(a), Some(b)) => a != b && b <= limit(a),
                    _ => false,
                },
                Class::Radix(..) => match (radix_of(text), radix_of(s)) {
                    (Some(a), Some(b)) => a != b && b <= limit(a),
                    _ => false,
                },
                Class::Float(_) => float_of(s) != float_of(text),
                Class::Str(_) => similar(&s[1..s.len() - 1], &text[1..text.len() - 1]),
                _ => true,
            }
        };
        // Values of its kind the file has outside the unit, the original's count nearest.
        let existing = || -> Option<(String, f64)> {
            let mut seen: Vec<(&str, usize, bool)> = Vec::new();
            for l in &self.lits {
                if l.0 >= u.start && l.1 <= u.end {
                    continue;
                }
                let s = &self.src[l.0..l.1];
                // Test data only: not an annotation's text or a message format.
                if !self.roles.contains_key(&l.0) || class(s, self.lang) != cls || !distinct(s) {
                    continue;
                }
                let same_role = self.roles.get(&l.0) == Some(&role);
                match seen.iter_mut().find(|x| x.0 == s) {
                    Some(x) => x.2 |= same_role,
                    None => seen.push((s, self.count_else(s, u), same_role)),
                }
            }
            if seen.iter().any(|x| x.2) {
                seen.retain(|x| x.2);
            }
            let best = seen.iter().map(|x| x.1.abs_diff(c)).min()?;
            let near: Vec<&str> = seen.iter().filter(|x| x.1.abs_diff(c) == best).map(|x| x.0).collect();
            let s = near[below(near.len())];
            Some((s.to_string(), gap(s)))
        };
        // An expectation that repeats another literal of its unit (the winning hand among the
        // hands dealt): another of the unit's own literals, so that it still does.
        let echoes = |l: &&(usize, usize, Kind)| l.0 != lit.start && &self.src[l.0..l.1] == text;
        if self.within(u).any(|l| echoes(&l)) {
            let mut own: Vec<&str> = self
                .within(u)
                .map(|l| &self.src[l.0..l.1])
                .filter(|s| class(s, self.lang) == cls && distinct(s))
                .collect();
            own.sort_unstable();
            own.dedup();
            if !own.is_empty() {
                let s = own[below(own.len())];
                return Some((s.to_string(), gap(s)));
            }
        }
        if c > 0 {
            if let Some(x) = existing() {
                return Some(x);
            }
        }
        // A value found nowhere in the file, of the file's material.
        for _ in 0..8 {
            let fresh = match &cls {
                Class::Int(suffix) => self.fresh_number(text, &cls).map(|n| (format!("{n}{suffix}"), 0.0)),
                // (A fraction of 20 digits or more has no u64 scale: none.)
                Class::Float(d) => self.fresh_number(text, &cls).and_then(|n| {
                    let p = u32::try_from(*d).ok().and_then(|d| 10u64.checked_pow(d))?;
                    Some((format!("{}.{:0width$}", n / p, n % p, width = *d), 0.0))
                }),
                Class::Radix(prefix, upper, suffix) => {
                    let width = text.len().saturating_sub(prefix.len() + suffix.len());
                    let base = if prefix.ends_with(['x', 'X']) {
                        16
                    } else if prefix.ends_with(['b', 'B']) {
                        2
                    } else {
                        8
                    };
                    let lead = text[prefix.len()..].chars().next().and_then(|c| c.to_digit(base as u32)).unwrap_or(0);
                    let digits: String = (0..width)
                        .map(|k| {
                            let base = if k == 0 { lead as usize + 1 } else { base };
                            let d = std::char::from_digit(below(base) as u32, 16).unwrap_or('0');
                            if *upper {
                                d.to_ascii_uppercase()
                            } else {
                                d
                            }
                        })
                        .collect();
                    Some((format!("{prefix}{digits}{suffix}"), 0.0))
                }
                Class::Str(_) | Class::Char(_) => self.fresh_string(lit, &cls, u),
                _ => None,
            };
            if let Some((f, g)) = fresh.filter(|(s, _)| distinct(s) && !self.count.contains_key(s.as_str())) {
                return Some((f, g - ln(c)));
            }
        }
        // A code rather than a word (`UCA`, `2234567890`, `mMMmMMm`): a character changed to
        // another the file's codes of its shape have.
        if let Class::Str(_) = cls {
            for _ in 0..16 {
                let Some(f) = self.fresh_code(text) else { break };
                if distinct(&f) && !self.count.contains_key(f.as_str()) {
                    return Some((f, -ln(c)));
                }
            }
        }
        // Nothing new of the file's material: the nearest count among what it has, else one
        // digit or letter changed.
        existing().or_else(|| {
            mutate(text, avoid).map(|m| {
                let g = gap(&m);
                (m, g)
            })
        })
    }

    /// A number of the class of `text` (as an integer: a fraction scaled by its digits) that
    /// the file does not have: one of the file's numbers of the class, moved by one of the gaps
    /// between them (1 to the gap), within the original's type.
    fn fresh_number(&self, text: &str, cls: &Class) -> Option<u64> {
        let scaled = |s: &str| -> Option<u64> {
            match cls {
                Class::Float(d) => {
                    let (a, b) = s.split_once('.')?;
                    (b.len() == *d).then(|| {
                        let scale = 10u64.checked_pow(u32::try_from(*d).ok()?)?;
                        a.parse::<u64>().ok()?.checked_mul(scale)?.checked_add(b.parse::<u64>().ok()?)
                    })?
                }
                _ => int_of(s),
            }
        };
        let cur = scaled(text)?;
        let mut vals: Vec<u64> = self
            .lits
            .iter()
            .map(|l| &self.src[l.0..l.1])
            .filter(|s| class(s, self.lang) == *cls)
            .filter_map(scaled)
            .collect();
        vals.push(cur);
        vals.sort_unstable();
        vals.dedup();
        let gaps: Vec<u64> = vals.windows(2).map(|w| w[1] - w[0]).filter(|&g| g > 0).collect();
        let top = if matches!(cls, Class::Int(_)) { limit(cur) } else { u64::MAX };
        let nonzero: Vec<u64> = vals.iter().copied().filter(|&v| v != 0).collect();
        let span = vals.last().copied().unwrap_or(0) - vals.first().copied().unwrap_or(0);
        for attempt in 0..64 {
            // As round as one of the file's numbers (prices in cents stay multiples of 5).
            let step = nonzero
                .get(below(nonzero.len()))
                .and_then(|v| [10_000, 1000, 100, 10, 5].into_iter().find(|d| v % d == 0))
                .unwrap_or(1);
            let base = vals[below(vals.len())] / step * step;
            let gap = if gaps.is_empty() { 3 } else { gaps[below(gaps.len())] };
            // Where the gaps leave no room (1, 2, 3, ... 7), as far as half the span.
            let gap = if attempt < 32 { gap } else { gap.max(span / 2).max(3) };
            let delta = step.checked_mul(1 + (super::random_u64() % (gap / step.max(1)).max(1)))?;
            let up = base < delta || super::random_u64() % 2 == 0;
            let n = if up { base.checked_add(delta)? } else { base - delta };
            if n != cur && n <= top && vals.binary_search(&n).is_err() {
                return Some(n);
            }
        }
        None
    }

    /// `text` (a string of one word, all upper case, mixed or digits: a code, not a word a
    /// dictionary has) with one character changed to one of the same kind drawn from the
    /// characters of the file's words of that shape.
    fn fresh_code(&self, text: &str) -> Option<String> {
        let rs = runs(text);
        let [(s, e)] = rs[..] else { return None };
        let w = &text[s..e];
        if s != 1 || e != text.len() - 1 || ![2, 3, 4].contains(&shape(w)) {
            return None;
        }
        let mut words: Vec<&str> = self.words.keys().copied().filter(|k| shape(k) == shape(w)).collect();
        words.sort_unstable();
        let i = below(w.len());
        let c = w.as_bytes()[i] as char;
        let kind = |x: char| (x.is_ascii_digit(), x.is_ascii_uppercase());
        let pool: Vec<char> = words.iter().flat_map(|k| k.chars()).filter(|&x| x != c && kind(x) == kind(c)).collect();
        let to = *pool.get(below(pool.len()))?;
        Some(format!("{}{}{to}{}", &text[..s], &w[..i], &w[i + 1..]) + &text[e..])
    }

    /// A string (or char) the file does not have: `text` with one of its words replaced by
    /// another word of the file's strings of the same shape, the replacement about as frequent
    /// outside the unit as the word it replaces. An empty string takes one of the file's words.
    fn fresh_string(&self, lit: &Lit, cls: &Class, u: &Unit) -> Option<(String, f64)> {
        let text = &self.src[lit.start..lit.end];
        let rs = runs(text);
        // The words of the unit's strings, counted; and those of its other literals.
        let mut mine: HashMap<&str, usize> = HashMap::new();
        let mut others: std::collections::HashSet<&str> = Default::default();
        for l in self.within(u).filter(|l| matches!(l.2, Kind::Str | Kind::Char)) {
            let t = &self.src[l.0..l.1];
            for (a, b) in runs(t) {
                *mine.entry(&t[a..b]).or_default() += 1;
                if l.0 != lit.start {
                    others.insert(&t[a..b]);
                }
            }
        }
        let word_else =
            |w: &str| self.words.get(w).copied().unwrap_or(0).saturating_sub(mine.get(w).copied().unwrap_or(0));
        let mut vocabulary: Vec<&str> =
            self.words.keys().copied().chain(self.named.iter().map(String::as_str)).collect();
        vocabulary.sort_unstable();
        let pool = |w: &str| -> Vec<(&str, usize)> {
            vocabulary
                .iter()
                .filter(|k| {
                    **k != w
                        && shape(k) == shape(w)
                        && (w.is_empty() || (k.len() <= w.len().max(3) * 2 && w.len() <= k.len().max(3) * 2))
                })
                .map(|k| (*k, word_else(k)))
                .collect()
        };
        if let Class::Char(q) = cls {
            // A char: another letter or digit of the same shape from the file's strings.
            let w = &text[1..text.len() - 1];
            if w.chars().count() != 1 || !w.chars().all(|c| c.is_ascii_alphanumeric()) {
                return None;
            }
            let letters: Vec<char> = vocabulary
                .iter()
                .flat_map(|k| k.chars())
                .filter(|c| c.to_string() != w && shape(&c.to_string()) == shape(w))
                .collect();
            return (!letters.is_empty()).then(|| (format!("{q}{}{q}", letters[below(letters.len())]), 0.0));
        }
        if rs.is_empty() {
            if text.len() != 2 {
                return None;
            }
            let ws: Vec<&str> = vocabulary.iter().copied().filter(|k| shape(k) == 0).collect();
            let q = &text[..1];
            return (!ws.is_empty()).then(|| (format!("{q}{}{q}", ws[below(ws.len())]), 0.0));
        }
        // The word whose replacement a forger tells least of: one about as frequent in the
        // file's strings, and found in the unit's other literals (an input the expectation
        // repeats) as much or as little as the word it replaces.
        let ln = |n: usize| (1.0 + n as f64).ln();
        let mut options: Vec<(f64, usize, &str, f64)> = Vec::new();
        for (i, &(s, e)) in rs.iter().enumerate() {
            let w = &text[s..e];
            let c = word_else(w);
            let inside = |k: &str| f64::from(u8::from(others.contains(k)));
            // Not the word beside it (`is is`).
            let beside = |k: &str| {
                rs.get(i.wrapping_sub(1)).is_some_and(|&(a, b)| &text[a..b] == k)
                    || rs.get(i + 1).is_some_and(|&(a, b)| &text[a..b] == k)
            };
            for (k, n) in pool(w).into_iter().filter(|x| !beside(x.0)) {
                let cost = (ln(n) - ln(c)).abs() + (inside(k) - inside(w)).abs() + inside(w);
                options.push((cost, i, k, ln(n) - ln(c)));
            }
        }
        let best = options.iter().map(|o| o.0).fold(f64::INFINITY, f64::min);
        options.retain(|o| o.0 <= best + 1e-9);
        if options.is_empty() {
            return None;
        }
        let (_, i, to, gap) = options.swap_remove(below(options.len()));
        let (s, e) = rs[i];
        Some((format!("{}{to}{}", &text[..s], &text[e..]), gap))
    }
}

/// The checks of `text` whose condition is not negated, and those whose condition is (Rust's
/// `assert!(!`, Java's `assertTrue(!`).
pub fn negated_checks(text: &str) -> (usize, usize) {
    let (mut plain, mut neg) = (0, 0);
    for call in ["assert!(", "assertTrue(", "assertFalse("] {
        let all = text.matches(call).count();
        let n = text.matches(&format!("{call}!")).count();
        plain += all.saturating_sub(n);
        neg += n;
    }
    (plain, neg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::control::model;

    #[test]
    fn values_come_from_the_file_and_keep_its_frequencies() {
        let py = "import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(rel([1], [1]), \"equal\")\n\n    def test_b(self):\n        self.assertEqual(rel([1], [1, 2]), \"sublist\")\n\n    def test_c(self):\n        self.assertEqual(rel([1, 2], [1]), \"superlist\")\n\n    def test_d(self):\n        self.assertEqual(rel([], []), \"equal\")\n\n    def test_e(self):\n        self.assertEqual(say(\"the small dog barks\"), \"The small dog barks at 7 cats.\")\n";
        let units = model::units(py, Lang::Python);
        let c = Corpus::new(py, Lang::Python, &units);
        let site = |u: &Unit| match &u.sites[0] {
            Site::Lits(l) => l[0].clone(),
            _ => unreachable!(),
        };
        for _ in 0..50 {
            // "equal" occurs once outside test_a: its replacement is the value found once.
            let v = c.replace(&units[0], &site(&units[0]), &[]).unwrap().0;
            assert!(["\"sublist\"", "\"superlist\""].contains(&v.as_str()), "{v}");
            // A sentence found nowhere else: a word of it replaced by another of the file's,
            // of the same shape; the result found nowhere in the file.
            let s = c.replace(&units[4], &site(&units[4]), &[]).unwrap().0;
            assert!(s.starts_with('"') && s.ends_with('"') && s != "\"The small dog barks at 7 cats.\"", "{s}");
            assert_eq!(s.split(' ').count(), 7, "{s}");
            assert!(!py.contains(&s), "{s}");
            // A number nowhere else in the file: another one, within its type.
            let at = py.find("7 cats").unwrap();
            let n = c.replace(&units[4], &Lit { start: at, end: at + 1 }, &[]).unwrap().0;
            assert!(n != "7" && n.parse::<u8>().is_ok_and(|n| n <= 127), "{n}");
        }
        assert_eq!(class("5u64", Lang::Rust), Class::Int("u64".into()));
        assert_eq!(class("0x1F", Lang::Rust), Class::Radix("0x".into(), true, String::new()));
        assert_eq!(class("0x1e5", Lang::Rust), Class::Radix("0x".into(), false, String::new()));
        assert_eq!(class("1e5", Lang::Rust), Class::Other);
        assert_eq!(class("'a'", Lang::Rust), Class::Char('\''));
        assert_eq!(class("'a'", Lang::Python), Class::Str('\''));
        assert_eq!(class("31.69", Lang::Js), Class::Float(2));
        assert_eq!(limit(100), 127);
        assert_eq!(limit(200), 255);
    }
}

//! The dataset's tests as units a control can be copied from: a test function or method, a
//! `test(...)` call, a `TEST_CASE`, a row of a Go table; each with its name, its container
//! (the class, `describe` block, module or table it sits in), and its expectation sites: the
//! literal an assertion compares against, or an assertion whose sense can be turned over.
//!
//! A site is *exact* when changing it makes the unit fail for any solution that passes the
//! original: the compared value is a literal (or a display of literals: a list, a tuple, a
//! `vec![]`, a string) on one side of an exact equality (`assertEqual`, `assert_eq!`, `toEqual`,
//! `isEqualTo`, `REQUIRE(a == b)`), or a check whose sense is turned over (`assertTrue` for
//! `assertFalse`, `REQUIRE` for `REQUIRE_FALSE`). Other literals in a unit are its inputs.

use super::lex::{lex, matching, Kind, Lang, Token};

/// A literal that can be given another value of its kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Lit {
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Site {
    /// A compared value: one of these literals changed makes a different value.
    Lits(Vec<Lit>),
    /// Replace this span with this text to turn the check over.
    Toggle(usize, usize, String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Style {
    /// `test_words_like_this` (prefix kept as the file has it).
    Snake { prefix: String },
    /// `wordsLikeThis` (Java methods), `TestWordsLikeThis` (Go functions).
    Camel { prefix: String },
    /// A sentence in a string literal: `'words like this'`.
    Sentence,
}

#[derive(Debug, Clone)]
pub struct Unit {
    /// Byte range of the whole unit, from the start of its first line to the end of its last
    /// (newline included).
    pub start: usize,
    pub end: usize,
    /// Where its names are: the primary one first (an identifier, or a string literal with
    /// its quotes), then any display name.
    pub names: Vec<(usize, usize, Style)>,
    /// The primary name as the runner reports it (unquoted).
    pub name: String,
    /// Units with the same container are siblings: a copy goes among them.
    pub container: usize,
    /// Exact sites.
    pub sites: Vec<Site>,
    /// Sites whose change is not known to fail (a Go table's expected field, whose loop may
    /// treat errors apart): used only once calibration has seen gold fail them.
    pub loose: Vec<Site>,
    /// Literals outside every site: the unit's inputs.
    pub inputs: Vec<Lit>,
    /// Also-tags to renew (Catch2's `"[uuid]"`).
    pub tags: Vec<(usize, usize)>,
}

fn t<'a>(src: &'a str, toks: &[Token], i: usize) -> &'a str {
    toks.get(i).map(|x| x.text(src)).unwrap_or("")
}

fn line_start(src: &str, at: usize) -> usize {
    src[..at].rfind('\n').map(|i| i + 1).unwrap_or(0)
}

fn line_end(src: &str, at: usize) -> usize {
    src[at..].find('\n').map(|i| at + i + 1).unwrap_or(src.len())
}

/// Top-level comma-separated arguments of the bracket opened at `open`: token index ranges.
fn args(src: &str, toks: &[Token], open: usize) -> Vec<(usize, usize)> {
    let Some(close) = matching(src, toks, open) else { return vec![] };
    let mut out = Vec::new();
    let (mut depth, mut from) = (0, open + 1);
    for j in open + 1..close {
        match t(src, toks, j) {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "," if depth == 0 => {
                out.push((from, j));
                from = j + 1;
            }
            _ => {}
        }
    }
    if from < close {
        out.push((from, close));
    }
    out
}

const TRUE_FALSE: [&str; 4] = ["true", "false", "True", "False"];

fn is_lit(src: &str, tok: &Token) -> bool {
    matches!(tok.kind, Kind::Num | Kind::Str | Kind::Char)
        || (tok.kind == Kind::Ident && TRUE_FALSE.contains(&tok.text(src)))
}

/// The literals of a display (a literal, or brackets of literals, with the words `lang`
/// allows in one: `vec`, `Some`, `List.of`, ...); `None` if anything else is in it.
fn display(src: &str, toks: &[Token], (a, b): (usize, usize), lang: Lang) -> Option<Vec<Lit>> {
    if a >= b {
        return None;
    }
    let words: &[&str] = match lang {
        Lang::Python => &["None"],
        Lang::Rust => &[
            "vec",
            "Some",
            "Ok",
            "None",
            "String",
            "from",
            "to_string",
            "to_owned",
            "into",
            "as",
            "u8",
            "u16",
            "u32",
            "u64",
            "usize",
            "i8",
            "i16",
            "i32",
            "i64",
            "isize",
            "f32",
            "f64",
            "char",
            "str",
        ],
        Lang::Js => &["null", "undefined"],
        Lang::Java => &[
            "null",
            "new",
            "int",
            "long",
            "double",
            "char",
            "String",
            "boolean",
            "List",
            "Set",
            "Arrays",
            "asList",
            "of",
            "Integer",
            "Long",
            "Character",
        ],
        Lang::Go => &["nil", "int", "string", "byte", "rune", "int64", "uint64", "float64", "bool", "map"],
        Lang::Cpp => &[
            "std", "vector", "string", "int", "char", "long", "size_t", "uint64_t", "int64_t", "unsigned", "double",
            "pair", "array", "map", "set",
        ],
    };
    let puncts = ["(", ")", "[", "]", "{", "}", ",", ":", "-", "!", "&", ".", "::", "<", ">"];
    let mut lits = Vec::new();
    for tok in &toks[a..b] {
        if is_lit(src, tok) {
            lits.push(Lit { start: tok.start, end: tok.end });
        } else if tok.kind == Kind::Punct && puncts.contains(&tok.text(src))
            || tok.kind == Kind::Ident && words.contains(&tok.text(src))
        {
        } else {
            return None;
        }
    }
    (!lits.is_empty()).then_some(lits)
}

/// The display a local name is bound to in `body` (`expected = ...`, `let expected = ...;`,
/// `const expected = ...;`, `auto expected = ...;`): assigned once.
fn bound(src: &str, toks: &[Token], (a, b): (usize, usize), name: &str, lang: Lang) -> Option<Vec<Lit>> {
    let mut found = None;
    for j in a..b {
        if toks[j].kind != Kind::Ident || t(src, toks, j) != name {
            continue;
        }
        // NAME [: type] = value
        let mut k = j + 1;
        if t(src, toks, k) == ":" && lang != Lang::Python {
            while k < b && t(src, toks, k) != "=" && t(src, toks, k) != ";" {
                k += 1;
            }
        }
        let assign =
            t(src, toks, k) == "=" || (lang == Lang::Go && t(src, toks, k) == ":" && t(src, toks, k + 1) == "=");
        if !assign {
            continue;
        }
        let from = if t(src, toks, k) == ":" { k + 2 } else { k + 1 };
        // To the end of the statement: `;`, or (Python, Go) the end of the line at depth 0.
        let mut depth = 0;
        let mut to = from;
        let line_of = |i: usize| src[..toks[i].start].matches('\n').count();
        while to < b {
            let s = t(src, toks, to);
            if ["(", "[", "{"].contains(&s) {
                depth += 1;
            } else if [")", "]", "}"].contains(&s) {
                if depth == 0 {
                    break;
                }
                depth -= 1;
            } else if s == ";" && depth == 0 {
                break;
            }
            if matches!(lang, Lang::Python | Lang::Go) && depth == 0 && to > from && line_of(to) != line_of(to - 1) {
                break;
            }
            to += 1;
        }
        if found.is_some() {
            return None;
        }
        found = Some(display(src, toks, (from, to), lang)?);
    }
    // Bound and compared, nothing else: a name that is an input too (rust/doubly-linked-list's
    // `const N: usize = 15;` both taken from the list and compared with its length) changes
    // both sides of the comparison, and gold passes the copy.
    let uses = toks[a..b].iter().filter(|x| x.kind == Kind::Ident && x.text(src) == name).count();
    found.filter(|_| uses == 2)
}

/// The expectation of an equality with arguments `xs` (the first two count): a display, or a
/// name bound to one in the body. Prefers the second argument unless `expected_first`.
fn expectation(
    src: &str,
    toks: &[Token],
    xs: &[(usize, usize)],
    body: (usize, usize),
    lang: Lang,
    expected_first: bool,
) -> Option<Vec<Lit>> {
    let mut order: Vec<(usize, usize)> = xs.iter().take(2).copied().collect();
    if !expected_first {
        order.reverse();
    }
    for x in &order {
        if let Some(l) = display(src, toks, *x, lang) {
            return Some(l);
        }
    }
    for &(a, b) in &order {
        if b == a + 1 && toks[a].kind == Kind::Ident {
            if let Some(l) = bound(src, toks, body, t(src, toks, a), lang) {
                return Some(l);
            }
        }
    }
    None
}

/// Words of a name: `test_foo_bar` -> foo bar; `fooBarBaz` -> foo bar baz; `Foo bar` -> foo bar.
pub fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let acronym_end = c.is_uppercase()
            && i > 0
            && chars[i - 1].is_uppercase()
            && chars.get(i + 1).is_some_and(|n| n.is_lowercase());
        let boundary =
            !c.is_alphanumeric() || (c.is_uppercase() && i > 0 && chars[i - 1].is_lowercase()) || acronym_end;
        if boundary && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        if c.is_alphanumeric() {
            cur.extend(c.to_lowercase());
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The sites and inputs of a unit's body tokens [a, b): assertion calls per language.
fn sites(
    src: &str,
    toks: &[Token],
    (a, b): (usize, usize),
    lang: Lang,
    skip: &[(usize, usize)],
) -> (Vec<Site>, Vec<Lit>) {
    let mut sites = Vec::new();
    let mut j = a;
    let word = |j: usize| t(src, toks, j);
    let toggle =
        |s: &mut Vec<Site>, j: usize, to: &str| s.push(Site::Toggle(toks[j].start, toks[j].end, to.to_string()));
    while j < b {
        let w = word(j);
        match lang {
            Lang::Python if word(j + 1) == "(" => {
                let xs = args(src, toks, j + 1);
                match w {
                    "assertEqual"
                    | "assertEquals"
                    | "assertListEqual"
                    | "assertTupleEqual"
                    | "assertDictEqual"
                    | "assertSetEqual"
                    | "assertSequenceEqual"
                    | "assertMultiLineEqual"
                    | "assertCountEqual" => {
                        if let Some(l) = expectation(src, toks, &xs, (a, b), lang, false) {
                            sites.push(Site::Lits(l));
                        }
                    }
                    "assertIs" => {
                        if let Some(&(x, y)) =
                            xs.get(1).filter(|(x, y)| y - x == 1 && ["True", "False"].contains(&word(*x)))
                        {
                            let _ = y;
                            sites.push(Site::Lits(vec![Lit { start: toks[x].start, end: toks[x].end }]));
                        }
                    }
                    // unittest's methods (`self.assertTrue`): the other is always there; a
                    // function of that name is the file's own, and may have no other.
                    "assertTrue" | "assertFalse" | "assertIsNone" | "assertIsNotNone"
                        if word(j.wrapping_sub(1)) != "." => {}
                    "assertTrue" => toggle(&mut sites, j, "assertFalse"),
                    "assertFalse" => toggle(&mut sites, j, "assertTrue"),
                    "assertIsNone" => toggle(&mut sites, j, "assertIsNotNone"),
                    "assertIsNotNone" => toggle(&mut sites, j, "assertIsNone"),
                    _ => {}
                }
            }
            Lang::Python if w == "assert" && toks[j].kind == Kind::Ident => {
                // assert X == LIT (to the end of the line)
                let line = src[..toks[j].start].matches('\n').count();
                let mut e = j + 1;
                while e < b && src[..toks[e].start].matches('\n').count() == line {
                    e += 1;
                }
                if let Some(eq) = (j + 1..e).find(|&k| word(k) == "==") {
                    if let Some(l) =
                        display(src, toks, (eq + 1, e), lang).or_else(|| display(src, toks, (j + 1, eq), lang))
                    {
                        sites.push(Site::Lits(l));
                    }
                }
            }
            Lang::Rust if word(j + 1) == "!" && word(j + 2) == "(" => {
                let xs = args(src, toks, j + 2);
                match w {
                    "assert_eq" => {
                        if let Some(l) = expectation(src, toks, &xs, (a, b), lang, false) {
                            sites.push(Site::Lits(l));
                        }
                    }
                    "assert" => {
                        if let Some(&(x, y)) = xs.first() {
                            let (s, e) = (toks[x].start, toks[y - 1].end);
                            sites.push(Site::Toggle(s, e, format!("!({})", &src[s..e])));
                        }
                    }
                    _ => {}
                }
            }
            Lang::Js if w == "expect" && word(j + 1) == "(" => {
                if let Some(close) = matching(src, toks, j + 1) {
                    let m = word(close + 2);
                    if word(close + 1) == "." && word(close + 3) == "(" {
                        match m {
                            "toEqual" | "toBe" | "toStrictEqual" => {
                                let xs = args(src, toks, close + 3);
                                if let Some(l) = expectation(src, toks, &xs, (a, b), lang, true) {
                                    sites.push(Site::Lits(l));
                                }
                            }
                            "toBeTruthy" => toggle(&mut sites, close + 2, "toBeFalsy"),
                            "toBeFalsy" => toggle(&mut sites, close + 2, "toBeTruthy"),
                            _ => {}
                        }
                    }
                }
            }
            Lang::Java if w == "assertThat" && word(j + 1) == "(" => {
                // The chain after assertThat(...): .isEqualTo(x), .containsExactly(...), ...
                let mut k = matching(src, toks, j + 1).unwrap_or(b);
                while word(k + 1) == "." && word(k + 3) == "(" {
                    let m = word(k + 2);
                    let xs = args(src, toks, k + 3);
                    match m {
                        "isEqualTo" | "hasSize" | "hasMessage" | "containsExactly" | "isEqualToIgnoringCase" => {
                            let lits: Vec<Lit> =
                                xs.iter().filter_map(|x| display(src, toks, *x, lang)).flatten().collect();
                            if !lits.is_empty()
                                && (m != "containsExactly" || xs.iter().all(|x| display(src, toks, *x, lang).is_some()))
                            {
                                sites.push(Site::Lits(lits));
                            } else if let Some(l) = expectation(src, toks, &xs, (a, b), lang, true) {
                                sites.push(Site::Lits(l));
                            }
                        }
                        "isTrue" => toggle(&mut sites, k + 2, "isFalse"),
                        "isFalse" => toggle(&mut sites, k + 2, "isTrue"),
                        "isZero" => toggle(&mut sites, k + 2, "isNotZero"),
                        "isEmpty" => toggle(&mut sites, k + 2, "isNotEmpty"),
                        "isNotEmpty" => toggle(&mut sites, k + 2, "isEmpty"),
                        "isNull" => toggle(&mut sites, k + 2, "isNotNull"),
                        "isNotNull" => toggle(&mut sites, k + 2, "isNull"),
                        _ => {}
                    }
                    k = matching(src, toks, k + 3).unwrap_or(b);
                }
            }
            Lang::Java if word(j + 1) == "(" && toks[j].kind == Kind::Ident => match w {
                "assertEquals" | "assertArrayEquals" => {
                    let xs = args(src, toks, j + 1);
                    if let Some(l) = expectation(src, toks, &xs, (a, b), lang, true) {
                        sites.push(Site::Lits(l));
                    }
                }
                "assertTrue" | "assertFalse" => {
                    let other = if w == "assertTrue" { "assertFalse" } else { "assertTrue" };
                    if word(j.wrapping_sub(1)) == "." || java_static_import(src, other) {
                        toggle(&mut sites, j, other);
                    } else if let Some(site) = java_negated_condition(src, toks, j + 1) {
                        // Not imported (a file that uses assertTrue alone): the condition
                        // turned over instead, which compiles wherever the original does.
                        sites.push(site);
                    }
                }
                _ => {}
            },
            Lang::Cpp if word(j + 1) == "(" && ["REQUIRE", "CHECK", "REQUIRE_FALSE", "CHECK_FALSE"].contains(&w) => {
                let close = matching(src, toks, j + 1).unwrap_or(b);
                let eq = (j + 2..close).find(|&k| word(k) == "==" && depth_at(src, toks, j + 2, k) == 0);
                let lits = eq.filter(|_| !w.ends_with("_FALSE")).and_then(|eq| {
                    display(src, toks, (eq + 1, close), lang).or_else(|| display(src, toks, (j + 2, eq), lang)).or_else(
                        || {
                            [(eq + 1, close), (j + 2, eq)].iter().find_map(|&(x, y)| {
                                (y == x + 1 && toks[x].kind == Kind::Ident)
                                    .then(|| bound(src, toks, (a, b), word(x), lang))
                                    .flatten()
                            })
                        },
                    )
                });
                match lits {
                    Some(l) => sites.push(Site::Lits(l)),
                    None => toggle(
                        &mut sites,
                        j,
                        &if let Some(base) = w.strip_suffix("_FALSE") {
                            base.to_string()
                        } else {
                            format!("{w}_FALSE")
                        },
                    ),
                }
            }
            Lang::Go
                if w == "!="
                // if got != LIT { t.Error... }
                && toks[j + 1..b].first().is_some_and(|x| is_lit(src, x)) && word(j + 2) == "{" =>
            {
                sites.push(Site::Lits(vec![Lit { start: toks[j + 1].start, end: toks[j + 1].end }]));
            }
            _ => {}
        }
        j += 1;
    }
    let used: Vec<(usize, usize)> = sites
        .iter()
        .flat_map(|s| match s {
            Site::Lits(l) => l.iter().map(|x| (x.start, x.end)).collect::<Vec<_>>(),
            Site::Toggle(s, e, _) => vec![(*s, *e)],
        })
        .chain(skip.iter().copied())
        .collect();
    let inputs = toks[a..b]
        .iter()
        .filter(|x| {
            matches!(x.kind, Kind::Num | Kind::Str | Kind::Char)
                && !used.iter().any(|&(s, e)| x.start >= s && x.end <= e)
        })
        .map(|x| Lit { start: x.start, end: x.end })
        .collect();
    (sites, inputs)
}

/// Whether a Java file can call `name` unqualified: a static import of it, or of every member
/// of JUnit's assertion classes (AssertJ's `Assertions.*` has no `assertFalse`).
fn java_static_import(src: &str, name: &str) -> bool {
    src.lines().map(str::trim).any(|l| {
        let Some(rest) = l.strip_prefix("import static ") else { return false };
        let rest = rest.trim_end_matches(';').trim();
        rest.rsplit_once('.').is_some_and(|(class, member)| {
            member == name
                || member == "*"
                    && ["org.junit.jupiter.api.Assertions", "org.junit.Assert", "junit.framework.Assert"]
                        .contains(&class)
        })
    })
}

/// `assertTrue(c)`'s condition turned over (`assertTrue(!(c))`): the condition is the call's
/// first argument, or the second after a message literal (JUnit 4's `assertTrue(msg, c)`). None
/// for a lambda or a method reference (JUnit 5's `BooleanSupplier`), which `!` cannot take.
fn java_negated_condition(src: &str, toks: &[Token], open: usize) -> Option<Site> {
    let xs = args(src, toks, open);
    let (x, y) = match xs.as_slice() {
        [one] => *one,
        [a, b] if b.1 == b.0 + 1 && toks[b.0].kind == Kind::Str => *a,
        [a, b] if a.1 == a.0 + 1 && toks[a.0].kind == Kind::Str => *b,
        _ => return None,
    };
    if y <= x || toks[x..y].iter().any(|k| ["->", "::"].contains(&k.text(src))) {
        return None;
    }
    let (s, e) = (toks[x].start, toks[y - 1].end);
    Some(Site::Toggle(s, e, format!("!({})", src.get(s..e)?)))
}

fn depth_at(src: &str, toks: &[Token], from: usize, at: usize) -> i32 {
    let mut d = 0;
    for k in from..at {
        match t(src, toks, k) {
            "(" | "[" | "{" => d += 1,
            ")" | "]" | "}" => d -= 1,
            _ => {}
        }
    }
    d
}

/// The innermost `{` open at token `at` (its index), or usize::MAX at the top level.
fn container_at(src: &str, toks: &[Token], at: usize) -> usize {
    let mut stack = Vec::new();
    for k in 0..at {
        match t(src, toks, k) {
            "{" => stack.push(k),
            "}" => {
                stack.pop();
            }
            _ => {}
        }
    }
    stack.last().copied().unwrap_or(usize::MAX)
}

fn unquote_simple(s: &str) -> String {
    s.get(1..s.len().saturating_sub(1)).unwrap_or("").to_string()
}

/// What a Go package's test files say of its tables: the struct types rows are of, and the
/// fields `t.Run` names subtests by.
#[derive(Debug, Clone, Default)]
pub struct GoPkg {
    pub types: Vec<String>,
    pub name_fields: Vec<String>,
    /// Fields the tests compare with `==`/`!=` or as `DeepEqual`'s second argument, and never
    /// pass to a call of the package's (`score != tc.score`, not `Solve(tc.goal)`): likely
    /// expectations whatever their name. Their sites are loose: only a calibration that saw
    /// gold fail a change of one lets eval use it.
    pub compared: Vec<String>,
}

/// Whether the end of `before` (C/C++ source) is inside a preprocessor conditional the runner
/// does not enable: any `#if`/`#ifdef`/`#ifndef` other than Exercism's
/// `EXERCISM_RUN_ALL_TESTS` (which the runner defines), e.g. `EXERCISM_INCLUDE_BENCHMARK`.
pub fn in_conditional(before: &str) -> bool {
    let mut stack: Vec<bool> = Vec::new();
    for l in before.lines() {
        let l = l.trim_start();
        let Some(d) = l.strip_prefix('#') else { continue };
        let d = d.trim_start();
        if d.starts_with("if") {
            stack.push(d.contains("EXERCISM_RUN_ALL_TESTS"));
        } else if d.starts_with("el") {
            if let Some(top) = stack.last_mut() {
                *top = false;
            }
        } else if d.starts_with("endif") {
            stack.pop();
        }
    }
    stack.iter().any(|enabled| !enabled)
}

/// Calls that report or compare rather than compute.
const REPORTING: &[&str] = &[
    "Fatalf",
    "Errorf",
    "Fatal",
    "Error",
    "Logf",
    "Log",
    "Skipf",
    "Skip",
    "Sprintf",
    "Printf",
    "Println",
    "Sprint",
    "Sprintln",
    "DeepEqual",
    "Run",
    "len",
    "cap",
];

pub fn go_package(srcs: &[&str]) -> GoPkg {
    let mut pkg = GoPkg::default();
    let (mut compared, mut passed) = (Vec::new(), Vec::new());
    for src in srcs {
        let toks = lex(src, Lang::Go);
        for j in 0..toks.len() {
            if t(src, &toks, j) == "type" && t(src, &toks, j + 2) == "struct" {
                pkg.types.push(t(src, &toks, j + 1).to_string());
            }
            // t.Run(tc.FIELD, ...)
            if t(src, &toks, j) == "Run"
                && t(src, &toks, j + 1) == "("
                && t(src, &toks, j + 3) == "."
                && t(src, &toks, j + 5) == ","
            {
                pkg.name_fields.push(t(src, &toks, j + 4).to_ascii_lowercase());
            }
            let w = |k: usize| t(src, &toks, k);
            let cmp = |k: usize| w(k) == "==" || w(k) == "!=";
            let ident = |k: usize| toks.get(k).is_some_and(|x| x.kind == Kind::Ident);
            // `== tc.F` (and not `== tc.F(`), `tc.F ==`, `DeepEqual(a, tc.F)`.
            if cmp(j) && ident(j + 1) && w(j + 2) == "." && ident(j + 3) && w(j + 4) != "(" && w(j + 4) != "." {
                compared.push(w(j + 3).to_ascii_lowercase());
            }
            if ident(j) && w(j + 1) == "." && ident(j + 2) && cmp(j + 3) && (j < 1 || w(j - 1) != ".") {
                compared.push(w(j + 2).to_ascii_lowercase());
            }
            if w(j) == "DeepEqual" && w(j + 1) == "(" {
                let xs = args(src, &toks, j + 1);
                if let Some(&(a, b)) = xs.get(1) {
                    if b == a + 3 && ident(a) && w(a + 1) == "." && ident(a + 2) {
                        compared.push(w(a + 2).to_ascii_lowercase());
                    }
                }
            }
            // An argument of a call that is not testing's, fmt's or reflect's is an input.
            if ident(j)
                && w(j + 1) == "("
                && !REPORTING.contains(&w(j))
                && (j < 2 || !["t", "b", "fmt", "reflect", "strings"].contains(&w(j - 2)) || w(j - 1) != ".")
            {
                for (a, b) in args(src, &toks, j + 1) {
                    if b == a + 3 && ident(a) && w(a + 1) == "." && ident(a + 2) {
                        passed.push(w(a + 2).to_ascii_lowercase());
                    }
                }
            }
        }
    }
    compared.retain(|f| !passed.contains(f));
    compared.sort();
    compared.dedup();
    pkg.compared = compared;
    if pkg.name_fields.is_empty() {
        pkg.name_fields = vec!["description".into(), "name".into(), "desc".into()];
    }
    pkg
}

/// The test units of one file (Go: with its package's tables, see [`go_package`]).
pub fn units(src: &str, lang: Lang) -> Vec<Unit> {
    units_in(src, lang, &go_package(&[src]))
}

pub fn units_in(src: &str, lang: Lang, pkg: &GoPkg) -> Vec<Unit> {
    let toks = lex(src, lang);
    match lang {
        Lang::Python => python(src, &toks),
        Lang::Go => go(src, &toks, pkg),
        _ => clike(src, &toks, lang),
    }
}

fn snake_style(names: &[String]) -> Style {
    let with = names.iter().filter(|n| n.starts_with("test_")).count();
    Style::Snake { prefix: if with * 2 >= names.len().max(1) { "test_".into() } else { String::new() } }
}

fn python(src: &str, toks: &[Token]) -> Vec<Unit> {
    let lines: Vec<(usize, &str)> = {
        let mut v = Vec::new();
        let mut at = 0;
        for l in src.split_inclusive('\n') {
            v.push((at, l));
            at += l.len();
        }
        v
    };
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = Vec::new();
    // Which class (by line) each line belongs to, for containers.
    let mut class_line: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < lines.len() {
        let (at, l) = lines[i];
        let ind = indent(l);
        let s = l.trim_start();
        if s.starts_with("class ") {
            class_line = Some((i, ind));
        } else if !s.trim().is_empty()
            && class_line.is_some_and(|(_, ci)| ind <= ci)
            && !s.starts_with('#')
            && !s.starts_with('@')
        {
            class_line = None;
        }
        let is_test = (s.starts_with("def test") || s.starts_with("async def test")) && s.contains('(');
        if !is_test {
            i += 1;
            continue;
        }
        // Decorators just above, at the same indentation.
        let mut first = i;
        while first > 0 && indent(lines[first - 1].1) == ind && lines[first - 1].1.trim_start().starts_with('@') {
            first -= 1;
        }
        // The header may span lines (`def test_long_name(\n    self,\n):`): it ends where its
        // parentheses close.
        let mut header = i;
        let mut depth: i32 = 0;
        loop {
            depth += lines[header].1.matches('(').count() as i32 - lines[header].1.matches(')').count() as i32;
            if depth <= 0 || header + 1 >= lines.len() {
                break;
            }
            header += 1;
        }
        // The body: every following line indented further (or blank).
        let mut last = header;
        while last + 1 < lines.len() && (lines[last + 1].1.trim().is_empty() || indent(lines[last + 1].1) > ind) {
            last += 1;
        }
        while last > header && lines[last].1.trim().is_empty() {
            last -= 1;
        }
        let (start, end) = (lines[first].0, lines[last].0 + lines[last].1.len());
        let name_at = at + ind + s.find("test").unwrap_or(0);
        let name_end = name_at + s[s.find("test").unwrap_or(0)..].find('(').unwrap_or(0);
        let name = src[name_at..name_end].to_string();
        let (a, b) = (
            toks.iter().position(|x| x.start >= start).unwrap_or(toks.len()),
            toks.iter().position(|x| x.start >= end).unwrap_or(toks.len()),
        );
        let (sites, inputs) = sites(src, toks, (a, b), Lang::Python, &[]);
        out.push(Unit {
            start,
            end,
            names: vec![(name_at, name_end, Style::Snake { prefix: "test_".into() })],
            name,
            container: class_line.map(|c| c.0).unwrap_or(usize::MAX),
            sites,
            loose: vec![],
            inputs,
            tags: vec![],
        });
        i = last + 1;
    }
    out
}

fn clike(src: &str, toks: &[Token], lang: Lang) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::new();
    let word = |j: usize| t(src, toks, j);
    let mut j = 0;
    while j < toks.len() {
        let here = j;
        j += 1;
        let (first_tok, name_tok, open_body, extra_names, tags): (usize, usize, usize, Vec<usize>, Vec<usize>) =
            match lang {
                Lang::Rust
                    if word(here) == "#"
                        && word(here + 1) == "["
                        && word(here + 2) == "test"
                        && word(here + 3) == "]" =>
                {
                    // #[test] then other attributes, then fn NAME(...) ... {
                    let mut k = here + 4;
                    let mut should_panic = false;
                    while word(k) == "#" && word(k + 1) == "[" {
                        should_panic |= word(k + 2) == "should_panic";
                        k = matching(src, toks, k + 1).map(|c| c + 1).unwrap_or(toks.len());
                    }
                    if should_panic || word(k) != "fn" {
                        continue;
                    }
                    let Some(open) = (k..toks.len()).find(|&x| word(x) == "{") else { continue };
                    // The attributes above `#[test]` are the unit's too: a copy goes above them
                    // (not between a `#[cfg(...)]` and the test it gates), and a test the build
                    // may leave out (`#[cfg(feature = "advanced")]`, rust/doubly-linked-list)
                    // gives no control, which would not run.
                    let mut first = here;
                    let mut gated = false;
                    while first >= 1 && word(first - 1) == "]" {
                        let mut d = 0i32;
                        let mut m = first - 1;
                        loop {
                            match word(m) {
                                "]" => d += 1,
                                "[" => d -= 1,
                                _ => {}
                            }
                            if d == 0 || m == 0 {
                                break;
                            }
                            m -= 1;
                        }
                        if d != 0 || m == 0 || word(m - 1) != "#" {
                            break;
                        }
                        gated |= word(m + 1) == "cfg" && !(word(m + 3) == "test" && word(m + 4) == ")");
                        first = m - 1;
                    }
                    if gated {
                        j = matching(src, toks, open).map(|c| c + 1).unwrap_or(toks.len());
                        continue;
                    }
                    (first, k + 1, open, vec![], vec![])
                }
                Lang::Js
                    if ["test", "it", "xtest", "xit"].contains(&word(here))
                        && word(here + 1) == "("
                        && toks.get(here + 2).is_some_and(|x| x.kind == Kind::Str)
                        && (here == 0 || word(here - 1) != ".") =>
                {
                    let Some(close) = matching(src, toks, here + 1) else { continue };
                    let Some(open) = (here + 3..close).find(|&x| word(x) == "{") else { continue };
                    (here, here + 2, open, vec![], vec![])
                }
                Lang::Java if word(here) == "@" && word(here + 1) == "Test" && word(here + 2) != "." => {
                    // Annotations before (walk back over `@Name(...)`), after, then the method.
                    let mut first = here;
                    let mut display = vec![];
                    loop {
                        let mut k = first;
                        if k > 0 && word(k - 1) == ")" {
                            let mut d = 0;
                            let mut m = k - 1;
                            loop {
                                match word(m) {
                                    ")" => d += 1,
                                    "(" => d -= 1,
                                    _ => {}
                                }
                                if d == 0 || m == 0 {
                                    break;
                                }
                                m -= 1;
                            }
                            k = m;
                        }
                        if k >= 2 && toks[k - 1].kind == Kind::Ident && word(k - 2) == "@" {
                            first = k - 2;
                        } else {
                            break;
                        }
                    }
                    let mut k = here + 2;
                    while word(k) == "@" {
                        k += 2;
                        if word(k) == "(" {
                            k = matching(src, toks, k).map(|c| c + 1).unwrap_or(toks.len());
                        }
                    }
                    // @DisplayName("..."), wherever it is among them.
                    for m in first..k {
                        if word(m) == "DisplayName"
                            && word(m + 1) == "("
                            && toks.get(m + 2).is_some_and(|x| x.kind == Kind::Str)
                        {
                            display.push(m + 2);
                        }
                    }
                    while ["public", "protected", "private", "static", "final", "void"].contains(&word(k)) {
                        k += 1;
                    }
                    if word(k + 1) != "(" {
                        continue;
                    }
                    let Some(open) = (k..toks.len()).find(|&x| word(x) == "{") else { continue };
                    if word(first) != "@" {
                        continue;
                    }
                    (first, k, open, display, vec![])
                }
                Lang::Cpp
                    if ["TEST_CASE", "SCENARIO"].contains(&word(here))
                        && word(here + 1) == "("
                        && toks.get(here + 2).is_some_and(|x| x.kind == Kind::Str) =>
                {
                    let Some(close) = matching(src, toks, here + 1) else { continue };
                    if word(close + 1) != "{" {
                        continue;
                    }
                    let tags = if word(here + 3) == "," && toks.get(here + 4).is_some_and(|x| x.kind == Kind::Str) {
                        vec![here + 4]
                    } else {
                        vec![]
                    };
                    (here, here + 2, close + 1, vec![], tags)
                }
                _ => continue,
            };
        let Some(close) = matching(src, toks, open_body) else { continue };
        // The unit ends with its statement (JS: the call's `)` and `;`).
        let mut last = close;
        if lang == Lang::Js {
            if let Some(c) = matching(src, toks, first_tok + 1) {
                last = c;
                if word(c + 1) == ";" {
                    last = c + 1;
                }
            }
        }
        let (start, end) = (line_start(src, toks[first_tok].start), line_end(src, toks[last].end - 1));
        // Another unit or statement sharing the first or last line: not a unit to copy.
        let shares = toks.iter().any(|x| {
            (x.start >= start && x.start < toks[first_tok].start) || (x.start >= toks[last].end && x.start < end)
        });
        // A C++ test the runner compiles out (`#if defined(EXERCISM_INCLUDE_BENCHMARK)`): its
        // copy would not build, or not run.
        if shares || (lang == Lang::Cpp && in_conditional(&src[..start])) {
            j = last + 1;
            continue;
        }
        let nt = toks[name_tok];
        let quoted = nt.kind == Kind::Str;
        let name = if quoted { unquote_simple(nt.text(src)) } else { nt.text(src).to_string() };
        let style = match lang {
            Lang::Java => Style::Camel { prefix: String::new() },
            _ if quoted => Style::Sentence,
            _ => Style::Snake { prefix: String::new() },
        };
        let mut names = vec![(nt.start, nt.end, style)];
        names.extend(extra_names.iter().map(|&m| (toks[m].start, toks[m].end, Style::Sentence)));
        let skip: Vec<(usize, usize)> =
            names.iter().map(|n| (n.0, n.1)).chain(tags.iter().map(|&m| (toks[m].start, toks[m].end))).collect();
        let (sites, inputs) = sites(src, toks, (open_body, close + 1), lang, &skip);
        out.push(Unit {
            start,
            end,
            names,
            name,
            container: container_at(src, toks, first_tok),
            sites,
            loose: vec![],
            inputs,
            tags: tags.iter().map(|&m| (toks[m].start, toks[m].end)).collect(),
        });
        j = last + 1;
    }
    // Rust and Java: the prefix the file's names share.
    if lang == Lang::Rust {
        let names: Vec<String> = out.iter().map(|u| u.name.clone()).collect();
        let style = snake_style(&names);
        for u in &mut out {
            u.names[0].2 = style.clone();
        }
    }
    out
}

/// Go: `func TestXxx(t *testing.T)` functions that loop over no table, and the rows of
/// `[]struct{...}{...}` tables.
fn go(src: &str, toks: &[Token], pkg: &GoPkg) -> Vec<Unit> {
    let word = |j: usize| t(src, toks, j);
    let mut out = Vec::new();
    let mut j = 0;
    while j < toks.len() {
        // Top-level test functions.
        if word(j) == "func"
            && word(j + 1).starts_with("Test")
            && word(j + 2) == "("
            && container_at(src, toks, j) == usize::MAX
        {
            let open = (j..toks.len()).find(|&x| word(x) == "{");
            if let Some((open, close)) = open.and_then(|o| matching(src, toks, o).map(|c| (o, c))) {
                if !(open..close).any(|x| word(x) == "range") {
                    let (sites, inputs) = sites(src, toks, (open, close + 1), Lang::Go, &[]);
                    let nt = toks[j + 1];
                    out.push(Unit {
                        start: line_start(src, toks[j].start),
                        end: line_end(src, toks[close].end - 1),
                        names: vec![(nt.start, nt.end, Style::Camel { prefix: "Test".into() })],
                        name: nt.text(src).to_string(),
                        container: usize::MAX,
                        sites,
                        loose: vec![],
                        inputs,
                        tags: vec![],
                    });
                }
                j = close + 1;
                continue;
            }
        }
        // []struct { fields } { rows }, or []Type{ rows } of a struct type of the package's.
        if word(j) == "[" && word(j + 1) == "]" {
            let open = if word(j + 2) == "struct" && word(j + 3) == "{" {
                matching(src, toks, j + 3).map(|e| e + 1)
            } else if pkg.types.iter().any(|ty| ty == word(j + 2)) {
                Some(j + 3)
            } else {
                None
            };
            if let Some(open) = open.filter(|&o| word(o) == "{") {
                if let Some(table_end) = matching(src, toks, open) {
                    out.extend(go_rows(src, toks, open, table_end, pkg));
                    j = table_end + 1;
                    continue;
                }
            }
        }
        j += 1;
    }
    out
}

fn go_rows(src: &str, toks: &[Token], open: usize, close: usize, pkg: &GoPkg) -> Vec<Unit> {
    let word = |j: usize| t(src, toks, j);
    let mut out = Vec::new();
    let mut k = open + 1;
    while k < close {
        if word(k) != "{" {
            k += 1;
            continue;
        }
        let Some(end) = matching(src, toks, k) else { break };
        let last = if word(end + 1) == "," { end + 1 } else { end };
        let (start, stop) = (line_start(src, toks[k].start), line_end(src, toks[last].end - 1));
        // A row on lines of its own.
        let alone = !toks
            .iter()
            .any(|x| (x.start >= start && x.start < toks[k].start) || (x.start >= toks[last].end && x.start < stop));
        let fields = args(src, toks, k);
        let mut name = None;
        let mut sites = Vec::new();
        let mut compared = Vec::new();
        let mut risky = false;
        for &(a, b) in &fields {
            if b < a + 3 || word(a + 1) != ":" || toks[a].kind != Kind::Ident {
                continue;
            }
            let key = word(a).to_ascii_lowercase();
            let value = (a + 2, b);
            if pkg.name_fields.contains(&key) && b == a + 3 && toks[a + 2].kind == Kind::Str {
                name = Some(a + 2);
            } else if ["expected", "want", "expect", "output", "result", "exp", "answer"]
                .iter()
                .any(|e| key == *e || key.starts_with("expected") || key.starts_with("want"))
                && !key.contains("err")
            {
                if let Some(l) = display(src, toks, value, Lang::Go) {
                    sites.push(Site::Lits(l));
                }
            } else if key.contains("err")
                || key.contains("valid")
                || key == "ok"
                || key.contains("panic")
                || key.contains("fail")
                || toks[value.0..value.1].iter().any(|x| ["true", "false"].contains(&x.text(src)))
            {
                risky = true;
            } else if pkg.compared.contains(&key) {
                if let Some(l) = display(src, toks, value, Lang::Go) {
                    compared.push(Site::Lits(l));
                }
            }
        }
        if let (Some(n), true) = (name, alone) {
            let nt = toks[n];
            let skip = vec![(nt.start, nt.end)];
            let used: Vec<(usize, usize)> = sites
                .iter()
                .chain(&compared)
                .filter_map(|s| {
                    if let Site::Lits(l) = s {
                        Some(l.iter().map(|x| (x.start, x.end)).collect::<Vec<_>>())
                    } else {
                        None
                    }
                })
                .flatten()
                .chain(skip)
                .collect();
            let inputs = toks[k..end]
                .iter()
                .filter(|x| {
                    matches!(x.kind, Kind::Num | Kind::Str | Kind::Char)
                        && !used.iter().any(|&(s, e)| x.start >= s && x.end <= e)
                })
                .map(|x| Lit { start: x.start, end: x.end })
                .collect();
            let (exact, mut loose) = if risky { (vec![], sites) } else { (sites, vec![]) };
            loose.extend(compared);
            out.push(Unit {
                start,
                end: stop,
                names: vec![(nt.start, nt.end, Style::Sentence)],
                name: unquote_simple(nt.text(src)),
                container: open,
                sites: exact,
                loose,
                inputs,
                tags: vec![],
            });
        }
        k = end + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(src: &str, lang: Lang) -> Vec<Unit> {
        units(src, lang)
    }

    #[test]
    fn go_fields_the_tests_compare_are_expectations_whatever_their_name() {
        let go = "package b\n\nvar cases = []struct {\n\tdescription string\n\trolls []int\n\tgoal int\n\tscore int\n\tmoves int\n}{\n\t{\n\t\tdescription: \"zeros\",\n\t\trolls: []int{0, 0},\n\t\tgoal: 3,\n\t\tscore: 7,\n\t\tmoves: 2,\n\t},\n}\n\nfunc TestScore(t *testing.T) {\n\tfor _, tc := range cases {\n\t\tt.Run(tc.description, func(t *testing.T) {\n\t\t\tg, m := Play(tc.rolls, tc.goal)\n\t\t\tif g != tc.score || tc.goal == m {\n\t\t\t\tt.Fatalf(\"%d %d\", tc.score, tc.moves)\n\t\t\t}\n\t\t\tif !reflect.DeepEqual(m, tc.moves) {\n\t\t\t\tt.Fatal(m)\n\t\t\t}\n\t\t})\n\t}\n}\n";
        let pkg = go_package(&[go]);
        // `goal` is compared too, but it is passed to Play: an input.
        assert_eq!(pkg.compared, vec!["moves".to_string(), "score".to_string()]);
        let us = units_in(go, Lang::Go, &pkg);
        assert_eq!(us.len(), 1);
        let lit = |s: &Site| {
            if let Site::Lits(l) = s {
                l.iter().map(|x| &go[x.start..x.end]).collect::<Vec<_>>().join(",")
            } else {
                String::new()
            }
        };
        assert!(us[0].sites.is_empty(), "never exact: only calibration may use them");
        let loose: Vec<String> = us[0].loose.iter().map(lit).collect();
        assert_eq!(loose, vec!["7".to_string(), "2".to_string()]);
        let inputs: Vec<&str> = us[0].inputs.iter().map(|x| &go[x.start..x.end]).collect();
        assert_eq!(inputs, vec!["0", "0", "3"]);
    }

    #[test]
    fn units_and_sites_per_language() {
        let py = "import unittest\n\nclass T(unittest.TestCase):\n    def helper(self):\n        return 1\n\n    def test_adds_two(self):\n        self.assertEqual(add(1, 2), 3)\n\n    @unittest.skip('x')\n    def test_lists(self):\n        expected = [1, 2]\n        self.assertEqual(f(), expected)\n\n    def test_truth(self):\n        self.assertTrue(ok(5))\n";
        let u = one(py, Lang::Python);
        assert_eq!(
            u.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
            ["test_adds_two", "test_lists", "test_truth"]
        );
        assert_eq!(
            u[0].sites,
            vec![Site::Lits(vec![Lit { start: py.find("3)").unwrap(), end: py.find("3)").unwrap() + 1 }])]
        );
        assert!(u[1].start == py.find("    @unittest").unwrap(), "decorators go with the unit");
        assert!(matches!(&u[1].sites[0], Site::Lits(l) if l.len() == 2));
        assert!(matches!(&u[2].sites[0], Site::Toggle(_, _, to) if to == "assertFalse"));
        assert_eq!(u[0].inputs.len(), 2, "the inputs 1 and 2");
        assert!(u.iter().all(|x| x.container == u[0].container));

        let rs = "#[test]\nfn zero() {\n    let expected = \"zero\";\n    assert_eq!(encode(0), expected);\n}\n\n#[test]\n#[ignore]\nfn big() {\n    assert!(is_big(10));\n}\n\n#[test]\n#[should_panic]\nfn p() { f(); }\n";
        let u = one(rs, Lang::Rust);
        assert_eq!(u.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(), ["zero", "big"]);
        assert!(matches!(&u[0].sites[0], Site::Lits(l) if &rs[l[0].start..l[0].end] == "\"zero\""));
        assert!(matches!(&u[1].sites[0], Site::Toggle(_, _, to) if to == "!(is_big(10))"));

        let js = "describe('B', () => {\n  test('scores zero', () => {\n    expect(score([0, 0])).toEqual(0);\n  });\n\n  xtest('scores ten', () => {\n    expect(score([5, 5])).not.toEqual(3);\n    expect(ok()).toBeTruthy();\n  });\n});\n";
        let u = one(js, Lang::Js);
        assert_eq!(u.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(), ["scores zero", "scores ten"]);
        assert_eq!(u[0].sites.len(), 1);
        assert!(matches!(&u[1].sites[..], [Site::Toggle(_, _, to)] if to == "toBeFalsy"), "{:?}", u[1].sites);

        let java = "class T {\n    @Disabled(\"Remove to run test\")\n    @Test\n    @DisplayName(\"scores a game\")\n    public void scoresAGame() {\n        assertThat(game.score()).isEqualTo(90);\n        assertThat(x.isEmpty()).isTrue();\n    }\n}\n";
        let u = one(java, Lang::Java);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].name, "scoresAGame");
        assert_eq!(u[0].start, java.find("    @Disabled").unwrap());
        assert_eq!(u[0].names.len(), 2, "the display name too");
        assert_eq!(u[0].sites.len(), 2);

        let cpp = "#include \"x.h\"\nTEST_CASE(\"Yacht\", \"[3060e4a5-4063-4deb-a380-a630b43a84b6]\") {\n\tREQUIRE(50 == yacht::score({5, 5, 5, 5, 5}, \"yacht\"));\n}\n#if defined(EXERCISM_RUN_ALL_TESTS)\nTEST_CASE(\"Not Yacht\", \"[15026df2]\") {\n\tREQUIRE(yacht::ok());\n}\n#endif\n";
        let u = one(cpp, Lang::Cpp);
        assert_eq!(u.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(), ["Yacht", "Not Yacht"]);
        assert!(matches!(&u[0].sites[0], Site::Lits(l) if &cpp[l[0].start..l[0].end] == "50"));
        assert!(matches!(&u[1].sites[0], Site::Toggle(_, _, to) if to == "REQUIRE_FALSE"));
        assert_eq!(u[0].tags.len(), 1);

        let go = "package p\n\nvar testCases = []struct {\n\tdescription string\n\tbasket      []int\n\texpected    int\n}{\n\t{\n\t\tdescription: \"Only a single book\",\n\t\tbasket:      []int{1},\n\t\texpected:    800,\n\t},\n\t{\n\t\tdescription: \"Two of the same book\",\n\t\tbasket:      []int{2, 2},\n\t\texpected:    1600,\n\t},\n}\n\nfunc TestTwo(t *testing.T) {\n\tif got := Two(); got != 2 {\n\t\tt.Fatal(got)\n\t}\n}\n";
        let u = one(go, Lang::Go);
        assert_eq!(
            u.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
            ["Only a single book", "Two of the same book", "TestTwo"]
        );
        assert!(matches!(&u[0].sites[0], Site::Lits(l) if &go[l[0].start..l[0].end] == "800"));
        assert_eq!(u[0].inputs.len(), 1);
        assert!(matches!(&u[2].sites[0], Site::Lits(l) if &go[l[0].start..l[0].end] == "2"));
        assert_eq!(words("shouldScoreAGame"), ["should", "score", "a", "game"]);
        assert_eq!(words("test_two_more"), ["test", "two", "more"]);
    }

    /// A Java test file that uses `assertTrue` alone has no `assertFalse` to call: a control
    /// turns its condition over instead (issue 38: the copies did not compile); with the other
    /// imported (or JUnit's `Assertions.*`, or a qualified call) the call is turned.
    #[test]
    fn java_turns_only_what_the_file_can_call() {
        let body = "public class T {\n    @Test\n    public void oneWay() {\n        assertTrue(isOk(1));\n    }\n\n    @Test\n    public void withMessage() {\n        assertTrue(isOk(2), \"two\");\n    }\n\n    @Test\n    public void junitFour() {\n        assertTrue(\"three\", isOk(3));\n    }\n\n    @Test\n    public void supplier() {\n        assertTrue(() -> isOk(4));\n    }\n\n    @Test\n    public void qualified() {\n        Assertions.assertTrue(isOk(5));\n    }\n}\n";
        let turned = |src: &str| -> Vec<String> {
            units(src, Lang::Java)
                .iter()
                .map(|u| {
                    u.sites
                        .iter()
                        .map(|s| match s {
                            Site::Toggle(a, b, to) => format!("{} -> {to}", &src[*a..*b]),
                            Site::Lits(_) => "lits".into(),
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect()
        };
        let alone = format!(
            "import org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.assertTrue;\n\n{body}"
        );
        assert_eq!(
            turned(&alone),
            [
                "isOk(1) -> !(isOk(1))",
                "isOk(2) -> !(isOk(2))",
                "isOk(3) -> !(isOk(3))",
                "",
                "assertTrue -> assertFalse"
            ]
        );
        for imports in [
            "import static org.junit.jupiter.api.Assertions.assertTrue;\nimport static org.junit.jupiter.api.Assertions.assertFalse;\n",
            "import static org.junit.jupiter.api.Assertions.*;\n",
        ] {
            let src = format!("import org.junit.jupiter.api.Test;\n{imports}\n{body}");
            assert!(turned(&src).iter().all(|t| t == "assertTrue -> assertFalse"), "{:?}", turned(&src));
        }
        // AssertJ's Assertions.* has no assertFalse.
        let assertj = format!("import static org.assertj.core.api.Assertions.*;\n{body}");
        assert_eq!(turned(&assertj)[0], "isOk(1) -> !(isOk(1))");
    }

    /// Python: `self.assertTrue` turns into `self.assertFalse`, a function of the file's own
    /// named `assertTrue` does not (the file may have no `assertFalse`).
    #[test]
    fn python_turns_only_unittest_methods() {
        let py = "def assertTrue(x):\n    assert x\n\n\ndef test_free():\n    assertTrue(ok(1))\n\n\nclass T(unittest.TestCase):\n    def test_method(self):\n        self.assertTrue(ok(2))\n";
        let us = units(py, Lang::Python);
        assert_eq!(us.len(), 2);
        assert!(us[0].sites.is_empty(), "{:?}", us[0].sites);
        assert!(matches!(&us[1].sites[..], [Site::Toggle(_, _, to)] if to == "assertFalse"));
    }

    /// rust/doubly-linked-list: a test under `#[cfg(feature = "advanced")]` gives no control
    /// (its copy would not be built), and a unit starts at its first attribute, so that a copy
    /// put before it does not land between the `#[cfg]` and the test it gates.
    #[test]
    fn rust_attributes_above_the_test_go_with_it() {
        let rs = "#[test]\n#[ignore]\nfn plain() {\n    assert_eq!(f(), 1);\n}\n\n#[cfg(feature = \"advanced\")]\n#[allow(dead_code)]\n#[test]\n#[ignore]\nfn gated() {\n    assert_eq!(g(), 2);\n}\n\n#[allow(clippy::all)]\n#[test]\nfn allowed() {\n    assert!(h());\n}\n";
        let us = units(rs, Lang::Rust);
        assert_eq!(us.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["plain", "allowed"]);
        assert_eq!(us[1].start, rs.find("#[allow(clippy").unwrap());
    }

    /// A bound expectation that is an input too is no exact site: `const N` taken from the
    /// list and compared with its length (rust/doubly-linked-list's gold passed that copy).
    #[test]
    fn a_name_that_is_an_input_too_is_no_expectation() {
        let rs = "#[test]\nfn counts() {\n    const N: usize = 15;\n    let list = make(N);\n    assert_eq!(list.len(), N);\n}\n\n#[test]\nfn compares() {\n    let expected = 15;\n    assert_eq!(make(3).len(), expected);\n}\n";
        let us = units(rs, Lang::Rust);
        assert!(us[0].sites.is_empty(), "{:?}", us[0].sites);
        assert!(matches!(&us[1].sites[..], [Site::Lits(l)] if &rs[l[0].start..l[0].end] == "15"));
    }
}

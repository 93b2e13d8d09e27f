//! The red team's adversary, as code: a forger whose code runs in the test process, reads the
//! planted test file (it knows polysandbox's source, not the dataset's original tests), finds
//! each control's near twin by its body, and guesses which of the two is the control. Run over
//! every exercise of the shared benchmark with controls planted as eval plants them, it measures
//! how often that guess is right, per pair: 50% is chance.
//!
//! The guesses: the red team's (a name with no word of its own, changed literals rarer in the
//! file), each single clue alone (its direction learned on half of the exercises, measured on
//! the other half), and all the clues weighed together by a logistic regression trained the same
//! way: a forger who knows the generator can learn what its output looks like.

use super::lex::{lex, Kind, Lang};
use super::*;
use std::collections::HashMap;

/// The clues, each a number per unit of a pair (the pair's feature is A's minus B's).
pub const CLUES: [&str; 15] = [
    "name words of its own",
    "name words of one letter or a digit",
    "name length",
    "changed tokens' frequency in the file",
    "changed tokens found nowhere else",
    "changed strings' words' frequency",
    "changed strings' words found nowhere else",
    "changed characters' frequency",
    "changed numbers' distance to the file's others",
    "changed numbers' trailing zeros",
    "literals within the unit sharing words",
    "changed tokens' length",
    "place among its siblings",
    "attributes unlike its neighbours'",
    "changed strings' words found in its other literals",
];

/// One control and its original, seen by the adversary.
pub struct Pair {
    pub language: String,
    pub id: String,
    /// A's clues minus B's.
    pub diff: Vec<f64>,
    /// Whether A is the control.
    pub a_is_control: bool,
    /// The red team's guess: `Some(true)` when it calls A the control, `None` on a tie.
    pub red_team: Option<bool>,
    /// Whether the adversary's twin search, from the control, finds its original.
    pub found: bool,
    /// What differs: the control's tokens and the original's, with their counts elsewhere.
    pub what: String,
}

/// The unit the adversary sees: its tokens without the name and tags, and what surrounds it.
struct Seen {
    name: String,
    /// (text, kind) of each token of the body, names and tags left out.
    toks: Vec<(String, Kind)>,
    /// Tokens before the name (attributes, decorators, `test(`), as text.
    head: String,
    index: usize,
}

fn is_bool(t: &str) -> bool {
    ["true", "false", "True", "False"].contains(&t)
}

fn is_literal(t: &(String, Kind)) -> bool {
    matches!(t.1, Kind::Num | Kind::Str | Kind::Char | Kind::OtherStr) || is_bool(&t.0)
}

fn lit_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| w.to_lowercase()).collect()
}

fn number(text: &str) -> Option<f64> {
    let t: String = text.chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-').collect();
    t.parse().ok()
}

fn seen_units(src: &str, lang: Lang, units: &[Unit]) -> Vec<Seen> {
    let toks = lex(src, lang);
    units
        .iter()
        .enumerate()
        .map(|(index, u)| {
            let skip: Vec<(usize, usize)> = u.names.iter().map(|n| (n.0, n.1)).chain(u.tags.iter().copied()).collect();
            let name_at = u.names.first().map(|n| n.0).unwrap_or(u.start);
            let mine: Vec<&Token> = toks.iter().filter(|t| t.start >= u.start && t.end <= u.end).collect();
            let head: String =
                mine.iter().filter(|t| t.end <= name_at).map(|t| t.text(src)).collect::<Vec<_>>().join(" ");
            let body = mine
                .iter()
                .filter(|t| !skip.iter().any(|&(s, e)| t.start >= s && t.end <= e))
                .map(|t| (t.text(src).to_string(), t.kind))
                .collect();
            Seen { name: u.name.clone(), toks: body, head, index }
        })
        .collect()
}

use super::lex::Token;

/// The positions where two units' bodies differ, if they are of one length.
fn differ(a: &Seen, b: &Seen) -> Option<Vec<usize>> {
    (a.toks.len() == b.toks.len()).then(|| (0..a.toks.len()).filter(|&i| a.toks[i].0 != b.toks[i].0).collect())
}

/// The unit most like `of` (fewest differing tokens, same length), the adversary's twin.
fn twin(units: &[Seen], of: usize) -> Option<usize> {
    units
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != of)
        .filter_map(|(i, u)| differ(&units[of], u).filter(|d| !d.is_empty()).map(|d| (d.len(), i)))
        .min()
        .map(|x| x.1)
}

/// The clues of unit `x` against its twin `y`, from everything else in the file.
fn clues(units: &[Seen], x: usize, y: usize) -> Vec<f64> {
    let (ux, uy) = (&units[x], &units[y]);
    let d = differ(ux, uy).unwrap_or_default();
    let rest = || units.iter().enumerate().filter(|(i, _)| *i != x && *i != y).map(|(_, u)| u);
    let mut tok: HashMap<&str, f64> = HashMap::new();
    let mut word: HashMap<String, f64> = HashMap::new();
    let mut chars: HashMap<char, f64> = HashMap::new();
    let mut nums: Vec<f64> = Vec::new();
    for u in rest() {
        for t in &u.toks {
            *tok.entry(t.0.as_str()).or_default() += 1.0;
            if matches!(t.1, Kind::Str | Kind::OtherStr | Kind::Char) {
                for w in lit_words(&t.0) {
                    *word.entry(w).or_default() += 1.0;
                }
                for c in t.0.chars() {
                    *chars.entry(c).or_default() += 1.0;
                }
            }
            if t.1 == Kind::Num {
                nums.extend(number(&t.0));
            }
        }
    }
    let others: Vec<String> =
        units.iter().enumerate().filter(|(i, _)| *i != x).flat_map(|(_, u)| model::words(&u.name)).collect();
    let nw: Vec<String> = model::words(&ux.name).into_iter().filter(|w| w != "test").collect();
    let mut f = vec![0.0; CLUES.len()];
    f[0] = nw.iter().filter(|w| !others.contains(w)).count() as f64;
    f[1] = nw.iter().filter(|w| w.len() < 2 || w.starts_with(|c: char| c.is_ascii_digit())).count() as f64;
    f[2] = nw.len() as f64;
    for &p in &d {
        let (a, b) = (&ux.toks[p], &uy.toks[p]);
        let c = tok.get(a.0.as_str()).copied().unwrap_or(0.0);
        f[3] += (1.0 + c).ln();
        f[4] += f64::from(c == 0.0);
        f[11] += a.0.len() as f64;
        if matches!(a.1, Kind::Str | Kind::OtherStr | Kind::Char) {
            let bw = lit_words(&b.0);
            for w in lit_words(&a.0).into_iter().filter(|w| !bw.contains(w)) {
                let c = word.get(&w).copied().unwrap_or(0.0);
                f[5] += (1.0 + c).ln();
                f[6] += f64::from(c == 0.0);
                // Found among the unit's other literals (an input repeated in its expectation).
                let inside =
                    ux.toks.iter().enumerate().any(|(j, t)| j != p && is_literal(t) && lit_words(&t.0).contains(&w));
                f[14] += f64::from(inside);
            }
            let (ac, bc): (Vec<char>, Vec<char>) = (a.0.chars().collect(), b.0.chars().collect());
            if ac.len() == bc.len() {
                for (i, ch) in ac.iter().enumerate() {
                    if *ch != bc[i] {
                        f[7] += (1.0 + chars.get(ch).copied().unwrap_or(0.0)).ln();
                    }
                }
            }
        }
        if a.1 == Kind::Num {
            if let Some(v) = number(&a.0) {
                let near = nums.iter().filter(|&&n| n != v).map(|n| (n - v).abs()).fold(f64::INFINITY, f64::min);
                if near.is_finite() {
                    f[8] -= (1.0 + near).ln();
                }
                let digits: String = a.0.chars().take_while(|c| c.is_ascii_digit()).collect();
                f[9] += (digits.len() - digits.trim_end_matches('0').len()).min(digits.len().saturating_sub(1)) as f64;
            }
        }
    }
    let lits: Vec<&(String, Kind)> = ux.toks.iter().filter(|t| is_literal(t)).collect();
    for i in 0..lits.len() {
        for j in i + 1..lits.len() {
            let wi: Vec<String> = lit_words(&lits[i].0).into_iter().filter(|w| w.len() >= 3).collect();
            if lit_words(&lits[j].0).iter().any(|w| wi.contains(w)) {
                f[10] += 1.0;
            }
        }
    }
    f[12] = ux.index as f64 / units.len().max(1) as f64;
    // The attributes most units have (a first test without `#[ignore]` among ignored ones).
    let mut heads: HashMap<&str, usize> = HashMap::new();
    for u in rest() {
        *heads.entry(u.head.as_str()).or_default() += 1;
    }
    let usual = heads.iter().max_by_key(|(h, n)| (**n, std::cmp::Reverse(**h))).map(|(h, _)| *h).unwrap_or("");
    f[13] = f64::from(ux.head != usual);
    f
}

/// The red team's score of a unit: higher is "real" (a word of its own in its name, common
/// literals); the control is the lower one.
fn red_team_score(f: &[f64], units: &[Seen], x: usize, y: usize) -> f64 {
    let d = differ(&units[x], &units[y]).unwrap_or_default();
    let mut count = 0.0;
    for &p in &d {
        let t = &units[x].toks[p].0;
        count += units
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != x && *i != y)
            .map(|(_, u)| u.toks.iter().filter(|k| &k.0 == t).count())
            .sum::<usize>() as f64;
    }
    10.0 * f[0] + 100.0 * f[1] + count
}

fn describe(units: &[Seen], c: &usize, o: &usize) -> String {
    let (c, o) = (*c, *o);
    let d = differ(&units[c], &units[o]).unwrap_or_default();
    let count = |t: &str| -> usize {
        units
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != c && *i != o)
            .map(|(_, u)| u.toks.iter().filter(|k| k.0 == t).count())
            .sum()
    };
    d.iter()
        .map(|&p| {
            let (a, b) = (&units[c].toks[p].0, &units[o].toks[p].0);
            format!("ctl {a} ({}) / orig {b} ({})", count(a), count(b))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// How a control's original shows in the planted file: under a fresh name when it was renamed
/// beside its control, else its own.
fn original(c: &Control, i: usize, lang: Lang) -> Matcher {
    let own = shown(lang, &c.planted[i].unit);
    c.renamed
        .iter()
        .find(|(_, to)| *to == own)
        .map(|x| x.0.clone())
        .unwrap_or_else(|| matcher(lang, &c.planted[i].unit))
}

/// Plants controls in a copy of each shared exercise `runs` times (the randomness seeded) and
/// returns every control with its original, as the adversary sees them. `calibrated`: drawn
/// from the candidates calibration verifies (eval's default; here unverified, gold not run),
/// else as `--no-calibration` plants them (an exact expectation changed, no input).
pub fn pairs(insts: &[crate::eval::instance::Instance], runs: u64, calibrated: bool) -> Vec<Pair> {
    let mut out = Vec::new();
    for (n, i) in insts.iter().enumerate() {
        let crate::eval::instance::Kind::Exercise { dir, test, .. } = &i.kind else { continue };
        let lang = lang_of(&i.language).unwrap();
        for run in 0..runs {
            seed(0x5eed_0000 + (n as u64) * 1000 + run);
            let d = std::env::temp_dir().join(format!(
                "ps-adv-{}-{}-{}",
                std::process::id(),
                u8::from(calibrated),
                i.id.replace('/', "_")
            ));
            let _ = std::fs::remove_dir_all(&d);
            assert!(std::process::Command::new("cp").arg("-a").arg(dir).arg(&d).status().unwrap().success());
            let cands = candidates(&i.language, &d, test, true);
            let pool = if calibrated { Some(cands.as_slice()) } else { None };
            let Ok(Some(c)) = plant(&i.language, Parser::JunitXml, &d, test, Plan::Run(pool)) else {
                let _ = std::fs::remove_dir_all(&d);
                continue;
            };
            let (files, pkg) = sources(lang, &d, test);
            for (k, (cand, m)) in c.planted.iter().zip(&c.names).enumerate() {
                let Some((_, src)) = files.iter().find(|(f, _)| *f == cand.file) else { continue };
                let units = model::units_in(src, lang, &pkg);
                let seen = seen_units(src, lang, &units);
                let shown = |u: &Unit| match lang {
                    Lang::Java => format!("T.{}()", u.name),
                    _ => super::shown(lang, &u.name),
                };
                let Some(ctl) = units.iter().position(|u| m.matches(&shown(u))) else { continue };
                let orig = original(&c, k, lang);
                let Some(org) = units.iter().position(|u| orig.matches(&shown(u))) else { continue };
                let found = twin(&seen, ctl) == Some(org);
                // Which is A: a coin, so that order says nothing.
                let a_is_control = random_u64() % 2 == 0;
                let (a, b) = if a_is_control { (ctl, org) } else { (org, ctl) };
                let (fa, fb) = (clues(&seen, a, b), clues(&seen, b, a));
                let (ra, rb) = (red_team_score(&fa, &seen, a, b), red_team_score(&fb, &seen, b, a));
                let red_team = if ra == rb { None } else { Some(ra < rb) };
                out.push(Pair {
                    language: i.language.clone(),
                    id: i.id.clone(),
                    diff: fa.iter().zip(&fb).map(|(x, y)| x - y).collect(),
                    a_is_control,
                    red_team,
                    found,
                    what: describe(&seen, &ctl, &org),
                });
            }
            let _ = std::fs::remove_dir_all(&d);
        }
    }
    unseed();
    out
}

/// A logistic regression over the clues, trained on `train`: P(A is the control).
struct Model {
    w: Vec<f64>,
    scale: Vec<f64>,
}

impl Model {
    fn train(train: &[&Pair]) -> Model {
        let n = CLUES.len();
        let mut scale = vec![1.0; n];
        for (j, s) in scale.iter_mut().enumerate() {
            let var = train.iter().map(|p| p.diff[j] * p.diff[j]).sum::<f64>() / train.len().max(1) as f64;
            *s = if var > 0.0 { var.sqrt() } else { 1.0 };
        }
        let mut w = vec![0.0; n];
        for _ in 0..400 {
            let mut g = vec![0.0; n];
            for p in train {
                let z: f64 = (0..n).map(|j| w[j] * p.diff[j] / scale[j]).sum();
                let y = f64::from(u8::from(p.a_is_control));
                let e = 1.0 / (1.0 + (-z).exp()) - y;
                for j in 0..n {
                    g[j] += e * p.diff[j] / scale[j];
                }
            }
            for j in 0..n {
                w[j] -= 0.5 * (g[j] / train.len().max(1) as f64 + 0.001 * w[j]);
            }
        }
        Model { w, scale }
    }

    fn says_a(&self, p: &Pair) -> Option<bool> {
        let z: f64 = (0..self.w.len()).map(|j| self.w[j] * p.diff[j] / self.scale[j]).sum();
        (z != 0.0).then_some(z > 0.0)
    }
}

/// How often a guess is right over `pairs` (a tie is half right).
fn accuracy<'a>(pairs: impl Iterator<Item = &'a Pair>, guess: impl Fn(&Pair) -> Option<bool>) -> (f64, usize) {
    let (mut right, mut n) = (0.0, 0);
    for p in pairs {
        n += 1;
        right += match guess(p) {
            None => 0.5,
            Some(a) => f64::from(u8::from(a == p.a_is_control)),
        };
    }
    (if n == 0 { 0.5 } else { right / n as f64 }, n)
}

/// The accuracies, per language and overall: the red team's guess, the best single clue and
/// the trained model (both measured on exercises they were not trained on), and how often the
/// twin search found the original.
pub struct Measured {
    pub rows: Vec<Row>,
    /// The best single clue overall, and its accuracy.
    pub best_clue: (String, f64),
    /// The model's weight of each clue, trained on every pair (in standard deviations).
    pub weights: Vec<(String, f64)>,
}

/// The accuracies over one language's pairs (or "all").
pub struct Row {
    pub language: String,
    pub pairs: usize,
    /// The red team's rule.
    pub red_team: f64,
    /// The best single clue overall (its direction learned on the other fold).
    pub best_clue: f64,
    /// The logistic regression over every language's pairs of the other fold.
    pub model: f64,
    /// A regression per language, over that language's pairs of the other fold.
    pub lang_model: f64,
    /// How often the twin search, from the control, found its original.
    pub found: f64,
}

pub fn measure(pairs: &[Pair]) -> Measured {
    let fold = |p: &Pair| {
        let h = Sha256::digest(p.id.as_bytes());
        h[0] % 2
    };
    // Two folds by exercise: train on one, guess the other.
    let mut model_guess: Vec<Option<bool>> = vec![None; pairs.len()];
    let mut lang_guess: Vec<Option<bool>> = vec![None; pairs.len()];
    let mut clue_guess: Vec<Vec<Option<bool>>> = vec![vec![None; pairs.len()]; CLUES.len()];
    for f in 0..2 {
        let train: Vec<&Pair> = pairs.iter().filter(|p| fold(p) != f).collect();
        let m = Model::train(&train);
        for (j, guess) in clue_guess.iter_mut().enumerate() {
            // The clue's direction, learned: does a larger A mean A is the control?
            let (up, _) = accuracy(train.iter().copied(), |p| (p.diff[j] != 0.0).then_some(p.diff[j] > 0.0));
            for (k, p) in pairs.iter().enumerate().filter(|(_, p)| fold(p) == f) {
                let larger = (p.diff[j] != 0.0).then_some(p.diff[j] > 0.0);
                guess[k] = if up >= 0.5 { larger } else { larger.map(|x| !x) };
            }
        }
        for (k, p) in pairs.iter().enumerate().filter(|(_, p)| fold(p) == f) {
            model_guess[k] = m.says_a(p);
        }
        // A forger who targets one language: a model of that language's pairs alone.
        let mut langs: Vec<&str> = pairs.iter().map(|p| p.language.as_str()).collect();
        langs.sort_unstable();
        langs.dedup();
        for l in langs {
            let train: Vec<&Pair> = pairs.iter().filter(|p| fold(p) != f && p.language == l).collect();
            let m = Model::train(&train);
            for (k, p) in pairs.iter().enumerate().filter(|(_, p)| fold(p) == f && p.language == l) {
                lang_guess[k] = m.says_a(p);
            }
        }
    }
    let at = |k: usize| k;
    let mut langs: Vec<String> = pairs.iter().map(|p| p.language.clone()).collect();
    langs.sort();
    langs.dedup();
    langs.push("all".into());
    let idx: HashMap<*const Pair, usize> = pairs.iter().enumerate().map(|(k, p)| (p as *const Pair, at(k))).collect();
    let of = |p: &Pair| idx[&(p as *const Pair)];
    let clue_acc: Vec<f64> = (0..CLUES.len()).map(|j| accuracy(pairs.iter(), |p| clue_guess[j][of(p)]).0).collect();
    let best = (0..CLUES.len()).max_by(|&a, &b| clue_acc[a].total_cmp(&clue_acc[b])).unwrap();
    let rows = langs
        .iter()
        .map(|l| {
            let sel = || pairs.iter().filter(|p| l == "all" || &p.language == l);
            let (red, n) = accuracy(sel(), |p| p.red_team);
            let (clue, _) = accuracy(sel(), |p| clue_guess[best][of(p)]);
            let (model, _) = accuracy(sel(), |p| model_guess[of(p)]);
            let (lang_model, _) = accuracy(sel(), |p| lang_guess[of(p)]);
            let found = sel().filter(|p| p.found).count() as f64 / n.max(1) as f64;
            Row { language: l.clone(), pairs: n, red_team: red, best_clue: clue, model, lang_model, found }
        })
        .collect();
    let all: Vec<&Pair> = pairs.iter().collect();
    let m = Model::train(&all);
    let weights = CLUES.iter().zip(&m.w).map(|(c, w)| (c.to_string(), *w)).collect();
    Measured { rows, best_clue: (CLUES[best].to_string(), clue_acc[best]), weights }
}

/// Each clue's accuracy alone over `pairs` (its direction learned on the other fold), for the
/// report.
pub fn clue_table(pairs: &[Pair]) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for (j, name) in CLUES.iter().enumerate() {
        let (up, _) = accuracy(pairs.iter(), |p| (p.diff[j] != 0.0).then_some(p.diff[j] > 0.0));
        out.push((name.to_string(), up.max(1.0 - up)));
    }
    out
}

//! Checking what a draft cites, against the bibliography LaTeX will read,
//! the library and the evidence: keys neither knows (with near-misses and
//! the papers that fit the sentence), keys the bibliography lacks though
//! the library has them (fixed by adding the library's entry), bibliography
//! files the draft names that do not exist, entries whose DOI names another
//! paper, one work under two keys (or a preprint beside its published
//! version), retracted papers, and citations whose support score (in
//! [0, 1], over every signal the pipeline has) is under the threshold: the
//! paper fits its sentence clearly worse than the papers that fit it best.
//! Without a library, the draft is checked against its bibliography alone
//! (unknown keys, duplicates, retractions its entries flag).
//!
//! `check` sits above `pipeline` (it asks the recommender's stages for the
//! signals) and below the front ends: `citewise check`, the language
//! server's diagnostics and the editor's check view read the same
//! [`Report`].
//!
//! A check's work grows with the draft's citations linearly: each key is
//! resolved and looked up for near misses once, each sentence read from a
//! bounded part of its paragraph and scored once, and duplicates found
//! through maps, not pair by pair. At most
//! [`crate::limits::CHECK_CITATIONS`] citations are checked; the rest, and
//! every citation whose keys could not be read, are said in the notices.

pub mod calibration;
pub mod citing;
pub mod finding;
pub mod records;
pub mod rules;
pub mod support;

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

pub use citing::Draft;
pub use finding::{Finding, Kind, Severity, Suggestion};
pub use records::{BibFile, Bibliography, Resolved};
pub use support::{Scored, Scorer, Support};

use crate::corpus::citation_markup::{is_citation_key, CiteGrammar, CiteSyntax};
use crate::corpus::work::same_doi;
use crate::corpus::Paper;
use crate::error::Result;
use crate::index::paper_index::KeyStatus;
use crate::library::Library;
use crate::pipeline::{Query, Recommender};

/// Library keys read for near-misses, at most.
pub const KEYS_READ: usize = 2_000_000;

/// The papers offered for an unknown key or beside a weak citation.
pub const SUGGESTED: usize = 3;

/// What a check without a library says it could not do.
pub const NO_LIBRARY: &str =
    "no library: the draft was checked against its bibliography only (unknown keys, duplicates); support and mismatches need a library";

/// The key a front end writes for a library paper (export's key style):
/// what suggestions offer, and what an entry added from the library gets
/// when the cited key cannot be one.
pub type KeyOf = Arc<dyn Fn(&Paper) -> String + Send + Sync>;

/// Known keys compared with the unknown keys of one check, in all, when
/// looking for near misses (a few seconds' work): past it, an unknown key
/// gets no near misses, and the check says so once.
pub const NEAR_MISS_WORK: usize = 100_000_000;

/// The paper a citation stands for, in a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperRef {
    pub id: String,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year: Option<i32>,
}

/// One citation of the draft, with its support and findings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CitationReport {
    pub key: String,
    pub line: usize,
    pub column: usize,
    /// The sentence it stands in (`[CIT]` where the citation is).
    pub sentence: String,
    /// The library's record it stands for (none: not in the library).
    pub paper: Option<PaperRef>,
    /// Support in [0, 1] (none: not scored; not in the library, or no
    /// recommender).
    pub support: Option<f32>,
    /// What the pipeline said of the paper for the sentence (when scored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signals: Option<support::Signals>,
    pub findings: Vec<Finding>,
}

/// What a check found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub file: String,
    pub citations: Vec<CitationReport>,
    /// Every finding, most severe first, then in draft order.
    pub findings: Vec<Finding>,
    /// What the check could not do (support not scored, ...).
    pub notices: Vec<String>,
}

impl Report {
    /// 0: nothing at warning or above; 1: findings to act on.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.findings.iter().any(|f| f.severity >= Severity::Warning))
    }

    /// The cited keys whose paper the library knows under another key now
    /// ([`Finding::renamed_to`]), each once, in the order the draft first
    /// cites them: (old, new).
    pub fn renamed_keys(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for c in &self.citations {
            for new in c.findings.iter().filter_map(Finding::renamed_to) {
                if !out.iter().any(|(old, _)| *old == c.key) {
                    out.push((c.key.clone(), new.to_string()));
                }
            }
        }
        out
    }
}

/// The sentences scored so far, by their text and cited papers: checking a
/// draft again scores only the sentences that changed.
#[derive(Default)]
pub struct SupportCache {
    scored: HashMap<(String, Vec<String>), Arc<Scored>>,
}

impl SupportCache {
    pub fn len(&self) -> usize {
        self.scored.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scored.is_empty()
    }

    /// Keeps only the sentences of `draft` (so the cache never outgrows it).
    fn keep_only(&mut self, wanted: &std::collections::HashSet<(String, Vec<String>)>) {
        self.scored.retain(|k, _| wanted.contains(k));
    }
}

/// What a check found so far, that scoring support adds to.
struct Found<'f> {
    per_citation: &'f mut [Vec<Finding>],
    supports: &'f mut [Option<Support>],
    notices: &'f mut Vec<String>,
}

/// Checks drafts against their bibliography and a library (and, with a
/// recommender, scores each citation's support).
pub struct Checker<'a> {
    /// None: the bibliography alone.
    library: Option<&'a Library>,
    recommender: Option<&'a Recommender>,
    /// The library's keys, when the caller keeps them (else read when a
    /// key is unknown).
    known_keys: Option<Arc<Vec<String>>>,
    /// The key export writes for a paper (none: the library's own key).
    key_of: Option<KeyOf>,
    /// Unknown keys get near misses (off: a check a front end makes at
    /// once, for renamed keys).
    look_for_near_misses: bool,
}

impl<'a> Checker<'a> {
    /// Record checks only (unknown keys, mismatches, duplicates, retractions).
    pub fn new(library: &'a Library) -> Checker<'a> {
        Checker { library: Some(library), recommender: None, known_keys: None, key_of: None, look_for_near_misses: true }
    }

    /// Record checks against the bibliography alone (no library: unknown
    /// keys, duplicates, retractions its entries flag); the report says
    /// that support and mismatches need a library ([`NO_LIBRARY`]).
    pub fn without_library() -> Checker<'static> {
        Checker { library: None, recommender: None, known_keys: None, key_of: None, look_for_near_misses: true }
    }

    /// Suggestions, and entries added from the library, keyed as `key_of`
    /// writes them (export's key style), not by the library's own keys.
    pub fn keyed_by(mut self, key_of: KeyOf) -> Checker<'a> {
        self.key_of = Some(key_of);
        self
    }

    /// Near-misses are looked for among `keys` (the library's, as the
    /// caller last read them with [`crate::index::paper_index::PaperIndex::keys`]).
    pub fn with_known_keys(mut self, keys: Arc<Vec<String>>) -> Checker<'a> {
        self.known_keys = Some(keys);
        self
    }

    /// Record checks, support scores and suggestions from `rec`'s stages.
    pub fn with_support(rec: &'a Recommender) -> Checker<'a> {
        Checker { library: Some(rec.library()), recommender: Some(rec), known_keys: None, key_of: None, look_for_near_misses: true }
    }

    /// No near misses are looked for (the library's keys are not read): the
    /// record checks of a front end that must answer at once.
    pub fn without_near_misses(mut self) -> Checker<'a> {
        self.look_for_near_misses = false;
        self
    }

    /// A key the bibliography (its files known) lacks though the library has
    /// its record: the finding, its fix the library's entry added under the
    /// cited key (when a bibliography can hold it: a citation key without
    /// `/`) or under the key export gives it.
    fn not_in_bibliography(&self, c: &citing::Citation, r: &Resolved, bib: &Bibliography) -> Option<Finding> {
        let record = r.record.as_ref().filter(|_| !r.declared && bib.known())?;
        let in_bib = bib.papers.iter().find(|e| same_doi(&e.doi, &record.doi)).map(|e| e.key.as_str());
        let writable = is_citation_key(&c.key, CiteSyntax::Latex) && !c.key.contains('/');
        let write_key = if writable { c.key.clone() } else { self.key_for(record, bib) };
        Some(rules::not_in_bibliography(c, record, bib, in_bib, &write_key))
    }

    /// The key to cite `p` by: the bibliography's key for its DOI, else
    /// the key export writes for it, else the library's.
    fn key_for(&self, p: &Paper, bib: &Bibliography) -> String {
        let in_bib = bib.papers.iter().find(|e| same_doi(&e.doi, &p.doi));
        match (in_bib, &self.key_of) {
            (Some(e), _) => e.key.clone(),
            (None, Some(key_of)) => (**key_of)(p),
            (None, None) => p.key.clone(),
        }
    }

    /// Checks `text` (its citations read with `grammar`: the draft's
    /// syntax and the wrapper commands the user's configuration names)
    /// against `bib` and the library; `cache` keeps the sentences scored
    /// for the next check of the draft.
    pub fn check(&self, file: &str, text: &str, grammar: &CiteGrammar, bib: &Bibliography, cache: &mut SupportCache) -> Result<Report> {
        self.check_until(file, text, grammar, bib, cache, &|| false)?
            .ok_or_else(|| crate::error::Error::Input("a check that never stops stopped".into()))
    }

    /// [`Checker::check`], stopping between sentences when `stop` says so
    /// (none: stopped; the sentences scored so far stay in `cache`).
    pub fn check_until(
        &self,
        file: &str,
        text: &str,
        grammar: &CiteGrammar,
        bib: &Bibliography,
        cache: &mut SupportCache,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Report>> {
        let draft = Draft::read(text, grammar);
        let papers = self.library.map(Library::papers);
        let entries = bib.entries_by_key();
        let declares = |key: &str| bib.declared.contains(key) || entries.contains_key(key);
        let mut resolved: HashMap<String, Resolved> = HashMap::new();
        for key in draft.keys() {
            resolved.insert(key.to_string(), Resolved::with_entry(key, entries.get(key).copied(), declares(key), papers)?);
        }
        let mut notices = draft_notices(file, &draft);
        let (near, skipped) =
            if self.look_for_near_misses { self.near_misses(&draft, &resolved, bib, &declares)? } else { (HashMap::new(), 0) };
        if skipped > 0 {
            let limit = NEAR_MISS_WORK;
            notices.push(format!(
                "{file}: near misses not looked for {skipped} unknown keys: over the limit of {limit} keys compared in one check"
            ));
        }
        let mut per_citation = record_findings(self, &draft, &resolved, &near, bib);

        let mut supports: Vec<Option<Support>> = vec![None; draft.citations.len()];
        match self.recommender {
            Some(rec) => {
                let found = Found { per_citation: &mut per_citation, supports: &mut supports, notices: &mut notices };
                if !self.score_support(rec, &draft, &resolved, bib, cache, found, stop)? {
                    return Ok(None);
                }
            }
            None if self.library.is_none() => notices.push(NO_LIBRARY.into()),
            None => notices.push("support not scored: record checks only".into()),
        }

        let mut citations = Vec::with_capacity(draft.citations.len());
        let mut findings = Vec::new();
        for ((c, found), support) in draft.citations.iter().zip(per_citation).zip(supports) {
            let paper = resolved[&c.key].record.as_ref().map(|p| PaperRef { id: p.id.clone(), title: p.title.clone(), year: p.year });
            findings.extend(found.iter().cloned());
            citations.push(CitationReport {
                key: c.key.clone(),
                line: c.line,
                column: c.column,
                sentence: draft.sentences[c.sentence].text.clone(),
                paper,
                support: support.map(|s| s.score),
                signals: support.map(|s| s.signals),
                findings: found,
            });
        }
        let (missing, unnamed) = missing_bibliographies(file, text, grammar.syntax(), bib);
        findings.extend(missing);
        notices.extend(unnamed);
        findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.range.start.cmp(&b.range.start)));
        Ok(Some(Report { file: file.to_string(), citations, findings, notices }))
    }

    /// The near misses of each unknown key of `draft` (none for a renamed
    /// one): the library's and the bibliography's keys a letter or two off
    /// that still name a paper or an entry. Looked up once for each key, at
    /// most [`NEAR_MISS_WORK`] keys compared in all; with the number of
    /// unknown keys past it, not looked up.
    fn near_misses(
        &self,
        draft: &Draft,
        resolved: &HashMap<String, Resolved>,
        bib: &Bibliography,
        declares: &dyn Fn(&str) -> bool,
    ) -> Result<(HashMap<String, Vec<Suggestion>>, usize)> {
        let unknown: Vec<&str> = draft
            .keys()
            .into_iter()
            .filter(|k| resolved.get(*k).is_some_and(|r| r.unknown() && !matches!(r.status, KeyStatus::Renamed(_))))
            .collect();
        let mut near = HashMap::new();
        if unknown.is_empty() {
            return Ok((near, 0));
        }
        let papers = self.library.map(Library::papers);
        let read_keys: Arc<Vec<String>> = match (&self.known_keys, papers) {
            (Some(keys), Some(_)) => keys.clone(),
            (None, Some(papers)) => Arc::new(papers.keys(KEYS_READ)?),
            (_, None) => Arc::new(Vec::new()),
        };
        let known = read_keys.iter().chain(&bib.declared).map(String::as_str).chain(bib.papers.iter().map(|p| p.key.as_str()));
        let index = rules::KeyIndex::new(known);
        let (mut compared, mut not_looked_for) = (0, 0usize);
        for key in unknown {
            if compared >= NEAR_MISS_WORK {
                not_looked_for += 1;
                continue;
            }
            let found = index.near_misses(key, &mut compared);
            // A key read from the index may belong to a paper since removed.
            let kept = found.into_iter().filter_map(|k| {
                if declares(k) {
                    return Some(rules::near_miss(k, ""));
                }
                let paper = papers?.paper_by_key(k).ok().flatten()?;
                Some(rules::near_miss(k, &paper.id))
            });
            near.insert(key.to_string(), kept.collect());
        }
        Ok((near, not_looked_for))
    }

    /// Scores every sentence (from `cache` when it is unchanged), records
    /// each citation's support, flags weak ones and offers the sentence's
    /// best papers for unknown keys and weak citations; false when `stop`
    /// stopped it.
    #[allow(clippy::too_many_arguments)]
    fn score_support(
        &self,
        rec: &Recommender,
        draft: &Draft,
        resolved: &HashMap<String, Resolved>,
        bib: &Bibliography,
        cache: &mut SupportCache,
        found: Found<'_>,
        stop: &dyn Fn() -> bool,
    ) -> Result<bool> {
        let Found { per_citation, supports, notices } = found;
        let Some(scored_sentences) = score_sentences(rec, draft, resolved, cache, notices, stop)? else { return Ok(false) };
        // What a sentence offers its unknown keys: the same for each of them.
        let mut offered: HashMap<usize, Vec<Suggestion>> = HashMap::new();
        for (i, c) in draft.citations.iter().enumerate() {
            let Some((scored, cited)) = &scored_sentences[c.sentence] else { continue };
            let sentence = &draft.sentences[c.sentence];
            let r = &resolved[&c.key];
            if let Some(f) =
                per_citation[i].iter_mut().find(|f| f.kind == Kind::UnknownKey && f.suggestions.iter().all(|s| s.why != finding::RENAMED))
            {
                for offer in offered.entry(c.sentence).or_insert_with(|| self.offers(scored, "", cited, bib)).iter().cloned() {
                    // A near miss that also fits the sentence is said once, with its paper.
                    match f.suggestions.iter_mut().find(|s| s.key == offer.key || (!s.id.is_empty() && s.id == offer.id)) {
                        Some(s) => {
                            s.why = format!("{}, {}", s.why, offer.why);
                            (s.id, s.title, s.support, s.evidence) = (offer.id, offer.title, offer.support, offer.evidence);
                        }
                        None => f.suggestions.push(offer),
                    }
                }
                continue;
            }
            let Some(record) = &r.record else { continue };
            let Some(support) = scored.support(&record.id, cited) else { continue };
            supports[i] = Some(support);
            if support.weak {
                let mut f = rules::at(
                    c,
                    Kind::WeakSupport,
                    Severity::Warning,
                    format!(
                        "`{}` (“{}”) fits its sentence weakly (support {:.2}): “{}”",
                        rules::shown(&c.key),
                        record.title,
                        support.score,
                        plain_sentence(&sentence.text, &draft.grammar)
                    ),
                    "check that the paper says what the sentence claims; the papers below fit it better",
                );
                f.best_match = self.best_match(&record.id, &record.abstract_text, scored);
                f.suggestions = self.offers(scored, &record.id, cited, bib);
                per_citation[i].push(f);
            }
        }
        Ok(true)
    }

    /// The sentence's best papers (other than `id` and `cited`), with their
    /// support and what others cited them for.
    fn offers(&self, scored: &Scored, id: &str, cited: &[String], bib: &Bibliography) -> Vec<Suggestion> {
        let Some(library) = self.library else { return Vec::new() };
        let mut offers: Vec<Suggestion> = scored
            .alternatives(id, cited)
            .into_iter()
            .take(SUGGESTED)
            .filter_map(|alt| {
                let paper = library.papers().paper_by_id(alt).ok().flatten()?;
                let support = scored.support(alt, cited).map(|s| s.score);
                let evidence = library
                    .evidence()
                    .spans_citing(alt, &scored.span_terms, 2, &[])
                    .map(|spans| spans.into_iter().map(|s| s.text).collect())
                    .unwrap_or_default();
                let key = self.key_for(&paper, bib);
                Some(Suggestion { key, id: paper.id, title: paper.title, why: finding::FITS.into(), support, evidence })
            })
            .collect();
        offers.sort_by(|a, b| b.support.unwrap_or(0.0).total_cmp(&a.support.unwrap_or(0.0)));
        offers
    }

    /// What others cited paper `id` for that best matches the sentence,
    /// else its abstract's best-matching sentence.
    fn best_match(&self, id: &str, abstract_text: &str, scored: &Scored) -> Option<String> {
        let spans = self.library.map(|l| l.evidence().spans_citing(id, &scored.span_terms, 1, &[]).unwrap_or_default()).unwrap_or_default();
        if let Some(span) = spans.into_iter().next() {
            let sentence = span.sources.first().map(|s| s.sentence.clone()).unwrap_or_else(|| span.text.clone());
            return Some(format!("cited for: “{sentence}”"));
        }
        let mut analyzer = crate::index::analyzer::english();
        crate::pipeline::own_words::best_sentences(&mut analyzer, abstract_text, &scored.terms, 1)
            .into_iter()
            .next()
            .map(|s| format!("its abstract: “{s}”"))
    }
}

/// What the check could not read of the draft, each in one line that names
/// the file (and the line, or the limit).
fn draft_notices(file: &str, draft: &Draft) -> Vec<String> {
    let mut notices: Vec<String> = draft.unread.iter().map(|(line, why)| format!("{file}:{line}: {why}")).collect();
    if draft.unread_over > 0 {
        notices.push(format!("{file}: {} more citations whose keys are not read", draft.unread_over));
    }
    if draft.left_out > 0 {
        let max = crate::limits::CHECK_CITATIONS;
        notices.push(format!(
            "{file}: {} citations, over the limit of {max} checked in one draft; only the first {max} are checked",
            draft.total()
        ));
    }
    notices
}

/// Each citation's record findings: an unknown key (with its near misses),
/// a key the bibliography lacks though the library has it, a mismatched
/// entry (at the key's first citation), a retracted paper; and the
/// duplicates, at the first citation of the key to drop.
fn record_findings(
    checker: &Checker,
    draft: &Draft,
    resolved: &HashMap<String, Resolved>,
    near: &HashMap<String, Vec<Suggestion>>,
    bib: &Bibliography,
) -> Vec<Vec<Finding>> {
    let mut per_citation: Vec<Vec<Finding>> = vec![Vec::new(); draft.citations.len()];
    // The first citation of each key.
    let mut first_of: HashMap<&str, usize> = HashMap::new();
    let mut firsts = Vec::new();
    for (i, c) in draft.citations.iter().enumerate() {
        let r = &resolved[&c.key];
        let first = !first_of.contains_key(c.key.as_str());
        if first {
            first_of.insert(c.key.as_str(), i);
            firsts.push(c);
        }
        let near_misses = near.get(&c.key).map_or(&[][..], Vec::as_slice);
        per_citation[i].extend(rules::unknown_key(c, r, bib, checker.library.is_some(), near_misses));
        per_citation[i].extend(checker.not_in_bibliography(c, r, bib));
        if first {
            per_citation[i].extend(rules::mismatch(c, r, bib));
        }
        per_citation[i].extend(rules::retracted(c, r));
    }
    for f in rules::duplicates(&firsts, resolved) {
        if let Some(&i) = first_of.get(f.key.as_str()) {
            per_citation[i].push(f);
        }
    }
    per_citation
}

/// Each sentence's scores (from `cache` when it is unchanged, else scored
/// and kept there) with its cited papers that bear on them; none when
/// `stop` stopped it.
#[allow(clippy::type_complexity)]
fn score_sentences(
    rec: &Recommender,
    draft: &Draft,
    resolved: &HashMap<String, Resolved>,
    cache: &mut SupportCache,
    notices: &mut Vec<String>,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Vec<Option<(Arc<Scored>, Vec<String>)>>>> {
    let scorer = crate::check::calibration::scorer(rec);
    let id_of = |key: &str| resolved.get(key).and_then(|r| r.record.as_ref()).map(|p| p.id.clone());
    let mut wanted = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(draft.sentences.len());
    for s in &draft.sentences {
        let ids: Vec<String> = s.keys.iter().filter_map(|k| id_of(k)).collect();
        let cache_key = (s.text.clone(), ids);
        let scored = match cache.scored.get(&cache_key) {
            Some(hit) => Some(hit.clone()),
            None if stop() => return Ok(None),
            None => match scorer.score(Query::new(s.text.clone()).with_grammar(draft.grammar.clone()), &cache_key.1) {
                Ok(mut scored) => {
                    // A check reads the alternatives, never the fused list: not kept for each sentence.
                    scored.fused = Vec::new();
                    let scored = Arc::new(scored);
                    cache.scored.insert(cache_key.clone(), scored.clone());
                    Some(scored)
                }
                // A sentence with no words to match (a citation alone on its line).
                Err(crate::error::Error::InvalidQuery(why)) => {
                    notices.push(format!("a sentence was not scored: {why}"));
                    None
                }
                Err(e) => return Err(e),
            },
        };
        out.push(scored.map(|scored| {
            let cited = cited_near(&scored, &cache_key.1);
            (scored, cited)
        }));
        wanted.insert(cache_key);
    }
    cache.keep_only(&wanted);
    Ok(Some(out))
}

/// The papers of `cited` that can be among `scored`'s alternatives (the
/// best papers and their works' records): what a paper's support and the
/// offers are scored beside, the same as with every cited paper, whatever
/// the number of keys of the sentence.
fn cited_near(scored: &Scored, cited: &[String]) -> Vec<String> {
    cited.iter().filter(|id| scored.top.contains(id) || scored.works.values().any(|records| records.contains(id))).cloned().collect()
}

/// The bibliography files that do not exist: a finding where the draft
/// names each (LaTeX finds none of the draft's citations there), and a
/// notice for one it does not name (the default beside it, one given).
fn missing_bibliographies(file: &str, text: &str, syntax: CiteSyntax, bib: &Bibliography) -> (Vec<Finding>, Vec<String>) {
    let mut findings = Vec::new();
    let mut notices = Vec::new();
    let mut names = None;
    for f in bib.missing() {
        let names = names.get_or_insert_with(|| crate::corpus::bibliography_names::bibliography_names(text, syntax));
        match names.iter().find(|n| n.file == f.name) {
            Some(n) => findings.push(missing_file(text, n, f)),
            None => notices.push(format!(
                "{file}: no bibliography: {} does not exist, so LaTeX finds none of the draft's citations",
                f.path.display()
            )),
        }
    }
    (findings, notices)
}

/// A bibliography file the draft names (`n`) that does not exist.
fn missing_file(text: &str, n: &crate::corpus::bibliography_names::BibliographyName, f: &BibFile) -> Finding {
    let before = &text[..n.range.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |i| i + 1)..].chars().count() + 1;
    Finding {
        kind: Kind::MissingBibliography,
        severity: Severity::Error,
        key: n.written.clone(),
        line,
        column,
        range: n.range.clone(),
        message: format!("`{}` does not exist ({}): LaTeX will find none of the draft's citations in it", f.name, f.path.display()),
        fix: "create it (adding an entry from the library does), or name the file that holds the draft's entries".into(),
        suggestions: Vec::new(),
        library_title: None,
        keep: None,
        best_match: None,
    }
}

/// A sentence as a reader says it: citation markup (read with `grammar`)
/// removed, and no space left before the punctuation that followed it.
fn plain_sentence(text: &str, grammar: &CiteGrammar) -> String {
    let plain = crate::corpus::citation_markup::strip_citations(text, grammar);
    [".", ",", ";", ":", "?", "!", ")"].iter().fold(plain, |s, p| s.replace(&format!(" {p}"), p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::paper::ZoteroOrigin;

    /// A key the library renamed is the checker's finding (with or without
    /// near misses): what the language server's quick fix and the editor's
    /// rewrite read ([`Report::renamed_keys`]), each key once, in the
    /// draft's order.
    #[test]
    fn keys_the_library_renamed_are_found_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::open_or_create(dir.path()).unwrap();
        let mut w = lib.papers().writer().unwrap();
        for (key, former) in [("new2001", "old2001"), ("new1999", "old1999"), ("kept", "")] {
            let zotero = (!former.is_empty()).then(|| ZoteroOrigin { former_keys: vec![former.into()], ..ZoteroOrigin::default() });
            let title = format!("A paper of its own, keyed {key}");
            w.upsert(&Paper { id: format!("z:{key}"), key: key.into(), title, zotero, ..Paper::default() }).unwrap();
        }
        w.finish().unwrap();
        lib.papers().reload().unwrap();
        let text = "As \\cite{old1999} and \\citep{kept, old2001, typo2001} show; again \\cite{old1999}.";
        let bib = Bibliography::parse("@article{kept, title = {A paper of its own, keyed kept}}");
        for checker in [Checker::new(&lib), Checker::new(&lib).without_near_misses()] {
            let report = checker.check("draft.tex", text, &CiteGrammar::of(CiteSyntax::Latex), &bib, &mut SupportCache::default()).unwrap();
            assert_eq!(report.renamed_keys(), [("old1999".to_string(), "new1999".to_string()), ("old2001".into(), "new2001".into())]);
            let typo = report.findings.iter().find(|f| f.key == "typo2001").unwrap();
            assert_eq!((typo.kind, typo.renamed_to()), (Kind::UnknownKey, None));
        }
    }

    /// A wrapper command the configuration names is a citation to a check
    /// given that grammar, and to no other check in the process (once a
    /// process-wide list: whoever loaded a configuration set it for all).
    #[test]
    fn a_configured_wrapper_is_a_citation_only_where_it_is_configured() {
        let text = "Taggers are fast \\refp{brants2000}, parsers slow \\cite{collins03}.";
        let bib = Bibliography::parse("@article{collins03, title = {Parsing}}");
        let keys = |grammar: &CiteGrammar| {
            let report = Checker::without_library().check("draft.tex", text, grammar, &bib, &mut SupportCache::default()).unwrap();
            report.citations.into_iter().map(|c| c.key).collect::<Vec<_>>()
        };
        let configured = CiteGrammar::of(CiteSyntax::Latex).with_wrappers(["refp"]);
        assert_eq!(keys(&configured), ["brants2000", "collins03"]);
        assert_eq!(keys(&CiteGrammar::of(CiteSyntax::Latex)), ["collins03"], "a check without the configuration");
        assert_eq!(keys(&configured), ["brants2000", "collins03"], "the other check changed nothing");
        let unknown = |grammar: &CiteGrammar| {
            let report = Checker::without_library().check("draft.tex", text, grammar, &bib, &mut SupportCache::default()).unwrap();
            report.findings.iter().any(|f| f.key == "brants2000" && f.kind == Kind::UnknownKey)
        };
        assert!(unknown(&configured), "the wrapper's key is checked against the bibliography");
        assert!(!unknown(&CiteGrammar::of(CiteSyntax::Latex)));
    }
}

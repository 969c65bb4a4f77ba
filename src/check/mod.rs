//! Checking what a draft cites, against its bibliography, the library and
//! the evidence: keys neither knows (with near-misses and the papers that
//! fit the sentence), entries whose DOI names another paper, one work under
//! two keys (or a preprint beside its published version), retracted papers,
//! and citations whose support score (in [0, 1], over every signal the
//! pipeline has) is under the threshold: the paper fits its sentence
//! clearly worse than the papers that fit it best.
//!
//! `check` sits above `pipeline` (it asks the recommender's stages for the
//! signals) and below the front ends: `citewise check`, the language
//! server's diagnostics and the editor's check view read the same
//! [`Report`].

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
pub use records::{Bibliography, Resolved};
pub use support::{Scored, Scorer, Support};

use crate::corpus::citation_markup::CiteSyntax;
use crate::error::Result;
use crate::library::Library;
use crate::pipeline::{Query, Recommender};

/// Library keys read for near-misses, at most.
pub const KEYS_READ: usize = 2_000_000;

/// The papers offered for an unknown key or beside a weak citation.
pub const SUGGESTED: usize = 3;

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

/// Checks drafts against a library (and, with a recommender, scores each
/// citation's support).
pub struct Checker<'a> {
    library: &'a Library,
    recommender: Option<&'a Recommender>,
    /// The library's keys, when the caller keeps them (else read when a
    /// key is unknown).
    known_keys: Option<Arc<Vec<String>>>,
}

impl<'a> Checker<'a> {
    /// Record checks only (unknown keys, mismatches, duplicates, retractions).
    pub fn new(library: &'a Library) -> Checker<'a> {
        Checker { library, recommender: None, known_keys: None }
    }

    /// Near-misses are looked for among `keys` (the library's, as the
    /// caller last read them with [`crate::index::paper_index::PaperIndex::keys`]).
    pub fn with_known_keys(mut self, keys: Arc<Vec<String>>) -> Checker<'a> {
        self.known_keys = Some(keys);
        self
    }

    /// Record checks, support scores and suggestions from `rec`'s stages.
    pub fn with_support(rec: &'a Recommender) -> Checker<'a> {
        Checker { library: rec.library(), recommender: Some(rec), known_keys: None }
    }

    /// Checks `text` (written in `syntax`) against `bib` and the library;
    /// `cache` keeps the sentences scored for the next check of the draft.
    pub fn check(&self, file: &str, text: &str, syntax: CiteSyntax, bib: &Bibliography, cache: &mut SupportCache) -> Result<Report> {
        self.check_until(file, text, syntax, bib, cache, &|| false)?
            .ok_or_else(|| crate::error::Error::Input("a check that never stops stopped".into()))
    }

    /// [`Checker::check`], stopping between sentences when `stop` says so
    /// (none: stopped; the sentences scored so far stay in `cache`).
    pub fn check_until(
        &self,
        file: &str,
        text: &str,
        syntax: CiteSyntax,
        bib: &Bibliography,
        cache: &mut SupportCache,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Report>> {
        let draft = Draft::read(text, syntax);
        let papers = self.library.papers();
        let mut resolved: HashMap<String, Resolved> = HashMap::new();
        for key in draft.keys() {
            resolved.insert(key.to_string(), Resolved::of(key, bib, papers)?);
        }
        let any_unknown = resolved.values().any(Resolved::unknown);
        let read_keys: Arc<Vec<String>> = match (&self.known_keys, any_unknown) {
            (_, false) => Arc::default(),
            (Some(keys), true) => keys.clone(),
            (None, true) => Arc::new(papers.keys(KEYS_READ)?),
        };
        let mut known: Vec<&str> = read_keys.iter().map(String::as_str).collect();
        known.extend(bib.declared.iter().map(String::as_str));
        known.extend(bib.papers.iter().map(|p| p.key.as_str()));
        let bib_name = bib.name();

        let mut per_citation: Vec<Vec<Finding>> = vec![Vec::new(); draft.citations.len()];
        let mut first_seen = std::collections::HashSet::new();
        let mut firsts = Vec::new();
        for (i, c) in draft.citations.iter().enumerate() {
            let r = &resolved[&c.key];
            let first = first_seen.insert(c.key.clone());
            if first {
                firsts.push(c);
            }
            let mut unknown = rules::unknown_key(c, r, &bib_name, &known);
            // A key read from the index may belong to a paper since removed.
            if let Some(f) = &mut unknown {
                f.suggestions
                    .retain(|s| s.why == finding::RENAMED || bib.declares(&s.key) || papers.paper_by_key(&s.key).ok().flatten().is_some());
            }
            per_citation[i].extend(unknown);
            if first {
                per_citation[i].extend(rules::mismatch(c, r, &bib_name));
            }
            per_citation[i].extend(rules::retracted(c, r));
        }
        for f in rules::duplicates(&firsts, &resolved) {
            if let Some(i) = draft.citations.iter().position(|c| c.range == f.range) {
                per_citation[i].push(f);
            }
        }

        let mut supports: Vec<Option<Support>> = vec![None; draft.citations.len()];
        let mut notices = Vec::new();
        match self.recommender {
            Some(rec) => {
                if !self.score_support(rec, &draft, &resolved, cache, &mut per_citation, &mut supports, &mut notices, stop)? {
                    return Ok(None);
                }
            }
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
        findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.range.start.cmp(&b.range.start)));
        Ok(Some(Report { file: file.to_string(), citations, findings, notices }))
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
        cache: &mut SupportCache,
        per_citation: &mut [Vec<Finding>],
        supports: &mut [Option<Support>],
        notices: &mut Vec<String>,
        stop: &dyn Fn() -> bool,
    ) -> Result<bool> {
        let scorer = Scorer::new(rec);
        let id_of = |key: &str| resolved.get(key).and_then(|r| r.record.as_ref()).map(|p| p.id.clone());
        let mut wanted = std::collections::HashSet::new();
        let mut scored_sentences: Vec<Option<Arc<Scored>>> = Vec::with_capacity(draft.sentences.len());
        for s in &draft.sentences {
            let ids: Vec<String> = s.keys.iter().filter_map(|k| id_of(k)).collect();
            let cache_key = (s.text.clone(), ids.clone());
            wanted.insert(cache_key.clone());
            let scored = match cache.scored.get(&cache_key) {
                Some(hit) => Some(hit.clone()),
                None if stop() => return Ok(false),
                None => match scorer.score(Query::new(s.text.clone()), &ids) {
                    Ok(scored) => {
                        let scored = Arc::new(scored);
                        cache.scored.insert(cache_key, scored.clone());
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
            scored_sentences.push(scored);
        }
        cache.keep_only(&wanted);
        for (i, c) in draft.citations.iter().enumerate() {
            let Some(scored) = &scored_sentences[c.sentence] else { continue };
            let sentence = &draft.sentences[c.sentence];
            let cited: Vec<String> = sentence.keys.iter().filter_map(|k| id_of(k)).collect();
            let r = &resolved[&c.key];
            if let Some(f) =
                per_citation[i].iter_mut().find(|f| f.kind == Kind::UnknownKey && f.suggestions.iter().all(|s| s.why != finding::RENAMED))
            {
                for offer in self.offers(scored, "", &cited) {
                    // A near miss that also fits the sentence is said once, with its paper.
                    match f.suggestions.iter_mut().find(|s| s.key == offer.key) {
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
            let Some(support) = scored.support(&record.id, &cited) else { continue };
            supports[i] = Some(support);
            if support.weak {
                let mut f = rules::at(
                    c,
                    Kind::WeakSupport,
                    Severity::Warning,
                    format!(
                        "`{}` (“{}”) fits its sentence weakly (support {:.2}): “{}”",
                        c.key,
                        record.title,
                        support.score,
                        plain_sentence(&sentence.text)
                    ),
                    "check that the paper says what the sentence claims; the papers below fit it better",
                );
                f.best_match = self.best_match(&record.id, &record.abstract_text, scored);
                f.suggestions = self.offers(scored, &record.id, &cited);
                per_citation[i].push(f);
            }
        }
        Ok(true)
    }

    /// The sentence's best papers (other than `id` and `cited`), with their
    /// support and what others cited them for.
    fn offers(&self, scored: &Scored, id: &str, cited: &[String]) -> Vec<Suggestion> {
        let mut offers: Vec<Suggestion> = scored
            .alternatives(id, cited)
            .into_iter()
            .take(SUGGESTED)
            .filter_map(|alt| {
                let paper = self.library.papers().paper_by_id(alt).ok().flatten()?;
                let support = scored.support(alt, cited).map(|s| s.score);
                let evidence = self
                    .library
                    .evidence()
                    .spans_citing(alt, &scored.span_terms, 2, &[])
                    .map(|spans| spans.into_iter().map(|s| s.text).collect())
                    .unwrap_or_default();
                Some(Suggestion { key: paper.key, id: paper.id, title: paper.title, why: finding::FITS.into(), support, evidence })
            })
            .collect();
        offers.sort_by(|a, b| b.support.unwrap_or(0.0).total_cmp(&a.support.unwrap_or(0.0)));
        offers
    }

    /// What others cited paper `id` for that best matches the sentence,
    /// else its abstract's best-matching sentence.
    fn best_match(&self, id: &str, abstract_text: &str, scored: &Scored) -> Option<String> {
        let spans = self.library.evidence().spans_citing(id, &scored.span_terms, 1, &[]).unwrap_or_default();
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

/// A sentence as a reader says it: citation markup removed, and no space
/// left before the punctuation that followed it.
fn plain_sentence(text: &str) -> String {
    let plain = crate::corpus::citation_markup::strip_citations(text);
    [".", ",", ";", ":", "?", "!", ")"].iter().fold(plain, |s, p| s.replace(&format!(" {p}"), p))
}

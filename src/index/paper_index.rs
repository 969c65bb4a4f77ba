//! The BM25 paper index: upserts at import time, ranked retrieval at query time.

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::columnar::StrColumn;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

use super::analyzer::{self, EN};
use super::health::{self, IndexKind};
use super::identity;
use super::schema::PaperFields;
use crate::corpus::Paper;
use crate::error::{Error, Result};

pub use super::analyzer::MAX_QUERY_TERMS;

/// How much a term that occurs `n` times in the query weighs against one
/// that occurs once. The BM25 formula (as Lucene and bm25s compute it) sums
/// over the query's words, so a repeated word counts `n` times; on the
/// benchmark a sublinear count ranks better for sentences and paragraphs
/// alike (see CHANGELOG).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryTf {
    /// Each distinct term once.
    Once,
    /// √n (the default).
    #[default]
    Sqrt,
    /// n, as the formula reads (Lucene, bm25s).
    Linear,
}

impl QueryTf {
    /// The weight of a term found `n` times in the query.
    pub fn weight(self, n: u32) -> f32 {
        match self {
            QueryTf::Once => 1.0,
            QueryTf::Sqrt => (n as f32).sqrt(),
            QueryTf::Linear => n as f32,
        }
    }
}

/// A scored hit of the paper index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: DocAddress,
    pub score: f32,
}

/// The tantivy index of the library's papers.
pub struct PaperIndex {
    /// Where the index lives (named by errors about its records).
    dir: std::path::PathBuf,
    index: Index,
    reader: IndexReader,
    fields: PaperFields,
    analyzer: TextAnalyzer,
}

/// Papers a segment grows to at most by merging, so that a large library
/// has several segments to search side by side.
pub const MAX_SEGMENT_DOCS: u32 = 200_000;

/// In a library of [`PRUNE_FROM`] papers or more, a query term in more
/// than this share of the papers is left out of the search when at least
/// [`MIN_RARE_TERMS`] others are not (on 1M papers BM25 p50 21 → 13 ms; in
/// finding a paper from a sentence of its abstract on 1M papers, R@10 0.985
/// → 0.982; on the 120k benchmark pool, where it is not needed, `test` and
/// `val` recall was the same with it).
pub const COMMON_SHARE: f64 = 0.2;

/// Rarer terms a query needs for its common ones to be left out.
pub const MIN_RARE_TERMS: usize = 4;

/// Libraries smaller than this search every query term (BM25 takes a few
/// milliseconds there, and in a small library a fifth of the papers is a
/// handful).
pub const PRUNE_FROM: u64 = 200_000;

/// `terms` without those that more than [`COMMON_SHARE`] of the `papers`
/// hold (`df`: a term's document frequency), when the library is large and
/// enough rarer terms remain.
fn without_common_terms(mut terms: Vec<(String, u32)>, papers: u64, df: impl Fn(&str) -> u64) -> Vec<(String, u32)> {
    if papers < PRUNE_FROM {
        return terms;
    }
    let common = |t: &str| df(t) as f64 > COMMON_SHARE * papers as f64;
    if terms.iter().filter(|(t, _)| !common(t)).count() >= MIN_RARE_TERMS {
        terms.retain(|(t, _)| !common(t));
    }
    terms
}

/// The text BM25 ranks a paper by: its title, abstract and keywords.
fn indexed_text(paper: &Paper) -> String {
    format!("{}\n{}\n{}", paper.title, paper.abstract_text, paper.keywords.join(", "))
}

/// Threads a search uses (one per segment at a time).
fn search_threads() -> usize {
    crate::util::cores().clamp(1, 4)
}

/// Merges small segments (fewer than half of [`MAX_SEGMENT_DOCS`] papers),
/// smallest first, three or more at a time, into segments of at most
/// [`MAX_SEGMENT_DOCS`]: searches of a small library see few segments, and
/// a large library's are of a size to be searched in parallel.
#[derive(Debug, Clone, Copy)]
struct BoundedMerges;

/// Segments merged at once, at least.
const MIN_MERGE: usize = 3;

impl tantivy::indexer::MergePolicy for BoundedMerges {
    fn compute_merge_candidates(&self, segments: &[tantivy::SegmentMeta]) -> Vec<tantivy::indexer::MergeCandidate> {
        let mut small: Vec<&tantivy::SegmentMeta> = segments.iter().filter(|s| s.num_docs() < MAX_SEGMENT_DOCS / 2).collect();
        small.sort_by_key(|s| s.num_docs());
        let mut out = Vec::new();
        let mut group: Vec<tantivy::index::SegmentId> = Vec::new();
        let mut docs = 0u32;
        for s in small {
            if docs + s.num_docs() > MAX_SEGMENT_DOCS {
                if group.len() >= MIN_MERGE {
                    out.push(tantivy::indexer::MergeCandidate(std::mem::take(&mut group)));
                }
                group.clear();
                docs = 0;
            }
            group.push(s.id());
            docs += s.num_docs();
        }
        if group.len() >= MIN_MERGE {
            out.push(tantivy::indexer::MergeCandidate(group));
        }
        out
    }
}

impl PaperIndex {
    /// Opens the index in `dir`, creating an empty one when `dir` holds none.
    /// An index that does not open is [`Error::Corrupt`], with the repair.
    pub fn open_or_create(dir: &Path) -> Result<PaperIndex> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let damaged = |e: tantivy::TantivyError| health::damaged(IndexKind::Papers, dir, &e);
        let index = if dir.join("meta.json").exists() {
            Index::open_in_dir(dir).map_err(damaged)?
        } else {
            let (schema, _) = PaperFields::build();
            let index = Index::create_in_dir(dir, schema)?;
            identity::renew(dir)?;
            index
        };
        identity::ensure(dir);
        Self::from_index(dir, index).map_err(|e| match e {
            Error::Index(e) => damaged(e),
            e => e,
        })
    }

    fn from_index(dir: &Path, mut index: Index) -> Result<PaperIndex> {
        index.tokenizers().register(EN, analyzer::english());
        // Segments are searched side by side (a large library's segments are
        // kept at most `MAX_SEGMENT_DOCS`, see `BoundedMerges`).
        index.set_multithread_executor(search_threads())?;
        let fields = PaperFields::from_schema(&index.schema())?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(PaperIndex { dir: dir.to_path_buf(), index, reader, fields, analyzer: analyzer::english() })
    }

    /// The identity of the index in `dir` (none: no index there, or one
    /// written before indexes had one). A new index gets a new identity, so
    /// a journal can tell an index that was deleted and created again.
    pub fn identity_in(dir: &Path) -> Option<String> {
        identity::of(dir)
    }

    /// This index's identity (see [`PaperIndex::identity_in`]).
    pub fn identity(&self) -> String {
        Self::identity_in(&self.dir).unwrap_or_default()
    }

    /// A writer for upserts; at most one may exist at a time per index
    /// (another is [`Error::Busy`]).
    pub fn writer(&self) -> Result<PaperWriter> {
        let threads = crate::util::cores().clamp(1, 4);
        let writer = self.index.writer_with_num_threads(threads, 96_000_000 * threads).map_err(|e| health::writer_error(&self.dir, e))?;
        writer.set_merge_policy(Box::new(BoundedMerges));
        Ok(PaperWriter { writer, fields: self.fields })
    }

    /// Makes the latest commit visible to searches.
    pub fn reload(&self) -> Result<()> {
        Ok(self.reader.reload()?)
    }

    pub fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    /// Number of live papers.
    pub fn num_papers(&self) -> u64 {
        self.searcher().num_docs()
    }

    /// The analyzed terms of a query text, duplicates collapsed, at most
    /// [`MAX_QUERY_TERMS`] distinct terms in first-seen order.
    pub fn query_terms(&self, text: &str) -> Vec<String> {
        analyzer::distinct_terms(&self.analyzer, text)
    }

    /// BM25's idf of a term over the library's papers.
    pub fn idf(&self, searcher: &Searcher, term: &str) -> f32 {
        analyzer::bm25_idf(searcher.num_docs() as f32, self.doc_freq(searcher, term) as f32)
    }

    /// BM25 (k1 = 1.2, b = 0.75) over title + abstract + keywords; top `k`;
    /// a term the query repeats weighs [`QueryTf::default`]; terms most
    /// papers hold are left out of long queries ([`COMMON_SHARE`]).
    pub fn search(&self, text: &str, k: usize) -> Result<Vec<Hit>> {
        self.search_with(text, k, QueryTf::default())
    }

    /// [`PaperIndex::search`] with a term the query repeats weighing `tf`
    /// (its clause is boosted, which keeps tantivy's block-max pruning).
    pub fn search_with(&self, text: &str, k: usize, tf: QueryTf) -> Result<Vec<Hit>> {
        self.search_up_to(text, k, tf, None)
    }

    /// [`PaperIndex::search_with`] among the papers published by `year`
    /// (and those whose year is unknown) when it is given; the year filter
    /// adds nothing to the scores.
    pub fn search_up_to(&self, text: &str, k: usize, tf: QueryTf, year: Option<i32>) -> Result<Vec<Hit>> {
        self.search_terms(&self.weighted_terms(text, tf), k, year, 0.0)
    }

    /// The analysed terms of a query text, each weighing `tf` of how often
    /// the text repeats it, without the terms most papers hold when the
    /// library is large and the query long ([`COMMON_SHARE`]).
    pub fn weighted_terms(&self, text: &str, tf: QueryTf) -> Vec<(String, f32)> {
        let terms = analyzer::counted_terms(&self.analyzer, text);
        let searcher = self.searcher();
        without_common_terms(terms, searcher.num_docs(), |t| self.doc_freq(&searcher, t))
            .into_iter()
            .map(|(t, n)| (t, tf.weight(n)))
            .collect()
    }

    /// BM25 of weighted terms (each term's clause boosted by its weight,
    /// which keeps tantivy's block-max pruning) over title + abstract +
    /// keywords, plus `title_weight` times their BM25 over the title alone;
    /// among the papers published by `year` (and those whose year is
    /// unknown) when it is given (the year filter adds nothing to the
    /// scores).
    pub fn search_terms(&self, terms: &[(String, f32)], k: usize, year: Option<i32>, title_weight: f32) -> Result<Vec<Hit>> {
        if terms.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let searcher = self.searcher();
        let clause = |field, t: &str, w: f32| {
            let q = Box::new(TermQuery::new(Term::from_field_text(field, t), IndexRecordOption::WithFreqs));
            let q: Box<dyn Query> = if w == 1.0 { q } else { Box::new(BoostQuery::new(q, w)) };
            (Occur::Should, q)
        };
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = terms.iter().map(|(t, w)| clause(self.fields.text, t, *w)).collect();
        if title_weight > 0.0 {
            clauses.extend(terms.iter().map(|(t, w)| clause(self.fields.title, t, w * title_weight)));
        }
        let words = BooleanQuery::new(clauses);
        let top = match year {
            None => searcher.search(&words, &TopDocs::with_limit(k).order_by_score())?,
            Some(y) => {
                let year = |y: u64| Term::from_field_u64(self.fields.year, y);
                let published = RangeQuery::new(Bound::Included(year(0)), Bound::Included(year(y.max(0) as u64)));
                let query = BooleanQuery::new(vec![
                    (Occur::Must, Box::new(words) as Box<dyn Query>),
                    (Occur::Must, Box::new(BoostQuery::new(Box::new(published), 0.0))),
                ]);
                searcher.search(&query, &TopDocs::with_limit(k).order_by_score())?
            }
        };
        Ok(top.into_iter().map(|(score, doc)| Hit { doc, score }).collect())
    }

    /// The analysed terms of a paper's indexed text (title, abstract,
    /// keywords) with how often each occurs, read from its stored record.
    pub fn indexed_terms(&self, searcher: &Searcher, doc: DocAddress) -> Result<Vec<(String, u32)>> {
        Ok(analyzer::counted_terms(&self.analyzer, &indexed_text(&self.paper(searcher, doc)?)))
    }

    /// How many of the library's papers hold `term` in their indexed text.
    pub fn doc_freq(&self, searcher: &Searcher, term: &str) -> u64 {
        searcher.doc_freq(&Term::from_field_text(self.fields.text, term)).unwrap_or(0)
    }

    /// The stored record of a hit.
    pub fn paper(&self, searcher: &Searcher, doc: DocAddress) -> Result<Paper> {
        let stored: TantivyDocument = searcher.doc(doc)?;
        let json = stored.get_first(self.fields.record).and_then(|v| v.as_str()).unwrap_or("{}");
        serde_json::from_str(json).map_err(|e| Error::corrupt(&self.dir, format!("paper record of {doc:?}: {e}")))
    }

    /// Looks a paper up by id.
    pub fn paper_by_id(&self, id: &str) -> Result<Option<Paper>> {
        let searcher = self.searcher();
        let q = TermQuery::new(Term::from_field_text(self.fields.id, id), IndexRecordOption::Basic);
        let top = searcher.search(&q, &TopDocs::with_limit(1).order_by_score())?;
        top.first().map(|(_, doc)| self.paper(&searcher, *doc)).transpose()
    }

    /// The publication year of each paper (`None` where the paper is not in
    /// the library or its year is unknown), read from the year column
    /// without loading the records.
    pub fn years(&self, ids: &[&str]) -> Result<Vec<Option<i32>>> {
        use tantivy::{DocSet, TERMINATED};
        let searcher = self.searcher();
        let mut out: Vec<Option<i32>> = vec![None; ids.len()];
        let mut found = vec![false; ids.len()];
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(self.fields.id)?;
            let years = segment.fast_fields().u64("year")?;
            let alive = segment.alive_bitset();
            for (i, id) in ids.iter().enumerate() {
                if found[i] {
                    continue;
                }
                let term = Term::from_field_text(self.fields.id, id);
                let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic).map_err(tantivy::TantivyError::from)?
                else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        found[i] = true;
                        out[i] = years.first(doc).filter(|&y| y > 0).map(|y| y.min(i32::MAX as u64) as i32);
                        break;
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(out)
    }

    /// The id of the paper with an external identifier (`doi:..`, `arxiv:..`).
    pub fn find_by_external_id(&self, ext: &str) -> Result<Option<String>> {
        let searcher = self.searcher();
        let q = TermQuery::new(Term::from_field_text(self.fields.ext, ext), IndexRecordOption::Basic);
        let top = searcher.search(&q, &TopDocs::with_limit(1).order_by_score())?;
        Ok(self.ids(&searcher, top.into_iter().map(|(_, d)| d))?.into_iter().next())
    }

    /// The paper whose citation key is `key`: a record that has it (as
    /// recorded since keys were indexed), else the one whose id it makes
    /// (`bib:<key>`) if that record still has that key.
    pub fn paper_by_key(&self, key: &str) -> Result<Option<Paper>> {
        if let Some(id) = self.find_by_external_id(&format!("key:{key}"))? {
            return self.paper_by_id(&id);
        }
        // A record keeps its id when its key changes: the id is no key then.
        Ok(self.paper_by_id(&Paper::bibtex_id("", key))?.filter(|p| p.key == key))
    }

    /// The paper that had citation key `key` before its current one.
    pub fn paper_by_former_key(&self, key: &str) -> Result<Option<Paper>> {
        match self.find_by_external_id(&format!("formerkey:{key}"))? {
            Some(id) => self.paper_by_id(&id),
            None => Ok(None),
        }
    }

    /// What the library says of a cited key: a paper's key, the key a
    /// paper had before (with its key now), or neither.
    pub fn key_status(&self, key: &str) -> Result<KeyStatus> {
        if self.paper_by_key(key)?.is_some() {
            return Ok(KeyStatus::Known);
        }
        Ok(match self.paper_by_former_key(key)? {
            Some(p) if !p.key.is_empty() => KeyStatus::Renamed(p.key),
            _ => KeyStatus::Unknown,
        })
    }

    /// The paper whose DOI is `doi` (any case, with or without a resolver
    /// prefix).
    pub fn paper_by_doi(&self, doi: &str) -> Result<Option<Paper>> {
        let doi = crate::corpus::paper::normalize_doi(doi);
        if doi.is_empty() {
            return Ok(None);
        }
        match self.find_by_external_id(&format!("doi:{doi}"))? {
            Some(id) => self.paper_by_id(&id),
            None => Ok(None),
        }
    }

    /// Every citation key the library's papers carry (at most `limit`; a
    /// key whose paper was removed since the last merge may linger: look it
    /// up before offering it).
    pub fn keys(&self, limit: usize) -> Result<Vec<String>> {
        let searcher = self.searcher();
        let mut out = Vec::new();
        for seg in searcher.segment_readers() {
            let inverted = seg.inverted_index(self.fields.ext)?;
            let mut stream =
                inverted.terms().range().ge("key:".as_bytes()).lt("key;".as_bytes()).into_stream().map_err(tantivy::TantivyError::from)?;
            while stream.advance() {
                if let Some(key) = std::str::from_utf8(stream.key()).ok().and_then(|k| k.strip_prefix("key:")) {
                    out.push(key.to_string());
                }
                if out.len() >= limit {
                    break;
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// BM25 over titles alone: the records of the top `k`.
    pub fn title_candidates(&self, text: &str, k: usize) -> Result<Vec<Paper>> {
        let terms = self.query_terms(text);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                (
                    Occur::Should,
                    Box::new(TermQuery::new(Term::from_field_text(self.fields.title, t), IndexRecordOption::WithFreqs)) as Box<dyn Query>,
                )
            })
            .collect();
        let searcher = self.searcher();
        let top = searcher.search(&BooleanQuery::new(clauses), &TopDocs::with_limit(k).order_by_score())?;
        top.into_iter().map(|(_, d)| self.paper(&searcher, d)).collect()
    }

    /// Resolves ids of hits through the `id` fast field (no document store reads).
    pub fn ids(&self, searcher: &Searcher, docs: impl IntoIterator<Item = DocAddress>) -> Result<Vec<String>> {
        let mut columns: HashMap<u32, Option<StrColumn>> = HashMap::new();
        let mut out = Vec::new();
        let mut buf = String::new();
        for doc in docs {
            let col = match columns.entry(doc.segment_ord) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(searcher.segment_reader(doc.segment_ord).fast_fields().str("id")?),
            };
            buf.clear();
            if let Some(col) = col {
                if let Some(ord) = col.term_ords(doc.doc_id).next() {
                    col.ord_to_str(ord, &mut buf).map_err(tantivy::TantivyError::from)?;
                }
            }
            out.push(buf.clone());
        }
        Ok(out)
    }

    /// Calls `f` with every stored paper (segment by segment).
    pub fn for_each_paper(&self, f: &mut dyn FnMut(Paper) -> Result<()>) -> Result<()> {
        let searcher = self.searcher();
        for (ord, seg) in searcher.segment_readers().iter().enumerate() {
            for d in seg.doc_ids_alive() {
                f(self.paper(&searcher, DocAddress::new(ord as u32, d))?)?;
            }
        }
        Ok(())
    }

    /// Every live id (used at import to tell new records from updates).
    pub fn all_ids(&self) -> Result<HashSet<String>> {
        let searcher = self.searcher();
        let mut out = HashSet::with_capacity(searcher.num_docs() as usize);
        for (ord, seg) in searcher.segment_readers().iter().enumerate() {
            let docs = seg.doc_ids_alive().map(|d| DocAddress::new(ord as u32, d));
            out.extend(self.ids(&searcher, docs)?);
        }
        Ok(out)
    }
}

/// What the library says of a cited key ([`PaperIndex::key_status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyStatus {
    Known,
    /// Its paper has this key now.
    Renamed(String),
    Unknown,
}

/// `doi:<doi>` and `arxiv:<id>` identifiers of a paper, its citation key
/// (`key:<key>`) and the keys it had before (`formerkey:<key>`).
fn external_ids(paper: &Paper) -> Vec<String> {
    let mut out = Vec::new();
    if !paper.key.is_empty() {
        out.push(format!("key:{}", paper.key));
    }
    for old in paper.zotero.iter().flat_map(|z| &z.former_keys) {
        out.push(format!("formerkey:{old}"));
    }
    if !paper.doi.is_empty() {
        out.push(format!("doi:{}", paper.doi));
    }
    for s in [&paper.doi, &paper.url] {
        if let Some(a) = crate::corpus::paper::arxiv_id_of(s) {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    out
}

/// Upserts papers; changes become visible after [`PaperWriter::commit`] and
/// [`PaperIndex::reload`].
pub struct PaperWriter {
    writer: IndexWriter,
    fields: PaperFields,
}

impl PaperWriter {
    /// Replaces any record with the same id (and, for a BibTeX entry with a
    /// DOI, the record its key had before it had a DOI).
    pub fn upsert(&mut self, paper: &Paper) -> Result<()> {
        let f = self.fields;
        self.writer.delete_term(Term::from_field_text(f.id, &paper.id));
        if !paper.doi.is_empty() && !paper.key.is_empty() && paper.id.starts_with("doi:") {
            self.writer.delete_term(Term::from_field_text(f.id, &Paper::bibtex_id("", &paper.key)));
        }
        self.add(paper)
    }

    /// Adds the document of `paper` (its old one already deleted).
    fn add(&mut self, paper: &Paper) -> Result<()> {
        let f = self.fields;
        let mut doc = TantivyDocument::default();
        doc.add_text(f.id, &paper.id);
        doc.add_text(f.text, indexed_text(paper));
        doc.add_text(f.title, &paper.title);
        for ext in external_ids(paper) {
            doc.add_text(f.ext, &ext);
        }
        doc.add_u64(f.year, paper.year.map_or(0, |y| y.max(0) as u64));
        let record = serde_json::to_string(paper)?;
        doc.add_text(f.record, &record);
        self.writer.add_document(doc)?;
        Ok(())
    }

    /// Replaces the record of `paper.id` only (an upsert also replaces the
    /// record a BibTeX entry's key made before it had a DOI, which may be
    /// another Zotero item's).
    pub fn replace(&mut self, paper: &Paper) -> Result<()> {
        self.writer.delete_term(Term::from_field_text(self.fields.id, &paper.id));
        self.add(paper)
    }

    /// Removes a paper by id.
    pub fn delete(&mut self, id: &str) {
        self.writer.delete_term(Term::from_field_text(self.fields.id, id));
    }

    pub fn commit(&mut self) -> Result<()> {
        self.writer.commit()?;
        Ok(())
    }

    /// Commits and waits for background merges to finish.
    pub fn finish(mut self) -> Result<()> {
        self.writer.commit()?;
        self.writer.wait_merging_threads()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use tantivy::indexer::MergePolicy;

    use super::*;

    #[test]
    fn years_are_read_by_id_across_segments_and_after_an_update() {
        let dir = tempfile::tempdir().unwrap();
        let index = PaperIndex::open_or_create(dir.path()).unwrap();
        let paper = |id: &str, year: Option<i32>| Paper { id: id.into(), title: format!("paper {id}"), year, ..Paper::default() };
        let mut w = index.writer().unwrap();
        w.upsert(&paper("a", Some(1999))).unwrap();
        w.upsert(&paper("b", None)).unwrap();
        w.commit().unwrap();
        // A second segment, and a record replaced there.
        w.upsert(&paper("c", Some(2021))).unwrap();
        w.upsert(&paper("a", Some(2003))).unwrap();
        w.finish().unwrap();
        index.reload().unwrap();
        assert_eq!(index.years(&["c", "a", "b", "missing"]).unwrap(), vec![Some(2021), Some(2003), None, None]);
        assert!(index.years(&[]).unwrap().is_empty());

        // A search up to a year finds the papers of that year and before,
        // and those of unknown year, with the scores an open search gives.
        let found = |year: Option<i32>| -> Vec<(String, f32)> {
            let hits = index.search_up_to("paper", 10, QueryTf::default(), year).unwrap();
            let ids = index.ids(&index.searcher(), hits.iter().map(|h| h.doc)).unwrap();
            let mut out: Vec<(String, f32)> = ids.into_iter().zip(hits.iter().map(|h| h.score)).collect();
            out.sort_by(|a, b| a.0.cmp(&b.0));
            out
        };
        let all = found(None);
        assert_eq!(all.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(found(Some(2003)), all[..2].to_vec());
        assert_eq!(found(Some(2002)), all[1..2].to_vec());
    }

    #[test]
    fn merges_keep_segments_at_most_the_bound() {
        let index = Index::create_in_ram(PaperFields::build().0);
        let metas = |sizes: &[u32]| -> Vec<tantivy::SegmentMeta> {
            sizes.iter().map(|&n| index.new_segment_meta(tantivy::index::SegmentId::generate_random(), n)).collect()
        };
        let merged = |sizes: &[u32]| -> Vec<u32> {
            let segments = metas(sizes);
            BoundedMerges
                .compute_merge_candidates(&segments)
                .iter()
                .map(|c| c.0.iter().map(|id| segments.iter().find(|s| s.id() == *id).unwrap().num_docs()).sum())
                .collect()
        };
        assert!(merged(&[10, 20]).is_empty(), "too few to merge");
        assert_eq!(merged(&[1_000; 10]), [10_000]);
        // Large segments merge only while the result stays within the bound.
        assert_eq!(merged(&[60_000; 5]), [180_000]);
        assert!(merged(&[150_000, 150_000, 150_000]).is_empty());
        assert_eq!(merged(&[150_000, 10, 20, 30]), [60]);
    }

    #[test]
    fn terms_most_papers_hold_are_left_out_of_large_libraries_while_enough_rarer_ones_remain() {
        let terms = |q: &str| q.split(' ').map(|t| (t.to_string(), 1)).collect::<Vec<_>>();
        let names = |t: Vec<(String, u32)>| t.into_iter().map(|(t, _)| t).collect::<Vec<_>>().join(" ");
        // "paper" is in 30% of a million papers, the others in 1%.
        let df = |t: &str| if t == "paper" { 300_000 } else { 10_000 };
        assert_eq!(names(without_common_terms(terms("paper alpha beta gamma delta"), 1_000_000, df)), "alpha beta gamma delta");
        // With three rarer terms it counts.
        assert_eq!(names(without_common_terms(terms("paper alpha beta gamma"), 1_000_000, df)), "paper alpha beta gamma");
        // A small library searches every term.
        let small = |t: &str| if t == "paper" { 30_000 } else { 1_000 };
        assert_eq!(names(without_common_terms(terms("paper alpha beta gamma delta"), 100_000, small)), "paper alpha beta gamma delta");
    }
}

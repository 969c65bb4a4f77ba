//! The evidence index in tantivy: one document per span, BM25 (Okapi) and
//! BM25+ scoring computed from the index's own postings and field norms.

use std::collections::HashMap;
use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::postings::Postings;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED, STRING};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, DocSet, Index, IndexReader, ReloadPolicy, Searcher, TantivyDocument, Term, TERMINATED};

use super::record::{EvidenceBuilder, SpanRecord};
use crate::error::{Error, Result};
use crate::index::analyzer::{self, EN};
use crate::index::health::{self, IndexKind};

/// BM25 parameters (Lucene defaults) and the BM25+ lower bound.
pub const K1: f32 = 1.2;
pub const B: f32 = 0.75;
pub const PLUS_DELTA: f32 = 1.0;

#[derive(Debug, Clone, Copy)]
struct Fields {
    text: Field,
    cited: Field,
    record: Field,
}

/// Spans scored by both BM25 variants, best first.
#[derive(Debug, Default)]
pub struct SpanHits {
    pub okapi: Vec<(DocAddress, f32)>,
    pub plus: Vec<(DocAddress, f32)>,
}

/// Size of the database.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct EvidenceStats {
    pub spans: u64,
    pub papers: usize,
    pub links: usize,
    pub mean_support: f64,
}

pub struct EvidenceIndex {
    /// Where the index lives (named by errors about its records).
    dir: std::path::PathBuf,
    index: Index,
    reader: IndexReader,
    fields: Fields,
    analyzer: TextAnalyzer,
}

impl EvidenceIndex {
    pub fn open_or_create(dir: &Path) -> Result<EvidenceIndex> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let damaged = |e: tantivy::TantivyError| health::damaged(IndexKind::Evidence, dir, &e);
        let index = if dir.join("meta.json").exists() {
            Index::open_in_dir(dir).map_err(damaged)?
        } else {
            let index = Index::create_in_dir(dir, schema())?;
            crate::index::identity::renew(dir)?;
            index
        };
        crate::index::identity::ensure(dir);
        Self::from_index(dir, index).map_err(|e| match e {
            Error::Index(e) => damaged(e),
            e => e,
        })
    }

    fn from_index(dir: &Path, index: Index) -> Result<EvidenceIndex> {
        index.tokenizers().register(EN, analyzer::english());
        let s = index.schema();
        let fields = Fields { text: s.get_field("text")?, cited: s.get_field("cited")?, record: s.get_field("record")? };
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(EvidenceIndex { dir: dir.to_path_buf(), index, reader, fields, analyzer: analyzer::english() })
    }

    /// Sees what was committed since (by this or another process).
    pub fn reload(&self) -> Result<()> {
        Ok(self.reader.reload()?)
    }

    pub fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    /// This index's identity (see [`crate::index::identity`]).
    pub fn identity(&self) -> String {
        crate::index::identity::of(&self.dir).unwrap_or_default()
    }

    pub fn num_spans(&self) -> u64 {
        self.searcher().num_docs()
    }

    /// Every stored span record.
    pub fn all_records(&self) -> Result<Vec<SpanRecord>> {
        let searcher = self.searcher();
        let mut out = Vec::with_capacity(searcher.num_docs() as usize);
        for seg in searcher.segment_readers() {
            let store = seg.get_store_reader(16).map_err(tantivy::TantivyError::from)?;
            for doc in seg.doc_ids_alive() {
                let d: TantivyDocument = store.get(doc)?;
                out.push(self.decode(&d)?);
            }
        }
        Ok(out)
    }

    /// Replaces the whole database with the builder's spans merged into what
    /// is stored already, less the `retract`ed sightings (of documents read
    /// again).
    pub fn merge_and_write(&self, mut builder: EvidenceBuilder, retract: &std::collections::HashSet<u64>) -> Result<()> {
        for mut old in self.all_records()? {
            if retract.is_empty() || old.retract(retract) {
                builder.add(old);
            }
        }
        let mut writer = self.index.writer_with_num_threads(1, 200_000_000).map_err(|e| health::writer_error(&self.dir, e))?;
        writer.delete_all_documents()?;
        let mut keys: Vec<&String> = builder.spans.keys().collect();
        keys.sort();
        for key in keys {
            let r = &builder.spans[key];
            let mut doc = TantivyDocument::default();
            doc.add_text(self.fields.text, &r.text);
            for c in &r.cited {
                doc.add_text(self.fields.cited, &c.id);
            }
            doc.add_text(self.fields.record, serde_json::to_string(r)?);
            writer.add_document(doc)?;
        }
        writer.commit()?;
        writer.wait_merging_threads()?;
        self.reader.reload()?;
        Ok(())
    }

    fn decode(&self, d: &TantivyDocument) -> Result<SpanRecord> {
        let json = d.get_first(self.fields.record).and_then(|v| v.as_str()).unwrap_or("{}");
        serde_json::from_str(json).map_err(|e| Error::corrupt(&self.dir, format!("evidence record: {e}")))
    }

    pub fn record(&self, searcher: &Searcher, doc: DocAddress) -> Result<SpanRecord> {
        let d: TantivyDocument = searcher.doc(doc)?;
        self.decode(&d)
    }

    /// Number of spans containing an (analyzed) term.
    pub fn doc_freq(&self, term: &str) -> u64 {
        self.searcher().doc_freq(&Term::from_field_text(self.fields.text, term)).unwrap_or(0)
    }

    /// Distinct analyzed terms of a text.
    pub fn terms(&self, text: &str) -> Vec<String> {
        analyzer::distinct_terms(&self.analyzer, text)
    }

    /// BM25 idf of an analyzed term over the spans.
    pub fn idf(&self, term: &str) -> f32 {
        analyzer::bm25_idf(self.num_spans() as f32, self.doc_freq(term) as f32)
    }

    /// Scores every span containing a query term with BM25 (Okapi) and BM25+
    /// (Okapi plus δ·idf per matched term) and keeps the top `k` of each.
    pub fn search(&self, terms: &[String], k: usize) -> Result<SpanHits> {
        let searcher = self.searcher();
        let n = searcher.num_docs() as f32;
        if terms.is_empty() || n == 0.0 || k == 0 {
            return Ok(SpanHits::default());
        }
        let mut total_tokens = 0u64;
        for seg in searcher.segment_readers() {
            total_tokens += seg.inverted_index(self.fields.text)?.total_num_tokens();
        }
        let avgdl = (total_tokens as f32 / n).max(1.0);
        let mut okapi_all = Vec::new();
        let mut plus_all = Vec::new();
        let idfs: Vec<(Term, f32)> = terms
            .iter()
            .map(|t| {
                let term = Term::from_field_text(self.fields.text, t);
                let df = searcher.doc_freq(&term).unwrap_or(0) as f32;
                (term, analyzer::bm25_idf(n, df))
            })
            .filter(|(_, idf)| idf.is_finite())
            .collect();
        for (ord, seg) in searcher.segment_readers().iter().enumerate() {
            let inv = seg.inverted_index(self.fields.text)?;
            let norms = seg.get_fieldnorms_reader(self.fields.text)?;
            let mut acc: HashMap<u32, (f32, f32)> = HashMap::new();
            for (term, idf) in &idfs {
                let Some(mut postings) = inv.read_postings(term, IndexRecordOption::WithFreqs).map_err(tantivy::TantivyError::from)? else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if !seg.is_deleted(doc) {
                        let tf = postings.term_freq() as f32;
                        let dl = norms.fieldnorm(doc) as f32;
                        let sat = tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avgdl));
                        let e = acc.entry(doc).or_insert((0.0, 0.0));
                        e.0 += idf * sat;
                        e.1 += idf * (sat + PLUS_DELTA);
                    }
                    doc = postings.advance();
                }
            }
            for (doc, (o, p)) in acc {
                let addr = DocAddress::new(ord as u32, doc);
                okapi_all.push((addr, o));
                plus_all.push((addr, p));
            }
        }
        Ok(SpanHits { okapi: top_k(okapi_all, k), plus: top_k(plus_all, k) })
    }

    /// The best-matching spans that cite `paper` (by BM25 over the query
    /// terms; spans with no matching term come last, in index order),
    /// without the sightings of the citing paper `exclude` (see
    /// [`SpanRecord::without_citing`]).
    pub fn spans_citing(&self, paper: &str, terms: &[String], k: usize, exclude: &[u64]) -> Result<Vec<SpanRecord>> {
        if exclude.is_empty() {
            return self.spans_citing_all(paper, terms, k);
        }
        // Fetch more, since some may go.
        let records = self.spans_citing_all(paper, terms, k * 3 + 5)?;
        Ok(records
            .into_iter()
            .filter_map(|r| r.without_citing(exclude))
            .filter(|r| r.cited.iter().any(|c| c.id == paper))
            .take(k)
            .collect())
    }

    fn spans_citing_all(&self, paper: &str, terms: &[String], k: usize) -> Result<Vec<SpanRecord>> {
        let searcher = self.searcher();
        let cited = TermQuery::new(Term::from_field_text(self.fields.cited, paper), IndexRecordOption::Basic);
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, Box::new(cited))];
        for t in terms {
            clauses
                .push((Occur::Should, Box::new(TermQuery::new(Term::from_field_text(self.fields.text, t), IndexRecordOption::WithFreqs))));
        }
        let top = searcher.search(&BooleanQuery::new(clauses), &TopDocs::with_limit(k.max(1)).order_by_score())?;
        top.into_iter().map(|(_, d)| self.record(&searcher, d)).collect()
    }

    /// Span count, papers covered and mean support per (span, paper) link.
    pub fn stats(&self) -> Result<EvidenceStats> {
        let records = self.all_records()?;
        let mut papers = std::collections::HashSet::new();
        let mut links = 0usize;
        let mut support = 0u64;
        for r in &records {
            for c in &r.cited {
                papers.insert(c.id.clone());
                links += 1;
                support += c.support() as u64;
            }
        }
        Ok(EvidenceStats {
            spans: records.len() as u64,
            papers: papers.len(),
            links,
            mean_support: if links == 0 { 0.0 } else { support as f64 / links as f64 },
        })
    }
}

fn top_k(mut v: Vec<(DocAddress, f32)>, k: usize) -> Vec<(DocAddress, f32)> {
    let cmp = |a: &(DocAddress, f32), b: &(DocAddress, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if v.len() > k {
        v.select_nth_unstable_by(k - 1, cmp);
        v.truncate(k);
    }
    v.sort_by(cmp);
    v
}

fn schema() -> Schema {
    let mut b = Schema::builder();
    let analyzed = TextOptions::default()
        .set_indexing_options(TextFieldIndexing::default().set_tokenizer(EN).set_index_option(IndexRecordOption::WithFreqs));
    b.add_text_field("text", analyzed);
    b.add_text_field("cited", STRING);
    b.add_text_field("record", STORED);
    b.build()
}

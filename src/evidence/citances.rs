//! Every citing sentence of the evidence database as it was read, with
//! its citing document (library id, title, year, file, page) and the
//! library papers it cites: what `citewise evidence --cites` lists and the
//! editor shows. A tantivy index, one document per (citing paper,
//! sentence), replaced per source file when that file is read again.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tantivy::collector::TopDocs;
use tantivy::query::{AllQuery, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, Value, STORED, STRING};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::record::{sighting, CitingPaper};
use super::spans::normalize;
use crate::error::{Error, Result};
use crate::index::health::{self, IndexKind};

/// A citing sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Citance {
    pub citing: CitingPaper,
    /// `pdf`, `latex`, `markdown`, `fulltext`, `contexts`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// The sentence as the document has it (markers included).
    pub sentence: String,
    /// The sentence with its neighbours in the paragraph (documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Library papers it cites.
    pub cited: Vec<String>,
    /// Its evidence spans.
    pub spans: Vec<String>,
}

impl Citance {
    /// The sighting fingerprint its spans carry.
    pub fn sighting(&self) -> u64 {
        sighting(&self.citing.id, &normalize(&self.sentence))
    }
}

#[derive(Clone, Copy)]
struct Fields {
    source: Field,
    key: Field,
    cited: Field,
    record: Field,
}

pub struct CitanceIndex {
    /// Where the index lives (named by errors about its records).
    dir: std::path::PathBuf,
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

impl CitanceIndex {
    pub fn open_or_create(dir: &Path) -> Result<CitanceIndex> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let damaged = |e: tantivy::TantivyError| health::damaged(IndexKind::Citances, dir, &e);
        let index =
            if dir.join("meta.json").exists() { Index::open_in_dir(dir).map_err(damaged)? } else { Index::create_in_dir(dir, schema())? };
        let s = index.schema();
        let fields = Fields {
            source: s.get_field("source")?,
            key: s.get_field("key")?,
            cited: s.get_field("cited")?,
            record: s.get_field("record")?,
        };
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(damaged)?;
        Ok(CitanceIndex { dir: dir.to_path_buf(), index, reader, fields })
    }

    pub fn reload(&self) -> Result<()> {
        Ok(self.reader.reload()?)
    }

    pub fn count(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    fn collect(&self, query: &dyn tantivy::query::Query) -> Result<Vec<Citance>> {
        let searcher = self.reader.searcher();
        let n = searcher.num_docs() as usize;
        if n == 0 {
            return Ok(Vec::new());
        }
        let top = searcher.search(query, &TopDocs::with_limit(n).order_by_score())?;
        let mut out = Vec::with_capacity(top.len());
        for (_, addr) in top {
            let d: TantivyDocument = searcher.doc(addr)?;
            let json = d.get_first(self.fields.record).and_then(|v| v.as_str()).unwrap_or("{}");
            out.push(serde_json::from_str(json).map_err(|e| Error::corrupt(&self.dir, format!("citing-sentence record: {e}")))?);
        }
        Ok(out)
    }

    /// Every citing sentence that cites `paper`, by citing paper and page.
    pub fn citing(&self, paper: &str) -> Result<Vec<Citance>> {
        let mut out = self.collect(&TermQuery::new(Term::from_field_text(self.fields.cited, paper), IndexRecordOption::Basic))?;
        out.sort_by(|a, b| a.citing.id.cmp(&b.citing.id).then(a.page.cmp(&b.page)).then(a.sentence.cmp(&b.sentence)));
        Ok(out)
    }

    /// The citing sentences read from one source (a file, `path#tag`).
    pub fn from_source(&self, source: &str) -> Result<Vec<Citance>> {
        self.collect(&TermQuery::new(Term::from_field_text(self.fields.source, source), IndexRecordOption::Basic))
    }

    /// Every citing sentence.
    pub fn all(&self) -> Result<Vec<Citance>> {
        self.collect(&AllQuery)
    }

    /// A writer for replacing sources.
    pub fn writer(&self) -> Result<CitanceWriter<'_>> {
        Ok(CitanceWriter {
            owner: self,
            writer: self.index.writer_with_num_threads(1, 50_000_000).map_err(|e| health::writer_error(&self.dir, e))?,
        })
    }
}

pub struct CitanceWriter<'a> {
    owner: &'a CitanceIndex,
    writer: IndexWriter,
}

impl CitanceWriter<'_> {
    /// Replaces everything read from `source` with `citances` (a sentence
    /// seen again, from this or another copy of the same paper, is kept once).
    pub fn replace_source(&mut self, source: &str, citances: &[Citance]) -> Result<()> {
        let f = self.owner.fields;
        self.writer.delete_term(Term::from_field_text(f.source, source));
        let mut seen = HashSet::new();
        for c in citances {
            let key = format!("{:016x}", c.sighting());
            if !seen.insert(key.clone()) {
                continue;
            }
            self.writer.delete_term(Term::from_field_text(f.key, &key));
            let mut doc = TantivyDocument::default();
            doc.add_text(f.source, source);
            doc.add_text(f.key, &key);
            for id in &c.cited {
                doc.add_text(f.cited, id);
            }
            doc.add_text(f.record, serde_json::to_string(c)?);
            self.writer.add_document(doc)?;
        }
        Ok(())
    }

    pub fn commit(mut self) -> Result<()> {
        self.writer.commit()?;
        self.writer.wait_merging_threads()?;
        self.owner.reader.reload()?;
        Ok(())
    }
}

fn schema() -> Schema {
    let mut b = Schema::builder();
    b.add_text_field("source", STRING);
    b.add_text_field("key", STRING);
    b.add_text_field("cited", STRING);
    b.add_text_field("record", STORED);
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(citing: &str, sentence: &str, cited: &[&str]) -> Citance {
        Citance {
            citing: CitingPaper { id: citing.into(), ..Default::default() },
            kind: "pdf".into(),
            page: Some(2),
            sentence: sentence.into(),
            context: None,
            cited: cited.iter().map(|s| s.to_string()).collect(),
            spans: vec![],
        }
    }

    #[test]
    fn sources_are_replaced_and_sentences_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let idx = CitanceIndex::open_or_create(dir.path()).unwrap();
        let mut w = idx.writer().unwrap();
        w.replace_source("a.pdf", &[c("p1", "We tag [1].", &["t"]), c("p1", "We parse [2].", &["p"])]).unwrap();
        w.replace_source("copy-of-a.pdf", &[c("p1", "We tag [1].", &["t"])]).unwrap();
        w.commit().unwrap();
        assert_eq!(idx.citing("t").unwrap().len(), 1, "the same sentence of the same paper once");
        let mut w = idx.writer().unwrap();
        w.replace_source("a.pdf", &[c("p1", "We parse with [2].", &["p"])]).unwrap();
        w.commit().unwrap();
        assert_eq!(idx.citing("p").unwrap().iter().map(|c| c.sentence.as_str()).collect::<Vec<_>>(), ["We parse with [2]."]);
        assert_eq!(idx.count(), 2, "the copy keeps its sentence");
    }
}

//! The tantivy schema of the paper index.

use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STORED, STRING};

use super::analyzer::EN;

/// Field handles of the paper index.
#[derive(Debug, Clone, Copy)]
pub struct PaperFields {
    /// Identity (exact term, stored, fast): de-duplication and id lookups.
    pub id: Field,
    /// Title + abstract + keywords, analyzed: what BM25 ranks on.
    pub text: Field,
    /// Title alone, analyzed (for field-specific scoring and filtering).
    pub title: Field,
    /// External identifiers (`doi:<doi>`, `arxiv:<id>`), exact terms, for linking.
    pub ext: Field,
    /// Publication year (0 when unknown), for filtering and recency.
    pub year: Field,
    /// The whole [`crate::corpus::Paper`] as JSON, stored for display and export.
    pub record: Field,
}

impl PaperFields {
    pub fn build() -> (Schema, PaperFields) {
        let mut b = Schema::builder();
        let analyzed = TextOptions::default()
            .set_indexing_options(TextFieldIndexing::default().set_tokenizer(EN).set_index_option(IndexRecordOption::WithFreqs));
        let fields = PaperFields {
            id: b.add_text_field("id", STRING | STORED | FAST),
            text: b.add_text_field("text", analyzed.clone()),
            title: b.add_text_field("title", analyzed),
            ext: b.add_text_field("ext", STRING),
            year: b.add_u64_field("year", INDEXED | FAST),
            record: b.add_text_field("record", STORED),
        };
        (b.build(), fields)
    }

    /// Resolves the fields of an index opened from disk.
    pub fn from_schema(schema: &Schema) -> tantivy::Result<PaperFields> {
        Ok(PaperFields {
            id: schema.get_field("id")?,
            text: schema.get_field("text")?,
            title: schema.get_field("title")?,
            ext: schema.get_field("ext")?,
            year: schema.get_field("year")?,
            record: schema.get_field("record")?,
        })
    }
}

//! Corpus: the records citewise works on and the importers that read them.

pub mod benchmark;
pub mod bibliography_names;
pub mod bibtex;
pub mod citation_markup;
pub mod html_text;
pub mod jsonl;
pub mod paper;
pub mod source;
pub mod unique_key;
pub mod work;
pub mod zotero;

pub use paper::Paper;

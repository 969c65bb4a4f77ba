//! What a draft says, for every front end (the editor, the language server,
//! `check`): one model of a draft ([`Document`]: its text, its citation
//! grammar, what it cites, the bibliography files it names, resolved inside
//! its project), one reading of its prose ([`prose`]: what is not prose
//! blanked, headings ending the paragraph before them), and what a request
//! or a check takes from it ([`context`]: the sentence or paragraph around
//! the cursor with `[CIT]` there, a citation's sentence, the title and
//! abstract).
//!
//! Sits below `check`, `tui` and `lsp`; only `lsp` knows the protocol's
//! types. The names of bibliography files are read by
//! [`crate::corpus::bibliography_names`], which the evidence readers (a
//! layer below) share.

pub mod context;
pub mod document;
pub mod prose;

pub use context::{citing_sentence, context_around, cursor_context, global_context, selection_context, ContextMode, SENTENCE_REACH};
pub use document::{syntax_of, BibliographyFile, Document, DEFAULT_BIBLIOGRAPHY};
pub use prose::{read, Reading};

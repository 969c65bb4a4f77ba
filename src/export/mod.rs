//! Export: BibTeX entries for the draft's bibliography (the citation
//! commands written into the draft are `corpus::citation_markup`'s).

pub mod bibfile;
pub mod encoding;
pub mod keys;

pub use bibfile::{export, ExportReport, Exported};
pub use keys::KeyStyle;

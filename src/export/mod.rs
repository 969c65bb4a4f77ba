//! Export: BibTeX entries for the draft's bibliography and citation commands
//! for the draft.

pub mod bibfile;
pub mod cite;
pub mod encoding;
pub mod keys;

pub use bibfile::{export, ExportReport, Exported};
pub use cite::CiteSyntax;
pub use keys::KeyStyle;

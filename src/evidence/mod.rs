//! Evidence: citing sentences → spans → an index of spans mapped to the
//! papers they cite, with support counts.

pub mod chunker;
pub mod citances;
pub mod document;
pub mod inputs;
pub mod latex;
pub mod markdown;
pub mod pdf;
pub mod markers;
pub mod sentences;
pub mod spans;
pub mod link;
pub mod record;
pub mod sources;
pub mod store;

//! Evidence: citing sentences → spans → an index of spans mapped to the
//! papers they cite, with support counts.

pub mod chunker;
pub mod citances;
pub mod document;
pub mod inputs;
pub mod latex;
pub mod link;
pub mod markdown;
pub mod markers;
pub mod pdf;
pub mod record;
pub mod sentences;
pub mod sources;
pub mod spans;
pub mod store;

//! Evidence: citing sentences → spans → an index of spans mapped to the
//! papers they cite, with support counts.

pub mod chunker;
pub mod markers;
pub mod sentences;
pub mod spans;
pub mod link;
pub mod record;
pub mod sources;
pub mod store;

//! Neural engine on burn: the BERT encoder and its tokenizer.

pub mod backend;
pub mod bert;
pub mod encoder;
pub mod hatten;
pub mod words;
pub mod models;
pub mod tokenizer;
pub mod train;

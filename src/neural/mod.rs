//! Neural engine on burn: the BERT encoder and its tokenizer.

pub mod bert;
pub mod models;
pub mod tokenizer;

//! Neural engine on burn: the BERT encoder and its tokenizer, the HAtten
//! dense encoder, and the cross-encoder reranker; `train` holds their
//! trainers.

pub mod backend;
pub mod bert;
pub mod bi_encoder;
pub mod cross_encoder;
pub mod encoder;
pub mod field;
pub mod hatten;
pub mod models;
pub mod parallel;
pub mod reranker;
pub mod tokenizer;
pub mod train;
pub mod weights;
pub mod words;

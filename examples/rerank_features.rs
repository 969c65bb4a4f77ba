//! Writes, per sampled benchmark context, the fused prefetch's top K_r with
//! the cross-encoder's score and the citation bi-encoder's cosine of each
//! candidate (one JSON line per context), for tuning the rerank stage
//! offline on `val`.
//!
//! cargo run --release --example rerank_features -- BENCH POOL SPLIT OUT.jsonl N DEPTH [FUSION]

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use citewise::eval::harness::{load_split, query_at};
use citewise::library::Library;
use citewise::neural::backend::{select, DevicePreference};
use citewise::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
use citewise::neural::reranker::shared_reranker;
use citewise::pipeline::semantic_spans::SemanticSpans;
use citewise::pipeline::{Fusion, Recommender};
use rand::seq::SliceRandom;
use rand::SeedableRng;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let bench = PathBuf::from(&args[1]);
    let lib = Arc::new(Library::open(&PathBuf::from(&args[2]))?);
    let split = &args[3];
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args[4])?);
    let n: usize = args[5].parse()?;
    let depth: usize = args[6].parse()?;
    let fusion = Fusion::default().with_overrides(args.get(7).map_or("", |s| s.as_str()))?;
    SemanticSpans::shared()?.warm(&lib, &|_, _| {})?;
    let device = select(DevicePreference::Auto).device;
    let encoder = BiEncoder::load(CITATION_ENCODER, &device)?;
    let reranker = shared_reranker()?;
    let mut rec = Recommender::with_channels(lib.clone(), &["bm25", "evidence"])?;
    rec.set_fusion(fusion);
    let mut contexts = load_split(&bench, split)?;
    let mut idx: Vec<usize> = (0..contexts.len()).collect();
    idx.shuffle(&mut rand::rngs::StdRng::seed_from_u64(0x5eed));
    let keep: std::collections::HashSet<usize> = idx.into_iter().take(n).collect();
    contexts = contexts.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, c)| c).collect();
    for (done, c) in contexts.iter().enumerate() {
        let q = query_at(c, false, depth);
        let r = rec.recommend_ids(&q)?;
        let ids: Vec<&str> = r.candidates.iter().map(|c| c.id.as_str()).collect();
        let papers: Vec<_> = ids.iter().map(|id| lib.papers().paper_by_id(id)).collect::<Result<_, _>>()?;
        let texts: Vec<(&str, &str)> =
            papers.iter().map(|p| p.as_ref().map_or(("", ""), |p| (p.title.as_str(), p.abstract_text.as_str()))).collect();
        let qt = reranker.query(&q.local_text(), "", "")?;
        let ce = reranker.score(&qt, &texts)?;
        let mut docs: Vec<String> = vec![q.local_text()];
        docs.extend(texts.iter().map(|(t, a)| format!("{t}. {a}")));
        let refs: Vec<&str> = docs.iter().map(|s| s.as_str()).collect();
        let v = encoder.encode(&refs)?;
        let d = encoder.dim();
        let cos: Vec<f32> = (1..refs.len()).map(|i| (0..d).map(|j| v[j] * v[i * d + j]).sum()).collect();
        let line = serde_json::json!({
            "id": c.id, "source": c.source, "cited": c.cited, "ids": ids, "ce": ce, "cos": cos,
            "channels": r.candidates.iter().map(|c| c.channels.iter().map(|s| (s.channel, s.rank)).collect::<Vec<_>>()).collect::<Vec<_>>(),
        });
        writeln!(out, "{line}")?;
        out.flush()?;
        if done % 20 == 0 {
            eprintln!("{done}");
        }
    }
    Ok(())
}

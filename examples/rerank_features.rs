//! Writes, per sampled benchmark context, the fused prefetch's top K_r with
//! the cross-encoder's score and the citation bi-encoder's cosine of each
//! candidate (one JSON line per context), for tuning the rerank stage
//! offline on `val`.
//!
//! cargo run --release --example rerank_features -- BENCH POOL SPLIT OUT.jsonl N DEPTH [FUSION] [CHANNELS]
//!
//! CHANNELS (comma-separated) make the prefetch; default `bm25,evidence`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use citewise::eval::harness::{load_split, query_at, sample};
use citewise::library::Library;
use citewise::pipeline::paper_cosines::PaperText;
use citewise::pipeline::{Fusion, Models, Recommender};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let bench = PathBuf::from(&args[1]);
    let lib = Arc::new(Library::open(&PathBuf::from(&args[2]))?);
    let split = &args[3];
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args[4])?);
    let n: usize = args[5].parse()?;
    let depth: usize = args[6].parse()?;
    let fusion = Fusion::default().with_overrides(args.get(7).map_or("", |s| s.as_str()))?;
    let models = Models::installed();
    models.span_cosines()?.warm(&lib, &|_, _| {})?;
    let similarity = models.paper_cosines()?;
    let reranker = models.reranker()?;
    let channels: Vec<&str> = args.get(8).map_or("bm25,evidence", |s| s.as_str()).split(',').collect();
    let mut rec = Recommender::with_stages(lib.clone(), &models, &channels)?;
    rec.set_fusion(fusion);
    let contexts = sample(load_split(&bench, split)?, n);
    for (done, c) in contexts.iter().enumerate() {
        let q = query_at(c, false, depth);
        let r = match rec.recommend_ids(&q) {
            Ok(r) => r,
            Err(citewise::error::Error::InvalidQuery(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        let ids: Vec<&str> = r.candidates.iter().map(|c| c.id.as_str()).collect();
        let papers: Vec<_> = ids.iter().map(|id| lib.papers().paper_by_id(id)).collect::<Result<_, _>>()?;
        let texts: Vec<(&str, &str)> =
            papers.iter().map(|p| p.as_ref().map_or(("", ""), |p| (p.title.as_str(), p.abstract_text.as_str()))).collect();
        let qt = reranker.query(&q.local_text(), "", "")?;
        let ce = reranker.score(&qt, &texts)?;
        let paper_texts: Vec<PaperText> =
            ids.iter().zip(&texts).map(|(id, (title, abstract_text))| PaperText { id, title, abstract_text }).collect();
        let cos = similarity.cosines(&q.local_text(), &paper_texts, None)?;
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

#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! Measures a sentence encoder trained on broad data (by default
//! `all-minilm-l6-v2`, from the models directory) as a reranking signal
//! over the fused prefetch: the fused top `depth` reordered by weighted
//! reciprocal rank of the fused order (1) and the encoder's cosine between
//! the query's words and each candidate's title and abstract (w), as the
//! citation encoder's vectors are made. R@10 / MRR / nDCG@10 per source
//! for each weight, with paired bootstrap intervals against the fused
//! prefetch. Only the top `depth` candidates are encoded, so any library
//! can be measured without encoding it.
//!
//! cargo run --release --example broad_encoder -- BENCH POOL SPLIT [SAMPLE] [MODEL] [DEPTH]

use citewise::eval::harness::{AsOf, EvalQueries, EVAL_DEPTH};
use citewise::neural::bi_encoder::{paper_text, BiEncoder};
use citewise::pipeline::Recommender;

mod common;

use common::{List, Scorer, Settings, Setup};

const WEIGHTS: [f64; 4] = [0.25, 0.5, 1.0, 2.0];

fn main() -> anyhow::Result<()> {
    let Setup { lib, contexts, models } = Setup::from_args()?;
    let args: Vec<String> = std::env::args().collect();
    let model = args.get(5).map_or("all-minilm-l6-v2", String::as_str);
    let depth: usize = args.get(6).map_or(20, |d| d.parse().unwrap());
    let encoder = BiEncoder::load(model, &models.backend().device)?;
    let rec = Recommender::with_stages(lib.clone(), &models, &["bm25", "evidence", "citation", "hatten"])?;
    let mut queries = EvalQueries::new(&lib, false, EVAL_DEPTH, AsOf::CitingYear);
    let names: Vec<String> =
        std::iter::once("fused prefetch".to_string()).chain(WEIGHTS.iter().map(|w| format!("{model} top {depth}, weight {w}"))).collect();
    let mut results = Settings::new(names.len());
    let mut scorer = Scorer::default();
    let t = std::time::Instant::now();
    for (n, c) in contexts.iter().enumerate() {
        let query = queries.query(c)?;
        let (fused, cosines): (List, Vec<f32>) = match rec.prepare(&query) {
            Ok(prepared) => {
                let fused: List = rec.fused(&prepared)?.into_iter().map(|c| (c.id, c.same_work)).collect();
                let top = &fused[..fused.len().min(depth)];
                let mut texts = vec![prepared.local.clone()];
                for (id, _) in top {
                    let p = lib.papers().paper_by_id(id)?.ok_or_else(|| anyhow::anyhow!("{id} not in the library"))?;
                    texts.push(paper_text(&p.title, &p.abstract_text));
                }
                let v = encoder.encode(&texts.iter().map(String::as_str).collect::<Vec<_>>())?;
                let d = encoder.dim();
                let q = &v[..d];
                let cos = v[d..].chunks(d).map(|row| row.iter().zip(q).map(|(a, b)| a * b).sum()).collect();
                (fused, cos)
            }
            Err(citewise::error::Error::InvalidQuery(_)) => (Vec::new(), Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut lists: Vec<List> = vec![fused.clone()];
        let mut by_cosine: Vec<usize> = (0..cosines.len()).collect();
        by_cosine.sort_by(|&a, &b| cosines[b].total_cmp(&cosines[a]).then(a.cmp(&b)));
        let mut cosine_rank = vec![0usize; cosines.len()];
        for (r, &i) in by_cosine.iter().enumerate() {
            cosine_rank[i] = r;
        }
        for w in WEIGHTS {
            let mut top: Vec<(f64, usize)> =
                (0..cosines.len()).map(|i| (1.0 / (5.0 + i as f64 + 1.0) + w / (5.0 + cosine_rank[i] as f64 + 1.0), i)).collect();
            top.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut list: List = top.iter().map(|&(_, i)| fused[i].clone()).collect();
            list.extend(fused.iter().skip(cosines.len()).cloned());
            lists.push(list);
        }
        results.record(&mut scorer, &lib, c, &lists)?;
        if n % 50 == 0 {
            eprintln!("{n} ({:.0} s)", t.elapsed().as_secs_f64());
        }
    }
    println!("{} contexts; the encoder's cosines over the fused top {depth}: {:.0} s in all", contexts.len(), t.elapsed().as_secs_f64());
    results.print(&names);
    Ok(())
}

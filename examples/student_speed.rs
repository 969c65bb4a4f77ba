#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! Papers per second of HAtten-shaped encoders of several widths on one
//! thread (random weights): what a student encoder of the citation encoder
//! costs per paper.
//!
//! `cargo run --release --example student_speed -- [BENCH]`

use std::path::Path;
use std::time::Instant;

use burn::tensor::Device;
use citewise::neural::hatten::{DocText, HattenConfig};
use citewise::neural::train::{embed, load_papers};
use citewise::neural::words::WordVectors;

fn main() -> anyhow::Result<()> {
    let bench = std::env::args().nth(1).unwrap_or_else(|| "../shared/data/benchmark".into());
    let words = WordVectors::load_named("minilm-citation-v4")?;
    let device = Device::flex();
    let papers = load_papers(&Path::new(&bench).join("papers.jsonl.gz"))?;
    let texts: Vec<DocText> = papers.iter().step_by(100).take(1000).map(|p| DocText::paper(&p.title, &p.abstract_text)).collect();
    for (d, heads, ff) in [(128, 4, 256), (256, 4, 512), (384, 6, 768)] {
        let config = HattenConfig::new()
            .with_word_vectors(Some("minilm-citation-v4".into()))
            .with_word_dim(384)
            .with_d_model(d)
            .with_heads(heads)
            .with_d_ff(ff);
        let model = config.init(&device);
        let _ = embed(&model, &config, &words, &texts[..128], &device, &|_| {});
        let t = Instant::now();
        let _ = embed(&model, &config, &words, &texts, &device, &|_| {});
        println!("d_model {d}: {:.0} papers/s", texts.len() as f64 / t.elapsed().as_secs_f64());
    }
    Ok(())
}

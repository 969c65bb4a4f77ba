#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! How spread out a HAtten encoder's paper vectors are: the mean, lowest and
//! highest cosine among 200 benchmark papers, at initialisation and with the
//! trained weights of a `citewise train hatten` output directory. A mean
//! near 1 means the encoder has collapsed (every text near one vector).
//!
//! `cargo run --release --example hatten_probe -- OUT [BENCH]`

use std::path::Path;

use burn::tensor::Device;
use citewise::neural::hatten::{DocText, Hatten, HattenConfig};
use citewise::neural::train::{embed, load_papers};
use citewise::neural::words::WordVectors;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: hatten_probe OUT [BENCH]");
    let bench = args.next().unwrap_or_else(|| "../shared/data/benchmark".into());
    let dir = Path::new(&dir);
    let config = HattenConfig::from_file(&dir.join("config.json"))?;
    let words = WordVectors::load_named(config.word_vectors_name())?;
    let device = Device::flex();
    let papers = load_papers(&Path::new(&bench).join("papers.jsonl.gz"))?;
    let texts: Vec<DocText> = papers.iter().step_by(500).take(200).map(|p| DocText::paper(&p.title, &p.abstract_text)).collect();
    let trained = Hatten::load(&config, &dir.join("model.safetensors"), &device)?;
    for (name, model) in [("initialisation", config.init(&device)), ("trained", trained)] {
        let v = embed(&model, &config, &words, &texts, &device, &|_| {});
        let d = config.d_model;
        let (mut sum, mut pairs, mut low, mut high) = (0f64, 0usize, f32::MAX, f32::MIN);
        for i in 0..texts.len() {
            for j in 0..i {
                let cos: f32 = (0..d).map(|k| v[i * d + k] * v[j * d + k]).sum();
                sum += cos as f64;
                pairs += 1;
                low = low.min(cos);
                high = high.max(cos);
            }
        }
        println!("{name}: mean cosine {:.4}, lowest {low:.4}, highest {high:.4} ({} papers)", sum / pairs as f64, texts.len());
    }
    Ok(())
}

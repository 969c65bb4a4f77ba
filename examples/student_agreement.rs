#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! How well a student of the citation encoder stands in for it on a
//! library: on a sample of the library's papers, the mean cosine between
//! the student's and the citation encoder's paper vectors, the overlap of
//! their top 10 for sentences of the sample's abstracts (queries encoded by
//! the citation encoder, as the citation channel encodes them), and each
//! one's R@10 / MRR of the paper a sentence comes from. The sample is
//! chosen as `citewise distill` chooses its own, with another seed, so it
//! is mostly papers the student did not train on (all of them on a library
//! it was not distilled on).
//!
//! `cargo run --release --example student_agreement -- LIBRARY STUDENT_DIR [PAPERS]`

use std::path::Path;

use burn::tensor::Device;
use citewise::index::vectors::{dot, top_k};
use citewise::library::student::{distillation_data, SampleOptions, SampleProgress};
use citewise::library::Library;
use citewise::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
use citewise::neural::encoder::{HattenEncoder, Weights};
use citewise::ranking::{recall_at, reciprocal_rank};

struct Quiet;
impl SampleProgress for Quiet {
    fn phase(&self, name: &str, total: u64) {
        eprintln!("{name} ({total})");
    }
    fn advance(&self, _: u64) {}
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(lib), Some(student)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: student_agreement LIBRARY STUDENT_DIR [PAPERS]");
    };
    let n: usize = args.next().map_or(Ok(3000), |s| s.parse())?;
    let lib = Library::open(Path::new(&lib))?;
    let device = Device::flex();
    let teacher = BiEncoder::load(CITATION_ENCODER, &device)?;
    let student = HattenEncoder::from_weights(Weights::in_dir(Path::new(&student))?, &device)?;
    let sample = SampleOptions { papers: n, val: 0, seed: 977 };
    let (data, report) = distillation_data(&lib, &teacher, &sample, 2, &Quiet)?;
    let d = data.dim;
    let t = std::time::Instant::now();
    let by_student = student.encode(&data.papers);
    let student_rate = data.papers.len() as f64 / t.elapsed().as_secs_f64();
    let m = data.papers.len();
    let cosine = (0..m).map(|i| dot(&by_student[i * d..(i + 1) * d], &data.teacher[i * d..(i + 1) * d]) as f64).sum::<f64>() / m as f64;
    let (mut overlap, mut queries) = (0f64, 0usize);
    let (mut r10, mut mrr) = ([0f64; 2], [0f64; 2]);
    for (i, q) in data.queries.iter().enumerate() {
        let Some(q) = q else { continue };
        queries += 1;
        let ranked: Vec<Vec<usize>> =
            [&data.teacher, &by_student].iter().map(|matrix| top_k(matrix, d, q, 100, 2).into_iter().map(|(r, _)| r).collect()).collect();
        overlap += ranked[1][..10].iter().filter(|r| ranked[0][..10].contains(r)).count() as f64 / 10.0;
        for k in 0..2 {
            r10[k] += recall_at(&ranked[k], &[i], 10);
            mrr[k] += reciprocal_rank(&ranked[k], |r| *r == i);
        }
    }
    let q = queries.max(1) as f64;
    println!(
        "library {} ({} papers sampled, {} sentences; teacher vectors: {} stored, {} encoded)",
        lib.dir().display(),
        m,
        queries,
        report.stored,
        report.encoded
    );
    println!("student {} ({:.0} papers/s on one thread)", student.source, student_rate);
    println!("mean cosine student/teacher {cosine:.3}; top-10 overlap {:.3}", overlap / q);
    println!(
        "sentence -> its paper: teacher R@10 {:.3} MRR {:.3}; student R@10 {:.3} MRR {:.3}",
        r10[0] / q,
        mrr[0] / q,
        r10[1] / q,
        mrr[1] / q
    );
    Ok(())
}

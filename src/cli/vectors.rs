//! What a command computes after its records, in one pass: the vectors the
//! library lacks — evidence spans, HAtten's paper vectors, the citation
//! encoder's student's stand-ins, the citation encoder's own — said before
//! it starts (what, for how many, about how long, and that the editor can
//! be used meanwhile), then one bar and one ETA for all of it, the phases
//! weighed by what each costs a paper.

use std::time::Instant;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::index::vectors::VectorStore;
use crate::library::Library;
use crate::pipeline::Models;
use crate::util::{counted, printable};

/// When to compute the citation channel's paper vectors (the citation
/// encoder's own: the slowest, ~47 papers/s on 2 cores).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CitationVectors {
    /// For every paper that has none (`citewise embed`).
    All,
    /// Only in a library that has them already (an import adds the new
    /// papers'); otherwise a hint naming `citewise embed`.
    KeepCurrent,
}

/// What to compute.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// The evidence spans' vectors (semantic ranking of evidence).
    pub spans: bool,
    /// HAtten's paper vectors (the dense channel).
    pub dense: bool,
    /// The student's stand-ins (the citation channel, fast).
    pub stand_ins: bool,
    /// The citation encoder's own vectors (none: not at all).
    pub citation: Option<CitationVectors>,
}

impl Plan {
    /// Nothing.
    pub const NONE: Plan = Plan { spans: false, dense: false, stand_ins: false, citation: None };
    /// What an import of papers computes.
    pub const IMPORT: Plan = Plan { dense: true, stand_ins: true, citation: Some(CitationVectors::KeepCurrent), ..Plan::NONE };
    /// What `citewise embed` computes: everything.
    pub const EMBED: Plan = Plan { spans: true, dense: true, stand_ins: true, citation: Some(CitationVectors::All) };
    /// `citewise embed --fast`: the paper vectors that take minutes.
    pub const FAST: Plan = Plan { dense: true, stand_ins: true, ..Plan::NONE };
    /// The evidence spans (an import of citing sentences).
    pub const SPANS: Plan = Plan { spans: true, ..Plan::NONE };
    /// HAtten's paper vectors (after its weights changed).
    pub const DENSE: Plan = Plan { dense: true, ..Plan::NONE };
    /// The stand-ins (after the student changed).
    pub const STAND_INS: Plan = Plan { stand_ins: true, ..Plan::NONE };

    /// This plan and `other`'s.
    pub fn and(self, other: Plan) -> Plan {
        Plan {
            spans: self.spans || other.spans,
            dense: self.dense || other.dense,
            stand_ins: self.stand_ins || other.stand_ins,
            citation: self.citation.or(other.citation),
        }
    }
}

/// Core-milliseconds one item of a phase takes on the CPU (measured on 2
/// cores: HAtten 284 papers/s, the student 248, the citation encoder 47,
/// spans about 130): the weights of the one bar, and the estimate said
/// before it starts.
const DENSE_MS: f64 = 7.0;
const STUDENT_MS: f64 = 8.0;
const CITATION_MS: f64 = 42.0;
const SPAN_MS: f64 = 15.0;

/// The phases of a pass, with the items each has to do (as estimated from
/// the stores before it starts) and its weight.
struct Phase {
    what: &'static str,
    items: u64,
    core_ms: f64,
}

/// One bar over every phase: its units are estimated milliseconds of work.
struct Pass {
    bar: ProgressBar,
    cores: f64,
}

impl Pass {
    fn new(total_ms: f64, cores: f64) -> Pass {
        let bar = ProgressBar::with_draw_target(Some(total_ms.max(1.0) as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} vectors [{bar:30}] {percent}% {msg} (eta {eta})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        Pass { bar, cores }
    }

    /// What one item of a phase costs on the bar.
    fn weight(&self, core_ms: f64) -> f64 {
        core_ms / self.cores
    }

    /// A phase begins: its name on the bar, and the bar's length corrected
    /// by what it really has to do (`actual`, against `estimated`).
    fn begin(&self, what: &str, estimated: u64, actual: u64, core_ms: f64) {
        self.bar.set_message(what.to_string());
        let w = self.weight(core_ms);
        let len = self.bar.length().unwrap_or(0) as f64 + (actual as f64 - estimated as f64) * w;
        self.bar.set_length(len.max(self.bar.position() as f64).max(1.0) as u64);
    }

    fn advance(&self, items: u64, core_ms: f64) {
        self.bar.inc((items as f64 * self.weight(core_ms)) as u64);
    }

    /// A note (standard error), above the bar.
    fn say(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    /// What a phase did (standard output), above the bar.
    fn done(&self, line: &str) {
        self.bar.suspend(|| println!("{line}"));
    }
}

/// Live rows of the store in `dir` (0: none, or damaged: then all are to do).
fn live(dir: &std::path::Path) -> u64 {
    VectorStore::inspect(dir).ok().flatten().map_or(0, |s| s.live as u64)
}

/// The phases `plan` has for `lib`, with estimated items.
fn phases(lib: &Library, plan: Plan) -> Vec<Phase> {
    let papers = lib.papers().num_papers();
    let mut out = Vec::new();
    if plan.spans {
        let spans = lib.evidence().num_spans();
        out.push(Phase {
            what: "the evidence spans' vectors",
            items: spans.saturating_sub(live(&lib.span_vectors_dir())),
            core_ms: SPAN_MS,
        });
    }
    if plan.dense {
        out.push(Phase { what: "HAtten's paper vectors", items: papers.saturating_sub(live(&lib.vectors_dir())), core_ms: DENSE_MS });
    }
    if plan.stand_ins {
        let covered = live(&lib.student_vectors_dir()).max(live(&lib.citation_vectors_dir()));
        out.push(Phase { what: "the citation channel's stand-ins", items: papers.saturating_sub(covered), core_ms: STUDENT_MS });
    }
    let citation = match plan.citation {
        Some(CitationVectors::All) => true,
        Some(CitationVectors::KeepCurrent) => VectorStore::exists(&lib.citation_vectors_dir()),
        None => false,
    };
    if citation {
        let items = papers.saturating_sub(live(&lib.citation_vectors_dir()));
        out.push(Phase { what: "the citation encoder's paper vectors", items, core_ms: CITATION_MS });
    }
    out
}

/// Computes what `plan` asks for `lib`, in one pass: said first, then one
/// bar. A model that is not installed is a notice (the channels that need
/// it stay off; BM25 and evidence work).
pub fn compute(lib: &Library, models: &Models, plan: Plan) -> Result<()> {
    let phases = phases(lib, plan);
    let cores = crate::neural::parallel::cores() as f64;
    let total_ms: f64 = phases.iter().map(|p| p.items as f64 * p.core_ms / cores).sum();
    let todo: Vec<String> = phases.iter().filter(|p| p.items > 0).map(|p| format!("{} for {}", p.what, p.items)).collect();
    if !todo.is_empty() {
        eprintln!(
            "computing {} (about {}, {}); the editor can be used meanwhile: it answers with BM25 and evidence and adds each \
             channel as its vectors are done (Ctrl-C stops here; `citewise embed`, or the editor, goes on from there)",
            todo.join(", "),
            minutes(total_ms / 1000.0),
            counted(cores as usize, "core")
        );
    }
    let pass = Pass::new(total_ms, cores);
    let t = Instant::now();
    for phase in &phases {
        match phase.what {
            "the evidence spans' vectors" => spans(lib, models, &pass, phase)?,
            "HAtten's paper vectors" => dense(lib, models, &pass, phase)?,
            "the citation channel's stand-ins" => stand_ins(lib, models, &pass, phase)?,
            _ => citation(lib, models, &pass, phase)?,
        }
    }
    pass.bar.finish_and_clear();
    if plan.citation == Some(CitationVectors::KeepCurrent) && !VectorStore::exists(&lib.citation_vectors_dir()) {
        hint_citation(lib);
    }
    if !todo.is_empty() {
        eprintln!("vectors computed in {}", minutes(t.elapsed().as_secs_f64()));
    }
    Ok(())
}

/// `s` seconds as a person says them: "40 s", "12 min", "1.5 h".
fn minutes(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// The rate and summary line of a phase.
fn done_line(what: &str, encoded: usize, kept: usize, t: Instant, how: &str) -> String {
    let secs = t.elapsed().as_secs_f64().max(1e-3);
    format!("{what}, {kept} already current ({secs:.1} s, {:.0} papers/s, {how})", encoded as f64 / secs)
}

fn repaired(pass: &Pass, note: &Option<String>) {
    if let Some(note) = note {
        pass.say(&format!("note: {}", printable(note)));
    }
}

/// The evidence spans' vectors (resumable; a notice without the citation
/// encoder).
fn spans(lib: &Library, models: &Models, pass: &Pass, phase: &Phase) -> Result<()> {
    let semantic = match models.span_cosines() {
        Ok(s) => s,
        Err(e) => {
            pass.say(&format!("note: evidence span vectors not computed ({e}); evidence is ranked by its words only"));
            return Ok(());
        }
    };
    let t = Instant::now();
    let before = semantic.encoded();
    let begun = std::sync::atomic::AtomicBool::new(false);
    let last = std::sync::atomic::AtomicUsize::new(0);
    semantic.warm(lib, &|done, total| {
        if !begun.swap(true, std::sync::atomic::Ordering::SeqCst) {
            pass.begin(phase.what, phase.items, total.saturating_sub(done) as u64, phase.core_ms);
            last.store(done, std::sync::atomic::Ordering::SeqCst);
        }
        let was = last.swap(done, std::sync::atomic::Ordering::SeqCst);
        pass.advance(done.saturating_sub(was) as u64, phase.core_ms);
    })?;
    let n = semantic.encoded() - before;
    if n > 0 {
        pass.done(&format!("evidence span vectors: {} encoded ({:.1} s)", counted(n, "span"), t.elapsed().as_secs_f64()));
    }
    Ok(())
}

/// HAtten's paper vectors (the dense channel).
fn dense(lib: &Library, models: &Models, pass: &Pass, phase: &Phase) -> Result<()> {
    let encoder = match models.hatten() {
        Ok(e) => e,
        Err(e) => {
            pass.say(&format!("note: dense vectors not computed ({e}); BM25 and evidence channels still work"));
            return Ok(());
        }
    };
    let t = Instant::now();
    let s = crate::library::embed::embed_library(lib, &encoder, &|n| pass.begin(phase.what, phase.items, n, phase.core_ms), &|k| {
        pass.advance(k, phase.core_ms)
    })?;
    repaired(pass, &s.repaired);
    if s.embedded > 0 {
        let what = format!("dense vectors: {} encoded", counted(s.embedded, "paper"));
        pass.done(&done_line(&what, s.embedded, s.kept, t, &encoder.backend.to_string()));
    }
    Ok(())
}

/// The student's stand-in vectors (the citation channel) for the papers
/// that have no vector of the citation encoder's own.
fn stand_ins(lib: &Library, models: &Models, pass: &Pass, phase: &Phase) -> Result<()> {
    let weights = crate::library::student::student_weights(lib.dir())?;
    let teacher = match models.citation_encoder() {
        Ok(e) => e.fingerprint(),
        Err(e) => {
            pass.say(&format!("note: stand-in citation vectors not computed ({e})"));
            return Ok(());
        }
    };
    let student = crate::neural::encoder::HattenEncoder::from_weights(weights, &models.backend().device)?;
    let t = Instant::now();
    let threads = crate::neural::parallel::cores();
    let s = crate::library::embed::embed_student_vectors(
        lib,
        &student,
        &teacher,
        threads,
        &|n| pass.begin(phase.what, phase.items, n, phase.core_ms),
        &|k| pass.advance(k, phase.core_ms),
    )?;
    repaired(pass, &s.repaired);
    if s.embedded > 0 {
        let what = format!("stand-in citation vectors: {} encoded by the student", counted(s.embedded, "paper"));
        pass.done(&done_line(&what, s.embedded, s.kept, t, &counted(threads, "thread")));
    }
    Ok(())
}

/// The citation encoder's own paper vectors (resumable, on every core).
fn citation(lib: &Library, models: &Models, pass: &Pass, phase: &Phase) -> Result<()> {
    let encoder = match models.citation_encoder() {
        Ok(e) => e,
        Err(e) => {
            pass.say(&format!("note: citation vectors not computed ({e}); BM25 and evidence channels still work"));
            return Ok(());
        }
    };
    let t = Instant::now();
    let threads = crate::neural::parallel::cores();
    let s = crate::library::embed::embed_citation_vectors(
        lib,
        &encoder,
        threads,
        &|n| pass.begin(phase.what, phase.items, n, phase.core_ms),
        &|k| pass.advance(k, phase.core_ms),
    )?;
    repaired(pass, &s.repaired);
    if s.embedded > 0 {
        let what = format!("citation vectors: {} encoded", counted(s.embedded, "paper"));
        pass.done(&done_line(&what, s.embedded, s.kept, t, &counted(threads, "thread")));
    }
    Ok(())
}

/// Says how the citation channel answers without the encoder's own vectors.
fn hint_citation(lib: &Library) {
    if VectorStore::exists(&lib.student_vectors_dir()) {
        eprintln!(
            "note: the citation channel answers with the student's stand-in vectors; `citewise embed` (or the editor, in the \
             background) replaces them with the citation encoder's own (better, about 47 papers/s on 2 cores)"
        );
    } else if lib.papers().num_papers() > 0 {
        eprintln!("note: `citewise embed` adds the citation channel (papers found by meaning); it encodes every paper once");
    }
}

#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! Each stage of the pipeline on and off, per source, from what
//! `examples/rerank_features.rs` wrote for a split: every channel alone, the
//! fused prefetch, the whole pipeline (rerank stage, K_r
//! [`CPU_RERANK_DEPTH`]), and the pipeline without each signal of the rerank
//! stage (cross-encoder, citation cosine, cited-for), without its agreement
//! guard (channels that put the fused first paper first keep it first), and
//! without moving the papers the passage already cites (`already_cited`:
//! named by author and year, or by key) after all the others. Cells are
//! R@10 / MRR (over the top `EVAL_DEPTH`), as `citewise eval` reports them,
//! counted by paper: a result that is any record of a cited paper's work
//! (`cited_works`) finds it (`eval::harness::by_work`, `eval::metrics`).
//!
//! Nothing of the ranking is copied here: the replay calls the crate's own
//! code with `Fusion::default()`, so it follows the code as it stands.
//! Fusion is [`fuse`]; the rerank stage is [`Weights::of`] and [`combine`]
//! on the recorded signals; the move is [`AlreadyCited::move_last`] on the
//! recorded passage and records. A stage is turned off through the
//! settings the code reads: a signal by its weight set to 0 in the
//! `Fusion` value, the agreement guard by a `Weights::agreement` no list
//! can reach, the move by not making it.
//!
//! The fused top the stage reorders is the recommender's own (one entry per
//! work, as `same_work::collapse` folded it, which needs the library); below
//! it come the replay's fused papers that are no record of those works,
//! record by record. The example checks itself: it says in how many
//! contexts the replay's fused top K_r (folded by the records the
//! recommender folded) differs from the recommender's. Ties aside, a
//! difference means the features were written by other fusion code or
//! settings than `Fusion::default()` of this build (it says so too when the
//! settings recorded differ); write them again.
//!
//! cargo run --release --example rerank_ablation -- FEATURES.jsonl [FEATURES.jsonl ...]
//! cargo run --release --example rerank_ablation -- --fusion key=value,... FEATURES.jsonl ...
//! cargo run --release --example rerank_ablation -- --contexts FEATURES.jsonl ... > CONTEXTS.tsv
//!
//! `--fusion` replays other fusion settings (the fused top is then the
//! replay's own); `--contexts` writes one tab-separated line per context of
//! what a gate on the rerank stage could read and each context's R@10, RR
//! and nDCG@10 with and without the stage, for comparing gates with
//! paired bootstrap intervals (`eval::metrics::paired_bootstrap`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;

use anyhow::Context as _;
use serde::Deserialize;

use citewise::corpus::Paper;
use citewise::eval::harness::{by_work, EVAL_DEPTH};
use citewise::eval::metrics::{paired_bootstrap, score, Mean, Scores, RECALL_AT};
use citewise::pipeline::already_cited::AlreadyCited;
use citewise::pipeline::channel::ChannelOutput;
use citewise::pipeline::fusion::fuse;
use citewise::pipeline::rerank::{combine, Signals, Weights, CPU_RERANK_DEPTH};
use citewise::pipeline::{Candidate, ChannelId, ChannelScore, Fusion};

/// The recall cut-off of the table.
const RECALL_CUT_OFF: usize = 10;

/// R@`RECALL_CUT_OFF` of a context's scores.
fn recall_at_cut_off(s: &Scores) -> f64 {
    s.recall[RECALL_AT.iter().position(|&k| k == RECALL_CUT_OFF).expect("R@10 is among the cut-offs eval reports")]
}

/// One line of FEATURES.jsonl, as `examples/rerank_features.rs` writes it
/// (fields it writes that the replay does not read are left out).
#[derive(Deserialize)]
struct Line {
    source: String,
    cited: Vec<String>,
    #[serde(default)]
    cited_works: Vec<Vec<String>>,
    channels: HashMap<String, ListLine>,
    /// The order the recommender fused the lists in (none: `ChannelId::ALL`).
    #[serde(default)]
    channel_order: Vec<String>,
    coverage: f32,
    context: String,
    candidates: Vec<CandidateLine>,
    ce: Vec<f32>,
    cos: Option<Vec<f32>>,
    cited_for: Vec<Option<f32>>,
    #[serde(default)]
    fusion: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ListLine {
    conf: f32,
    ranked: Vec<String>,
    #[serde(default)]
    scores: Vec<f32>,
}

#[derive(Deserialize)]
struct CandidateLine {
    id: String,
    #[serde(default)]
    same_work: Vec<String>,
    channels: Vec<ChannelLine>,
    paper: Option<PaperLine>,
}

#[derive(Deserialize)]
struct ChannelLine {
    channel: String,
    rank: usize,
    score: f32,
}

#[derive(Deserialize)]
struct PaperLine {
    #[serde(default)]
    key: String,
    #[serde(default)]
    authors: Vec<String>,
    year: Option<i32>,
}

/// One context, in the crate's own types.
struct Context {
    source: String,
    cited: Vec<String>,
    /// Each cited paper's records, its own id first.
    works: Vec<Vec<String>>,
    /// Each channel's list, in the order the recommender fused them.
    outputs: Vec<(ChannelId, ChannelOutput)>,
    /// The query's coverage by the reranker's training field.
    coverage: f32,
    /// What the passage names.
    named: AlreadyCited,
    /// The recommender's fused top, one entry per work, before the papers
    /// the passage names were moved last.
    top: Vec<Candidate>,
    /// The rerank stage's signals of `top`, in its order.
    signals: Signals,
    /// The fusion settings the features were written with, if recorded.
    fusion: Option<serde_json::Value>,
}

fn channel_id(name: &str) -> anyhow::Result<ChannelId> {
    ChannelId::from_name(name).ok_or_else(|| anyhow::anyhow!("unknown channel `{name}` (known: {})", ChannelId::names()))
}

impl Context {
    fn of(mut line: Line) -> anyhow::Result<Context> {
        let order: Vec<ChannelId> = if line.channel_order.is_empty() {
            ChannelId::ALL.into_iter().filter(|c| line.channels.contains_key(c.name())).collect()
        } else {
            line.channel_order.iter().map(|n| channel_id(n)).collect::<anyhow::Result<_>>()?
        };
        let mut outputs = Vec::with_capacity(order.len());
        for id in order {
            let list = line.channels.remove(id.name()).with_context(|| format!("no list of channel `{id}`"))?;
            // Scores matter to fusion only when a single channel ran.
            let ranked = list.ranked.into_iter().enumerate().map(|(i, p)| (p, list.scores.get(i).copied().unwrap_or(0.0))).collect();
            outputs.push((id, ChannelOutput { confidence: list.conf, ..ChannelOutput::plain(ranked) }));
        }
        let mut top = Vec::with_capacity(line.candidates.len());
        for (i, c) in line.candidates.into_iter().enumerate() {
            let mut channels = Vec::with_capacity(c.channels.len());
            for s in &c.channels {
                channels.push(ChannelScore { channel: channel_id(&s.channel)?, rank: s.rank, score: s.score });
            }
            let paper = c.paper.map(|p| Paper { id: c.id.clone(), key: p.key, authors: p.authors, year: p.year, ..Paper::default() });
            top.push(Candidate { channels, paper, same_work: c.same_work, fused_rank: i + 1, ..Candidate::new(c.id) });
        }
        let works = if line.cited_works.is_empty() { line.cited.iter().map(|c| vec![c.clone()]).collect() } else { line.cited_works };
        Ok(Context {
            source: line.source,
            cited: line.cited,
            works,
            outputs,
            coverage: line.coverage,
            named: AlreadyCited::in_text(&line.context, &citewise::corpus::citation_markup::CiteGrammar::PLAIN),
            top,
            signals: Signals { rerank: line.ce, citation: line.cos, cited_for: line.cited_for },
            fusion: line.fusion,
        })
    }

    /// The evidence channel's confidence (0 when it did not run), as fusion
    /// and the rerank stage read it.
    fn evidence_confidence(&self) -> f32 {
        self.outputs.iter().find(|(id, _)| *id == ChannelId::Evidence).map_or(0.0, |(_, o)| o.confidence)
    }

    /// The entry of `top` each record of its works belongs to.
    fn work_of(&self) -> HashMap<&str, usize> {
        self.top.iter().enumerate().flat_map(|(i, c)| c.records().map(move |r| (r, i))).collect()
    }

    /// Whether the replay's fused top K_r, each work once (folded by the
    /// records the recommender folded), differs from the recommender's.
    fn differs(&self, fused: &[Candidate]) -> bool {
        let depth = CPU_RERANK_DEPTH.min(self.top.len());
        let work = self.work_of();
        let mut seen = HashSet::new();
        let replayed: Vec<Option<usize>> =
            fused.iter().map(|c| work.get(c.id.as_str()).copied()).filter(|w| w.is_none() || seen.insert(*w)).take(depth).collect();
        replayed.into_iter().ne((0..depth).map(Some))
    }

    /// The fused list as the rerank stage receives it, before the papers
    /// the passage names move: the recommender's top, then the replay's
    /// fused papers that are no record of its works, `EVAL_DEPTH` in all.
    fn prefetch(&self, fused: &[Candidate]) -> Vec<Candidate> {
        let work = self.work_of();
        if REPLAY_TOP.load(std::sync::atomic::Ordering::Relaxed) {
            // Under other fusion settings: the replay's own fused order,
            // each recorded work once (its entry as recorded, with the
            // records the recommender folded into it).
            let mut seen = HashSet::new();
            let mut list: Vec<Candidate> = fused
                .iter()
                .filter_map(|c| match work.get(c.id.as_str()) {
                    Some(&w) => seen.insert(w).then(|| self.top[w].clone()),
                    None => Some(c.clone()),
                })
                .collect();
            list.truncate(EVAL_DEPTH.max(CPU_RERANK_DEPTH));
            for (i, c) in list.iter_mut().enumerate() {
                c.fused_rank = i + 1;
            }
            return list;
        }
        let mut list = self.top.clone();
        list.extend(fused.iter().filter(|c| !work.contains_key(c.id.as_str())).cloned());
        list.truncate(EVAL_DEPTH.max(CPU_RERANK_DEPTH));
        for (i, c) in list.iter_mut().enumerate() {
            c.fused_rank = i + 1;
        }
        list
    }

    /// The pipeline's list with `stage`'s settings.
    fn pipeline(&self, fused: &[Candidate], stage: Stage) -> Vec<Candidate> {
        let mut list = self.prefetch(fused);
        if stage.move_named {
            self.named.move_last(&mut list);
        }
        // The signals of the top K_r, as the stage scored them (it scored
        // the recommender's top, so the reranked part stops at a paper
        // from below it: one only when the move brought it up).
        let at: HashMap<&str, usize> = self.top.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
        let order: Vec<usize> = list.iter().take(CPU_RERANK_DEPTH).map_while(|c| at.get(c.id.as_str()).copied()).collect();
        let pick = |scores: &[f32]| -> Option<Vec<f32>> { order.iter().map(|&i| scores.get(i).copied()).collect() };
        let signals = Signals {
            rerank: pick(&self.signals.rerank).unwrap_or_default(),
            citation: self.signals.citation.as_deref().and_then(pick),
            cited_for: order.iter().map(|&i| self.signals.cited_for.get(i).copied().flatten()).collect(),
        };
        let mut weights = Weights::of(&stage.fusion, self.evidence_confidence(), self.coverage);
        if !stage.agreement_guard {
            weights.agreement = usize::MAX;
        }
        // As the recommender: a stage whose weights are all 0 does not run.
        if !weights.off() {
            let (top, rest) = list.split_at_mut(order.len());
            combine(top, rest, &signals, weights);
        }
        list
    }

    /// R@10 and MRR of `ranked` (entries with the other records of their
    /// work), counted by paper as `citewise eval` counts them.
    fn scores(&self, ranked: &[(String, Vec<String>)]) -> Scores {
        let works: Vec<&Vec<String>> = self.works.iter().collect();
        let relevant: HashSet<String> = self.cited.iter().cloned().collect();
        score(&by_work(&ranked[..ranked.len().min(EVAL_DEPTH)], &works), &relevant)
    }
}

/// Whether the fused top is the replay's own (`--fusion`: other settings
/// than those the features were written with) rather than the recorded one.
static REPLAY_TOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The rerank stage's settings in one row of the table.
#[derive(Clone, Copy)]
struct Stage {
    fusion: Fusion,
    agreement_guard: bool,
    move_named: bool,
}

/// What one row of the table ranks by.
enum Ranker {
    Alone(ChannelId),
    Prefetch,
    Pipeline(Stage),
}

fn entries(list: Vec<Candidate>) -> Vec<(String, Vec<String>)> {
    list.into_iter().map(|c| (c.id, c.same_work)).collect()
}

fn read(path: &Path) -> anyhow::Result<Vec<Context>> {
    let file = std::fs::File::open(path).with_context(|| path.display().to_string())?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{} line {} (written by this version's examples/rerank_features.rs?)", path.display(), i + 1);
        let parsed: Line = serde_json::from_str(&line).with_context(at)?;
        out.push(Context::of(parsed).with_context(at)?);
    }
    Ok(out)
}

fn table(path: &Path, fusion: Fusion) -> anyhow::Result<()> {
    let contexts = read(path)?;
    let at10 = RECALL_AT.iter().position(|&k| k == RECALL_CUT_OFF).context("R@10 is among the cut-offs eval reports")?;
    let fused: Vec<Vec<Candidate>> = contexts.iter().map(|c| fuse(&c.outputs, &fusion)).collect();
    let differing = contexts.iter().zip(&fused).filter(|(c, f)| c.differs(f)).count();
    let other_settings = contexts
        .iter()
        .filter(|c| c.fusion.as_ref().is_some_and(|v| serde_json::from_value::<Fusion>(v.clone()).map_or(true, |f| f != fusion)))
        .count();

    let whole = Stage { fusion, agreement_guard: true, move_named: true };
    let mut rows: Vec<(String, Ranker)> = ChannelId::ALL.into_iter().map(|c| (format!("{} alone", c.name()), Ranker::Alone(c))).collect();
    rows.push(("fused prefetch".into(), Ranker::Prefetch));
    rows.push(("**whole pipeline**".into(), Ranker::Pipeline(whole)));
    rows.push((
        "the stage for every query, whatever the evidence".into(),
        Ranker::Pipeline(Stage { fusion: Fusion { rerank_min_evidence: -1.0, ..fusion }, ..whole }),
    ));
    rows.push(("without the cross-encoder".into(), Ranker::Pipeline(Stage { fusion: Fusion { rerank_weight: 0.0, ..fusion }, ..whole })));
    rows.push((
        "without the citation cosine".into(),
        Ranker::Pipeline(Stage { fusion: Fusion { rerank_citation_weight: 0.0, ..fusion }, ..whole }),
    ));
    rows.push(("without cited-for".into(), Ranker::Pipeline(Stage { fusion: Fusion { cited_for_weight: 0.0, ..fusion }, ..whole })));
    rows.push(("without the agreement guard".into(), Ranker::Pipeline(Stage { agreement_guard: false, ..whole })));
    rows.push(("without moving already-cited papers last".into(), Ranker::Pipeline(Stage { move_named: false, ..whole })));

    let mut results: Vec<(String, BTreeMap<String, Mean>)> = Vec::new();
    // Each row's scores per context, for the intervals against the prefetch.
    let mut per_context: Vec<Vec<Scores>> = Vec::new();
    for (name, ranker) in &rows {
        let mut by_source: BTreeMap<String, Mean> = BTreeMap::new();
        let mut each = Vec::with_capacity(contexts.len());
        for (c, f) in contexts.iter().zip(&fused) {
            let ranked: Vec<(String, Vec<String>)> = match ranker {
                Ranker::Alone(id) => c
                    .outputs
                    .iter()
                    .find(|(ch, _)| ch == id)
                    .map(|(_, o)| o.ranked.iter().map(|(p, _)| (p.clone(), Vec::new())).collect())
                    .unwrap_or_default(),
                Ranker::Prefetch => {
                    let mut list = c.prefetch(f);
                    c.named.move_last(&mut list);
                    entries(list)
                }
                Ranker::Pipeline(stage) => entries(c.pipeline(f, *stage)),
            };
            let s = c.scores(&ranked);
            by_source.entry("all".into()).or_default().add(&s);
            by_source.entry(c.source.clone()).or_default().add(&s);
            each.push(s);
        }
        results.push((name.clone(), by_source));
        per_context.push(each);
    }

    let mut sources: Vec<(&String, usize)> = results[0].1.iter().map(|(s, m)| (s, m.n)).collect();
    sources.sort_by(|a, b| b.1.cmp(&a.1).then((a.0 != "all").cmp(&(b.0 != "all"))).then(a.0.cmp(b.0)));
    println!(
        "{}: {} contexts; fused top {CPU_RERANK_DEPTH} differs from the recommender's in {differing} \
         (each work once, folded by the records the recommender folded)",
        path.display(),
        contexts.len()
    );
    if other_settings > 0 {
        println!("(in {other_settings} of them the features were written with other fusion settings than `Fusion::default()`)");
    }
    println!("| stage | {} |", sources.iter().map(|(s, n)| format!("{s} ({n})")).collect::<Vec<_>>().join(" | "));
    println!("{}|", "|---".repeat(sources.len() + 1));
    for (name, by_source) in &results {
        let cells: Vec<String> = sources
            .iter()
            .map(|(s, _)| {
                let m = by_source.get(*s).map(Mean::mean).unwrap_or_default();
                format!("{:.3} / {:.3}", m.recall[at10], m.mrr)
            })
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    println!();
    // Each pipeline row against the fused prefetch, all contexts: the mean
    // change and its paired bootstrap interval (95 %, 2,000 resamples).
    let prefetch = rows.iter().position(|(_, r)| matches!(r, Ranker::Prefetch)).context("the prefetch row")?;
    let metric = |row: usize, pick: fn(&Scores) -> f64| per_context[row].iter().map(pick).collect::<Vec<f64>>();
    type Pick = (&'static str, fn(&Scores) -> f64);
    let picks: [Pick; 3] = [("R@10", recall_at_cut_off), ("MRR", |s| s.mrr), ("nDCG@10", |s| s.ndcg10)];
    println!("| against the fused prefetch (all) | {} |", picks.map(|(n, _)| n).join(" | "));
    println!("|---|---|---|---|");
    for (row, (name, ranker)) in rows.iter().enumerate() {
        if matches!(ranker, Ranker::Pipeline(_)) {
            let cells = picks.map(|(_, pick)| {
                let p = paired_bootstrap(&metric(prefetch, pick), &metric(row, pick), 2000, 0.95);
                format!("{:+.3} [{:+.3}, {:+.3}]", p.diff, p.lo, p.hi)
            });
            println!("| {name} | {} |", cells.join(" | "));
        }
    }
    println!();
    Ok(())
}

/// Spearman's rank correlation of two score lists of one length (0 when
/// either is constant or shorter than 2).
fn spearman(a: &[f32], b: &[f32]) -> f64 {
    let ranks = |x: &[f32]| -> Vec<f64> {
        let mut r = vec![0.0; x.len()];
        let mut order: Vec<usize> = (0..x.len()).collect();
        order.sort_by(|&i, &j| x[j].total_cmp(&x[i]));
        for (rank, &i) in order.iter().enumerate() {
            r[i] = rank as f64;
        }
        r
    };
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    if ra.len() < 2 {
        return 0.0;
    }
    let mean = (n - 1.0) / 2.0;
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - mean) * (y - mean)).sum();
    let var: f64 = ra.iter().map(|x| (x - mean).powi(2)).sum();
    if var == 0.0 {
        0.0
    } else {
        cov / var
    }
}

/// One tab-separated line per context: what a gate on the rerank stage
/// could read (field coverage, evidence confidence, the cross-encoder's
/// scores over the top K_r and their agreement with the fused order and
/// the citation cosine, how many channels put the fused first paper
/// first) and R@10 / RR / nDCG@10 of the prefetch, the pipeline with the
/// stage run for every query (`rerank_min_evidence` −1), the
/// pipeline with the cross-encoder's gate open and without the
/// cross-encoder.
fn dump(path: &Path, fusion: Fusion, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let contexts = read(path)?;
    let whole = Stage { fusion, agreement_guard: true, move_named: true };
    let open = Stage { fusion: Fusion { rerank_field_lo: 0.0, rerank_field_hi: 0.0, ..fusion }, ..whole };
    let no_ce = Stage { fusion: Fusion { rerank_weight: 0.0, ..fusion }, ..whole };
    for c in &contexts {
        let f = fuse(&c.outputs, &fusion);
        let k = CPU_RERANK_DEPTH.min(c.signals.rerank.len());
        let ce = &c.signals.rerank[..k];
        let position: Vec<f32> = (0..k).map(|i| -(i as f32)).collect();
        let mut sorted = ce.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let mean = ce.iter().sum::<f32>() / k.max(1) as f32;
        let sd = (ce.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / k.max(1) as f32).sqrt();
        let ce_top = (0..k).max_by(|&i, &j| ce[i].total_cmp(&ce[j])).map_or(0, |i| i + 1);
        let rho_cos = c.signals.citation.as_deref().map_or(0.0, |cos| spearman(ce, &cos[..k.min(cos.len())]));
        let agree_first = c.top.first().map_or(0, |t| t.channels.iter().filter(|s| s.rank == 1).count());
        let mut prefetch = c.prefetch(&f);
        c.named.move_last(&mut prefetch);
        let mut cells = vec![
            c.source.clone(),
            format!("{:.3}", c.coverage),
            format!("{:.3}", c.evidence_confidence()),
            format!("{:.4}", sorted.first().copied().unwrap_or(0.0)),
            format!("{:.4}", sorted.first().copied().unwrap_or(0.0) - sorted.get(1).copied().unwrap_or(0.0)),
            format!("{mean:.4}"),
            format!("{sd:.4}"),
            format!("{:.3}", spearman(ce, &position)),
            format!("{rho_cos:.3}"),
            ce_top.to_string(),
            agree_first.to_string(),
        ];
        for list in [prefetch, c.pipeline(&f, whole), c.pipeline(&f, open), c.pipeline(&f, no_ce)] {
            let s = c.scores(&entries(list));
            cells.extend([format!("{:.3}", recall_at_cut_off(&s)), format!("{:.4}", s.mrr), format!("{:.4}", s.ndcg10)]);
        }
        writeln!(out, "{}", cells.join("\t"))?;
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.first().is_some_and(|a| a == "--contexts") {
        let mut out = std::io::stdout().lock();
        use std::io::Write as _;
        writeln!(
            out,
            "source\tcoverage\tevconf\tce_max\tce_gap\tce_mean\tce_sd\trho_fused\trho_cos\tce_top\tagree_first\t\
             pre_r10\tpre_rr\tpre_ndcg\tpipe_r10\tpipe_rr\tpipe_ndcg\topen_r10\topen_rr\topen_ndcg\tnoce_r10\tnoce_rr\tnoce_ndcg"
        )?;
        for p in &paths[1..] {
            dump(Path::new(p), Fusion { rerank_min_evidence: -1.0, ..Fusion::default() }, &mut out)?;
        }
        return Ok(());
    }
    anyhow::ensure!(!paths.is_empty(), "usage: cargo run --release --example rerank_ablation -- FEATURES.jsonl [FEATURES.jsonl ...]");
    // `--fusion key=value,...`: the tables under other fusion settings.
    let (fusion, paths) = match paths.iter().position(|a| a == "--fusion") {
        Some(i) => {
            let spec = paths.get(i + 1).context("--fusion needs key=value,...")?;
            let rest: Vec<String> = paths.iter().enumerate().filter(|&(j, _)| j != i && j != i + 1).map(|(_, p)| p.clone()).collect();
            REPLAY_TOP.store(true, std::sync::atomic::Ordering::Relaxed);
            (Fusion::default().with_overrides(spec)?, rest)
        }
        None => (Fusion::default(), paths),
    };
    for p in &paths {
        table(Path::new(p), fusion)?;
    }
    Ok(())
}

//! Text tables of evaluation reports, and side-by-side comparison.

use std::fmt::Write;

use super::harness::EvalReport;
use super::metrics::RECALL_AT;

/// The per-source table that `citewise eval` prints.
pub fn table(r: &EvalReport) -> String {
    let mut s = String::new();
    let c = &r.config;
    let n = r.sources.first().map_or(0, |s| s.n);
    let _ = write!(s, "split={} context={} stages={} papers={}", c.split, c.context(n), c.stages.join(","), c.papers);
    if r.rerank_depth > 0 {
        let _ = write!(s, " reranked={}", r.rerank_depth);
    }
    let _ = write!(s, " papers-as-of={}", c.as_of(n));
    let _ = writeln!(s);
    let _ = write!(s, "{:<12} {:>6}", "source", "n");
    let shown = RECALL_AT.iter().filter(|k| **k <= c.depth.max(100)).count();
    for k in &RECALL_AT[..shown] {
        let _ = write!(s, " {:>7}", format!("R@{k}"));
    }
    let _ = writeln!(s, " {:>7} {:>8}", "MRR", "nDCG@10");
    for src in &r.sources {
        let _ = write!(s, "{:<12} {:>6}", src.source, src.n);
        for v in &src.scores.recall[..shown] {
            let _ = write!(s, " {v:>7.3}");
        }
        let _ = writeln!(s, " {:>7.3} {:>8.3}", src.scores.mrr, src.scores.ndcg10);
    }
    let _ =
        writeln!(s, "latency per query: p50 {:.2} ms, p95 {:.2} ms, mean {:.2} ms", r.latency.p50_ms, r.latency.p95_ms, r.latency.mean_ms);
    if r.by_record.iter().zip(&r.sources).any(|(a, b)| a.scores != b.scores) {
        let rows: Vec<String> = r.by_record.iter().map(|s| format!("{} {:.3}/{:.3}", s.source, s.scores.recall[2], s.scores.mrr)).collect();
        let _ = writeln!(s, "counted by record, the cited record itself only (R@{}/MRR): {}", RECALL_AT[2], rows.join(", "));
    }
    if let Some(share) = r.with_evidence_at10 {
        let _ = writeln!(s, "top-10 results showing evidence: {:.1}%", share * 100.0);
    }
    if r.stage_latency.len() > 1 {
        let stages: Vec<String> = r.stage_latency.iter().map(|(name, l)| format!("{name} {:.2}/{:.2}", l.p50_ms, l.p95_ms)).collect();
        let _ = writeln!(s, "per stage (p50/p95 ms): {}", stages.join(", "));
    }
    s
}

/// Each context's ranked papers as a TREC run (`id Q0 paper rank score
/// citewise`, score = papers ranked − rank + 1, so trec_eval keeps the
/// order): what `citewise eval --run` writes. Identifiers hold no spaces
/// in a benchmark; any that do are written with `_` for them.
pub fn trec_run(r: &EvalReport) -> String {
    let field = |s: &str| s.replace(char::is_whitespace, "_");
    let mut s = String::new();
    for c in &r.contexts {
        let n = c.ranked.len();
        for (i, paper) in c.ranked.iter().enumerate() {
            let _ = writeln!(s, "{} Q0 {} {} {} citewise", field(&c.id), field(paper), i + 1, n - i);
        }
    }
    s
}

/// Two reports side by side: R@10, R@100, MRR, nDCG@10 per source, with deltas (b − a).
pub fn compare(a: &EvalReport, b: &EvalReport, a_name: &str, b_name: &str) -> String {
    let mut s = String::new();
    let n = |r: &EvalReport| r.sources.first().map_or(0, |s| s.n);
    let _ = writeln!(
        s,
        "a = {a_name} (stages {}, context {}, papers as of {})",
        a.config.stages.join(","),
        a.config.context(n(a)),
        a.config.as_of(n(a))
    );
    let _ = writeln!(
        s,
        "b = {b_name} (stages {}, context {}, papers as of {})",
        b.config.stages.join(","),
        b.config.context(n(b)),
        b.config.as_of(n(b))
    );
    let _ = writeln!(
        s,
        "{:<12} {:>6} | {:>21} | {:>21} | {:>21} | {:>21}",
        "source", "n", "R@10 a / b / Δ", "R@100 a / b / Δ", "MRR a / b / Δ", "nDCG@10 a / b / Δ"
    );
    for sa in &a.sources {
        let Some(sb) = b.sources.iter().find(|x| x.source == sa.source) else { continue };
        let cell = |x: f64, y: f64| format!("{x:.3} {y:.3} {:+.3}", y - x);
        let _ = writeln!(
            s,
            "{:<12} {:>6} | {:>21} | {:>21} | {:>21} | {:>21}",
            sa.source,
            sa.n,
            cell(sa.scores.recall[2], sb.scores.recall[2]),
            cell(sa.scores.recall[4], sb.scores.recall[4]),
            cell(sa.scores.mrr, sb.scores.mrr),
            cell(sa.scores.ndcg10, sb.scores.ndcg10),
        );
    }
    let _ = writeln!(
        s,
        "latency p50: {:.2} ms → {:.2} ms; p95: {:.2} ms → {:.2} ms",
        a.latency.p50_ms, b.latency.p50_ms, a.latency.p95_ms, b.latency.p95_ms
    );
    s
}

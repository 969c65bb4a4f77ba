//! Which pipelines an evaluation runs, in which order, and which table of
//! the whole report each one fills: the pipeline as asked (its latencies
//! are the cold ones, so it runs first), the same pipeline at the other
//! rerank depths (deepest first, so that the shallower runs find their pair
//! scores computed), and, when several stages are fused, each channel alone
//! and the channels fused without the rerank stage.

use super::harness::EvalReport;
use crate::pipeline::Stages;

/// Where a run's report goes in the whole evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The pipeline as asked, at the first rerank depth.
    Main,
    /// The same pipeline at another rerank depth: `by_rerank_depth[i]`, in
    /// the order the depths were given.
    RerankDepth(usize),
    /// A channel alone, or the channels fused without the rerank stage:
    /// `alone[i]`.
    Alone(usize),
}

/// One evaluation run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub stages: Stages,
    /// Fused candidates the rerank stage reorders (K_r); none: the
    /// recommender's own.
    pub rerank_depth: Option<usize>,
    pub slot: Slot,
}

/// The runs of an evaluation, in the order they run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    runs: Vec<Run>,
}

impl Plan {
    /// The runs for `stages` (what `--stages` asked, else every stage that
    /// can run), at `rerank_depths` (`--rerank-depth`; none given: the
    /// recommender's own), and, unless `fused_only`, each channel alone
    /// when several stages are fused (the rerank stage counts as one).
    pub fn new(stages: &Stages, rerank_depths: &[usize], fused_only: bool) -> Plan {
        let depths: Vec<Option<usize>> =
            if rerank_depths.is_empty() { vec![None] } else { rerank_depths.iter().copied().map(Some).collect() };
        let mut runs = vec![Run { stages: stages.clone(), rerank_depth: depths[0], slot: Slot::Main }];
        if stages.rerank {
            // Deepest first: the shallower runs then find their pair scores
            // computed (so only the first run's latencies are cold).
            let mut rest: Vec<(usize, Option<usize>)> = depths[1..].iter().copied().enumerate().collect();
            rest.sort_by_key(|&(_, d)| std::cmp::Reverse(d));
            runs.extend(rest.into_iter().map(|(i, d)| Run { stages: stages.clone(), rerank_depth: d, slot: Slot::RerankDepth(i) }));
        }
        if stages.names().len() > 1 && !fused_only {
            let channels = Stages { rerank: false, ..stages.clone() };
            let mut alone: Vec<Stages> = channels.channels.iter().map(|&id| Stages { channels: vec![id], rerank: false }).collect();
            if stages.rerank && channels.channels.len() > 1 {
                alone.push(channels);
            }
            runs.extend(alone.into_iter().enumerate().map(|(i, stages)| Run { stages, rerank_depth: None, slot: Slot::Alone(i) }));
        }
        Plan { runs }
    }

    /// The runs, in the order they run (the main one first).
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// Does each run with `run_one`, in order (stopping at the first
    /// error), and puts each result in its slot.
    pub fn execute<R, E>(&self, mut run_one: impl FnMut(&Run) -> Result<R, E>) -> Result<Done<R>, E> {
        let mut main = None;
        let mut by_rerank_depth = Vec::new();
        let mut alone = Vec::new();
        for run in &self.runs {
            let result = run_one(run)?;
            match run.slot {
                Slot::Main => main = Some(result),
                Slot::RerankDepth(i) => by_rerank_depth.push((i, result)),
                Slot::Alone(i) => alone.push((i, result)),
            }
        }
        by_rerank_depth.sort_by_key(|(i, _)| *i);
        alone.sort_by_key(|(i, _)| *i);
        Ok(Done {
            main: main.expect("a plan's first run is the main one"),
            by_rerank_depth: by_rerank_depth.into_iter().map(|(_, r)| r).collect(),
            alone: alone.into_iter().map(|(_, r)| r).collect(),
        })
    }
}

/// The results of a plan's runs, by slot.
#[derive(Debug, Clone, PartialEq)]
pub struct Done<R> {
    pub main: R,
    /// In the order the depths were given.
    pub by_rerank_depth: Vec<R>,
    /// The channels alone, in the pipeline's order, then the channels fused
    /// without the rerank stage.
    pub alone: Vec<R>,
}

impl Done<EvalReport> {
    /// The whole evaluation: the main report, with the others in its
    /// `alone` and `by_rerank_depth`.
    pub fn into_report(self) -> EvalReport {
        let mut report = self.main;
        report.alone.extend(self.alone);
        report.by_rerank_depth = self.by_rerank_depth;
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::ChannelId::{Bm25, Citation, Evidence, Hatten};

    fn stages(channels: &[crate::pipeline::ChannelId], rerank: bool) -> Stages {
        Stages { channels: channels.to_vec(), rerank }
    }

    /// Each run as (stage names, depth, slot).
    fn runs(plan: &Plan) -> Vec<(String, Option<usize>, Slot)> {
        plan.runs().iter().map(|r| (r.stages.names().join("+"), r.rerank_depth, r.slot)).collect()
    }

    fn run(names: &str, depth: Option<usize>, slot: Slot) -> (String, Option<usize>, Slot) {
        (names.to_string(), depth, slot)
    }

    #[test]
    fn every_stage_runs_fused_then_each_channel_alone_then_the_channels_without_the_reranker() {
        let plan = Plan::new(&stages(&[Bm25, Evidence, Citation, Hatten], true), &[], false);
        assert_eq!(
            runs(&plan),
            [
                run("bm25+evidence+citation+hatten+rerank", None, Slot::Main),
                run("bm25", None, Slot::Alone(0)),
                run("evidence", None, Slot::Alone(1)),
                run("citation", None, Slot::Alone(2)),
                run("hatten", None, Slot::Alone(3)),
                run("bm25+evidence+citation+hatten", None, Slot::Alone(4)),
            ]
        );
    }

    #[test]
    fn fused_only_runs_the_pipeline_as_asked_at_every_depth() {
        let plan = Plan::new(&stages(&[Bm25, Evidence], true), &[20, 50, 10], true);
        assert_eq!(
            runs(&plan),
            [
                run("bm25+evidence+rerank", Some(20), Slot::Main),
                run("bm25+evidence+rerank", Some(50), Slot::RerankDepth(0)),
                run("bm25+evidence+rerank", Some(10), Slot::RerankDepth(1)),
            ]
        );
    }

    #[test]
    fn other_depths_run_deepest_first_and_only_with_the_reranker() {
        let plan = Plan::new(&stages(&[Bm25, Evidence], true), &[10, 30, 50, 30], false);
        let depths: Vec<(Option<usize>, Slot)> = plan.runs().iter().map(|r| (r.rerank_depth, r.slot)).collect();
        assert_eq!(
            depths[..4],
            [(Some(10), Slot::Main), (Some(50), Slot::RerankDepth(1)), (Some(30), Slot::RerankDepth(0)), (Some(30), Slot::RerankDepth(2)),]
        );
        // Without the rerank stage the other depths change nothing: not run.
        let plan = Plan::new(&stages(&[Bm25, Evidence], false), &[10, 30], false);
        assert_eq!(
            runs(&plan),
            [run("bm25+evidence", Some(10), Slot::Main), run("bm25", None, Slot::Alone(0)), run("evidence", None, Slot::Alone(1))]
        );
    }

    #[test]
    fn one_channel_runs_alone_only_beside_the_reranker() {
        assert_eq!(runs(&Plan::new(&stages(&[Bm25], false), &[], false)), [run("bm25", None, Slot::Main)]);
        assert_eq!(
            runs(&Plan::new(&stages(&[Evidence], true), &[], false)),
            [run("evidence+rerank", None, Slot::Main), run("evidence", None, Slot::Alone(0))]
        );
    }

    #[test]
    fn results_go_to_their_slots_in_the_order_asked() {
        let plan = Plan::new(&stages(&[Bm25, Citation], true), &[10, 30, 50], false);
        let mut order = Vec::new();
        let done = plan
            .execute(|r| -> Result<String, ()> {
                let label = format!("{}@{:?}", r.stages.names().join("+"), r.rerank_depth);
                order.push(label.clone());
                Ok(label)
            })
            .unwrap();
        assert_eq!(order[1..3], ["bm25+citation+rerank@Some(50)", "bm25+citation+rerank@Some(30)"], "deepest first");
        assert_eq!(done.main, "bm25+citation+rerank@Some(10)");
        assert_eq!(done.by_rerank_depth, ["bm25+citation+rerank@Some(30)", "bm25+citation+rerank@Some(50)"]);
        assert_eq!(done.alone, ["bm25@None", "citation@None", "bm25+citation@None"]);
    }

    #[test]
    fn the_first_error_stops_the_plan() {
        let plan = Plan::new(&stages(&[Bm25, Evidence], false), &[], false);
        let mut ran = 0;
        let result = plan.execute(|r| {
            ran += 1;
            if r.slot == Slot::Alone(0) {
                Err("no index")
            } else {
                Ok(())
            }
        });
        assert_eq!((result, ran), (Err("no index"), 2));
    }
}

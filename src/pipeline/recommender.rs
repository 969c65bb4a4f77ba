//! The `Recommender`: the one query path shared by the CLI, the evaluation
//! harness and the editor.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::channel::{Bm25Channel, Channel, ChannelOutput, EvidenceSnippet, ALL_CHANNELS};
use super::citation_channel::{open_citation_vectors, CitationChannel, CITATION};
use super::cited_for::CitedFor;
use super::dense_channel::DenseChannel;
use super::evidence_channel::{snippet, EvidenceChannel, SNIPPETS_PER_PAPER};
use super::own_words::{best_sentences, OWN_SENTENCES};
use super::paper_similarity::{PaperSimilarity, PaperText};
use super::query::Query;
use super::semantic_spans::SemanticSpans;
use crate::corpus::Paper;
use crate::error::{Error, Result};
use crate::index::vectors::VectorStore;
use crate::library::Library;
use crate::neural::bi_encoder::shared_citation_encoder;
use crate::neural::encoder::shared_encoder;
use crate::neural::reranker::{shared_reranker, Reranker};

/// Candidates each channel fetches before fusion.
pub const DEFAULT_PREFETCH: usize = 100;

/// Fused candidates the reranker reorders (K_r) on the CPU: each one more
/// costs ~60 ms on 2 cores, and the end-to-end budget there is 2 s.
pub const DEFAULT_RERANK_DEPTH: usize = 20;

/// K_r when the reranker runs on a hardware GPU: the deepest that keeps a
/// query within the 300 ms budget there (p50 ~190 ms on an H100; 200
/// candidates took ~400 ms).
pub const GPU_RERANK_DEPTH: usize = 100;

/// The default K_r for a reranker (none: no rerank stage, the CPU depth).
pub fn default_rerank_depth(reranker: Option<&Reranker>) -> usize {
    if reranker.is_some_and(|r| r.on_gpu) {
        GPU_RERANK_DEPTH
    } else {
        DEFAULT_RERANK_DEPTH
    }
}

/// The name of the rerank stage (in `--stages`, timings and results).
pub const RERANK: &str = "rerank";

/// The name of the bi-encoder's ranks within the rerank stage.
pub const SEMANTIC: &str = "semantic";

/// The name of the ranks by what other papers cited each candidate for
/// (within the rerank stage).
pub const CITED_FOR: &str = "cited-for";

/// How one channel ranked a candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChannelScore {
    pub channel: &'static str,
    /// 1-based rank within the channel.
    pub rank: usize,
    pub score: f32,
}

/// A recommended paper.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub id: String,
    /// Final score (fused when several channels ran).
    pub score: f32,
    /// Every channel that found the paper.
    pub channels: Vec<ChannelScore>,
    /// The stored record; absent when the request asked for ids only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paper: Option<Paper>,
    /// Spans of sentences in which other papers cited this one.
    pub evidence: Vec<EvidenceSnippet>,
    /// The sentences of the paper's own abstract that best match the query
    /// (shown when no evidence cites it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub own_words: Vec<String>,
    /// 1-based rank after fusing the channels (before reranking).
    pub fused_rank: usize,
    /// The reranker's rank and score (0..1), when it ran on this paper.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<ChannelScore>,
    /// The citation bi-encoder's rank and cosine among the reranked papers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic: Option<ChannelScore>,
    /// Rank and best cosine of the query to the evidence spans citing this
    /// paper, among the reranked papers that have any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cited_for: Option<ChannelScore>,
}

/// The answer to a query.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Recommendations {
    /// The last stage that contributed (a channel name).
    pub stage: String,
    /// Whether every stage has run (false for the early results of a stream).
    pub complete: bool,
    pub candidates: Vec<Candidate>,
    /// Wall time per stage, in order.
    #[serde(serialize_with = "ser_timings")]
    pub timings: Vec<(String, Duration)>,
    /// Changes made to the query (e.g. truncation).
    pub notices: Vec<String>,
}

/// The notice of a complete answer with no paper in it.
pub const NO_MATCH: &str = "no paper in the library matched the query's words (is it in the library's language?)";

/// The notice of a complete answer whose papers only the channels that
/// compare meaning found, though the word-matching ones ran.
pub const MEANING_ONLY: &str =
    "no paper in the library matched the query's words; these are only near it by meaning (is it in the library's language?)";

/// The channels that match the query's words.
const WORD_CHANNELS: [&str; 2] = ["bm25", "evidence"];

impl Recommendations {
    /// Says so in the notices when every stage ran and nothing was found
    /// (e.g. a query in a script the library's papers are not written in),
    /// or when the word-matching channels ran and found none of the papers
    /// (then only a dense channel's nearest neighbours are left, which for
    /// a language the encoders do not know are close to arbitrary).
    fn noting_no_results(mut self) -> Recommendations {
        if !self.complete {
            return self;
        }
        if self.candidates.is_empty() {
            self.notices.push(NO_MATCH.to_string());
        } else {
            let words_ran = self.timings.iter().any(|(stage, _)| WORD_CHANNELS.contains(&stage.as_str()));
            let words_found = self.candidates.iter().any(|c| c.channels.iter().any(|ch| WORD_CHANNELS.contains(&ch.channel)));
            if words_ran && !words_found {
                self.notices.push(MEANING_ONLY.to_string());
            }
        }
        self
    }
}

fn ser_timings<S: serde::Serializer>(t: &[(String, Duration)], s: S) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(t.len()))?;
    for (k, d) in t {
        m.serialize_entry(&format!("{k}_ms"), &(d.as_secs_f64() * 1000.0))?;
    }
    m.end()
}

/// How channel lists are fused: weighted reciprocal-rank fusion in which
/// each list weighs as much as its channel is confident for this query.
/// The evidence list counts in proportion to the evidence channel's
/// confidence (lexical and semantic match of its best spans; none at or
/// below `min_confidence`); the BM25 list can gain weight when its best
/// paper stands out from the second. Defaults tuned on the benchmark's
/// `val` split.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Fusion {
    pub rrf_k: f32,
    /// Weight of the evidence list at full confidence.
    pub evidence_weight: f32,
    /// Evidence confidence (0..=1, see `EvidenceChannel::confidence`) at
    /// and below which the evidence list is ignored.
    pub min_confidence: f32,
    /// BM25 weighs `1 + bm25_gap_weight × (s1 − s2) / s1`.
    pub bm25_gap_weight: f32,
    /// Weight of the dense (HAtten) list. With the shipped encoder, 0.5 /
    /// 0.75 / 1 are alike on `val` beside BM25, evidence and citation (R@10
    /// 0.636 / 0.638 / 0.638, MRR 0.452 / 0.455 / 0.454; without HAtten
    /// 0.628 / 0.439), and `val` is nearly all scisummnet, where HAtten is
    /// strongest. 0.5 costs sdp-act (no `val` contexts, HAtten weakest)
    /// less on `test` after rerank (R@10 0.596 vs 0.581 at 0.75; the
    /// citation channel alone 0.597).
    #[serde(default = "default_hatten_weight")]
    pub hatten_weight: f32,
    /// Weight of the citation channel's list (the citation bi-encoder's
    /// nearest papers). 0.75: on `val` as good as 0.5 (R@10 0.628) and
    /// close to 1 on two sources held out of the evidence database.
    #[serde(default = "default_citation_weight")]
    pub citation_weight: f32,
    /// Weight of the reranker's order against the fused order among the
    /// reranked candidates (both by reciprocal rank with `rrf_k`).
    #[serde(default = "default_rerank_weight")]
    pub rerank_weight: f32,
    /// Weight of the citation bi-encoder's order among the reranked
    /// candidates (by reciprocal rank with `rrf_k`).
    #[serde(default = "default_semantic_weight")]
    pub semantic_weight: f32,
    /// Weight of the cited-for order (see `CitedFor`) in the rerank stage
    /// when the evidence channel is fully confident; it scales with that
    /// confidence (`Fusion::cited_for_weight_at`).
    #[serde(default = "default_cited_for_weight")]
    pub cited_for_weight: f32,
}

fn default_semantic_weight() -> f32 {
    Fusion::default().semantic_weight
}

fn default_cited_for_weight() -> f32 {
    Fusion::default().cited_for_weight
}

fn default_citation_weight() -> f32 {
    Fusion::default().citation_weight
}

fn default_hatten_weight() -> f32 {
    Fusion::default().hatten_weight
}

fn default_rerank_weight() -> f32 {
    Fusion::default().rerank_weight
}

impl Default for Fusion {
    fn default() -> Fusion {
        Fusion {
            rrf_k: 5.0,
            evidence_weight: 2.0,
            min_confidence: 0.0,
            bm25_gap_weight: 0.0,
            hatten_weight: 0.5,
            citation_weight: 0.75,
            rerank_weight: 0.5,
            semantic_weight: 0.25,
            cited_for_weight: 0.5,
        }
    }
}

impl Fusion {
    /// Parses `key=value,...` overrides (any field's name as the key).
    pub fn with_overrides(mut self, spec: &str) -> Result<Fusion> {
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| Error::InvalidQuery(format!("fusion setting `{part}` is not key=value")))?;
            let v: f32 = v.trim().parse().map_err(|_| Error::InvalidQuery(format!("fusion setting `{part}`: not a number")))?;
            match k.trim() {
                "rrf_k" => self.rrf_k = v,
                "evidence_weight" => self.evidence_weight = v,
                "min_confidence" => self.min_confidence = v,
                "bm25_gap_weight" => self.bm25_gap_weight = v,
                "hatten_weight" => self.hatten_weight = v,
                "citation_weight" => self.citation_weight = v,
                "rerank_weight" => self.rerank_weight = v,
                "semantic_weight" => self.semantic_weight = v,
                "cited_for_weight" => self.cited_for_weight = v,
                other => return Err(Error::InvalidQuery(format!("unknown fusion setting `{other}`"))),
            }
        }
        Ok(self)
    }

    /// The weight of the cited-for order for a query whose evidence
    /// confidence is `confidence`: what other authors cited a paper for
    /// speaks to the query only as far as the evidence database speaks of
    /// its claim at all. Where it does not (a field the database has not
    /// seen), the few candidates with evidence would be lifted over the
    /// cited paper for no reason (K_r 20, MRR ungated → gated: the 91
    /// scicite `val` contexts 0.381 → 0.532, 250 scisummnet ones 0.438 →
    /// 0.434; R@10 unchanged).
    pub fn cited_for_weight_at(&self, confidence: f32) -> f32 {
        self.cited_for_weight * confidence.clamp(0.0, 1.0)
    }

    /// The weight of a channel's list given its confidence.
    pub fn weight(&self, channel: &str, confidence: f32) -> f32 {
        match channel {
            "evidence" if confidence <= self.min_confidence => 0.0,
            "evidence" => self.evidence_weight * ((confidence - self.min_confidence) / (1.0 - self.min_confidence).max(1e-6)).min(1.0),
            "bm25" => 1.0 + self.bm25_gap_weight * confidence,
            "hatten" => self.hatten_weight,
            CITATION => self.citation_weight,
            _ => 1.0,
        }
    }
}

/// Runs the channels, fuses their lists and reranks the top of the fused list.
pub struct Recommender {
    library: Arc<Library>,
    channels: Vec<Box<dyn Channel>>,
    prefetch: usize,
    fusion: Fusion,
    reranker: Option<Arc<Reranker>>,
    similarity: Option<Arc<PaperSimilarity>>,
    cited_for: Option<Arc<CitedFor>>,
    /// The library's paper vectors under the citation bi-encoder (the
    /// citation channel's, and read by the rerank stage's bi-encoder).
    citation_vectors: Option<Arc<VectorStore>>,
    rerank_depth: usize,
}

/// The share of the reranked papers the bi-encoder scores on a thread of its
/// own while the cross-encoder runs (see `Recommender::rerank`): with ~32 ms
/// a pair for the cross-encoder and ~72 ms a paper for the bi-encoder on one
/// core, 0.7 gives both threads about the same work.
const BI_ENCODER_SHARE: f32 = 0.7;

impl Recommender {
    /// A recommender with every stage that can run on this library (the
    /// dense channel needs its weights, word vectors and paper vectors; the
    /// rerank stage a fine-tuned reranker and its base model).
    pub fn new(library: Arc<Library>) -> Recommender {
        let citation_vectors = citation_vectors(&library).ok().flatten();
        let channels = ALL_CHANNELS.iter().filter_map(|name| open_channel(&library, name, &citation_vectors).ok()).collect();
        let reranker = shared_reranker().ok();
        let similarity = reranker.as_ref().and_then(|_| PaperSimilarity::shared().ok());
        let cited_for = reranker.as_ref().and_then(|_| CitedFor::shared().ok());
        let rerank_depth = default_rerank_depth(reranker.as_deref());
        Recommender {
            library,
            channels,
            prefetch: DEFAULT_PREFETCH,
            fusion: Fusion::default(),
            reranker,
            similarity,
            cited_for,
            citation_vectors,
            rerank_depth,
        }
    }

    /// A recommender restricted to the named stages (`--stages`): channels,
    /// and `rerank` for the rerank stage.
    pub fn with_channels(library: Arc<Library>, names: &[&str]) -> Result<Recommender> {
        let channel_names: Vec<&str> = names.iter().copied().filter(|n| *n != RERANK).collect();
        if channel_names.is_empty() {
            return Err(Error::InvalidQuery(format!("no channel selected; available: {}", ALL_CHANNELS.join(", "))));
        }
        let citation_vectors = citation_vectors(&library)?;
        let channels = channel_names.iter().map(|name| open_channel(&library, name, &citation_vectors)).collect::<Result<_>>()?;
        let reranker = if names.contains(&RERANK) { Some(shared_reranker()?) } else { None };
        let similarity = if reranker.is_some() { Some(PaperSimilarity::shared()?) } else { None };
        let cited_for = if reranker.is_some() { Some(CitedFor::shared()?) } else { None };
        let rerank_depth = default_rerank_depth(reranker.as_deref());
        Ok(Recommender {
            library,
            channels,
            prefetch: DEFAULT_PREFETCH,
            fusion: Fusion::default(),
            reranker,
            similarity,
            cited_for,
            citation_vectors,
            rerank_depth,
        })
    }

    /// Uses `reranker` for the rerank stage (none: no rerank stage).
    pub fn set_reranker(&mut self, reranker: Option<Arc<Reranker>>) {
        self.reranker = reranker;
    }

    /// Uses `similarity` (the citation bi-encoder) as the rerank stage's
    /// second signal (none: the cross-encoder alone).
    pub fn set_similarity(&mut self, similarity: Option<Arc<PaperSimilarity>>) {
        self.similarity = similarity;
    }

    /// Uses `cited_for` (the query against the evidence citing each
    /// candidate) as the rerank stage's third signal (none: left out).
    pub fn set_cited_for(&mut self, cited_for: Option<Arc<CitedFor>>) {
        self.cited_for = cited_for;
    }

    /// How many fused candidates the reranker reorders (K_r).
    pub fn set_rerank_depth(&mut self, depth: usize) {
        self.rerank_depth = depth;
    }

    pub fn rerank_depth(&self) -> usize {
        self.rerank_depth
    }

    /// The reranker in use, if any.
    pub fn reranker(&self) -> Option<&Reranker> {
        self.reranker.as_deref()
    }

    pub fn set_fusion(&mut self, fusion: Fusion) {
        self.fusion = fusion;
    }

    pub fn fusion(&self) -> Fusion {
        self.fusion
    }

    pub fn library(&self) -> &Library {
        &self.library
    }

    /// The stages that run, in order: the channels, then `rerank` if on.
    pub fn channel_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.channels.iter().map(|c| c.name()).collect();
        if self.reranker.is_some() {
            names.push(RERANK);
        }
        names
    }

    /// Ranked papers for the query, with their records.
    pub fn recommend(&self, query: &Query) -> Result<Recommendations> {
        self.run(query, true)
    }

    /// Ranked ids only (no record reads); what evaluation uses.
    pub fn recommend_ids(&self, query: &Query) -> Result<Recommendations> {
        self.run(query, false)
    }

    fn run(&self, query: &Query, with_records: bool) -> Result<Recommendations> {
        let mut last = None;
        self.stream(query, with_records, &mut |r| {
            if r.complete {
                last = Some(r);
            }
            true
        })?;
        Ok(last.expect("a stream that is not cancelled ends complete"))
    }

    /// Runs the stages one after the other and hands the results so far to
    /// `on_stage` after each (with records and evidence); `on_stage`
    /// returning false stops the run there (a newer request superseded it).
    pub fn recommend_streaming(&self, query: &Query, on_stage: &mut dyn FnMut(Recommendations) -> bool) -> Result<()> {
        self.stream(query, true, on_stage)
    }

    fn stream(&self, query: &Query, with_records: bool, on_stage: &mut dyn FnMut(Recommendations) -> bool) -> Result<()> {
        let mut query = query.clone();
        let notices = query.validate()?;
        let mut timings = Vec::new();
        let mut outputs = Vec::with_capacity(self.channels.len());
        let rerank = self.reranker.as_ref().filter(|_| self.rerank_depth > 0);
        for (i, ch) in self.channels.iter().enumerate() {
            let t = Instant::now();
            outputs.push((ch.name(), ch.retrieve(&query, self.prefetch.max(query.k))?));
            timings.push((ch.name().to_string(), t.elapsed()));
            let last_channel = i + 1 == self.channels.len();
            // The rerank stage follows the last channel.
            let reranker = rerank.filter(|_| last_channel);
            if !last_channel && !with_records {
                continue; // nobody looks at early results without records
            }
            let mut stage_timings = timings.clone();
            let t = Instant::now();
            let mut candidates = fuse(&outputs, &self.fusion);
            // Reranking may lift any of the top K_r into the top k.
            candidates.truncate(if reranker.is_some() { query.k.max(self.rerank_depth) } else { query.k });
            stage_timings.push(("fuse".into(), t.elapsed()));
            if with_records {
                let t = Instant::now();
                self.attach_records(&query, &outputs, &mut candidates)?;
                stage_timings.push(("records".into(), t.elapsed()));
            }
            if with_records || reranker.is_none() {
                let shown = match reranker {
                    Some(_) => candidates[..query.k.min(candidates.len())].to_vec(),
                    None => std::mem::take(&mut candidates),
                };
                let r = Recommendations {
                    stage: ch.name().to_string(),
                    complete: last_channel && reranker.is_none(),
                    candidates: shown,
                    timings: stage_timings.clone(),
                    notices: notices.clone(),
                };
                if !on_stage(r.noting_no_results()) {
                    return Ok(());
                }
            }
            if let Some(reranker) = reranker {
                let t = Instant::now();
                let evidence_confidence = outputs.iter().find(|(name, _)| *name == "evidence").map_or(0.0, |(_, o)| o.confidence);
                self.rerank(reranker, &query, evidence_confidence, &mut candidates)?;
                candidates.truncate(query.k);
                stage_timings.push((RERANK.into(), t.elapsed()));
                on_stage(
                    Recommendations {
                        stage: RERANK.to_string(),
                        complete: true,
                        candidates,
                        timings: stage_timings,
                        notices: notices.clone(),
                    }
                    .noting_no_results(),
                );
            }
        }
        Ok(())
    }

    /// Reads each candidate's record (where not read yet) and its evidence.
    fn attach_records(&self, query: &Query, outputs: &[(&'static str, ChannelOutput)], candidates: &mut [Candidate]) -> Result<()> {
        let index = self.library.papers();
        // The abstract sentences nearest the query, once per answer here
        // (not per frame in the editor).
        let terms = index.query_terms(&query.local_text());
        let mut analyzer = crate::index::analyzer::english();
        for c in candidates.iter_mut() {
            if c.paper.is_none() {
                c.paper = index.paper_by_id(&c.id)?;
            }
            if let Some(p) = &c.paper {
                c.own_words = best_sentences(&mut analyzer, &p.abstract_text, &terms, OWN_SENTENCES);
            }
        }
        self.attach_evidence(query, outputs, candidates)
    }

    /// Reorders the top `rerank_depth` candidates: the reranker's order, the
    /// citation bi-encoder's order (when present), the cited-for order (of
    /// the papers that evidence cites) and the fused order, each by
    /// reciprocal rank, weighed by `Fusion::rerank_weight`,
    /// `Fusion::semantic_weight`, `Fusion::cited_for_weight_at` (the
    /// evidence channel's confidence; not computed at 0) and 1. The rest
    /// keep their fused order below.
    fn rerank(&self, reranker: &Reranker, query: &Query, evidence_confidence: f32, candidates: &mut Vec<Candidate>) -> Result<()> {
        let depth = self.rerank_depth.min(candidates.len());
        if depth == 0 {
            return Ok(());
        }
        let index = self.library.papers();
        for c in candidates[..depth].iter_mut() {
            if c.paper.is_none() {
                c.paper = index.paper_by_id(&c.id)?;
            }
        }
        let local = query.local_text();
        let q = reranker.query(&local, &query.title, &query.abstract_text)?;
        let texts: Vec<(&str, &str)> = candidates[..depth]
            .iter()
            .map(|c| c.paper.as_ref().map_or(("", ""), |p| (p.title.as_str(), p.abstract_text.as_str())))
            .collect();
        // The scorers are independent and each runs on one core, so they
        // run side by side: the bi-encoder (the slowest, ~2.3x the
        // cross-encoder per paper) takes the first `BI_ENCODER_SHARE` of the
        // papers on a thread of its own; this thread scores every pair with
        // the cross-encoder, then the rest of the papers with the bi-encoder.
        // When the library keeps every candidate's bi-encoder vector, only
        // the query is left to encode, and the cross-encoder's pairs are
        // split over two threads instead.
        let ids: Vec<&str> = candidates[..depth].iter().map(|c| c.id.as_str()).collect();
        let papers: Vec<PaperText> =
            ids.iter().zip(&texts).map(|(id, (title, abstract_text))| PaperText { id, title, abstract_text }).collect();
        let split = ((depth as f32 * BI_ENCODER_SHARE).ceil() as usize).min(depth);
        let cited_for_weight = self.fusion.cited_for_weight_at(evidence_confidence);
        let stored = self.citation_vectors.as_deref();
        let bi_stored = self.similarity.is_none() || stored.is_some_and(|s| ids.iter().all(|id| s.vector(id).is_some()));
        let (scores, cosines, cited) = std::thread::scope(|s| {
            let cited = s.spawn(|| -> Result<Vec<Option<f32>>> {
                match &self.cited_for {
                    Some(cf) if cited_for_weight > 0.0 => cf.best_cosines(&self.library, &local, &ids, &query.citing_keys()),
                    _ => Ok(vec![None; depth]),
                }
            });
            if bi_stored && depth > 1 {
                let half = depth.div_ceil(2);
                let (q, texts) = (&q, &texts);
                let second = s.spawn(move || reranker.score(q, &texts[half..]));
                let first = reranker.score(&q, &texts[..half]);
                let cosines = self.similarity.as_ref().map(|sim| sim.cosines(&local, &papers, stored)).transpose();
                let second = second.join().expect("cross-encoder scorer panicked");
                let scores = first.and_then(|mut a| {
                    a.extend(second?);
                    Ok(a)
                });
                return (scores, cosines, cited.join().expect("cited-for scorer panicked"));
            }
            let (head, tail) = papers.split_at(split);
            let cosines_head = s.spawn(|| self.similarity.as_ref().map(|sim| sim.cosines(&local, head, stored)).transpose());
            let scores = reranker.score(&q, &texts);
            let cosines_tail = match &self.similarity {
                Some(sim) if !tail.is_empty() => sim.cosines(&local, tail, stored).map(Some),
                _ => Ok(None),
            };
            let cosines = match (cosines_head.join().expect("bi-encoder scorer panicked"), cosines_tail) {
                (Ok(Some(mut h)), Ok(t)) => {
                    h.extend(t.unwrap_or_default());
                    Ok(Some(h))
                }
                (Ok(None), _) => Ok(None),
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
            (scores, cosines, cited.join().expect("cited-for scorer panicked"))
        });
        let (scores, cosines, cited) = (scores?, cosines?, cited?);
        let k = self.fusion.rrf_k;
        let with_evidence: Vec<usize> = (0..depth).filter(|&i| cited[i].is_some()).collect();
        let cited_cos: Vec<f32> = with_evidence.iter().map(|&i| cited[i].unwrap_or_default()).collect();
        for (rank, &j) in order_of(&cited_cos).iter().enumerate() {
            let i = with_evidence[j];
            candidates[i].cited_for = Some(ChannelScore { channel: CITED_FOR, rank: rank + 1, score: cited_cos[j] });
        }
        for (rank, &i) in order_of(&scores).iter().enumerate() {
            candidates[i].rerank = Some(ChannelScore { channel: RERANK, rank: rank + 1, score: scores[i] });
        }
        if let Some(cos) = &cosines {
            for (rank, &i) in order_of(cos).iter().enumerate() {
                candidates[i].semantic = Some(ChannelScore { channel: SEMANTIC, rank: rank + 1, score: cos[i] });
            }
        }
        for c in candidates[..depth].iter_mut() {
            let by = |s: &Option<ChannelScore>, w: f32| s.as_ref().map_or(0.0, |s| w / (k + s.rank as f32));
            c.score = 1.0 / (k + c.fused_rank as f32)
                + by(&c.rerank, self.fusion.rerank_weight)
                + by(&c.semantic, self.fusion.semantic_weight)
                + by(&c.cited_for, cited_for_weight);
        }
        for c in candidates[depth..].iter_mut() {
            c.score = 1.0 / (k + c.fused_rank as f32);
        }
        candidates[..depth].sort_by(|a, b| b.score.total_cmp(&a.score).then(a.fused_rank.cmp(&b.fused_rank)));
        Ok(())
    }

    /// Gives each candidate its evidence: the spans the evidence channel
    /// found for it, else the spans of the database that cite it and best
    /// match the query.
    fn attach_evidence(&self, query: &Query, outputs: &[(&'static str, ChannelOutput)], candidates: &mut [Candidate]) -> Result<()> {
        let ev = self.library.evidence();
        if ev.num_spans() == 0 {
            return Ok(());
        }
        let terms = ev.terms(&query.local_text());
        for c in candidates {
            if let Some(found) = outputs.iter().find_map(|(_, o)| o.evidence.get(&c.id)) {
                c.evidence = found.clone();
                continue;
            }
            c.evidence =
                ev.spans_citing(&c.id, &terms, SNIPPETS_PER_PAPER, &query.citing_keys())?.iter().map(|r| snippet(r, &c.id)).collect();
        }
        Ok(())
    }
}

/// Indices of `scores`, highest first.
fn order_of(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    order
}

/// The library's citation vectors, when it has any (and the citation
/// bi-encoder is installed).
fn citation_vectors(library: &Library) -> Result<Option<Arc<VectorStore>>> {
    if !VectorStore::exists(&library.citation_vectors_dir()) {
        return Ok(None);
    }
    let encoder = shared_citation_encoder()?;
    Ok(open_citation_vectors(library, &encoder)?.map(Arc::new))
}

/// Opens the named channel over `library`; the dense channels fail when
/// their weights or the library's paper vectors are missing.
fn open_channel(library: &Arc<Library>, name: &str, citation_vectors: &Option<Arc<VectorStore>>) -> Result<Box<dyn Channel>> {
    Ok(match name {
        "bm25" => Box::new(Bm25Channel::new(library.clone())),
        "evidence" => match SemanticSpans::shared() {
            Ok(semantic) => {
                // Unreadable saved vectors only mean encoding spans on demand.
                let _ = semantic.load_saved(library);
                Box::new(EvidenceChannel::new(library.clone()).with_reranker(Box::new(semantic)))
            }
            Err(_) => Box::new(EvidenceChannel::new(library.clone())),
        },
        "hatten" => Box::new(DenseChannel::open(library, shared_encoder()?)?),
        CITATION => Box::new(CitationChannel::new(library, shared_citation_encoder()?, citation_vectors.clone())?),
        other => return Err(Error::InvalidQuery(format!("unknown channel `{other}`; available: {}", ALL_CHANNELS.join(", ")))),
    })
}

/// Weighted reciprocal-rank fusion of channel lists (see [`Fusion`]). A
/// single list keeps its own order and scores. Every channel that found a
/// paper is recorded, including one whose weight was zero for this query.
pub fn fuse(outputs: &[(&'static str, ChannelOutput)], fusion: &Fusion) -> Vec<Candidate> {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<Candidate> = Vec::new();
    for (name, output) in outputs {
        let weight = fusion.weight(name, output.confidence);
        for (i, (id, score)) in output.ranked.iter().enumerate() {
            let idx = *by_id.entry(id.as_str()).or_insert_with(|| {
                out.push(Candidate {
                    id: id.clone(),
                    score: 0.0,
                    channels: Vec::new(),
                    paper: None,
                    evidence: Vec::new(),
                    own_words: Vec::new(),
                    fused_rank: 0,
                    rerank: None,
                    semantic: None,
                    cited_for: None,
                });
                out.len() - 1
            });
            let c = &mut out[idx];
            c.channels.push(ChannelScore { channel: name, rank: i + 1, score: *score });
            c.score = if outputs.len() == 1 { *score } else { c.score + weight / (fusion.rrf_k + (i + 1) as f32) };
        }
    }
    // Stable: equal scores keep the order of the earlier channels.
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    for (i, c) in out.iter_mut().enumerate() {
        c.fused_rank = i + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ids: &[&str]) -> ChannelOutput {
        ChannelOutput::plain(ids.iter().enumerate().map(|(i, id)| (id.to_string(), 10.0 - i as f32)).collect())
    }

    fn with_confidence(mut o: ChannelOutput, c: f32) -> ChannelOutput {
        o.confidence = c;
        o
    }

    fn answer(stages: &[&str], found_by: &[&[&'static str]]) -> Recommendations {
        let candidates = found_by
            .iter()
            .enumerate()
            .map(|(i, chs)| Candidate {
                id: format!("p{i}"),
                score: 1.0,
                channels: chs.iter().map(|&channel| ChannelScore { channel, rank: i + 1, score: 1.0 }).collect(),
                paper: None,
                evidence: Vec::new(),
                own_words: Vec::new(),
                fused_rank: i + 1,
                rerank: None,
                semantic: None,
                cited_for: None,
            })
            .collect();
        let timings = stages.iter().map(|s| (s.to_string(), Duration::ZERO)).collect();
        Recommendations { stage: "fuse".into(), complete: true, candidates, timings, notices: Vec::new() }
    }

    #[test]
    fn an_answer_found_only_by_meaning_says_so_when_word_channels_ran() {
        let meaning_only = answer(&["bm25", "evidence", CITATION], &[&[CITATION], &[CITATION]]).noting_no_results();
        assert_eq!(meaning_only.notices, [MEANING_ONLY]);
        let with_words = answer(&["bm25", "evidence", CITATION], &[&[CITATION], &["bm25", CITATION]]).noting_no_results();
        assert!(with_words.notices.is_empty(), "{:?}", with_words.notices);
        let citation_alone = answer(&[CITATION], &[&[CITATION]]).noting_no_results();
        assert!(citation_alone.notices.is_empty(), "only the citation channel was asked for");
        assert_eq!(answer(&["bm25", CITATION], &[]).noting_no_results().notices, [NO_MATCH]);
        let mut partial = answer(&["bm25", CITATION], &[&[CITATION]]);
        partial.complete = false;
        assert!(partial.noting_no_results().notices.is_empty(), "early results of a stream say nothing yet");
    }

    #[test]
    fn single_channel_keeps_order_and_scores() {
        let c = fuse(&[("bm25", list(&["a", "b", "c"]))], &Fusion::default());
        assert_eq!(c.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(c[1].score, 9.0);
        assert_eq!(c[1].channels, vec![ChannelScore { channel: "bm25", rank: 2, score: 9.0 }]);
    }

    #[test]
    fn rrf_rewards_agreement() {
        let c = fuse(&[("x", list(&["a", "b", "c"])), ("y", list(&["d", "b", "e"]))], &Fusion::default());
        assert_eq!(c[0].id, "b", "second in both beats first in one");
        assert_eq!(c[0].channels.len(), 2);
        assert_eq!(c.len(), 5);
    }

    #[test]
    fn weak_evidence_is_ignored_and_strong_evidence_leads() {
        let f = Fusion {
            rrf_k: 60.0,
            evidence_weight: 2.0,
            min_confidence: 0.3,
            bm25_gap_weight: 0.0,
            hatten_weight: 1.0,
            citation_weight: 1.0,
            rerank_weight: 2.0,
            semantic_weight: 0.0,
            cited_for_weight: 0.0,
        };
        let bm25 = list(&["a", "b", "c"]);
        let weak = fuse(&[("bm25", bm25.clone()), ("evidence", with_confidence(list(&["z", "c"]), 0.2))], &f);
        assert_eq!(weak.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["a", "b", "c", "z"]);
        assert_eq!(weak[2].channels.len(), 2, "the evidence rank is still recorded");
        let strong = fuse(&[("bm25", bm25), ("evidence", with_confidence(list(&["z", "c"]), 1.0))], &f);
        assert_eq!(strong[0].id, "c", "found by both");
        assert_eq!(strong[1].id, "z", "evidence rank 1 outweighs BM25 rank 1");
    }

    #[test]
    fn cited_for_counts_as_far_as_evidence_speaks_of_the_claim() {
        let f = Fusion::default().with_overrides("cited_for_weight=0.8").unwrap();
        assert_eq!(f.cited_for_weight_at(0.0), 0.0);
        assert!((f.cited_for_weight_at(0.5) - 0.4).abs() < 1e-6);
        assert_eq!(f.cited_for_weight_at(1.0), 0.8);
        assert_eq!(f.cited_for_weight_at(3.0), 0.8, "confidence is capped at 1");
        assert_eq!(f.cited_for_weight_at(-1.0), 0.0);
    }

    #[test]
    fn fusion_overrides_parse() {
        let f = Fusion::default().with_overrides("evidence_weight=3, min_confidence=0.5").unwrap();
        assert_eq!((f.evidence_weight, f.min_confidence, f.rrf_k), (3.0, 0.5, Fusion::default().rrf_k));
        assert!(Fusion::default().with_overrides("nope=1").is_err());
        assert!(Fusion::default().with_overrides("rrf_k").is_err());
    }
}

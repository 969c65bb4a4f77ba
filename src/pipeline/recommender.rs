//! The `Recommender`: the one query path shared by the CLI, the evaluation
//! harness, the editor and the language server. Channels retrieve, their
//! lists are fused, records and evidence are attached, and the rerank stage
//! reorders the top. The three ways of asking (`recommend`,
//! `recommend_ids`, `recommend_streaming`) are sinks over that one path.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::already_cited::AlreadyCited;
use super::answer::{Candidate, Recommendations};
use super::channel::{Bm25Channel, Channel, ChannelId, ChannelOutput};
use super::citation_channel::{open_citation_vectors, CitationChannel};
use super::cited_for::CitedFor;
use super::claims;
use super::dense_channel::DenseChannel;
use super::evidence_channel::{snippet, EvidenceChannel, PaperOrder, SNIPPETS_PER_PAPER};
use super::fusion::{fuse, Fusion};
use super::models::Models;
use super::own_words::{best_sentences, OWN_SENTENCES};
use super::query::{Prepared, Query};
use super::rerank::{combine, RerankStage, Weights, RERANK};
use super::same_work;
use super::span_cosines::{SpanRanking, DEFAULT_MIN_WORDS};
use super::stage::{Stage, StageTimings};
use crate::error::{Error, Result};
use crate::index::layered::LayeredVectors;
use crate::index::QueryTf;
use crate::library::Library;
use crate::neural::reranker::Reranker;

/// Candidates each channel fetches before fusion.
pub const DEFAULT_PREFETCH: usize = 100;

/// How much deeper channels retrieve for a draft written in a past year,
/// whose later papers are then left out (see `Recommender::retrieve_citable`).
pub const WRITTEN_IN_DEPTH: usize = 4;

/// The stages a recommender runs: channels in order, then perhaps the
/// rerank stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stages {
    pub channels: Vec<ChannelId>,
    pub rerank: bool,
}

impl Stages {
    /// Stages by name (`--stages`): channel names and `rerank`.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Stages> {
        let mut stages = Stages { channels: Vec::new(), rerank: false };
        for name in names.iter().map(AsRef::as_ref) {
            match Stage::from_name(name) {
                Some(Stage::Channel(id)) => stages.channels.push(id),
                Some(Stage::Rerank) => stages.rerank = true,
                _ => return Err(Error::Config(format!("unknown stage `{name}`; available: {}, {RERANK}", ChannelId::names()))),
            }
        }
        if stages.channels.is_empty() {
            return Err(Error::Config(format!("no channel selected; available: {}", ChannelId::names())));
        }
        Ok(stages)
    }

    /// The names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.channels.iter().map(|c| c.name()).collect();
        if self.rerank {
            names.push(RERANK);
        }
        names
    }
}

/// How a recommender ranks (defaults chosen on `val`; see CHANGELOG).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub fusion: Fusion,
    /// Candidates each channel fetches.
    pub prefetch: usize,
    /// Fused candidates the rerank stage reorders (K_r); none: the depth
    /// that suits the device the reranker runs on.
    pub rerank_depth: Option<usize>,
    /// Queries of at least this many words re-rank evidence spans with the
    /// citation encoder too (conditional rank ensembling).
    pub span_min_words: usize,
    /// How the evidence channel orders papers from their spans.
    pub evidence_order: PaperOrder,
    /// How a word the query repeats weighs in BM25.
    pub query_tf: QueryTf,
}

impl Settings {
    /// The defaults with the fusion `library` learned from its own citing
    /// documents ([`super::learned_fusion::fusion_of`]).
    pub fn of_library(library: &Library) -> Settings {
        Settings { fusion: super::learned_fusion::fusion_of(library), ..Settings::default() }
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            fusion: Fusion::default(),
            prefetch: DEFAULT_PREFETCH,
            rerank_depth: None,
            span_min_words: DEFAULT_MIN_WORDS,
            evidence_order: PaperOrder::default(),
            query_tf: QueryTf::default(),
        }
    }
}

/// Runs the channels, fuses their lists and reranks the top of the fused list.
pub struct Recommender {
    library: Arc<Library>,
    channels: Vec<Box<dyn Channel>>,
    settings: Settings,
    rerank: Option<RerankStage>,
    /// Said with every answer: stages left out because their files are
    /// damaged.
    notices: Vec<String>,
}

/// The notice of a stage left out because what it reads is damaged (other
/// reasons, such as a model that is not installed, leave it out quietly).
fn left_out(stage: &str, e: &Error) -> Option<String> {
    matches!(e, Error::Corrupt { .. }).then(|| format!("the {stage} channel is off: {e}"))
}

/// Where the answers of one request go.
enum Sink<'a> {
    /// Only the complete answer, kept; with records and evidence or ids only.
    Last { with_records: bool, answer: Option<Recommendations> },
    /// Every stage's answer (with records), as it comes; false stops.
    Stream(&'a mut dyn FnMut(Recommendations) -> bool),
}

impl Sink<'_> {
    fn with_records(&self) -> bool {
        matches!(self, Sink::Stream(_) | Sink::Last { with_records: true, .. })
    }

    fn wants_early(&self) -> bool {
        matches!(self, Sink::Stream(_))
    }

    /// Hands over an answer; false when the request is to stop.
    fn deliver(&mut self, answer: Recommendations) -> bool {
        let answer = answer.noting_no_results();
        match self {
            Sink::Last { answer: last, .. } => {
                if answer.complete {
                    *last = Some(answer);
                }
                true
            }
            Sink::Stream(on_stage) => on_stage(answer),
        }
    }
}

impl Recommender {
    /// A recommender with every stage that can run on this library with
    /// `models` (a dense channel needs its encoder and the library's paper
    /// vectors; the rerank stage the reranker).
    pub fn new(library: Arc<Library>, models: &Models) -> Recommender {
        let settings = Settings::of_library(&library);
        Recommender::open(library, models, None, settings).expect("optional stages never fail")
    }

    /// A recommender restricted to the named stages (`--stages`): channels,
    /// and `rerank` for the rerank stage; a stage that cannot run is an
    /// error that says why.
    pub fn with_stages(library: Arc<Library>, models: &Models, names: &[&str]) -> Result<Recommender> {
        let settings = Settings::of_library(&library);
        Recommender::open(library, models, Some(&Stages::parse(names)?), settings)
    }

    /// A recommender with `stages` (none: every stage that can run, leaving
    /// out those that cannot) and `settings`.
    pub fn open(library: Arc<Library>, models: &Models, stages: Option<&Stages>, settings: Settings) -> Result<Recommender> {
        let strict = stages.is_some();
        let mut notices = Vec::new();
        let mut citation_damaged = false;
        let citation_vectors = match citation_vectors(&library, models) {
            Ok(v) => v,
            Err(e) if strict => return Err(e),
            Err(e) => {
                citation_damaged = matches!(e, Error::Corrupt { .. });
                notices.extend(left_out(ChannelId::Citation.name(), &e));
                None
            }
        };
        let mut channels: Vec<Box<dyn Channel>> = Vec::new();
        for &id in stages.map_or(&ChannelId::ALL[..], |s| &s.channels) {
            match open_channel(&library, id, models, &settings, &citation_vectors) {
                Ok(c) => channels.push(c),
                Err(e) if strict => return Err(e),
                // Said once, above.
                Err(_) if id == ChannelId::Citation && citation_damaged => {}
                Err(e) => notices.extend(left_out(id.name(), &e)),
            }
        }
        let rerank = match stages.map(|s| s.rerank) {
            Some(false) => None,
            Some(true) => Some(rerank_stage(models, citation_vectors, true)?),
            None => rerank_stage(models, citation_vectors, false).ok(),
        };
        let mut rec = Recommender { library, channels, settings, rerank, notices };
        if let Some(depth) = settings.rerank_depth {
            rec.set_rerank_depth(depth);
        }
        Ok(rec)
    }

    /// Uses `stage` as the rerank stage (none: no rerank stage).
    pub fn set_rerank(&mut self, stage: Option<RerankStage>) {
        self.rerank = stage;
    }

    /// Adds `channel` after the recommender's channels: it runs last of
    /// them (before the rerank stage), its list is fused with theirs, and
    /// its [`Channel::id`] names its stage in answers and timings. A seam
    /// for tests, which give the pipeline a fake channel (one that blocks
    /// until the test lets it go, say); the channels a library and its
    /// models allow are opened by [`Recommender::open`].
    pub fn with_channel(mut self, channel: Box<dyn Channel>) -> Recommender {
        self.channels.push(channel);
        self
    }

    /// How many fused candidates the reranker reorders (K_r).
    pub fn set_rerank_depth(&mut self, depth: usize) {
        self.settings.rerank_depth = Some(depth);
        if let Some(stage) = &mut self.rerank {
            stage.set_depth(depth);
        }
    }

    /// K_r (0 when there is no rerank stage).
    pub fn rerank_depth(&self) -> usize {
        self.rerank.as_ref().map_or(0, RerankStage::depth)
    }

    /// The reranker in use, if any.
    pub fn reranker(&self) -> Option<&Reranker> {
        self.rerank.as_ref().map(RerankStage::reranker)
    }

    pub fn fusion(&self) -> Fusion {
        self.settings.fusion
    }

    /// Ranks with `fusion` from now on.
    pub fn set_fusion(&mut self, fusion: Fusion) {
        self.settings.fusion = fusion;
    }

    pub fn library(&self) -> &Library {
        &self.library
    }

    /// The stages that run, in order.
    pub fn stages(&self) -> Stages {
        Stages { channels: self.channels.iter().map(|c| c.id()).collect(), rerank: self.rerank.is_some() }
    }

    /// Ranked papers for the query, with their records.
    pub fn recommend(&self, query: &Query) -> Result<Recommendations> {
        let mut sink = Sink::Last { with_records: true, answer: None };
        self.run(query, &mut sink)?;
        Ok(sink.into_answer())
    }

    /// Ranked ids only (no record reads); what evaluation uses.
    pub fn recommend_ids(&self, query: &Query) -> Result<Recommendations> {
        let mut sink = Sink::Last { with_records: false, answer: None };
        self.run(query, &mut sink)?;
        Ok(sink.into_answer())
    }

    /// Runs the stages one after the other and hands the results so far to
    /// `on_stage` after each (with records and evidence); `on_stage`
    /// returning false stops the run there (a newer request superseded it).
    pub fn recommend_streaming(&self, query: &Query, on_stage: &mut dyn FnMut(Recommendations) -> bool) -> Result<()> {
        self.run(query, &mut Sink::Stream(on_stage))
    }

    /// Each channel's own list for the query, before fusion, as the run
    /// fuses it (the papers the draft can cite; for offline analysis of
    /// fusion and gating). A query of several claims gives the lists of its
    /// whole context.
    pub fn channel_lists(&self, query: &Query) -> Result<Vec<(ChannelId, ChannelOutput)>> {
        let prepared = self.prepare(query)?;
        let depth = self.settings.prefetch.max(prepared.query.k);
        let mut years = HashMap::new();
        self.channels.iter().map(|ch| Ok((ch.id(), self.retrieve_citable(ch.as_ref(), &prepared, depth, &mut years)?))).collect()
    }

    /// The fused list of a prepared query, one entry per work, as deep as
    /// its `k` (no records read, no rerank stage): where each paper stands
    /// among the library for the query's text (and its claims').
    pub fn fused(&self, prepared: &Prepared) -> Result<Vec<Candidate>> {
        let depth = self.settings.prefetch.max(prepared.query.k);
        let mut years = HashMap::new();
        let queries = self.queries_of(prepared);
        let mut outputs = vec![Vec::with_capacity(self.channels.len()); queries.len()];
        for ch in &self.channels {
            self.retrieve_each(ch.as_ref(), &queries, depth, &mut years, &mut outputs)?;
        }
        let mut candidates = self.fuse_claims(&outputs);
        same_work::collapse(&mut candidates, self.library.papers(), prepared.query.k)?;
        candidates.truncate(prepared.query.k);
        Ok(candidates)
    }

    /// The queries a prepared query is searched as: its whole context,
    /// then each of its claims (none when claims weigh nothing).
    fn queries_of<'p>(&self, prepared: &'p Prepared) -> Vec<&'p Prepared> {
        if self.settings.fusion.claim_weight > 0.0 {
            prepared.and_claims().collect()
        } else {
            vec![prepared]
        }
    }

    /// Adds `channel`'s list for each of `queries` (the whole context,
    /// then its claims) to that query's `outputs`.
    fn retrieve_each(
        &self,
        channel: &dyn Channel,
        queries: &[&Prepared],
        depth: usize,
        years: &mut HashMap<String, Option<i32>>,
        outputs: &mut [Vec<(ChannelId, ChannelOutput)>],
    ) -> Result<()> {
        for (q, out) in queries.iter().zip(outputs.iter_mut()) {
            out.push((channel.id(), self.retrieve_citable(channel, q, depth, years)?));
        }
        Ok(())
    }

    /// Fuses each query's channel lists (the whole context's first), and
    /// merges a query of several claims' fused lists ([`claims::merge`]).
    fn fuse_claims(&self, outputs: &[Vec<(ChannelId, ChannelOutput)>]) -> Vec<Candidate> {
        let fusion = &self.settings.fusion;
        match outputs {
            [whole] => fuse(whole, fusion),
            _ => claims::merge(
                outputs.iter().enumerate().map(|(i, o)| (fuse(o, fusion), if i == 0 { 1.0 } else { fusion.claim_weight })).collect(),
                fusion.rrf_k,
            ),
        }
    }

    /// The query prepared for one request against this library (validated,
    /// analysed once for every stage).
    pub fn prepare(&self, query: &Query) -> Result<Prepared> {
        Prepared::new(query, &self.library)
    }

    /// The rerank stage, if any (for offline analysis of its signals).
    pub fn rerank_stage(&self) -> Option<&RerankStage> {
        self.rerank.as_ref()
    }

    fn run(&self, query: &Query, sink: &mut Sink) -> Result<()> {
        let prepared = self.prepare(query)?;
        let query = &prepared.query;
        let mut notices = self.notices.clone();
        notices.extend(prepared.notices.iter().cloned());
        let mut timings = Vec::new();
        // Each channel's lists for the whole context, then for each claim.
        let queries = self.queries_of(&prepared);
        let mut outputs = vec![Vec::with_capacity(self.channels.len()); queries.len()];
        let rerank = self.rerank.as_ref().filter(|r| r.depth() > 0);
        let depth = self.settings.prefetch.max(query.k);
        let mut years = HashMap::new();
        let already_cited = AlreadyCited::in_text(&query.context, &query.grammar);
        for (i, ch) in self.channels.iter().enumerate() {
            let t = Instant::now();
            self.retrieve_each(ch.as_ref(), &queries, depth, &mut years, &mut outputs)?;
            timings.push((Stage::Channel(ch.id()), t.elapsed()));
            let last_channel = i + 1 == self.channels.len();
            if !last_channel && !sink.wants_early() {
                continue;
            }
            // The rerank stage follows the last channel.
            let rerank = rerank.filter(|_| last_channel);
            let mut stage_timings = timings.clone();
            let t = Instant::now();
            let mut candidates = self.fuse_claims(&outputs);
            // Reranking may lift any of the top K_r into the top k; each
            // of them is a work of its own.
            same_work::collapse(&mut candidates, self.library.papers(), rerank.map_or(query.k, |r| query.k.max(r.depth())))?;
            already_cited.move_last(&mut candidates);
            stage_timings.push((Stage::Fuse, t.elapsed()));
            if sink.with_records() {
                let t = Instant::now();
                self.attach_records(&prepared, &outputs[0], &mut candidates)?;
                // A paper removed from the library (trashed in Zotero) may
                // linger in vectors or evidence: it is no answer.
                candidates.retain(|c| c.paper.is_some());
                stage_timings.push((Stage::Records, t.elapsed()));
            }
            let answer = |stage: Stage, complete: bool, candidates: Vec<Candidate>, timings: &StageTimings| Recommendations {
                stage,
                complete,
                candidates,
                timings: timings.clone(),
                notices: notices.clone(),
                context: prepared.context_used,
                terms: prepared.terms.clone(),
            };
            let Some(stage) = rerank else {
                if !sink.deliver(answer(Stage::Channel(ch.id()), last_channel, candidates, &stage_timings)) {
                    return Ok(());
                }
                continue;
            };
            if sink.wants_early() {
                let shown = candidates[..query.k.min(candidates.len())].to_vec();
                if !sink.deliver(answer(Stage::Channel(ch.id()), false, shown, &stage_timings)) {
                    return Ok(());
                }
            }
            let t = Instant::now();
            self.rerank_top(stage, &prepared, &outputs[0], &mut candidates)?;
            candidates.truncate(query.k);
            stage_timings.push((Stage::Rerank, t.elapsed()));
            sink.deliver(answer(Stage::Rerank, true, candidates, &stage_timings));
        }
        Ok(())
    }

    /// A channel's `depth` best papers that the draft can cite (its
    /// confidence as the fusion reads it): never its
    /// own records (`Query::citing`) and, when it is written in a past year
    /// (`Query::written_in`), none published after that year (papers of
    /// unknown year stay). Such a query is retrieved [`WRITTEN_IN_DEPTH`]
    /// times deeper, so that the list is as long as another query's and
    /// its ranks count only papers it can cite. `years` keeps the years
    /// read for this query (the channels' lists overlap).
    fn retrieve_citable(
        &self,
        channel: &dyn Channel,
        prepared: &Prepared,
        depth: usize,
        years: &mut HashMap<String, Option<i32>>,
    ) -> Result<ChannelOutput> {
        let query = &prepared.query;
        let Some(year) = query.written_in else {
            let mut output = channel.retrieve(prepared, depth)?;
            if !query.citing.is_empty() {
                output.ranked.retain(|(id, _)| !query.citing.contains(id));
            }
            return Ok(self.trusted(channel, output));
        };
        let mut output = channel.retrieve(prepared, depth * WRITTEN_IN_DEPTH)?;
        let unread: Vec<&str> = output.ranked.iter().map(|(id, _)| id.as_str()).filter(|id| !years.contains_key(*id)).collect();
        let read = self.library.papers().years(&unread)?;
        for (id, y) in unread.iter().zip(read) {
            years.insert(id.to_string(), y);
        }
        output.ranked.retain(|(id, _)| !query.citing.contains(id) && years.get(id).copied().flatten().is_none_or(|y| y <= year));
        output.ranked.truncate(depth);
        Ok(self.trusted(channel, output))
    }

    /// `output` with its confidence as the fusion reads it
    /// ([`Fusion::trusted`]: the evidence channel's scaled by the trust the
    /// library learned).
    fn trusted(&self, channel: &dyn Channel, mut output: ChannelOutput) -> ChannelOutput {
        output.confidence = self.settings.fusion.trusted(channel.id(), output.confidence);
        output
    }

    /// Reorders the top K_r candidates by the rerank stage's signals
    /// ([`combine`]); the cited-for signal counts as far as the evidence
    /// channel is confident ([`Fusion::cited_for_weight_at`]).
    fn rerank_top(
        &self,
        stage: &RerankStage,
        query: &Prepared,
        outputs: &[(ChannelId, ChannelOutput)],
        candidates: &mut [Candidate],
    ) -> Result<()> {
        let depth = stage.depth().min(candidates.len());
        if depth == 0 {
            return Ok(());
        }
        let index = self.library.papers();
        for c in candidates[..depth].iter_mut() {
            if c.paper.is_none() {
                c.paper = index.paper_by_id(&c.id)?;
            }
        }
        let confidence = outputs.iter().find(|(id, _)| *id == ChannelId::Evidence).map_or(0.0, |(_, o)| o.confidence);
        let coverage = match &stage.reranker().field {
            Some(field) => field.coverage_of(self.library.papers(), &query.full_terms),
            None => 1.0,
        };
        let weights = Weights::of(&self.settings.fusion, confidence, coverage);
        if weights.off() {
            return Ok(());
        }
        let signals = stage.score(&self.library, query, &candidates[..depth], weights.cited_for > 0.0, weights.rerank > 0.0)?;
        let (top, rest) = candidates.split_at_mut(depth);
        combine(top, rest, &signals, weights);
        Ok(())
    }

    /// Reads each candidate's record (where not read yet), the abstract
    /// sentences nearest the query (once per answer, not per frame in the
    /// editor) and its evidence.
    fn attach_records(&self, query: &Prepared, outputs: &[(ChannelId, ChannelOutput)], candidates: &mut [Candidate]) -> Result<()> {
        let index = self.library.papers();
        let terms = &query.terms;
        let mut analyzer = crate::index::analyzer::english();
        for c in candidates.iter_mut() {
            if c.paper.is_none() {
                c.paper = index.paper_by_id(&c.id)?;
            }
            if let Some(p) = &c.paper {
                c.own_words = best_sentences(&mut analyzer, &p.abstract_text, terms, OWN_SENTENCES);
            }
        }
        self.attach_evidence(query, outputs, candidates)
    }

    /// Gives each candidate its evidence: the spans the evidence channel
    /// found for it, else the spans of the database that cite it and best
    /// match the query.
    fn attach_evidence(&self, query: &Prepared, outputs: &[(ChannelId, ChannelOutput)], candidates: &mut [Candidate]) -> Result<()> {
        let ev = self.library.evidence();
        if ev.num_spans() == 0 {
            return Ok(());
        }
        let terms = &query.span_terms;
        for c in candidates {
            let records: Vec<&String> = std::iter::once(&c.id).chain(&c.same_work).collect();
            if let Some(found) = records.iter().find_map(|id| outputs.iter().find_map(|(_, o)| o.evidence.get(*id))) {
                c.evidence = found.clone();
                continue;
            }
            let mut evidence = Vec::new();
            for id in records {
                let wanted = SNIPPETS_PER_PAPER - evidence.len();
                if wanted == 0 {
                    break;
                }
                evidence.extend(ev.spans_citing(id, terms, wanted, &query.citing_keys)?.iter().map(|r| snippet(r, id)));
            }
            c.evidence = evidence;
        }
        Ok(())
    }
}

impl Sink<'_> {
    fn into_answer(self) -> Recommendations {
        match self {
            Sink::Last { answer, .. } => answer.expect("a run that is not stopped ends complete"),
            Sink::Stream(_) => unreachable!("a stream hands its answers over as they come"),
        }
    }
}

/// The library's paper vectors under the citation encoder, when it has any.
fn citation_vectors(library: &Library, models: &Models) -> Result<Option<Arc<LayeredVectors>>> {
    if !crate::index::vectors::VectorStore::exists(&library.citation_vectors_dir())
        && !crate::index::vectors::VectorStore::exists(&library.student_vectors_dir())
    {
        return Ok(None);
    }
    Ok(open_citation_vectors(library, &*models.citation_encoder()?)?.map(Arc::new))
}

/// Opens a channel over `library`; a dense channel fails when its encoder
/// or the library's paper vectors are missing.
fn open_channel(
    library: &Arc<Library>,
    id: ChannelId,
    models: &Models,
    settings: &Settings,
    citation_vectors: &Option<Arc<LayeredVectors>>,
) -> Result<Box<dyn Channel>> {
    Ok(match id {
        ChannelId::Bm25 => Box::new(Bm25Channel::new(library.clone()).with_query_tf(settings.query_tf)),
        ChannelId::Evidence => {
            let channel = EvidenceChannel::new(library.clone()).with_order(settings.evidence_order);
            match models.span_cosines() {
                Ok(cosines) => {
                    // Unreadable saved vectors only mean encoding spans on demand.
                    let _ = cosines.load_saved(library);
                    Box::new(channel.with_reranker(Box::new(SpanRanking::new(cosines, settings.span_min_words))))
                }
                Err(_) => Box::new(channel),
            }
        }
        ChannelId::Hatten => Box::new(DenseChannel::open(library, models.hatten()?)?),
        ChannelId::Citation => Box::new(CitationChannel::new(library, models.citation_encoder()?, citation_vectors.clone())?),
    })
}

/// The rerank stage with the citation encoder's signals when it is
/// installed (`required`: else an error).
fn rerank_stage(models: &Models, citation_vectors: Option<Arc<LayeredVectors>>, required: bool) -> Result<RerankStage> {
    let stage = RerankStage::new(models.reranker()?);
    match (models.paper_cosines(), models.span_cosines()) {
        (Ok(papers), Ok(spans)) => Ok(stage.with_citation(papers, CitedFor::new(spans), citation_vectors)),
        (Err(e), _) | (_, Err(e)) if required => Err(e),
        _ => Ok(stage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_parse_by_name_and_say_what_is_available() {
        let s = Stages::parse(&["bm25", "citation", RERANK]).unwrap();
        assert_eq!(s, Stages { channels: vec![ChannelId::Bm25, ChannelId::Citation], rerank: true });
        assert_eq!(s.names(), ["bm25", "citation", RERANK]);
        let unknown = Stages::parse(&["bm25", "nope"]).unwrap_err();
        assert!(matches!(unknown, Error::Config(_)), "a setting, not a query: {unknown:?}");
        assert!(unknown.to_string().contains("unknown stage `nope`; available: bm25, evidence, citation, hatten, rerank"));
        assert!(Stages::parse(&[RERANK]).unwrap_err().to_string().contains("no channel selected"));
        assert!(Stages::parse(&["bm25", "fuse"]).is_err(), "the fused list and its records are no stage to choose");
    }

    #[test]
    fn a_draft_is_never_offered_itself_nor_papers_published_after_it_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::open_or_create(dir.path()).unwrap();
        let mut w = lib.papers().writer().unwrap();
        for (i, year) in [Some(1998), Some(2001), None, Some(2004), Some(2010), Some(2015), Some(2003)].into_iter().enumerate() {
            let title = format!("Part-of-speech tagging with hidden Markov models, study {i}");
            w.upsert(&crate::corpus::Paper { id: format!("p{i}"), title, year, ..Default::default() }).unwrap();
        }
        w.finish().unwrap();
        lib.papers().reload().unwrap();
        let rec = Recommender::with_stages(Arc::new(lib), &Models::none(), &["bm25"]).unwrap();
        let ids = |q: &Query| rec.recommend_ids(q).unwrap().candidates.into_iter().map(|c| (c.id, c.fused_rank)).collect::<Vec<_>>();
        let query = Query::new("tagging parts of speech with a hidden Markov model").with_k(4);
        assert_eq!(ids(&query).len(), 4);

        let own = ids(&query.clone().citing(vec!["p3".into(), "p6".into()]));
        assert_eq!(own.len(), 4, "the list is filled from further down");
        assert!(own.iter().all(|(id, _)| id != "p3" && id != "p6"), "{own:?}");
        assert_eq!(own.iter().map(|(_, r)| *r).collect::<Vec<_>>(), [1, 2, 3, 4], "ranks count the papers left");

        let then = ids(&query.clone().with_k(10).written_in(Some(2003)).citing(vec!["p6".into()]));
        let mut kept: Vec<&str> = then.iter().map(|(id, _)| id.as_str()).collect();
        kept.sort();
        assert_eq!(kept, ["p0", "p1", "p2"], "1998, 2001 and the paper of unknown year; not 2003's own draft, nor later ones");

        let dated = query.clone().with_k(10).written_in(Some(2003)).citing(vec!["p6".into()]);
        let lists = rec.channel_lists(&dated).unwrap();
        let listed: Vec<&str> = lists[0].1.ranked.iter().map(|(id, _)| id.as_str()).collect();
        let fused: Vec<&str> = then.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(listed, fused, "the channel lists offline analysis reads are the ones the run fuses");
    }

    #[test]
    fn a_paper_the_passage_names_comes_after_every_other_candidate() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::open_or_create(dir.path()).unwrap();
        let mut w = lib.papers().writer().unwrap();
        let papers = [
            ("acl:J97-3002", "Dekai Wu", 1997, "Stochastic inversion transduction grammars and bilingual parsing of parallel corpora"),
            ("acl:P05-1059", "Hao Zhang", 2005, "Stochastic lexicalized inversion transduction grammar for alignment"),
            ("acl:N06-1033", "Hao Zhang", 2006, "Synchronous binarization of transduction grammars for machine translation"),
        ];
        for (id, author, year, title) in papers {
            let p = crate::corpus::Paper {
                id: id.into(),
                title: title.into(),
                authors: vec![author.into()],
                year: Some(year),
                ..Default::default()
            };
            w.upsert(&p).unwrap();
        }
        w.finish().unwrap();
        lib.papers().reload().unwrap();
        let rec = Recommender::with_stages(Arc::new(lib), &Models::none(), &["bm25"]).unwrap();
        let ranked = |text: &str| {
            rec.recommend_ids(&Query::new(text).with_k(3)).unwrap().candidates.into_iter().map(|c| (c.id, c.fused_rank)).collect::<Vec<_>>()
        };
        let plain = ranked("stochastic inversion transduction grammars for the bilingual parsing of parallel corpora [CIT]");
        assert_eq!(plain[0].0, "acl:J97-3002", "Wu's title shares most words with the passage: {plain:?}");
        let named = ranked(
            "Wu (1997) and [CIT] introduced stochastic inversion transduction grammars for the bilingual parsing of parallel corpora",
        );
        assert_eq!(named.len(), 3, "{named:?}");
        assert_eq!(named[2], ("acl:J97-3002".to_string(), 3), "the passage cites Wu (1997) already: {named:?}");
        assert_eq!(named[0].1, 1);
    }

    #[test]
    fn without_models_a_library_gets_the_word_channels_and_no_rerank_stage() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Arc::new(Library::open_or_create(dir.path()).unwrap());
        let rec = Recommender::new(lib.clone(), &Models::none());
        assert_eq!(rec.stages(), Stages { channels: vec![ChannelId::Bm25, ChannelId::Evidence], rerank: false });
        assert_eq!(rec.rerank_depth(), 0);
        let asked = Recommender::with_stages(lib, &Models::none(), &["bm25", RERANK]).err().expect("no reranker");
        assert!(matches!(asked, Error::ModelOff { .. }), "{asked:?}");
    }
}

//! Retrieval channels: each turns a query into a ranked list of paper ids.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::query::Prepared;
use crate::error::Result;
use crate::index::QueryTf;
use crate::library::Library;

/// A ranked list from one channel, best first.
pub type Ranked = Vec<(String, f32)>;

/// An evidence span shown with a paper: a piece of a sentence in which
/// another paper cited it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceSnippet {
    pub text: String,
    /// How many citing sentences cite the paper with this span.
    pub support: u32,
    pub citing_title: String,
    pub citing_year: Option<i32>,
    /// The citing sentence.
    pub sentence: String,
    /// The file the citing sentence was read from (a PDF, a LaTeX or
    /// Markdown source) and its page there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citing_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citing_page: Option<u32>,
}

/// What a channel returns.
#[derive(Debug, Clone, Default)]
pub struct ChannelOutput {
    pub ranked: Ranked,
    /// How much to trust this list for this query, 0..=1 (each channel
    /// defines its own measure; see [`super::Fusion`]).
    pub confidence: f32,
    /// Evidence found on the way, by paper id.
    pub evidence: HashMap<String, Vec<EvidenceSnippet>>,
}

impl ChannelOutput {
    pub fn plain(ranked: Ranked) -> ChannelOutput {
        ChannelOutput { ranked, confidence: 1.0, evidence: HashMap::new() }
    }
}

/// The channels this build has, in default order. Adding one means a
/// variant here, its `name`/`badge`, its weight in [`super::fusion::Fusion`]
/// and its opening in [`super::recommender`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelId {
    /// BM25 over titles, abstracts and keywords.
    Bm25,
    /// Papers cited by evidence spans that match the query.
    Evidence,
    /// Nearest papers under the citation encoder.
    Citation,
    /// Nearest papers under HAtten.
    Hatten,
}

impl ChannelId {
    /// Every channel, in the order they run.
    pub const ALL: [ChannelId; 4] = [ChannelId::Bm25, ChannelId::Evidence, ChannelId::Citation, ChannelId::Hatten];

    /// Short stable name, used in output, `--stages` and timings.
    pub const fn name(self) -> &'static str {
        match self {
            ChannelId::Bm25 => "bm25",
            ChannelId::Evidence => "evidence",
            ChannelId::Citation => "citation",
            ChannelId::Hatten => "hatten",
        }
    }

    /// The letter the editor shows before the channel's rank.
    pub fn badge(self) -> char {
        match self {
            ChannelId::Bm25 => 'B',
            ChannelId::Evidence => 'E',
            ChannelId::Citation => 'N',
            ChannelId::Hatten => 'H',
        }
    }

    /// The channel of a name, if any.
    pub fn from_name(name: &str) -> Option<ChannelId> {
        ChannelId::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether the channel matches the query's words (not only its meaning).
    pub fn matches_words(self) -> bool {
        matches!(self, ChannelId::Bm25 | ChannelId::Evidence)
    }

    /// The names of every channel, for messages.
    pub fn names() -> String {
        ChannelId::ALL.map(ChannelId::name).join(", ")
    }
}

impl std::fmt::Display for ChannelId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One way of finding candidate papers.
pub trait Channel: Send + Sync {
    fn id(&self) -> ChannelId;
    /// The top `k` paper ids for the query, best first, with channel scores.
    fn retrieve(&self, query: &Prepared, k: usize) -> Result<ChannelOutput>;
}

/// Pseudo-relevance feedback (RM3): the query's terms are joined by the
/// words its best papers share, and BM25 runs again with them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Feedback {
    /// How many of the first search's best papers are read.
    pub docs: usize,
    /// How many of their words join the query.
    pub terms: usize,
    /// The joined words' share of the query's weight (0..1).
    pub weight: f32,
    /// Words held by more than this share of the library's papers never join.
    pub max_share: f32,
}

impl Default for Feedback {
    fn default() -> Feedback {
        Feedback { docs: 10, terms: 20, weight: 0.3, max_share: 0.1 }
    }
}

/// BM25 over the library's title + abstract + keywords. The query is the
/// local context plus the global context (title, abstract) when given.
pub struct Bm25Channel {
    library: Arc<Library>,
    query_tf: QueryTf,
    /// What the query's BM25 over the title alone adds (times this).
    title_weight: f32,
    feedback: Option<Feedback>,
}

impl Bm25Channel {
    pub fn new(library: Arc<Library>) -> Bm25Channel {
        Bm25Channel { library, query_tf: QueryTf::default(), title_weight: 0.0, feedback: None }
    }

    /// How a word the query repeats weighs.
    pub fn with_query_tf(mut self, tf: QueryTf) -> Bm25Channel {
        self.query_tf = tf;
        self
    }

    /// Adds the query's BM25 over titles alone, times `weight`.
    pub fn with_title_weight(mut self, weight: f32) -> Bm25Channel {
        self.title_weight = weight;
        self
    }

    /// Searches twice, the second time with the first's feedback.
    pub fn with_feedback(mut self, feedback: Option<Feedback>) -> Bm25Channel {
        self.feedback = feedback;
        self
    }
}

/// RM3: the words of the `hits` (best first, with BM25 scores) weighted by
/// how much of each paper they make and how well the paper matched, the
/// best `fb.terms` of them (none held by more than `fb.max_share` of the
/// papers) taking `fb.weight` of the query's weight.
fn expanded(
    index: &crate::index::PaperIndex,
    searcher: &tantivy::Searcher,
    terms: &[(String, f32)],
    hits: &[crate::index::Hit],
    fb: Feedback,
) -> Result<Vec<(String, f32)>> {
    let total: f32 = hits.iter().map(|h| h.score.max(0.0)).sum();
    if total <= 0.0 {
        return Ok(terms.to_vec());
    }
    let mut model: HashMap<String, f32> = HashMap::new();
    for h in hits {
        let words = index.indexed_terms(searcher, h.doc)?;
        let len: u32 = words.iter().map(|(_, n)| n).sum();
        for (w, n) in words {
            *model.entry(w).or_default() += (n as f32 / len.max(1) as f32) * (h.score.max(0.0) / total);
        }
    }
    let papers = searcher.num_docs() as f32;
    let mut best: Vec<(String, f32)> =
        model.into_iter().filter(|(w, _)| (index.doc_freq(searcher, w) as f32) <= fb.max_share * papers).collect();
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    best.truncate(fb.terms);
    let query_sum: f32 = terms.iter().map(|(_, w)| w).sum();
    let best_sum: f32 = best.iter().map(|(_, w)| w).sum();
    if query_sum <= 0.0 || best_sum <= 0.0 {
        return Ok(terms.to_vec());
    }
    // Weights kept on the scale of the query's own (the first search's
    // boosts), the joined words taking `fb.weight` of the total.
    let mut out: Vec<(String, f32)> = terms.iter().map(|(t, w)| (t.clone(), w * (1.0 - fb.weight))).collect();
    for (w, p) in best {
        let add = fb.weight * query_sum * p / best_sum;
        match out.iter_mut().find(|(t, _)| *t == w) {
            Some(e) => e.1 += add,
            None => out.push((w, add)),
        }
    }
    Ok(out)
}

impl Channel for Bm25Channel {
    fn id(&self) -> ChannelId {
        ChannelId::Bm25
    }

    fn retrieve(&self, query: &Prepared, k: usize) -> Result<ChannelOutput> {
        let index = self.library.papers();
        let searcher = index.searcher();
        let year = query.query.written_in;
        let terms = index.weighted_terms(&query.full, self.query_tf);
        let mut hits = index.search_terms(&terms, k, year, self.title_weight)?;
        if let Some(fb) = self.feedback.filter(|f| f.docs > 0 && f.terms > 0 && f.weight > 0.0) {
            // The draft's own records are no feedback.
            let first = &hits[..fb.docs.min(hits.len())];
            let ids = index.ids(&searcher, first.iter().map(|h| h.doc))?;
            let feedback: Vec<crate::index::Hit> =
                first.iter().zip(&ids).filter(|(_, id)| !query.query.citing.contains(id)).map(|(h, _)| *h).collect();
            if !feedback.is_empty() {
                hits = index.search_terms(&expanded(index, &searcher, &terms, &feedback, fb)?, k, year, self.title_weight)?;
            }
        }
        let ids = index.ids(&searcher, hits.iter().map(|h| h.doc))?;
        // Confidence: how far the best paper stands out from the second.
        let confidence = match hits.as_slice() {
            [first, second, ..] if first.score > 0.0 => (first.score - second.score) / first.score,
            [_] => 1.0,
            _ => 0.0,
        };
        let ranked = ids.into_iter().zip(hits.iter().map(|h| h.score)).collect();
        Ok(ChannelOutput { ranked, confidence, evidence: HashMap::new() })
    }
}

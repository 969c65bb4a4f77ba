//! What the pipeline answers: ranked candidates with how each stage ranked
//! them, their records and evidence, the timings and the notices. An answer
//! reads back from the JSON it serialises to (`citewise recommend --json`;
//! the editor's snapshot tests keep one as a fixture).

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use super::channel::{ChannelId, EvidenceSnippet};
use super::query::ContextUsed;
use super::stage::{Stage, StageTimings};
use crate::corpus::Paper;

/// How one channel ranked a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChannelScore {
    pub channel: ChannelId,
    /// 1-based rank within the channel.
    pub rank: usize,
    pub score: f32,
}

/// How one signal of the rerank stage ranked a candidate among the
/// reranked ones.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SignalScore {
    /// 1-based rank among the reranked candidates the signal scored.
    pub rank: usize,
    pub score: f32,
}

/// A recommended paper.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub own_words: Vec<String>,
    /// 1-based rank after fusing the channels (before reranking).
    pub fused_rank: usize,
    /// The cross-encoder's rank and score (0..1), when it ran on this paper.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<SignalScore>,
    /// The citation encoder's rank and cosine among the reranked papers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citation: Option<SignalScore>,
    /// Rank and best cosine of the query to the evidence spans citing this
    /// paper, among the reranked papers that have any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cited_for: Option<SignalScore>,
    /// The library's other records of this paper (the same work imported
    /// twice), folded into this entry ([`super::same_work`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub same_work: Vec<String>,
}

impl Candidate {
    /// A candidate found by nothing yet: no score, no record, no ranks.
    pub fn new(id: impl Into<String>) -> Candidate {
        Candidate {
            id: id.into(),
            score: 0.0,
            channels: Vec::new(),
            paper: None,
            evidence: Vec::new(),
            own_words: Vec::new(),
            fused_rank: 0,
            rerank: None,
            citation: None,
            cited_for: None,
            same_work: Vec::new(),
        }
    }

    /// Every record of this entry's work: its own id, then those folded
    /// into it.
    pub fn records(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.id.as_str()).chain(self.same_work.iter().map(String::as_str))
    }
}

/// The answer to a query.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Recommendations {
    /// The last stage that contributed (a channel, or the rerank stage).
    pub stage: Stage,
    /// Whether every stage has run (false for the early results of a stream).
    pub complete: bool,
    pub candidates: Vec<Candidate>,
    /// Wall time per stage, in order.
    #[serde(serialize_with = "ser_timings", deserialize_with = "de_timings")]
    pub timings: StageTimings,
    /// Changes made to the query (e.g. truncation).
    pub notices: Vec<String>,
    /// The context the query carried (local, and title / abstract).
    pub context: ContextUsed,
    /// The query's terms, analysed as the library's papers are: what the
    /// editor highlights in abstracts and evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<String>,
}

/// The notice of a complete answer with no paper in it.
pub const NO_MATCH: &str = "no paper in the library matched the query's words (is it in the library's language?)";

/// The notice of a complete answer whose papers only the channels that
/// compare meaning found, though the word-matching ones ran.
pub const MEANING_ONLY: &str =
    "no paper in the library matched the query's words; these are only near it by meaning (is it in the library's language?)";

/// The notice of an answer from a library that holds no paper (in
/// `library`; none: the default one), in place of [`NO_MATCH`]: what to
/// run to fill it.
pub fn empty_library_notice(library: Option<&std::path::Path>) -> String {
    let cmd = |args: &str| match library {
        Some(dir) => crate::util::citewise_command(dir, args),
        None => format!("citewise {args}"),
    };
    format!("the library holds no papers yet: import some with `{}` (or `{}`)", cmd("import refs.bib"), cmd("import --zotero"))
}

impl Recommendations {
    /// A complete answer with no paper from a library of `papers` papers:
    /// when the library holds none, the notice says so (and what fills it)
    /// instead of [`NO_MATCH`], which would blame the query's words.
    pub fn noting_empty_library(mut self, papers: u64, library: Option<&std::path::Path>) -> Recommendations {
        if self.complete && self.candidates.is_empty() && papers == 0 {
            self.notices.retain(|n| n != NO_MATCH);
            self.notices.insert(0, empty_library_notice(library));
        }
        self
    }

    /// Says so in the notices when every stage ran and nothing was found
    /// (e.g. a query in a script the library's papers are not written in),
    /// or when the word-matching channels ran and found none of the papers
    /// (then only a dense channel's nearest neighbours are left, which for
    /// a language the encoders do not know are close to arbitrary).
    pub(crate) fn noting_no_results(mut self) -> Recommendations {
        if !self.complete {
            return self;
        }
        if self.candidates.is_empty() {
            self.notices.push(NO_MATCH.to_string());
        } else {
            let words_ran = self.timings.iter().any(|(stage, _)| stage.channel().is_some_and(ChannelId::matches_words));
            let words_found = self.candidates.iter().any(|c| c.channels.iter().any(|ch| ch.channel.matches_words()));
            if words_ran && !words_found {
                self.notices.push(MEANING_ONLY.to_string());
            }
        }
        self
    }
}

fn ser_timings<S: serde::Serializer>(t: &[(Stage, Duration)], s: S) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(t.len()))?;
    for (k, d) in t {
        m.serialize_entry(&format!("{k}_ms"), &(d.as_secs_f64() * 1000.0))?;
    }
    m.end()
}

/// Timings as [`ser_timings`] writes them: `{"bm25_ms": 12.0, ...}`, in order.
fn de_timings<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<StageTimings, D::Error> {
    struct Timings;
    impl<'de> serde::de::Visitor<'de> for Timings {
        type Value = StageTimings;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of `<stage>_ms` to milliseconds")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
            use serde::de::Error;
            let mut out = Vec::new();
            while let Some((key, ms)) = map.next_entry::<String, f64>()? {
                let name = key.strip_suffix("_ms").ok_or_else(|| A::Error::custom(format!("timing `{key}` does not end in `_ms`")))?;
                let stage = Stage::from_name(name).ok_or_else(|| A::Error::custom(format!("timing `{key}` is of no stage")))?;
                let wall = Duration::try_from_secs_f64(ms / 1000.0).map_err(A::Error::custom)?;
                out.push((stage, wall));
            }
            Ok(out)
        }
    }
    d.deserialize_map(Timings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ChannelId::{Bm25, Citation, Evidence};

    fn answer(stages: &[ChannelId], found_by: &[&[ChannelId]]) -> Recommendations {
        let candidates = found_by
            .iter()
            .enumerate()
            .map(|(i, chs)| Candidate {
                score: 1.0,
                channels: chs.iter().map(|&channel| ChannelScore { channel, rank: i + 1, score: 1.0 }).collect(),
                fused_rank: i + 1,
                ..Candidate::new(format!("p{i}"))
            })
            .collect();
        let timings = stages.iter().map(|&s| (Stage::Channel(s), Duration::ZERO)).collect();
        Recommendations { stage: Stage::Fuse, complete: true, candidates, timings, ..Default::default() }
    }

    #[test]
    fn an_answer_found_only_by_meaning_says_so_when_word_channels_ran() {
        let meaning_only = answer(&[Bm25, Evidence, Citation], &[&[Citation], &[Citation]]).noting_no_results();
        assert_eq!(meaning_only.notices, [MEANING_ONLY]);
        let with_words = answer(&[Bm25, Evidence, Citation], &[&[Citation], &[Bm25, Citation]]).noting_no_results();
        assert!(with_words.notices.is_empty(), "{:?}", with_words.notices);
        let citation_alone = answer(&[Citation], &[&[Citation]]).noting_no_results();
        assert!(citation_alone.notices.is_empty(), "only the citation channel was asked for");
        assert_eq!(answer(&[Bm25, Citation], &[]).noting_no_results().notices, [NO_MATCH]);
        let mut partial = answer(&[Bm25, Citation], &[&[Citation]]);
        partial.complete = false;
        assert!(partial.noting_no_results().notices.is_empty(), "early results of a stream say nothing yet");
    }

    /// No paper matched in a library of none is no fault of the query's
    /// words: the notice says the library is empty and how to fill it.
    #[test]
    fn an_empty_library_is_said_to_be_empty() {
        let empty = answer(&[Bm25], &[]).noting_no_results();
        assert_eq!(empty.notices, [NO_MATCH]);
        let said = empty.clone().noting_empty_library(0, None);
        assert_eq!(
            said.notices,
            ["the library holds no papers yet: import some with `citewise import refs.bib` (or `citewise import --zotero`)"]
        );
        let lib = std::path::Path::new("/tmp/my lib");
        assert!(empty.clone().noting_empty_library(0, Some(lib)).notices[0].contains("`citewise --library '/tmp/my lib' import refs.bib`"));
        assert_eq!(empty.clone().noting_empty_library(3, None).notices, [NO_MATCH], "a library with papers: the words matched none");
        let mut partial = answer(&[Bm25], &[]);
        partial.complete = false;
        assert!(partial.noting_empty_library(0, None).notices.is_empty(), "early results say nothing yet");
    }

    #[test]
    fn channel_names_serialise_as_before() {
        let s = ChannelScore { channel: Citation, rank: 2, score: 0.5 };
        assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"channel":"citation","rank":2,"score":0.5}"#);
    }

    /// An answer's stage and timings are written by the stages' names, and
    /// read back.
    #[test]
    fn stages_serialise_by_name() {
        let ms = Duration::from_millis;
        let r = Recommendations {
            stage: Stage::Rerank,
            timings: vec![(Stage::Channel(Bm25), ms(12)), (Stage::Fuse, ms(1)), (Stage::Records, ms(3)), (Stage::Rerank, ms(230))],
            ..Default::default()
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["stage"], "rerank");
        assert_eq!(json["timings"], serde_json::json!({"bm25_ms": 12.0, "fuse_ms": 1.0, "records_ms": 3.0, "rerank_ms": 230.0}));
        let back: Recommendations = serde_json::from_value(json).unwrap();
        let stages = |t: &StageTimings| t.iter().map(|(s, _)| *s).collect::<Vec<_>>();
        assert_eq!((back.stage, stages(&back.timings)), (r.stage, stages(&r.timings)));
    }
}

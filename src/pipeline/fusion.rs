//! Fusing the channels' lists: weighted reciprocal-rank fusion in which
//! each list weighs as much as its channel is confident for this query.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::answer::{Candidate, ChannelScore};
use super::channel::{ChannelId, ChannelOutput};
use crate::error::{Error, Result};
use crate::neural::field::FieldGate;

/// How channel lists are fused, and how the rerank stage's signals weigh
/// against the fused order. The evidence list counts in proportion to the
/// evidence channel's confidence (lexical and semantic match of its best
/// spans; none at or below `min_confidence`); the BM25 list can gain weight
/// when its best paper stands out from the second. Defaults chosen on the
/// benchmark's `val` split and sources held out of it (see CHANGELOG).
/// Deserialised from a partial map: a missing field keeps its default, an
/// unknown one is an error.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Fusion {
    pub rrf_k: f32,
    /// Weight of the evidence list at full confidence.
    pub evidence_weight: f32,
    /// Evidence confidence (0..=1, see `EvidenceChannel::confidence`) at
    /// and below which the evidence list is ignored.
    pub min_confidence: f32,
    /// BM25 weighs `1 + bm25_gap_weight × (s1 − s2) / s1`.
    pub bm25_gap_weight: f32,
    /// Weight of the HAtten list: 0.5, checked on `val` and on the sources
    /// held out of the evidence database, where the fields disagree (see
    /// CHANGELOG). It is gated by the query's coverage by HAtten's training
    /// field (the channel's confidence): none at or below `hatten_field_lo`,
    /// all from `hatten_field_hi` on.
    pub hatten_weight: f32,
    pub hatten_field_lo: f32,
    pub hatten_field_hi: f32,
    /// Weight of the citation channel's list (the citation encoder's
    /// nearest papers) when the evidence channel is fully confident.
    pub citation_weight: f32,
    /// Weight of the citation channel's list when the evidence channel has
    /// nothing to say (confidence 0, or no evidence channel): the citation
    /// encoder, a general model of citing, stands in for the evidence of a
    /// field the database does not know. Linear between the two.
    pub citation_weight_without_evidence: f32,
    /// What a citation list of the student's stand-in vectors alone weighs,
    /// as a share of the citation weight (the channel's confidence is the
    /// share of its list that the citation encoder's own vectors found;
    /// linear between the two).
    #[serde(default = "stand_in_weight")]
    pub citation_stand_in_weight: f32,
    /// Weight of the cross-encoder's order against the fused order among
    /// the reranked candidates (both by reciprocal rank with `rrf_k`),
    /// gated by the query's coverage by the reranker's training field
    /// between `rerank_field_lo` and `rerank_field_hi` (at zero the
    /// cross-encoder does not run).
    pub rerank_weight: f32,
    pub rerank_field_lo: f32,
    pub rerank_field_hi: f32,
    /// The rerank stage runs only for a query whose evidence confidence
    /// (the evidence channel's, 0 when the library holds no citing
    /// sentence that speaks of the claim) is above this; below it the
    /// fused order is the answer. The stage's signals were learned from,
    /// and weigh what was cited for, the claims of the field its citing
    /// sentences come from: where the library's evidence says nothing of
    /// a claim they lowered every figure (ACM-CR, a field no model here
    /// was trained on: R@10 −0.021, nDCG@10 −0.015 against the fused
    /// prefetch, and no gate on the cross-encoder's own confidence or its
    /// agreement with the channels closed that gap; see CHANGELOG). A
    /// negative value runs the stage for every query.
    pub rerank_min_evidence: f32,
    /// Weight of the citation encoder's order among the reranked candidates
    /// (by reciprocal rank with `rrf_k`).
    pub rerank_citation_weight: f32,
    /// Weight of the cited-for order (see `CitedFor`) in the rerank stage
    /// when the evidence channel is fully confident; it scales with that
    /// confidence (`Fusion::cited_for_weight_at`). 0.25: on the fields held
    /// out of the evidence database (`scripts/dev-split.py --hold-out`)
    /// the signal lifts the candidates the database cites over a cited
    /// paper it does not (acl-arc R@10 0.255 at 0.5, 0.272 at 0.25, 0.285
    /// without it), while on `val` 0.25 keeps nearly all it adds (0.668
    /// against 0.669 at 0.5 and 0.656 without it).
    pub cited_for_weight: f32,
    /// Weight of each claim's fused list against the whole context's (1)
    /// when the context asks for citations in several sentences
    /// ([`super::claims`]); at zero only the whole context is searched.
    /// On ACM-CR dev's paragraphs (3.6 places each) merging by reciprocal
    /// rank (`rrf_k`) with weight 1 lifted R@10 0.510 → 0.536 and nDCG@10
    /// 0.431 → 0.463; a context with one claim (every `val` and held-out
    /// benchmark context but a handful) is not touched (see CHANGELOG).
    pub claim_weight: f32,
    /// How far this library's evidence is trusted (0..=1.5): the evidence
    /// channel's confidence is scaled by it before anything reads it (its
    /// list's weight, the citation list's share, the cited-for signal and
    /// the rerank stage's gate). 1 as shipped; a library learns its own
    /// from its citing documents ([`super::learned_fusion`]): citing
    /// sentences of papers on other topics than the draft's pull their
    /// cited papers up for every query (ACM-CR dev, in-field evidence of
    /// other citing papers: MRR 0.494 → 0.458).
    #[serde(default = "full_trust")]
    pub evidence_trust: f32,
}

fn full_trust() -> f32 {
    1.0
}

fn stand_in_weight() -> f32 {
    0.5
}

impl Default for Fusion {
    fn default() -> Fusion {
        Fusion {
            rrf_k: 5.0,
            evidence_weight: 2.0,
            min_confidence: 0.0,
            bm25_gap_weight: 0.0,
            hatten_weight: 0.5,
            hatten_field_lo: 0.5,
            hatten_field_hi: 0.8,
            citation_weight: 0.75,
            citation_weight_without_evidence: 1.0,
            citation_stand_in_weight: stand_in_weight(),
            rerank_weight: 0.5,
            rerank_field_lo: 0.5,
            rerank_field_hi: 0.8,
            rerank_min_evidence: 0.0,
            rerank_citation_weight: 0.25,
            cited_for_weight: 0.25,
            claim_weight: 1.0,
            evidence_trust: full_trust(),
        }
    }
}

impl Fusion {
    /// Applies `key=value,...` overrides (any field's name as the key).
    pub fn with_overrides(self, spec: &str) -> Result<Fusion> {
        let mut fields = match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => unreachable!("Fusion serialises as a map"),
        };
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| Error::Config(format!("fusion setting `{part}` is not key=value")))?;
            let v: f64 = v.trim().parse().map_err(|_| Error::Config(format!("fusion setting `{part}`: not a number")))?;
            fields.insert(k.trim().to_string(), serde_json::json!(v));
        }
        serde_json::from_value(serde_json::Value::Object(fields)).map_err(|e| Error::Config(format!("fusion settings `{spec}`: {e}")))
    }

    /// The weight of the cited-for order for a query whose evidence
    /// confidence is `confidence`: what other authors cited a paper for
    /// speaks to the query only as far as the evidence database speaks of
    /// its claim at all. Where it does not (a field the database has not
    /// seen), the few candidates with evidence would be lifted over the
    /// cited paper for no reason.
    pub fn cited_for_weight_at(&self, confidence: f32) -> f32 {
        self.cited_for_weight * confidence.clamp(0.0, 1.0)
    }

    /// The confidence a channel's list is read with: the evidence
    /// channel's scaled by [`Fusion::evidence_trust`], the others' as they
    /// are.
    pub fn trusted(&self, channel: ChannelId, confidence: f32) -> f32 {
        match channel {
            ChannelId::Evidence => (confidence * self.evidence_trust).clamp(0.0, 1.0),
            _ => confidence,
        }
    }

    /// The gate of the HAtten list at a field coverage.
    pub fn hatten_gate(&self) -> FieldGate {
        FieldGate { lo: self.hatten_field_lo, hi: self.hatten_field_hi }
    }

    /// The gate of the cross-encoder at a field coverage.
    pub fn rerank_gate(&self) -> FieldGate {
        FieldGate { lo: self.rerank_field_lo, hi: self.rerank_field_hi }
    }

    /// The weight of a channel's list given its confidence and the evidence
    /// channel's (0 when it did not run).
    pub fn weight(&self, channel: ChannelId, confidence: f32, evidence_confidence: f32) -> f32 {
        match channel {
            ChannelId::Evidence if confidence <= self.min_confidence => 0.0,
            ChannelId::Evidence => {
                self.evidence_weight * ((confidence - self.min_confidence) / (1.0 - self.min_confidence).max(1e-6)).min(1.0)
            }
            ChannelId::Bm25 => 1.0 + self.bm25_gap_weight * confidence,
            ChannelId::Hatten => self.hatten_weight * self.hatten_gate().weight(confidence),
            ChannelId::Citation => {
                let e = evidence_confidence.clamp(0.0, 1.0);
                let own = confidence.clamp(0.0, 1.0);
                (self.citation_weight * e + self.citation_weight_without_evidence * (1.0 - e))
                    * (own + self.citation_stand_in_weight * (1.0 - own))
            }
        }
    }
}

/// Weighted reciprocal-rank fusion of channel lists (see [`Fusion`]). A
/// single list keeps its own order and scores. Every channel that found a
/// paper is recorded, including one whose weight was zero for this query.
pub fn fuse(outputs: &[(ChannelId, ChannelOutput)], fusion: &Fusion) -> Vec<Candidate> {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<Candidate> = Vec::new();
    let evidence = outputs.iter().find(|(id, _)| *id == ChannelId::Evidence).map_or(0.0, |(_, o)| o.confidence);
    for (channel, output) in outputs {
        let weight = fusion.weight(*channel, output.confidence, evidence);
        for (i, (id, score)) in output.ranked.iter().enumerate() {
            let idx = *by_id.entry(id.as_str()).or_insert_with(|| {
                out.push(Candidate::new(id.clone()));
                out.len() - 1
            });
            let c = &mut out[idx];
            c.channels.push(ChannelScore { channel: *channel, rank: i + 1, score: *score });
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
    use ChannelId::{Bm25, Citation, Evidence, Hatten};

    fn list(ids: &[&str]) -> ChannelOutput {
        ChannelOutput::plain(ids.iter().enumerate().map(|(i, id)| (id.to_string(), 10.0 - i as f32)).collect())
    }

    fn with_confidence(mut o: ChannelOutput, c: f32) -> ChannelOutput {
        o.confidence = c;
        o
    }

    #[test]
    fn single_channel_keeps_order_and_scores() {
        let c = fuse(&[(Bm25, list(&["a", "b", "c"]))], &Fusion::default());
        assert_eq!(c.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(c[1].score, 9.0);
        assert_eq!(c[1].channels, vec![ChannelScore { channel: Bm25, rank: 2, score: 9.0 }]);
    }

    #[test]
    fn rrf_rewards_agreement() {
        let c = fuse(&[(Hatten, list(&["a", "b", "c"])), (Citation, list(&["d", "b", "e"]))], &Fusion::default());
        assert_eq!(c[0].id, "b", "second in both beats first in one");
        assert_eq!(c[0].channels.len(), 2);
        assert_eq!(c.len(), 5);
    }

    #[test]
    fn weak_evidence_is_ignored_and_strong_evidence_leads() {
        let f = Fusion { rrf_k: 60.0, min_confidence: 0.3, ..Fusion::default() };
        let bm25 = list(&["a", "b", "c"]);
        let weak = fuse(&[(Bm25, bm25.clone()), (Evidence, with_confidence(list(&["z", "c"]), 0.2))], &f);
        assert_eq!(weak.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["a", "b", "c", "z"]);
        assert_eq!(weak[2].channels.len(), 2, "the evidence rank is still recorded");
        let strong = fuse(&[(Bm25, bm25), (Evidence, with_confidence(list(&["z", "c"]), 1.0))], &f);
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
    fn hatten_speaks_inside_its_field_and_citation_stands_in_for_missing_evidence() {
        let f = Fusion::default();
        assert_eq!(f.weight(Hatten, 1.0, 1.0), f.hatten_weight);
        assert_eq!(f.weight(Hatten, f.hatten_field_lo, 1.0), 0.0, "out of its training field HAtten is silent");
        let mid = f.weight(Hatten, (f.hatten_field_lo + f.hatten_field_hi) / 2.0, 1.0);
        assert!((mid - f.hatten_weight / 2.0).abs() < 1e-6);
        assert_eq!(f.weight(Citation, 1.0, 1.0), f.citation_weight);
        // A list of the student's stand-ins alone weighs their share; a mixed one, between.
        assert!((f.weight(Citation, 0.0, 1.0) - f.citation_weight * f.citation_stand_in_weight).abs() < 1e-6);
        let half = f.weight(Citation, 0.5, 1.0);
        assert!(half > f.weight(Citation, 0.0, 1.0) && half < f.citation_weight);
        assert_eq!(f.weight(Citation, 1.0, 0.0), f.citation_weight_without_evidence);
        assert!((f.weight(Citation, 1.0, 0.5) - (f.citation_weight + f.citation_weight_without_evidence) / 2.0).abs() < 1e-6);
        // In a fused list the evidence channel's confidence sets the citation list's weight.
        let cit = |conf: f32| {
            let c = fuse(&[(Bm25, list(&["a", "b"])), (Evidence, with_confidence(list(&["z"]), conf)), (Citation, list(&["b", "a"]))], &f);
            c.iter().find(|c| c.id == "b").unwrap().score
        };
        assert!(cit(0.0) > cit(1.0), "citation weighs more when the evidence has nothing to say");
    }

    #[test]
    fn the_cross_encoder_is_gated_by_its_field() {
        let f = Fusion::default();
        assert_eq!(crate::pipeline::rerank::Weights::of(&f, 1.0, 0.9).rerank, f.rerank_weight);
        assert_eq!(crate::pipeline::rerank::Weights::of(&f, 1.0, 0.4).rerank, 0.0);
        let open = f.with_overrides("rerank_field_lo=0,rerank_field_hi=0").unwrap();
        assert_eq!(crate::pipeline::rerank::Weights::of(&open, 1.0, 0.01).rerank, open.rerank_weight);
        use crate::pipeline::rerank::{Weights, AGREEMENT_KEEPS_FIRST, AGREEMENT_OUT_OF_FIELD};
        assert_eq!(Weights::of(&f, 1.0, 0.9).agreement, AGREEMENT_KEEPS_FIRST, "in the field two channels hold the first paper");
        assert_eq!(Weights::of(&f, 1.0, 0.7).agreement, AGREEMENT_OUT_OF_FIELD, "the gate half open: one channel holds it");
        assert_eq!(Weights::of(&open, 1.0, 0.01).agreement, AGREEMENT_KEEPS_FIRST, "a gate always open is always in the field");
    }

    #[test]
    fn the_rerank_stage_runs_only_where_the_evidence_speaks_of_the_claim() {
        use crate::pipeline::rerank::Weights;
        let f = Fusion::default();
        assert!(Weights::of(&f, 0.0, 1.0).off(), "no evidence for the claim: the fused order stands");
        let on = Weights::of(&f, 0.05, 1.0);
        assert!(!on.off());
        assert_eq!((on.rerank, on.citation), (f.rerank_weight, f.rerank_citation_weight));
        let always = f.with_overrides("rerank_min_evidence=-1").unwrap();
        let without = Weights::of(&always, 0.0, 1.0);
        assert!(!without.off(), "a negative threshold runs the stage for every query");
        assert_eq!((without.rerank, without.cited_for), (f.rerank_weight, 0.0), "cited-for still follows the evidence");
        let stricter = f.with_overrides("rerank_min_evidence=0.5").unwrap();
        assert!(Weights::of(&stricter, 0.5, 1.0).off() && !Weights::of(&stricter, 0.51, 1.0).off());
    }

    #[test]
    fn fusion_overrides_parse_through_serde() {
        let f = Fusion::default().with_overrides("evidence_weight=3, min_confidence=0.5").unwrap();
        assert_eq!((f.evidence_weight, f.min_confidence, f.rrf_k), (3.0, 0.5, Fusion::default().rrf_k));
        let renamed = Fusion::default().with_overrides("rerank_citation_weight=0.4").unwrap();
        assert_eq!(renamed.rerank_citation_weight, 0.4);
        let unknown = Fusion::default().with_overrides("nope=1").unwrap_err().to_string();
        assert!(unknown.contains("unknown field `nope`"), "{unknown}");
        assert!(Fusion::default().with_overrides("rrf_k").is_err());
        assert!(Fusion::default().with_overrides("rrf_k=x").is_err());
    }

    #[test]
    fn a_partial_table_keeps_the_other_defaults() {
        let f: Fusion = toml::from_str("hatten_weight = 1.0").unwrap();
        assert_eq!(f, Fusion { hatten_weight: 1.0, ..Fusion::default() });
    }
}

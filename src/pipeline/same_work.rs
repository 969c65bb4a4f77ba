//! One entry per work. A library can hold one paper under two records: the
//! same paper imported from two sources, or a reference list's bare record
//! beside the full one (the benchmark pool holds 921 titles twice). The
//! fused list shows each work once, where its best-ranked record stood,
//! as the record that tells the reader most (an abstract, a year), with the
//! other records' ids beside it ([`Candidate::same_work`]).
//!
//! Which records are one work is [`crate::corpus::work`]'s rule.

use std::collections::HashMap;

use super::answer::Candidate;
use crate::corpus::work::{identifying_title, same_work, title_key, Strictness};
use crate::corpus::Paper;
use crate::error::Result;
use crate::index::PaperIndex;

/// Collapses the records of one work among the best candidates, until
/// `want` distinct works are kept (or the list ends), and drops the rest.
/// Reads each visited candidate's record where it has none yet. Fused
/// ranks are renumbered over the works kept.
pub fn collapse(candidates: &mut Vec<Candidate>, papers: &PaperIndex, want: usize) -> Result<()> {
    let mut kept: Vec<Candidate> = Vec::with_capacity(want.min(candidates.len()));
    let mut by_title: HashMap<String, Vec<usize>> = HashMap::new();
    for mut c in std::mem::take(candidates) {
        if kept.len() == want {
            break;
        }
        if c.paper.is_none() {
            c.paper = papers.paper_by_id(&c.id)?;
        }
        let Some(title) = c.paper.as_ref().filter(|p| identifying_title(&p.title)).map(|p| title_key(&p.title)) else {
            kept.push(c);
            continue;
        };
        let group = by_title.entry(title).or_default();
        match group.iter().copied().find(|&i| one_work(kept[i].paper.as_ref(), c.paper.as_ref())) {
            Some(i) => absorb(&mut kept[i], c),
            None => {
                group.push(kept.len());
                kept.push(c);
            }
        }
    }
    for (i, c) in kept.iter_mut().enumerate() {
        c.fused_rank = i + 1;
    }
    *candidates = kept;
    Ok(())
}

/// Every record of paper `id`'s work that the library holds, `id` first,
/// by the rule [`collapse`] folds them by: what counts as finding that
/// paper when it is looked for (an evaluation's cited paper).
pub fn records_of(papers: &PaperIndex, id: &str) -> Result<Vec<String>> {
    let mut out = vec![id.to_string()];
    let Some(p) = papers.paper_by_id(id)? else { return Ok(out) };
    if !identifying_title(&p.title) {
        return Ok(out);
    }
    for o in papers.title_candidates(&p.title, 10)? {
        if o.id != p.id && same_work(&p, &o, Strictness::Exact) {
            out.push(o.id);
        }
    }
    out[1..].sort();
    Ok(out)
}

/// Whether two candidates' records are one work.
fn one_work(a: Option<&Paper>, b: Option<&Paper>) -> bool {
    a.zip(b).is_some_and(|(a, b)| same_work(a, b, Strictness::Exact))
}

/// How much a record tells the reader: an abstract first, then a year,
/// authors and a venue.
fn richness(p: Option<&Paper>) -> (bool, bool, bool, bool) {
    p.map_or((false, false, false, false), |p| {
        (!p.abstract_text.trim().is_empty(), p.year.is_some(), !p.authors.is_empty(), !p.venue.is_empty())
    })
}

/// Folds `other` (ranked lower) into `kept`, the entry of its work: `kept`
/// keeps its place and score, shows the richer record, and takes each
/// channel's better rank.
fn absorb(kept: &mut Candidate, mut other: Candidate) {
    if richness(other.paper.as_ref()) > richness(kept.paper.as_ref()) {
        std::mem::swap(&mut kept.id, &mut other.id);
        std::mem::swap(&mut kept.paper, &mut other.paper);
    }
    kept.same_work.push(other.id);
    kept.same_work.append(&mut other.same_work);
    for s in other.channels {
        match kept.channels.iter_mut().find(|k| k.channel == s.channel) {
            Some(k) if k.rank <= s.rank => {}
            Some(k) => *k = s,
            None => kept.channels.push(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{ChannelId, ChannelScore};

    fn paper(id: &str, title: &str, year: Option<i32>, abstract_text: &str) -> Paper {
        Paper { id: id.into(), title: title.into(), year, abstract_text: abstract_text.into(), ..Paper::default() }
    }

    fn index(papers: &[Paper]) -> (tempfile::TempDir, PaperIndex) {
        let dir = tempfile::tempdir().unwrap();
        let index = PaperIndex::open_or_create(dir.path()).unwrap();
        let mut w = index.writer().unwrap();
        for p in papers {
            w.upsert(p).unwrap();
        }
        w.finish().unwrap();
        index.reload().unwrap();
        (dir, index)
    }

    fn ranked(ids: &[&str]) -> Vec<Candidate> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| Candidate {
                score: 1.0 / (i + 1) as f32,
                fused_rank: i + 1,
                channels: vec![ChannelScore { channel: ChannelId::Bm25, rank: i + 1, score: 1.0 }],
                ..Candidate::new(*id)
            })
            .collect()
    }

    // The benchmark pool's own case: the ACL Anthology record of Church
    // (1988) and the bare record a reference list made of it.
    fn church() -> Vec<Paper> {
        vec![
            paper("aclarc:36a0398dfc65", "a stochastic parts program and nounphrase parser for unrestricted text", None, ""),
            paper(
                "acl:A88-1019",
                "A Stochastic Parts Program and Noun Phrase Parser for Unrestricted Text",
                Some(1988),
                "A program that tags each word in an input sentence with the most likely part of speech has been written.",
            ),
            paper("acl:P99-1", "A stochastic parts program and noun phrase parser for unrestricted text", Some(1999), "A later paper."),
            paper("acl:X", "Introduction", Some(2000), ""),
            paper("acl:Y", "Introduction", Some(2000), "Another introduction."),
            paper("acl:Z", "Statistical parsing of noun phrases", Some(1990), "Parsing."),
            Paper { doi: "10.1145/3260414".into(), ..paper("acm:1", "Session details: Keynote address", Some(2016), "") },
            Paper { doi: "10.1145/3260420".into(), ..paper("acm:2", "Session Details: Keynote Address", Some(2016), "") },
        ]
    }

    #[test]
    fn one_work_is_shown_once_where_its_best_record_stood_as_its_richest_record() {
        let (_dir, index) = index(&church());
        let mut c = ranked(&["acl:Z", "aclarc:36a0398dfc65", "acl:X", "acl:A88-1019", "acl:Y", "acm:1", "acm:2"]);
        collapse(&mut c, &index, 10).unwrap();
        let ids: Vec<&str> = c.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["acl:Z", "acl:A88-1019", "acl:X", "acl:Y", "acm:1", "acm:2"], "short titles and two DOIs stay apart");
        assert_eq!(c[1].same_work, ["aclarc:36a0398dfc65"]);
        assert_eq!(c[1].paper.as_ref().unwrap().year, Some(1988), "the record with an abstract and a year is shown");
        assert_eq!(c[1].score, 1.0 / 2.0, "the work keeps its best record's place and score");
        assert_eq!(c.iter().map(|c| c.fused_rank).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(c[1].channels[0].rank, 2, "each channel's better rank");
    }

    #[test]
    fn the_same_title_a_decade_apart_is_another_work_and_the_list_stops_at_the_works_wanted() {
        let (_dir, index) = index(&church());
        let mut c = ranked(&["acl:A88-1019", "acl:P99-1", "aclarc:36a0398dfc65", "acl:Z", "acl:X"]);
        collapse(&mut c, &index, 3).unwrap();
        let ids: Vec<&str> = c.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["acl:A88-1019", "acl:P99-1", "acl:Z"]);
        // The bare record has no year: it joins the first work its title matches.
        assert_eq!(c[0].same_work, ["aclarc:36a0398dfc65"]);
        assert!(c[1].same_work.is_empty());
    }

    #[test]
    fn the_records_of_a_work_are_those_collapse_folds_into_it() {
        let (_dir, index) = index(&church());
        assert_eq!(
            records_of(&index, "aclarc:36a0398dfc65").unwrap(),
            ["aclarc:36a0398dfc65", "acl:A88-1019", "acl:P99-1"],
            "no year: either dated record"
        );
        assert_eq!(records_of(&index, "acl:A88-1019").unwrap(), ["acl:A88-1019", "aclarc:36a0398dfc65"], "not the paper of 1999");
        assert_eq!(records_of(&index, "acm:1").unwrap(), ["acm:1"], "two DOIs are two works");
        assert_eq!(records_of(&index, "acl:X").unwrap(), ["acl:X"], "a short title stays alone");
        assert_eq!(records_of(&index, "missing:1").unwrap(), ["missing:1"]);
    }

    #[test]
    fn papers_the_library_does_not_hold_stay_as_they_are() {
        let (_dir, index) = index(&church());
        let mut c = ranked(&["missing:1", "acl:Z", "missing:1b"]);
        collapse(&mut c, &index, 10).unwrap();
        assert_eq!(c.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["missing:1", "acl:Z", "missing:1b"]);
    }
}

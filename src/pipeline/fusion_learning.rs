//! Learning a library's fusion from its citing documents (the value and its
//! file are [`super::learned_fusion`]'s): how far its evidence is to be
//! trusted ([`Fusion::evidence_trust`]), and whether the rerank stage
//! speaks where the evidence opens its gate.
//!
//! Every citing sentence of the library (a PDF's, a LaTeX source's, a
//! Zotero attachment's) is a query whose answer is known: the papers it
//! cites. Each is searched as a draft would be, with its own citing
//! document's evidence set aside (the paper it comes from is never its own
//! evidence), so the evidence it meets is what *other* documents of the
//! library say: exactly what a new draft meets. Its channels' lists are
//! fused at each trust of [`TRUSTS`], and the trust that ranks the cited
//! papers best (R@10 and reciprocal rank, averaged) is kept only if it
//! beats the shipped trust (1) beyond the sentences' own spread (a paired
//! bootstrap interval above 0); otherwise the shipped fusion stays. Then,
//! at that trust, up to 150 of the same sentences are answered with and
//! without the rerank stage, and it keeps speaking where the library's
//! evidence opens its gate unless it orders them worse than the fused list
//! (a choice between two ways, so the better measured one is taken; the
//! stage's signals were learned in the benchmark's field, and on ACM-CR dev
//! with in-field evidence it lowered R@10 by 0.012 and nDCG@10 by 0.010,
//! while on the benchmark's PDFs it lifts them).
//!
//! Why: evidence from citing papers on other topics than a draft's pulls
//! their cited papers up for every query. On ACM-CR dev, with the other
//! folds' citing sentences as the library's evidence, MRR fell from 0.494
//! to 0.458 and fell in every fold; on the benchmark's ACL field the same
//! kind of evidence lifts R@10 from 0.08 to 0.74. Which of the two a
//! library is, only its own documents can say.
//!
//! `import --evidence` learns it after new citing sentences, `embed` again
//! when the channels changed, `adapt`, `adapt --reranker` and `distill`
//! when they published or removed an adaptation ([`stale`]), `adapt
//! --fusion` by hand; the
//! editor and the language server learn it in the background whenever it
//! is [`due`] (after a Zotero sync read new PDFs, an import with
//! `--no-embed`, new vectors), unless it is turned off
//! ([`super::learned_fusion::turn_off`], the `background_learning` setting).

use std::collections::{BTreeMap, HashSet};

use super::fusion::{fuse, Fusion};
use super::learned_fusion::{Figures, LearnedFusion, RerankCheck, LEVEL};
use super::query::Query;
use super::recommender::Recommender;
use crate::corpus::citation_markup::{strip_citations, CiteGrammar};
use crate::error::{Error, Result};
use crate::library::Library;
use crate::ranking::{paired_bootstrap, recall_at, reciprocal_rank};

/// The trusts tried (1 is the shipped fusion's).
pub const TRUSTS: [f32; 7] = [0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5];

/// A citing sentence needs this many words (markers removed) to be a query.
const MIN_WORDS: usize = 6;

/// How much the library's own sentences are asked, and how sure a change
/// must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Citing sentences searched, at most (spread over the documents).
    pub sentences: usize,
    /// Of those, the ones answered with and without the rerank stage, at
    /// most (the cross-encoder is the slow part on a CPU).
    pub rerank_sentences: usize,
    /// Fewer citing documents than this teach nothing.
    pub min_documents: usize,
    /// Fewer usable citing sentences than this teach nothing.
    pub min_sentences: usize,
    /// The level of the bootstrap interval that must lie above 0.
    pub level: f64,
    pub rounds: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options { sentences: 300, rerank_sentences: 150, min_documents: 3, min_sentences: 30, level: LEVEL, rounds: 2000 }
    }
}

/// What learning came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Learned(Box<LearnedFusion>),
    /// Too few citing sentences or documents to learn from.
    TooFew {
        sentences: usize,
        documents: usize,
    },
}

/// The names of the channels `rec` fuses.
pub fn channel_names(rec: &Recommender) -> Vec<String> {
    rec.stages().channels.iter().map(|c| c.name().to_string()).collect()
}

/// Why a learned fusion no longer describes the library `rec` ranks (its
/// evidence, its channels or its adapted models changed since), if it does
/// not.
pub fn stale(learned: &LearnedFusion, rec: &Recommender) -> Option<String> {
    let spans = rec.library().evidence().num_spans();
    let channels = channel_names(rec);
    if learned.spans != spans {
        Some(format!("learned with {} evidence spans, now {spans}", learned.spans))
    } else if learned.channels != channels {
        Some(format!("learned with the channels {}, now {}", learned.channels.join("+"), channels.join("+")))
    } else {
        models_changed(&learned.models, rec.library())
    }
}

/// Why what a library learned with the adapted models `learned_with` no
/// longer holds, if an adaptation was published or removed since (the
/// trust and rerank gate here, `check`'s flag in `check::calibration`).
pub fn models_changed(learned_with: &[String], lib: &Library) -> Option<String> {
    let now = crate::library::adapt::published(lib.dir());
    if learned_with == now.as_slice() {
        return None;
    }
    // Each line's first word is the stage (its size and time tell
    // publishings apart, not the user).
    let names = |m: &[String]| m.iter().filter_map(|l| l.split_whitespace().next()).collect::<Vec<_>>().join(" and ");
    Some(match (learned_with.is_empty(), now.is_empty()) {
        (true, _) => format!("learned with the default models, now with adapted ones ({})", names(&now)),
        (false, true) => format!("learned with adapted models ({}), now the default ones", names(learned_with)),
        (false, false) => format!("learned with models adapted before the ones published now ({})", names(&now)),
    })
}

/// The evidence spans may change by this share of those the trust was
/// learned with before it is learned again by itself (a PDF more among
/// dozens does not call for a minute of searching; a new set of documents
/// does).
pub const RELEARN_SHARE: f64 = 0.1;

/// Whether the evidence moved from `learned_with` spans to `now` by less
/// than [`RELEARN_SHARE`]: not worth learning again by itself (the trust
/// here, `check`'s flag in `check::calibration`).
pub fn moved_little(learned_with: u64, now: u64) -> bool {
    ((now as f64) - (learned_with as f64)).abs() < RELEARN_SHARE * learned_with as f64
}

/// Why the library `rec` ranks should learn its trust (again) by itself, if
/// it should: it never learned one and has evidence, the channels or the
/// adapted models changed, or its evidence changed by [`RELEARN_SHARE`] or
/// more. `learned`: what it
/// learned (`Err`: the file does not read, so it is learned again). A
/// library whose learning is turned off never is.
pub fn due(learned: &Result<Option<LearnedFusion>>, rec: &Recommender) -> Option<String> {
    let lib = rec.library();
    if super::learned_fusion::is_off(lib) {
        return None;
    }
    let spans = lib.evidence().num_spans();
    match learned {
        Err(e) => Some(format!("the learned trust does not read ({e})")),
        Ok(None) if spans > 0 => Some(format!("{spans} evidence spans, no trust learned yet")),
        Ok(None) => None,
        Ok(Some(l)) => {
            // A small change of the evidence alone is not worth a relearning.
            let small = moved_little(l.spans, spans) && l.channels == channel_names(rec) && models_changed(&l.models, lib).is_none();
            stale(l, rec).filter(|_| !small)
        }
    }
}

/// Learns the library's trust with `rec` (opened with the shipped fusion)
/// and keeps it (or, with too few sentences to learn from, forgets an
/// earlier one: it no longer holds). What `import --evidence`, `adapt
/// --fusion`, `embed` and the front ends' background learning run.
pub fn learn_and_keep(rec: &mut Recommender, on_progress: &dyn Fn(usize, usize)) -> Result<Outcome> {
    let outcome = learn(rec, &Options::default(), on_progress)?;
    match &outcome {
        Outcome::Learned(learned) => super::learned_fusion::save(rec.library(), learned)?,
        Outcome::TooFew { .. } => {
            super::learned_fusion::remove(rec.library())?;
        }
    }
    Ok(outcome)
}

/// One citing sentence as a query (without its own document's evidence,
/// as of its document's year), and the papers it cites.
pub struct Probe {
    pub query: Query,
    pub cited: HashSet<String>,
}

/// The library's citing sentences that can be asked: enough words, at
/// least one cited paper, a known citing document; spread over the
/// documents (in the order of a hash of each sentence), at most
/// `sentences`. Also the number of documents they come from. What the
/// library learns from its own citing documents is learned on these (the
/// trust here, `check`'s flag in `check::calibration`).
///
/// Architecture Invariant: where the library's published adaptations
/// (HAtten's, the reranker's) were trained on some of its documents
/// ([`crate::library::adapt::trained_documents`]), only the others are
/// asked, as long as they are enough to learn from ([`Options`]' minimums):
/// an adapted model ranks the sentences it was trained on far better than
/// a draft's, and judged on them it would be trusted for what it
/// memorised (the citation encoder adapted on ACM-CR fold libraries, for
/// a measurement: their own sentences at R@10 0.766 instead of 0.485).
pub fn probes(lib: &Library, sentences: usize) -> Result<(Vec<Probe>, usize)> {
    let trained = crate::library::adapt::trained_documents(lib.dir())?;
    let mut usable: Vec<(u64, Probe, String)> = Vec::new();
    for c in lib.citances().all()? {
        let text = strip_citations(&without_markers(&c.sentence), &CiteGrammar::PLAIN);
        if c.cited.is_empty() || c.citing.id.is_empty() || text.split_whitespace().count() < MIN_WORDS {
            continue;
        }
        let key = crate::util::fnv1a64(format!("{}\u{1f}{}", c.citing.id, c.sentence).as_bytes());
        let query =
            Query::new(text).with_k(super::recommender::DEFAULT_PREFETCH).citing(vec![c.citing.id.clone()]).written_in(c.citing.year);
        usable.push((key, Probe { query, cited: c.cited.iter().cloned().collect() }, c.citing.id));
    }
    usable.sort_by_key(|(key, _, _)| *key);
    let unseen: Vec<&str> = usable.iter().map(|(_, _, d)| d.as_str()).filter(|d| !trained.contains(*d)).collect();
    let (unseen_sentences, unseen_documents) = (unseen.len(), unseen.into_iter().collect::<HashSet<_>>().len());
    let minimums = Options::default();
    if unseen_sentences >= minimums.min_sentences && unseen_documents >= minimums.min_documents {
        usable.retain(|(_, _, d)| !trained.contains(d));
    }
    usable.truncate(sentences);
    let documents: HashSet<&str> = usable.iter().map(|(_, _, d)| d.as_str()).collect();
    let documents = documents.len();
    Ok((usable.into_iter().map(|(_, p, _)| p).collect(), documents))
}

/// A citing sentence without its citation markers (`(Collins, 2002)`,
/// `[12]`, `Collins (2002)`, `[CIT]`): the words a draft has at the cursor.
/// Left in, a marker's author names would find the cited paper by its
/// authors, and the answer's already-cited rule would move it last.
fn without_markers(sentence: &str) -> String {
    let mut markers = crate::evidence::markers::find_markers(sentence, &[]);
    markers.sort_by_key(|m| m.start);
    let mut out = String::with_capacity(sentence.len());
    let mut at = 0;
    for m in markers.into_iter().filter(|m| m.end <= sentence.len()) {
        if m.start < at {
            continue;
        }
        out.push_str(&sentence[at..m.start]);
        out.push(' ');
        at = m.end;
    }
    out.push_str(&sentence[at..]);
    out
}

/// Learns the library's evidence trust from its own citing sentences with
/// `rec` (a recommender over the library with the shipped fusion; its
/// channels are what is fused, its rerank stage what is tried; it is left
/// with the shipped fusion). `on_progress(done, total)` follows the
/// searches (one per sentence, and two per sentence of the rerank check).
pub fn learn(rec: &mut Recommender, opts: &Options, on_progress: &dyn Fn(usize, usize)) -> Result<Outcome> {
    let base = rec.fusion();
    if base.evidence_trust != 1.0 {
        return Err(Error::Config("the evidence trust is learned with the shipped fusion's lists (trust 1)".into()));
    }
    let (probes, documents) = probes(rec.library(), opts.sentences)?;
    if probes.len() < opts.min_sentences || documents < opts.min_documents {
        return Ok(Outcome::TooFew { sentences: probes.len(), documents });
    }
    let reranks = if rec.rerank_depth() > 0 { probes.len().min(opts.rerank_sentences) } else { 0 };
    let total = probes.len() + 2 * reranks;
    // Per trust, per sentence: R@10 and reciprocal rank.
    let mut scores: BTreeMap<usize, Vec<(f64, f64)>> = BTreeMap::new();
    let mut asked: Vec<&Probe> = Vec::new();
    for (i, probe) in probes.iter().enumerate() {
        let outputs = match rec.channel_lists(&probe.query) {
            Ok(o) => o,
            Err(Error::InvalidQuery(_)) => continue,
            Err(e) => return Err(e),
        };
        asked.push(probe);
        for (t, &trust) in TRUSTS.iter().enumerate() {
            let fusion = Fusion { evidence_trust: trust, ..base };
            let lists: Vec<_> = outputs
                .iter()
                .map(|(id, o)| {
                    let mut o = o.clone();
                    o.confidence = fusion.trusted(*id, o.confidence);
                    (*id, o)
                })
                .collect();
            let ranked: Vec<String> = fuse(&lists, &fusion).into_iter().map(|c| c.id).collect();
            scores.entry(t).or_default().push(measure(&ranked, &probe.cited));
        }
        on_progress(i + 1, total);
    }
    let shipped_at = TRUSTS.iter().position(|&t| t == 1.0).expect("the shipped trust is tried");
    let sentences = scores.get(&shipped_at).map_or(0, Vec::len);
    if sentences < opts.min_sentences {
        return Ok(Outcome::TooFew { sentences, documents });
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // The best trust; of equals, the one nearest the shipped.
    let best_at = (0..TRUSTS.len())
        .max_by(|&a, &b| {
            mean(&merit(&scores[&a]))
                .total_cmp(&mean(&merit(&scores[&b])))
                .then_with(|| (TRUSTS[b] - 1.0).abs().total_cmp(&(TRUSTS[a] - 1.0).abs()))
        })
        .expect("trusts are tried");
    let gain = paired_bootstrap(&merit(&scores[&shipped_at]), &merit(&scores[&best_at]), opts.rounds, opts.level);
    let adopted = best_at != shipped_at && gain.lo > 0.0;
    let evidence_trust = if adopted { TRUSTS[best_at] } else { 1.0 };
    let rerank = if reranks > 0 {
        let on_progress = |done: usize| on_progress(probes.len() + done, total);
        asked.truncate(reranks);
        Some(check_rerank(rec, Fusion { evidence_trust, ..base }, &asked, opts, &on_progress)?)
    } else {
        None
    };
    let lib = rec.library();
    Ok(Outcome::Learned(Box::new(LearnedFusion {
        evidence_trust,
        best_trust: TRUSTS[best_at],
        sentences,
        documents,
        spans: lib.evidence().num_spans(),
        channels: channel_names(rec),
        models: crate::library::adapt::published(lib.dir()),
        shipped: figures(&scores[&shipped_at]),
        best: figures(&scores[&best_at]),
        gain,
        tried: TRUSTS.iter().enumerate().map(|(t, &trust)| (trust, figures(&scores[&t]))).collect(),
        rerank,
    })))
}

/// R@10 and the reciprocal rank of `ranked` against the cited papers.
fn measure(ranked: &[String], cited: &HashSet<String>) -> (f64, f64) {
    (recall_at(ranked, cited, 10), reciprocal_rank(ranked, |id| cited.contains(id)))
}

fn figures(v: &[(f64, f64)]) -> Figures {
    let n = v.len().max(1) as f64;
    Figures { recall10: v.iter().map(|s| s.0).sum::<f64>() / n, mrr: v.iter().map(|s| s.1).sum::<f64>() / n }
}

fn merit(v: &[(f64, f64)]) -> Vec<f64> {
    v.iter().map(|(r, m)| (r + m) / 2.0).collect()
}

/// The library's sentences answered at `fusion` with the rerank stage and
/// without it (the whole run, as a draft is answered); the stage is kept
/// unless it orders them worse than the fused list. `rec` is left with the
/// shipped fusion and its rerank depth.
fn check_rerank(
    rec: &mut Recommender,
    fusion: Fusion,
    asked: &[&Probe],
    opts: &Options,
    on_progress: &dyn Fn(usize),
) -> Result<RerankCheck> {
    let shipped = rec.fusion();
    let depth = rec.rerank_depth();
    rec.set_fusion(fusion);
    let answer = |rec: &Recommender, pass: usize| -> Result<Vec<(f64, f64)>> {
        let mut out = Vec::with_capacity(asked.len());
        for (i, probe) in asked.iter().enumerate() {
            let ranked: Vec<String> = match rec.recommend_ids(&probe.query) {
                // A candidate stands for the cited paper when any record of
                // its work is that paper (as evaluation counts).
                Ok(r) => {
                    r.candidates.into_iter().map(|c| c.same_work.into_iter().find(|id| probe.cited.contains(id)).unwrap_or(c.id)).collect()
                }
                Err(Error::InvalidQuery(_)) => Vec::new(),
                Err(e) => return Err(e),
            };
            out.push(measure(&ranked, &probe.cited));
            on_progress(pass * asked.len() + i + 1);
        }
        Ok(out)
    };
    // The fused answers first: the reranked ones cost several times more a
    // step, and coming last, they are what the time left is told from.
    rec.set_rerank_depth(0);
    let fused = answer(rec, 0);
    rec.set_rerank_depth(depth);
    let reranked = answer(rec, 1);
    rec.set_fusion(shipped);
    let (reranked, fused) = (reranked?, fused?);
    let gain = paired_bootstrap(&merit(&fused), &merit(&reranked), opts.rounds, opts.level);
    Ok(RerankCheck { kept: gain.diff >= 0.0, sentences: asked.len(), fused: figures(&fused), reranked: figures(&reranked), gain })
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Arc;

    use super::*;
    use crate::library::evidence_import::import_evidence;
    use crate::pipeline::learned_fusion::{fusion_of, read, remove, save};
    use crate::pipeline::{Models, Settings};

    /// Three made-up words of topic `t` (letters only, so that the analyser
    /// keeps each whole).
    fn words(t: usize) -> [String; 3] {
        let tag: String = format!("{t:03}").chars().map(|d| (b'a' + d.to_digit(10).unwrap() as u8) as char).collect();
        ["alpha", "gamma", "delta"].map(|w| format!("zq{tag}{w}"))
    }

    /// A library of 40 topics, each with the paper its citing sentences
    /// cite (`true:t`) and another (`other:t`), and four citing documents:
    /// document `t % 4` cites `true:t` for topic `t`, document `t + 1 % 4`
    /// cites `elsewhere(t)` for the same words.
    fn library(dir: &std::path::Path, titles: impl Fn(usize) -> (String, String), elsewhere: impl Fn(usize) -> String) -> Arc<Library> {
        let lib = Library::open_or_create(&dir.join("lib")).unwrap();
        let mut w = lib.papers().writer().unwrap();
        for t in 0..40 {
            let (own, other) = titles(t);
            for (id, title) in [(format!("true:{t}"), own), (format!("other:{t}"), other)] {
                w.upsert(&crate::corpus::Paper { id, title, year: Some(2000), ..Default::default() }).unwrap();
            }
        }
        w.finish().unwrap();
        lib.papers().reload().unwrap();
        let path = dir.join("sentences.jsonl");
        let mut out = std::fs::File::create(&path).unwrap();
        for t in 0..40 {
            let [a, b, c] = words(t);
            for (doc, text, cited) in [
                (t % 4, format!("We build our system on the {a} {b} {c} method of earlier work [CIT]."), format!("true:{t}")),
                ((t + 1) % 4, format!("Related studies of {a} {b} {c} are many and varied [CIT]."), elsewhere(t)),
            ] {
                let row = serde_json::json!({"split": "train", "citing_id": format!("doc:{doc}"), "citing_title": format!("Document {doc}"),
                    "context": text, "cited": [cited]});
                writeln!(out, "{row}").unwrap();
            }
        }
        drop(out);
        import_evidence(&lib, &[path], None, false).unwrap();
        Arc::new(lib)
    }

    fn learned(lib: &Arc<Library>) -> LearnedFusion {
        let mut rec = Recommender::open(lib.clone(), &Models::none(), None, Settings::default()).unwrap();
        match learn(&mut rec, &Options::default(), &|_, _| {}).unwrap() {
            Outcome::Learned(l) => *l,
            other => panic!("{other:?}"),
        }
    }

    fn at(l: &LearnedFusion, trust: f32) -> Figures {
        l.tried.iter().find(|(t, _)| *t == trust).unwrap().1
    }

    #[cfg(unix)]
    #[test]
    fn the_documents_an_adaptation_was_trained_on_are_left_out_of_the_library_s_own_measurement_while_enough_others_remain() {
        let dir = tempfile::tempdir().unwrap();
        let lib = library(dir.path(), |t| (words(t).join(" "), format!("An unrelated report, number {t}")), |t| format!("other:{t}"));
        let documents = |probes: &[Probe]| probes.iter().map(|p| p.query.citing[0].clone()).collect::<std::collections::BTreeSet<_>>();
        let (all, n) = probes(&lib, 300).unwrap();
        assert_eq!((all.len(), n), (80, 4), "no adaptation published: every sentence");
        // An adapted reranker trained on document 0: the other three are enough.
        let reranker = lib.dir().join(crate::neural::reranker::ADAPTED_RERANKER_DIR);
        std::fs::create_dir_all(&reranker).unwrap();
        let trained_on = reranker.join(crate::library::adapt::TRAINED_ON);
        std::fs::write(&trained_on, r#"["doc:0"]"#).unwrap();
        let (unseen, n) = probes(&lib, 300).unwrap();
        assert_eq!((unseen.len(), n), (60, 3));
        assert!(!documents(&unseen).contains("doc:0"), "{:?}", documents(&unseen));
        // HAtten adapted on document 1 as well: two documents are too few to
        // learn from, so every sentence is asked again.
        let hatten = crate::library::adapt::adapted_dir(lib.dir());
        std::fs::create_dir_all(&hatten).unwrap();
        std::fs::write(hatten.join(crate::library::adapt::TRAINED_ON), r#"["doc:1"]"#).unwrap();
        assert_eq!(probes(&lib, 300).unwrap().0.len(), 80);
        // A list that does not read is an error that names its file.
        std::fs::write(&trained_on, "{").unwrap();
        let err = probes(&lib, 300).err().unwrap().to_string();
        assert!(err.contains("trained-on.json"), "{err}");
        // A named pipe there is refused without waiting for a writer.
        std::fs::remove_file(&trained_on).unwrap();
        let c = std::ffi::CString::new(trained_on.to_str().unwrap()).unwrap();
        // SAFETY: a plain system call on a path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = probes(&lib, 300).err().unwrap().to_string();
        assert!(err.contains("trained-on.json") && err.contains("not a regular file (a named pipe)"), "{err}");
    }

    #[test]
    fn evidence_of_other_documents_that_points_elsewhere_is_learned_to_be_distrusted_and_the_library_ranks_with_it() {
        let dir = tempfile::tempdir().unwrap();
        // Each topic's words name its paper; the other documents cite an
        // unrelated paper for the same words.
        let lib = library(dir.path(), |t| (words(t).join(" "), format!("An unrelated report, number {t}")), |t| format!("other:{t}"));
        let l = learned(&lib);
        assert_eq!(l.documents, 4);
        assert_eq!(l.sentences, 80, "every sentence is asked");
        assert!(at(&l, 0.0).mrr > at(&l, 1.0).mrr + 0.2, "{:?}", l.tried);
        assert!(l.adopted() && l.evidence_trust < 1.0 && l.gain.lo > 0.0, "{l:?}");
        assert_eq!(fusion_of(&lib).evidence_trust, 1.0, "nothing kept yet");
        save(&lib, &l).unwrap();
        assert_eq!(read(&lib).unwrap().as_ref(), Some(&l));
        let learned = Recommender::new(lib.clone(), &Models::none());
        assert_eq!(learned.fusion().evidence_trust, l.evidence_trust, "the library ranks with it");
        // A draft on topic 5 (its author's document 1 set aside).
        let [a, b, c] = words(5);
        let draft =
            Query::new(format!("We build our system on the {a} {b} {c} method of earlier work [CIT].")).citing(vec!["doc:1".into()]);
        let first = |rec: &Recommender| rec.recommend_ids(&draft).unwrap().candidates[0].id.clone();
        assert_eq!(first(&Recommender::open(lib.clone(), &Models::none(), None, Settings::default()).unwrap()), "other:5");
        assert_eq!(first(&learned), "true:5", "the words' paper, no longer the one another document cites");
        assert!(l.describe().starts_with(&format!("evidence trusted at {}", l.evidence_trust)), "{}", l.describe());
        assert!(remove(&lib).unwrap() && !remove(&lib).unwrap());
        assert_eq!(Recommender::new(lib, &Models::none()).fusion().evidence_trust, 1.0);
    }

    #[test]
    fn evidence_that_finds_what_the_words_do_not_keeps_its_trust() {
        let dir = tempfile::tempdir().unwrap();
        // The cited paper's title shares no word with its citing sentences;
        // another paper's has them all. The other documents cite the right one.
        let lib = library(dir.path(), |t| (format!("A report, number {t}"), words(t).join(" ")), |t| format!("true:{t}"));
        let l = learned(&lib);
        assert!(at(&l, 1.0).mrr > at(&l, 0.0).mrr + 0.2, "{:?}", l.tried);
        assert!(l.evidence_trust >= 1.0 && l.best_trust >= 1.0, "{l:?}");
    }

    #[test]
    fn a_sentence_is_asked_without_its_markers() {
        let asked = without_markers("As Collins (2002) showed, perceptrons tag well (Ratnaparkhi, 1996; Toutanova et al., 2003) [12].");
        let words: Vec<&str> = asked.split_whitespace().collect();
        assert_eq!(words, ["As", "showed,", "perceptrons", "tag", "well", "."], "{asked}");
        assert_eq!(without_markers("Prior work [CIT] did so.").split_whitespace().collect::<Vec<_>>(), ["Prior", "work", "did", "so."]);
    }

    #[test]
    fn too_few_citing_documents_teach_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::open_or_create(dir.path()).unwrap();
        let lib = Arc::new(lib);
        let mut rec = Recommender::open(lib.clone(), &Models::none(), None, Settings::default()).unwrap();
        assert_eq!(learn(&mut rec, &Options::default(), &|_, _| {}).unwrap(), Outcome::TooFew { sentences: 0, documents: 0 });
        let trusting = Settings { fusion: Fusion { evidence_trust: 0.5, ..Fusion::default() }, ..Settings::default() };
        let mut rec = Recommender::open(lib, &Models::none(), None, trusting).unwrap();
        assert!(learn(&mut rec, &Options::default(), &|_, _| {}).is_err(), "lists read with a learned trust would learn it twice");
    }

    /// What the background learning reports, until it ends.
    fn background_events(lib: &Arc<Library>) -> Vec<crate::pipeline::background::EncodingEvent> {
        background_events_with(lib, crate::pipeline::background::Learners::default())
    }

    fn background_events_with(
        lib: &Arc<Library>,
        learners: crate::pipeline::background::Learners,
    ) -> Vec<crate::pipeline::background::EncodingEvent> {
        use crate::pipeline::background::{BackgroundEncoding, EncodingOptions, Phase};
        let busy = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let options = EncodingOptions { phases: vec![Phase::Trust], low_priority: false, learners, ..EncodingOptions::default() };
        let run = BackgroundEncoding::spawn(lib.clone(), Arc::new(Models::none()), busy, options);
        let mut events = Vec::new();
        while let Some(e) = run.recv() {
            let over = e == crate::pipeline::background::EncodingEvent::Finished;
            events.push(e);
            if over {
                break;
            }
        }
        events
    }

    #[test]
    fn the_front_ends_learn_the_trust_in_the_background_when_it_is_due_and_only_then() {
        use crate::pipeline::background::{EncodingEvent, Phase};
        let dir = tempfile::tempdir().unwrap();
        let lib = library(dir.path(), |t| (words(t).join(" "), format!("An unrelated report, number {t}")), |t| format!("other:{t}"));
        let rec = Recommender::open(lib.clone(), &Models::none(), None, Settings::default()).unwrap();
        assert!(due(&read(&lib), &rec).unwrap().contains("no trust learned yet"));
        let events = background_events(&lib);
        assert!(events.iter().any(|e| matches!(e, EncodingEvent::Progress { phase: Phase::Trust, .. })), "{events:?}");
        let status = events.iter().find_map(EncodingEvent::status).unwrap();
        assert!(status.starts_with("learning the evidence trust "), "{status}");
        let kept = read(&lib).unwrap().expect("kept");
        let line = events.iter().find_map(|e| match e {
            EncodingEvent::Learned { sentences, line } => Some((*sentences, line.clone())),
            _ => None,
        });
        assert_eq!(line, Some((80, kept.describe())));
        assert!(kept.adopted(), "{kept:?}");
        assert_eq!(events.last(), Some(&EncodingEvent::Finished));
        // Learned and nothing changed since: not due, nothing learned again.
        assert_eq!(due(&read(&lib), &rec), None);
        assert!(!background_events(&lib).iter().any(|e| matches!(e, EncodingEvent::Learned { .. } | EncodingEvent::Progress { .. })));
        // A damaged file is learned again.
        std::fs::write(crate::pipeline::learned_fusion::path(&lib), "{").unwrap();
        assert!(due(&read(&lib), &rec).unwrap().contains("does not read"));
        // Evidence that moved by less than a tenth is not worth a relearning;
        // by a tenth or more, it is.
        let mut l = kept.clone();
        l.spans = lib.evidence().num_spans() + 1;
        save(&lib, &l).unwrap();
        assert_eq!(due(&read(&lib), &rec), None);
        l.spans = lib.evidence().num_spans() * 2;
        save(&lib, &l).unwrap();
        assert!(due(&read(&lib), &rec).unwrap().contains("evidence spans, now"));
        // Turned off: forgotten, and never learned by itself.
        assert!(crate::pipeline::learned_fusion::turn_off(&lib).unwrap());
        assert_eq!(read(&lib).unwrap(), None);
        assert_eq!(due(&read(&lib), &rec), None);
        assert!(!background_events(&lib).iter().any(|e| matches!(e, EncodingEvent::Learned { .. })));
        assert_eq!(read(&lib).unwrap(), None);
        crate::pipeline::learned_fusion::turn_on(&lib).unwrap();
        assert!(due(&read(&lib), &rec).is_some());
    }

    #[test]
    fn a_trust_learned_before_an_adaptation_was_published_or_removed_is_due_again_and_learned_with_it_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let lib = library(dir.path(), |t| (words(t).join(" "), format!("An unrelated report, number {t}")), |t| format!("other:{t}"));
        let rec = Recommender::open(lib.clone(), &Models::none(), None, Settings::default()).unwrap();
        let before = learned(&lib);
        assert!(before.models.is_empty(), "the default models: {:?}", before.models);
        save(&lib, &before).unwrap();
        assert_eq!(due(&read(&lib), &rec), None);
        // HAtten adapted and published (its weights file, where the models
        // are looked for): due, and `doctor`'s stale line says why.
        let hatten = crate::library::adapt::adapted_dir(lib.dir());
        std::fs::create_dir_all(&hatten).unwrap();
        std::fs::write(hatten.join("model.safetensors"), b"adapted").unwrap();
        let why = due(&read(&lib), &rec).expect("due");
        assert_eq!(why, "learned with the default models, now with adapted ones (hatten)");
        assert_eq!(stale(&before, &rec), Some(why));
        // Learned again with it: it is kept, and nothing is due.
        let with = learned(&lib);
        assert_eq!(with.models, crate::library::adapt::published(lib.dir()));
        assert_eq!(with.models.len(), 1);
        save(&lib, &with).unwrap();
        assert_eq!(due(&read(&lib), &rec), None);
        // Evidence moved by less than a tenth alone is not worth a
        // relearning; with other weights published since, it is.
        let mut moved = with.clone();
        moved.spans += 1;
        save(&lib, &moved).unwrap();
        assert_eq!(due(&read(&lib), &rec), None);
        std::fs::write(hatten.join("model.safetensors"), b"adapted again").unwrap();
        assert!(due(&read(&lib), &rec).is_some());
        save(&lib, &with).unwrap();
        assert_eq!(due(&read(&lib), &rec).unwrap(), "learned with models adapted before the ones published now (hatten)");
        // Removed: the default models again.
        std::fs::remove_dir_all(&hatten).unwrap();
        assert_eq!(due(&read(&lib), &rec).unwrap(), "learned with adapted models (hatten), now the default ones");
        save(&lib, &before).unwrap();
        assert_eq!(due(&read(&lib), &rec), None);
        // Where the weights go, a named pipe is only looked at, never
        // opened: telling what is published does not wait for a writer.
        #[cfg(unix)]
        {
            std::fs::create_dir_all(&hatten).unwrap();
            let pipe = std::ffi::CString::new(hatten.join("model.safetensors").to_str().unwrap()).unwrap();
            // SAFETY: a plain system call on a path this test owns.
            assert_eq!(unsafe { libc::mkfifo(pipe.as_ptr(), 0o600) }, 0);
            let published = crate::library::adapt::published(lib.dir());
            assert!(published.len() == 1 && published[0].starts_with("hatten 0 bytes"), "{published:?}");
        }
    }

    #[test]
    fn new_sentences_during_a_run_are_learned_from_once_it_ends_and_at_once_when_idle() {
        use crate::pipeline::background::{BackgroundWork, EncodingEvent, EncodingOptions, Phase};
        let dir = tempfile::tempdir().unwrap();
        let lib = library(dir.path(), |t| (words(t).join(" "), format!("An unrelated report, number {t}")), |t| format!("other:{t}"));
        let busy = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let options = EncodingOptions { phases: vec![Phase::Trust], low_priority: false, ..EncodingOptions::default() };
        let mut work = BackgroundWork::start(lib.clone(), Arc::new(Models::none()), busy, options);
        // Runs one after another until nothing runs: the events of each.
        let runs = |work: &mut BackgroundWork| {
            let mut runs: Vec<Vec<EncodingEvent>> = Vec::new();
            while let Some(events) = work.events().cloned() {
                let mut run = Vec::new();
                loop {
                    let e = events.recv().unwrap();
                    work.saw(Some(&e));
                    let over = e == EncodingEvent::Finished;
                    run.push(e);
                    if over {
                        break;
                    }
                }
                runs.push(run);
            }
            runs
        };
        work.new_sentences();
        let learned = |run: &[EncodingEvent]| run.iter().any(|e| matches!(e, EncodingEvent::Learned { .. }));
        let first = runs(&mut work);
        assert_eq!(first.len(), 2, "the sentences that came during the run make a second one: {first:?}");
        assert!(learned(&first[0]) && !learned(&first[1]), "learned once; the second found it not due: {first:?}");
        // Idle, with the trust due again: a run starts at once.
        remove(&lib).unwrap();
        work.new_sentences();
        let again = runs(&mut work);
        assert_eq!(again.len(), 1);
        assert!(learned(&again[0]), "{again:?}");
        assert!(read(&lib).unwrap().is_some());
    }

    /// A layer above's learning, as the front ends hand it down: due while
    /// its file is missing; learns on what the library ranks with.
    struct Marker {
        runs: std::sync::atomic::AtomicUsize,
        trust_seen: std::sync::Mutex<Vec<f32>>,
    }

    impl crate::pipeline::background::Learner for Marker {
        fn label(&self) -> &'static str {
            "the marker"
        }

        fn due(&self, rec: &Recommender) -> Option<String> {
            (!rec.library().evidence_root().join("marker").exists()).then(|| "never learned".into())
        }

        fn learn(&self, rec: &Recommender, on_progress: &dyn Fn(usize, usize)) -> Result<Option<(usize, String)>> {
            self.runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.trust_seen.lock().unwrap().push(rec.fusion().evidence_trust);
            for i in 0..=10 {
                on_progress(i, 10);
            }
            std::fs::write(rec.library().evidence_root().join("marker"), "").unwrap();
            Ok(Some((10, "the marker learned".into())))
        }
    }

    #[test]
    fn a_layer_above_learns_after_the_trust_with_it_in_place_when_due_and_its_line_joins_the_trusts() {
        use crate::pipeline::background::{EncodingEvent, Learners, Phase};
        let dir = tempfile::tempdir().unwrap();
        let lib = library(dir.path(), |t| (words(t).join(" "), format!("An unrelated report, number {t}")), |t| format!("other:{t}"));
        let marker = Arc::new(Marker { runs: 0.into(), trust_seen: Default::default() });
        let learners = Learners(vec![marker.clone()]);
        let events = background_events_with(&lib, learners.clone());
        let kept = read(&lib).unwrap().expect("the trust is kept");
        let line = events.iter().find_map(|e| match e {
            EncodingEvent::Learned { sentences, line } => Some((*sentences, line.clone())),
            _ => None,
        });
        assert_eq!(line, Some((80, format!("{}; the marker learned", kept.describe()))));
        assert_eq!(*marker.trust_seen.lock().unwrap(), [kept.evidence_trust], "learned with the trust just learned in place");
        let finished = |phase: Phase| {
            events.iter().any(|e| matches!(e, EncodingEvent::Progress { phase: p, done, total, .. } if *p == phase && done == total))
        };
        assert!(finished(Phase::Trust) && finished(Phase::Learner("the marker")), "each learning counts to its own end: {events:?}");
        let status = events.iter().rev().find_map(EncodingEvent::status).unwrap();
        assert!(status.starts_with("learning the marker "), "{status}");
        // Nothing due: nothing runs, nothing is said.
        let quiet = background_events_with(&lib, learners.clone());
        assert!(!quiet.iter().any(|e| matches!(e, EncodingEvent::Learned { .. })), "{quiet:?}");
        assert_eq!(marker.runs.load(std::sync::atomic::Ordering::SeqCst), 1);
        // Due alone, without the trust: its line alone.
        std::fs::remove_file(lib.evidence_root().join("marker")).unwrap();
        let alone = background_events_with(&lib, learners);
        assert!(alone.contains(&EncodingEvent::Learned { sentences: 10, line: "the marker learned".into() }), "{alone:?}");
    }
}

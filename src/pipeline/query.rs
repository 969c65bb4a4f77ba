//! What the author asks: the local context around the citation position and
//! the draft's global context (title, abstract).

use crate::corpus::benchmark::CIT;
pub use crate::corpus::citation_markup::strip_citations;
use crate::corpus::citation_markup::CiteGrammar;
use crate::error::{Error, Result};

/// Local context beyond this many words is cut (with a notice).
pub const MAX_CONTEXT_WORDS: usize = 400;

/// A context asks for citations in at most this many claims (sentences
/// holding `[CIT]`); later ones are searched only as part of the whole.
pub const MAX_CLAIMS: usize = 8;

/// Which context a query carried: the words around the citation position,
/// and the draft's title and abstract (the global context) when given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ContextUsed {
    /// Words of local context (after citations are removed).
    pub local_words: usize,
    pub title: bool,
    #[serde(rename = "abstract")]
    pub abstract_text: bool,
}

impl ContextUsed {
    /// Whether any global context (title or abstract) was used.
    pub fn global(&self) -> bool {
        self.title || self.abstract_text
    }
}

impl std::fmt::Display for ContextUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "local ({} words)", self.local_words)?;
        match (self.title, self.abstract_text) {
            (true, true) => write!(f, " + title + abstract"),
            (true, false) => write!(f, " + title"),
            (false, true) => write!(f, " + abstract"),
            (false, false) => Ok(()),
        }
    }
}

/// A recommendation request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Text around the citation position; may contain `[CIT]` where the
    /// citation goes.
    pub context: String,
    /// Title of the citing draft (global context), may be empty.
    pub title: String,
    /// Abstract of the citing draft (global context), may be empty.
    pub abstract_text: String,
    /// How many papers to return.
    pub k: usize,
    /// The library ids of the paper being written (every record the
    /// library has of it), when it is there: evidence taken from its own
    /// sentences is never used for it (so an evaluation never sees a
    /// citation as its own evidence).
    pub citing: Vec<String>,
    /// The year the draft is written in, when it is not now: papers
    /// published after it could not have been cited and are left out (as
    /// are the `citing` papers themselves, which never cite themselves).
    pub written_in: Option<i32>,
    /// The grammar the context's citation markup is read with (a draft's:
    /// the wrapper commands its author's configuration names); by default
    /// the plain one.
    pub grammar: CiteGrammar,
}

impl Query {
    pub fn new(context: impl Into<String>) -> Query {
        Query { context: context.into(), k: 10, ..Default::default() }
    }

    pub fn with_global(mut self, title: impl Into<String>, abstract_text: impl Into<String>) -> Query {
        self.title = title.into();
        self.abstract_text = abstract_text.into();
        self
    }

    pub fn with_k(mut self, k: usize) -> Query {
        self.k = k;
        self
    }

    /// Sets the citing paper (its ids) whose own evidence is left out.
    pub fn citing(mut self, ids: Vec<String>) -> Query {
        self.citing = ids;
        self
    }

    /// Sets the year the draft is written in (see [`Query::written_in`]).
    pub fn written_in(mut self, year: Option<i32>) -> Query {
        self.written_in = year;
        self
    }

    /// Sets the grammar the context's citations are read with (see
    /// [`Query::grammar`]).
    pub fn with_grammar(mut self, grammar: CiteGrammar) -> Query {
        self.grammar = grammar;
        self
    }

    /// The fingerprints of the citing paper's ids, as evidence sightings
    /// keep them.
    pub fn citing_keys(&self) -> Vec<u64> {
        self.citing.iter().filter(|s| !s.is_empty()).map(|id| crate::evidence::record::citing_key(id)).collect()
    }

    /// The local context as plain words: `[CIT]`, LaTeX `\cite{..}` commands
    /// (and the grammar's wrappers) and Markdown `[@key]` citations
    /// removed, whitespace collapsed.
    pub fn local_text(&self) -> String {
        strip_citations(&self.context, &self.grammar)
    }

    /// Local and global context together (what BM25 searches with, and
    /// what a model's field coverage is measured on; [`Prepared::full`]).
    pub fn full_text(&self) -> String {
        format!("{} {} {}", self.local_text(), self.title, self.abstract_text)
    }

    /// The claims the local context asks citations for: when `[CIT]`
    /// marks places in two or more of its sentences (a paragraph whose
    /// author asks for each citation it still lacks), each such sentence
    /// (at most [`MAX_CLAIMS`]); else none, and the context is one claim.
    /// Sentences are split as evidence sentences are
    /// ([`crate::evidence::sentences::split_sentences`]).
    pub fn claims(&self) -> Vec<String> {
        let marks: Vec<(usize, usize)> = self.context.match_indices(CIT).map(|(i, m)| (i, i + m.len())).collect();
        if marks.len() < 2 {
            return Vec::new();
        }
        let claims: Vec<String> = crate::evidence::sentences::split_sentences(&self.context, &marks)
            .into_iter()
            .map(|(start, end)| &self.context[start..end])
            .filter(|s| s.contains(CIT) && strip_citations(s, &self.grammar).chars().any(char::is_alphanumeric))
            .take(MAX_CLAIMS)
            .map(str::to_string)
            .collect();
        if claims.len() < 2 {
            return Vec::new();
        }
        claims
    }

    /// Which context the query carries.
    pub fn context_used(&self) -> ContextUsed {
        ContextUsed {
            local_words: self.local_text().split_whitespace().filter(|w| w.chars().any(char::is_alphanumeric)).count(),
            title: !self.title.trim().is_empty(),
            abstract_text: !self.abstract_text.trim().is_empty(),
        }
    }

    /// Checks the request; returns notices about changes made to it.
    pub fn validate(&mut self) -> Result<Vec<String>> {
        let mut notices = Vec::new();
        if self.local_text().is_empty() && self.title.trim().is_empty() && self.abstract_text.trim().is_empty() {
            return Err(Error::InvalidQuery(
                "the query is empty: give some text around the citation (and optionally --title/--abstract)".into(),
            ));
        }
        let has_words = |s: &str| s.chars().any(char::is_alphanumeric);
        if !has_words(&self.local_text()) && !has_words(&self.title) && !has_words(&self.abstract_text) {
            return Err(Error::InvalidQuery("the query has no words, only punctuation or symbols: nothing to search for".into()));
        }
        if self.k == 0 {
            return Err(Error::InvalidQuery("the number of papers to return must be at least 1".into()));
        }
        let words = self.context.split_whitespace().count();
        if words > MAX_CONTEXT_WORDS {
            let cut = cut_around_cit(&self.context, MAX_CONTEXT_WORDS);
            notices.push(format!("the context has {words} words; only the {MAX_CONTEXT_WORDS} around [CIT] were used"));
            self.context = cut;
        }
        Ok(notices)
    }
}

/// A query prepared for one request (tantivy's `Weight` step): validated
/// (a long context cut, with a notice), its texts written and its words
/// analysed once, for every channel, the rerank stage and the answer to
/// read.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The request, validated.
    pub query: Query,
    /// What validation changed.
    pub notices: Vec<String>,
    /// The local context as plain words ([`Query::local_text`]).
    pub local: String,
    /// Local and global context together ([`Query::full_text`]).
    pub full: String,
    /// The context the query carries.
    pub context_used: ContextUsed,
    /// Fingerprints of the citing paper's ids ([`Query::citing_keys`]).
    pub citing_keys: Vec<u64>,
    /// The local context's terms as the paper index analyses them: what
    /// the editor highlights and a paper's own words are chosen by.
    pub terms: Vec<String>,
    /// The full text's terms as the paper index analyses them: what a
    /// model's field coverage is measured on.
    pub full_terms: Vec<String>,
    /// The local context as evidence spans are stored (citation markers
    /// removed), and its terms as the evidence index analyses them.
    pub span_text: String,
    pub span_terms: Vec<String>,
    /// The claims the context asks citations for ([`Query::claims`]), each
    /// a query of its own with the same global context; empty when the
    /// context is one claim.
    pub claims: Vec<Prepared>,
}

impl Prepared {
    /// Validates `query` and analyses it with the library's analysers.
    pub fn new(query: &Query, library: &crate::library::Library) -> Result<Prepared> {
        let mut query = query.clone();
        let notices = query.validate()?;
        let claims = query
            .claims()
            .into_iter()
            .map(|claim| Prepared::one_claim(Query { context: claim, ..query.clone() }, Vec::new(), Vec::new(), library))
            .collect();
        Ok(Prepared::one_claim(query, notices, claims, library))
    }

    fn one_claim(query: Query, notices: Vec<String>, claims: Vec<Prepared>, library: &crate::library::Library) -> Prepared {
        let local = query.local_text();
        let full = format!("{local} {} {}", query.title, query.abstract_text);
        let papers = library.papers();
        let span_text = crate::evidence::spans::normalize(&local);
        Prepared {
            context_used: query.context_used(),
            citing_keys: query.citing_keys(),
            terms: papers.query_terms(&local),
            full_terms: papers.query_terms(&full),
            span_terms: library.evidence().terms(&span_text),
            span_text,
            local,
            full,
            notices,
            query,
            claims,
        }
    }

    /// The query and its claims: the whole context first.
    pub fn and_claims(&self) -> impl Iterator<Item = &Prepared> {
        std::iter::once(self).chain(&self.claims)
    }
}

/// Keeps `max` words, centred on `[CIT]` when there is one (else the last words,
/// which sit closest to where the author is typing).
fn cut_around_cit(text: &str, max: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let centre = words.iter().position(|w| w.contains(CIT)).unwrap_or(words.len());
    let start = centre.saturating_sub(max / 2).min(words.len().saturating_sub(max));
    words[start..(start + max).min(words.len())].join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wrapper command the draft's grammar names is citation markup to
    /// the query that carries it: not words to search for.
    #[test]
    fn the_grammar_s_wrappers_are_not_words() {
        use crate::corpus::citation_markup::CiteSyntax;
        let q = Query::new("Taggers are fast \\refp{brants2000} [CIT].");
        assert_eq!(q.local_text(), "Taggers are fast \\refp{brants2000} .");
        let q = q.with_grammar(CiteGrammar::of(CiteSyntax::Latex).with_wrappers(["refp"]));
        assert_eq!(q.local_text(), "Taggers are fast .");
        assert!(Query::new("\\refp{x}").with_grammar(q.grammar.clone()).validate().is_err(), "a citation alone is no query");
    }

    #[test]
    fn empty_queries_are_rejected() {
        assert!(Query::new("  [CIT] \n").validate().is_err());
        assert!(Query::new(r"\cite{x}").validate().is_err());
        assert!(Query::new("").with_global("A title", "").validate().is_ok());
    }

    #[test]
    fn punctuation_only_queries_and_zero_results_are_rejected() {
        let message = |q: Query| q.clone().validate().unwrap_err().to_string();
        assert!(message(Query::new("?! ... --- [CIT] (;)")).contains("no words, only punctuation"));
        assert!(message(Query::new("parsing").with_k(0)).contains("at least 1"));
        assert!(Query::new("¿qué? 语言").validate().is_ok(), "letters of any script are words");
    }

    #[test]
    fn the_context_used_is_said_in_words() {
        let q = Query::new("Tags come from an HMM tagger [CIT] \\cite{x}.");
        assert_eq!(q.context_used().to_string(), "local (6 words)");
        assert!(!q.context_used().global());
        let g = q.clone().with_global("A paper on tagging", " ");
        assert_eq!(g.context_used().to_string(), "local (6 words) + title");
        let both = q.with_global("A paper on tagging", "We tag.");
        assert_eq!(both.context_used().to_string(), "local (6 words) + title + abstract");
        assert!(both.context_used().global());
    }

    #[test]
    fn a_context_marking_several_sentences_asks_for_each_claim() {
        let paragraph = "Search helps people refind what they saw [CIT]. We build on it. \
                         Tagging e.g. by folksonomies organises bookmarks [CIT] and photos [CIT]. ([CIT])";
        assert_eq!(
            Query::new(paragraph).claims(),
            ["Search helps people refind what they saw [CIT].", "Tagging e.g. by folksonomies organises bookmarks [CIT] and photos [CIT]."],
            "marked sentences only, a sentence once however many marks it holds, a mark alone is no claim"
        );
        assert!(Query::new("One claim [CIT] with two marks [CIT]. And an unmarked one.").claims().is_empty());
        assert!(Query::new("Parsing [CIT].").claims().is_empty());
        let many: String = (0..MAX_CLAIMS + 3).map(|i| format!("Claim number {i} holds [CIT]. ")).collect();
        let claims = Query::new(many).claims();
        assert_eq!(claims.len(), MAX_CLAIMS);
        assert_eq!(claims[0], "Claim number 0 holds [CIT].");
    }

    #[test]
    fn long_contexts_are_cut_around_cit() {
        let mut words: Vec<String> = (0..1000).map(|i| format!("w{i}")).collect();
        words[700] = "[CIT]".into();
        let mut q = Query::new(words.join(" "));
        let notices = q.validate().unwrap();
        assert_eq!(notices.len(), 1);
        let kept: Vec<&str> = q.context.split_whitespace().collect();
        assert_eq!(kept.len(), MAX_CONTEXT_WORDS);
        assert_eq!(kept[MAX_CONTEXT_WORDS / 2], "[CIT]");
    }
}

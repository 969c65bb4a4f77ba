//! A draft read as its author wrote it: the one reading of a draft's prose
//! that the editor, the language server and `check` send as query text.
//!
//! The prose is the draft's text with every byte that is not prose
//! blanked (a space; a line end stays a line end): byte for byte as long as
//! the draft, so every citation, cursor and finding keeps its offset. What
//! is blanked:
//!
//! - LaTeX: comments, the preamble (everything before `\begin{document}`)
//!   and what follows `\end{document}`, sectioning commands with their
//!   titles (`\section{…}`: a heading, not part of the next sentence),
//!   `\title`, `\author`, `\maketitle`, environments' `\begin{…}[…]` and
//!   `\end{…}` (and the whole of math, tables, code, pictures and
//!   `thebibliography`), `\item`, `\label`, `\ref` and its kin,
//!   `\includegraphics[…]{…}`, bibliography commands, the names of other
//!   commands and the braces of their arguments (`\emph{word}` reads
//!   `word`), `~` and `\\`;
//! - Markdown: the front matter, headings (`#` and underlined), fenced code,
//!   HTML comments, list and quote markers, link targets and images;
//! - Typst: comments, headings (`= …`), `#set`, `#show`, `#let`, `#import`
//!   lines, code calls' names and arguments (`#emph[word]` reads `word`),
//!   labels (`<intro>`), `#bibliography(…)`.
//!
//! Citation markup stays as written: the citations are found once (by
//! [`crate::corpus::citation_markup`], the one grammar, on the text with
//! its comments and code blanked: a commented-out `\cite` is no citation),
//! and their bytes are never blanked. A heading, an environment's
//! boundary, an `\item` or a list item ends the paragraph before it: the
//! prose has a blank line there. A line that holds nothing but what was
//! blanked within a paragraph (a `\label`, a comment) is joined to the next,
//! so it does not end the paragraph.
//!
//! Reading is linear in the draft's length: braces are paired in one pass,
//! and every other look-ahead is bounded or remembered when it fails.

use std::collections::HashSet;
use std::ops::Range;

use crate::corpus::bibliography_names::front_matter;
use crate::corpus::citation_markup::{scan_citations, skip_argument_space, CitationScan, CiteGrammar, CiteSyntax};

/// A draft read for what it says.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// Its citations (those its comments and code blocks do not hide),
    /// under a budget of keys, and those whose keys are not read.
    pub scan: CitationScan,
    /// Its prose: as long as the text, non-prose blanked, every citation
    /// as written.
    pub prose: String,
}

/// Reads `text` (its citations read with `grammar`): its citations (at
/// most `max_keys` keys; the rest counted) and its prose.
pub fn read(text: &str, grammar: &CiteGrammar, max_keys: usize) -> Reading {
    let syntax = grammar.syntax();
    let mut bl = Blanker::new(text);
    hide_comments(&mut bl, syntax);
    let uncommented = bl.current();
    let scan = scan_citations(&uncommented, grammar, max_keys);
    for g in &scan.groups {
        bl.keep(g.range.clone());
    }
    match syntax {
        CiteSyntax::Latex => Latex::new(&uncommented).read(&mut bl),
        CiteSyntax::Markdown => markdown(&mut bl, &uncommented),
        CiteSyntax::Typst => typst(&mut bl, &uncommented),
    }
    Reading { scan, prose: bl.finish() }
}

/// The prose of `text` ([`read`], its citations within the check's budget).
pub fn prose(text: &str, grammar: &CiteGrammar) -> String {
    read(text, grammar, crate::limits::CHECK_CITATIONS).prose
}

/// `text` with its comments (and Markdown's fenced code, Typst's raw
/// blocks) blanked: where its citations are looked for.
pub fn uncommented(text: &str, syntax: CiteSyntax) -> String {
    let mut bl = Blanker::new(text);
    hide_comments(&mut bl, syntax);
    bl.current()
}

/// The words of a fragment (a title, an abstract): its prose, with its
/// whitespace collapsed.
pub fn words(fragment: &str, grammar: &CiteGrammar) -> String {
    squash(&prose(fragment, grammar))
}

/// `s` with every run of whitespace one space, none at either end, and
/// none before a closing punctuation mark (markup blanked before a full
/// stop, as in `\url{x}.`, leaves a space there).
pub fn squash(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        let glued = word.starts_with(['.', ',', ';', ':', '!', '?', ')']);
        if !out.is_empty() && !glued {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// What became of a byte.
const KEPT: u8 = 0;
/// Blanked within a paragraph.
const SOFT: u8 = 1;
/// Blanked, and it ends the paragraph before it (a heading, a boundary).
const HARD: u8 = 2;
/// Citation markup: never blanked.
const CITATION: u8 = 3;

/// Blanks bytes of a text, keeping its length.
struct Blanker<'t> {
    src: &'t [u8],
    out: Vec<u8>,
    kind: Vec<u8>,
    /// Regions that end a paragraph.
    hard: Vec<Range<usize>>,
    /// The citations' ranges, in order, and the first one not yet passed.
    groups: Vec<Range<usize>>,
    next_group: usize,
}

impl<'t> Blanker<'t> {
    fn new(text: &'t str) -> Blanker<'t> {
        let src = text.as_bytes();
        Blanker { src, out: src.to_vec(), kind: vec![KEPT; src.len()], hard: Vec::new(), groups: Vec::new(), next_group: 0 }
    }

    /// Blanks `r` (clamped to the text) but its citations; `hard`: it ends
    /// the paragraph before it.
    fn blank(&mut self, r: Range<usize>, hard: bool) {
        let r = r.start.min(self.out.len())..r.end.min(self.out.len());
        let k = if hard { HARD } else { SOFT };
        for i in r.clone() {
            if self.kind[i] == CITATION {
                continue;
            }
            if self.out[i] != b'\n' {
                self.out[i] = b' ';
            }
            self.kind[i] = self.kind[i].max(k);
        }
        if hard && !r.is_empty() {
            self.hard.push(r);
        }
    }

    /// `r` is a citation's markup.
    fn keep(&mut self, r: Range<usize>) {
        let r = r.start.min(self.kind.len())..r.end.min(self.kind.len());
        self.kind[r.clone()].fill(CITATION);
        self.groups.push(r);
    }

    /// Where the citation at or around byte `i` ends, if one is there
    /// (`i` only grows from one call to the next).
    fn citation_end(&mut self, i: usize) -> Option<usize> {
        while self.groups.get(self.next_group).is_some_and(|g| g.end <= i) {
            self.next_group += 1;
        }
        self.groups.get(self.next_group).filter(|g| g.start <= i).map(|g| g.end)
    }

    /// The text as blanked so far.
    fn current(&self) -> String {
        text_of(self.out.clone())
    }

    /// The prose: a blank line where each paragraph-ending region starts
    /// and ends, and a line blanked within a paragraph joined to the next.
    fn finish(mut self) -> String {
        for r in std::mem::take(&mut self.hard) {
            for at in [r.start, r.end - 1] {
                if self.kind[at] != CITATION {
                    self.out[at] = b'\n';
                }
            }
        }
        let mut start = 0;
        while start < self.out.len() {
            let end = self.out[start..].iter().position(|&c| c == b'\n').map_or(self.out.len(), |k| start + k);
            let line = start..end;
            let blank = self.out[line.clone()].iter().all(u8::is_ascii_whitespace);
            let kinds = &self.kind[line.clone()];
            let soft_only = kinds.contains(&SOFT) && !kinds.contains(&HARD);
            let was_text = !self.src[line].iter().all(u8::is_ascii_whitespace);
            if blank && soft_only && was_text && self.src.get(end) == Some(&b'\n') && self.kind[end] != HARD {
                self.out[end] = b' ';
            }
            start = end + 1;
        }
        text_of(self.out)
    }
}

/// The bytes as text: always UTF-8 (only whole characters are blanked);
/// should one be cut, its bytes become spaces, and the length stays.
fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| {
        let mut bytes = e.into_bytes();
        for b in bytes.iter_mut().filter(|b| !b.is_ascii()) {
            *b = b' ';
        }
        String::from_utf8(bytes).expect("ASCII is UTF-8")
    })
}

/// The lines of `text` from `from`: each line's range, without its line end.
fn line_ranges(text: &str, from: usize) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut at = from;
    text[from.min(text.len())..].split_inclusive('\n').map(move |line| {
        let start = at;
        at += line.len();
        start..start + line.trim_end_matches('\n').len()
    })
}

/// Blanks what hides text from the reader: comments, and code blocks.
fn hide_comments(bl: &mut Blanker, syntax: CiteSyntax) {
    let src = bl.src;
    let n = src.len();
    match syntax {
        CiteSyntax::Latex => {
            let mut i = 0;
            while i < n {
                match src[i] {
                    b'\\' => i += 2,
                    b'%' => {
                        let end = line_end(src, i);
                        bl.blank(i..end, false);
                        i = end;
                    }
                    _ => i += 1,
                }
            }
        }
        CiteSyntax::Markdown => {
            fenced_code(bl);
            delimited(bl, b"<!--", b"-->");
        }
        CiteSyntax::Typst => {
            let mut i = 0;
            while i < n {
                if src[i..].starts_with(b"//") && (i == 0 || src[i - 1] != b':') {
                    let end = line_end(src, i);
                    bl.blank(i..end, false);
                    i = end;
                } else if src[i..].starts_with(b"/*") {
                    let end = find(src, i + 2, b"*/").map_or(n, |e| e + 2);
                    bl.blank(i..end, false);
                    i = end;
                } else if src[i..].starts_with(b"```") {
                    let end = find(src, i + 3, b"```").map_or(n, |e| e + 3);
                    bl.blank(i..end, true);
                    i = end;
                } else {
                    i += 1;
                }
            }
        }
    }
}

/// Where the line holding byte `i` ends (its `\n`, or the text's end).
fn line_end(b: &[u8], i: usize) -> usize {
    b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |k| i + k)
}

/// The first `pat` at or after `from`.
fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    b.get(from..)?.windows(pat.len()).position(|w| w == pat).map(|k| from + k)
}

/// Blanks (softly) every region from `open` to the next `close` (or the
/// text's end).
fn delimited(bl: &mut Blanker, open: &[u8], close: &[u8]) {
    let src = bl.src;
    let mut from = 0;
    while let Some(start) = find(src, from, open) {
        let end = find(src, start + open.len(), close).map_or(src.len(), |e| e + close.len());
        bl.blank(start..end, false);
        from = end;
    }
}

/// Blanks Markdown's fenced code blocks (``` or ~~~), fences included.
fn fenced_code(bl: &mut Blanker) {
    let text = std::str::from_utf8(bl.src).unwrap_or_default();
    let mut fence: Option<(char, usize)> = None;
    let lines: Vec<Range<usize>> = line_ranges(text, 0).collect();
    for r in lines {
        let t = text[r.clone()].trim_start();
        let run = |c: char| t.chars().take_while(|&x| x == c).count();
        match fence {
            Some((c, len)) => {
                bl.blank(r, true);
                if run(c) >= len && t.trim_start_matches(c).trim().is_empty() {
                    fence = None;
                }
            }
            None => {
                for c in ['`', '~'] {
                    if run(c) >= 3 {
                        fence = Some((c, run(c)));
                        bl.blank(r.clone(), true);
                    }
                }
            }
        }
    }
}

/// The bytes `{`…`}` (or another pair) that close each opening one, found
/// in one pass (a `\`-escaped byte is no delimiter); sorted by opening.
fn pairs(b: &[u8], range: Range<usize>, open: u8, close: u8) -> Vec<(usize, usize)> {
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut i = range.start;
    while i < range.end {
        match b[i] {
            b'\\' => i += 1,
            c if c == open => stack.push(i),
            c if c == close => {
                if let Some(o) = stack.pop() {
                    out.push((o, i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    out.sort_unstable();
    out
}

/// The closing byte of the group opened at `open`, if it is closed.
fn close_of(pairs: &[(usize, usize)], open: usize) -> Option<usize> {
    pairs.binary_search_by_key(&open, |p| p.0).ok().map(|k| pairs[k].1)
}

/// The first `close` within `limit` bytes after `open` (a bracket group
/// that holds no `[` and no line end).
fn bounded_close(b: &[u8], open: usize, close: u8, limit: usize) -> Option<usize> {
    let end = b.len().min(open.saturating_add(limit));
    (open + 1..end).find(|&k| b[k] == close || b[k] == b'[' || b[k] == b'\n').filter(|&k| b[k] == close)
}

/// The bytes of the character that starts with byte `c`.
fn char_len(c: u8) -> usize {
    match c {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0x80..=0xDF => 2,
        _ => 1,
    }
}

/// What a LaTeX command is, for the prose.
struct Rule {
    name: &'static str,
    /// Braced arguments blanked with it.
    args: u8,
    /// Its `[…]` arguments blanked too.
    options: bool,
    /// It ends the paragraph before it.
    hard: bool,
}

const fn rule(name: &'static str, args: u8, options: bool, hard: bool) -> Rule {
    Rule { name, args, options, hard }
}

/// The commands whose arguments are not prose, or that end a paragraph.
/// Any other command's name is blanked and its arguments read as prose
/// (`\emph{word}`, `\footnote{…}`, `\caption{…}`).
const RULES: &[Rule] = &[
    // Headings: their titles are not part of the next sentence.
    rule("part", 1, true, true),
    rule("chapter", 1, true, true),
    rule("section", 1, true, true),
    rule("subsection", 1, true, true),
    rule("subsubsection", 1, true, true),
    rule("paragraph", 1, true, true),
    rule("subparagraph", 1, true, true),
    // The front matter of a paper.
    rule("title", 1, true, true),
    rule("subtitle", 1, true, true),
    rule("author", 1, true, true),
    rule("date", 1, true, true),
    rule("address", 1, true, true),
    rule("affiliation", 1, true, true),
    rule("institute", 1, true, true),
    rule("institution", 1, true, true),
    rule("email", 1, true, true),
    rule("keywords", 1, true, true),
    rule("thanks", 1, true, false),
    rule("maketitle", 0, false, true),
    rule("tableofcontents", 0, false, true),
    rule("listoffigures", 0, false, true),
    rule("listoftables", 0, false, true),
    rule("appendix", 0, false, true),
    rule("newpage", 0, false, true),
    rule("clearpage", 0, false, true),
    rule("cleardoublepage", 0, false, true),
    rule("pagebreak", 0, true, true),
    rule("par", 0, false, true),
    rule("bigskip", 0, false, true),
    rule("medskip", 0, false, true),
    rule("smallskip", 0, false, true),
    rule("item", 0, true, true),
    rule("caption", 0, true, true),
    // Bibliography and files.
    rule("bibliography", 1, true, true),
    rule("bibliographystyle", 1, true, true),
    rule("nobibliography", 1, true, true),
    rule("addbibresource", 1, true, true),
    rule("addglobalbib", 1, true, true),
    rule("printbibliography", 0, true, true),
    rule("documentclass", 1, true, true),
    rule("usepackage", 1, true, true),
    rule("input", 1, false, true),
    rule("include", 1, false, true),
    rule("subfile", 1, false, true),
    rule("newcommand", 2, true, true),
    rule("renewcommand", 2, true, true),
    rule("providecommand", 2, true, true),
    rule("newenvironment", 3, true, true),
    rule("renewenvironment", 3, true, true),
    rule("pagestyle", 1, false, true),
    rule("thispagestyle", 1, false, false),
    // Cross-references, figures' files and layout: not words.
    rule("label", 1, false, false),
    rule("ref", 1, false, false),
    rule("eqref", 1, false, false),
    rule("autoref", 1, false, false),
    rule("Autoref", 1, false, false),
    rule("cref", 1, false, false),
    rule("Cref", 1, false, false),
    rule("cpageref", 1, false, false),
    rule("pageref", 1, false, false),
    rule("nameref", 1, false, false),
    rule("vref", 1, false, false),
    rule("url", 1, false, false),
    rule("nolinkurl", 1, false, false),
    rule("href", 1, false, false),
    rule("includegraphics", 1, true, false),
    rule("vspace", 1, false, false),
    rule("hspace", 1, false, false),
    rule("setlength", 2, false, false),
    rule("addtolength", 2, false, false),
    rule("setcounter", 2, false, false),
    rule("addtocounter", 2, false, false),
    rule("footnotemark", 0, true, false),
    rule("hypersetup", 1, false, false),
    rule("todo", 1, true, false),
];

/// Environments of displayed math: not words, but within their sentence
/// ("we minimise … where …").
const MATH: &[&str] = &[
    "equation",
    "equation*",
    "align",
    "align*",
    "alignat",
    "alignat*",
    "gather",
    "gather*",
    "multline",
    "multline*",
    "flalign",
    "flalign*",
    "eqnarray",
    "eqnarray*",
    "displaymath",
    "math",
];

/// Environments whose content is not prose and that stand apart from the
/// sentences around them: tables, code, pictures, a typed-in bibliography.
const NOT_PROSE: &[&str] = &[
    "tabular",
    "tabular*",
    "tabularx",
    "tabulary",
    "longtable",
    "array",
    "verbatim",
    "verbatim*",
    "Verbatim",
    "lstlisting",
    "minted",
    "alltt",
    "comment",
    "tikzpicture",
    "picture",
    "algorithmic",
    "thebibliography",
    "filecontents",
    "filecontents*",
];

/// Environments' braced arguments after `\begin{…}` (`tabular`'s columns).
const ENVIRONMENT_ARGS: &[(&str, u8)] = &[
    ("tabular", 1),
    ("tabular*", 2),
    ("tabularx", 2),
    ("tabulary", 2),
    ("array", 1),
    ("minipage", 1),
    ("wrapfigure", 2),
    ("multicols", 1),
    ("subfigure", 1),
    ("thebibliography", 1),
    ("minted", 1),
];

/// The LaTeX reader of one text (comments already blanked).
struct Latex<'s> {
    s: &'s str,
    b: &'s [u8],
    braces: Vec<(usize, usize)>,
    /// Environments whose `\end` was looked for and is not there.
    unclosed: HashSet<String>,
    /// `\[` was looked for a `\]` that is not there.
    display_unclosed: bool,
}

impl<'s> Latex<'s> {
    fn new(s: &'s str) -> Latex<'s> {
        Latex { s, b: s.as_bytes(), braces: Vec::new(), unclosed: HashSet::new(), display_unclosed: false }
    }

    /// Blanks what is not prose.
    fn read(mut self, bl: &mut Blanker) {
        let n = self.b.len();
        let body_start = self.s.find("\\begin{document}").map_or(0, |i| i + "\\begin{document}".len());
        let body_end = self.s[body_start..].find("\\end{document}").map_or(n, |i| body_start + i);
        bl.blank(0..body_start, true);
        bl.blank(body_end..n, true);
        self.braces = pairs(self.b, body_start..body_end, b'{', b'}');
        let mut i = body_start;
        while i < body_end {
            if let Some(end) = bl.citation_end(i) {
                i = end.max(i + 1);
                continue;
            }
            i = match self.b[i] {
                b'\\' => self.command(bl, i),
                b'{' | b'}' | b'~' => {
                    bl.blank(i..i + 1, false);
                    i + 1
                }
                _ => i + 1,
            };
        }
    }

    /// The command at `i` (a backslash) blanked as its kind says; where
    /// reading goes on.
    fn command(&mut self, bl: &mut Blanker, i: usize) -> usize {
        let b = self.b;
        let mut j = i + 1;
        while j < b.len() && b[j].is_ascii_alphabetic() {
            j += 1;
        }
        if j == i + 1 {
            return match b.get(i + 1) {
                None => i + 1,
                // A line break, a space.
                Some(b'\\' | b',' | b';' | b'!' | b':' | b' ' | b'>' | b'/') => {
                    bl.blank(i..i + 2, false);
                    i + 2
                }
                Some(b'[') => self.display_math(bl, i),
                // An escaped character or an accent: as written.
                Some(&c) => i + 1 + char_len(c),
            };
        }
        let end = if b.get(j) == Some(&b'*') { j + 1 } else { j };
        let s = self.s;
        let name = &s[i + 1..j];
        match name {
            "begin" | "end" => self.environment(bl, i, end, name == "begin"),
            "verb" => self.verb(bl, i, end),
            _ => match RULES.iter().find(|r| r.name == name) {
                Some(rule) => self.arguments(bl, i, end, rule.args, rule.options, rule.hard),
                None => {
                    bl.blank(i..end, false);
                    end
                }
            },
        }
    }

    /// Blanks a command from `i` with its `[…]` (when `options`) and its
    /// first `args` braced arguments; where it ends.
    fn arguments(&self, bl: &mut Blanker, i: usize, from: usize, args: u8, options: bool, hard: bool) -> usize {
        let b = self.b;
        let mut k = from;
        let mut taken = 0;
        loop {
            let at = skip_argument_space(b, k);
            if options && b.get(at) == Some(&b'[') {
                if let Some(close) = bounded_close(b, at, b']', 512) {
                    k = close + 1;
                    continue;
                }
            }
            if taken < args && b.get(at) == Some(&b'{') {
                if let Some(close) = close_of(&self.braces, at) {
                    k = close + 1;
                    taken += 1;
                    continue;
                }
            }
            break;
        }
        bl.blank(i..k, hard);
        k
    }

    /// `\begin{env}` (with its options and arguments; a whole environment
    /// that is not prose) or `\end{env}`: blanked, a paragraph's end (but
    /// displayed math, which stands within its sentence).
    fn environment(&mut self, bl: &mut Blanker, i: usize, from: usize, begin: bool) -> usize {
        let (s, b) = (self.s, self.b);
        let at = skip_argument_space(b, from);
        let name_end = (b.get(at) == Some(&b'{'))
            .then(|| (at + 1..b.len().min(at + 64)).find(|&k| !(b[k].is_ascii_alphanumeric() || b[k] == b'*')))
            .flatten()
            .filter(|&k| b[k] == b'}' && k > at + 1);
        let Some(close) = name_end else {
            bl.blank(i..from, false);
            return from;
        };
        let env = &s[at + 1..close];
        let math = MATH.contains(&env);
        if !begin {
            bl.blank(i..close + 1, !math);
            return close + 1;
        }
        let args = ENVIRONMENT_ARGS.iter().find(|(e, _)| *e == env).map_or(0, |(_, n)| *n);
        let k = self.arguments(bl, i, close + 1, args, true, !math);
        if (math || NOT_PROSE.contains(&env)) && !self.unclosed.contains(env) {
            let end_tag = format!("\\end{{{env}}}");
            match s[k..].find(&end_tag) {
                Some(e) => {
                    let end = k + e + end_tag.len();
                    bl.blank(i..end, !math);
                    return end;
                }
                None => {
                    self.unclosed.insert(env.to_string());
                }
            }
        }
        k
    }

    /// Display math, `\[ … \]`: not words.
    fn display_math(&mut self, bl: &mut Blanker, i: usize) -> usize {
        let close = if self.display_unclosed { None } else { find(self.b, i + 2, b"\\]") };
        match close {
            Some(e) => {
                bl.blank(i..e + 2, false);
                e + 2
            }
            None => {
                self.display_unclosed = true;
                bl.blank(i..i + 2, false);
                i + 2
            }
        }
    }

    /// `\verb|…|`: code, not words.
    fn verb(&self, bl: &mut Blanker, i: usize, from: usize) -> usize {
        let b = self.b;
        let end = b
            .get(from)
            .filter(|d| d.is_ascii_punctuation())
            .and_then(|&d| (from + 1..b.len().min(from + 1024)).find(|&k| b[k] == d || b[k] == b'\n').filter(|&k| b[k] == d))
            .map_or(from, |k| k + 1);
        bl.blank(i..end, false);
        end
    }
}

/// Markdown's prose: front matter, headings, fences of Pandoc's divs,
/// list and quote markers, link targets and images blanked.
fn markdown(bl: &mut Blanker, s: &str) {
    let body = front_matter(s).map_or(0, |f| f.end);
    bl.blank(0..body, true);
    let mut previous: Option<Range<usize>> = None;
    let lines: Vec<Range<usize>> = line_ranges(s, body).collect();
    for r in lines {
        let line = &s[r.clone()];
        let t = line.trim_start();
        let lead = line.len() - t.len();
        let at = r.start + lead;
        if t.trim().is_empty() {
            previous = None;
            continue;
        }
        let hashes = t.bytes().take_while(|&c| c == b'#').count();
        let heading = (1..=6).contains(&hashes) && t[hashes..].chars().next().is_none_or(char::is_whitespace);
        let t_end = t.trim_end();
        let underline = (t_end.len() >= 3 && t_end.bytes().all(|c| c == b'-')) || (!t_end.is_empty() && t_end.bytes().all(|c| c == b'='));
        if lead <= 3 && (heading || t.starts_with(":::")) {
            bl.blank(r, true);
            previous = None;
            continue;
        }
        if lead <= 3 && underline {
            if let Some(p) = previous.take() {
                bl.blank(p, true);
            }
            bl.blank(r, true);
            continue;
        }
        if let Some(len) = list_marker(t) {
            bl.blank(at..at + len, true);
        } else if t.starts_with('>') {
            let quotes = t.bytes().take_while(|&c| c == b'>' || c == b' ').count();
            bl.blank(at..at + quotes, false);
        }
        links(bl, s, r.clone());
        previous = Some(r);
    }
}

/// The length of a list item's marker at the start of `t` (`- `, `* `,
/// `+ `, `1. `, `1) `), if it starts one.
fn list_marker(t: &str) -> Option<usize> {
    let b = t.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let marker = match b.first()? {
        b'-' | b'*' | b'+' => 1,
        _ if (1..=9).contains(&digits) && matches!(b.get(digits), Some(b'.' | b')')) => digits + 1,
        _ => return None,
    };
    b.get(marker).is_some_and(|c| *c == b' ' || *c == b'\t').then_some(marker + 1)
}

/// Link targets (`[words](url)`: the words stay) and images of a line.
fn links(bl: &mut Blanker, s: &str, line: Range<usize>) {
    let b = s.as_bytes();
    let mut i = line.start;
    while i < line.end {
        if let Some(end) = bl.citation_end(i) {
            i = end.max(i + 1);
            continue;
        }
        if b[i] != b'[' {
            i += 1;
            continue;
        }
        let Some(close) = bounded_close(b, i, b']', 1024).filter(|&c| c < line.end) else {
            i += 1;
            continue;
        };
        let target = match b.get(close + 1) {
            Some(b'(') => (close + 2..line.end.min(close + 2048)).find(|&k| b"()[]".contains(&b[k])).filter(|&k| b[k] == b')'),
            Some(b'[') => bounded_close(b, close + 1, b']', 256).filter(|&k| k < line.end),
            _ => None,
        };
        let Some(target_end) = target else {
            i += 1;
            continue;
        };
        if i > 0 && b[i - 1] == b'!' {
            bl.blank(i - 1..target_end + 1, false);
        } else {
            bl.blank(i..i + 1, false);
            bl.blank(close..target_end + 1, false);
        }
        i = target_end + 1;
    }
}

/// Typst code calls whose line (or first argument) is no prose and ends a
/// paragraph.
const TYPST_RULES: &[&str] = &["set", "show", "let", "import", "include"];

/// Typst calls that end a paragraph.
const TYPST_BREAKS: &[&str] = &["bibliography", "outline", "pagebreak", "colbreak", "heading", "title", "figure", "table", "image"];

/// Typst's prose: headings, rules (`#set …`), calls' names and arguments
/// (their content blocks stay), labels and `#bibliography(…)` blanked.
fn typst(bl: &mut Blanker, s: &str) {
    let b = s.as_bytes();
    let n = b.len();
    let lines: Vec<Range<usize>> = line_ranges(s, 0).collect();
    for r in lines {
        let t = s[r.clone()].trim_start();
        let level = t.bytes().take_while(|&c| c == b'=').count();
        if level > 0 && t[level..].chars().next().is_none_or(char::is_whitespace) {
            bl.blank(r, true);
        }
    }
    let parens = pairs(b, 0..n, b'(', b')');
    let brackets = pairs(b, 0..n, b'[', b']');
    let mut i = 0;
    while i < n {
        if let Some(end) = bl.citation_end(i) {
            i = end.max(i + 1);
            continue;
        }
        i = match b[i] {
            b'#' => typst_call(bl, s, i, &parens, &brackets),
            b'<' => {
                let len = b[i + 1..n.min(i + 257)].iter().take_while(|c| c.is_ascii_alphanumeric() || b"_-:.".contains(c)).count();
                if len > 0 && b.get(i + 1 + len) == Some(&b'>') {
                    bl.blank(i..i + len + 2, false);
                    i + len + 2
                } else {
                    i + 1
                }
            }
            b'\\' if b.get(i + 1).is_none_or(u8::is_ascii_whitespace) => {
                bl.blank(i..i + 1, false);
                i + 1
            }
            b'\\' => i + 1 + b.get(i + 1).map_or(0, |&c| char_len(c)),
            _ => i + 1,
        };
    }
}

/// A Typst call at `i` (its `#`): its name and arguments blanked; a
/// content block after them is read as prose (its brackets blanked). A
/// rule (`#set`, `#show`, …) is blanked to its line's end (or its
/// arguments' end).
fn typst_call(bl: &mut Blanker, s: &str, i: usize, parens: &[(usize, usize)], brackets: &[(usize, usize)]) -> usize {
    let b = s.as_bytes();
    let mut j = i + 1;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b"_-.".contains(&b[j])) {
        j += 1;
    }
    while j > i + 1 && matches!(b[j - 1], b'.' | b'-') {
        j -= 1;
    }
    if j == i + 1 {
        return i + 1;
    }
    let name = &s[i + 1..j];
    let args_end = (b.get(j) == Some(&b'(')).then(|| close_of(parens, j)).flatten().map_or(j, |c| c + 1);
    if TYPST_RULES.contains(&name) {
        // To the line's end, or to the end of a call that opens on it and goes on.
        let mut end = line_end(b, j);
        if let Some(close) = (j..end).find(|&k| b[k] == b'(').and_then(|open| close_of(parens, open)) {
            end = end.max(line_end(b, close));
        }
        bl.blank(i..end, true);
        return end;
    }
    bl.blank(i..args_end, TYPST_BREAKS.contains(&name));
    if b.get(args_end) == Some(&b'[') {
        if let Some(close) = close_of(brackets, args_end) {
            bl.blank(args_end..args_end + 1, false);
            bl.blank(close..close + 1, false);
            return args_end + 1;
        }
    }
    args_end
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prose with its whitespace collapsed.
    fn said(text: &str, syntax: CiteSyntax) -> String {
        squash(&prose(text, &CiteGrammar::of(syntax)))
    }

    /// The paragraphs of a prose (runs of lines that are not blank), each
    /// with its whitespace collapsed.
    fn paragraphs(prose: &str) -> Vec<String> {
        let mut out = vec![String::new()];
        for line in prose.lines() {
            if line.trim().is_empty() {
                out.push(String::new());
            } else if let Some(last) = out.last_mut() {
                last.push(' ');
                last.push_str(line);
            }
        }
        out.iter().map(|p| squash(p)).filter(|p| !p.is_empty()).collect()
    }

    #[test]
    fn the_prose_is_as_long_as_the_text_and_keeps_its_citations() {
        let text =
            "\\documentclass{article}\n\\begin{document}\n\\section{Intro}\nWe tag words \\citep[p.~3]{brants2000} fast.\n\\end{document}\n";
        let r = read(text, &CiteGrammar::of(CiteSyntax::Latex), 100);
        assert_eq!(r.prose.len(), text.len());
        let cite = text.find("\\citep").unwrap();
        let markup = "\\citep[p.~3]{brants2000}";
        assert_eq!(&r.prose[cite..cite + markup.len()], markup);
        assert_eq!(squash(&r.prose), "We tag words \\citep[p.~3]{brants2000} fast.");
        assert_eq!(r.scan.groups.len(), 1);
    }

    #[test]
    fn latex_commands_that_are_not_words_are_blanked() {
        let text = "\\begin{document}\nAs Figure~\\ref{fig:a} shows,\\label{x} the \\emph{best} tagger\n% a comment \\cite{gone}\n\
                    is fast.\\\\ See \\url{https://x.org} and \\href{https://y.org}{the site}.\n\\end{document}";
        assert_eq!(said(text, CiteSyntax::Latex), "As Figure shows, the best tagger is fast. See and the site.");
        assert!(read(text, &CiteGrammar::of(CiteSyntax::Latex), 100).scan.groups.is_empty(), "a commented citation is none");
    }

    #[test]
    fn headings_and_environments_end_the_paragraph_before_them() {
        let text = "Intro text without a stop\n\\section{Method}\nWe tag \\cite{a}.\n\\begin{itemize}\n\\item First point \\cite{b}\n\
                    \\item Second\n\\end{itemize}";
        let p = prose(text, &CiteGrammar::of(CiteSyntax::Latex));
        assert_eq!(paragraphs(&p), ["Intro text without a stop", "We tag \\cite{a}.", "First point \\cite{b}", "Second"]);
        // A line that held only a label, or a comment, stays in its paragraph.
        let p = prose("We tag\n\\label{x}\n% a comment\nwords.", &CiteGrammar::of(CiteSyntax::Latex));
        assert_eq!(paragraphs(&p), ["We tag words."], "{p:?}");
    }

    #[test]
    fn math_tables_and_code_are_not_words() {
        let text = "We minimise\n\\begin{equation}\nL = \\sum_i x_i \\label{eq}\n\\end{equation}\nthe loss \\[ y = 2 \\] fast.\n\
                    \\begin{tabular}{lr}\nBM25 & 0.3 \\\\\n\\end{tabular}\nText \\verb|x_y| ends.";
        // Displayed math stays within its sentence; a table stands apart.
        assert_eq!(paragraphs(&prose(text, &CiteGrammar::of(CiteSyntax::Latex))), ["We minimise the loss fast.", "Text ends."]);
    }

    #[test]
    fn markdown_front_matter_headings_code_and_links_are_not_words() {
        let text = "---\ntitle: T\nbibliography: [a.bib, b.bib]\n---\n# Intro\n\nWe tag [@a] with a [tagger](https://x.org).\n\
                    ![a figure](f.png)\n\n```\n[@b] in code\n```\n<!-- [@c] -->\nSetext\n======\n\n- an item [@d]\n- another\n";
        let r = read(text, &CiteGrammar::of(CiteSyntax::Markdown), 100);
        let keys: Vec<String> = r.scan.groups.iter().flat_map(|g| g.keys.iter().map(|(k, _)| k.clone())).collect();
        assert_eq!(keys, ["a", "d"]);
        assert_eq!(paragraphs(&r.prose), ["We tag [@a] with a tagger.", "an item [@d]", "another"]);
    }

    #[test]
    fn typst_headings_rules_and_calls_are_not_words() {
        let text = "#set page(width: 10cm)\n#set text(\n  font: \"x\"\n)\n= Intro <intro>\nWe tag #emph[words] fast @brants2000.\n\
                    // a comment @gone\n#bibliography(\"works.bib\")\n";
        let r = read(text, &CiteGrammar::of(CiteSyntax::Typst), 100);
        assert_eq!(r.scan.groups.len(), 1);
        assert_eq!(squash(&r.prose), "We tag words fast @brants2000.");
    }

    #[test]
    fn hostile_drafts_read_in_linear_time() {
        for unit in ["\\section{", "\\begin{equation}", "\\[", "\\item[", "{", "[x](", "#set (", "\\verb|"] {
            let text = unit.repeat(100_000);
            for syntax in [CiteSyntax::Latex, CiteSyntax::Markdown, CiteSyntax::Typst] {
                let t = std::time::Instant::now();
                let p = prose(&text, &CiteGrammar::of(syntax));
                assert_eq!(p.len(), text.len());
                assert!(t.elapsed() < std::time::Duration::from_secs(10), "{unit:?} in {syntax:?}: {:?}", t.elapsed());
            }
        }
    }
}

//! Citation markup in running text: the one grammar of citations.
//!
//! LaTeX `\cite`-family commands (natbib, biblatex and its multi-citation
//! `\cites`, optional arguments, and wrapper commands a user names in the
//! configuration), Pandoc Markdown `[@key]`, `[see -@key, p. 3; @other]`
//! and narrative `@key`, Typst `@key` and `#cite(<key>)`, and the
//! benchmark's `[CIT]`. Every reader of citation keys derives from here:
//! the language server's diagnostics and offers, the editor's "already
//! cited", the exporter, the LaTeX and Markdown evidence readers, and the
//! query text a model sees ([`strip_citations`]). A check reads a whole
//! draft with [`scan_citations`]: under a budget of keys, and every
//! citation whose keys are not read said with why, never dropped silently.
//!
//! Every reader is given the grammar it reads with, a [`CiteGrammar`]: the
//! syntax and the wrapper commands the user's configuration names. Nothing
//! here is process-wide: two grammars (two configurations, a tool's plain
//! one beside an editor's) read side by side in one process.
//!
//! **Invariant:** no other module writes a pattern for citation markup;
//! a syntax this grammar does not know is added here, with a test.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::benchmark::CIT;

/// How a document writes its citations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CiteSyntax {
    /// `\cite{a,b}`
    #[default]
    Latex,
    /// `[@a; @b]`
    Markdown,
    /// `@a @b`
    Typst,
}

impl CiteSyntax {
    /// By the file's extension: Markdown-family files use Pandoc syntax,
    /// Typst files Typst's, everything else LaTeX.
    pub fn for_file(path: &Path) -> CiteSyntax {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("md" | "markdown" | "qmd" | "rmd" | "pandoc") => CiteSyntax::Markdown,
            Some("typ") => CiteSyntax::Typst,
            _ => CiteSyntax::Latex,
        }
    }

    /// A citation of `keys` as this syntax writes it.
    pub fn format(self, keys: &[String]) -> String {
        match self {
            CiteSyntax::Latex => format!("\\cite{{{}}}", keys.join(",")),
            CiteSyntax::Markdown => format!("[{}]", keys.iter().map(|k| format!("@{k}")).collect::<Vec<_>>().join("; ")),
            CiteSyntax::Typst => keys.iter().map(|k| format!("@{k}")).collect::<Vec<_>>().join(" "),
        }
    }
}

/// The grammar a text's citations are read with: the syntax it writes
/// them in, and the LaTeX wrapper commands that cite beside the `\cite`
/// family (`cite_commands` in the user's configuration, e.g. `refp` for
/// `\newcommand{\refp}[1]{\citep{#1}}`). A value its reader is given:
/// a document carries its own, and a reader that is given none of a
/// user's (a tool, training, benchmark contexts) reads with
/// [`CiteGrammar::of`], which knows no wrapper.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CiteGrammar {
    syntax: CiteSyntax,
    /// The wrapper commands (names without their backslash); none: no
    /// wrapper (no allocation for the plain grammar).
    wrappers: Option<Arc<[String]>>,
}

impl CiteGrammar {
    /// The plain grammar: LaTeX's `\cite` family (and `[CIT]`, Markdown's
    /// brackets where a text has them), no wrapper command. What a reader
    /// reads with when no user's configuration is in play: benchmark
    /// contexts, training pairs, citing sentences already extracted.
    pub const PLAIN: CiteGrammar = CiteGrammar::of(CiteSyntax::Latex);

    /// `syntax`'s grammar, with no wrapper command.
    pub const fn of(syntax: CiteSyntax) -> CiteGrammar {
        CiteGrammar { syntax, wrappers: None }
    }

    /// The same grammar with `names` (`refp` or `\refp`; blank ones
    /// left out) as its wrapper commands: each a citation marker, as
    /// `\cite` is.
    pub fn with_wrappers<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> CiteGrammar {
        let names: Vec<String> =
            names.into_iter().map(|n| n.as_ref().trim().trim_start_matches('\\').to_string()).filter(|n| !n.is_empty()).collect();
        self.wrappers = (!names.is_empty()).then(|| Arc::from(names));
        self
    }

    /// The same wrapper commands, for a text written in `syntax` (a
    /// document's grammar from the configuration's).
    pub fn in_syntax(&self, syntax: CiteSyntax) -> CiteGrammar {
        CiteGrammar { syntax, wrappers: self.wrappers.clone() }
    }

    /// How the text writes its citations.
    pub fn syntax(&self) -> CiteSyntax {
        self.syntax
    }

    /// The wrapper commands that cite (names without their backslash).
    pub fn wrappers(&self) -> &[String] {
        self.wrappers.as_deref().unwrap_or_default()
    }
}

/// What a LaTeX citation command does with its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CiteCommand {
    /// A citation marker in the prose: `\cite`, `\citep`, `\parencite`,
    /// `\autocites`, a configured wrapper.
    Marker,
    /// Names a work without a marker (`\citeauthor`, `\citeyear`,
    /// `\citetitle`, `\nocite`): its keys are cited, its place is prose.
    Reference,
}

/// Commands that name a work's parts, or list keys, without a marker.
const REFERENCE_COMMANDS: &[&str] =
    &["citeauthor", "Citeauthor", "citeyear", "citeyearpar", "citetitle", "Citetitle", "citeurl", "citedate", "nocite"];

/// The longest argument of a citation command, or bracketed citation
/// group, read as one (bytes): a key list is short, and a text cannot make
/// each of its `\cite[` or `[@` scan to its end.
const MAX_GROUP: usize = 4096;

/// The longest braced Pandoc key or Typst label read (bytes).
const MAX_KEY: usize = 256;

/// `s`'s first `max` bytes (or fewer, at a character boundary).
fn window(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// What the LaTeX command `name` (without its backslash; a trailing `*`
/// allowed) is, if it cites: any command whose name holds `cite` in any
/// case (natbib's `\citep`, `\Citet`, biblatex's `\parencite`,
/// `\footcites`, …), and `grammar`'s wrapper commands.
pub fn cite_command(name: &str, grammar: &CiteGrammar) -> Option<CiteCommand> {
    command_of(name, grammar.wrappers())
}

/// [`cite_command`], with the wrapper commands `wrappers`.
fn command_of(name: &str, wrappers: &[String]) -> Option<CiteCommand> {
    let n = name.trim_end_matches('*');
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    if REFERENCE_COMMANDS.contains(&n) {
        return Some(CiteCommand::Reference);
    }
    if n.to_ascii_lowercase().contains("cite") || wrappers.iter().any(|w| w == n) {
        return Some(CiteCommand::Marker);
    }
    None
}

/// A LaTeX citation command's arguments, read from just after its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatexArguments {
    /// The byte ranges of its key lists (inside the braces), one per
    /// `{…}` group (`\cites{a}{b,c}` has two).
    pub key_lists: Vec<Range<usize>>,
    /// Where the command ends; for an open command, the text's end.
    pub end: usize,
    /// The last key list is not closed: the text ends inside it (a
    /// citation being typed).
    pub open: bool,
}

/// Reads a citation command's arguments from byte `at` of `s` (just after
/// the command's name and any `*`): optional `[…]` arguments (and `(…)`
/// ones for the multi-citation `…cites`), then a braced key list (several
/// for `…cites`), each at most [`MAX_GROUP`] bytes. None: no key list
/// follows.
pub fn latex_arguments(s: &str, at: usize, name: &str) -> Option<LatexArguments> {
    read_arguments(s, at, name, Reach::Group).ok()
}

/// How far a group of a citation command's arguments is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Within [`MAX_GROUP`] bytes; a key list open to the text's end
    /// within them is being typed.
    Group,
    /// To its close before its paragraph ends (a blank line: LaTeX ends an
    /// argument there), however long: a key list of many keys.
    Paragraph,
}

/// Why a citation command's arguments were not read, and where the read
/// stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NotRead {
    /// No key list follows: not a citation.
    NoKeys { scanned_to: usize },
    /// A group opened and was not closed within its reach; `key_list`: it
    /// was a key list.
    Unclosed { scanned_to: usize, key_list: bool },
}

impl NotRead {
    fn scanned_to(self) -> usize {
        match self {
            NotRead::NoKeys { scanned_to } | NotRead::Unclosed { scanned_to, .. } => scanned_to,
        }
    }
}

/// [`latex_arguments`], each group read within `reach`.
fn read_arguments(s: &str, at: usize, name: &str, reach: Reach) -> Result<LatexArguments, NotRead> {
    let b = s.as_bytes();
    let multi = name.trim_end_matches('*').ends_with("cites");
    let end_of = |j: usize, open: u8, close: u8| match reach {
        Reach::Group => group_end_within(b, j, open, close, MAX_GROUP).ok_or(b.len().min(j.saturating_add(MAX_GROUP))),
        Reach::Paragraph => paragraph_group_end(b, j, open, close),
    };
    let mut k = at;
    let mut key_lists = Vec::new();
    loop {
        let mut j = k;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        match b.get(j) {
            Some(b'[') => k = end_of(j, b'[', b']').map_err(|to| NotRead::Unclosed { scanned_to: to, key_list: false })?,
            Some(b'(') if multi => k = end_of(j, b'(', b')').map_err(|to| NotRead::Unclosed { scanned_to: to, key_list: false })?,
            Some(b'{') => match end_of(j, b'{', b'}') {
                Ok(e) => {
                    key_lists.push(j + 1..e - 1);
                    k = e;
                    if !multi {
                        break;
                    }
                }
                // Open to the end of the text: a key list being typed.
                Err(_) if reach == Reach::Group && b.len() - j <= MAX_GROUP => {
                    key_lists.push(j + 1..b.len());
                    return Ok(LatexArguments { key_lists, end: b.len(), open: true });
                }
                Err(to) => return Err(NotRead::Unclosed { scanned_to: to, key_list: true }),
            },
            _ if key_lists.is_empty() => return Err(NotRead::NoKeys { scanned_to: j }),
            _ => break,
        }
    }
    Ok(LatexArguments { key_lists, end: k, open: false })
}

/// Spaces and tabs from `at`, and at most one line end among them: where
/// LaTeX looks for a command's next argument (a blank line ends the
/// command). The bibliography commands' reader and the prose reading share it.
pub fn skip_argument_space(b: &[u8], mut at: usize) -> usize {
    let mut line_ends = 0;
    while let Some(&c) = b.get(at) {
        match c {
            b' ' | b'\t' | b'\r' => at += 1,
            b'\n' if line_ends == 0 => {
                line_ends += 1;
                at += 1;
            }
            _ => break,
        }
    }
    at
}

/// The end (one past the closing byte) of the group opened at `i`; nested
/// groups and `\`-escaped bytes are skipped. None: never closed. (LaTeX's
/// rule for a group, which the LaTeX reader uses for every argument.)
pub fn group_end(b: &[u8], i: usize, open: u8, close: u8) -> Option<usize> {
    group_end_within(b, i, open, close, usize::MAX)
}

/// [`group_end`], the group closed within `limit` bytes of `i`.
fn group_end_within(b: &[u8], i: usize, open: u8, close: u8, limit: usize) -> Option<usize> {
    let stop = b.len().min(i.saturating_add(limit));
    let mut depth = 0usize;
    let mut j = i;
    while j < stop {
        match b[j] {
            b'\\' => j += 1,
            c if c == open => depth += 1,
            c if c == close => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

/// [`group_end`], the group closed before its paragraph ends (a blank
/// line, where LaTeX ends an argument); else where the read stopped (the
/// blank line, or the text's end).
fn paragraph_group_end(b: &[u8], i: usize, open: u8, close: u8) -> Result<usize, usize> {
    let mut depth = 0usize;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 1,
            b'\n' if blank_line_at(b, j + 1) => return Err(j),
            c if c == open => depth += 1,
            c if c == close => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Ok(j + 1);
                }
            }
            _ => {}
        }
        j += 1;
    }
    Err(b.len())
}

/// Whether the line that starts at byte `at` is blank (spaces and tabs,
/// then its end).
fn blank_line_at(b: &[u8], at: usize) -> bool {
    let rest = b.get(at..).unwrap_or_default();
    let blank = rest.iter().take_while(|&&c| matches!(c, b' ' | b'\t' | b'\r')).count();
    rest.get(blank) == Some(&b'\n')
}

/// The keys of a key list (`a, b`) as byte ranges (offset by `base`);
/// empty entries and `*` (`\nocite{*}`) left out.
fn key_ranges(list: &str, base: usize) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut at = base;
    list.split(',').filter_map(move |part| {
        let start = at + part.len() - part.trim_start().len();
        at += part.len() + 1;
        let key = part.trim();
        (!key.is_empty() && key != "*").then_some(start..start + key.len())
    })
}

/// A LaTeX command name at byte `i` (a backslash): the name and where it
/// ends (after a `*`).
fn latex_command_at(s: &str, i: usize) -> Option<(&str, usize)> {
    let b = s.as_bytes();
    if b.get(i) != Some(&b'\\') {
        return None;
    }
    let mut j = i + 1;
    while j < b.len() && b[j].is_ascii_alphabetic() {
        j += 1;
    }
    if j == i + 1 {
        return None;
    }
    if b.get(j) == Some(&b'*') {
        j += 1;
    }
    Some((&s[i + 1..j], j))
}

/// Every LaTeX citation command of `s` (`wrappers` among them): (where it
/// starts, its arguments).
fn latex_commands<'a>(s: &'a str, wrappers: &'a [String]) -> impl Iterator<Item = (usize, LatexArguments)> + 'a {
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some(off) = s.get(from..)?.find('\\') {
            let i = from + off;
            from = i + 1;
            let Some((name, after)) = latex_command_at(s, i) else { continue };
            if command_of(name, wrappers).is_none() {
                from = after;
                continue;
            }
            if let Some(args) = latex_arguments(s, after, name) {
                from = args.end.max(i + 1);
                return Some((i, args));
            }
            from = after;
        }
        None
    })
}

/// Is `c` a character of a Pandoc key (internal punctuation aside)?
fn pandoc_key_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Punctuation a Pandoc key may hold between key characters.
const PANDOC_INTERNAL: &[char] = &[':', '.', '#', '$', '%', '&', '-', '+', '?', '<', '>', '~', '/'];

/// The length of a Pandoc key at the start of `s` (`doe+2019`, `a:b.c`;
/// punctuation only between key characters); 0: none.
fn pandoc_key_len(s: &str) -> usize {
    let mut end = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if pandoc_key_char(c) {
            end = i + c.len_utf8();
        } else if end > 0 && PANDOC_INTERNAL.contains(&c) && chars.peek().is_some_and(|&(_, n)| pandoc_key_char(n)) {
            continue;
        } else {
            break;
        }
    }
    end
}

/// The length of a Typst label at the start of `s` (letters, digits, `_`,
/// `-`, `:`, `.`; not ending in punctuation); 0: none.
fn typst_key_len(s: &str) -> usize {
    if !s.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
        return 0;
    }
    let mut end = 0;
    for (i, c) in s.char_indices() {
        if c.is_alphanumeric() || c == '_' {
            end = i + c.len_utf8();
        } else if !matches!(c, '-' | ':' | '.') {
            break;
        }
    }
    end
}

/// Whether an `@` at byte `i` can start a citation: at the text's start or
/// after a character that is not a word character or `@` (so not an
/// e-mail address).
fn at_sign_starts_citation(s: &str, i: usize) -> bool {
    s[..i].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '@'))
}

/// A Pandoc citation key at an `@` at byte `i` of `s`: the key's range
/// (`@{key}` braces excluded) and where the citation ends.
fn pandoc_key_at(s: &str, i: usize) -> Option<(Range<usize>, usize)> {
    let after = i + 1;
    if let Some(inner) = s[after..].strip_prefix('{') {
        let close = window(inner, MAX_KEY).find(['}', '\n'])?;
        return (inner.as_bytes()[close] == b'}' && close > 0).then(|| (after + 1..after + 1 + close, after + close + 2));
    }
    let len = pandoc_key_len(&s[after..]);
    (len > 0).then_some((after..after + len, after + len))
}

/// Citation keys of `text` read with `grammar`, with their byte ranges, in
/// order: `\cite`-family commands and the grammar's wrappers (LaTeX);
/// `@key` and `@{key}` outside e-mail addresses, in brackets or narrative,
/// `-@key` too (Markdown); `@key` and `#cite(<key>)` (Typst).
pub fn citations(text: &str, grammar: &CiteGrammar) -> Vec<(String, Range<usize>)> {
    citation_groups(text, grammar).into_iter().flat_map(|g| g.keys).collect()
}

/// [`citations`] of a text in `syntax` with the wrappers `wrappers`.
fn keys_in(text: &str, syntax: CiteSyntax, wrappers: &[String]) -> Vec<(String, Range<usize>)> {
    scan(text, syntax, wrappers, usize::MAX).groups.into_iter().flat_map(|g| g.keys).collect()
}

/// One citation as written: the whole markup (a `\cite`-family command
/// with its arguments, a bracketed Pandoc group, a narrative `@key`, a
/// Typst `@key` or `#cite(<key>)`) and the keys it holds with their ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitationGroup {
    pub range: Range<usize>,
    pub keys: Vec<(String, Range<usize>)>,
}

/// Every citation of `text` read with `grammar` as a group, in order; the
/// keys are those [`citations`] finds.
pub fn citation_groups(text: &str, grammar: &CiteGrammar) -> Vec<CitationGroup> {
    scan_citations(text, grammar, usize::MAX).groups
}

/// Citations whose keys could not be read that a [`CitationScan`] lists
/// (with where each is); the rest are counted.
pub const UNREAD_LISTED: usize = 100;

/// A citation whose keys could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// Where it starts (a byte of the text).
    pub at: usize,
    /// Why, in words that name the command or the limit.
    pub why: String,
}

/// A text's citations as a reader of a whole draft takes them: the groups
/// in order, at most a budget of keys in all; the keys past it, counted;
/// and every citation whose keys could not be read, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CitationScan {
    pub groups: Vec<CitationGroup>,
    /// Keys past the budget: counted, not kept.
    pub keys_over: usize,
    /// The first [`UNREAD_LISTED`] citations whose keys were not read.
    pub unread: Vec<Unread>,
    /// Those past [`UNREAD_LISTED`]: counted.
    pub unread_over: usize,
}

/// Every citation of `text` read with `grammar`, as [`citation_groups`]
/// reads them, with at most `max_keys` keys kept (the group the budget ends in is
/// cut there) and the keys past it counted; and every citation whose keys
/// are not read, said, never dropped silently: a `\cite` key list that is
/// not closed before its paragraph ends, a key over [`MAX_KEY`] bytes.
///
/// A LaTeX key list longer than a group's budget ([`MAX_GROUP`]) is read
/// to its `}` within its paragraph, as LaTeX reads an argument. Such a
/// read goes at most to the end of its paragraph, and one that finds no
/// `}` leaves the rest of what it read to the budgeted reads: no byte is
/// read that way twice, and a text is read in linear time whatever it holds.
pub fn scan_citations(text: &str, grammar: &CiteGrammar, max_keys: usize) -> CitationScan {
    scan(text, grammar.syntax, grammar.wrappers(), max_keys)
}

/// [`scan_citations`] of a text in `syntax` with the wrappers `wrappers`.
fn scan(text: &str, syntax: CiteSyntax, wrappers: &[String], max_keys: usize) -> CitationScan {
    let mut c = Collector { scan: CitationScan::default(), kept: 0, max: max_keys };
    match syntax {
        CiteSyntax::Latex => latex_scan(text, wrappers, &mut c),
        CiteSyntax::Markdown => markdown_scan(text, &mut c),
        CiteSyntax::Typst => typst_scan(text, &mut c),
    }
    c.scan
}

/// The keys of a group with their ranges.
type Keys = Vec<(String, Range<usize>)>;

/// Builds a [`CitationScan`] under its budget of keys.
struct Collector {
    scan: CitationScan,
    kept: usize,
    max: usize,
}

impl Collector {
    /// Takes the key at `range` of `text` into `keys`; a key longer than
    /// [`MAX_KEY`] is said and not read, one past the budget is counted.
    fn key(&mut self, text: &str, range: Range<usize>, keys: &mut Keys) {
        if range.len() > MAX_KEY {
            let len = range.len();
            self.unread(range.start, || format!("a citation key of {len} bytes, over the limit of {MAX_KEY} bytes for a key: not read"));
        } else if self.kept < self.max {
            self.kept += 1;
            keys.push((text[range.clone()].to_string(), range));
        } else {
            self.scan.keys_over += 1;
        }
    }

    /// A group of the keys kept (none kept: no group).
    fn group(&mut self, range: Range<usize>, keys: Keys) {
        if !keys.is_empty() {
            self.scan.groups.push(CitationGroup { range, keys });
        }
    }

    fn unread(&mut self, at: usize, why: impl FnOnce() -> String) {
        if self.scan.unread.len() < UNREAD_LISTED {
            self.scan.unread.push(Unread { at, why: why() });
        } else {
            self.scan.unread_over += 1;
        }
    }
}

/// The `\cite`-family commands of `text`, and its `wrappers`.
fn latex_scan(text: &str, wrappers: &[String], c: &mut Collector) {
    let mut from = 0;
    // Where a read to a paragraph's end may start: not inside what one
    // that found no close has read.
    let mut long_from = 0;
    while let Some(off) = text.get(from..).and_then(|r| r.find('\\')) {
        let i = from + off;
        from = i + 1;
        let Some((name, after)) = latex_command_at(text, i) else { continue };
        if command_of(name, wrappers).is_none() {
            from = after;
            continue;
        }
        let read = match read_arguments(text, after, name, Reach::Group) {
            // A group longer than a group's budget: read to its close within its paragraph.
            Err(NotRead::Unclosed { .. }) if i >= long_from => {
                let long = read_arguments(text, after, name, Reach::Paragraph);
                if let Err(not_read) = long {
                    long_from = not_read.scanned_to();
                    if let NotRead::Unclosed { key_list: true, .. } = not_read {
                        c.unread(i, || format!("`\\{name}{{…` is not closed before its paragraph ends: its keys are not read"));
                    }
                }
                long
            }
            read => read,
        };
        match read {
            // A command still open at the text's end is being typed, not cited.
            Ok(args) if args.open => from = args.end.max(i + 1),
            Ok(args) => {
                from = args.end.max(i + 1);
                let mut keys = Vec::new();
                for list in &args.key_lists {
                    for key in key_ranges(&text[list.clone()], list.start) {
                        c.key(text, key, &mut keys);
                    }
                }
                c.group(i..args.end, keys);
            }
            Err(_) => from = after,
        }
    }
}

/// The Pandoc citations of `text`: bracketed groups and narrative ones.
fn markdown_scan(text: &str, c: &mut Collector) {
    // Bracketed groups (`[see @a, p. 3; -@b]`), in order.
    let mut bracketed = text.match_indices('[').filter_map(|(i, _)| bracketed_len(&text[i..]).map(|len| i..i + len)).peekable();
    let mut open: Option<(Range<usize>, Keys)> = None;
    for (i, _) in text.match_indices('@') {
        if !at_sign_starts_citation(text, i) {
            continue;
        }
        let Some((key, end)) = pandoc_key_at(text, i) else { continue };
        while bracketed.peek().is_some_and(|b| b.end <= i) {
            bracketed.next();
        }
        // In a bracketed group, else narrative (`@key`, `-@key`, `@{key}`).
        let whole = match bracketed.peek().filter(|b| b.start < i) {
            Some(b) => b.clone(),
            None => (if text[..i].ends_with('-') { i - 1 } else { i })..end,
        };
        if open.as_ref().is_none_or(|(range, _)| *range != whole) {
            if let Some((range, keys)) = open.take() {
                c.group(range, keys);
            }
            open = Some((whole, Vec::new()));
        }
        if let Some((_, keys)) = &mut open {
            c.key(text, key, keys);
        }
    }
    if let Some((range, keys)) = open {
        c.group(range, keys);
    }
}

/// The Typst citations of `text`, `@key` and `#cite(<key>)`, in the order
/// they stand.
fn typst_scan(text: &str, c: &mut Collector) {
    let mut labels = text
        .match_indices('@')
        .filter_map(|(i, _)| {
            let len = typst_key_len(&text[i + 1..]);
            (len > 0 && at_sign_starts_citation(text, i)).then_some((i..i + 1 + len, i + 1..i + 1 + len))
        })
        .peekable();
    let mut calls = text.match_indices("#cite(").filter_map(|(i, _)| typst_call_at(text, i)).peekable();
    loop {
        let label_first = match (labels.peek(), calls.peek()) {
            (Some(l), Some(k)) => l.0.start <= k.0.start,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let Some((range, key)) = (if label_first { labels.next() } else { calls.next() }) else { break };
        let mut keys = Vec::new();
        c.key(text, key, &mut keys);
        c.group(range, keys);
    }
}

/// A Typst `#cite(<key>…)` call at byte `i` (its `#`): the call's range (to
/// its `)`, within a group's length) and its key's.
fn typst_call_at(text: &str, i: usize) -> Option<(Range<usize>, Range<usize>)> {
    let rest = &text[i + 6..];
    let lead = rest.len() - rest.trim_start().len();
    let start = i + 6 + lead;
    let label = window(text[start..].strip_prefix('<')?, MAX_KEY);
    let len = label.find(|c: char| c == '>' || c.is_whitespace()).unwrap_or(label.len());
    if len == 0 || !label[len..].starts_with('>') {
        return None;
    }
    let key = start + 1..start + 1 + len;
    // To the call's `)` (its other arguments, e.g. a supplement), within a group's length.
    let after = key.end + 1;
    let end = window(&text[after..], MAX_GROUP)
        .find([')', '\n'])
        .filter(|&e| text[after + e..].starts_with(')'))
        .map_or(after, |e| after + e + 1);
    Some((i..end, key))
}

/// The distinct keys `text` cites (read with `grammar`), in order of
/// first citation.
pub fn cited_keys(text: &str, grammar: &CiteGrammar) -> Vec<String> {
    distinct(citations(text, grammar))
}

/// The distinct keys of `found`, in order.
fn distinct(found: Vec<(String, Range<usize>)>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    found.into_iter().map(|(key, _)| key).filter(|k| seen.insert(k.clone())).collect()
}

/// The distinct keys a text of unknown syntax cites, in order: its
/// `\cite`-family commands (and `grammar`'s wrappers; its syntax aside)
/// and its bracketed `[@key]` groups (the forms no prose writes by
/// accident).
pub fn cited_keys_any(text: &str, grammar: &CiteGrammar) -> Vec<String> {
    let mut out = distinct(keys_in(text, CiteSyntax::Latex, grammar.wrappers()));
    let mut seen: std::collections::HashSet<String> = out.iter().cloned().collect();
    // The next `]` or line end, found once for every `[` before it: a
    // group that holds no citation has no `[` inside it that starts one
    // either (its body is a suffix), so the scan goes on after it.
    let mut close: Option<usize> = None;
    let mut rest = 0;
    while let Some(off) = text.get(rest..).and_then(|r| r.find('[')) {
        let i = rest + off;
        if close.is_none_or(|c| c <= i) {
            close = text[i + 1..].find([']', '\n']).map(|k| i + 1 + k);
        }
        let Some(c) = close else { break };
        if c - i > MAX_GROUP + 1 {
            rest = i + 1;
            continue;
        }
        rest = c + 1;
        if let Some(len) = bracketed_len(&text[i..]) {
            let found = keys_in(&text[i..i + len], CiteSyntax::Markdown, &[]).into_iter().map(|(k, _)| k);
            out.extend(found.filter(|k| seen.insert(k.clone())));
        }
    }
    out
}

/// The length of a bracketed Pandoc citation group at the start of `s`
/// (`[see @a, p. 3; -@b]`, on one line, holding a citation).
fn bracketed_len(s: &str) -> Option<usize> {
    let inner = window(s.strip_prefix('[')?, MAX_GROUP);
    let end = inner.find([']', '\n'])?;
    let body = &inner[..end];
    let cites = body.match_indices('@').any(|(i, _)| at_sign_starts_citation(body, i) && pandoc_key_at(body, i).is_some());
    (inner.as_bytes()[end] == b']' && cites).then_some(end + 2)
}

/// A Pandoc citation at the start of `s`: a bracketed group
/// (`[see @a, p. 3; -@b]`) or, where `s` starts with `@`, a narrative
/// citation (the caller knows the character before it). Its keys and its
/// length.
pub fn pandoc_citation_at(s: &str) -> Option<(Vec<String>, usize)> {
    if s.starts_with('[') {
        let len = bracketed_len(s)?;
        let keys = keys_in(&s[..len], CiteSyntax::Markdown, &[]).into_iter().map(|(k, _)| k).collect();
        return Some((keys, len));
    }
    let (key, end) = pandoc_key_at(s, s.find('@').filter(|&i| i == 0)?)?;
    Some((vec![s[key].to_string()], end))
}

/// A citation being typed at the end of `before` (the text of a line up to
/// the cursor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenCitation {
    /// Where the citation (command, bracket group, `@` or `#cite`) starts.
    pub start: usize,
    /// Where the key being typed starts.
    pub key_start: usize,
}

/// The citation `before` ends inside, if any (read with `grammar`): in a
/// `\cite`-family command's (or a wrapper's) key list, after its `{` or a
/// `,` (LaTeX); in a bracketed group after `@` or `-@` (Markdown); after
/// `@` or inside `#cite(<` (Typst).
pub fn open_citation(before: &str, grammar: &CiteGrammar) -> Option<OpenCitation> {
    match grammar.syntax {
        CiteSyntax::Latex => {
            let (start, args) = latex_commands(before, grammar.wrappers()).last().filter(|(_, a)| a.open)?;
            let list = args.key_lists.last()?;
            let typed = list.start + before[list.clone()].rfind(',').map_or(0, |i| i + 1);
            let typed = typed + before[typed..].len() - before[typed..].trim_start().len();
            (!before[list.clone()].contains(['{', '}'])).then_some(OpenCitation { start, key_start: typed })
        }
        CiteSyntax::Markdown => {
            let at = before.rfind('@')?;
            if !before[at + 1..].chars().all(|c| pandoc_key_char(c) || PANDOC_INTERNAL.contains(&c)) {
                return None;
            }
            let open = before[..at].rfind('[')?;
            let group = &before[open + 1..at];
            let lead = group.strip_suffix('-').unwrap_or(group);
            let fits = !group.contains(']') && (lead.trim().is_empty() || lead.trim_end().ends_with(';'));
            fits.then_some(OpenCitation { start: open, key_start: at + 1 })
        }
        CiteSyntax::Typst => {
            if let Some(i) = before.rfind("#cite(") {
                let rest = &before[i + 6..];
                let lead = rest.len() - rest.trim_start().len();
                if let Some(label) = rest[lead..].strip_prefix('<') {
                    if !label.contains(|c: char| c == '>' || c.is_whitespace()) {
                        return Some(OpenCitation { start: i, key_start: i + 6 + lead + 1 });
                    }
                }
            }
            let at = before.rfind('@')?;
            let typed = &before[at + 1..];
            let all_label = typed.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ':' | '.'));
            (all_label && at_sign_starts_citation(before, at)).then_some(OpenCitation { start: at, key_start: at + 1 })
        }
    }
}

/// Removes citation markup (`[CIT]`, `\cite`-family commands and
/// `grammar`'s wrappers, bracketed `[@key]` groups; whatever `grammar`'s
/// syntax) and collapses whitespace: the text a model reads.
pub fn strip_citations(text: &str, grammar: &CiteGrammar) -> String {
    let wrappers = grammar.wrappers();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let skip = if rest.starts_with(CIT) {
            Some(CIT.len())
        } else if rest.starts_with('\\') {
            latex_command_at(text, i)
                .filter(|(name, _)| command_of(name, wrappers).is_some())
                .and_then(|(name, after)| latex_arguments(text, after, name).filter(|a| !a.open))
                .map(|a| a.end - i)
        } else if rest.starts_with("[@") || rest.starts_with("[-@") {
            bracketed_len(rest)
        } else {
            None
        };
        match skip {
            Some(len) => {
                out.push(' ');
                i += len;
            }
            None => {
                let c = rest.chars().next().expect("not at the end");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Punctuation a citation key may hold, beside letters and digits.
const KEY_PUNCTUATION: &[char] = &['_', '-', ':', '.', '/', '+'];

/// Why a text is not written into a draft as a citation key
/// ([`citation_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAKey {
    /// The text as it may be shown: control and invisible characters
    /// dropped, cut after 64 characters.
    pub shown: String,
    /// Why, in a few words (`` `}` cannot be part of a key ``).
    pub why: String,
}

impl std::fmt::Display for NotAKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` is not a citation key: {}", self.shown, self.why)
    }
}

/// Whether `key` may be written into a draft of `syntax` as a citation
/// key, and if not, why: the one rule of what a key is, for every place
/// that writes one (the language server's quick fixes, completions and
/// "Cite" actions, the editor's rewriting of renamed keys and the
/// citation it inserts after an export, the keys of exported entries).
///
/// A key is 1 to 256 bytes of letters and digits (of any script) and the
/// punctuation `_ - : . / +`. That holds the keys tools make (Better
/// BibTeX's `smith2020deep`, `Smith_2020`, DBLP's
/// `DBLP:conf/sigir/Smith20`, a DOI as a key, `10.1145/3077136.3080758`,
/// Pandoc's `doe+2019`) and keeps everything else out:
/// - white space, `,`, `{` and `}` end a key or a key list, in a `.bib`
///   entry's head and in `\cite{…}`: a key holding them writes markup of
///   its own into the draft (`new}\input{/etc/passwd}\cite{x`);
/// - `\`, `%`, `#`, `~`, `^`, `$`, `&` are TeX's escape, comment,
///   parameter, active, superscript (`^^5c` is a backslash), math and
///   alignment characters: each changes what LaTeX reads;
/// - `"`, `'`, `@`, `=`, brackets, `;` and the like stand in no key those
///   tools make, and mean something to BibTeX, Pandoc or Typst;
/// - control and invisible characters are never part of a key.
///
/// A draft must also read the key back whole where it is written:
/// `syntax`'s citation of the key, read by this grammar, is that key. In
/// Pandoc Markdown punctuation stands only between letters and digits
/// (`@smith.` cites `smith`); a Typst `@label` holds no `/` or `+`.
pub fn citation_key(key: &str, syntax: CiteSyntax) -> Result<(), NotAKey> {
    let refused = |why: String| Err(NotAKey { shown: shown_key(key), why });
    if key.is_empty() {
        return refused("it is empty".into());
    }
    if key.len() > MAX_KEY {
        return refused(format!("it is longer than {MAX_KEY} bytes"));
    }
    if let Some(c) = key.chars().find(|&c| !(c.is_alphanumeric() || KEY_PUNCTUATION.contains(&c))) {
        return refused(format!("{} cannot be part of a key", key_character(c)));
    }
    let written = syntax.format(&[key.to_string()]);
    let read = keys_in(&written, syntax, &[]);
    if let [(back, _)] = read.as_slice() {
        if back == key {
            return Ok(());
        }
    }
    let name = match syntax {
        CiteSyntax::Latex => "LaTeX",
        CiteSyntax::Markdown => "Pandoc Markdown",
        CiteSyntax::Typst => "Typst",
    };
    match read.first() {
        Some((back, _)) => refused(format!("{name} reads `{written}` as a citation of `{}`", shown_key(back))),
        None => refused(format!("{name} reads no citation in `{}`", shown_key(&written))),
    }
}

/// Whether `key` is a citation key a draft of `syntax` may be given
/// ([`citation_key`]).
pub fn is_citation_key(key: &str, syntax: CiteSyntax) -> bool {
    citation_key(key, syntax).is_ok()
}

/// `key` as a message shows it.
fn shown_key(key: &str) -> String {
    let printable = crate::util::printable(key);
    let mut shown: String = printable.chars().take(64).collect();
    if printable.chars().nth(64).is_some() {
        shown.push('…');
    }
    shown
}

/// A character a key cannot hold, named for a message.
fn key_character(c: char) -> String {
    if c == ' ' {
        "a space".into()
    } else if c.is_whitespace() || c.is_control() || crate::util::printable(c.encode_utf8(&mut [0; 4])).trim().is_empty() {
        format!("the character U+{:04X}", c as u32)
    } else {
        format!("`{c}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain grammar: no wrapper command.
    const PLAIN: CiteGrammar = CiteGrammar::PLAIN;

    fn keys(text: &str, syntax: CiteSyntax) -> Vec<String> {
        citations(text, &CiteGrammar::of(syntax)).into_iter().map(|(k, _)| k).collect()
    }

    #[test]
    fn citation_groups_span_the_whole_markup() {
        let spans = |text: &str, syntax| -> Vec<(String, Vec<String>)> {
            citation_groups(text, &CiteGrammar::of(syntax))
                .into_iter()
                .map(|g| {
                    (
                        text[g.range].to_string(),
                        g.keys
                            .into_iter()
                            .map(|(k, r)| {
                                assert_eq!(text[r].to_string(), k);
                                k
                            })
                            .collect(),
                    )
                })
                .collect()
        };
        let t = r"As in \citep[p.~3]{smith2020, doe2019} and \cite{x}.";
        assert_eq!(
            spans(t, CiteSyntax::Latex),
            [
                (r"\citep[p.~3]{smith2020, doe2019}".to_string(), vec!["smith2020".to_string(), "doe2019".to_string()]),
                (r"\cite{x}".to_string(), vec!["x".to_string()])
            ]
        );
        let md = "See [@a; -@b, p. 3] and @{c} or -@d.";
        let got = spans(md, CiteSyntax::Markdown);
        assert_eq!(got.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(), ["[@a; -@b, p. 3]", "@{c}", "-@d"]);
        assert_eq!(got[0].1, ["a", "b"]);
        let typ = "As #cite(<smith>) and @doe showed.";
        assert_eq!(spans(typ, CiteSyntax::Typst).iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(), ["#cite(<smith>)", "@doe"]);
    }

    #[test]
    fn citations_are_stripped() {
        assert_eq!(strip_citations("using TnT [CIT] trained  on\nWSJ", &PLAIN), "using TnT trained on WSJ");
        assert_eq!(strip_citations(r"as shown \citep[p.~3]{a,b} and \cite{c}.", &PLAIN), "as shown and .");
        assert_eq!(strip_citations("see [@smith2020; @doe, p. 3] for [details]", &PLAIN), "see for [details]");
        assert_eq!(strip_citations(r"\emph{not} a cite", &PLAIN), r"\emph{not} a cite");
        assert_eq!(strip_citations(r"an open \cite{a and [@b more", &PLAIN), r"an open \cite{a and [@b more");
    }

    #[test]
    fn latex_commands_of_every_family() {
        let t = r"As in \citep[p.~3]{smith2020, doe2019} and \Citet{x}; \autocites[see][]{a}(post){b,c} \textcite*{d}.";
        assert_eq!(keys(t, CiteSyntax::Latex), ["smith2020", "doe2019", "x", "a", "b", "c", "d"]);
        let ranges = citations(t, &PLAIN);
        assert!(ranges.iter().all(|(k, r)| &t[r.clone()] == k));
        assert_eq!(keys(r"\citeauthor{e} \nocite{*} \nocite{f} \emph{g} \section{h}", CiteSyntax::Latex), ["e", "f"]);
        assert_eq!(cite_command("citeauthor", &PLAIN), Some(CiteCommand::Reference));
        assert_eq!(cite_command("parencite*", &PLAIN), Some(CiteCommand::Marker));
        assert_eq!(cite_command("emph", &PLAIN), None);
    }

    #[test]
    fn hostile_markup_is_read_in_linear_time() {
        // Each of these would make a scanner that starts over at every
        // opening read to the text's end (100,000 times 256 KB); each
        // opening reads at most one group's budget.
        for unit in [r"\cite[", r"\cite{", "[@", "[x", "@{", "#cite(<", r"\cites{a}("] {
            let text = unit.repeat(256 * 1024 / unit.len());
            for syntax in [CiteSyntax::Latex, CiteSyntax::Markdown, CiteSyntax::Typst] {
                let _ = citations(&text, &CiteGrammar::of(syntax));
            }
            assert!(cited_keys_any(&text, &PLAIN).is_empty(), "{unit}");
            assert!(!strip_citations(&text, &PLAIN).is_empty());
        }
        let many: String = (0..50_000).map(|i| format!("[@k{i}] ")).collect();
        assert_eq!(cited_keys(&many, &CiteGrammar::of(CiteSyntax::Markdown)).len(), 50_000);
        assert_eq!(cited_keys_any(&many, &PLAIN).len(), 50_000);
    }

    #[test]
    fn configured_wrappers_cite() {
        let mine = CiteGrammar::of(CiteSyntax::Latex).with_wrappers(["\\refp", " "]);
        assert_eq!(mine.wrappers(), ["refp"], "the backslash and blank names left out");
        let text = r"as \refp[p. 2]{a, b} and \othercmd{c}";
        assert_eq!(citations(text, &mine).into_iter().map(|(k, _)| k).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(cite_command("refp", &mine), Some(CiteCommand::Marker));
        assert_eq!(strip_citations(r"as \refp{a} said", &mine), "as said");
        assert_eq!(cited_keys_any(r"as \refp{a} and [@b]", &mine), ["a", "b"]);
        let open = open_citation(r"as \refp{a, b", &mine).map(|o| o.start);
        assert_eq!(open, Some(3), "a wrapper being typed is a citation being typed");
        let scan = scan_citations("\\refp{a}\n", &mine, usize::MAX);
        assert_eq!(scan.groups.len(), 1);
        // The wrappers stay with their grammar: in another syntax, the same.
        assert_eq!(mine.in_syntax(CiteSyntax::Markdown).in_syntax(CiteSyntax::Latex), mine);
        assert!(CiteGrammar::of(CiteSyntax::Latex).with_wrappers(Vec::<String>::new()) == PLAIN, "no wrapper: the plain grammar");
    }

    /// Two grammars in one process, side by side: a wrapper is a citation
    /// to the grammar that names it and to no other (once a process-wide
    /// list, which whoever loaded a configuration first set for everyone).
    #[test]
    fn two_grammars_read_side_by_side() {
        let mine = CiteGrammar::of(CiteSyntax::Latex).with_wrappers(["refp"]);
        let theirs = CiteGrammar::of(CiteSyntax::Latex).with_wrappers(["bibref"]);
        let text = r"We tag \refp{a} and parse \bibref{b}, as \cite{c} says.";
        let read = |g: &CiteGrammar| cited_keys(text, g);
        assert_eq!(read(&mine), ["a", "c"]);
        assert_eq!(read(&theirs), ["b", "c"]);
        assert_eq!(read(&PLAIN), ["c"], "a grammar without wrappers reads only the `\\cite` family");
        assert_eq!(cite_command("refp", &PLAIN), None);
        assert_eq!(cite_command("refp", &theirs), None);
        assert_eq!(strip_citations(r"as \refp{a} said", &PLAIN), r"as \refp{a} said");
        assert!(open_citation(r"as \refp{a", &PLAIN).is_none());
        // Read in turn from several threads: each grammar keeps its own.
        let handles: Vec<_> = [mine, theirs, PLAIN].into_iter().map(|g| std::thread::spawn(move || cited_keys(text, &g))).collect();
        let read: Vec<Vec<String>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(read, [vec!["a", "c"], vec!["b", "c"], vec!["c"]]);
    }

    #[test]
    fn pandoc_keys_follow_pandoc() {
        let md = "See [@lee2018; -@kim2017, p. 4], as @doe+2019 shows; mail me@host.org, @{odd key}.";
        assert_eq!(keys(md, CiteSyntax::Markdown), ["lee2018", "kim2017", "doe+2019", "odd key"]);
        assert_eq!(keys("@a:b.c. and @x-", CiteSyntax::Markdown), ["a:b.c", "x"]);
        assert_eq!(cited_keys_any("as @narrative says [@lee2018] and \\cite{x}", &PLAIN), ["x", "lee2018"]);
    }

    #[test]
    fn typst_keys() {
        let typ = "As @smith2020 and #cite(<doe2019>) show; mail a@b. @x";
        assert_eq!(keys(typ, CiteSyntax::Typst), ["smith2020", "doe2019", "x"]);
        assert_eq!(cited_keys("@a @a #cite(<a>)", &CiteGrammar::of(CiteSyntax::Typst)), ["a"]);
    }

    #[test]
    fn the_citation_being_typed() {
        fn open(s: &str, syntax: CiteSyntax) -> Option<(usize, &str)> {
            open_citation(s, &CiteGrammar::of(syntax)).map(|o| (o.start, &s[o.key_start..]))
        }
        assert_eq!(open(r"as \citep[p.~3]{smith2020, do", CiteSyntax::Latex), Some((3, "do")));
        assert_eq!(open(r"as \cite{", CiteSyntax::Latex), Some((3, "")));
        assert_eq!(open(r"as \cite{a} and", CiteSyntax::Latex), None);
        assert_eq!(open(r"as \emph{a", CiteSyntax::Latex), None);
        assert_eq!(open("see [@lee; -@doe+", CiteSyntax::Markdown), Some((4, "doe+")));
        assert_eq!(open("see [p. 3, @", CiteSyntax::Markdown), None);
        assert_eq!(open("mail me@ho", CiteSyntax::Markdown), None);
        assert_eq!(open("as @smi", CiteSyntax::Typst), Some((3, "smi")));
        assert_eq!(open("as #cite(<do", CiteSyntax::Typst), Some((3, "do")));
        assert_eq!(open("mail a@b", CiteSyntax::Typst), None);
    }

    #[test]
    fn formats_and_files() {
        assert_eq!(CiteSyntax::for_file(Path::new("paper.tex")), CiteSyntax::Latex);
        assert_eq!(CiteSyntax::for_file(Path::new("notes.MD")), CiteSyntax::Markdown);
        assert_eq!(CiteSyntax::for_file(Path::new("thesis.typ")), CiteSyntax::Typst);
        let k = vec!["a".to_string(), "b".to_string()];
        assert_eq!(CiteSyntax::Latex.format(&k), "\\cite{a,b}");
        assert_eq!(CiteSyntax::Markdown.format(&k), "[@a; @b]");
        assert_eq!(CiteSyntax::Typst.format(&k), "@a @b");
        // What each syntax writes, it reads back.
        for s in [CiteSyntax::Latex, CiteSyntax::Markdown, CiteSyntax::Typst] {
            assert_eq!(cited_keys(&format!("text {} more", s.format(&k)), &CiteGrammar::of(s)), k, "{s:?}");
        }
    }
}

#[cfg(test)]
mod scan_tests {
    use super::*;

    fn keys_of(scan: &CitationScan) -> Vec<&str> {
        scan.groups.iter().flat_map(|g| g.keys.iter().map(|(k, _)| k.as_str())).collect()
    }

    #[test]
    fn a_key_list_longer_than_a_group_is_read_to_its_close() {
        // 2,000 keys, about 14 KB: past a group's budget of 4 KiB, where it was dropped silently.
        let list: Vec<String> = (0..2000).map(|i| format!("k{i}")).collect();
        let text = format!("Many at once \\nocite{{{}}} and \\cite{{x}}.\n", list.join(", "));
        let scan = scan_citations(&text, &CiteGrammar::of(CiteSyntax::Latex), usize::MAX);
        assert_eq!(scan.groups.len(), 2);
        assert_eq!(scan.groups[0].keys.len(), 2000);
        assert!(scan.groups[0].keys.iter().all(|(k, r)| text[r.clone()] == *k));
        assert_eq!(keys_of(&scan).last(), Some(&"x"));
        assert!(scan.unread.is_empty(), "{:?}", scan.unread);
        assert_eq!(citations(&text, &CiteGrammar::of(CiteSyntax::Latex)).len(), 2001, "every reader of the grammar reads it");
    }

    #[test]
    fn a_key_list_never_closed_in_its_paragraph_is_said_and_the_next_paragraph_read() {
        let keys = vec!["k"; 3000].join(",");
        let text = format!("Open \\citep{{{keys}\n\nNext paragraph \\cite{{a}}.\n");
        let scan = scan_citations(&text, &CiteGrammar::of(CiteSyntax::Latex), usize::MAX);
        assert_eq!(keys_of(&scan), ["a"]);
        assert_eq!(
            scan.unread,
            [Unread { at: 5, why: "`\\citep{…` is not closed before its paragraph ends: its keys are not read".into() }]
        );
    }

    #[test]
    fn openings_that_never_close_are_read_to_their_paragraph_end_once() {
        // One read past a group's budget for the whole paragraph, not one
        // for each opening (which would be quadratic).
        let text = "\\cite{".repeat(50_000);
        let scan = scan_citations(&text, &CiteGrammar::of(CiteSyntax::Latex), usize::MAX);
        assert!(scan.groups.is_empty());
        assert_eq!(scan.unread.len(), 1, "{:?}", scan.unread.first());
        assert_eq!(scan.unread_over, 0);
        // One for each paragraph: the first listed, the rest counted.
        let text = "\\cite{a,b\n\n".repeat(2000);
        let scan = scan_citations(&text, &CiteGrammar::of(CiteSyntax::Latex), usize::MAX);
        assert_eq!(scan.unread.len(), UNREAD_LISTED);
        assert!(scan.unread_over > 1000, "{}", scan.unread_over);
    }

    #[test]
    fn a_key_with_a_nul_is_read_as_written() {
        let text = "As shown \\cite{a\0b, c} and [@d\0e].";
        let keys: Vec<String> = citations(text, &CiteGrammar::of(CiteSyntax::Latex)).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a\0b", "c"]);
    }

    #[test]
    fn a_key_over_the_limit_is_said_not_read() {
        let long = "x".repeat(MAX_KEY + 1);
        let text = format!("\\cite{{a, {long}}} and @{long} too");
        let scan = scan_citations(&text, &CiteGrammar::of(CiteSyntax::Latex), usize::MAX);
        assert_eq!(keys_of(&scan), ["a"]);
        let why = "a citation key of 257 bytes, over the limit of 256 bytes for a key: not read";
        assert_eq!(scan.unread, [Unread { at: 9, why: why.into() }]);
        let md = scan_citations(&text, &CiteGrammar::of(CiteSyntax::Markdown), usize::MAX);
        assert!(md.groups.is_empty(), "{:?}", md.groups);
        assert_eq!(md.unread.len(), 1);
    }

    #[test]
    fn a_budget_of_keys_is_kept_and_the_rest_counted() {
        let latex = r"\cite{a,b,c} \cite{d} \cite{e,f}";
        let scan = scan_citations(latex, &CiteGrammar::of(CiteSyntax::Latex), 4);
        assert_eq!((keys_of(&scan), scan.keys_over), (vec!["a", "b", "c", "d"], 2));
        let scan = scan_citations(latex, &CiteGrammar::of(CiteSyntax::Latex), 2);
        assert_eq!((keys_of(&scan), scan.groups.len(), scan.keys_over), (vec!["a", "b"], 1, 4));
        let scan = scan_citations("[@a; @b] and @c, [@d]", &CiteGrammar::of(CiteSyntax::Markdown), 3);
        assert_eq!((keys_of(&scan), scan.keys_over), (vec!["a", "b", "c"], 1));
        let scan = scan_citations("#cite(<a>) @b #cite(<c>) @d", &CiteGrammar::of(CiteSyntax::Typst), 3);
        assert_eq!((keys_of(&scan), scan.keys_over), (vec!["a", "b", "c"], 1));
        assert_eq!(scan_citations(latex, &CiteGrammar::of(CiteSyntax::Latex), 0).keys_over, 6);
    }
}

#[cfg(test)]
mod citation_key_tests {
    use super::*;

    #[test]
    fn keys_tools_make_are_keys() {
        for key in ["smith2020deep", "Smith_2020", "DBLP:conf/sigir/Smith20", "10.1145/3077136.3080758", "doe+2019", "müller2020", "a"] {
            assert_eq!(citation_key(key, CiteSyntax::Latex), Ok(()), "{key}");
        }
        for key in ["smith2020deep", "Smith_2020", "10.1145/3077136.3080758", "doe+2019", "a:b.c"] {
            assert!(is_citation_key(key, CiteSyntax::Markdown), "{key}");
        }
        for key in ["smith2020deep", "Smith_2020", "a:b.c", "x-y"] {
            assert!(is_citation_key(key, CiteSyntax::Typst), "{key}");
        }
    }

    #[test]
    fn what_would_write_markup_is_no_key() {
        let e = citation_key(r"new}\input{/etc/passwd}\cite{x", CiteSyntax::Latex).unwrap_err();
        assert_eq!(e.to_string(), r"`new}\input{/etc/passwd}\cite{x` is not a citation key: `}` cannot be part of a key");
        for key in ["a b", "a,b", "a{b", r"a\b", "a%b", "a#b", "a~b", "a^^5cb", "a$b", "a&b", "a\"b", "*", "a\u{202e}b", "a\nb", ""] {
            for syntax in [CiteSyntax::Latex, CiteSyntax::Markdown, CiteSyntax::Typst] {
                assert!(!is_citation_key(key, syntax), "{key:?} {syntax:?}");
            }
        }
        assert_eq!(citation_key("a b", CiteSyntax::Latex).unwrap_err().why, "a space cannot be part of a key");
        assert_eq!(citation_key("a\u{202e}b", CiteSyntax::Latex).unwrap_err().why, "the character U+202E cannot be part of a key");
        assert_eq!(citation_key("", CiteSyntax::Latex).unwrap_err().why, "it is empty");
        assert!(citation_key(&"k".repeat(257), CiteSyntax::Latex).unwrap_err().shown.ends_with("k…"));
    }

    #[test]
    fn a_key_is_read_back_whole_where_it_is_written() {
        assert!(is_citation_key("smith.", CiteSyntax::Latex));
        let e = citation_key("smith.", CiteSyntax::Markdown).unwrap_err();
        assert_eq!(e.why, "Pandoc Markdown reads `[@smith.]` as a citation of `smith`");
        let e = citation_key("10.1145/3077136", CiteSyntax::Typst).unwrap_err();
        assert_eq!(e.why, "Typst reads `@10.1145/3077136` as a citation of `10.1145`");
        assert_eq!(citation_key("-", CiteSyntax::Markdown).unwrap_err().why, "Pandoc Markdown reads no citation in `[@-]`");
    }
}

//! PDFs as citing documents: the text layer read with `pdf-extract`
//! (positioned characters, grouped into words here), laid out in reading order (`layout`), the reference
//! list split into entries (`references`), and in-text citations resolved
//! to them (`citations`).

pub mod budget;
pub mod citations;
pub mod layout;
pub mod references;

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::document::{DocKind, Document, Paragraph};
use layout::{Line, Page, Word};

static DOI: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(10\.\d{4,9}/[^\s\]\[,;]+[^\s\]\[,;.)])").expect("a valid pattern"));

/// Why a PDF gave no document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// The file is not a PDF or is damaged.
    Broken(String),
    /// Encrypted with a password.
    Encrypted,
    /// No text layer (a scan without OCR).
    NoText,
    /// Its streams decode past a budget ([`crate::limits`]).
    TooLarge(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Broken(why) => write!(f, "not a readable PDF ({why})"),
            Unreadable::Encrypted => write!(f, "encrypted PDF (needs a password)"),
            Unreadable::NoText => write!(f, "no text layer (a scanned PDF without OCR?)"),
            Unreadable::TooLarge(why) => write!(f, "{why}"),
        }
    }
}

/// Positioned words of every page.
pub fn pages(bytes: Vec<u8>) -> Result<Vec<Page>, Unreadable> {
    if !bytes.starts_with(b"%PDF") && !bytes[..bytes.len().min(1024)].windows(4).any(|w| w == b"%PDF") {
        return Err(Unreadable::Broken("no %PDF header".into()));
    }
    // The parser must never take the import down with it (nor print its
    // panic over the progress bar).
    quiet_panics();
    QUIET.with(|q| q.set(true));
    let out = std::panic::catch_unwind(move || read_pages(bytes))
        .unwrap_or_else(|_| Err(Unreadable::Broken("the PDF parser failed on it".into())));
    QUIET.with(|q| q.set(false));
    out
}

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs (once) a panic hook that stays silent for panics caught
/// while reading a PDF and reports every other one as before.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                previous(info);
            }
        }));
    });
}

fn read_pages(bytes: Vec<u8>) -> Result<Vec<Page>, Unreadable> {
    let mut doc = budget::load(&bytes).map_err(|e| match e {
        budget::LoadError::OverBudget(over) => Unreadable::TooLarge(over.0),
        budget::LoadError::Parser(why) => classify(&why),
    })?;
    if doc.is_encrypted() {
        // Many PDFs are encrypted only to set permissions, with an empty
        // user password; those read as any other.
        doc.decrypt("").map_err(|_| Unreadable::Encrypted)?;
    }
    let mut collect = Collect::default();
    // A page the library cannot draw leaves what it drew so far.
    let drawn = pdf_extract::output_doc(&doc, &mut collect);
    collect.close_word();
    if collect.pages.iter().all(|p| p.words.is_empty()) {
        return Err(match drawn {
            Err(e) => classify(&format!("{e:?}")),
            // Nothing drawn from a sound structure is a scan; from a broken
            // one, the damage.
            Ok(()) => structure_damage(&doc).map_or(Unreadable::NoText, Unreadable::Broken),
        });
    }
    Ok(collect.pages)
}

/// What is wrong with a document's structure, when something is: no page
/// tree, a page tree that loops, a page whose content stream is not there
/// (its object did not parse: a `/Length` that refers to itself, arrays
/// nested past the parser's limit).
fn structure_damage(doc: &pdf_extract::Document) -> Option<String> {
    use pdf_extract::Object;
    let root = doc.trailer.get(b"Root").and_then(Object::as_reference).ok()?;
    let Ok(pages) = doc.get_dictionary(root).and_then(|c| c.get(b"Pages")).and_then(Object::as_reference) else {
        return Some("it has no page tree".into());
    };
    // Walk the tree, each node once.
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![pages];
    let mut leaves = 0usize;
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            return Some("its page tree loops".into());
        }
        let Ok(node) = doc.get_dictionary(id) else { return Some(format!("page tree node {} {} is missing", id.0, id.1)) };
        match node.get(b"Kids").and_then(Object::as_array) {
            Ok(kids) => stack.extend(kids.iter().filter_map(|k| k.as_reference().ok())),
            Err(_) => {
                leaves += 1;
                for c in doc.get_page_contents(id) {
                    let Ok(stream) = doc.get_object(c).and_then(Object::as_stream) else {
                        return Some(format!("the content of page {leaves} (object {} {}) does not read", c.0, c.1));
                    };
                    let length = match stream.dict.get(b"Length") {
                        Ok(Object::Reference(r)) => doc.get_object(*r).ok(),
                        other => other.ok(),
                    };
                    if stream.content.is_empty() && !matches!(length, Some(Object::Integer(n)) if *n >= 0) {
                        return Some(format!("the content of page {leaves} (object {} {}) has no usable /Length", c.0, c.1));
                    }
                }
            }
        }
        if seen.len() > 1_000_000 {
            return Some("its page tree is too large".into());
        }
    }
    (leaves == 0).then(|| "its page tree holds no page".into())
}

/// Collects positioned characters into words, page by page.
#[derive(Default)]
struct Collect {
    pages: Vec<Page>,
    height: f64,
    word: Option<Word>,
    last_end: f64,
    last_y: f64,
}

impl Collect {
    fn close_word(&mut self) {
        if let (Some(w), Some(p)) = (self.word.take(), self.pages.last_mut()) {
            p.words.push(w);
        }
    }
}

impl pdf_extract::OutputDev for Collect {
    fn begin_page(&mut self, _: u32, mb: &pdf_extract::MediaBox, _: Option<(f64, f64, f64, f64)>) -> Result<(), pdf_extract::OutputError> {
        self.close_word();
        self.height = mb.ury - mb.lly;
        self.pages.push(Page { width: (mb.urx - mb.llx).abs() as f32, height: self.height.abs() as f32, words: Vec::new() });
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), pdf_extract::OutputError> {
        self.close_word();
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &pdf_extract::Transform,
        width: f64,
        _: f64,
        font_size: f64,
        ch: &str,
    ) -> Result<(), pdf_extract::OutputError> {
        // The font size as drawn: the side of the square with the area of
        // the transformed (size, size) vector.
        let (vx, vy) = (font_size * (trm.m11 + trm.m21), font_size * (trm.m12 + trm.m22));
        let size = (vx * vy).abs().sqrt();
        if !size.is_finite() || !trm.m31.is_finite() || !trm.m32.is_finite() {
            return Ok(());
        }
        let (x, y) = (trm.m31, self.height - trm.m32);
        let end = x + width * size;
        let gap = x - self.last_end;
        if ch.trim().is_empty() || (y - self.last_y).abs() > size * 0.5 || gap > size * 0.1 || gap < -size {
            self.close_word();
        }
        self.last_end = end;
        self.last_y = y;
        if ch.trim().is_empty() {
            return Ok(());
        }
        let w = self.word.get_or_insert(Word {
            text: String::new(),
            x0: x as f32,
            x1: end as f32,
            top: (y - size * 0.75) as f32,
            bottom: (y + size * 0.2) as f32,
            size: size as f32,
            bold: false,
        });
        w.text.push_str(ch);
        w.x1 = w.x1.max(end as f32);
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), pdf_extract::OutputError> {
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), pdf_extract::OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), pdf_extract::OutputError> {
        Ok(())
    }
}

fn classify(msg: &str) -> Unreadable {
    let m = msg.to_lowercase();
    if m.contains("encrypt") || m.contains("password") || m.contains("decrypt") {
        Unreadable::Encrypted
    } else {
        Unreadable::Broken(msg.lines().next().unwrap_or(msg).chars().take(120).collect())
    }
}

/// Reads a PDF into a document: paragraphs with resolved citations, the
/// reference list, and the first page's title and DOI.
pub fn read_pdf(path: &Path, bytes: Vec<u8>) -> Result<Document, Unreadable> {
    let pages = pages(bytes)?;
    Ok(document_of(path, &pages))
}

/// The document of laid-out pages.
pub fn document_of(path: &Path, pages: &[Page]) -> Document {
    let lines = layout::lines(pages);
    let mut doc = Document::new(DocKind::Pdf, path.to_path_buf());
    let (front, title) = front_matter(&lines);
    doc.front = front;
    doc.title = title;
    doc.doi = lines.iter().take_while(|l| l.page <= 1).find_map(|l| DOI.captures(&l.text).map(|c| c[1].to_string())).unwrap_or_default();
    let (body, style, refs) = match references::section(&lines) {
        Some((start, end)) => {
            let (style, refs) = references::split_entries(&lines[start..end]);
            let mut body: Vec<Line> = lines[..start.saturating_sub(1)].to_vec();
            body.extend_from_slice(&lines[end..]);
            (body, style, refs)
        }
        None => (lines, references::ListStyle::AuthorYear, Vec::new()),
    };
    let index = citations::RefIndex::new(&refs, style);
    doc.paragraphs = layout::paragraphs(&body)
        .into_iter()
        .map(|b| {
            let citations = index.find(&b.text);
            Paragraph { text: b.text, page: Some(b.page), citations }
        })
        .collect();
    doc.references = refs;
    doc
}

/// The first page's text before the abstract (or a reference list), and
/// its title: the lines in the largest type in the page's upper half, when
/// that type is larger than the page's text (a page without a title line
/// has no title: a reference entry is not one).
fn front_matter(lines: &[Line]) -> (String, String) {
    let first: Vec<&Line> = lines.iter().take_while(|l| l.page <= 1).take_while(|l| !references::is_heading(&l.text)).collect();
    let mut front = String::new();
    for l in &first {
        let t = l.text.trim();
        if t.eq_ignore_ascii_case("abstract") || t.starts_with("Abstract") || t.starts_with("ABSTRACT") || front.len() > 1500 {
            break;
        }
        front.push_str(t);
        front.push(' ');
    }
    let top: Vec<&&Line> = first.iter().filter(|l| l.top < 420.0 && l.text.chars().filter(|c| c.is_alphabetic()).count() >= 3).collect();
    let biggest = top.iter().map(|l| l.size).fold(0.0f32, f32::max);
    // The type most of the page's characters are set in.
    let mut by_size: Vec<(i32, usize)> = Vec::new();
    for l in &first {
        let size = (l.size * 2.0).round() as i32;
        match by_size.iter_mut().find(|(s, _)| *s == size) {
            Some((_, n)) => *n += l.text.len(),
            None => by_size.push((size, l.text.len())),
        }
    }
    let body = by_size.iter().max_by_key(|(_, n)| *n).map_or(0.0, |(s, _)| *s as f32 / 2.0);
    if first.len() > 3 && biggest < body + 1.0 {
        return (front.trim().to_string(), String::new());
    }
    let mut title = String::new();
    for l in top.iter().filter(|l| l.size >= biggest - 0.5).take(4) {
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(l.text.trim());
    }
    (front.trim().to_string(), title)
}

//! Page layout: positioned words → lines in reading order → paragraphs.
//! Columns are found from where the words leave a vertical gutter; lines
//! that cross the gutter (titles, wide figures) split the page into bands
//! read top to bottom, each band left column first. Running headers,
//! footers and page numbers are dropped, words hyphenated across lines are
//! joined (keeping the hyphen when the document writes the word with one
//! elsewhere), ligatures expanded, and superscript numbers turned into
//! bracketed markers.

use std::collections::{HashMap, HashSet};

/// A word on a page; coordinates in points, `top` < `bottom` (y down).
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    pub text: String,
    pub x0: f32,
    pub x1: f32,
    pub top: f32,
    pub bottom: f32,
    pub size: f32,
    pub bold: bool,
}

/// One page's words.
#[derive(Debug, Clone, Default)]
pub struct Page {
    pub width: f32,
    pub height: f32,
    pub words: Vec<Word>,
}

/// A line of text in reading order.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub text: String,
    pub x0: f32,
    pub x1: f32,
    pub top: f32,
    pub bottom: f32,
    pub size: f32,
    /// 1-based page.
    pub page: u32,
    /// 0 left / single, 1 right, 2 across the columns.
    pub column: u8,
    /// Bold or larger than the body text: a heading.
    pub heading: bool,
}

/// Expands ligatures and other presentation forms the text layer uses.
pub fn clean_glyphs(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\u{FB00}' => out.push_str("ff"),
            '\u{FB01}' => out.push_str("fi"),
            '\u{FB02}' => out.push_str("fl"),
            '\u{FB03}' => out.push_str("ffi"),
            '\u{FB04}' => out.push_str("ffl"),
            '\u{FB05}' | '\u{FB06}' => out.push_str("st"),
            '\u{00AD}' | '\u{200B}' | '\u{FEFF}' | '\0' => {}
            '\u{2010}' | '\u{2011}' => out.push('-'),
            '\u{00A0}' => out.push(' '),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The body text's font size: the most common one, by characters.
fn body_size(pages: &[Page]) -> f32 {
    let mut counts: HashMap<i32, usize> = HashMap::new();
    for p in pages {
        for w in &p.words {
            *counts.entry((w.size * 2.0).round() as i32).or_default() += w.text.chars().count();
        }
    }
    counts.into_iter().max_by_key(|&(s, n)| (n, -s)).map_or(10.0, |(s, _)| s as f32 / 2.0)
}

/// The x of a vertical gutter between two columns, when the page has one.
fn gutter(page: &Page, body: f32) -> Option<f32> {
    let words: Vec<&Word> = page.words.iter().filter(|w| (w.size - body).abs() <= 1.5).collect();
    if words.len() < 40 || page.width <= 0.0 {
        return None;
    }
    let (lo, hi) = ((page.width * 0.3) as i32, (page.width * 0.7) as i32);
    let mut best: Option<(usize, i32)> = None;
    for x in lo..=hi {
        let xf = x as f32;
        let crossing = words.iter().filter(|w| w.x0 < xf - 0.5 && w.x1 > xf + 0.5).count();
        if best
            .is_none_or(|(c, bx)| crossing < c || crossing == c && (x - page.width as i32 / 2).abs() < (bx - page.width as i32 / 2).abs())
        {
            best = Some((crossing, x));
        }
    }
    let (crossing, x) = best?;
    let xf = x as f32;
    let left = words.iter().filter(|w| w.x1 <= xf).count();
    let right = words.iter().filter(|w| w.x0 >= xf).count();
    // A gutter is an empty band, not just a place few words cross.
    // (A few stray words, e.g. of an equation, may sit in it.)
    let mut ends: Vec<f32> = words.iter().filter(|w| w.x1 <= xf).map(|w| w.x1).collect();
    let mut starts: Vec<f32> = words.iter().filter(|w| w.x0 >= xf).map(|w| w.x0).collect();
    ends.sort_by(f32::total_cmp);
    starts.sort_by(f32::total_cmp);
    let left_edge = ends.get(ends.len().saturating_sub(1 + ends.len() / 50)).copied().unwrap_or(xf);
    let right_edge = starts.get(starts.len() / 50).copied().unwrap_or(xf);
    let band = right_edge - left_edge;
    // Columns have edges: many left-column lines end at the band (justified
    // or nearly), many right-column lines start at it. Words with wrong
    // widths (some OCR text layers) leave a band in one column by chance,
    // without edges.
    let ending = ends.iter().filter(|&&x| x >= left_edge - 4.0).count();
    let starting = starts.iter().filter(|&&x| x <= right_edge + 4.0).count();
    let flush = starts.iter().filter(|&&x| x <= right_edge + 2.0).count();
    // (A ragged-right left column still has a flush-left right column.)
    let edged = ending * 20 >= ends.len() && starting * 20 >= starts.len() || flush * 12 >= starts.len();
    // The middle of the band: left-column lines end before it, right-column
    // lines start after it, and a centred title crosses it.
    (crossing * 25 <= words.len() && left * 5 >= words.len() && right * 5 >= words.len() && band >= (0.8 * body).max(6.0) && edged)
        .then_some((left_edge + right_edge) / 2.0)
}

/// Words of a page grouped into line segments (one row, no wide gap, not
/// across the gutter), with their column.
fn segments(page: &Page, gutter: Option<f32>, page_no: u32, body: f32) -> Vec<Line> {
    let mut words: Vec<&Word> = page.words.iter().filter(|w| !w.text.trim().is_empty()).collect();
    words.sort_by(|a, b| a.top.total_cmp(&b.top).then(a.x0.total_cmp(&b.x0)));
    // Rows: words whose vertical extents overlap most of the smaller height.
    let mut rows: Vec<Vec<&Word>> = Vec::new();
    for w in words {
        let h = (w.bottom - w.top).max(1.0);
        let found = rows.iter_mut().rev().take(6).find(|r| {
            let (t, b) = row_extent(r);
            let overlap = w.bottom.min(b) - w.top.max(t);
            overlap > 0.5 * h.min(b - t).max(1.0)
        });
        match found {
            Some(r) => r.push(w),
            None => rows.push(vec![w]),
        }
    }
    let mut out = Vec::new();
    for mut row in rows {
        row.sort_by(|a, b| a.x0.total_cmp(&b.x0));
        let mut seg: Vec<&Word> = Vec::new();
        let flush = |seg: &mut Vec<&Word>, out: &mut Vec<Line>| {
            if seg.is_empty() {
                return;
            }
            out.push(make_line(seg, gutter, page_no, body));
            seg.clear();
        };
        for w in row {
            if let Some(prev) = seg.last() {
                let gap = w.x0 - prev.x1;
                let size = prev.size.max(w.size).max(4.0);
                let across = gutter.is_some_and(|g| prev.x1 <= g && w.x0 >= g && gap > size * 0.6);
                if gap > size * 1.6 || across {
                    flush(&mut seg, &mut out);
                }
            }
            seg.push(w);
        }
        flush(&mut seg, &mut out);
    }
    out
}

fn row_extent(r: &[&Word]) -> (f32, f32) {
    r.iter().fold((f32::MAX, f32::MIN), |(t, b), w| (t.min(w.top), b.max(w.bottom)))
}

fn make_line(seg: &[&Word], gutter: Option<f32>, page: u32, body: f32) -> Line {
    let mut text = String::new();
    let x0 = seg.iter().map(|w| w.x0).fold(f32::MAX, f32::min);
    let x1 = seg.iter().map(|w| w.x1).fold(f32::MIN, f32::max);
    // The line's own size and baseline, from its largest words.
    let size = seg.iter().map(|w| w.size).fold(0.0f32, f32::max);
    let base = seg.iter().filter(|w| w.size >= size - 0.5).map(|w| w.bottom).fold(f32::MIN, f32::max);
    let mut prev: Option<&Word> = None;
    for w in seg {
        let t = clean_glyphs(w.text.trim());
        // A superscript: smaller, raised, digits (a numeric citation).
        let sup = w.size < size * 0.8
            && w.bottom < base - size * 0.2
            && !t.is_empty()
            && t.chars().all(|c| c.is_ascii_digit() || ",–-".contains(c));
        if let Some(p) = prev {
            if sup || w.x0 - p.x1 > p.size.min(w.size) * 0.12 {
                text.push(' ');
            }
        }
        if sup {
            text.push('[');
            text.push_str(&t.replace('–', "-"));
            text.push(']');
        } else {
            text.push_str(&t);
        }
        prev = Some(w);
    }
    let column = match gutter {
        Some(g) if x1 <= g => 0,
        Some(g) if x0 >= g => 1,
        Some(_) => 2,
        None => 0,
    };
    let bold = seg.iter().filter(|w| w.bold).count() * 2 > seg.len();
    Line {
        text: text.split_whitespace().collect::<Vec<_>>().join(" "),
        x0,
        x1,
        top: seg.iter().map(|w| w.top).fold(f32::MAX, f32::min),
        bottom: seg.iter().map(|w| w.bottom).fold(f32::MIN, f32::max),
        size,
        page,
        column,
        heading: size > body + 0.9 || bold,
    }
}

/// Lines of a page in reading order: bands separated by lines that cross
/// the gutter; in each band the left column, then the right.
fn reading_order(mut lines: Vec<Line>) -> Vec<Line> {
    lines.sort_by(|a, b| a.top.total_cmp(&b.top).then(a.x0.total_cmp(&b.x0)));
    let mut out = Vec::with_capacity(lines.len());
    let mut band: Vec<Line> = Vec::new();
    let flush = |band: &mut Vec<Line>, out: &mut Vec<Line>| {
        let (mut left, mut right): (Vec<Line>, Vec<Line>) = band.drain(..).partition(|l| l.column == 0);
        left.sort_by(|a, b| a.top.total_cmp(&b.top).then(a.x0.total_cmp(&b.x0)));
        right.sort_by(|a, b| a.top.total_cmp(&b.top).then(a.x0.total_cmp(&b.x0)));
        out.extend(left);
        out.extend(right);
    };
    for l in lines {
        if l.column == 2 {
            flush(&mut band, &mut out);
            out.push(l);
        } else {
            band.push(l);
        }
    }
    flush(&mut band, &mut out);
    out
}

/// Running headers and footers: lines in the top or bottom 8 % of a page
/// that are page numbers or repeat (digits aside) on several pages.
fn furniture(pages: &[Vec<Line>], heights: &[f32]) -> HashSet<(u32, usize)> {
    let key = |t: &str| t.chars().filter(|c| c.is_alphabetic()).flat_map(char::to_lowercase).collect::<String>();
    let mut seen: HashMap<String, HashSet<u32>> = HashMap::new();
    let margin = |l: &Line, h: f32| h > 0.0 && (l.bottom < h * 0.085 || l.top > h * 0.915);
    for (p, lines) in pages.iter().enumerate() {
        for l in lines.iter().filter(|l| margin(l, heights[p])) {
            let k = key(&l.text);
            if k.len() >= 4 {
                seen.entry(k).or_default().insert(p as u32);
            }
        }
    }
    let mut out = HashSet::new();
    for (p, lines) in pages.iter().enumerate() {
        for (i, l) in lines.iter().enumerate() {
            if !margin(l, heights[p]) {
                continue;
            }
            let k = key(&l.text);
            let page_number = l.text.chars().all(|c| c.is_ascii_digit() || c.is_whitespace() || "-–—.".contains(c))
                || l.text.split_whitespace().count() <= 3 && l.text.chars().any(|c| c.is_ascii_digit()) && k.len() <= 6;
            let repeated = seen.get(&k).is_some_and(|s| s.len() >= 3 || (s.len() >= 2 && pages.len() <= 4));
            if page_number || repeated {
                out.insert((p as u32, i));
            }
        }
    }
    out
}

/// Lines in the order the page's content stream draws them (the order
/// its author's tool wrote, which for papers is the reading order): a new
/// line where the baseline moves or the text jumps back to the left.
fn stream_lines(page: &Page, gutter: Option<f32>, page_no: u32, body: f32) -> Vec<Line> {
    let mut out = Vec::new();
    let mut seg: Vec<&Word> = Vec::new();
    for w in page.words.iter().filter(|w| !w.text.trim().is_empty()) {
        if let Some(prev) = seg.last() {
            let size = prev.size.max(w.size).max(4.0);
            let base_moved = (w.bottom - prev.bottom).abs() > size * 0.5 && !is_script(prev, w);
            // Widths are not trusted here (text layers of scans get them
            // wrong): a line ends where the text moves back left.
            let back = w.x0 < prev.x0 - size * 0.5;
            let across = gutter.is_some_and(|g| prev.x1 <= g && w.x0 >= g && w.x0 - prev.x1 > size * 0.6);
            if base_moved || back || across {
                out.push(make_line(&seg, gutter, page_no, body));
                seg.clear();
            }
        }
        seg.push(w);
    }
    if !seg.is_empty() {
        out.push(make_line(&seg, gutter, page_no, body));
    }
    out
}

/// A raised or lowered smaller word next to another (a superscript).
fn is_script(a: &Word, b: &Word) -> bool {
    let (small, big) = if a.size < b.size { (a, b) } else { (b, a) };
    small.size < big.size * 0.85
        && small.bottom < big.bottom + 1.0
        && small.top > big.top - big.size * 0.6
        && (small.bottom - big.bottom).abs() < big.size
}

/// Whether the content stream draws the page in reading order: lines
/// mostly go down the page within a column, and the columns left to right.
fn stream_is_reading_order(lines: &[Line]) -> bool {
    let mut backwards = 0usize;
    for w in lines.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let same_column = a.column == b.column;
        let up = b.top < a.top - a.size * 1.5;
        let column_back = a.column == 1 && b.column == 0 && b.top > a.top - a.size;
        // Two pieces of one row in one column: the words of a line are not
        // drawn left to right (as in some OCR text layers).
        let same_row = same_column && (a.bottom - b.bottom).abs() < a.size * 0.3;
        if same_column && up || column_back || same_row {
            backwards += 1;
        }
    }
    // Column and page starts move up once per column; more is disorder.
    backwards * 12 <= lines.len().max(12)
}

/// Every page's lines in reading order, without headers and footers: the
/// content stream's order where it reads down each column, the geometric
/// order (bands, columns, top to bottom) where it does not.
pub fn lines(pages: &[Page]) -> Vec<Line> {
    let body = body_size(pages);
    let per_page: Vec<Vec<Line>> = pages
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let g = gutter(p, body);
            let stream = stream_lines(p, g, i as u32 + 1, body);
            if stream_is_reading_order(&stream) {
                stream
            } else {
                reading_order(segments(p, g, i as u32 + 1, body))
            }
        })
        .collect();
    let heights: Vec<f32> = pages.iter().map(|p| p.height).collect();
    let drop = furniture(&per_page, &heights);
    let mut out = Vec::new();
    for (p, lines) in per_page.into_iter().enumerate() {
        for (i, l) in lines.into_iter().enumerate() {
            if !drop.contains(&(p as u32, i)) {
                out.push(l);
            }
        }
    }
    out
}

/// A paragraph of running text and the page it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct TextBlock {
    pub text: String,
    pub page: u32,
}

/// Joins lines into paragraphs: a new one after a heading, at a visibly
/// larger gap, at an indented first line after a finished sentence, or
/// where the font size changes (footnotes, captions); a paragraph goes on
/// across a column or page break when its last line did not end a sentence.
pub fn paragraphs(lines: &[Line]) -> Vec<TextBlock> {
    let body = {
        let mut sizes: HashMap<i32, usize> = HashMap::new();
        for l in lines {
            *sizes.entry((l.size * 2.0).round() as i32).or_default() += l.text.len();
        }
        sizes.into_iter().max_by_key(|&(s, n)| (n, -s)).map_or(10.0, |(s, _)| s as f32 / 2.0)
    };
    let vocabulary = words_of(lines);
    let mut out: Vec<TextBlock> = Vec::new();
    let mut cur: Option<(TextBlock, &Line)> = None;
    // Left edge per (page, column), for first-line indents.
    let mut left: HashMap<(u32, u8), f32> = HashMap::new();
    for l in lines.iter().filter(|l| (l.size - body).abs() <= 1.0) {
        let e = left.entry((l.page, l.column)).or_insert(f32::MAX);
        *e = e.min(l.x0);
    }
    for l in lines {
        let is_body = (l.size - body).abs() <= 1.0;
        let new_para = match &cur {
            None => true,
            Some((_, prev)) => {
                let gap = l.top - prev.bottom;
                // A jump back up the page is a new column even where the
                // layout found no gutter.
                let same_column = prev.page == l.page && prev.column == l.column && gap >= -body * 2.0;
                let ended = prev.text.trim_end().ends_with(['.', '!', '?', ':']);
                let indent = left.get(&(l.page, l.column)).is_some_and(|&x| l.x0 - x > 6.0 && l.x0 - x < 40.0);
                let size_changed = (l.size - prev.size).abs() > 1.0;
                l.heading && !prev.heading
                    || prev.heading && !l.heading
                    || size_changed
                    || (same_column && gap > body * 0.9)
                    || (ended && indent)
                    || (!same_column && ended && !l.text.starts_with(|c: char| c.is_lowercase()))
                    || !is_body && !same_column
            }
        };
        if new_para {
            if let Some((p, _)) = cur.take() {
                out.push(p);
            }
            cur = Some((TextBlock { text: l.text.clone(), page: l.page }, l));
        } else if let Some((p, prev)) = cur.as_mut() {
            join_words(&mut p.text, &l.text, &vocabulary);
            *prev = l;
        }
    }
    if let Some((p, _)) = cur {
        out.push(p);
    }
    out
}

/// Lower-case words of the document, for deciding hyphenation.
fn words_of(lines: &[Line]) -> HashSet<String> {
    let mut v = HashSet::new();
    for l in lines {
        for w in l.text.split(|c: char| !c.is_alphanumeric() && c != '-') {
            if w.len() > 2 {
                v.insert(w.to_lowercase());
            }
        }
    }
    v
}

/// Appends a line to a paragraph. A word broken by a hyphen at the line's
/// end is joined: without the hyphen unless the document writes it with
/// one ("named-entity") and never without ("namedentity").
pub fn join_words(text: &mut String, next: &str, vocabulary: &HashSet<String>) {
    let next = next.trim();
    if next.is_empty() {
        return;
    }
    if text.ends_with('-') && !text.ends_with("--") {
        let head: String =
            text[..text.len() - 1].chars().rev().take_while(|c| c.is_alphanumeric()).collect::<Vec<_>>().into_iter().rev().collect();
        let tail: String = next.chars().take_while(|c| c.is_alphanumeric()).collect();
        if !head.is_empty() && tail.starts_with(|c: char| c.is_lowercase()) {
            let joined = format!("{head}{tail}").to_lowercase();
            let hyphened = format!("{head}-{tail}").to_lowercase();
            if vocabulary.contains(&hyphened) && !vocabulary.contains(&joined) {
                text.push_str(next);
            } else {
                text.pop();
                text.push_str(next);
            }
            return;
        }
    }
    if !text.is_empty() {
        text.push(' ');
    }
    text.push_str(next);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str, x0: f32, top: f32) -> Word {
        Word { text: text.into(), x0, x1: x0 + 6.0 * text.len() as f32, top, bottom: top + 10.0, size: 10.0, bold: false }
    }

    /// Words set one after another from `x0`, as a justified line is.
    fn line_of(text: &str, x0: f32, top: f32) -> Vec<Word> {
        let mut x = x0;
        text.split(' ')
            .map(|t| {
                let word = w(t, x, top);
                x = word.x1 + 4.0;
                word
            })
            .collect()
    }

    /// A two-column A4 page: the left column's lines start with L0..L29, the
    /// right's with R0..R29; the title (in larger type) spans both.
    fn two_columns(title: bool) -> Page {
        let big = |t: &str, x: f32| Word { size: 16.0, ..w(t, x, 40.0) };
        let mut words = if title { vec![big("A", 250.0), big("Title", 262.0), big("Spanning", 300.0)] } else { vec![] };
        for i in 0..30 {
            let top = 100.0 + i as f32 * 12.0;
            words.extend(line_of(&format!("L{i} left words of this column"), 60.0, top));
            words.extend(line_of(&format!("R{i} and the right column"), 320.0, top));
        }
        words.push(w("7", 295.0, 800.0));
        Page { width: 595.0, height: 842.0, words }
    }

    #[test]
    fn two_columns_are_read_left_then_right() {
        let lines = lines(&[two_columns(true), two_columns(false), two_columns(false)]);
        let texts: Vec<&str> = lines.iter().filter(|l| l.page == 1).map(|l| l.text.as_str()).collect();
        assert_eq!(texts[0], "A Title Spanning");
        assert_eq!(texts[1], "L0 left words of this column");
        assert_eq!(texts[31], "R0 and the right column");
        assert_eq!(texts.len(), 61, "the page number is dropped");
    }

    #[test]
    fn hyphenation_and_ligatures() {
        let vocab: HashSet<String> = ["named-entity".to_string()].into_iter().collect();
        let mut t = "a statis-".to_string();
        join_words(&mut t, "tical model", &vocab);
        assert_eq!(t, "a statistical model");
        let mut t = "the named-".to_string();
        join_words(&mut t, "entity tagger", &vocab);
        assert_eq!(t, "the named-entity tagger");
        assert_eq!(clean_glyphs("e\u{FB03}cient \u{FB01}eld"), "efficient field");
    }

    #[test]
    fn superscript_numbers_become_markers() {
        let mut sup = w("12", 100.0, 96.0);
        sup.size = 6.0;
        sup.bottom = 103.0;
        let line = make_line(&[&w("tagging", 50.0, 100.0), &sup], None, 1, 10.0);
        assert_eq!(line.text, "tagging [12]");
    }

    #[test]
    fn paragraphs_break_at_gaps_and_continue_across_columns() {
        let line = |t: &str, top: f32, column: u8| Line {
            text: t.into(),
            x0: if column == 0 { 60.0 } else { 320.0 },
            x1: 280.0,
            top,
            bottom: top + 10.0,
            size: 10.0,
            page: 1,
            column,
            heading: false,
        };
        let ls = [
            line("First paragraph goes", 100.0, 0),
            line("on here.", 112.0, 0),
            line("Second one starts and", 140.0, 0),
            line("continues in the next column.", 100.0, 1),
        ];
        let ps = paragraphs(&ls);
        assert_eq!(
            ps.iter().map(|p| p.text.as_str()).collect::<Vec<_>>(),
            ["First paragraph goes on here.", "Second one starts and continues in the next column."]
        );
    }
}

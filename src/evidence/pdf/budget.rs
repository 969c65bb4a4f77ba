//! A PDF's streams decoded under a budget. A few megabytes of Flate can
//! inflate to gigabytes (a "Flate bomb"); the PDF parser would hold all of
//! it. So every stream is decoded here first, while the document loads
//! (before object streams are unpacked), with at most
//! [`limits::PDF_STREAM`] per stream and [`limits::PDF_DOCUMENT`] kept per
//! document; a stream over budget makes the document unreadable with one
//! line that says which limit. Streams whose decoding needs parameters
//! (predictors: images, cross-reference streams) are only measured and left
//! for the parser, which then decodes at most what was measured.

use std::cell::RefCell;
use std::io::Write;

use pdf_extract::{Dictionary, Object, Stream};

use crate::limits;

/// Why a document went over its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverBudget(pub String);

/// The running count of one document's load (the parser's filter is a
/// plain function, called on the loading thread: the state is the thread's).
#[derive(Default)]
struct Count {
    kept: u64,
    over: Option<OverBudget>,
    /// Objects the filter saw (none: the parser loaded without it, as it
    /// does for an encrypted document).
    seen: usize,
}

thread_local! {
    static COUNT: RefCell<Option<Count>> = const { RefCell::new(None) };
}

/// Loads a document with every stream decoded under budget.
pub fn load(bytes: &[u8]) -> Result<pdf_extract::Document, LoadError> {
    check_xref_streams(bytes).map_err(LoadError::OverBudget)?;
    COUNT.with(|c| *c.borrow_mut() = Some(Count::default()));
    let options = pdf_extract::LoadOptions { filter: Some(decode_in_budget), ..Default::default() };
    let loaded = pdf_extract::Document::load_mem_with_options(bytes, options);
    let count = COUNT.with(|c| c.borrow_mut().take()).unwrap_or_default();
    if let Some(over) = count.over {
        return Err(LoadError::OverBudget(over));
    }
    let mut doc = loaded.map_err(|e| LoadError::Parser(e.to_string()))?;
    if count.seen == 0 {
        // Loaded without the filter: every stream is decoded here instead,
        // before the text is drawn.
        let mut kept = 0u64;
        for object in doc.objects.values_mut() {
            if let Object::Stream(stream) = object {
                kept += decode_stream(stream, limits::PDF_DOCUMENT.saturating_sub(kept)).map_err(LoadError::OverBudget)?;
            }
        }
    }
    Ok(doc)
}

/// Why [`load`] gave no document.
#[derive(Debug)]
pub enum LoadError {
    OverBudget(OverBudget),
    /// The parser's own message.
    Parser(String),
}

/// The loader's filter: decodes a stream's content in place (or measures
/// it), counting against the thread's budget; once over budget every
/// further object is dropped, so the load ends quickly.
///
/// The parser keeps the object it passed in (decoded in place) and drops it
/// when this returns none; only for the objects of an object stream does it
/// take the returned one (those are never streams).
fn decode_in_budget(id: (u32, u16), object: &mut Object) -> Option<((u32, u16), Object)> {
    let over = COUNT.with(|c| {
        let mut c = c.borrow_mut();
        let c = c.as_mut()?;
        c.seen += 1;
        Some(c.over.is_some())
    });
    if over.unwrap_or(false) {
        return None;
    }
    if let Object::Stream(stream) = object {
        let kept_before = COUNT.with(|c| c.borrow().as_ref().map_or(0, |c| c.kept));
        match decode_stream(stream, limits::PDF_DOCUMENT.saturating_sub(kept_before)) {
            Ok(kept) => COUNT.with(|c| {
                if let Some(c) = c.borrow_mut().as_mut() {
                    c.kept += kept;
                }
            }),
            Err(over) => {
                COUNT.with(|c| {
                    if let Some(c) = c.borrow_mut().as_mut() {
                        c.over = Some(over);
                    }
                });
                return None;
            }
        }
    }
    match object {
        // Kept where it is, decoded; a stream is never an object stream's member.
        Object::Stream(_) => Some((id, Object::Null)),
        other => Some((id, other.clone())),
    }
}

/// Decodes `stream` in place when it can be (returns the bytes now kept
/// decoded), or measures it; over either limit is an error.
fn decode_stream(stream: &mut Stream, room: u64) -> Result<u64, OverBudget> {
    let Ok(filters) = stream.filters() else { return Ok(0) };
    if filters.is_empty() {
        return Ok(0);
    }
    let filters: Vec<Vec<u8>> = filters.iter().map(|f| f.to_vec()).collect();
    // Images are never drawn for text: counted, not kept.
    let params = has_params(&stream.dict) || stream.dict.get(b"Subtype").and_then(Object::as_name).is_ok_and(|n| n == b"Image");
    let cap = limits::PDF_STREAM.min(room.max(1));
    let mut data: Option<Vec<u8>> = None;
    for (i, filter) in filters.iter().enumerate() {
        let last = i + 1 == filters.len();
        let input: &[u8] = data.as_deref().unwrap_or(&stream.content);
        // The last stage of a stream the parser decodes itself is only
        // counted; every other stage is decoded (the next reads it).
        let keep = !(last && params);
        let out = match decode_stage(filter, input, cap, keep) {
            Stage::Done(out) => out,
            // A filter the parser does not know either: left as it is.
            Stage::Unknown => return Ok(0),
            Stage::Over(n) => return Err(over_budget(n, cap, room)),
        };
        data = Some(out);
    }
    match data {
        Some(out) if !params => {
            let kept = out.len() as u64;
            stream.set_plain_content(out);
            Ok(kept)
        }
        // Measured only: the parser decodes it to at most the cap.
        _ => Ok(0),
    }
}

fn over_budget(n: u64, cap: u64, room: u64) -> OverBudget {
    if cap < limits::PDF_STREAM && n >= room {
        OverBudget(format!("its streams inflate past the {} limit for one PDF; not read", limits::human(limits::PDF_DOCUMENT)))
    } else {
        OverBudget(format!("a stream inflates past the {} limit for one PDF stream; not read", limits::human(limits::PDF_STREAM)))
    }
}

/// Decode parameters that change the output (predictors), which only the
/// parser applies: such streams are measured, not kept.
fn has_params(dict: &Dictionary) -> bool {
    dict.get(b"DecodeParms").is_ok_and(|p| !matches!(p, Object::Null))
}

enum Stage {
    Done(Vec<u8>),
    Unknown,
    /// More than the cap (at least this many bytes).
    Over(u64),
}

/// One filter over `input`, at most `cap` bytes out; `keep`: return the
/// bytes (else only count them). Decodes as the parser would, so that what
/// is counted is what the parser would have made.
fn decode_stage(filter: &[u8], input: &[u8], cap: u64, keep: bool) -> Stage {
    let outcome = match filter {
        b"FlateDecode" | b"Fl" => {
            // As the parser does: zlib, else (nothing came out) raw deflate
            // after the two header bytes; a stream that breaks off keeps
            // what came out before.
            match bounded(flate2::read::ZlibDecoder::new(input), cap, keep) {
                Read::Broken(sink) if sink.written == 0 && input.len() > 2 => {
                    bounded(flate2::read::DeflateDecoder::new(&input[2..]), cap, keep)
                }
                other => other,
            }
        }
        b"LZWDecode" | b"LZW" => {
            let mut decoder = weezl::decode::Decoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8);
            let mut sink = Bounded::new(cap, keep);
            let _ = decoder.into_stream(&mut sink).decode_all(input);
            if sink.written > cap {
                Read::Over
            } else {
                Read::Whole(sink)
            }
        }
        b"ASCII85Decode" | b"A85" => match ascii85(input, cap) {
            Some(out) => Read::Whole(Bounded::holding(out)),
            None => Read::Over,
        },
        b"ASCIIHexDecode" | b"AHx" => Read::Whole(Bounded::holding(ascii_hex(input))),
        _ => return Stage::Unknown,
    };
    match outcome {
        Read::Whole(sink) | Read::Broken(sink) => Stage::Done(sink.out),
        Read::Over => Stage::Over(cap + 1),
    }
}

/// What a bounded read gave.
enum Read {
    Whole(Bounded),
    /// The input broke off; what came out before.
    Broken(Bounded),
    Over,
}

/// Reads `reader` to its end into at most `cap` bytes.
fn bounded(reader: impl std::io::Read, cap: u64, keep: bool) -> Read {
    let mut sink = Bounded::new(cap, keep);
    let result = std::io::copy(&mut reader.take(cap + 1), &mut sink);
    match result {
        _ if sink.written > cap => Read::Over,
        Ok(_) => Read::Whole(sink),
        Err(_) => Read::Broken(sink),
    }
}

/// ASCII85 as the parser decodes it; none past `cap` bytes (`z` alone
/// makes four zero bytes, so it can grow fourfold).
fn ascii85(input: &[u8], cap: u64) -> Option<Vec<u8>> {
    let input = input.strip_suffix(b"~>").unwrap_or(input);
    let mut out = Vec::with_capacity(input.len());
    let (mut buffer, mut count) = (0u32, 0usize);
    for &ch in input {
        if out.len() as u64 > cap {
            return None;
        }
        if ch == b'z' && count == 0 {
            out.extend_from_slice(&[0; 4]);
            continue;
        }
        if ch.is_ascii_whitespace() {
            continue;
        }
        if !(b'!'..=b'u').contains(&ch) {
            break;
        }
        buffer = buffer.wrapping_mul(85).wrapping_add(u32::from(ch - b'!'));
        count += 1;
        if count == 5 {
            out.extend_from_slice(&buffer.to_be_bytes());
            (buffer, count) = (0, 0);
        }
    }
    if count > 0 {
        for _ in count..5 {
            buffer = buffer.wrapping_mul(85).wrapping_add(84);
        }
        out.extend_from_slice(&buffer.to_be_bytes()[..count - 1]);
    }
    (out.len() as u64 <= cap).then_some(out)
}

/// ASCIIHex: pairs of hex digits up to `>` (half its input).
fn ascii_hex(input: &[u8]) -> Vec<u8> {
    let digits: Vec<u8> = input.iter().take_while(|&&c| c != b'>').filter_map(|&c| (c as char).to_digit(16)).map(|d| d as u8).collect();
    digits.chunks(2).map(|p| (p[0] << 4) | p.get(1).copied().unwrap_or(0)).collect()
}

/// A writer that keeps (or only counts) what it is given, up to a cap.
struct Bounded {
    out: Vec<u8>,
    written: u64,
    cap: u64,
    keep: bool,
}

impl Bounded {
    fn new(cap: u64, keep: bool) -> Bounded {
        Bounded { out: Vec::new(), written: 0, cap, keep }
    }

    fn holding(out: Vec<u8>) -> Bounded {
        Bounded { written: out.len() as u64, cap: u64::MAX, keep: true, out }
    }
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written += buf.len() as u64;
        if self.keep && self.written <= self.cap {
            self.out.extend_from_slice(buf);
        }
        if self.written > self.cap {
            return Err(std::io::Error::other("over budget"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Cross-reference streams are decoded by the parser before any object is
/// loaded (so before the filter above sees anything): each one the file
/// holds (a stream whose dictionary says `/XRef`) is measured here first.
fn check_xref_streams(bytes: &[u8]) -> Result<(), OverBudget> {
    let mut from = 0;
    while let Some(at) = find(&bytes[from..], b"/XRef").map(|i| from + i) {
        from = at + 5;
        // The dictionary ends at its stream keyword, at most a few KiB on.
        let window = &bytes[at..bytes.len().min(at + 4096)];
        let Some(kw) = find(window, b"stream") else { continue };
        let mut start = at + kw + b"stream".len();
        if bytes.get(start) == Some(&b'\r') {
            start += 1;
        }
        if bytes.get(start) == Some(&b'\n') {
            start += 1;
        }
        let data = &bytes[start.min(bytes.len())..];
        if let Read::Over = bounded(flate2::read::ZlibDecoder::new(data), limits::PDF_STREAM, false) {
            return Err(OverBudget(format!(
                "its cross-reference stream inflates past the {} limit for one PDF stream; not read",
                limits::human(limits::PDF_STREAM)
            )));
        }
    }
    Ok(())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_filter_stops_at_its_cap() {
        let cap = 3000;
        // 1,000 `z`s are 4,000 zero bytes.
        assert!(matches!(decode_stage(b"ASCII85Decode", &[b'z'; 1000], cap, true), Stage::Over(_)));
        assert!(matches!(decode_stage(b"ASCII85Decode", &[b'z'; 700], cap, true), Stage::Done(v) if v.len() == 2800));
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&[b' '; 10_000]).unwrap();
        let flate = z.finish().unwrap();
        assert!(matches!(decode_stage(b"FlateDecode", &flate, cap, false), Stage::Over(_)));
        assert!(matches!(decode_stage(b"FlateDecode", &flate, 20_000, true), Stage::Done(v) if v.len() == 10_000));
        assert_eq!(ascii_hex(b"48 65 6c6c6f>"), b"Hello");
    }
}

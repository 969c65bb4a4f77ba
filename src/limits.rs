//! The budgets of every reader of untrusted input, in one place: what a
//! file, an archive, a PDF or an editor's message may make citewise read
//! into memory. Over budget is one clear line naming the input and the
//! limit; the run goes on with the next input. Sits below every layer.

/// Text of one file, compressed or not (BibTeX, JSON Lines, LaTeX,
/// Markdown, a `.gz` once decompressed).
pub const TEXT_FILE: u64 = 512 << 20;

/// A PDF file as stored.
pub const PDF_FILE: u64 = 512 << 20;

/// One PDF stream once decoded (a page's content, a font, an image).
pub const PDF_STREAM: u64 = 128 << 20;

/// All the streams of one PDF that are kept decoded in memory.
pub const PDF_DOCUMENT: u64 = 512 << 20;

/// A source bundle (`.tar.gz`) once decompressed, all members together;
/// also the most any one member may declare.
pub const BUNDLE: u64 = 512 << 20;

/// One message from an editor (a Language Server Protocol frame). A
/// document sent whole on every change is at most a few MiB.
pub const LSP_FRAME: u64 = 64 << 20;

/// One field of a Zotero item (a title, an abstract), in characters: a
/// longer value is cut.
pub const ZOTERO_VALUE: usize = 64 << 10;

/// All the fields of one Zotero item together, in characters: fields past
/// it are not read.
pub const ZOTERO_ITEM: usize = 256 << 10;

/// Zotero items read into memory at once (so at most 512 MiB of fields).
pub const ZOTERO_ITEMS_AT_ONCE: usize = 2048;

/// Why the file at `path` is not read, when it is larger than `limit`
/// (from its size, before a byte of it is read).
pub fn file_over(path: &std::path::Path, limit: u64) -> Option<String> {
    let size = std::fs::metadata(path).ok()?.len();
    (size > limit).then(|| format!("{}: {}, over the {} limit for one file; not read", path.display(), human(size), human(limit)))
}

/// `n` bytes as a person reads them: `512 MiB`, `2.0 GiB`, `300 bytes`.
pub fn human(n: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    if n >= GIB {
        format!("{:.1} GiB", n as f64 / GIB as f64)
    } else if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else if n >= KIB {
        format!("{:.1} KiB", n as f64 / KIB as f64)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(512 << 20), "512 MiB");
        assert_eq!(human(2 << 30), "2.0 GiB");
        assert_eq!(human(1536 << 10), "1.5 MiB");
        assert_eq!(human(300), "300 bytes");
    }
}

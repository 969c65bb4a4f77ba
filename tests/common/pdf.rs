//! Writes small PDFs for tests: pages of text placed at given positions,
//! in Helvetica (a standard font every reader knows).

/// A piece of text: x, y (from the bottom, points), font size, text.
pub type Placed<'a> = (f32, f32, f32, &'a str);

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)")
}

/// A PDF of A4 pages holding `pages`, drawn in the order given (the order
/// a tool writes a two-column page: left column, then right).
pub fn pdf(pages: &[Vec<Placed>]) -> Vec<u8> {
    let mut objects: Vec<String> = Vec::new();
    let n = pages.len();
    // 1 catalog, 2 pages, 3 font, then (page, content) pairs.
    objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")));
    objects.push("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into());
    for (i, page) in pages.iter().enumerate() {
        let mut content = String::new();
        for (x, y, size, text) in page {
            content.push_str(&format!("BT /F1 {size} Tf {x} {y} Td ({}) Tj ET\n", escape(text)));
        }
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ));
        objects.push(format!("<< /Length {} >>\nstream\n{content}endstream", content.len()));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes());
    out
}

/// Lines of a column, top down from `top`, 12 points apart.
pub fn column<'a>(x: f32, top: f32, lines: &[&'a str]) -> Vec<Placed<'a>> {
    lines.iter().enumerate().map(|(i, l)| (x, top - 12.0 * i as f32, 10.0, *l)).collect()
}

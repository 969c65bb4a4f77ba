#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! Where gold citing sentences get lost on the way from PDF to evidence:
//! for each sentence of `citances.jsonl`, whether its text is in the
//! document's paragraphs, whether the reference list has an entry linked
//! to the cited paper, and whether a citation in the sentence resolves to
//! that entry.
//!
//!     cargo run --release --example pdf_diagnose -- ../shared/data/pdf LIBRARY [CLUSTER]

use std::path::Path;

use citewise::evidence::link::Linker;
use citewise::evidence::pdf::read_pdf;
use citewise::library::Library;

fn norm(t: &str) -> String {
    let mut out = String::from(" ");
    for w in t.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        out.push_str(w);
        out.push(' ');
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (dir, lib) = (Path::new(&args[1]), Library::open(Path::new(&args[2])).unwrap());
    let only = args.get(3).cloned();
    if only.as_deref() == Some("--identify") {
        // Each PDF's own record as found, against its file name's `acl:` id.
        let linker = Linker::new(lib.papers());
        let (mut right, mut wrong, mut none) = (0, 0, 0);
        for cluster in std::fs::read_dir(dir).unwrap().flatten().filter(|e| e.path().is_dir()) {
            for f in std::fs::read_dir(cluster.path()).unwrap().flatten() {
                let path = f.path();
                let Ok(doc) = read_pdf(&path, std::fs::read(&path).unwrap()) else { continue };
                let want = format!("acl:{}", path.file_stem().unwrap().to_string_lossy());
                let got = linker.identify(&doc).map(|p| p.id);
                match &got {
                    Some(g) if *g == want => right += 1,
                    Some(_) => wrong += 1,
                    None => none += 1,
                }
                if got.as_deref() != Some(want.as_str()) {
                    let title = lib.papers().paper_by_id(&want).unwrap().map(|p| p.title).unwrap_or_default();
                    println!(
                        "{} -> {got:?}\n   found title: {:?}\n   pool title:  {title:?}\n   front: {:?}",
                        path.display(),
                        doc.title,
                        doc.front.chars().take(160).collect::<String>()
                    );
                }
            }
        }
        println!("right {right} wrong {wrong} none {none}");
        return;
    }
    if only.as_deref() == Some("--sample") {
        let linker = Linker::new(lib.papers());
        // 50 citing sentences drawn at random (seeded): what each links to,
        // beside the reference entry it was linked through, for a hand check.
        let mut all: Vec<_> = lib.citances().all().unwrap().into_iter().filter(|c| c.kind == "pdf").collect();
        all.sort_by(|a, b| a.sentence.cmp(&b.sentence));
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut picked = Vec::new();
        while picked.len() < 50 && !all.is_empty() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            picked.push(all.swap_remove((state % all.len() as u64) as usize));
        }
        for (n, c) in picked.iter().enumerate() {
            let file = c.citing.file.clone().unwrap();
            let mut doc = read_pdf(Path::new(&file), std::fs::read(&file).unwrap()).unwrap();
            for r in &mut doc.references {
                r.link = linker.link_reference(r);
            }
            println!("#{} {} p.{:?}\n  S: {}", n + 1, file.rsplit('/').next().unwrap(), c.page, c.sentence);
            for id in &c.cited {
                let p = lib.papers().paper_by_id(id).unwrap().unwrap();
                println!("  -> {id}: {} ({:?}) {}", p.title, p.year, p.authors.first().cloned().unwrap_or_default());
                for r in doc.references.iter().filter(|r| r.link.as_ref().is_some_and(|(l, _)| l == id)) {
                    println!("     ref: {}", r.raw.chars().take(200).collect::<String>());
                }
            }
        }
        return;
    }
    if let Some(pdf) = only.as_deref().filter(|o| o.ends_with(".pdf")) {
        let pdf = dir.join(pdf);
        let bytes = std::fs::read(&pdf).unwrap();
        let pages = citewise::evidence::pdf::pages(bytes.clone()).unwrap();
        let lines = citewise::evidence::pdf::layout::lines(&pages);
        let section = citewise::evidence::pdf::references::section(&lines);
        println!("section {section:?} of {} lines", lines.len());
        if let Some((s, e)) = section {
            for l in &lines[s..e] {
                println!("  p{} c{} x{:.0} top{:.0} s{:.1} h{} | {}", l.page, l.column, l.x0, l.top, l.size, l.heading as u8, l.text);
            }
            let (style, refs) = citewise::evidence::pdf::references::split_entries(&lines[s..e]);
            println!("style {style:?}");
            for r in &refs {
                println!("- [{}] {:?} {:?} | {}", r.label, r.surnames, r.year, r.raw);
            }
        }
        let doc = read_pdf(&pdf, bytes).unwrap();
        for p in &doc.paragraphs {
            if !p.citations.is_empty() {
                println!("P{:?}: {}", p.page, p.text);
                for c in &p.citations {
                    println!("    {:?} -> {:?}", &p.text[c.start..c.end], c.refs);
                }
            }
        }
        return;
    }
    let linker = Linker::new(lib.papers());
    let gold: Vec<serde_json::Value> =
        std::fs::read_to_string(dir.join("citances.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut counts = [0usize; 5];
    for g in &gold {
        let cluster = g["cluster"].as_str().unwrap();
        if only.as_deref().is_some_and(|o| o != cluster) {
            continue;
        }
        let pdf = dir.join(g["pdf"].as_str().unwrap());
        let cited = g["cited"].as_str().unwrap();
        let Ok(mut doc) = read_pdf(&pdf, std::fs::read(&pdf).unwrap()) else {
            counts[0] += 1;
            println!("UNREADABLE {}", pdf.display());
            continue;
        };
        for r in &mut doc.references {
            r.link = linker.link_reference(r);
            if let Some((id, _)) = &r.link {
                r.also = linker.same_work(id);
            }
        }
        let w: Vec<String> = norm(g["text"].as_str().unwrap()).split_whitespace().map(String::from).collect();
        let k = (w.len() / 2).saturating_sub(4);
        let probe = format!(" {} ", w[k..(k + 8).min(w.len())].join(" "));
        let para = doc.paragraphs.iter().find(|p| norm(&p.text).contains(&probe));
        let entry =
            doc.references.iter().position(|r| r.link.as_ref().is_some_and(|(id, _)| id == cited) || r.also.iter().any(|a| a == cited));
        let stage = match (para, entry) {
            (None, _) => 1,
            (Some(_), None) => 2,
            (Some(p), Some(e)) => {
                if p.citations.iter().any(|c| c.refs.contains(&e)) {
                    4
                } else {
                    3
                }
            }
        };
        counts[stage] += 1;
        let what = ["", "TEXT-MISSING", "REF-NOT-LINKED", "MARKER-UNRESOLVED", "ok"][stage];
        if stage < 4 {
            println!(
                "{what} {} marker={:?}\n   gold: {}",
                g["pdf"],
                g["marker"],
                g["text"].as_str().unwrap().chars().take(160).collect::<String>()
            );
            if stage == 2 {
                let rp = lib.papers().paper_by_id(cited).unwrap().map(|p| p.title).unwrap_or_default();
                let surname = g["marker"].as_str().unwrap().split([' ', ',']).next().unwrap_or("").to_lowercase();
                for r in doc.references.iter().filter(|r| r.raw.to_lowercase().contains(&surname)) {
                    println!("   ref: {:?} -> {:?}", r.raw.chars().take(200).collect::<String>(), r.link);
                }
                println!("   RP title: {rp} ({} refs)", doc.references.len());
            }
            if stage == 3 {
                let p = para.unwrap();
                let at = norm(&p.text).find(&probe).unwrap_or(0);
                let _ = at;
                for c in &p.citations {
                    println!("   cit: {:?} -> {:?}", &p.text[c.start..c.end], c.refs);
                }
                println!("   entry {}: {:?}", entry.unwrap(), doc.references[entry.unwrap()].raw.chars().take(120).collect::<String>());
            }
        }
    }
    println!(
        "unreadable {} text-missing {} ref-not-linked {} marker-unresolved {} ok {}",
        counts[0], counts[1], counts[2], counts[3], counts[4]
    );
}

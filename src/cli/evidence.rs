//! `citewise evidence --cites ID`: every citing sentence of the evidence
//! database that cites a paper, with the document it comes from.

use std::path::Path;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;

use crate::corpus::Paper;
use crate::evidence::citances::Citance;
use crate::library::Library;
use crate::util::printable;

#[derive(Debug, Args)]
pub struct EvidenceArgs {
    /// The library id of the cited paper (as `recommend --json` and `info` show it)
    #[arg(long, value_name = "ID")]
    pub cites: String,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Answer<'a> {
    paper: Option<&'a Paper>,
    citing_sentences: &'a [Citance],
}

pub fn run(dir: &Path, a: &EvidenceArgs) -> Result<()> {
    let lib = Library::open(dir)?;
    let paper = lib.papers().paper_by_id(&a.cites)?;
    let sentences = lib.citances().citing(&a.cites)?;
    if paper.is_none() && sentences.is_empty() {
        bail!(
            "no paper `{}` in the library at {} (ids look like `doi:10.1145/…`, `bib:key`, `acl:P02-1001`)",
            a.cites,
            lib.dir().display()
        );
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&Answer { paper: paper.as_ref(), citing_sentences: &sentences })?);
        return Ok(());
    }
    if let Some(p) = &paper {
        println!("{} ({}) — {}", printable(&p.title), p.year.map_or("n.d.".into(), |y| y.to_string()), p.id);
    }
    let documents = sentences.iter().map(|c| &c.citing.id).collect::<std::collections::HashSet<_>>().len();
    println!("cited in {} of {}", crate::util::counted(sentences.len(), "sentence"), crate::util::counted(documents, "document"));
    let mut last = None;
    for c in &sentences {
        if last != Some(&c.citing.id) {
            let year = c.citing.year.map_or("n.d.".into(), |y| y.to_string());
            println!("\n{} ({year}) — {}", printable(&c.citing.title), c.citing.id);
            if let Some(f) = &c.citing.file {
                println!("  {f}");
            }
            last = Some(&c.citing.id);
        }
        let page = c.page.map(|p| format!("p. {p}: ")).unwrap_or_default();
        println!("  • {page}{}", printable(&c.sentence));
    }
    Ok(())
}

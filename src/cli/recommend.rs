use std::sync::Arc;

use std::io::{Read, Write};

use anyhow::{Context, Result};
use clap::Args;

use crate::library::Library;
use crate::pipeline::{Models, Query, Recommender};
use crate::util::printable;

use super::style::{paint, DIM, TITLE};

#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// The text to find citations for; mark the citation position with [CIT] (optional). `-` reads it from standard input
    #[arg(value_name = "TEXT", required_unless_present = "file", conflicts_with = "file")]
    pub text: Option<String>,
    /// Read the text from this file instead (for text longer than a command line takes)
    #[arg(long, value_name = "PATH")]
    pub file: Option<std::path::PathBuf>,
    /// Title of your paper (global context)
    #[arg(long)]
    pub title: Option<String>,
    /// Abstract of your paper (global context)
    #[arg(long = "abstract", value_name = "ABSTRACT")]
    pub abstract_text: Option<String>,
    /// Number of papers to show
    #[arg(short, default_value_t = 10, value_parser = at_least_one)]
    pub k: usize,
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// The year the draft was written in, when not now: papers published
    /// after it are left out
    #[arg(long, value_name = "YEAR")]
    pub written_in: Option<i32>,
}

fn at_least_one(s: &str) -> std::result::Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(k) => Ok(k),
        Err(e) => Err(e.to_string()),
    }
}

/// The query text: the argument, standard input (`-`), or `--file`.
fn query_text(a: &RecommendArgs) -> Result<String> {
    let bytes = match (&a.text, &a.file) {
        (_, Some(path)) => crate::limits::read_regular(path, crate::limits::TEXT_FILE)
            .with_context(|| format!("{}: cannot read the query", path.display()))?,
        (Some(t), None) if t == "-" => {
            let mut b = Vec::new();
            std::io::stdin().read_to_end(&mut b).context("cannot read the query from standard input")?;
            b
        }
        (Some(t), None) => return Ok(t.clone()),
        (None, None) => anyhow::bail!("give the text to find citations for, `-` for standard input, or --file PATH"),
    };
    Ok(crate::corpus::source::decode_owned(bytes).text)
}

pub fn run(lib: &Arc<Library>, a: &RecommendArgs, models: &Models) -> Result<()> {
    let rec = Recommender::new(lib.clone(), models);
    let query = Query::new(query_text(a)?)
        .with_global(a.title.clone().unwrap_or_default(), a.abstract_text.clone().unwrap_or_default())
        .with_k(a.k)
        .written_in(a.written_in);
    let result = rec.recommend(&query)?;
    for n in &result.notices {
        eprintln!("notice: {}", printable(n));
    }
    if !a.json {
        let hint = if result.context.global() { "" } else { "; --title and --abstract add your paper's (global context)" };
        eprintln!("context: {}{hint}", result.context);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
        return Ok(());
    }
    // Styled for a terminal; `anstream` drops the styles when colour is off.
    let mut out = anstream::stdout().lock();
    if result.candidates.is_empty() {
        writeln!(out, "no matching papers in the library ({} papers)", lib.papers().num_papers())?;
    }
    for (i, c) in result.candidates.iter().enumerate() {
        let channels: Vec<String> = c.channels.iter().map(|s| format!("{}#{}", s.channel, s.rank)).collect();
        match &c.paper {
            Some(p) => {
                let scores = paint(DIM, format!("[{:.2}; {}]", c.score, channels.join(" ")));
                writeln!(out, "{:>2}. {}  {scores}", i + 1, paint(TITLE, printable(&p.title)))?;
                let year = p.year.map(|y| y.to_string()).unwrap_or_else(|| "n.d.".into());
                let id = paint(DIM, printable(&c.id));
                writeln!(out, "    {} ({year}) {}  {id}", printable(&p.short_authors()), printable(&p.venue))?;
            }
            None => writeln!(out, "{:>2}. {}  {}", i + 1, printable(&c.id), paint(DIM, format!("[{:.2}]", c.score)))?,
        }
    }
    out.flush()?;
    Ok(())
}

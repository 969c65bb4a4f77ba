use std::sync::Arc;

use anyhow::Result;
use clap::Args;

use crate::library::Library;
use crate::pipeline::{Models, Query, Recommender};

#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// The text to find citations for; mark the citation position with [CIT] (optional)
    #[arg(value_name = "TEXT")]
    pub text: String,
    /// Title of your paper (global context)
    #[arg(long)]
    pub title: Option<String>,
    /// Abstract of your paper (global context)
    #[arg(long = "abstract", value_name = "ABSTRACT")]
    pub abstract_text: Option<String>,
    /// Number of papers to show
    #[arg(short, default_value_t = 10)]
    pub k: usize,
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

pub fn run(lib: &Arc<Library>, a: &RecommendArgs, models: &Models) -> Result<()> {
    let rec = Recommender::new(lib.clone(), models);
    let query = Query::new(a.text.clone())
        .with_global(a.title.clone().unwrap_or_default(), a.abstract_text.clone().unwrap_or_default())
        .with_k(a.k);
    let result = rec.recommend(&query)?;
    for n in &result.notices {
        eprintln!("notice: {n}");
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
        return Ok(());
    }
    if result.candidates.is_empty() {
        println!("no matching papers in the library ({} papers)", lib.papers().num_papers());
    }
    for (i, c) in result.candidates.iter().enumerate() {
        let channels: Vec<String> = c.channels.iter().map(|s| format!("{}#{}", s.channel, s.rank)).collect();
        match &c.paper {
            Some(p) => {
                println!("{:>2}. {}  [{:.2}; {}]", i + 1, p.title, c.score, channels.join(" "));
                let year = p.year.map(|y| y.to_string()).unwrap_or_else(|| "n.d.".into());
                println!("    {} ({year}) {}  {}", p.short_authors(), p.venue, c.id);
            }
            None => println!("{:>2}. {}  [{:.2}]", i + 1, c.id, c.score),
        }
    }
    Ok(())
}

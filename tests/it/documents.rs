#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! Evidence from documents: PDFs (written here: two columns with numeric
//! citations; one column with author–year citations; broken ones), LaTeX
//! projects (`\input` + `.bib`, `.bbl` only, a source bundle), pandoc
//! Markdown, and the real PDFs of `../shared/data/pdf` when present.

use crate::common;

use std::path::{Path, PathBuf};

use citewise::evidence::inputs;
use citewise::library::evidence_import::{import_inputs, EvidenceImportSummary, EvidenceOptions};
use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::Library;
use common::fixture;
use common::pdf::{column, pdf};

const SHOKOUHI: &str = "doi:10.1145/2484028.2484076";
const VASWANI: &str = "bib:vaswani2017attention";
const DEVLIN: &str = "doi:10.18653/v1/n19-1423";
const BRANTS: &str = "bib:brants2000tnt";
const KOEHN: &str = "bib:koehn2003phrase";
const PAPINENI: &str = "bib:papineni2002bleu";

fn library() -> (tempfile::TempDir, Library) {
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    import(&lib, &[fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    (dir, lib)
}

/// A two-column paper citing by number: a sentence runs from the bottom of
/// the left column into the right one; the references are on page 2.
fn numeric_pdf() -> Vec<u8> {
    let mut p1 = vec![(170.0, 790.0, 16.0, "Attention Models for Query Completion")];
    let left = [
        "Query auto-completion ranks the candidate com-",
        "pletions of a typed prefix. Shokouhi [1] person-",
        "alised the ranking with the search history of the",
        "user. Self-attention models such as the Trans-",
        "former [2, 3] now encode the prefix itself. We",
        "compare both families of models on two logs of",
        "search sessions from a commercial engine and",
        "from a public archive of academic searches. The",
        "first log holds three million sessions; the sec-",
        "ond one holds only a few thousand of them. Both",
        "come with the completions the engine showed and",
        "the one the user picked, which we treat as the",
        "relevant completion of the prefix. A ranking of",
        "completions by popularity alone is the baseline",
        "that every model has to beat. Pretrained encoders",
    ];
    let right = [
        "of language [3] give strong rankings without any",
        "history at all. Personal history still helps on",
        "the longer prefixes, where the candidates are few",
        "and the user has typed most of the query. We re-",
        "port mean reciprocal rank over all prefixes and",
        "over prefixes of each length from one character",
        "to ten characters, and the time each model takes",
        "to rank the candidates of one prefix on a laptop.",
        "The encoders are slower by two orders of magnitude",
        "but a small distilled model closes most of the gap",
        "while keeping most of the gain in ranking quality.",
        "Caching the encoded prefix between keystrokes also",
        "removes most of the remaining cost of the model.",
        "A method nobody has published yet [4] is not in",
        "the library, so its citation gives no evidence.",
    ];
    p1.extend(column(57.0, 740.0, &left));
    p1.extend(column(310.0, 740.0, &right));
    p1.push((290.0, 40.0, 9.0, "1"));
    let mut p2 = vec![(57.0, 770.0, 12.0, "References")];
    p2.extend(vec![
        (57.0, 750.0, 9.0, "[1] Milad Shokouhi. 2013. Learning to person-"),
        (69.0, 739.0, 9.0, "alize query auto-completion. In SIGIR."),
        (57.0, 726.0, 9.0, "[2] Ashish Vaswani, Noam Shazeer, Niki Parmar,"),
        (69.0, 715.0, 9.0, "et al. 2017. Attention is all you need. In NIPS."),
        (57.0, 702.0, 9.0, "[3] Jacob Devlin, Ming-Wei Chang, Kenton Lee, and"),
        (69.0, 691.0, 9.0, "Kristina Toutanova. 2019. BERT: Pre-training of deep"),
        (69.0, 680.0, 9.0, "bidirectional transformers. doi:10.18653/v1/N19-1423"),
        (57.0, 667.0, 9.0, "[4] Some Author. 2020. A method nobody has read yet."),
        (69.0, 656.0, 9.0, "In Proceedings of Nowhere."),
    ]);
    p2.push((290.0, 40.0, 9.0, "2"));
    pdf(&[p1, p2])
}

/// One column, author–year citations, a hanging-indent reference list.
fn author_year_pdf() -> Vec<u8> {
    let mut p1 = vec![(200.0, 790.0, 16.0, "Tagging and Translation")];
    p1.extend(column(
        72.0,
        740.0,
        &[
            "The part-of-speech tagger of Brants (2000) uses trigram statistics of the tags with",
            "smoothing and a suffix model for unknown words. Phrase-based models of translation",
            "(Koehn et al., 2003; Papineni et al., 2002) are trained on parallel text and evaluated",
            "against reference translations. We tag both sides of the parallel text before training.",
            "Tagging errors then move into the phrase table, which we measure on held-out sentences.",
            "The results show that better tags give better translations of long and rare phrases.",
        ],
    ));
    let mut p2 = vec![(72.0, 770.0, 12.0, "References")];
    p2.extend(vec![
        (72.0, 750.0, 9.0, "Brants, Thorsten. 2000. TnT - a statistical part-of-"),
        (82.0, 739.0, 9.0, "speech tagger. In Proceedings of ANLP."),
        (72.0, 726.0, 9.0, "Koehn, Philipp, Franz Josef Och, and Daniel Marcu. 2003."),
        (82.0, 715.0, 9.0, "Statistical phrase-based translation. In Proceedings of NAACL."),
        (72.0, 702.0, 9.0, "Papineni, Kishore, Salim Roukos, Todd Ward, and Wei-Jing"),
        (82.0, 691.0, 9.0, "Zhu. 2002. BLEU: a method for automatic evaluation of"),
        (82.0, 680.0, 9.0, "machine translation. In Proceedings of ACL."),
    ]);
    pdf(&[p1, p2])
}

fn import_all(lib: &Library, paths: &[PathBuf], add_cited: bool) -> EvidenceImportSummary {
    let (found, problems) = inputs::expand(paths);
    assert!(problems.is_empty(), "{problems:?}");
    let options = EvidenceOptions { add_cited, ..Default::default() };
    import_inputs(lib, &found, &options, &|_, _| {}).unwrap()
}

fn sentences_citing(lib: &Library, id: &str) -> Vec<String> {
    lib.citances().citing(id).unwrap().into_iter().map(|c| c.sentence).collect()
}

#[test]
fn two_column_numeric_pdf_gives_linked_citing_sentences() {
    let (dir, lib) = library();
    let file = dir.path().join("completion.pdf");
    std::fs::write(&file, numeric_pdf()).unwrap();
    let s = import_all(&lib, std::slice::from_ref(&file), false);
    assert!(s.skipped.is_empty(), "{:?}", s.skipped);
    let k = &s.kinds[&citewise::evidence::document::DocKind::Pdf];
    assert_eq!(k.documents, 1);
    assert_eq!((k.stats.references, k.stats.references_linked), (4, 3), "{k:?}");
    assert_eq!(k.linked_by.get("doi"), Some(&1), "the DOI in reference 3 links it");
    assert_eq!(k.stats.markers, 4);
    assert_eq!(k.stats.markers_resolved, 4);
    assert_eq!(k.stats.markers_linked, 3);
    // Hyphenation across lines is undone; the sentence is whole.
    assert_eq!(sentences_citing(&lib, SHOKOUHI), ["Shokouhi [1] personalised the ranking with the search history of the user."]);
    assert_eq!(sentences_citing(&lib, VASWANI), ["Self-attention models such as the Transformer [2, 3] now encode the prefix itself."]);
    // A sentence that runs from the left column into the right one.
    let devlin = sentences_citing(&lib, DEVLIN);
    assert!(
        devlin.contains(&"Pretrained encoders of language [3] give strong rankings without any history at all.".to_string()),
        "{devlin:?}"
    );
    let c = &lib.citances().citing(SHOKOUHI).unwrap()[0];
    assert_eq!(c.page, Some(1));
    assert_eq!(c.kind, "pdf");
    assert!(c.citing.id.starts_with("doc:"), "not in the library: named by its content");
    assert_eq!(c.citing.title, "Attention Models for Query Completion");
    assert_eq!(c.citing.file.as_deref(), Some(file.to_str().unwrap()));
    // The spans are evidence for the cited paper.
    let spans = lib.evidence().spans_citing(SHOKOUHI, &[], 10, &[]).unwrap();
    assert!(spans.iter().any(|r| r.text == "Shokouhi personalised the ranking with the search history of the user"), "{spans:#?}");
    assert_eq!(spans[0].sources[0].page, Some(1));
}

#[test]
fn author_year_pdf_resolves_names_and_years() {
    let (dir, lib) = library();
    let file = dir.path().join("tagging.pdf");
    std::fs::write(&file, author_year_pdf()).unwrap();
    let s = import_all(&lib, &[file], false);
    let k = &s.kinds[&citewise::evidence::document::DocKind::Pdf];
    assert_eq!((k.stats.references, k.stats.references_linked), (3, 3), "{k:?}");
    assert_eq!(
        sentences_citing(&lib, BRANTS),
        ["The part-of-speech tagger of Brants (2000) uses trigram statistics of the tags with smoothing and a suffix model for unknown words."]
    );
    let koehn = sentences_citing(&lib, KOEHN);
    assert_eq!(koehn.len(), 1);
    assert_eq!(koehn, sentences_citing(&lib, PAPINENI), "one citation group cites both");
}

#[test]
fn a_pdf_matches_its_own_library_record() {
    let (dir, lib) = library();
    // A PDF of a paper the library holds: its title is on the first page.
    let mut p1 = vec![(150.0, 790.0, 16.0, "Learning to Personalize Query Auto-Completion")];
    p1.extend(column(
        72.0,
        740.0,
        &[
            "Completions of a prefix are ranked with the user's history, following",
            "the tagger of Brants (2000) for the part-of-speech features we add here.",
        ],
    ));
    let p2 = vec![
        (72.0, 770.0, 12.0, "References"),
        (72.0, 750.0, 9.0, "Brants, Thorsten. 2000. TnT - a statistical part-of-speech tagger. In ANLP."),
    ];
    let file = dir.path().join("paper.pdf");
    std::fs::write(&file, pdf(&[p1, p2])).unwrap();
    let s = import_all(&lib, &[file], false);
    assert_eq!(s.kinds[&citewise::evidence::document::DocKind::Pdf].identified, 1);
    let c = &lib.citances().citing(BRANTS).unwrap()[0];
    assert_eq!((c.citing.id.as_str(), c.citing.year), (SHOKOUHI, Some(2013)));
}

#[test]
fn a_pdf_without_a_title_line_is_not_taken_for_a_paper_its_references_name() {
    let (dir, lib) = library();
    // One page, one type size: no title line. Its reference list holds a
    // library paper's exact title; the document is not that paper.
    let page = column(
        72.0,
        760.0,
        &[
            "Completions of a prefix are ranked with the user's history, as in [1].",
            "We add features of the session and of the time of day to that ranker.",
            "References",
            "[1] M. Shokouhi. Learning to Personalize Query Auto-Completion. In SIGIR, 2013.",
        ],
    );
    let file = dir.path().join("untitled.pdf");
    std::fs::write(&file, pdf(&[page])).unwrap();
    let s = import_all(&lib, &[file], false);
    assert_eq!(s.kinds[&citewise::evidence::document::DocKind::Pdf].identified, 0, "{s:?}");
    let c = &lib.citances().citing(SHOKOUHI).unwrap()[0];
    assert!(c.citing.id.starts_with("doc:"), "named by its content, not by the paper it cites: {}", c.citing.id);
}

#[test]
fn broken_inputs_are_one_line_each_and_the_rest_imports() {
    let (dir, lib) = library();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(docs.join("paper/sections")).unwrap();
    let good = numeric_pdf();
    std::fs::write(docs.join("good.pdf"), &good).unwrap();
    std::fs::write(docs.join("truncated.pdf"), &good[..300]).unwrap();
    std::fs::write(docs.join("not-a-pdf.pdf"), b"<html>an error page saved as .pdf</html>").unwrap();
    // No text layer (as a scan without OCR).
    std::fs::write(docs.join("scan.pdf"), pdf(&[vec![]])).unwrap();
    std::fs::copy(fixture("documents/encrypted.pdf"), docs.join("encrypted.pdf")).unwrap();
    // LaTeX: unbalanced braces, and a bibliography file that is not there.
    std::fs::write(
        docs.join("paper/main.tex"),
        "\\documentclass{article}\\begin{document}\n\\input{sections/intro}\n\\bibliography{missing}\n\\end{document}\n",
    )
    .unwrap();
    std::fs::write(docs.join("paper/sections/intro.tex"), "Completions are ranked \\emph{with history \\cite{shokouhi2013personalize}.\n")
        .unwrap();
    let s = import_all(&lib, std::slice::from_ref(&docs), false);
    let skipped: Vec<&str> = s.skipped.iter().map(String::as_str).collect();
    assert_eq!(skipped.len(), 4, "{skipped:#?}");
    let line = |name: &str| skipped.iter().find(|l| l.contains(name)).unwrap_or_else(|| panic!("no line for {name} in {skipped:#?}"));
    assert!(line("truncated.pdf").contains("not a readable PDF"), "{skipped:?}");
    assert!(line("not-a-pdf.pdf").contains("no %PDF header"), "{skipped:?}");
    assert!(line("scan.pdf").ends_with("no text layer (a scanned PDF without OCR?)"), "{skipped:?}");
    assert!(line("encrypted.pdf").ends_with("encrypted PDF (needs a password)"), "{skipped:?}");
    let problems = s.problems.join("\n");
    assert!(problems.contains("main.tex: unbalanced braces"), "{problems}");
    assert!(problems.contains("main.tex: bibliography file(s) not found: missing.bib"), "{problems}");
    // The good PDF imported all the same.
    assert_eq!(sentences_citing(&lib, SHOKOUHI).len(), 1);
}

/// A LaTeX project: `\input` files, a `.bib`, a citation of a paper the
/// library lacks (added with `--add-cited`).
fn latex_project(root: &Path) -> PathBuf {
    std::fs::create_dir_all(root.join("sections")).unwrap();
    std::fs::write(
        root.join("main.tex"),
        "\\documentclass{article}\n\\title{History-Aware Completion}\n\\begin{document}\n\\maketitle\n\\input{sections/intro}\n\\include{sections/method}\n\\bibliography{refs}\n\\end{document}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("sections/intro.tex"),
        "% the introduction\n\\section{Introduction}\nQuery completions can be personalised with the user's search history~\\citep{shokouhi2013personalize}.\nSelf-attention \\citep[see][p.~3]{vaswani2017attention,newpaper2024} reads the whole prefix at once.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("sections/method.tex"),
        "\\begin{equation} s = \\cite{brants2000tnt} \\end{equation}\nWe rank with \\textbf{BM25} as \\citet{robertson} define it.\n\\begin{figure}A caption citing \\cite{brants2000tnt}.\\end{figure}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("refs.bib"),
        "@inproceedings{shokouhi2013personalize, title={Learning to Personalize Query Auto-Completion}, author={Shokouhi, Milad}, year={2013}, doi={10.1145/2484028.2484076}}\n\
         @inproceedings{vaswani2017attention, title={Attention is All you Need}, author={Vaswani, Ashish and others}, year={2017}}\n\
         @article{robertson, title={The Probabilistic Relevance Framework: BM25 and Beyond}, author={Robertson, Stephen and Zaragoza, Hugo}, year={2009}}\n\
         @misc{newpaper2024, title={A Paper the Library Does Not Have Yet}, author={New, Author}, year={2024}}\n\
         @inproceedings{brants2000tnt, title={TnT -- A Statistical Part-of-Speech Tagger}, author={Brants, Thorsten}, year={2000}}\n",
    )
    .unwrap();
    root.join("main.tex")
}

#[test]
fn latex_project_with_inputs_and_bib() {
    let (dir, lib) = library();
    let main = latex_project(&dir.path().join("paper"));
    let s = import_all(&lib, std::slice::from_ref(&main), false);
    let k = &s.kinds[&citewise::evidence::document::DocKind::Latex];
    assert_eq!((k.documents, k.stats.references, k.stats.references_linked), (1, 5, 4), "{k:?}");
    assert_eq!(sentences_citing(&lib, SHOKOUHI), ["Query completions can be personalised with the user's search history [1]."]);
    assert_eq!(sentences_citing(&lib, VASWANI), ["Self-attention [2, 4] reads the whole prefix at once."]);
    assert_eq!(sentences_citing(&lib, "doi:10.1561/1500000019"), ["We rank with BM25 as [3] define it."]);
    assert!(sentences_citing(&lib, BRANTS).is_empty(), "math and figures are not prose");
    let c = &lib.citances().citing(SHOKOUHI).unwrap()[0];
    assert_eq!((c.kind.as_str(), c.citing.title.as_str()), ("latex", "History-Aware Completion"));

    // Unchanged: skipped. `--add-cited` after an edit: the missing paper joins
    // the library and its citation becomes evidence; nothing doubles.
    let again = import_all(&lib, std::slice::from_ref(&main), false);
    assert_eq!(again.files_unchanged, 1);
    let intro = dir.path().join("paper/sections/intro.tex");
    let text = std::fs::read_to_string(&intro).unwrap();
    std::fs::write(&intro, text.replace("reads the whole prefix at once", "reads the prefix at once")).unwrap();
    let added = import_all(&lib, &[main], true);
    assert_eq!(added.papers_added, 1);
    assert_eq!(sentences_citing(&lib, "bib:newpaper2024"), ["Self-attention [2, 4] reads the prefix at once."]);
    assert_eq!(sentences_citing(&lib, VASWANI), ["Self-attention [2, 4] reads the prefix at once."], "the old sentence is gone");
    let support: u32 = lib.evidence().spans_citing(SHOKOUHI, &[], 10, &[]).unwrap().iter().map(|r| r.support_for(SHOKOUHI)).max().unwrap();
    assert_eq!(support, 1, "reading a project again never doubles support");
}

#[test]
fn bbl_only_project_and_a_source_bundle() {
    let (dir, lib) = library();
    let root = dir.path().join("bbl");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("paper.tex"), "\\documentclass{article}\\begin{document}\nWe tag with the trigram tagger of \\cite{Brants00}.\n\\bibliography{refs}\\end{document}\n").unwrap();
    std::fs::write(
        root.join("paper.bbl"),
        "\\begin{thebibliography}{1}\n\\bibitem[Brants(2000)]{Brants00}\nThorsten Brants.\n\\newblock {TnT} -- a statistical part-of-speech tagger.\n\\newblock In {\\em Proceedings of ANLP}, 2000.\n\\end{thebibliography}\n",
    )
    .unwrap();
    let s = import_all(&lib, std::slice::from_ref(&root), false);
    assert!(s.problems.is_empty(), "the .bbl stands in for the missing .bib: {:?}", s.problems);
    assert_eq!(sentences_citing(&lib, BRANTS), ["We tag with the trigram tagger of [1]."]);

    // The same kind of project as an arXiv source bundle.
    let bundle = dir.path().join("source.tar.gz");
    let project = dir.path().join("bundle");
    latex_project(&project);
    let gz = flate2::write::GzEncoder::new(std::fs::File::create(&bundle).unwrap(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    tar.append_dir_all(".", &project).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    let s = import_all(&lib, &[bundle], false);
    assert_eq!(s.kinds[&citewise::evidence::document::DocKind::Latex].documents, 1, "{:?}", s.skipped);
    assert_eq!(sentences_citing(&lib, SHOKOUHI), ["Query completions can be personalised with the user's search history [1]."]);
}

#[test]
fn pandoc_markdown_draft() {
    let (dir, lib) = library();
    std::fs::write(dir.path().join("refs.bib"), "@article{bm25, title={The Probabilistic Relevance Framework: {BM25} and Beyond}, author={Robertson, Stephen}, year={2009}, doi={10.1561/1500000019}}\n").unwrap();
    let md = dir.path().join("notes.md");
    std::fs::write(&md, "---\ntitle: Ranking notes\nbibliography: refs.bib\n---\n\n# Ranking\n\nTerm weights follow the probabilistic model [see @bm25, ch. 3].\n").unwrap();
    let s = import_all(&lib, &[md], false);
    assert_eq!(s.kinds[&citewise::evidence::document::DocKind::Markdown].stats.references_linked, 1);
    assert_eq!(sentences_citing(&lib, "doi:10.1561/1500000019"), ["Term weights follow the probabilistic model [1]."]);
}

#[test]
fn cli_imports_documents_and_lists_what_cites_a_paper() {
    let (dir, lib) = library();
    let lib_dir = lib.dir().to_path_buf();
    drop(lib);
    let file = dir.path().join("completion.pdf");
    std::fs::write(&file, numeric_pdf()).unwrap();
    let run = |args: &[&str]| {
        let o = common::citewise_command().arg("--library").arg(&lib_dir).args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let out = run(&["import", "--evidence", "--no-embed", file.to_str().unwrap()]);
    assert!(out.contains("PDF: 1 documents read (0 unchanged, 0 skipped), 0 matched to their library record; 3 citing sentences"), "{out}");
    assert!(out.contains("references: 3 of 4 linked to library papers (75.0%; by doi 1, title 2)"), "{out}");
    assert!(out.contains("citation markers: 4 of 4 resolved to a reference (100.0%), 3 to a library paper (75.0%)"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&run(&["evidence", "--cites", SHOKOUHI, "--json"])).unwrap();
    assert_eq!(json["paper"]["title"], "Learning to Personalize Query Auto-Completion");
    let s = &json["citing_sentences"][0];
    assert_eq!(s["sentence"], "Shokouhi [1] personalised the ranking with the search history of the user.");
    assert_eq!(s["citing"]["file"], file.to_str().unwrap());
    assert_eq!(s["page"], 1);
    let text = run(&["evidence", "--cites", SHOKOUHI]);
    assert!(text.contains("cited in 1 sentence of 1 document") && text.contains("p. 1: Shokouhi [1] personalised"), "{text}");
    let o = common::citewise_command().arg("--library").arg(&lib_dir).args(["evidence", "--cites", "doi:nothing"]).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no paper `doi:nothing` in the library"));
}

/// The real PDFs of `../shared/data/pdf` (one cluster, with a library of the
/// benchmark's papers): most of the gold citing sentences become evidence
/// for the cluster's reference paper.
#[test]
fn real_pdfs_give_the_gold_citing_sentences() {
    let Some(shared) = common::shared_or_fail("the real-PDF test") else { return };
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(dir.path()).unwrap();
    import(&lib, &[shared.join("data/benchmark/papers.jsonl.gz")], ImportOptions::default(), &Quiet).unwrap();
    let cluster = "C08-1098";
    let s = import_all(&lib, &[shared.join("data/pdf").join(cluster)], false);
    let k = &s.kinds[&citewise::evidence::document::DocKind::Pdf];
    assert!(s.skipped.is_empty(), "{:?}", s.skipped);
    assert!(k.identified * 10 >= k.documents * 8, "most PDFs are matched to their record: {k:?}");
    assert!(k.stats.markers_resolved * 10 >= k.stats.markers * 9, "{k:?}");
    let gold: Vec<serde_json::Value> = std::fs::read_to_string(shared.join("data/pdf/citances.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|g: &serde_json::Value| g["cluster"] == cluster)
        .collect();
    let norm = |t: &str| t.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ");
    // As `../shared/tools/evidence_recall.py` scores it: the gold's middle
    // eight words, or 60 % of its word types, in a sentence (or its context)
    // from the right citing paper.
    let found = lib.citances().citing(&format!("acl:{cluster}")).unwrap();
    let hits = gold
        .iter()
        .filter(|g| {
            let words: Vec<String> = norm(g["text"].as_str().unwrap()).split(' ').map(String::from).collect();
            let k = (words.len() / 2).saturating_sub(4);
            let probe = words[k..(k + 8).min(words.len())].join(" ");
            let types: std::collections::HashSet<&str> = words.iter().map(String::as_str).collect();
            found.iter().filter(|c| c.citing.id == g["citing"].as_str().unwrap()).any(|c| {
                [Some(&c.sentence), c.context.as_ref()].into_iter().flatten().any(|text| {
                    let t = norm(text);
                    let have: std::collections::HashSet<&str> = t.split(' ').collect();
                    t.contains(&probe) || types.intersection(&have).count() * 10 >= types.len() * 6
                })
            })
        })
        .count();
    eprintln!("{cluster}: {hits} of {} gold citing sentences found", gold.len());
    assert!(hits * 10 >= gold.len() * 8, "{hits} of {}", gold.len());
}

/// The leakage guard: a query from a citing paper never sees the evidence
/// that paper's own sentences gave, while another paper's query does.
#[test]
fn a_query_never_sees_evidence_from_its_own_citing_paper() {
    let (dir, lib) = library();
    // A draft that is itself a library paper (its title is one), citing BLEU.
    std::fs::write(dir.path().join("refs.bib"), "@inproceedings{bleu, title={{BLEU}: a Method for Automatic Evaluation of Machine Translation}, author={Papineni, Kishore}, year={2002}}\n").unwrap();
    let md = dir.path().join("draft.md");
    std::fs::write(&md, "---\ntitle: Statistical Phrase-Based Translation\nbibliography: refs.bib\n---\nWe score the zebra transliteration outputs with n-gram overlap against references [@bleu].\n").unwrap();
    import_all(&lib, &[md], false);
    let own = lib.citances().citing(PAPINENI).unwrap();
    assert_eq!(own[0].citing.id, KOEHN, "the draft is matched to its library record");

    let lib = std::sync::Arc::new(lib);
    let rec = citewise::pipeline::Recommender::with_stages(lib.clone(), &citewise::pipeline::Models::installed(), &["evidence"]).unwrap();
    let query = citewise::pipeline::Query::new("zebra transliteration outputs scored by n-gram overlap [CIT]");
    let found = |q: &citewise::pipeline::Query| rec.recommend(q).unwrap().candidates.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(found(&query), [PAPINENI], "another paper's query finds BLEU through the evidence");
    let from_koehn = query.clone().citing(vec![KOEHN.to_string()]);
    assert!(found(&from_koehn).is_empty(), "its own sentence is not its evidence");
    assert!(lib.evidence().spans_citing(PAPINENI, &[], 5, &from_koehn.citing_keys()).unwrap().is_empty());
}

/// Pandoc's front matter may list its bibliography files over several
/// lines (`[a.bib,` then `b.bib]`): the evidence reader reads every file,
/// as the language server and `check` do (one reading of the names, in
/// `corpus::bibliography_names`); it once looked for a file named
/// "[a.bib,".
#[test]
fn a_markdown_draft_reads_every_bibliography_its_front_matter_lists() {
    let (dir, lib) = library();
    std::fs::write(dir.path().join("a.bib"), "@article{bm25, title={The Probabilistic Relevance Framework: {BM25} and Beyond}, author={Robertson, Stephen}, year={2009}, doi={10.1561/1500000019}}\n").unwrap();
    std::fs::write(
        dir.path().join("b.bib"),
        "@inproceedings{tnt, title={{TnT} -- A Statistical Part-of-Speech Tagger}, author={Brants, Thorsten}, year={2000}}\n",
    )
    .unwrap();
    let md = dir.path().join("notes.md");
    std::fs::write(
        &md,
        "---\ntitle: Ranking notes\nbibliography: [a.bib,\n  b.bib]\n---\n\nTerm weights follow the probabilistic model [@bm25].\n\n\
         Every word is tagged by a trigram tagger [@tnt].\n",
    )
    .unwrap();
    let s = import_all(&lib, &[md], false);
    let k = &s.kinds[&citewise::evidence::document::DocKind::Markdown];
    assert_eq!((k.stats.references, k.stats.references_linked), (2, 2), "{k:?}");
    assert_eq!(sentences_citing(&lib, BRANTS), ["Every word is tagged by a trigram tagger [2]."]);
}

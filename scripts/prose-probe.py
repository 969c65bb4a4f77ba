#!/usr/bin/env python3
"""What reading a LaTeX draft's prose does to `check` and to recommendations.

Writes a LaTeX draft as an author writes one (preamble, title, abstract,
sections with labels, figures, bibliography commands) whose sentences are N
seeded `val` contexts of the benchmark, each citing its paper by the pool's
key, and its refs.bib; runs `citewise check --json` on it with each binary
given, and prints per binary: the cited papers' mean support, how many
sentences carry LaTeX commands, and R@10 / MRR@10 of the cited paper when
each checked sentence is the query (`citewise recommend`, with the last
binary).

usage: scripts/prose-probe.py BENCH LIBRARY OUT_DIR N BIN [BIN...]
(LIBRARY: the benchmark pool, e.g. the README's first run's library)
"""
import gzip
import json
import os
import random
import subprocess
import sys

COMMANDS = ["\\section", "\\label", "\\documentclass", "\\begin", "\\end", "\\includegraphics", "\\caption", "\\maketitle"]
HEADINGS = ["Introduction", "Related Work", "Method", "Model", "Training", "Experiments", "Results", "Analysis", "Discussion", "Conclusion"]


def write_draft(bench, out, n):
    papers = {}
    for line in gzip.open(os.path.join(bench, "papers.jsonl.gz"), "rt"):
        v = json.loads(line)
        papers[v["id"]] = v
    contexts = [json.loads(l) for l in gzip.open(os.path.join(bench, "contexts.jsonl.gz"), "rt")]
    val = [
        c for c in contexts
        if c["split"] == "val" and len(c["cited"]) == 1 and papers.get(c["cited"][0], {}).get("bibkey")
        and c["context"].count("[CIT]") == 1 and len(c["context"]) < 400
    ]
    random.seed(7)
    random.shuffle(val)
    val = val[:n]
    tex = ["\\documentclass[11pt]{article}", "\\usepackage{graphicx}", "\\usepackage{natbib}",
           "\\title{A Study of Language Processing Methods}", "\\author{Ann Writer}", "\\begin{document}", "\\maketitle",
           "\\begin{abstract}", "We study methods of natural language processing.", "\\end{abstract}"]
    bib = []
    for i, c in enumerate(val):
        if i % 4 == 0:
            tex += ["\\section{%s}" % HEADINGS[(i // 4) % len(HEADINGS)], "\\label{sec:%d}" % i]
        p = papers[c["cited"][0]]
        tex.append(c["context"].replace("[CIT]", "\\cite{%s}" % p["bibkey"]))
        if i % 8 == 5:
            tex += ["\\begin{figure}[t]", "\\centering", "\\includegraphics[width=0.9\\linewidth]{fig%d.pdf}" % i,
                    "\\caption{Results of the models.}", "\\label{fig:%d}" % i, "\\end{figure}"]
        title = p["title"].replace("{", "").replace("}", "")
        bib.append("@inproceedings{%s,\n  title = {%s},\n  year = {%s}\n}\n" % (p["bibkey"], title, p.get("year", "")))
    tex += ["\\bibliographystyle{plain}", "\\bibliography{refs}", "\\end{document}"]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "draft.tex"), "w") as f:
        f.write("\n".join(tex) + "\n")
    with open(os.path.join(out, "refs.bib"), "w") as f:
        f.write("\n".join(bib))
    return [c["cited"][0] for c in val]


def main(argv):
    bench, library, out, n, bins = argv[0], argv[1], argv[2], int(argv[3]), argv[4:]
    cited = write_draft(bench, out, n)
    draft = os.path.join(out, "draft.tex")
    for b in bins:
        r = json.loads(subprocess.run([b, "--library", library, "check", "--json", draft], capture_output=True, check=False).stdout)
        cs = r["citations"]
        support = [c["support"] for c in cs if c.get("support") is not None]
        commands = sum(1 for c in cs if any(w in c.get("sentence", "") for w in COMMANDS))
        hits, mrr = 0, 0.0
        for c, want in zip(cs, cited):
            p = subprocess.run([bins[-1], "--library", library, "recommend", "--json", "-k", "10", "-"],
                               input=c["sentence"].encode(), capture_output=True, check=False)
            ids = [x["id"] for x in json.loads(p.stdout)["candidates"]][:10]
            if want in ids:
                hits += 1
                mrr += 1 / (ids.index(want) + 1)
        print("%s: %d citations, mean support %.3f, %d sentences with commands; as queries R@10 %.3f, MRR@10 %.3f"
              % (b, len(cs), sum(support) / max(len(support), 1), commands, hits / len(cs), mrr / len(cs)))


if __name__ == "__main__":
    main(sys.argv[1:])

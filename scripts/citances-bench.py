#!/usr/bin/env python3
"""Writes a benchmark directory from gold citing sentences (CL-SciSumm
citances, `data/pdf/citances.jsonl`): each sentence becomes a `test`
context in which its citation of the cluster's reference paper is replaced
by `[CIT]`, `cited` is the reference paper and `citing_id` the citing paper
(so `citewise eval` can keep a query from seeing evidence taken from its own
citing paper). The benchmark's `train` contexts come along unchanged, so the
evidence database `eval` builds is the benchmark's; the candidate pool is
the benchmark's (`papers.jsonl.gz` is linked, not copied).

    scripts/citances-bench.py PDF_DIR BENCH_DIR OUT_DIR [--skip LIST]
    citewise eval --bench OUT_DIR --pool POOL [--evidence PDF_DIR]

`--skip LIST` leaves out the sentences of the PDFs named in LIST (one
`CLUSTER/PAPER.pdf` a line): e.g. those citewise could not match to their
library record, for which the leakage guard cannot tell a query's own
sentences from others'.
"""
import gzip
import json
import os
import re
import sys


def find_marker(text, marker):
    """Where `marker` is in `text`, comparing letters and digits only (the
    annotators' marker may differ in spacing, punctuation or hyphenation:
    "Kogure, 1990" for "Kogure (1990)"). (None, None) when it is not."""
    at = text.find(marker)
    if at >= 0:
        return at, at + len(marker)
    keep = [(i, c.lower()) for i, c in enumerate(text) if c.isalnum()]
    compact = "".join(c for _, c in keep)
    want = "".join(c.lower() for c in marker if c.isalnum())
    k = compact.find(want) if want else -1
    if k < 0:
        return None, None
    return keep[k][0], keep[k + len(want) - 1][0] + 1


def replace_marker(text, marker):
    """The sentence with the citation that holds `marker` replaced by [CIT]:
    a whole parenthesis or bracket when the marker is all of it, the marker
    itself otherwise. None when the marker is not in the sentence."""
    at, end = find_marker(text, marker)
    if at is None:
        return None
    # "(Chieu and Ng, 2002)" or "[Kogure 90]": the brackets go too.
    before, after = text[:at].rstrip(), text[end:].lstrip()
    if before[-1:] in ("(", "[") and after[:1] in (")", "]"):
        start = len(before) - 1
        stop = len(text) - len(after) + 1
        return text[:start] + "[CIT]" + text[stop:]
    # "Golding (1995)": the year in parentheses goes, the name stays.
    if after[:1] == ")" and text[:at].rstrip()[-1:] != "(" and "(" in text[:at][-8:]:
        at = text.rfind("(", 0, at)
        end = text.find(")", end) + 1
    return text[:at] + "[CIT]" + text[end:]


def main(pdf_dir, bench, out, skip=()):
    os.makedirs(out, exist_ok=True)
    papers = os.path.join(out, "papers.jsonl.gz")
    if not os.path.exists(papers):
        os.symlink(os.path.abspath(os.path.join(bench, "papers.jsonl.gz")), papers)
    titles = {}
    with gzip.open(os.path.join(bench, "papers.jsonl.gz"), "rt") as f:
        for line in f:
            p = json.loads(line)
            titles[p["id"]] = (p.get("title", ""), p.get("abstract", ""))
    written = skipped = 0
    with open(os.path.join(pdf_dir, "citances.jsonl")) as src, gzip.open(os.path.join(out, "contexts.jsonl.gz"), "wt") as dst:
        with gzip.open(os.path.join(bench, "contexts.jsonl.gz"), "rt") as train:
            for line in train:
                if json.loads(line)["split"] == "train":
                    dst.write(line if line.endswith("\n") else line + "\n")
        for i, line in enumerate(src):
            g = json.loads(line)
            if g["pdf"] in skip:
                continue
            context = replace_marker(g["text"], g["marker"])
            if context is None:
                skipped += 1
                continue
            title, abstract = titles.get(g["citing"], ("", ""))
            row = {
                "id": f"citances:{i}",
                "source": "cl-scisumm",
                "split": "test",
                "citing_id": g["citing"],
                "citing_title": title,
                "citing_abstract": abstract,
                "context": re.sub(r"\s+", " ", context).strip(),
                "cited": [g["cited"]],
            }
            dst.write(json.dumps(row, sort_keys=True) + "\n")
            written += 1
    print(f"{written} contexts written to {out}; {skipped} skipped (marker not in the sentence)")


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 5 and args[3] == "--skip":
        main(*args[:3], skip={l.strip() for l in open(args[4]) if l.strip()})
    elif len(args) == 3:
        main(*args)
    else:
        sys.exit(__doc__)

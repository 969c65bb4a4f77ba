#!/usr/bin/env python3
"""Writes a benchmark directory whose `test` contexts are paragraph-length:
each test context with the two citing sentences before it and the two after
it from the same citing paper (in the benchmark's order), the others'
`[CIT]` removed. The benchmark has no real neighbouring sentences; these are
sentences of the same paper, which is what a paragraph around a citation
mostly is. Used to check BM25 on long queries against
`../shared/tools/bm25_baseline.py`.

usage: scripts/paragraph-bench.py BENCH_DIR OUT_DIR [SPLIT (default test)]
"""
import gzip
import json
import os
import sys
from collections import defaultdict


def main(bench, out, split="test"):
    os.makedirs(out, exist_ok=True)
    papers = os.path.join(out, "papers.jsonl.gz")
    if not os.path.exists(papers):
        os.symlink(os.path.abspath(os.path.join(bench, "papers.jsonl.gz")), papers)
    rows = [json.loads(line) for line in gzip.open(os.path.join(bench, "contexts.jsonl.gz"), "rt")]
    rows = [r for r in rows if r["split"] == split]
    by_paper = defaultdict(list)
    for r in rows:
        by_paper[(r["source"], r["citing_id"])].append(r)
    words = []
    with gzip.open(os.path.join(out, "contexts.jsonl.gz"), "wt") as dst:
        for group in by_paper.values():
            for i, r in enumerate(group):
                around = group[max(0, i - 2):i + 3]
                text = " ".join(r["context"] if o is r else o["context"].replace("[CIT]", " ") for o in around)
                row = dict(r, context=" ".join(text.split()))
                words.append(len(row["context"].split()))
                dst.write(json.dumps(row) + "\n")
    words.sort()
    print(f"{len(words)} {split} contexts; words per context: median {words[len(words) // 2]}, "
          f"mean {sum(words) / len(words):.0f}, single-sentence {sum(1 for g in by_paper.values() if len(g) == 1)}")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])

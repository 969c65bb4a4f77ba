#!/usr/bin/env python3
"""Writes a benchmark directory whose `val` split is a held-out slice of the
benchmark's `train` split: the contexts of one citing paper in six (by a hash
of its id; of scisummnet's, one in three of those), with every other `train`
context kept as `train`. `citewise eval --bench OUT` then builds the evidence
database from the rest, so fusion settings can be checked on sources that
`val` lacks (acl-arc) without looking at `test`.

usage: scripts/dev-split.py BENCH_DIR OUT_DIR
"""
import gzip
import hashlib
import json
import os
import sys
from collections import Counter


def main(bench, out):
    os.makedirs(out, exist_ok=True)
    papers = os.path.join(out, "papers.jsonl.gz")
    if not os.path.exists(papers):
        os.symlink(os.path.abspath(os.path.join(bench, "papers.jsonl.gz")), papers)
    counts = Counter()
    with gzip.open(os.path.join(bench, "contexts.jsonl.gz"), "rt") as src, gzip.open(os.path.join(out, "contexts.jsonl.gz"), "wt") as dst:
        for line in src:
            row = json.loads(line)
            if row["split"] != "train":
                continue
            h = int(hashlib.md5(row["citing_id"].encode()).hexdigest(), 16)
            if h % 6 == 0:
                if row["source"] == "scisummnet" and (h // 6) % 3 != 0:
                    continue
                row["split"] = "val"
            counts[(row["split"], row["source"])] += 1
            dst.write(json.dumps(row) + "\n")
    for (split, source), n in sorted(counts.items()):
        print(f"{split:5} {source:12} {n}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

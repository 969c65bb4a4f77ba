#!/usr/bin/env python3
"""Writes a benchmark directory whose `val` split is a held-out slice of the
benchmark's `train` split: the contexts of one citing paper in six (by a hash
of its id; of scisummnet's, one in three of those), with every other `train`
context kept as `train`. `citewise eval --bench OUT` then builds the evidence
database from the rest, so fusion settings can be checked on sources that
`val` lacks (acl-arc) without looking at `test`.

With `--hold-out SOURCE`, `val` is instead every non-test context of SOURCE
(none of them stays in `train`, so the evidence database has never seen that
source's citing sentences, as with a new field or library) plus three in ten
of the benchmark's other `val` contexts (seeded); the rest of `train` stays.

With `--hold-out SOURCE --for-training`, SOURCE's contexts are left out
altogether (the other contexts are the same as with `--hold-out`): a model
trained on OUT (`citewise train hatten --bench OUT`) has seen none of them,
not even to choose its best epoch on `val`, so `citewise eval` on the
`--hold-out` directory checks it on a field it was never fitted to.

usage: scripts/dev-split.py BENCH_DIR OUT_DIR [--hold-out SOURCE [--for-training]]
"""
import gzip
import hashlib
import json
import os
import random
import sys
from collections import Counter


def main(bench, out, hold_out=None, for_training=False):
    os.makedirs(out, exist_ok=True)
    papers = os.path.join(out, "papers.jsonl.gz")
    if not os.path.exists(papers):
        os.symlink(os.path.abspath(os.path.join(bench, "papers.jsonl.gz")), papers)
    counts = Counter()
    rng = random.Random(7)
    with gzip.open(os.path.join(bench, "contexts.jsonl.gz"), "rt") as src, gzip.open(os.path.join(out, "contexts.jsonl.gz"), "wt") as dst:
        for line in src:
            row = json.loads(line)
            if row["split"] == "test":
                continue
            if hold_out is not None:
                if row["source"] == hold_out:
                    if for_training:
                        continue
                    row["split"] = "val"
                elif row["split"] == "val" and rng.random() >= 0.3:
                    continue
                counts[(row["split"], row["source"])] += 1
                dst.write(json.dumps(row) + "\n")
                continue
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
    args = sys.argv[1:]
    if len(args) in (4, 5) and args[2] == "--hold-out" and args[4:] in ([], ["--for-training"]):
        main(args[0], args[1], args[3], for_training=len(args) == 5)
    elif len(args) == 2:
        main(args[0], args[1])
    else:
        sys.exit(__doc__)

#!/usr/bin/env python3
"""The in-field fold protocol: a benchmark of citing papers (ACM-CR dev by
default) treated as a researcher's library.

The citing papers are split into K folds by paper (never by sentence). For
each fold, the library is the pool plus the *other* folds' contexts imported
as the user's citing sentences (`eval --evidence`, the way a user's documents
would supply them). The fold's own contexts are then evaluated. Each fold is
run twice, without and with that in-field evidence.

It reads what the binary writes (`citewise eval --json`) and replays
nothing. The tables give per fold, and pooled over folds (weighted by
contexts), R@10, MRR and nDCG@10 for each source.

    scripts/in-field-folds.py --pool /tmp/acmpool --out /tmp/folds
    scripts/in-field-folds.py --bench ../shared/data/acm-cr-dev --folds 3 --binary target/release/citewise ...

A citing paper is its title: ACM-CR dev's `citing_id`s are per section and
shared between papers, so grouping by them would put one paper in two folds.
"""

import argparse
import collections
import gzip
import json
import os
import random
import subprocess
import sys

METRICS = (("R@10", lambda s: s["recall"][2]), ("MRR", lambda s: s["mrr"]), ("nDCG@10", lambda s: s["ndcg10"]))


def read_contexts(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_contexts(path, contexts):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for c in contexts:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")


def folds_of(contexts, k, seed):
    """Citing papers (by title) dealt into k folds from a fixed seed."""
    papers = sorted({c["citing_title"].strip().lower() for c in contexts})
    random.Random(seed).shuffle(papers)
    fold = {p: i % k for i, p in enumerate(papers)}
    return [[c for c in contexts if fold[c["citing_title"].strip().lower()] == i] for i in range(k)], fold


def evaluate(binary, bench, pool, out, evidence=None, extra=()):
    cmd = [binary, "eval", "--bench", bench, "--pool", pool, "--as-encoded", "--fused-only", "--json", out, *extra]
    if evidence:
        cmd += ["--evidence", evidence]
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def scores(report):
    return {s["source"]: (s["n"], s["scores"]) for s in report["sources"]}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=os.path.join(here, "..", "..", "shared", "data", "acm-cr-dev"))
    ap.add_argument("--pool", required=True, help="the benchmark's pool library (eval --pool)")
    ap.add_argument("--out", required=True, help="a directory for the folds' files and reports")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--binary", default=os.path.join(here, "..", "target", "release", "citewise"))
    ap.add_argument("--eval-arg", action="append", default=[], help="passed on to every eval (repeat)")
    a = ap.parse_args()

    bench = os.path.abspath(a.bench)
    contexts = read_contexts(os.path.join(bench, "contexts.jsonl.gz"))
    folds, fold_of = folds_of(contexts, a.folds, a.seed)
    runs = collections.defaultdict(dict)  # (fold, arm) -> source -> (n, scores)
    for i, own in enumerate(folds):
        d = os.path.join(os.path.abspath(a.out), f"fold{i}")
        fold_bench = os.path.join(d, "bench")
        write_contexts(os.path.join(fold_bench, "contexts.jsonl.gz"), own)
        papers = os.path.join(fold_bench, "papers.jsonl.gz")
        if not os.path.lexists(papers):
            os.symlink(os.path.join(bench, "papers.jsonl.gz"), papers)
        others = [c for j, f in enumerate(folds) if j != i for c in f]
        evidence = os.path.join(d, "in-field-evidence.jsonl.gz")
        write_contexts(evidence, others)
        papers_in = sorted({t for t, f in fold_of.items() if f == i})
        print(f"fold {i}: {len(papers_in)} citing papers, {len(own)} contexts; evidence: {len(others)} contexts", file=sys.stderr)
        runs[i]["without"] = scores(evaluate(a.binary, fold_bench, a.pool, os.path.join(d, "without.json"), None, a.eval_arg))
        runs[i]["with"] = scores(evaluate(a.binary, fold_bench, a.pool, os.path.join(d, "with.json"), evidence, a.eval_arg))

    sources = sorted({s for r in runs.values() for arm in r.values() for s in arm})
    header = "| fold | source | n | " + " | ".join(f"{m} without / with evidence" for m, _ in METRICS) + " |"
    print(header)
    print("|" + "---|" * (3 + len(METRICS)))
    for source in sources:
        pooled = collections.defaultdict(float)
        total = 0
        for i in sorted(runs):
            if source not in runs[i]["without"]:
                continue
            n, without = runs[i]["without"][source]
            _, with_ = runs[i]["with"][source]
            cells = []
            for m, get in METRICS:
                cells.append(f"{get(without):.3f} / {get(with_):.3f}")
                pooled[(m, "without")] += n * get(without)
                pooled[(m, "with")] += n * get(with_)
            total += n
            print(f"| {i} | {source} | {n} | " + " | ".join(cells) + " |")
        cells = [f"{pooled[(m, 'without')] / total:.3f} / {pooled[(m, 'with')] / total:.3f}" for m, _ in METRICS]
        print(f"| pooled | {source} | {total} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

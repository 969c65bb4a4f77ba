#!/usr/bin/env python3
"""Each stage of the pipeline on and off, per source, from what
`examples/rerank_features.rs` wrote for a split: every channel alone, the
fused prefetch, the whole pipeline (rerank stage, K_r 20), and the pipeline
without each signal of the rerank stage (cross-encoder, citation cosine,
cited-for), without its agreement guard (two channels that put the fused
first paper first keep it first; one, out of the reranker's field), and without moving the papers the passage
already cites (`already_cited`: named by author and year, or by key) after
all the others. Cells are R@10 / MRR (MRR over the top 100), as `citewise eval`
reports them, counted by paper: a result that is any record of a cited
paper's work (`cited_works`) finds it.

It replays `pipeline::fusion::fuse` and `pipeline::rerank::combine` with the
default `Fusion`, and checks itself: it says how many contexts its fused top
K_r differs from the one the recommender computed (ties, and the works the
recommender shows once where the replay, record by record, lists twice; a
jump means the defaults below no longer match the code). The fused prefetch
row is the recommender's own fused top 30, one entry per work.

usage: scripts/rerank-ablation.py FEATURES.jsonl [FEATURES.jsonl ...]
"""
import json
import sys
from collections import defaultdict

# `Fusion::default()`.
RRF_K = 5.0
EVIDENCE_WEIGHT = 2.0
MIN_CONFIDENCE = 0.0
HATTEN_WEIGHT, HATTEN_LO, HATTEN_HI = 0.5, 0.5, 0.8
CITATION_WEIGHT, CITATION_WITHOUT_EVIDENCE, STAND_IN = 0.75, 1.0, 0.5
RERANK_WEIGHT, RERANK_LO, RERANK_HI = 0.5, 0.5, 0.8
RERANK_CITATION_WEIGHT = 0.25
CITED_FOR_WEIGHT = 0.25
# `rerank::AGREEMENT_KEEPS_FIRST`, and `AGREEMENT_OUT_OF_FIELD` when the
# reranker's field gate is not fully open.
AGREEMENT_KEEPS_FIRST = 2
AGREEMENT_OUT_OF_FIELD = 1
# `rerank::CPU_RERANK_DEPTH`.
RERANK_DEPTH = 20
CHANNELS = ["bm25", "evidence", "citation", "hatten"]


def gate(value, lo, hi):
    return min(max((value - lo) / max(hi - lo, 1e-6), 0.0), 1.0)


def evidence_confidence(row):
    return min(max(row["channels"].get("evidence", {}).get("conf", 0.0), 0.0), 1.0)


def fuse(row):
    e = evidence_confidence(row)
    scores = {}
    for name in CHANNELS:
        if name not in row["channels"]:
            continue
        out = row["channels"][name]
        c = out["conf"]
        if name == "evidence":
            w = 0.0 if c <= MIN_CONFIDENCE else EVIDENCE_WEIGHT * min((c - MIN_CONFIDENCE) / max(1 - MIN_CONFIDENCE, 1e-6), 1.0)
        elif name == "bm25":
            w = 1.0
        elif name == "hatten":
            w = HATTEN_WEIGHT * gate(c, HATTEN_LO, HATTEN_HI)
        else:
            own = min(max(c, 0.0), 1.0)
            w = (CITATION_WEIGHT * e + CITATION_WITHOUT_EVIDENCE * (1 - e)) * (own + STAND_IN * (1 - own))
        for i, pid in enumerate(out["ranked"]):
            scores[pid] = scores.get(pid, 0.0) + w / (RRF_K + i + 1)
    return sorted(scores, key=lambda p: -scores[p])


def cited_last(ids, row, on=True):
    """`already_cited.move_last`: the papers the passage names after the
    others, each part in its order."""
    named = set(row.get("already_cited") or []) if on else set()
    return [p for p in ids if p not in named] + [p for p in ids if p in named]


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: -values[i])
    out = [0] * len(values)
    for r, i in enumerate(order):
        out[i] = r + 1
    return out


def rerank(row, fused, rerank_on=True, citation_on=True, cited_for_on=True, agreement_on=True, cited_last_on=True):
    # The stage reorders the top K_r of the fused list once the papers the
    # passage already cites are moved last; its signals follow their papers.
    named = set(row.get("already_cited") or []) if cited_last_on else set()
    order = sorted(range(len(row["top"])), key=lambda i: row["top"][i] in named)
    row = dict(row, top=[row["top"][i] for i in order])
    for key in ("ce", "cos", "cited_for"):
        if row[key]:
            row[key] = [row[key][i] for i in order]
    fused = cited_last(fused, row, cited_last_on)
    top = row["top"][:RERANK_DEPTH]
    n = len(top)
    k = RRF_K
    score = [1.0 / (k + i + 1) for i in range(n)]
    w = RERANK_WEIGHT * gate(row["coverage"], RERANK_LO, RERANK_HI) if rerank_on else 0.0
    if w > 0:
        for i, r in enumerate(ranks(row["ce"][:n])):
            score[i] += w / (k + r)
    if citation_on and row["cos"]:
        for i, r in enumerate(ranks(row["cos"][:n])):
            score[i] += RERANK_CITATION_WEIGHT / (k + r)
    w = CITED_FOR_WEIGHT * evidence_confidence(row) if cited_for_on else 0.0
    cited_for = row["cited_for"][:n]
    have = [i for i in range(n) if cited_for[i] is not None]
    if w > 0:
        for j, r in enumerate(ranks([cited_for[i] for i in have])):
            score[have[j]] += w / (k + r)
    order = sorted(range(n), key=lambda i: (-score[i], i))
    firsts = [out["ranked"][0] for out in row["channels"].values() if out["ranked"]]
    agreement = AGREEMENT_OUT_OF_FIELD if gate(row["coverage"], RERANK_LO, RERANK_HI) < 1.0 else AGREEMENT_KEEPS_FIRST
    if agreement_on and n and firsts.count(top[0]) >= agreement:
        order = [0] + [i for i in order if i != 0]
    head = [top[i] for i in order]
    seen = set(head)
    return cited_last(head + [p for p in fused if p not in seen], row, cited_last_on)


def scores(ranked, row):
    """R@10 and reciprocal rank, counted by paper as `citewise eval` counts:
    a result that is any record of a cited paper's work finds it, once."""
    works = row.get("cited_works") or [[c] for c in row["cited"]]
    found, hits = set(), []
    for p in ranked[:100]:
        w = next((i for i, records in enumerate(works) if p in records), None)
        hits.append(w is not None and w not in found)
        if w is not None:
            found.add(w)
    recall = sum(hits[:10]) / len(works)
    rr = next((1.0 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    return recall, rr


def table(path):
    rows = [json.loads(line) for line in open(path)]
    fused = [fuse(r) for r in rows]
    differing = sum(f[:RERANK_DEPTH] != r["top"][:RERANK_DEPTH] for r, f in zip(rows, fused))
    variants = [(name + " alone", lambda r, f, name=name: r["channels"].get(name, {}).get("ranked", [])) for name in CHANNELS]
    variants += [
        # The recommender's fused list, one entry per work (its top 30), then
        # the replay's.
        ("fused prefetch", lambda r, f: cited_last(r["top"] + [p for p in f if p not in set(r["top"])], r)),
        ("**whole pipeline**", lambda r, f: rerank(r, f)),
        ("without the cross-encoder", lambda r, f: rerank(r, f, rerank_on=False)),
        ("without the citation cosine", lambda r, f: rerank(r, f, citation_on=False)),
        ("without cited-for", lambda r, f: rerank(r, f, cited_for_on=False)),
        ("without the agreement guard", lambda r, f: rerank(r, f, agreement_on=False)),
        ("without moving already-cited papers last", lambda r, f: rerank(r, f, cited_last_on=False)),
    ]
    results = []
    for name, ranker in variants:
        acc = defaultdict(lambda: [0.0, 0.0, 0])
        for r, f in zip(rows, fused):
            recall, rr = scores(ranker(r, f), r)
            for key in ("all", r["source"]):
                acc[key][0] += recall
                acc[key][1] += rr
                acc[key][2] += 1
        results.append((name, acc))
    sources = sorted(results[0][1], key=lambda s: -results[0][1][s][2])
    print(f"{path}: {len(rows)} contexts; fused top {RERANK_DEPTH} differs from the recommender's in {differing} (each record replayed apart: a work held twice among the candidates counts as differing)")
    print("| stage | " + " | ".join(f"{s} ({results[0][1][s][2]})" for s in sources) + " |")
    print("|---" * (len(sources) + 1) + "|")
    for name, acc in results:
        print(f"| {name} | " + " | ".join(f"{acc[s][0] / acc[s][2]:.3f} / {acc[s][1] / acc[s][2]:.3f}" for s in sources) + " |")
    print()
    return differing


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        table(p)

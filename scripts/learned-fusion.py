#!/usr/bin/env python3
"""A learned combination of the prefetch channels, measured offline against the
shipped fusion (weighted reciprocal-rank fusion, `pipeline::fusion`).

Reads `examples/channel_lists.rs` output (one JSON line per context: each
channel's confidence and ranked list with scores). For every paper in the
union of the lists it makes features from each channel's rank, score
(relative to the channel's best) and presence, and the shipped fusion's
weight for that list; fits a logistic model and a LambdaMART ranker
(LightGBM) on TRAIN; and prints R@10 / MRR / nDCG@10 of the fused order and of
each model on every FIELD, with the change against the fused order and its
paired bootstrap interval (2,000 resamples, 95 %).

The shipped fusion's weight of each list and its fused order are read from
the lists (`channel_lists` writes them with the binary's own `Fusion::default()`
and `fuse`): this script does not re-implement them.

--no-hatten leaves HAtten's list out of the features (HAtten was trained on
the benchmark's `train`, so its list is too good on `train` contexts);
--augment adds each training context a second time without its evidence list
(a library with no citing sentences of the claim, as in a new field).

needs: pip install numpy scikit-learn lightgbm
usage: scripts/learned-fusion.py [--no-hatten] [--augment] TRAIN.jsonl NAME=FIELD.jsonl...
"""
import json
import math
import random
import sys

import numpy as np

CHANNELS = ["bm25", "evidence", "citation", "hatten"]  # the order fusion adds them in
RRF_K = 5.0  # the reciprocal rank's offset in the features (as `Fusion::default()`'s rrf_k)


def fusion_weight(channels, c):
    """The shipped fusion's weight of channel `c`'s list (written by `channel_lists`)."""
    return channels[c]["weight"]


def features(channels, use_hatten):
    found = {}
    info = {}
    for c in CHANNELS:
        ranked = channels.get(c, {}).get("ranked", [])
        if not ranked:
            continue
        info[c] = (fusion_weight(channels, c), ranked[0][1])
        for i, (pid, s) in enumerate(ranked):
            found.setdefault(pid, {})[c] = (i, s)
    pids = list(found)
    rows = []
    for pid in pids:
        row, fused = [], 0.0
        for c in CHANNELS:
            if c == "hatten" and not use_hatten:
                continue
            w, top = info.get(c, (0.0, 1.0))
            if c in found[pid]:
                i, s = found[pid][c]
                rr = 1.0 / (RRF_K + i + 1)
                # BM25 and evidence scores are unbounded (relative to the best); cosines are not.
                rel = (s / top if top > 0 else 0.0) if c in ("bm25", "evidence") else s - top
                row += [w * rr, rr, 1.0, rel, math.log1p(i)]
                fused += w * rr
            else:
                rel = -0.3 if c in ("citation", "hatten") and c in info else 0.0
                row += [0.0, 0.0, 0.0, rel, math.log(101)]
        row += [fused, float(len(found[pid])), ev]
        rows.append(row)
    return pids, np.array(rows, dtype=np.float64)


def without_evidence(ctx):
    """The context as a library without its evidence list sees it: the other
    lists with the weights the binary gives them then (`weight_without_evidence`)."""
    channels = {c: dict(v, weight=v["weight_without_evidence"]) for c, v in ctx["channels"].items() if c != "evidence"}
    return dict(ctx, channels=channels)


def training_set(contexts, use_hatten, augment):
    if augment:
        contexts = contexts + [without_evidence(c) for c in contexts]
    xs, ys, groups = [], [], []
    for ctx in contexts:
        pids, x = features(ctx["channels"], use_hatten)
        if not pids:
            continue
        cited = set(ctx["cited"])
        xs.append(x)
        ys.append(np.array([1.0 if p in cited else 0.0 for p in pids]))
        groups.append(len(pids))
    return np.vstack(xs), np.concatenate(ys), groups


def ranked_by(model, ctx, use_hatten):
    pids, x = features(ctx["channels"], use_hatten)
    if not pids:
        return []
    fused_rank = {p: i for i, p in enumerate(ctx["fused"])}
    return [p for _, p in sorted(zip(model(x), pids), key=lambda t: (-t[0], fused_rank[t[1]]))]


def metrics(ranked, cited):
    cited, top = set(cited), ranked[:10]
    r10 = sum(1 for p in top if p in cited) / len(cited)
    rr = next((1.0 / (i + 1) for i, p in enumerate(ranked) if p in cited), 0.0)
    dcg = sum(1.0 / math.log2(i + 2) for i, p in enumerate(top) if p in cited)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(cited), 10)))
    return r10, rr, dcg / idcg


def mean(per_context, i):
    return sum(m[i] for m in per_context.values()) / len(per_context)


def change(base, new, i, n=2000):
    ids = list(base)
    d = [new[c][i] - base[c][i] for c in ids]
    rng = random.Random(1)
    boots = sorted(sum(d[rng.randrange(len(d))] for _ in d) / len(d) for _ in range(n))
    return "%+.3f [%+.3f, %+.3f]" % (sum(d) / len(d), boots[int(0.025 * n)], boots[int(0.975 * n)])


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def main(argv):
    use_hatten = "--no-hatten" not in argv
    augment = "--augment" in argv
    args = [a for a in argv if not a.startswith("--")]
    from lightgbm import LGBMRanker
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x, y, groups = training_set(read(args[0]), use_hatten, augment)
    print("training: %d candidates, %d cited, %d contexts" % (len(y), int(y.sum()), len(groups)))
    scale = StandardScaler().fit(x)
    logistic = LogisticRegression(C=0.01, max_iter=2000).fit(scale.transform(x), y)
    lambdamart = LGBMRanker(n_estimators=100, num_leaves=7, learning_rate=0.05, min_child_samples=50, verbose=-1)
    lambdamart.fit(x, y, group=groups)
    models = [
        ("logistic (C 0.01)", lambda z: logistic.decision_function(scale.transform(z))),
        ("LambdaMART (100 trees, 7 leaves)", lambdamart.predict),
    ]
    for field in args[1:]:
        name, path = field.split("=", 1)
        contexts = read(path)
        base = {c["id"]: metrics(c["fused"], c["cited"]) for c in contexts}
        print("\n%s (%d): fused %.3f / %.3f / %.3f" % (name, len(contexts), *(mean(base, i) for i in range(3))))
        for label, model in models:
            new = {c["id"]: metrics(ranked_by(model, c, use_hatten), c["cited"]) for c in contexts}
            figures = " / ".join("%.3f" % mean(new, i) for i in range(3))
            print("  %-34s %s  ΔR@10 %s  ΔMRR %s  ΔnDCG@10 %s" % (label, figures, *(change(base, new, i) for i in range(3))))


if __name__ == "__main__":
    main(sys.argv[1:])

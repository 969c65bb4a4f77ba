#!/usr/bin/env python3
"""The in-field fold protocol: a benchmark's citing papers treated as a
researcher's library (ACM-CR dev by default; a held-out ACL source with
`--bench HO --split val --source acl-arc`).

The citing papers are split into K folds by paper (never by sentence). For
each fold, the library is the pool plus the *other* folds' contexts imported
as the user's citing sentences (`eval --evidence`, the way a user's documents
would supply them: one citing id per paper, as one PDF is one document). The
fold's own contexts are then evaluated, in these arms:

    none           no in-field evidence (the benchmark's `train` evidence, if
                   it has any), shipped fusion: what the library ranks today
    evidence       + in-field evidence, shipped fusion, the whole pipeline
    evidence-fused + in-field evidence, shipped fusion, no rerank stage
    learned        + in-field evidence, the evidence trust the library learned
                   from those citing sentences (`citewise import --evidence`
                   does it by itself), the whole pipeline
    learned-fused  the same, no rerank stage

Without in-field evidence the rerank stage is gated off in a field the
evidence does not speak of, so `none` is both fused and pipeline there.

With `--check`, the same folds measure `citewise check`'s support score
instead (`eval --check`: each context's true citation against a random
library paper and a hard swap from the fused top 20), in two arms: `none`
(the pool, shipped fusion, the shipped threshold) and `learned` (+ the
other folds' sentences, the trust and the flag threshold the library learned
from them, `check::calibration`); the table also shows the learned arm's
items under the shipped threshold, so that what the threshold does is
apart from what the evidence does.

    scripts/in-field-folds.py --check --pool /tmp/acmpool --out /tmp/folds

It reads what the binary writes (`citewise eval --json`: each context's
scores) and replays nothing. Each arm's ranked papers are kept beside its
JSON as a TREC run (`ARM.run`, `eval --run`), which
`scripts/reranker-in-field.py` reads. The tables give per fold and pooled over folds
R@10, MRR and nDCG@10, each arm's difference from `none` with a paired
bootstrap interval (contexts resampled, 95 %), the trust each fold's library
learned, and each run's wall time.

    scripts/in-field-folds.py --pool /tmp/acmpool --out /tmp/folds
    scripts/in-field-folds.py --bench /tmp/ho-acl --split val --source acl-arc \\
        --limit 100 --pool /tmp/aclpool --out /tmp/folds-acl

With `--against EARLIER_OUT`, each arm is also compared with the same arm
of an earlier run over the same folds (another pool's vectors, another
models directory: `scripts/citation-in-field.py`), with the same paired
intervals.

A citing paper is its title (else its id): ACM-CR dev's `citing_id`s are per
section and shared between papers, so grouping by them would put one paper in
two folds.
"""

import argparse
import collections
import gzip
import hashlib
import json
import os
import random
import subprocess
import sys
import time

METRICS = (("R@10", "recall10"), ("MRR", "mrr"), ("nDCG@10", "ndcg10"))
ARMS = ("none", "evidence", "evidence-fused", "learned", "learned-fused")
FUSED_STAGES = "bm25,evidence,citation,hatten"


def read_contexts(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_contexts(path, contexts):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for c in contexts:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")


def paper_of(c):
    return (c.get("citing_title") or "").strip().lower() or c["citing_id"]


def folds_of(contexts, k, seed):
    """Citing papers dealt into k folds from a fixed seed."""
    papers = sorted({paper_of(c) for c in contexts})
    random.Random(seed).shuffle(papers)
    fold = {p: i % k for i, p in enumerate(papers)}
    return [[c for c in contexts if fold[paper_of(c)] == i] for i in range(k)], fold


def as_documents(contexts):
    """The contexts as a user's documents supply them: one citing id per paper."""
    out = []
    for c in contexts:
        c = dict(c)
        c["citing_id"] = "paper:" + hashlib.sha1(paper_of(c).encode()).hexdigest()[:16]
        out.append(c)
    return out


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def evidence_set(pool, paths):
    """Where `eval --evidence PATHS` keeps its evidence set (cli::eval::with_evidence)."""
    key = "".join(os.path.realpath(p) + "\n" for p in paths)
    return os.path.join(pool, "evidence-sets", f"{fnv1a64(key.encode()):016x}")


def evaluate(binary, bench, pool, out, evidence, extra, reuse=False):
    if reuse and os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            return {c["id"]: c for c in json.load(f)["contexts"]}, 0.0
    cmd = [binary, "eval", "--bench", bench, "--pool", pool, "--as-encoded", "--fused-only", "--json", out,
           "--run", out[: -len(".json")] + ".run", *extra]
    if evidence:
        cmd += ["--evidence", evidence]
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    t = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - t
    with open(out, encoding="utf-8") as f:
        report = json.load(f)
    return {c["id"]: c for c in report["contexts"]}, seconds


def evaluate_check(binary, bench, pool, out, evidence, extra, reuse=False):
    if not (reuse and os.path.exists(out)):
        cmd = [binary, "eval", "--bench", bench, "--pool", pool, "--as-encoded", "--check", "--json", out, *extra]
        cmd += ["--evidence", evidence] if evidence else ["--shipped-fusion"]
        print("$", " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def auc(pos, neg):
    """ROC-AUC, ties half (as eval::support_auc::auc)."""
    if not pos or not neg:
        return float("nan")
    neg = sorted(neg)
    import bisect
    wins = sum(bisect.bisect_left(neg, p) + 0.5 * (bisect.bisect_right(neg, p) - bisect.bisect_left(neg, p)) for p in pos)
    return wins / (len(pos) * len(neg))


def check_row(items, threshold_of):
    """AUCs and shares flagged; `threshold_of(item)`: its threshold."""
    by = lambda v: [i for i in items if i["variant"] == v]
    t, r, h = by("true"), by("random"), by("hard")
    score = lambda xs: [i["score"] for i in xs]
    flagged = lambda xs: sum(i["score"] < threshold_of(i) for i in xs) / max(1, len(xs))
    return (f"{auc(score(t), score(r)):.3f} | {auc(score(t), score(h)):.3f} | {100 * flagged(t):.1f} % | "
            f"{100 * flagged(r):.1f} % | {100 * flagged(h):.1f} %")


def check_folds(a, folds, prepare):
    """`--check`: the support score per fold and pooled, none against learned."""
    runs, learned = {}, {}
    for i, own in enumerate(folds):
        d, fold_bench, evidence = prepare(i, own)
        runs[(i, "none")] = evaluate_check(a.binary, fold_bench, a.pool, os.path.join(d, "check-none.json"), None, a.eval_arg, a.reuse)
        runs[(i, "learned")] = evaluate_check(a.binary, fold_bench, a.pool, os.path.join(d, "check-learned.json"), evidence, a.eval_arg, a.reuse)
        path = os.path.join(evidence_set(a.pool, [evidence]), "learned-support.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                learned[i] = json.load(f)
    shipped = next((l["shipped_threshold"] for l in learned.values()), None)
    # An item scored by the full model (the cross-encoder ran) is flagged
    # under the full model's threshold; the word channels' score flags nothing.
    under = lambda t: (lambda item: t if item["signals"].get("cross_encoder") is not None else 0.0)
    print("\n| fold | arm | contexts | AUC true vs random | AUC true vs hard | true flagged | random flagged | hard flagged |")
    print("|---|---|---|---|---|---|---|---|")
    for name, fold_ids in [*((str(i), [i]) for i in range(len(folds))), ("pooled", list(range(len(folds))))]:
        for arm in ("none", "learned"):
            n = sum(runs[(i, arm)]["contexts"] for i in fold_ids)
            # Each item with the threshold its fold's library flags under.
            items = [dict(it, threshold=runs[(i, arm)].get("learned_threshold") or shipped) for i in fold_ids for it in runs[(i, arm)]["items"]]
            if arm == "learned" and shipped is not None:
                print(f"| {name} | in-field evidence, shipped threshold | {n} | {check_row(items, under(shipped))} |")
            label = "none (shipped)" if arm == "none" else "in-field evidence, learned threshold"
            print(f"| {name} | {label} | {n} | {check_row(items, lambda it: under(it['threshold'] or 0.0)(it))} |")
    if learned:
        print("\n| fold | threshold learned | shipped | sentences | documents | own sentences under the shipped | under the learned |")
        print("|---|---|---|---|---|---|---|")
        for i, l in sorted(learned.items()):
            print(f"| {i} | {l['threshold']:.3f} | {l['shipped_threshold']:.3f} | {l['sentences']} | {l['documents']} | "
                  f"{100 * l['flagged_shipped']:.1f} % | {100 * l['flagged']:.1f} % |")


def bootstrap(a, b, rounds=2000, level=0.95, seed=0x5EED):
    """Mean of b − a and its paired bootstrap interval (as ranking::paired_bootstrap)."""
    d = [y - x for x, y in zip(a, b)]
    n = len(d)
    if n == 0:
        return 0.0, 0.0, 0.0
    rng = random.Random(seed)
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    q = lambda p: means[max(1, min(rounds, int(-(-p * rounds // 1)))) - 1]
    return sum(d) / n, q((1 - level) / 2), q((1 + level) / 2)


def against_table(earlier, scores, arms, present):
    """Each arm against the same arm of an earlier run over the same folds
    (its `foldI/ARM.json`), per fold, pooled and per source pooled, with
    paired bootstrap intervals."""
    print(f"\nagainst {earlier} (the same arm there → here)\n")
    print("| arm | contexts | " + " | ".join(f"{m} there → here (Δ, 95 % interval)" for m, _ in METRICS) + " |")
    print("|---|---|" + "---|" * len(METRICS))
    for arm in arms:
        before = {}
        for i in present:
            with open(os.path.join(earlier, f"fold{i}", f"{arm}.json"), encoding="utf-8") as f:
                before[i] = {c["id"]: c for c in json.load(f)["contexts"]}
        sources = sorted({s["source"] for i in present for s in scores[(i, arm)].values()})
        groups = [(f"fold {i}", [i], None) for i in present] + [("pooled", present, None)]
        groups += [(f"{src}, pooled", present, src) for src in sources] if len(sources) > 1 else []
        for name, fold_ids, source in groups:
            ids = [(i, cid) for i in fold_ids for cid, s in scores[(i, arm)].items() if source is None or s["source"] == source]
            cells = []
            for _, key in METRICS:
                x = [before[i][cid][key] for i, cid in ids]
                y = [scores[(i, arm)][cid][key] for i, cid in ids]
                diff, lo, hi = bootstrap(x, y)
                cells.append(f"{sum(x) / len(x):.3f} → {sum(y) / len(y):.3f} ({diff:+.3f}, {lo:+.3f}..{hi:+.3f})")
            print(f"| {arm}, {name} | {len(ids)} | " + " | ".join(cells) + " |")


def rerank_cell(r):
    if not r:
        return "not tried"
    g = r["gain"]
    return (f"{'on' if r['kept'] else 'off'}: {r['fused']['recall10']:.3f} / {r['fused']['mrr']:.3f} → "
            f"{r['reranked']['recall10']:.3f} / {r['reranked']['mrr']:.3f}, {g['diff']:+.3f} ({g['lo']:+.3f}..{g['hi']:+.3f})")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=os.path.join(here, "..", "..", "shared", "data", "acm-cr-dev"))
    ap.add_argument("--pool", required=True, help="the benchmark's pool library (eval --pool)")
    ap.add_argument("--out", required=True, help="a directory for the folds' files and reports")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", help="only this split's contexts are the in-field ones [default: every split but train]")
    ap.add_argument("--source", help="only this source's contexts are the in-field ones")
    ap.add_argument("--limit", type=int, help="evaluate at most this many contexts per fold (seeded sample)")
    ap.add_argument("--arms", default=",".join(ARMS), help=f"which arms, of {','.join(ARMS)}")
    ap.add_argument("--binary", default=os.path.join(here, "..", "target", "release", "citewise"))
    ap.add_argument("--eval-arg", action="append", default=[], help="passed on to every eval (repeat)")
    ap.add_argument("--reuse", action="store_true", help="read an arm's report where --out has it instead of running it again")
    ap.add_argument("--only", type=int, metavar="K", help="evaluate fold K alone (the folds are made as ever)")
    ap.add_argument("--against", metavar="DIR", help="also compare each arm with the same arm of an earlier --out (the same folds: another pool or models)")
    ap.add_argument("--check", action="store_true", help="measure check's support score (none against learned) instead")
    a = ap.parse_args()
    arms = [x for x in a.arms.split(",") if x]
    if arms[0] != "none" or any(x not in ARMS for x in arms):
        sys.exit(f"--arms: `none` first, then any of {','.join(ARMS[1:])}")

    bench = os.path.abspath(a.bench)
    pool = os.path.abspath(a.pool)
    every = read_contexts(os.path.join(bench, "contexts.jsonl.gz"))
    train = [c for c in every if c.get("split") == "train"]
    contexts = [
        c for c in every
        if c.get("split") != "train" and (a.split is None or c.get("split") == a.split) and (a.source is None or c["source"] == a.source)
    ]
    folds, fold_of = folds_of(contexts, a.folds, a.seed)
    a.pool = pool

    def prepare(i, own):
        """The fold's directory, its benchmark (its contexts as `test`) and the other folds' sentences."""
        d = os.path.join(os.path.abspath(a.out), f"fold{i}")
        evaluated = own if a.limit is None or len(own) <= a.limit else random.Random(a.seed + i).sample(own, a.limit)
        fold_bench = os.path.join(d, "bench")
        # The fold's contexts are evaluated (as `test`); the benchmark's
        # `train` contexts stay the pool's evidence (and every evidence
        # set's), as they were.
        write_contexts(os.path.join(fold_bench, "contexts.jsonl.gz"), [dict(c, split="test") for c in evaluated] + train)
        papers = os.path.join(fold_bench, "papers.jsonl.gz")
        if not os.path.lexists(papers):
            os.symlink(os.path.join(bench, "papers.jsonl.gz"), papers)
        others = as_documents([c for j, f in enumerate(folds) if j != i for c in f])
        evidence = os.path.join(d, "in-field-evidence.jsonl.gz")
        write_contexts(evidence, others)
        n_papers = sum(1 for f in fold_of.values() if f == i)
        print(f"fold {i}: {n_papers} citing papers, {len(evaluated)} of {len(own)} contexts evaluated; in-field evidence: {len(others)} contexts",
              file=sys.stderr)
        return d, fold_bench, evidence

    if a.check:
        if a.only is not None:
            sys.exit("--only: not with --check")
        check_folds(a, folds, prepare)
        return
    scores = collections.defaultdict(dict)  # (fold, arm) -> id -> scores
    seconds = collections.defaultdict(float)  # arm -> wall seconds, all folds
    trust = {}
    present = [i for i in range(len(folds)) if a.only is None or i == a.only]
    for i in present:
        d, fold_bench, evidence = prepare(i, folds[i])
        for arm in arms:
            extra = list(a.eval_arg)
            if arm in ("none", "evidence", "evidence-fused"):
                extra.append("--shipped-fusion")
            if arm.endswith("-fused"):
                extra += ["--stages", FUSED_STAGES]
            scores[(i, arm)], s = evaluate(a.binary, fold_bench, pool, os.path.join(d, f"{arm}.json"),
                                           None if arm == "none" else evidence, extra, a.reuse)
            seconds[arm] += s
        learned = os.path.join(evidence_set(pool, [evidence]), "learned-fusion.json")
        if os.path.exists(learned):
            with open(learned, encoding="utf-8") as f:
                trust[i] = json.load(f)

    def table(title, folds_in):
        ids = [cid for i in folds_in for cid in scores[(i, "none")]]
        keyed = lambda arm, m: [scores[(i, arm)][cid][m] for i in folds_in for cid in scores[(i, "none")]]
        print(f"\n{title} ({len(ids)} contexts)\n")
        print("| arm | " + " | ".join(f"{m} (Δ vs none, 95 % interval)" for m, _ in METRICS) + " |")
        print("|---|" + "---|" * len(METRICS))
        for arm in arms:
            cells = []
            for _, key in METRICS:
                v = keyed(arm, key)
                mean = sum(v) / len(v)
                if arm == "none":
                    cells.append(f"{mean:.3f}")
                else:
                    diff, lo, hi = bootstrap(keyed("none", key), v)
                    cells.append(f"{mean:.3f} ({diff:+.3f}, {lo:+.3f}..{hi:+.3f})")
            print(f"| {arm} | " + " | ".join(cells) + " |")

    for i in present:
        table(f"fold {i}", [i])
    table("pooled over folds", present)
    sources = sorted({c["source"] for c in contexts})
    if len(sources) > 1:
        for source in sources:
            kept = {i: {cid: s for cid, s in scores[(i, "none")].items() if s["source"] == source} for i in present}
            print(f"\n{source}, pooled ({sum(len(k) for k in kept.values())} contexts)\n")
            print("| arm | " + " | ".join(m for m, _ in METRICS) + " |")
            print("|---|" + "---|" * len(METRICS))
            for arm in arms:
                cells = []
                for _, key in METRICS:
                    v = [scores[(i, arm)][cid][key] for i in kept for cid in kept[i]]
                    cells.append(f"{sum(v) / max(1, len(v)):.3f}")
                print(f"| {arm} | " + " | ".join(cells) + " |")
    if a.against:
        against_table(a.against, scores, arms, present)
    if trust:
        print("\n| fold | trust learned | best | sentences | documents | shipped R@10 / MRR | best R@10 / MRR | gain (interval) | rerank stage: fused → reranked R@10 / MRR, gain (interval) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for i, t in sorted(trust.items()):
            g = t["gain"]
            print(f"| {i} | {t['evidence_trust']} | {t['best_trust']} | {t['sentences']} | {t['documents']} | "
                  f"{t['shipped']['recall10']:.3f} / {t['shipped']['mrr']:.3f} | {t['best']['recall10']:.3f} / {t['best']['mrr']:.3f} | "
                  f"{g['diff']:+.3f} ({g['lo']:+.3f}..{g['hi']:+.3f}) | {rerank_cell(t.get('rerank'))} |")
    print("\n| arm | wall time, all folds |\n|---|---|")
    for arm in arms:
        print(f"| {arm} | {seconds[arm]:.0f} s |")


if __name__ == "__main__":
    main()

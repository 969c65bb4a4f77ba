#!/usr/bin/env python3
"""The cross-encoder adapted to a field from a library's own citing sentences, measured by fold on
citing papers it never saw (ACM-CR dev by default). Three steps, the second on a GPU machine:

    prep     (here) each context's fused top 100 from the fold protocol's runs, every paper's and
             context's tokens (the reranker base's tokenizer, as neural::cross_encoder's
             PairEncoder cuts a pair), and the base's embeddings and lower layer in f16:
             DIR/data.json.gz and DIR/weights.safetensors (~30 MB, small enough to carry)
    train    (PyTorch, a GPU) for each fold, fine-tunes the reranker (the shipped top layers and
             head, assets/reranker) on the other folds' contexts, the fused lists' other papers as
             negatives, in several settings (CONFIGS); a fifth of those citing papers is held out to
             choose the checkpoint; every context's top 100 is scored at each checkpoint
    report   (here) R@10 / MRR / nDCG@10 pooled over folds against the fused order, the adapted
             cross-encoder alone and combined with the fused order by reciprocal rank (as the
             rerank stage combines them), paired bootstrap intervals, and its AUC of true
             citations against the fused top 20's other papers

The fold protocol's runs come first (`in-field-folds.py` keeps each arm's `eval --run`):

    scripts/in-field-folds.py --pool /tmp/acmfull --out /tmp/f-acm --arms none,learned-fused
    scripts/in-field-folds.py --check --pool /tmp/acmfull --out /tmp/f-acm    # for the port check
    scripts/reranker-in-field.py prep --folds /tmp/f-acm --out DIR
    python3 scripts/reranker-in-field.py train --data DIR --out RESULTS     # on the GPU machine
    scripts/reranker-in-field.py report --data DIR --results RESULTS

`train` checks its port of the reranker against citewise's own scores (`eval --check --json`'s
cross_encoder signals, which prep keeps where the folds have them) before it trains. It needs torch and safetensors; prep needs
tokenizers and safetensors.
"""
import argparse, gzip, json, os, random, re, sys, time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fold_measure import bert_hidden, boot, metrics, report_setup, train_setup  # noqa: E402

ARM = "learned-fused"


def prep(a):
    from safetensors.numpy import load_file, save_file
    from tokenizers import Tokenizer

    base = os.path.join(a.models, a.base)
    tok = Tokenizer.from_file(os.path.join(base, "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()  # as citewise's BertTokenizer: no padding, no cut but the pair's
    ids = lambda s: tok.encode(s, add_special_tokens=False).ids if s else []
    contexts = [json.loads(l) for l in gzip.open(os.path.join(a.bench, "contexts.jsonl.gz"), "rt")]
    fold_of, runs = {}, {}
    folds = sorted(int(d[4:]) for d in os.listdir(a.folds) if re.fullmatch(r"fold\d+", d))
    for i in folds:
        d = os.path.join(a.folds, f"fold{i}")
        for l in gzip.open(os.path.join(d, "bench", "contexts.jsonl.gz"), "rt"):
            c = json.loads(l)
            if c.get("split") == "test":
                fold_of[c["id"]] = i
        for line in open(os.path.join(d, f"{ARM}.run")):
            q, _, p, _, _, _ = line.split()
            runs.setdefault(q, []).append(p)
    contexts = [c for c in contexts if c["id"] in fold_of]
    need, out = set(), []
    for c in contexts:
        ranked = runs.get(c["id"], [])[:100]
        need.update(ranked)
        need.update(c["cited"])
        local = re.sub(r"\s+", " ", c["context"].replace("[CIT]", " ")).strip()
        out.append({"id": c["id"], "source": c["source"], "fold": fold_of[c["id"]],
                    "paper": (c.get("citing_title") or "").strip().lower() or c["citing_id"],
                    "q": ids(local), "cited": c["cited"], "ranked": ranked})
    papers = {}
    for l in gzip.open(os.path.join(a.bench, "papers.jsonl.gz"), "rt"):
        d = json.loads(l)
        if d["id"] in need:
            papers[d["id"]] = (ids(d.get("title") or "") + ids(d.get("abstract") or ""))[:128]
    check = []  # citewise's own cross-encoder scores, to check the port against
    for i in folds:
        path = os.path.join(a.folds, f"fold{i}", "check-learned.json")
        if os.path.exists(path):
            for it in json.load(open(path))["items"][:60]:
                if it["signals"].get("cross_encoder") is not None and it["paper"] in papers:
                    check.append({"context": it["context"], "paper": it["paper"], "score": it["signals"]["cross_encoder"]})
    os.makedirs(a.out, exist_ok=True)
    with gzip.open(os.path.join(a.out, "data.json.gz"), "wt") as f:
        json.dump({"contexts": out, "papers": papers, "check": check}, f)
    w = load_file(os.path.join(base, "model.safetensors"))
    keep = {k: v.astype(np.float16) for k, v in w.items() if k.startswith("embeddings.") or k.startswith("encoder.layer.0.")}
    save_file(keep, os.path.join(a.out, "weights.safetensors"))
    print(f"{len(out)} contexts in {len(folds)} folds, {len(papers)} papers, {len(check)} pairs to check the port against", file=sys.stderr)


def train(a):
    import torch
    import torch.nn.functional as F
    from safetensors.torch import load_file

    OUT, dev, data = train_setup(a)
    SMOKE = a.smoke
    contexts, papers = data["contexts"], data["papers"]
    if SMOKE:
        contexts = contexts[::30]
    W0 = {k: v.float() for k, v in load_file(os.path.join(a.data, "weights.safetensors")).items()}
    # The shipped top layers and head (burn's Linear is [in, out]; F.linear's [out, in]).
    for k, v in load_file(os.path.join(a.repo, "assets", "reranker", "model.safetensors")).items():
        if k.startswith("head."):
            W0[k] = v.T.contiguous() if k == "head.weight" else v
            continue
        layer, rest = k.split(".", 2)[1:]
        rest = rest.replace("self_attn", "self").replace("layer_norm.gamma", "LayerNorm.weight").replace("layer_norm.beta", "LayerNorm.bias")
        W0[f"encoder.layer.{int(layer) + 1}.{rest}"] = v.T.contiguous() if v.dim() == 2 else v
    assert len(W0) == 55, len(W0)
    W0 = {k: v.to(dev) for k, v in W0.items()}
    CLS, SEP, MAX_LEN, MAX_CAND = 101, 102, 128, 80


    def forward(P, ids, types, mask):
        x = bert_hidden(P, ids, types, mask, layers=3)
        return F.linear(x[:, 0], P["head.weight"], P["head.bias"]).squeeze(-1)


    def pair(q, cand):
        room = MAX_LEN - 3
        share = min(len(cand), MAX_CAND)
        local = q[: room - share]
        cand = cand[: room - len(local)]
        ids = [CLS] + local + [SEP] + cand + [SEP]
        first = len(local) + 2
        return ids, [int(i >= first) for i in range(len(ids))]


    def batch(pairs):
        L = max(len(i) for i, _ in pairs)
        ids = torch.zeros(len(pairs), L, dtype=torch.long)
        types = torch.zeros_like(ids)
        mask = torch.zeros_like(ids)
        for r, (i, t) in enumerate(pairs):
            ids[r, : len(i)] = torch.tensor(i)
            types[r, : len(t)] = torch.tensor(t)
            mask[r, : len(i)] = 1
        return ids.to(dev), types.to(dev), mask.to(dev)


    def logits(P, pairs, bs=512):
        out = []
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))
        with torch.no_grad(), torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
            for s in range(0, len(order), bs):
                chunk = [pairs[i] for i in order[s : s + bs]]
                out.append(forward(P, *batch(chunk)).float().cpu())
        flat = torch.cat(out)
        res = torch.empty(len(pairs))
        res[torch.tensor(order)] = flat
        return res


    # Every context's fused top 100 as pairs, scored at each checkpoint.
    all_pairs, slots = [], []
    for ci, c in enumerate(contexts):
        for r, p in enumerate(c["ranked"]):
            all_pairs.append(pair(c["q"], papers[p]))
            slots.append((ci, r))
    slot_c = np.array([s[0] for s in slots])
    slot_r = np.array([s[1] for s in slots])


    ALL_ORDER = sorted(range(len(all_pairs)), key=lambda i: len(all_pairs[i][0]))
    ALL_BATCHES = [batch([all_pairs[i] for i in ALL_ORDER[s : s + 512]]) for s in range(0, len(ALL_ORDER), 512)]
    ALL_INDEX = torch.tensor(ALL_ORDER)


    def score_all(P):
        with torch.no_grad(), torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
            flat = torch.cat([forward(P, *b).float().cpu() for b in ALL_BATCHES])
        s = torch.empty(len(all_pairs))
        s[ALL_INDEX] = flat
        s = s.numpy()
        m = np.full((len(contexts), 100), np.nan, dtype=np.float32)
        m[slot_c, slot_r] = s
        return m


    # Port check: the shipped reranker's sigmoid against citewise's own cross_encoder signal.
    by_id = {c["id"]: c for c in contexts}
    chk = [x for x in data["check"] if x["context"] in by_id]
    if chk:
        got = torch.sigmoid(logits(W0, [pair(by_id[x["context"]]["q"], papers[x["paper"]]) for x in chk])).numpy()
        want = np.array([x["score"] for x in chk])
        print(f"port check: {len(chk)} pairs, max |diff| {np.abs(got - want).max():.4f}, corr {np.corrcoef(got, want)[0, 1]:.4f}", flush=True)

    CONFIGS = {
        # name: (trainable prefixes, lr, steps, loss, negatives from fused top N, triplets per step)
        "product": (("encoder.layer.1.", "encoder.layer.2.", "head."), 2e-5, 400, "triplet", 20, 16),
        "long": (("encoder.layer.1.", "encoder.layer.2.", "head."), 2e-5, 2000, "triplet", 20, 16),
        "all-layers": (("encoder.layer.", "head."), 2e-5, 2000, "triplet", 20, 16),
        "fast": (("encoder.layer.1.", "encoder.layer.2.", "head."), 1e-4, 1000, "triplet", 20, 16),
        "listwise": (("encoder.layer.1.", "encoder.layer.2.", "head."), 2e-5, 1000, "listwise", 30, 8),
        "listwise-all": (("embeddings.", "encoder.layer.", "head."), 3e-5, 1000, "listwise", 30, 8),
    }
    EVERY = 100 if not SMOKE else 5
    if SMOKE:
        CONFIGS = {k: (v[0], v[1], 10, *v[3:]) for k, v in list(CONFIGS.items())[:2] + list(CONFIGS.items())[4:5]}

    log = {"device": torch.cuda.get_device_name() if dev == "cuda" else "cpu", "runs": []}
    start_scores = score_all(W0)
    np.savez_compressed(f"{OUT}/scores-shipped.npz", s=start_scores.astype(np.float16))
    folds = sorted({c["fold"] for c in contexts})
    for name, (prefixes, lr, steps, loss_kind, neg_depth, per_step) in CONFIGS.items():
        ckpts = list(range(0, steps + 1, EVERY))
        scores = np.full((len(folds), len(ckpts) + 1, len(contexts), 100), np.nan, dtype=np.float16)
        val_ids = {}
        for fi, k in enumerate(folds):
            t0 = time.time()
            rng = random.Random(17 + k)
            train_papers = sorted({c["paper"] for c in contexts if c["fold"] != k})
            rng.shuffle(train_papers)
            held = set(train_papers[: max(1, len(train_papers) // 5)])
            train = [c for c in contexts if c["fold"] != k and c["paper"] not in held]
            val_ids[k] = [i for i, c in enumerate(contexts) if c["paper"] in held]
            examples = []  # (context, positive, negatives)
            for c in train:
                cited = set(c["cited"])
                negs = [p for p in c["ranked"][:neg_depth] if p not in cited]
                for p in c["cited"]:
                    if p in papers and negs:
                        examples.append((c["q"], p, negs))
            P = {n: t.clone().to(dev) for n, t in W0.items()}
            trainable = [n for n in P if n.startswith(prefixes)]
            for n in trainable:
                P[n].requires_grad_(True)
            opt = torch.optim.Adam([P[n] for n in trainable], lr=lr)
            ci = 0
            for step in range(steps + 1):
                if step % EVERY == 0:
                    scores[fi, ci] = score_all(P)
                    ci += 1
                if step == steps:
                    break
                chosen = [rng.choice(examples) for _ in range(per_step)]
                with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
                    if loss_kind == "triplet":
                        pairs = [pair(q, papers[p]) for q, p, _ in chosen] + [pair(q, papers[rng.choice(n)]) for q, _, n in chosen]
                        s = torch.sigmoid(forward(P, *batch(pairs)).float())
                        pos, neg = s[:per_step], s[per_step:]
                        loss = F.relu(neg - pos + 0.1).mean()
                    else:
                        group = 16
                        pairs = []
                        for q, p, n in chosen:
                            pairs.append(pair(q, papers[p]))
                            pairs += [pair(q, papers[x]) for x in rng.sample(n, min(group - 1, len(n)))] + \
                                     [pair(q, papers[rng.choice(n)]) for _ in range(max(0, group - 1 - len(n)))]
                        lg = forward(P, *batch(pairs)).float().view(per_step, group)
                        loss = F.cross_entropy(lg, torch.zeros(per_step, dtype=torch.long, device=dev))
                opt.zero_grad()
                loss.backward()
                opt.step()
            # The end averaged with the start (weight-space), a forgetting guard.
            avg = {n: (P[n].detach() + W0[n].to(dev)) / 2 for n in P}
            scores[fi, ci] = score_all(avg)
            secs = time.time() - t0
            print(f"{name} fold {k}: {len(examples)} triplet sources from {len(train)} contexts, {steps} steps, {secs:.1f} s", flush=True)
            log["runs"].append({"config": name, "fold": k, "examples": len(examples), "train_contexts": len(train), "seconds": secs})
        np.savez_compressed(f"{OUT}/scores-{name}.npz", s=scores, ckpts=np.array(ckpts))
        log.setdefault("val", {})[name] = val_ids
        log["ids"] = [c["id"] for c in contexts]
        json.dump(log, open(f"{OUT}/log.json", "w"))
    print("done", flush=True)


def report(a):
    D = a.results
    log, contexts, data, folds = report_setup(a)

    def reorder(c, s, K, w):
        """Top K by fused rank + w * CE rank (reciprocal, k=5); w=None: CE alone."""
        ranked = c["ranked"]
        k = min(K, len(ranked))
        if k == 0:
            return ranked
        top = np.nan_to_num(s[:k].astype(np.float32), nan=-1e9)
        ce_rank = np.empty(k, int)
        ce_rank[np.argsort(-top, kind="stable")] = np.arange(k)
        if w is None:
            key = -top
        else:
            key = -(1 / (5 + np.arange(k) + 1) + w / (5 + ce_rank + 1))
        return [ranked[i] for i in np.argsort(key, kind="stable")] + ranked[k:]



    def auc(pos, neg):
        if not pos or not neg:
            return float("nan")
        neg = np.sort(neg)
        w = sum(np.searchsorted(neg, p, "left") + 0.5 * (np.searchsorted(neg, p, "right") - np.searchsorted(neg, p, "left")) for p in pos)
        return w / (len(pos) * len(neg))


    fused = np.array([metrics(c["ranked"], c["cited"]) for c in contexts])
    test_of = {k: [i for i, c in enumerate(contexts) if c["fold"] == k] for k in folds}
    all_test = [i for k in folds for i in test_of[k]]
    print(f"fused (citewise eval --run): pooled R@10 {fused[all_test,0].mean():.3f} MRR {fused[all_test,1].mean():.3f} nDCG@10 {fused[all_test,2].mean():.3f}")
    sent = [i for i in all_test if contexts[i]["source"] == "acm-cr-sentence"]
    para = [i for i in all_test if contexts[i]["source"] == "acm-cr-paragraph"]

    shipped = np.load(f"{D}/scores-shipped.npz")["s"]
    VARIANTS = [("CE alone top20", 20, None), ("CE alone top100", 100, None), ("RR w0.5 top20", 20, 0.5), ("RR w1 top20", 20, 1.0),
                ("RR w1 top50", 50, 1.0), ("RR w2 top20", 20, 2.0), ("RR w1 top100", 100, 1.0)]


    def evaluate(S, rows, K, w):
        return np.array([metrics(reorder(contexts[i], S[i], K, w), contexts[i]["cited"]) for i in rows])


    def hard_auc(S, rows):
        pos, neg = [], []
        for i in rows:
            c = contexts[i]
            cited = set(c["cited"])
            for r, p in enumerate(c["ranked"][:20]):
                (pos if p in cited else neg).append(float(S[i][r]))
        return auc(pos, neg)


    def line(name, per_ctx, auc_v=None):
        d, lo, hi = boot(fused[all_test], per_ctx[all_test])
        m = per_ctx[all_test].mean(axis=0)
        by_fold = " / ".join(f"{per_ctx[test_of[k], 0].mean():.3f}" for k in folds)
        s = per_ctx[sent, 0].mean()
        p = per_ctx[para, 0].mean()
        extra = f" | {auc_v:.3f}" if auc_v is not None else " | "
        print(f"| {name} | {m[0]:.3f} ({d[0]:+.3f}, {lo[0]:+.3f}..{hi[0]:+.3f}) | {m[1]:.3f} ({d[1]:+.3f}, {lo[1]:+.3f}..{hi[1]:+.3f}) | "
              f"{m[2]:.3f} ({d[2]:+.3f}) | {by_fold} | {s:.3f} / {p:.3f}{extra} |")


    print("\n| arm | R@10 (Δ vs fused, 95 %) | MRR (Δ, 95 %) | nDCG@10 (Δ) | R@10 per fold | R@10 sentences / paragraphs | CE AUC true vs fused-top-20 others |")
    print("|---|---|---|---|---|---|---|")
    line("fused", fused)
    for vname, K, w in VARIANTS:
        per = np.zeros_like(fused)
        per[all_test] = evaluate(shipped, all_test, K, w)
        line(f"shipped CE, {vname}", per, hard_auc(shipped, all_test) if vname == "CE alone top20" else None)

    for cfg in [r for r in log["val"]]:
        z = np.load(f"{D}/scores-{cfg}.npz")
        S, ckpts = z["s"], list(z["ckpts"])
        labels = [str(c) for c in ckpts] + ["avg"]
        print(f"\n### {cfg} (checkpoints {labels[0]}..{labels[-2]} every {ckpts[1] - ckpts[0] if len(ckpts) > 1 else 0}, then end averaged with start)")
        for vname, K, w in VARIANTS:
            # Checkpoint chosen per fold on its held-out training papers (MRR of this variant).
            per = np.zeros_like(fused)
            chosen = []
            traj = []
            for fi, k in enumerate(folds):
                val = log["val"][cfg][str(k)] if str(k) in log["val"][cfg] else log["val"][cfg][k]
                best, best_m = 0, -1
                for j in range(S.shape[1]):
                    if np.isnan(S[fi, j]).all():
                        continue
                    m = evaluate(S[fi, j], val, K, w)[:, 1].mean()
                    if m > best_m + 1e-9:
                        best, best_m = j, m
                chosen.append(labels[best])
                per[test_of[k]] = evaluate(S[fi, best], test_of[k], K, w)
            sel_auc = None
            if vname == "CE alone top20":
                sel_auc = np.mean([hard_auc(S[fi, labels.index(chosen[fi])], test_of[k]) for fi, k in enumerate(folds)])
            line(f"{cfg}, {vname}, chosen on held-out papers ({','.join(chosen)})", per, sel_auc)
        # The trajectory on the test folds (for reading, not for choosing): RR w1 top20 and CE alone.
        for vname, K, w in [("RR w1 top20", 20, 1.0), ("CE alone top20", 20, None)]:
            row = []
            for j in range(S.shape[1]):
                per = np.zeros_like(fused)
                for fi, k in enumerate(folds):
                    per[test_of[k]] = evaluate(S[fi, j], test_of[k], K, w)
                row.append(f"{labels[j]}:{per[all_test,0].mean():.3f}/{per[all_test,1].mean():.3f}")
            print(f"trajectory {vname} (R@10/MRR): " + " ".join(row))
    print("\nseconds per fold run:", {f"{r['config']}/{r['fold']}": round(r["seconds"], 1) for r in log["runs"]})
    print("device:", log["device"])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prep")
    p.add_argument("--folds", required=True, help="in-field-folds.py --out (fold*/bench, fold*/learned-fused.run)")
    p.add_argument("--bench", default=os.path.join(here, "..", "..", "shared", "data", "acm-cr-dev"))
    p.add_argument("--models", default=os.environ.get("CITEWISE_MODELS", os.path.expanduser("~/.local/share/citewise/models")))
    p.add_argument("--base", default="paraphrase-minilm-l3-v2")
    p.add_argument("--out", required=True)
    p = sub.add_parser("train")
    p.add_argument("--data", required=True)
    p.add_argument("--repo", default=os.path.join(here, ".."))
    p.add_argument("--out", default=os.environ.get("OUT", "results"))
    p.add_argument("--smoke", action="store_true", help="a few contexts and steps (a CPU check of the script)")
    p = sub.add_parser("report")
    p.add_argument("--data", required=True)
    p.add_argument("--results", required=True)
    a = ap.parse_args()
    {"prep": prep, "train": train, "report": report}[a.step](a)


if __name__ == "__main__":
    main()

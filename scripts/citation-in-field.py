#!/usr/bin/env python3
"""The citation encoder adapted to a library's field, measured by fold on citing papers it never
saw (ACM-CR dev by default): the paper-side levers of design/in-field-learning.md. Four steps,
the second on a GPU machine:

    prep     (here) every pool paper's tokens as the citation channel encodes it
             (`bi_encoder::paper_text`, 128 tokens), the sentences of its abstract that lie
             inside those tokens, each fold context's tokens, cited papers and fused top 100
             (`in-field-folds.py`'s learned-fused run), citewise's own citation-channel lists to
             check the port against (`eval --stages citation --run`, fold*/citation.run), and
             the encoder's layers and the embeddings of the tokens used, in f16 (39 MB for
             ACM-CR, small enough to carry)
    train    (PyTorch, a GPU) fine-tunes the citation encoder in the settings of CONFIGS:
               ict          the library's own abstracts, no label: a sentence of a paper's
                            abstract is the query, the paper without it the positive (inverse
                            cloze task), the batch's other papers the negatives; one epoch
               ict-2, -3    the same run after two and three epochs
               labels       per fold, the other folds' contexts: context -> cited paper, a
                            fused-top-20 paper it does not cite as hard negative, in-batch
                            negatives; the checkpoint chosen on a fifth of those citing papers
                            held out (the start counts: "0" means "not published")
               ict+labels   labels, starting from ict
             and scores the channel alone (cosine over the whole pool) at each checkpoint.
             `ict` is the setting fixed beforehand to be measured in the pipeline: its paper
             vectors and layers come back (vectors-*.f16, layers-*.safetensors). With
             `--replay-labels K:N`, only `labels` for fold K, N steps (the step its held-out
             papers chose), its vectors and layers kept in OUT/foldK (45 MB: one fold a call)
    install  (here) the adapted layers into a models directory (the other models linked) and
             the returned vectors into a copy of the pool
    report   (here) the channel alone per setting against the shipped encoder, pooled and per
             fold, with paired bootstrap intervals

The pipeline with the adapted encoder is then measured by citewise itself: a models directory
whose `minilm-citation-v4` has the adapted layers, a copy of the pool whose citation vectors are
the returned ones (`examples/put_citation_vectors.rs`), and `in-field-folds.py` run over both:

    scripts/in-field-folds.py --pool /tmp/acmfull --out /tmp/f-acm --arms none,learned-fused
    for i in 0 1 2; do citewise eval --bench /tmp/f-acm/fold$i/bench --pool /tmp/acmfull \\
        --as-encoded --fused-only --stages citation --run /tmp/f-acm/fold$i/citation.run; done
    scripts/citation-in-field.py prep --folds /tmp/f-acm --out DIR
    python3 scripts/citation-in-field.py train --data DIR --out RESULTS    # on the GPU machine
    scripts/citation-in-field.py report --data DIR --results RESULTS
    scripts/citation-in-field.py install --data DIR --results RESULTS --models MODELS2 \\
        --pool /tmp/acmfull --pool-out /tmp/acm-ict
    CITEWISE_MODELS=MODELS2 scripts/in-field-folds.py --pool /tmp/acm-ict --out /tmp/f-acm-ict \\
        --arms none,learned-fused --against /tmp/f-acm

`--configs labels --every 50` measures only `labels` (a pool of 120k papers: a checkpoint scores
the whole pool). Such a pool's tokens and the encoder's weights do not fit one device call's
64 MiB together: carry prep's weights.safetensors.gz in one call and leave it in the machine's
/tmp, then link it into the data directory in the next (warm) call.

It needs torch and safetensors; prep needs tokenizers and safetensors.
"""
import argparse, gzip, json, os, random, re, shutil, subprocess, sys, time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fold_measure import bert_hidden, boot, metrics, report_setup, train_setup  # noqa: E402

ARM = "learned-fused"
ENCODER = "minilm-citation-v4"
MAX_TOKENS = 128  # bi_encoder::MAX_TOKENS
CLS, SEP, PAD = 101, 102, 0
STOPS = {1012, 1029, 999}  # ". ? !"


def read_folds(folds_dir):
    fold_of, runs, cit = {}, {}, {}
    folds = sorted(int(d[4:]) for d in os.listdir(folds_dir) if re.fullmatch(r"fold\d+", d))
    for i in folds:
        d = os.path.join(folds_dir, f"fold{i}")
        for l in gzip.open(os.path.join(d, "bench", "contexts.jsonl.gz"), "rt"):
            c = json.loads(l)
            if c.get("split") == "test":
                fold_of[c["id"]] = i
        for name, into in ((f"{ARM}.run", runs), ("citation.run", cit)):
            path = os.path.join(d, name)
            if os.path.exists(path):
                for line in open(path):
                    q, _, p, _, _, _ = line.split()
                    into.setdefault(q, []).append(p)
    return folds, fold_of, runs, cit


def prep(a):
    from safetensors.numpy import load_file, save
    from tokenizers import Tokenizer

    base = os.path.join(a.models, ENCODER)
    tok = Tokenizer.from_file(os.path.join(base, "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    ids = lambda s: tok.encode(s, add_special_tokens=False).ids if s else []
    check = Tokenizer.from_file(os.path.join(base, "tokenizer.json"))
    check.no_padding()
    check.enable_truncation(MAX_TOKENS)  # as citewise's BertTokenizer
    folds, fold_of, runs, cit = read_folds(a.folds)

    papers, pid = [], {}
    docs, spans = [], []  # doc tokens as encoded; (paper, start, end) of abstract sentences inside them
    for l in gzip.open(os.path.join(a.bench, "papers.jsonl.gz"), "rt"):
        d = json.loads(l)
        title, abstract = d.get("title") or "", d.get("abstract") or ""
        t, b = ids(title), ids(abstract)
        body = (t + ids(".") + b) if b else ids(f"{title}. ")
        doc = [CLS] + body[: MAX_TOKENS - 2] + [SEP]
        if len(papers) % 997 == 0:  # the token-level paper text is citewise's
            want = check.encode(f"{title}. {abstract}").ids
            assert doc == want, (d["id"], doc[:20], want[:20])
        pid[d["id"]] = len(papers)
        papers.append(d["id"])
        docs.append(doc)
        s = 1 + len(t) + 1  # the abstract's first token in doc
        end = len(doc) - 1
        start = s
        for j in range(s, end):
            if doc[j] in STOPS and (j + 1 == end or doc[j + 1] not in STOPS):
                if j + 1 - start >= 6:
                    spans.append((len(papers) - 1, start, j + 1))
                start = j + 1
    contexts = []
    for l in gzip.open(os.path.join(a.bench, "contexts.jsonl.gz"), "rt"):
        c = json.loads(l)
        if c["id"] not in fold_of:
            continue
        local = re.sub(r"\s+", " ", c["context"].replace("[CIT]", " ")).strip()
        contexts.append({"id": c["id"], "source": c["source"], "fold": fold_of[c["id"]],
                         "paper": (c.get("citing_title") or "").strip().lower() or c["citing_id"],
                         "q": check.encode(local).ids, "cited": [pid[p] for p in c["cited"] if p in pid],
                         "ranked": [pid[p] for p in runs.get(c["id"], [])[:100]],
                         "citation": [pid[p] for p in cit.get(c["id"], [])[:100]]})
    used = sorted({t for d in docs for t in d} | {t for c in contexts for t in c["q"]} | {PAD})
    remap = np.zeros(30522, dtype=np.int64)
    remap[used] = np.arange(len(used))
    flat = np.concatenate([remap[np.array(d)] for d in docs]).astype(np.uint16)
    offsets = np.cumsum([0] + [len(d) for d in docs]).astype(np.int64)
    for c in contexts:
        c["q"] = [int(remap[t]) for t in c["q"]]
    os.makedirs(a.out, exist_ok=True)
    np.savez_compressed(os.path.join(a.out, "pool.npz"), tokens=flat, offsets=offsets, spans=np.array(spans, dtype=np.int32))
    with gzip.open(os.path.join(a.out, "data.json.gz"), "wt") as f:
        json.dump({"contexts": contexts, "papers": papers, "pad": int(remap[PAD]), "cls": int(remap[CLS]), "sep": int(remap[SEP])}, f)
    w = load_file(os.path.join(base, "model.safetensors"))
    keep = {k: v.astype(np.float16) for k, v in w.items() if k != "embeddings.word_embeddings.weight"}
    keep["embeddings.word_embeddings.weight"] = w["embeddings.word_embeddings.weight"][used].astype(np.float16)
    with gzip.open(os.path.join(a.out, "weights.safetensors.gz"), "wb", compresslevel=6) as f:
        f.write(save(keep))  # gzip: 3 MB less to carry
    with_cit = sum(1 for c in contexts if c["citation"])
    print(f"{len(papers)} papers ({len(spans)} abstract sentences inside their 128 tokens), {len(contexts)} contexts in "
          f"{len(folds)} folds ({with_cit} with citewise's citation list), {len(used)} token ids used", file=sys.stderr)


def train(a):
    import torch
    import torch.nn.functional as F
    from safetensors.torch import load, save_file

    OUT, dev, data = train_setup(a)
    SMOKE = a.smoke
    contexts, PAD_ID, CLS_ID, SEP_ID = data["contexts"], data["pad"], data["cls"], data["sep"]
    z = np.load(os.path.join(a.data, "pool.npz"))
    flat, offsets, spans = z["tokens"].astype(np.int64), z["offsets"], z["spans"]
    docs = [flat[offsets[i]: offsets[i + 1]].tolist() for i in range(len(offsets) - 1)]
    if SMOKE:
        keep = sorted({p for c in contexts[::30] for p in c["cited"] + c["ranked"][:20] + c["citation"][:20]} | set(range(0, len(docs), 60)))
        contexts = contexts[::30]
    else:
        keep = list(range(len(docs)))
    keep_set = set(keep)
    spans = [tuple(s) for s in spans.tolist() if s[0] in keep_set]
    W0 = {k: v.float().to(dev) for k, v in load(gzip.open(os.path.join(a.data, "weights.safetensors.gz")).read()).items()}
    H = 384

    def forward(P, ids, mask):
        x = bert_hidden(P, ids, None, mask, layers=6)
        m = mask[..., None].float()
        v = (x.float() * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(v, dim=-1)

    def batch(seqs):
        L = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), L), PAD_ID, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, s in enumerate(seqs):
            ids[r, : len(s)] = torch.tensor(s)
            mask[r, : len(s)] = 1
        return ids.to(dev), mask.to(dev)

    def encode(P, seqs, bs=1024):
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        out = torch.empty(len(seqs), H)
        with torch.no_grad(), torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
            for s in range(0, len(order), bs):
                idx = order[s: s + bs]
                out[torch.tensor(idx)] = forward(P, *batch([seqs[i] for i in idx])).float().cpu()
        return out

    pool_docs = [docs[i] for i in keep]
    pool_index = torch.tensor(keep)

    def rank_all(P, rows=None):
        """Each context's top 100 papers by cosine (pool ids)."""
        V = encode(P, pool_docs).to(dev)
        Q = encode(P, [c["q"] for c in contexts]).to(dev)
        top = (Q @ V.T).topk(min(100, V.shape[0]), dim=1).indices.cpu()
        return pool_index[top].numpy().astype(np.int32), V

    def mean_metrics(top, rows):
        return np.array([metrics(top[i].tolist(), contexts[i]["cited"]) for i in rows]).mean(axis=0) if rows else np.zeros(3)

    log = {"device": torch.cuda.get_device_name() if dev == "cuda" else "cpu", "ids": [c["id"] for c in contexts], "runs": []}
    top0 = None
    if not a.replay_labels:
        t0 = time.time()
        top0, _ = rank_all(W0)
        log["encode_pool_seconds"] = time.time() - t0
        # Port check: the shipped encoder's top 10 against citewise's own citation list.
        agree = [len(set(top0[i][:10].tolist()) & set(c["citation"][:10])) / 10 for i, c in enumerate(contexts) if len(c["citation"]) >= 10]
        first = [int(top0[i][0] == c["citation"][0]) for i, c in enumerate(contexts) if c["citation"]]
        log["port_check"] = {"contexts": len(agree), "top10_overlap": float(np.mean(agree)) if agree else None,
                             "same_first": float(np.mean(first)) if first else None}
        print(f"port check: {log['port_check']}; pool encoded in {log['encode_pool_seconds']:.1f} s", flush=True)
    tops = {"shipped": top0}

    def mnrl(P, queries, positives, negatives=None, scale=20.0):
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
            q = forward(P, *batch(queries))
            d = forward(P, *batch(positives + (negatives or [])))
        s = (q @ d.T) * scale
        return F.cross_entropy(s, torch.arange(len(queries), device=dev))

    def trainable(P):
        names = [n for n in P if n.startswith("encoder.layer.")]
        for n in names:
            P[n].requires_grad_(True)
        return names

    def schedule(opt, steps):
        """Linear warm-up over a tenth of the steps, then linear decay to 0."""
        warm = max(1, steps // 10)
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))

    def keep_for_pipeline(P, V, out):
        """Paper vectors (f16, in two halves) and layers (f16) of an adapted encoder, for `install`."""
        os.makedirs(out, exist_ok=True)
        v16 = V.cpu().numpy().astype(np.float16)
        half = (len(v16) + 1) // 2
        v16[:half].tofile(f"{out}/vectors-0.f16")
        v16[half:].tofile(f"{out}/vectors-1.f16")
        layers = {n: t.detach().cpu().to(torch.float16).contiguous() for n, t in P.items() if n.startswith("encoder.layer.")}
        save_file({n: t for n, t in layers.items() if int(n.split(".")[2]) < 3}, f"{out}/layers-a.safetensors")
        save_file({n: t for n, t in layers.items() if int(n.split(".")[2]) >= 3}, f"{out}/layers-b.safetensors")

    folds = sorted({c["fold"] for c in contexts})
    STEPS, EVERY, LB, LR = (200, a.every, 32, 2e-5) if not SMOKE else (4, 2, 4, 2e-5)
    CONFIGS = set(a.configs.split(","))
    if "ict+labels" in CONFIGS:
        CONFIGS.add("ict")

    def fine_tune_fold(start, k, steps, checkpoint=None):
        """`labels` for fold k: from `start`, on the other folds' contexts but a fifth of their citing
        papers (held out to choose the checkpoint), `steps` steps; `checkpoint(step, P, val, test)`
        every EVERY steps, the start included."""
        r = random.Random(17 + k)
        train_papers = sorted({c["paper"] for c in contexts if c["fold"] != k})
        r.shuffle(train_papers)
        held = set(train_papers[: max(1, len(train_papers) // 5)])
        tr = [c for c in contexts if c["fold"] != k and c["paper"] not in held and c["cited"]]
        val = [i for i, c in enumerate(contexts) if c["paper"] in held and c["fold"] != k]
        test = [i for i, c in enumerate(contexts) if c["fold"] == k]
        P = {n: t.clone() for n, t in start.items()}
        names = trainable(P)
        opt = torch.optim.AdamW([P[n] for n in names], lr=LR, weight_decay=0.01)
        for step in range(steps + 1):
            if checkpoint and step % EVERY == 0:
                checkpoint(step, P, val, test)
            if step == steps:
                break
            chosen_c = [r.choice(tr) for _ in range(LB)]
            qs = [c["q"] for c in chosen_c]
            pos = [docs[r.choice(c["cited"])] for c in chosen_c]
            negs = []
            for c in chosen_c:
                n = [p for p in c["ranked"][:20] if p not in set(c["cited"]) and p in keep_set]
                negs.append(docs[r.choice(n)] if n else docs[r.choice(keep)])
            loss = mnrl(P, qs, pos, negs)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return P, tr, test

    if a.replay_labels:
        # Each fold's `labels` again for the steps its held-out papers chose (on the GPU run), its
        # paper vectors and layers kept for `install` (a CPU can do this: no checkpoint is scored).
        for k, steps in (map(int, x.split(":")) for x in a.replay_labels.split(",")):
            t0 = time.time()
            P, tr, test = fine_tune_fold(W0, k, steps)
            top, V = rank_all(P)
            keep_for_pipeline(P, V, f"{OUT}/fold{k}")
            print(f"labels fold {k}: {steps} steps on {len(tr)} contexts, channel alone R@10/MRR/nDCG@10 "
                  f"{mean_metrics(top, test).round(3).tolist()}, {time.time() - t0:.1f} s", flush=True)
        return

    # ---- ict: the library's abstracts, no label
    primary = None
    if "ict" in CONFIGS:
        ICT_BATCH, ICT_LR, EPOCHS = (128, 2e-5, 3) if not SMOKE else (16, 2e-5, 1)
        rng = random.Random(7)
        P = {n: t.clone() for n, t in W0.items()}
        names = trainable(P)
        per_epoch = len(spans) // ICT_BATCH if not SMOKE else 4
        opt = torch.optim.AdamW([P[n] for n in names], lr=ICT_LR, weight_decay=0.01)
        sched = schedule(opt, per_epoch * EPOCHS)
        ict_states = {}
        t0 = time.time()
        for epoch in range(EPOCHS):
            order = spans[:]
            rng.shuffle(order)
            for b in range(per_epoch):
                chunk = order[b * ICT_BATCH: (b + 1) * ICT_BATCH]
                seen, qs, ds = set(), [], []
                for p, s, e in chunk:
                    if p in seen:
                        continue
                    seen.add(p)
                    doc = docs[p]
                    qs.append([CLS_ID] + doc[s:e] + [SEP_ID])
                    ds.append(doc[:s] + doc[e:] if rng.random() < 0.9 else doc)
                loss = mnrl(P, qs, ds)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
            ict_states[epoch + 1] = {n: P[n].detach().clone() for n in P}
            print(f"ict epoch {epoch + 1}: {per_epoch} steps of {ICT_BATCH}, loss {loss.item():.3f}, {time.time() - t0:.1f} s", flush=True)
        log["runs"].append({"config": "ict", "steps_per_epoch": per_epoch, "batch": ICT_BATCH, "seconds": time.time() - t0})
        primary = ict_states[1]
        t0 = time.time()
        tops["ict"], V = rank_all(primary)
        if EPOCHS >= 3:
            tops["ict-3"], _ = rank_all(ict_states[3])
            tops["ict-2"], _ = rank_all(ict_states[2])
        # What comes back of the setting fixed beforehand: its paper vectors and layers.
        if not SMOKE:
            keep_for_pipeline(primary, V, OUT)
        del V

    # ---- labels, ict+labels: per fold, the other folds' contexts
    for cfg, start in (("labels", W0), ("ict+labels", primary)):
        if cfg not in CONFIGS:
            continue
        top = np.zeros_like(top0)
        for k in folds:
            t0 = time.time()
            traj, best = [], [0, -1.0, None]

            def checkpoint(step, P, val, test):
                t, _ = rank_all(P)
                m = mean_metrics(t, val)[1]
                traj.append((step, float(m), mean_metrics(t, test).tolist()))
                if m > best[1] + 1e-9:
                    best[:] = [step, m, t]

            _, tr, test = fine_tune_fold(start, k, STEPS, checkpoint)
            top[test] = best[2][test]
            log["runs"].append({"config": cfg, "fold": k, "train_contexts": len(tr), "chosen": best[0], "trajectory": traj, "seconds": time.time() - t0})
            print(f"{cfg} fold {k}: {len(tr)} contexts, chosen step {best[0]} (R@10/MRR/nDCG@10 on the fold "
                  f"{mean_metrics(best[2], test).round(3).tolist()}, at the start {mean_metrics(top0, test).round(3).tolist()}), {time.time() - t0:.1f} s", flush=True)
        tops[cfg] = top
    np.savez_compressed(f"{OUT}/tops.npz", **{k.replace("+", "_"): v for k, v in tops.items()})
    json.dump(log, open(f"{OUT}/log.json", "w"))
    print("done", flush=True)


def report(a):
    D = a.results
    log, contexts, data, folds = report_setup(a)
    tops = np.load(f"{D}/tops.npz")

    per = {k: np.array([metrics(tops[k][i].tolist(), c["cited"]) for i, c in enumerate(contexts)]) for k in tops.files}
    if any(c["citation"] for c in contexts):
        per["citewise citation channel"] = np.array([metrics(c["citation"], c["cited"]) for c in contexts])
    per["fused (learned-fused run)"] = np.array([metrics(c["ranked"], c["cited"]) for c in contexts])
    sent = [i for i, c in enumerate(contexts) if c["source"].endswith("sentence")]
    para = [i for i, c in enumerate(contexts) if c["source"].endswith("paragraph")]
    base = per["shipped"]
    by_source = lambda m: " / ".join(f"{m[rows, 0].mean():.3f}" if rows else "–" for rows in (sent, para))
    print(f"port check: {log['port_check']}; pool encoded in {log['encode_pool_seconds']:.1f} s on {log['device']}")
    print("\n| citation channel alone | R@10 (Δ vs shipped, 95 %) | MRR (Δ, 95 %) | nDCG@10 (Δ) | R@10 per fold | R@10 sentences / paragraphs |")
    print("|---|---|---|---|---|---|")
    for name, m in per.items():
        d, lo, hi = boot(base, m)
        mm = m.mean(axis=0)
        by_fold = " / ".join(f"{m[[i for i, c in enumerate(contexts) if c['fold'] == k], 0].mean():.3f}" for k in folds)
        print(f"| {name} | {mm[0]:.3f} ({d[0]:+.3f}, {lo[0]:+.3f}..{hi[0]:+.3f}) | {mm[1]:.3f} ({d[1]:+.3f}, {lo[1]:+.3f}..{hi[1]:+.3f}) | "
              f"{mm[2]:.3f} ({d[2]:+.3f}) | {by_fold} | {by_source(m)} |")
    for r in log["runs"]:
        if "trajectory" in r:
            t = " ".join(f"{s}:{v[0]:.3f}/{v[1]:.3f}" for s, _, v in r["trajectory"])
            print(f"{r['config']} fold {r['fold']}: chosen {r['chosen']} on held-out training papers; on the fold (R@10/MRR) {t}; {r['seconds']:.0f} s")
        else:
            print(f"{r['config']}: {r}")


def install(a):
    """The adapted encoder into a models directory (the other models linked), and a copy of the
    pool whose citation vectors are the returned ones."""
    from safetensors.numpy import load_file, save_file

    src = os.path.join(a.from_models, ENCODER)
    os.makedirs(a.models, exist_ok=True)
    for name in os.listdir(a.from_models):
        if name != ENCODER and not os.path.exists(os.path.join(a.models, name)):
            os.symlink(os.path.join(a.from_models, name), os.path.join(a.models, name))
    dst = os.path.join(a.models, ENCODER)
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f != "model.safetensors":
            shutil.copy(os.path.join(src, f), dst)
    w = load_file(os.path.join(src, "model.safetensors"))
    for part in ("layers-a", "layers-b"):
        for k, v in load_file(os.path.join(a.results, f"{part}.safetensors")).items():
            assert k in w and w[k].shape == v.shape, k
            w[k] = v.astype(np.float32)
    save_file(w, os.path.join(dst, "model.safetensors"))
    data = json.load(gzip.open(os.path.join(a.data, "data.json.gz"), "rt"))
    v = np.concatenate([np.fromfile(os.path.join(a.results, f"vectors-{i}.f16"), dtype=np.float16) for i in (0, 1)]).astype(np.float32)
    v = v.reshape(len(data["papers"]), -1)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    if os.path.exists(a.pool_out):
        sys.exit(f"{a.pool_out} exists")
    shutil.copytree(a.pool, a.pool_out, ignore=shutil.ignore_patterns("citation-vectors", "write.lock"))
    raw = os.path.join(a.pool_out, "citation-vectors.raw")
    v.tofile(raw)
    with open(raw + ".ids", "w") as f:
        f.write("\n".join(data["papers"]) + "\n")
    subprocess.run(["cargo", "run", "--release", "--example", "put_citation_vectors", "--", a.pool_out, raw, raw + ".ids",
                    os.path.join(a.pool, "citation-vectors")], check=True)
    os.remove(raw)
    os.remove(raw + ".ids")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    models = os.environ.get("CITEWISE_MODELS", os.path.expanduser("~/.local/share/citewise/models"))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prep")
    p.add_argument("--folds", required=True, help="in-field-folds.py --out (fold*/bench, fold*/learned-fused.run, fold*/citation.run)")
    p.add_argument("--bench", default=os.path.join(here, "..", "..", "shared", "data", "acm-cr-dev"))
    p.add_argument("--models", default=models)
    p.add_argument("--out", required=True)
    p = sub.add_parser("train")
    p.add_argument("--data", required=True)
    p.add_argument("--out", default=os.environ.get("OUT", "results"))
    p.add_argument("--smoke", action="store_true", help="a few contexts, papers and steps (a CPU check of the script)")
    p.add_argument("--configs", default="ict,labels,ict+labels", help="which settings (ict also gives ict-2 and ict-3)")
    p.add_argument("--every", type=int, default=25, help="`labels`: score a checkpoint every N steps")
    p.add_argument("--replay-labels", metavar="K:N,..", help="only `labels`: fold K for N steps (its chosen ones); keep its vectors and layers (OUT/foldK)")
    p = sub.add_parser("report")
    p.add_argument("--data", required=True)
    p.add_argument("--results", required=True)
    p = sub.add_parser("install")
    p.add_argument("--data", required=True)
    p.add_argument("--results", required=True)
    p.add_argument("--from-models", default=models)
    p.add_argument("--models", required=True, help="a new models directory: the adapted encoder, the others linked")
    p.add_argument("--pool", required=True)
    p.add_argument("--pool-out", required=True)
    a = ap.parse_args()
    {"prep": prep, "train": train, "report": report, "install": install}[a.step](a)


if __name__ == "__main__":
    main()

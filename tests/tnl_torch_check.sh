#!/usr/bin/env bash
# TransNormerLLM end to end against the PyTorch reference of the published model
# (tools/peers/transnormerllm_torch.py): random checkpoints in the published layout (a tied
# pytorch_model.bin in f32; model.safetensors in bf16), converted by tools/convert/transnormerllm.py,
# run by `rill generate` on prompts of 1, 300 and 5,000 tokens and 6 decoded tokens: the logits
# after the prompt and after every decoded token must match within 1e-4 relative. Then folders the
# converter must refuse, each with a message naming the problem. Exit 77 without python3-torch.
#   tests/tnl_torch_check.sh RILL_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
rill=$1
src=$2
work=$3
py=${RILL_PYTHON:-/usr/bin/python3}  # RILL_PYTHON: another interpreter with PyTorch
$py -c "import torch" 2>/dev/null || { echo "python3-torch is not installed: not checked"; exit 77; }
ref=$src/tools/peers/transnormerllm_torch.py
convert=$src/tools/convert/transnormerllm.py
rm -rf "$work"
mkdir -p "$work"
cd "$work"
$py -c "
import random; random.seed(1)
text = ''.join(random.choice('abcdefghijklmnopqrstuvwxyz ,.') for _ in range(5000))
for n in (1, 300, 5000): open('prompt%d.txt' % n, 'w').write(text[:n])"

check() {  # check FOLDER DTYPE: convert, generate, compare for every prompt length
  local pub=$1 dtype=$2
  $py "$convert" --model "$pub" --out "$pub-rill" --dtype "$dtype" > /dev/null
  for n in 1 300 5000; do
    "$rill" generate --config "$pub-rill/config.json" --weights "$pub-rill/model.safetensors" --prompt-file "prompt$n.txt" \
      --tokens 6 --temperature 0 --segment 2048 --export-logits "$pub-l$n.safetensors" > /dev/null 2>&1
    echo -n "$pub ($dtype weights), prompt $n: "
    $py "$ref" --model "$pub" --check "$pub-l$n.safetensors"
  done
}
$py "$ref" make --out bin-f32 --seed 3 --format bin > /dev/null
check bin-f32 f32
$py "$ref" make --out st-bf16 --seed 4 --format safetensors --dtype bf16 > /dev/null
check st-bf16 bf16

refused() {  # refused FOLDER PATTERN
  if $py "$convert" --model "$1" --out "$1-rill" 2> "$1.err"; then echo "$1 was converted"; exit 1; fi
  grep -q "$2" "$1.err" || { cat "$1.err"; echo "$1: the error does not say '$2'"; exit 1; }
  echo "refused $1: $(cat "$1.err")"
}
mkdir -p empty && echo '{}' > empty/config.json
refused empty "holds no weights"
cp -r bin-f32 biased && sed -i 's/"bias": false/"bias": true/' biased/config.json
refused biased "'bias' is true"
cp -r bin-f32 wide && sed -i 's/"hidden_dim": 32/"hidden_dim": 64/' wide/config.json
refused wide "hidden_dim 64 differs"
$py - <<'PY'
import torch
sd = torch.load("bin-f32/pytorch_model.bin")
for name, edit in (("missing", lambda d: d.pop("model.layers.1.channel_mixer.l2.weight")),
                   ("extra", lambda d: d.__setitem__("model.layers.0.token_mixer.norm.weight", torch.ones(32)))):
    import shutil, os
    shutil.copytree("bin-f32", name)
    d = dict(sd)
    edit(d)
    torch.save(d, os.path.join(name, "pytorch_model.bin"))
bad = dict(sd)
bad["model.layers.2.token_mixer.out_proj.weight"] = sd["model.layers.2.token_mixer.out_proj.weight"].clone()
bad["model.layers.2.token_mixer.out_proj.weight"][3, 5] = float("nan")
import shutil; shutil.copytree("bin-f32", "nan")
torch.save(bad, "nan/pytorch_model.bin")
PY
refused missing "missing tensor 'model.layers.1.channel_mixer.l2.weight'"
refused extra "unknown tensors .*token_mixer.norm.weight"
refused nan "non-finite value at \[3, 5\]"
mkdir -p listed && cp bin-f32/config.json listed/ && $py -c "
import struct; h = b'[1, 2]'; open('listed/model.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h)"
refused listed "the header is not a JSON object"
# --out reaching --model through a link would overwrite the published checkpoint.
ln -sfn bin-f32 bin-link
refused_out() {  # refused_out FOLDER OUT PATTERN [DTYPE]
  if $py "$convert" --model "$1" --out "$2" --dtype "${4:-f32}" 2> "$1.err"; then echo "$1 was converted into $2"; exit 1; fi
  grep -q -e "$3" "$1.err" || { cat "$1.err"; echo "$1: the error does not say '$3'"; exit 1; }
  echo "refused $1 into $2: $(cat "$1.err")"
}
refused_out bin-f32 bin-link "--out must differ from --model"
# A weight past f16's range would be stored infinite; the same weight fits bf16.
$py - <<'PY'
import shutil, torch
shutil.copytree("bin-f32", "huge")
sd = torch.load("huge/pytorch_model.bin")
sd["model.layers.0.channel_mixer.l1.weight"][2, 1] = 70000.0
sd["decoder.version"] = torch.tensor([3.0])  # bookkeeping the published loader ignores
torch.save(sd, "huge/pytorch_model.bin")
PY
refused_out huge huge-rill "'layers.0.wu' holds 70000 at \[1, 2\], past f16's range" f16
(umask 022 && $py "$convert" --model huge --out huge-rill --dtype bf16 > /dev/null)
# LRPE angles stay f32 in a bf16 conversion; the files get the mode a plain write would (0600 before).
$py - <<'PY'
import json, struct
with open("st-bf16-rill/model.safetensors", "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
kinds = {k: v["dtype"] for k, v in header.items() if k != "__metadata__"}
assert kinds["layers.0.lrpe_theta"] == "F32" and kinds["layers.2.lrpe_theta"] == "F32", kinds
assert kinds["layers.0.wq"] == "BF16", kinds
PY
for f in huge-rill/model.safetensors huge-rill/config.json; do
  [ "$(stat -c %a "$f")" = 644 ] || { echo "$f has mode $(stat -c %a "$f") under umask 022"; exit 1; }
done
# A tokenizer left in --out by an earlier conversion is not passed off as this model's.
echo stale > st-bf16-rill/tokenizer.model
$py "$convert" --model st-bf16 --out st-bf16-rill --dtype bf16 | grep '"tokenizer": false' >/dev/null || { echo "a stale tokenizer was kept"; exit 1; }
test ! -e st-bf16-rill/tokenizer.model || { echo "st-bf16-rill/tokenizer.model is still there"; exit 1; }
echo "rill matches the PyTorch TransNormerLLM"

"""The Hugging Face transformers oracle for model/llama's reference forward.

Reads what `DAMASCUS_HF_DUMP=DIR go test -run TestDumpForHF ./model/llama`
writes (weights dequantized by our code, token ids, our reference's hidden
states and logits), loads the weights into transformers' LlamaForCausalLM in
float64, and compares every layer's output at every position. GGUF stores
Q and K rows permuted for adjacent-pair RoPE (llama.cpp's converter); they
are un-permuted here for transformers' rotate-half RoPE.

usage: python3 hf_oracle.py DIR [MIN_COSINE]   (exit 1 below MIN_COSINE)
"""
import json
import sys

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    d = sys.argv[1]
    min_cos = float(sys.argv[2]) if len(sys.argv) > 2 else 0.99999
    meta = json.load(open(f"{d}/config.json"))
    c = meta["config"]
    W = np.fromfile(f"{d}/weights.f32", dtype="<f4")
    entries = {e["name"]: e for e in meta["tensors"]}

    def tensor(name):
        e = entries[name]
        a = W[e["offset"]: e["offset"] + e["rows"] * e["cols"]].astype(np.float64)
        return torch.from_numpy(a.reshape(e["rows"], e["cols"]) if e["rows"] > 1 else a)

    def unpermute(w, n_head):
        rows, cols = w.shape
        return w.reshape(n_head, rows // n_head // 2, 2, cols).transpose(1, 2).reshape(rows, cols)

    rope_scaling = None
    if meta.get("rope_freqs"):
        raise SystemExit("rope_freqs (Llama 3.1 scaling) is not mapped to transformers' rope_scaling here")
    cfg = LlamaConfig(
        vocab_size=c["Vocab"], hidden_size=c["Dim"], intermediate_size=c["FFNDim"],
        num_hidden_layers=c["Layers"], num_attention_heads=c["Heads"], num_key_value_heads=c["KVHeads"],
        head_dim=c["HeadDim"], rms_norm_eps=c["RMSEps"], rope_theta=c["RopeBase"],
        max_position_embeddings=c["ContextLength"], tie_word_embeddings=meta["tied"],
        attention_bias=False, mlp_bias=False, rope_scaling=rope_scaling,
    )
    model = LlamaForCausalLM(cfg).to(torch.float64).eval()
    sd = {"model.embed_tokens.weight": tensor("token_embd"), "model.norm.weight": tensor("output_norm"),
          "lm_head.weight": tensor("output")}
    for i in range(c["Layers"]):
        p, q = f"blk.{i}.", f"model.layers.{i}."
        sd[q + "input_layernorm.weight"] = tensor(p + "attn_norm")
        sd[q + "post_attention_layernorm.weight"] = tensor(p + "ffn_norm")
        sd[q + "self_attn.q_proj.weight"] = unpermute(tensor(p + "attn_q"), c["Heads"])
        sd[q + "self_attn.k_proj.weight"] = unpermute(tensor(p + "attn_k"), c["KVHeads"])
        sd[q + "self_attn.v_proj.weight"] = tensor(p + "attn_v")
        sd[q + "self_attn.o_proj.weight"] = tensor(p + "attn_output")
        sd[q + "mlp.gate_proj.weight"] = tensor(p + "ffn_gate")
        sd[q + "mlp.up_proj.weight"] = tensor(p + "ffn_up")
        sd[q + "mlp.down_proj.weight"] = tensor(p + "ffn_down")
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if "rotary" not in m]
    if missing or unexpected:
        raise SystemExit(f"state dict: missing {missing}, unexpected {unexpected}")

    tokens = meta["tokens"]
    n, L, D, V = len(tokens), c["Layers"], c["Dim"], c["Vocab"]
    ours_h = np.fromfile(f"{d}/hidden.f32", dtype="<f4").astype(np.float64).reshape(n, L, D)
    ours_l = np.fromfile(f"{d}/logits.f32", dtype="<f4").astype(np.float64).reshape(n, V)
    with torch.no_grad():
        out = model(torch.tensor([tokens]), output_hidden_states=True)
    hs = [h[0].numpy() for h in out.hidden_states]  # [0] embeddings, [L] after the final norm
    norm_w = tensor("output_norm").numpy()

    def rmsnorm(x):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + c["RMSEps"]) * norm_w

    def compare(a, b):
        cos = (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
        return cos.min(), np.abs(a - b).max()

    worst = 1.0
    print(f"transformers {__import__('transformers').__version__}, torch {torch.__version__}, float64, {n} positions")
    for layer in range(L):
        ours = ours_h[:, layer]
        theirs = hs[layer + 1]
        name = f"layer {layer}"
        if layer == L - 1:  # transformers' last hidden state is after the final norm
            ours, name = rmsnorm(ours), f"layer {layer} (normed)"
        cos, mad = compare(ours, theirs)
        worst = min(worst, cos)
        print(f"{name:20s} min cosine {cos:.10f}  max-abs {mad:.3g}")
    cos, mad = compare(ours_l, out.logits[0].numpy())
    worst = min(worst, cos)
    top1 = (ours_l.argmax(-1) == out.logits[0].numpy().argmax(-1)).mean()
    print(f"{'logits':20s} min cosine {cos:.10f}  max-abs {mad:.3g}  top-1 agreement {100 * top1:.1f}%")
    if worst < min_cos:
        print(f"FAIL: cosine {worst:.10f} < {min_cos}")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()

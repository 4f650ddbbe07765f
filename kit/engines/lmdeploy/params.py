"""The parameters LMDeploy's `Eagle3LlamaForCausalLM` builds for a config (every release read).

One decoder layer under `model.midlayer` (merged `qkv_proj` reading 2H, `gate_up_proj`), an fc of
exactly 3 target states without bias, and vocabulary rows as the config says: no padding. The
embedding is a plain `nn.Embedding` (random normal init, replaced by the target's when the
checkpoint has none); linear layers start as `torch.empty`; `draft_id_to_target_id` is a zero
parameter of `draft_vocab_size` the loader fills with absolute target ids.
"""

from __future__ import annotations

from kit.checkpoint.config import DraftConfig
from kit.engines.base import EngineRelease
from kit.engines.lmdeploy.config import EAGLE3, is_mla, num_aux
from kit.engines.vocab import Init, ParamSpec

# The module's own lines: embed :88-92, midlayer :95 (qkv 2H, bias=False :36-46, hidden_norm
# :48), fc :97-103, norm :105, lm_head :177-181, draft_id_to_target_id :182-185 (0.11.0; one
# line later in 0.15.0 and 0.18.0). The decoder layer's o_proj / MLP come from models/llama.py
# LlamaDecoderLayer (o_proj bias = attention_bias; EAGLE-3 drafts set no mlp_bias).
SOURCE = EAGLE3 + " Eagle3LlamaForCausalLM.__init__ (0.11.0, 0.15.0, 0.18.0)"


def engine_params(cfg: DraftConfig, release: EngineRelease) -> list[ParamSpec]:
    """Every parameter of `Eagle3LlamaForCausalLM`, with shapes and inits."""
    H, V, Ht = cfg.hidden_size, cfg.vocab_size, cfg.target_width
    vd = cfg.effective_draft_vocab
    U = Init.UNINITIALIZED
    K = num_aux(cfg, release)
    if is_mla(cfg, release):
        return _mla(cfg, K)
    return [
        ParamSpec("model.embed_tokens.weight", (V, H), Init.RANDOM, rows=V),
        *_midlayer(cfg),
        ParamSpec("model.fc.weight", (H, K * Ht), U),
        ParamSpec("model.norm.weight", (H,), Init.ONES),
        ParamSpec("lm_head.weight", (vd, H), U, rows=vd),
        ParamSpec("draft_id_to_target_id", (vd,), Init.ZEROS),
    ]


def _midlayer(cfg: DraftConfig) -> list[ParamSpec]:
    """`Eagle3LlamaDecoderLayer`: a Llama decoder layer whose attention reads [embeds ‖ hidden]."""
    H, hd, inter = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    q, kv = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd
    p, U = "model.midlayer.", Init.UNINITIALIZED
    out = [
        ParamSpec(p + "self_attn.qkv_proj.weight", (q + 2 * kv, 2 * H), U,
                  shards=(("q", q), ("k", kv), ("v", kv))),
        ParamSpec(p + "self_attn.o_proj.weight", (H, q), U),
    ]  # fmt: skip
    if cfg.raw.get("attention_bias"):
        out.append(ParamSpec(p + "self_attn.o_proj.bias", (H,), U))
    out += [
        ParamSpec(p + "mlp.gate_up_proj.weight", (2 * inter, H), U,
                  shards=((0, inter), (1, inter))),
        ParamSpec(p + "mlp.down_proj.weight", (H, inter), U),
    ]  # fmt: skip
    return [
        *out,
        ParamSpec(p + "input_layernorm.weight", (H,), Init.ONES),
        ParamSpec(p + "hidden_norm.weight", (H,), Init.ONES),
        ParamSpec(p + "post_attention_layernorm.weight", (H,), Init.ONES),
    ]


MLA_KV_B = (
    "kv_b_proj: the checkpoint's up-projection, split at load into the kc and vc batched "
    "matmuls (kimi_k25_eagle3.py:579-592, 0.18.0); tracked here under the checkpoint's name"
)


def _mla(cfg: DraftConfig, k: int) -> list[ParamSpec]:
    """`Eagle3DeepseekV2ForCausalLM` (0.18.0 pytorch/models/kimi_k25_eagle3.py): embedding,
    optional per-aux fc_norm, fc (bias with `bias`), one MLA layer under `model.midlayer`, norm,
    the draft-vocabulary head and the absolute token map. The layer's q / kv down-projections are
    one merged parameter reading 2H (`fused_qkv_a_proj_with_mqa`, shards q and kv, :119-131);
    `kv_b_proj` becomes two batched matmuls, kept as one entry here (`MLA_KV_B`)."""
    r = cfg.raw
    H, V, Ht, nH = cfg.hidden_size, cfg.vocab_size, cfg.target_width, cfg.num_attention_heads
    vd, inter = cfg.effective_draft_vocab, cfg.intermediate_size
    ql, kvl = int(r.get("q_lora_rank") or 0), int(r.get("kv_lora_rank") or 0)
    nope, rope = int(r.get("qk_nope_head_dim") or 0), int(r.get("qk_rope_head_dim") or 0)
    vh = int(r.get("v_head_dim") or 0)
    U, ONES, p = Init.UNINITIALIZED, Init.ONES, "model.midlayer."
    a = p + "self_attn."
    out = [ParamSpec("model.embed_tokens.weight", (V, H), Init.RANDOM, rows=V)]
    if cfg.fc_norm:
        out += [ParamSpec(f"model.fc_norm.{j}.weight", (Ht,), ONES) for j in range(k)]
    out.append(ParamSpec("model.fc.weight", (H, k * Ht), U))
    if cfg.bias:
        out.append(ParamSpec("model.fc.bias", (H,), U))
    return [
        *out,
        ParamSpec(a + "fused_qkv_a_proj_with_mqa.weight", (ql + kvl + rope, 2 * H), U,
                  shards=(("q", ql), ("kv", kvl + rope))),
        ParamSpec(a + "q_a_layernorm.weight", (ql,), ONES),
        ParamSpec(a + "q_b_proj.weight", (nH * (nope + rope), ql), U),
        ParamSpec(a + "kv_a_layernorm.weight", (kvl,), ONES),
        ParamSpec(a + "kv_b_proj.weight", (nH * (nope + vh), kvl), U, unused=""),
        ParamSpec(a + "o_proj.weight", (H, nH * vh), U),
        ParamSpec(p + "mlp.gate_up_proj.weight", (2 * inter, H), U,
                  shards=((0, inter), (1, inter))),
        ParamSpec(p + "mlp.down_proj.weight", (H, inter), U),
        ParamSpec(p + "input_layernorm.weight", (H,), ONES),
        ParamSpec(p + "hidden_norm.weight", (H,), ONES),
        ParamSpec(p + "post_attention_layernorm.weight", (H,), ONES),
        ParamSpec("model.norm.weight", (H,), ONES),
        ParamSpec("lm_head.weight", (vd, H), U, rows=vd),
        ParamSpec("draft_id_to_target_id", (vd,), Init.IDENTITY),  # :95-98, :411-414
    ]  # fmt: skip

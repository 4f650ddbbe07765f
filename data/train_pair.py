"""Train the bundled target + EAGLE-3 draft pair on CPU (`python data/train_pair.py`).

The pair exists so that the kit can measure, offline, what acceptance a correctly wired draft
reaches and what each fault costs (`kit/offline_acceptance/`). Everything here is deterministic: a seeded
word-level corpus (nothing downloaded), fixed step budgets (not wall-time budgets) and one CPU
thread, so rerunning the script rewrites the same weights.

Stages (each writes under `--out`, default `data/pair`):
  target  a transformers `LlamaForCausalLM` (8 layers, hidden 128) on the corpus
  draft   an EAGLE-3 draft (`kit.tracing.draft.Eagle3Draft`) on the target's aux hidden states at the
          default layers `[2, n//2, n-3]` = `[2, 4, 5]` (state after k layers), unrolled over
          k = 5 steps (EAGLE-3 training-time test), saved in the speculators 0.9.0 layout
  prompts held-out line-completion prompts (a corpus seed never used in training)
  tokenizer  the target's tokenizer files alone (also written by `target`), chat template included
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections.abc import Iterator
from pathlib import Path

import torch
from safetensors.torch import save_file

from kit.checkpoint.config import parse_draft_config
from kit.checkpoint.formats import speculators_config
from kit.tracing.draft import ChainCache, Eagle3Draft, build_draft

OUT = Path(__file__).resolve().parent / "pair"
SEED_TRAIN, SEED_VALID, SEED_PROMPTS = 1234, 99, 2026
VOCAB_SIZE = 512  # ~300 real words padded, so the draft can keep a reduced vocab with d2t
DRAFT_VOCAB = 256
SEQ = 64
TARGET_LAYERS = 8
AUX_LAYERS = [2, TARGET_LAYERS // 2, TARGET_LAYERS - 3]  # speculators/vLLM default, after k layers
TTT_STEPS = 5

# ---------------------------------------------------------------------------------------------
# Corpus: lines of a few kinds a small model can learn (no copy, reverse or arithmetic).


def _words(text: str) -> list[str]:
    return text.split()


DAYS = _words("monday tuesday wednesday thursday friday saturday sunday")
MONTHS = _words(
    "january february march april may june july august september october november december"
)
LETTERS = list("abcdefghijklmnopqrstuvwxyz")
NUMBERS = [str(i) for i in range(100)]
ADJ = _words(
    "big small red blue green old young happy sad quick slow bright dark quiet loud tall short "
    "warm cold soft"
)
NOUN = _words(
    "cat dog bird fish fox bear horse mouse king queen boy girl farmer baker child wolf owl frog "
    "tree river"
)
VERB = _words("sees likes finds follows helps meets watches chases feeds calls")
PLACE = _words("forest village garden castle market river hill lake field bridge")
SPELL = _words("cat dog bird fish fox bear owl frog king queen tree lake hill wolf")
KEYWORDS = [
    *_words(
        "the a and in near count from days after months letters spell remember recall : . , then"
    ),
    "<nl>",
]
SPECIALS = ["<pad>", "<bos>", "<unk>"]
# The chat template's role and end-of-turn markers take the last ids, which no corpus line uses:
# the pair never trained on them, as a draft trained on raw text never sees a served template.
CHAT_TOKENS = ["<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> "
    "{% endfor %}{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def vocabulary() -> list[str]:
    """Specials first, then words interleaved with unused ids, so the words span ids past the
    draft vocabulary and `d2t` is a real map (a draft id is not its target id); the chat
    markers last."""
    words: list[str] = []
    for w in KEYWORDS + NUMBERS + DAYS + MONTHS + LETTERS + ADJ + NOUN + VERB + PLACE:
        if w not in words:
            words.append(w)
    vocab, extra = list(SPECIALS), iter(f"<extra_{i}>" for i in range(VOCAB_SIZE))
    for w in words:
        vocab += [next(extra), w]
    vocab += [next(extra) for _ in range(VOCAB_SIZE - len(vocab) - len(CHAT_TOKENS))]
    return vocab + CHAT_TOKENS


def _zipf(rng: random.Random, items: list[str], s: float = 1.1) -> str:
    weights = [1.0 / (i + 1) ** s for i in range(len(items))]
    return rng.choices(items, weights)[0]


def _story(rng: random.Random) -> list[str]:
    subj = ["the", _zipf(rng, ADJ), _zipf(rng, NOUN)]
    obj = ["the", _zipf(rng, ADJ), _zipf(rng, NOUN)]
    line = [*subj, _zipf(rng, VERB), *obj]
    if rng.random() < 0.6:
        line += ["in", "the", _zipf(rng, PLACE)]
    return [*line, "."]


def _cycle(rng: random.Random, head: list[str], items: list[str]) -> list[str]:
    i, n = rng.randrange(len(items)), rng.randint(3, 6)
    return [*head, items[i], ":", *(items[(i + j) % len(items)] for j in range(1, n + 1)), "."]


def _count(rng: random.Random) -> list[str]:
    i, n = rng.randrange(90), rng.randint(3, 8)
    return ["count", "from", NUMBERS[i], ":", *(NUMBERS[i + j] for j in range(1, n + 1)), "."]


def _letters(rng: random.Random) -> list[str]:
    i, n = rng.randrange(20), rng.randint(3, 6)
    return ["letters", "from", LETTERS[i], ":", *LETTERS[i + 1 : i + 1 + n], "."]


def _spell(rng: random.Random) -> list[str]:
    w = _zipf(rng, SPELL, 0.8)
    return ["spell", w, ":", *w, "."]


KINDS = (
    (_story, 4),
    (lambda r: _cycle(r, ["days", "after"], DAYS), 1),
    (lambda r: _cycle(r, ["months", "after"], MONTHS), 1),
    (_count, 2),
    (_letters, 1),
    (_spell, 1),
    (None, 3),  # "remember w1 w2 w3 ." (random words), recalled by a later line
)
RECALL_P = 0.7  # after a "remember" line, the next line recalls it this often


def corpus_lines(rng: random.Random) -> Iterator[list[str]]:
    """Lines for one sequence. "recall : …" repeats the words of the last "remember" line:
    in-context copying, which the deep target learns and a one-layer draft cannot do from the
    tokens alone; it needs the target's hidden states, as real drafts do."""
    memory: list[str] = []
    while True:
        if memory and rng.random() < RECALL_P:
            line, memory = ["recall", ":", *memory, "."], []
        else:
            fn = rng.choices([k for k, _ in KINDS], [w for _, w in KINDS])[0]
            if fn is None:
                memory = rng.sample(ADJ + NOUN + PLACE, rng.randint(3, 4))
                line = ["remember", *memory, "."]
            else:
                line = fn(rng)
        yield [*line, "<nl>"]


def sequences(seed: int, count: int, seq: int = SEQ) -> torch.Tensor:
    """`count` rows of `seq` token ids: `<bos>` then whole lines, cut at `seq`."""
    rng, ids = random.Random(seed), {w: i for i, w in enumerate(vocabulary())}
    rows = []
    for _ in range(count):
        toks, lines = ["<bos>"], corpus_lines(rng)
        while len(toks) < seq:
            toks += next(lines)
        rows.append([ids[w] for w in toks[:seq]])
    return torch.tensor(rows, dtype=torch.long)


def heldout_prompts(count: int = 300, seed: int = SEED_PROMPTS) -> list[dict]:
    """Line completions: context lines, then the head of a line the target must finish (never
    a "remember" line: its words are random). Completions stop at `<nl>`."""
    rng, ids = random.Random(seed), {w: i for i, w in enumerate(vocabulary())}
    out = []
    for _ in range(count):
        lines = corpus_lines(rng)
        ctx = ["<bos>", *next(lines), *next(lines)]
        line = next(lines)
        while line[0] == "remember":
            ctx, line = ctx + line, next(lines)
        cut = rng.randint(1, max(1, min(4, len(line) - 3)))
        toks = ctx + line[:cut]
        out.append({"text": " ".join(toks), "ids": [ids[w] for w in toks],
                    "stop_ids": [ids["<nl>"]]})  # fmt: skip
    return out


# ---------------------------------------------------------------------------------------------
# Target.


def target_config():
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=TARGET_LAYERS,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=SPECIALS.index("<pad>"),
        pad_token_id=0,
    )


def _lr(step: int, total: int, peak: float, warmup: int = 30) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def train_target(out: Path, steps: int, batch: int) -> None:
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(target_config())
    data = sequences(SEED_TRAIN, steps * batch)
    valid = sequences(SEED_VALID, 64)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01, betas=(0.9, 0.95))
    t0 = time.time()
    model.train()
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = _lr(step, steps, 3e-3)
        x = data[step * batch : (step + 1) * batch]
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            print(f"target step {step} loss {loss.item():.3f} ({time.time() - t0:.0f}s)")
    model.eval()
    with torch.no_grad():
        vloss = model(input_ids=valid, labels=valid).loss.item()
    print(f"target validation perplexity {math.exp(vloss):.2f}")
    model.to(torch.bfloat16).save_pretrained(out / "target")
    save_tokenizer(out / "target")


def save_tokenizer(folder: Path) -> None:
    """A word-level tokenizer, so `AutoTokenizer` works on the target folder, with a chat
    template (`<|user|> … <|end|> <|assistant|>`) whose end-of-turn token is its eos."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(vocabulary())}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<bos>",
        eos_token="<|end|>",
    )  # fmt: skip
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)


def load_target(folder: Path):
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


# ---------------------------------------------------------------------------------------------
# Draft: EAGLE-3 on the target's aux hidden states, saved like speculators 0.9.0 saves it.


def draft_config_dict(target_cfg) -> dict:
    """A speculators 0.9.0 `config.json` (same fields as data/samples/speculators-0.9.0-tiny)."""
    layer = {
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 0,
        "head_dim": target_cfg.hidden_size // target_cfg.num_attention_heads,
        "hidden_act": "silu",
        "hidden_size": target_cfg.hidden_size,
        "initializer_range": 0.02,
        "intermediate_size": target_cfg.intermediate_size,
        "max_position_embeddings": target_cfg.max_position_embeddings,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": target_cfg.num_attention_heads,
        "num_hidden_layers": 1,
        "num_key_value_heads": target_cfg.num_key_value_heads,
        "pad_token_id": None,
        "pretraining_tp": 1,
        "rms_norm_eps": target_cfg.rms_norm_eps,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        "tie_word_embeddings": False,
        "use_cache": True,
        "vocab_size": target_cfg.vocab_size,
    }
    return speculators_config(
        layer,
        draft_vocab_size=DRAFT_VOCAB,
        aux_layer_ids=AUX_LAYERS,
        speculative_tokens=TTT_STEPS,
        verifier={"architectures": ["LlamaForCausalLM"], "name_or_path": "../target"},
    )


def draft_vocab(data: torch.Tensor) -> torch.Tensor:
    """The `DRAFT_VOCAB` most frequent target ids (ties by id), ascending, as speculators does."""
    counts = torch.bincount(data.flatten(), minlength=VOCAB_SIZE).double()
    counts -= torch.arange(VOCAB_SIZE, dtype=torch.double) * 1e-9  # stable tie-break
    return counts.topk(DRAFT_VOCAB).indices.sort().values


def aux_states(target, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Concatenated aux hidden states (state after k layers, HF `hidden_states[k]`) and logits."""
    out = target(input_ids=x, output_hidden_states=True)
    return torch.cat([out.hidden_states[k] for k in AUX_LAYERS], -1), out.logits


def ttt_loss(draft: Eagle3Draft, x, aux, target_logits, vocab_ids, steps: int) -> torch.Tensor:
    """Soft cross-entropy against the target, unrolled `steps` draft steps (weights 0.8^j).

    Row t starts a chain at (aux_t, x_{t+1}); step j feeds x_{t+1+j} and the draft's own hidden
    and is scored against the target's distribution at position t+1+j.
    """
    rows = x.shape[1] - steps
    pos = torch.arange(rows)
    cache, loss = ChainCache(1), 0.0
    hidden, own = aux[:, :rows], False
    for j in range(steps):
        logits, hidden = draft(x[:, 1 + j : 1 + j + rows], hidden, pos + j, cache, own)
        own = True
        p = target_logits[:, 1 + j : 1 + j + rows][..., vocab_ids].float().softmax(-1)
        ce = -(p * logits.float().log_softmax(-1)).sum(-1).mean()
        loss = loss + 0.8**j * ce
    return loss


def train_draft(out: Path, steps: int, batch: int) -> None:
    target = load_target(out / "target")
    for p in target.parameters():
        p.requires_grad_(False)
    raw = draft_config_dict(target.config)
    cfg = parse_draft_config(raw)
    torch.manual_seed(1)
    draft = build_draft(cfg, release="sglang==0.5.12")
    data = sequences(SEED_TRAIN + 1, steps * batch)
    vocab_ids = draft_vocab(sequences(SEED_TRAIN, 256))
    with torch.no_grad():
        draft.model.embed_tokens.weight.copy_(target.get_input_embeddings().weight)
        draft.lm_head.weight.copy_(target.get_output_embeddings().weight[vocab_ids])
        draft.d2t.copy_(vocab_ids - torch.arange(DRAFT_VOCAB))
    draft.model.embed_tokens.weight.requires_grad_(False)  # frozen, as speculators trains it
    params = [p for p in draft.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-3, weight_decay=0.0, betas=(0.9, 0.95))
    t0 = time.time()
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = _lr(step, steps, 2e-3)
        x = data[step * batch : (step + 1) * batch]
        with torch.no_grad():
            aux, tlogits = aux_states(target, x)
        loss = ttt_loss(draft, x, aux, tlogits, vocab_ids, TTT_STEPS)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            print(f"draft step {step} loss {loss.item():.3f} ({time.time() - t0:.0f}s)")
    save_speculators(draft, vocab_ids, raw, out / "draft")


def save_speculators(draft: Eagle3Draft, vocab_ids: torch.Tensor, raw: dict, folder: Path):
    """Write `model.safetensors` + `config.json` with speculators' key names and dtypes."""
    cfg, layer = draft.cfg, draft.model.layers[0]
    nq, nkv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
    q, k, v = layer.self_attn.qkv_proj.weight.split([nq, nkv, nkv])
    gate, up = layer.mlp.gate_up_proj.weight.chunk(2)
    t2d = torch.zeros(cfg.vocab_size, dtype=torch.bool)
    t2d[vocab_ids] = True
    floats = {
        "embed_tokens.weight": draft.model.embed_tokens.weight,
        "fc.weight": draft.model.fc.weight,
        "layers.0.hidden_norm.weight": layer.hidden_norm.weight,
        "layers.0.input_layernorm.weight": layer.input_layernorm.weight,
        "layers.0.mlp.down_proj.weight": layer.mlp.down_proj.weight,
        "layers.0.mlp.gate_proj.weight": gate,
        "layers.0.mlp.up_proj.weight": up,
        "layers.0.post_attention_layernorm.weight": layer.post_attention_layernorm.weight,
        "layers.0.self_attn.k_proj.weight": k,
        "layers.0.self_attn.o_proj.weight": layer.self_attn.o_proj.weight,
        "layers.0.self_attn.q_proj.weight": q,
        "layers.0.self_attn.v_proj.weight": v,
        "lm_head.weight": draft.lm_head.weight,
        "norm.weight": draft.model.norm.weight,
    }
    state = {n: t.detach().to(torch.bfloat16).contiguous() for n, t in floats.items()}
    state["d2t"] = draft.d2t.clone()
    state["t2d"] = t2d
    folder.mkdir(parents=True, exist_ok=True)
    save_file(dict(sorted(state.items())), str(folder / "model.safetensors"), {"format": "pt"})
    (folder / "config.json").write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("stages", nargs="*", default=["target", "draft", "prompts"])
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--target-steps", type=int, default=600)
    p.add_argument("--draft-steps", type=int, default=400)
    p.add_argument("--batch", type=int, default=48)
    p.add_argument("--draft-batch", type=int, default=32)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    if "target" in args.stages:
        train_target(args.out, args.target_steps, args.batch)
    if "draft" in args.stages:
        train_draft(args.out, args.draft_steps, args.draft_batch)
    if "tokenizer" in args.stages:  # the target's tokenizer files alone (no training)
        save_tokenizer(args.out / "target")
    if "prompts" in args.stages:
        lines = [json.dumps(p) for p in heldout_prompts()]
        (args.out / "prompts.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

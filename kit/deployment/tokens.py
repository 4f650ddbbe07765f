"""The tokenizer rules: the chat template the draft was trained with against the one served, and
the template's special tokens the draft vocabulary cannot propose.

A draft learns the token stream its trainer rendered: another template text, other added special
tokens or another generation suffix (an assistant header, an empty thinking block) put tokens in
front of every answer the draft never saw (lightseekorg/tokenspeed issue #1305, SafeAILab/EAGLE
issue #196). Tokenizers are read from local folders only (no hub downloads).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.checkpoint.config import DraftConfig
from kit.checkpoint.files import Checkpoint, read_array
from kit.checkpoint.tokenizer import load_tokenizer
from kit.deployment.served import local_path
from kit.findings import Finding, Severity

# One fixed conversation both templates render: system, user, assistant, user, then the prompt
# for the next assistant turn.
CONVERSATION = (
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is 2 + 2?"},
    {"role": "assistant", "content": "2 + 2 = 4."},
    {"role": "user", "content": "And 3 + 3?"},
)


@dataclass
class Template:
    """A tokenizer and the chat template it serves, rendered on `CONVERSATION`."""

    source: str
    tokenizer: Any
    text: str | None  # the template; None: the tokenizer has none
    rendered: str | None = None
    suffix: str | None = None  # what add_generation_prompt appends
    special: dict[str, int] | None = None  # added special tokens, content -> id


def load_template(folder: Path, override: str | None = None) -> Template:
    """The tokenizer in `folder` (`load_tokenizer`: read once per process); `override` is a
    launch line's --chat-template: a template file or an inline template."""
    tok = load_tokenizer(folder)
    text = tok.chat_template
    source = str(folder)
    if override:
        path = local_path(override)
        if path is not None and path.is_file():
            text, source = path.read_text(), f"{override} (--chat-template)"
        elif "{%" in override or "{{" in override:
            text, source = override, "the inline --chat-template"
    if isinstance(text, dict):
        text = text.get("default") or next(iter(text.values()), None)
    template = Template(source, tok, text)
    template.special = {
        str(t.content): int(i) for i, t in tok.added_tokens_decoder.items() if t.special
    }
    if text:
        template.rendered, template.suffix = _render(tok, text)
    return template


def _render(tok: Any, text: str) -> tuple[str | None, str | None]:
    """The conversation with the generation prompt, and the prompt alone. Templates that refuse
    a system turn get the conversation without it."""
    for messages in (list(CONVERSATION), list(CONVERSATION[1:])):
        try:
            full = tok.apply_chat_template(
                messages, chat_template=text, tokenize=False, add_generation_prompt=True
            )
            bare = tok.apply_chat_template(
                messages, chat_template=text, tokenize=False, add_generation_prompt=False
            )
        except Exception:  # a template's own raise_exception(); try without the system turn
            continue
        return full, full[len(bare) :] if full.startswith(bare) else None
    return None, None


def _first_difference(a: str, b: str) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    lo = max(0, i - 30)
    return f"at character {i}: trained {a[lo : i + 40]!r}, served {b[lo : i + 40]!r}"


def template_findings(train: Template, served: Template) -> list[Finding]:
    """Template text, added special tokens and generation suffix, trained against served."""
    if train.text and not served.text:
        return [
            Finding(
                code="CHAT_TEMPLATE_MISSING",
                severity=Severity.ERROR,
                title="the draft was trained on chat-templated prompts; the served tokenizer has "
                "no chat template",
                evidence=(f"trained with {train.source}", f"served {served.source}: none"),
                fix="serve the template the draft was trained with (--chat-template FILE, or the "
                "trainer's tokenizer_config.json)",
                source="lightseekorg/tokenspeed issue #1305; SafeAILab/EAGLE issue #196",
            )
        ]
    evidence = []
    if train.rendered and served.rendered and train.rendered != served.rendered:
        evidence.append(
            "rendered conversation differs " + _first_difference(train.rendered, served.rendered)
        )
    if train.suffix != served.suffix:
        evidence.append(f"generation prompt: trained {train.suffix!r}, served {served.suffix!r}")
    only_train = sorted(set(train.special or {}) - set(served.special or {}))
    only_served = sorted(set(served.special or {}) - set(train.special or {}))
    moved = sorted(
        t for t in set(train.special or {}) & set(served.special or {})
        if (train.special or {})[t] != (served.special or {})[t]
    )  # fmt: skip
    for label, tokens in (
        ("special tokens only in the trainer's tokenizer", only_train),
        ("special tokens only in the served tokenizer", only_served),
        ("special tokens with other ids", moved),
    ):
        if tokens:
            evidence.append(f"{label}: {', '.join(tokens[:8])}" + (" …" if len(tokens) > 8 else ""))
    if not evidence:
        return []
    return [
        Finding(
            code="CHAT_TEMPLATE_MISMATCH",
            severity=Severity.WARNING,
            title="the served chat template is not the one the draft was trained with",
            evidence=(f"trained with {train.source}", f"served {served.source}", *evidence),
            fix="serve the trainer's template (--chat-template FILE) or retrain the draft on "
            "prompts rendered with the served one",
            source="lightseekorg/tokenspeed issue #1305; SafeAILab/EAGLE issue #196",
        )
    ]


def read_d2t(ck: Checkpoint) -> Any | None:
    """The draft's d2t offsets (numpy), read through its checkpoint (on disk or by range from
    the Hub); None when it has none."""
    name = next((n for n in ("d2t", "model.d2t") if n in ck.tensors), None)
    return read_array(ck, name) if name else None


def unreachable_findings(served: Template, draft: DraftConfig, ck: Checkpoint) -> list[Finding]:
    """Template tokens (role markers, end of turn, EOS) outside the draft vocabulary: the draft
    can never propose them, so every turn boundary ends its chain."""
    if not draft.draft_vocab_size or draft.draft_vocab_size >= draft.vocab_size:
        return []
    d2t = read_d2t(ck)
    if d2t is None or not served.rendered:
        return []
    reachable = {int(i) + int(o) for i, o in enumerate(d2t.reshape(-1).tolist())}
    tok = served.tokenizer
    ids = tok(served.rendered, add_special_tokens=False)["input_ids"]
    special = set((served.special or {}).values()) | {
        i for i in (tok.eos_token_id, tok.bos_token_id) if isinstance(i, int)
    }
    missing = sorted({i for i in ids if i in special and i not in reachable})
    eos = tok.eos_token_id
    if isinstance(eos, int) and eos not in reachable:
        missing = sorted({*missing, eos})
    if not missing:
        return []
    names = [f"{tok.convert_ids_to_tokens(i)!s} ({i})" for i in missing[:10]]
    return [
        Finding(
            code="TEMPLATE_TOKENS_UNREACHABLE",
            severity=Severity.WARNING,
            title=f"{len(missing)} chat-template token(s) are outside the draft's "
            f"{draft.draft_vocab_size}-token vocabulary: it can never propose them",
            evidence=(
                "not in d2t's targets: " + ", ".join(names),
                f"draft vocabulary {len(reachable)} target ids (d2t in {ck.folder})",
                f"template from {served.source}",
            ),
            fix="rebuild the draft vocabulary (d2t / t2d) with the template's special tokens "
            "and EOS forced in, then fine-tune the draft head",
        )
    ]

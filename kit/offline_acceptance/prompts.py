"""Prompts for offline acceptance: a JSONL file of token ids, sent raw or through a chat template.

A server's chat endpoint renders every request through the target tokenizer's chat template
before the draft sees a token: role markers, an end-of-turn token, a generation prompt. A draft
trained on raw text (or on another template) meets tokens it never learned there, one of the
most reported causes of low acceptance. `PromptFormat.CHAT` sends each prompt as one user
message through the template, so the same prompts can be measured both ways and compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from kit.errors import KitError


class PromptFormat(StrEnum):
    RAW = "raw"  # the ids as written in the prompt file
    CHAT = "chat"  # the prompt as one user message through the target's chat template


@dataclass
class Prompt:
    ids: list[int]
    stop_ids: list[int] = field(default_factory=list)
    text: str = ""


def load_prompts(path: str | Path, vocab_size: int | None = None) -> list[Prompt]:
    """A JSONL file of `{"ids": [...], "stop_ids": [...], "text": "..."}` lines; with
    `vocab_size`, every id must be a token of that vocabulary."""
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except OSError as e:
        raise KitError(f"cannot read prompts: {e.strerror}", p) from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            pr = Prompt(
                [int(i) for i in d["ids"]],
                [int(i) for i in d.get("stop_ids", [])],
                str(d.get("text", "")),
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise KitError(f"line {n} is not a prompt object with integer 'ids'", p) from None
        if problem := prompt_problem(pr, vocab_size):
            raise KitError(f"line {n}: {problem}", p)
        out.append(pr)
    if not out:
        raise KitError("no prompts in file", p)
    return out


def prompt_problem(pr: Prompt, vocab_size: int | None) -> str | None:
    """Why the target cannot take this prompt (an id it has no embedding row for), or None."""
    if not pr.ids:
        return "a prompt needs at least one token id"
    top = vocab_size if vocab_size is not None else float("inf")
    bad = next((i for i in pr.ids + pr.stop_ids if not 0 <= i < top), None)
    if bad is None:
        return None
    where = f" (0 … {vocab_size - 1})" if vocab_size is not None else ""
    return f"token id {bad} is outside the target's vocabulary{where}"


def default_prompts_file(target_dir: Path) -> Path:
    """`prompts.jsonl` beside the target (in its folder or the folder above)."""
    for candidate in (target_dir / "prompts.jsonl", target_dir.parent / "prompts.jsonl"):
        if candidate.is_file():
            return candidate
    raise KitError("no prompts given and no prompts.jsonl beside the target", target_dir)


def resolve_prompts(
    prompts: list[Prompt] | str | Path | None, target_dir: Path, vocab_size: int
) -> list[Prompt]:
    """Prompt objects as given, a file, or the file beside the target; every id checked."""
    if prompts is None:
        return load_prompts(default_prompts_file(target_dir), vocab_size)
    if isinstance(prompts, (str, Path)):
        return load_prompts(prompts, vocab_size)
    for n, pr in enumerate(prompts, 1):  # files are checked line by line as they load
        if problem := prompt_problem(pr, vocab_size):
            raise KitError(f"prompt {n}: {problem}")
    return list(prompts)


def chat_prompts(prompts: list[Prompt], target_dir: Path, vocab_size: int) -> list[Prompt]:
    """Each prompt as a chat server sends it: its text (decoded from its ids, special tokens
    left out, so raw and chat carry the same words) as one user message through the target
    tokenizer's chat template, with the generation prompt. A completion also stops at the
    tokenizer's end-of-turn (eos) token."""
    from kit.checkpoint.tokenizer import has_tokenizer, load_tokenizer

    if not has_tokenizer(target_dir):
        raise KitError(
            "the target folder has no tokenizer (tokenizer.json, tokenizer_config.json); "
            "use raw prompts",
            target_dir,
        )
    tok = load_tokenizer(target_dir)
    if not getattr(tok, "chat_template", None):
        raise KitError("the target's tokenizer has no chat template; use raw prompts", target_dir)
    end = [tok.eos_token_id] if tok.eos_token_id is not None else []
    out = []
    for n, pr in enumerate(prompts, 1):
        content = tok.decode(pr.ids, skip_special_tokens=True)
        text = tok.apply_chat_template(
            [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True
        )
        rendered = Prompt(
            tok(text, add_special_tokens=False)["input_ids"], sorted({*pr.stop_ids, *end}), text
        )
        if problem := prompt_problem(rendered, vocab_size):
            raise KitError(f"prompt {n} through the chat template: {problem}", target_dir)
        out.append(rendered)
    return out

"""Prompts raw and through the target's chat template, and the gap between the two."""

from __future__ import annotations

import json

import pytest
import torch
from train_pair import CHAT_TOKENS, save_tokenizer, vocabulary

from kit.cli import main
from kit.errors import KitError
from kit.offline_acceptance import (
    PromptFormat,
    format_gap_finding,
    healthy,
    load_prompts,
    prompt_format_gap,
)
from kit.offline_acceptance.prompts import chat_prompts
from tests.conftest import DRAFT, PROMPTS, TARGET

torch.set_num_threads(1)

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(PROMPTS)[:60]


def test_committed_tokenizer_files_are_what_the_training_script_writes(tmp_path):
    """`python data/train_pair.py tokenizer` rewrites the target's tokenizer files byte for
    byte, the chat template included; nothing else of the target changes."""
    save_tokenizer(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(TOKENIZER_FILES)
    for name in TOKENIZER_FILES:
        assert (tmp_path / name).read_bytes() == (TARGET / name).read_bytes(), name


def test_chat_markers_take_ids_no_corpus_line_uses():
    """The markers are the last ids; every word keeps the id the pair was trained with."""
    vocab = vocabulary()
    assert len(vocab) == 512 and vocab[-3:] == CHAT_TOKENS
    assert max(max(json.loads(line)["ids"]) for line in PROMPTS.read_text().splitlines()) < 509


def test_chat_prompts_are_the_same_words_in_one_user_turn(prompts):
    """Raw: `<bos>` + the text's ids. Chat: `<bos> <|user|>` + the same words + `<|end|>
    <|assistant|>`, stopping at the line's `<nl>` or at the end-of-turn token."""
    ids = {w: i for i, w in enumerate(vocabulary())}
    [chat] = chat_prompts(prompts[:1], TARGET, 512)
    raw = prompts[0]
    assert chat.ids == [
        ids["<bos>"],
        ids["<|user|>"],
        *raw.ids[1:],
        ids["<|end|>"],
        ids["<|assistant|>"],
    ]
    assert chat.stop_ids == sorted({ids["<nl>"], ids["<|end|>"]})
    assert chat.text.startswith("<bos><|user|> ") and chat.text.endswith("<|assistant|> ")


def test_chat_prompts_cost_the_bundled_draft_acceptance_beyond_noise(target, prompts):
    """The pair never saw a template: on the same prompts, chat requests accept fewer drafted
    tokens than raw ones, by more than the interval of the paired difference."""
    common = {"prompts": prompts, "target": target, "progress": False}
    gap = prompt_format_gap(TARGET, DRAFT, **common)
    assert gap is not None and gap.paired
    assert gap.a_label == "raw prompts" and gap.b_label == "chat-template prompts"
    assert gap.beyond_noise and gap.difference < 0
    finding = format_gap_finding(gap)
    assert finding.code == "OFFLINE_PROMPT_FORMAT_GAP" and finding.severity.name == "WARNING"
    raw = healthy(TARGET, DRAFT, **common)
    assert gap.a == raw.result.accept_len  # the raw side is the plain healthy figure
    chat = healthy(TARGET, DRAFT, prompt_format=PromptFormat.CHAT, **common).result
    assert chat.settings.prompt_format == "chat" and gap.b == chat.accept_len


def test_a_target_without_a_chat_template_is_one_clear_error(tmp_path):
    (tmp_path / "config.json").write_text((TARGET / "config.json").read_text())
    with pytest.raises(KitError, match="tokenizer") as e:
        chat_prompts(load_prompts(PROMPTS)[:1], tmp_path, 512)
    assert str(tmp_path) in str(e.value)


def test_cli_chat_prompt_format(tmp_path, capsys):
    code = main(["offline", "--target", str(TARGET), "--draft", str(DRAFT), "--num-prompts",
                 "10", "--prompt-format", "chat", "--json"])  # fmt: skip
    assert code == 0
    [row] = json.loads(capsys.readouterr().out)["rows"]
    assert row["result"]["settings"]["prompt_format"] == "chat"
    assert row["result"]["prompts"] == 10

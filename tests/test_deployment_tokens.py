"""The chat template the draft was trained with against the one served, and the template tokens
the draft vocabulary cannot propose: tokenizers built locally in tmp_path, named by doctor."""

from __future__ import annotations

import deployment_scenarios as sc
import pytest

SG = "python -m sglang.launch_server"


def line(target, draft, *extra: str) -> str:
    return (
        f"{SG} --model-path {target} --speculative-algorithm EAGLE3 "
        f"--speculative-draft-model-path {draft} --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 " + " ".join(extra)
    )


@pytest.fixture
def served(tmp_path):
    """A target folder holding its config and a ChatML tokenizer, and a config-only draft."""
    target = sc.target(tmp_path / "target")
    sc.tokenizer(target)
    return target, sc.specforge_draft(tmp_path / "draft")


def doctor(capsys, draft, launch, *extra: str) -> dict:
    args = ("--draft", str(draft), "--launch", launch, "--engine", "sglang==0.5.10", *extra)
    return sc.codes(sc.doctor_json(capsys, *args))


def test_the_template_the_draft_was_trained_with_is_quiet(capsys, tmp_path, served):
    target, draft = served
    train = sc.tokenizer(tmp_path / "train")
    found = doctor(capsys, draft, line(target, draft), "--train-tokenizer", str(train))
    assert not {"CHAT_TEMPLATE_MISMATCH", "CHAT_TEMPLATE_MISSING"} & set(found)


def test_a_thinking_suffix_the_draft_never_saw(capsys, tmp_path, served):
    """tokenspeed issue #1305: an assistant / thinking suffix in front of every answer."""
    target, draft = served
    train = sc.tokenizer(tmp_path / "train", template=sc.CHATML_THINKING)
    f = doctor(capsys, draft, line(target, draft), "--train-tokenizer", str(train))[
        "CHAT_TEMPLATE_MISMATCH"
    ]
    assert f["severity"] == "warning"
    assert any(
        e.startswith("generation prompt: trained '<|im_start|> assistant <think> </think> '")
        for e in f["evidence"]
    )
    assert any("rendered conversation differs at character" in e for e in f["evidence"])


def test_special_tokens_the_served_tokenizer_lacks(capsys, tmp_path, served):
    target, draft = served
    train = sc.tokenizer(tmp_path / "train", specials=["<tool_call>", *sc.SPECIALS])
    f = doctor(capsys, draft, line(target, draft), "--train-tokenizer", str(train))[
        "CHAT_TEMPLATE_MISMATCH"
    ]
    assert "special tokens only in the trainer's tokenizer: <tool_call>" in f["evidence"]
    assert any("special tokens with other ids" in e for e in f["evidence"])


def test_a_served_tokenizer_without_a_template(capsys, tmp_path):
    """EAGLE issue #196: raw prompts where the draft learned templated ones."""
    target = sc.target(tmp_path / "target")
    sc.tokenizer(target, template=None)
    draft = sc.specforge_draft(tmp_path / "draft")
    train = sc.tokenizer(tmp_path / "train")
    f = doctor(capsys, draft, line(target, draft), "--train-tokenizer", str(train))[
        "CHAT_TEMPLATE_MISSING"
    ]
    assert f["severity"] == "error"


def test_the_launch_lines_chat_template_is_the_one_served(capsys, tmp_path, served):
    target, draft = served
    train = sc.tokenizer(tmp_path / "train", template=sc.CHATML_THINKING)
    template = tmp_path / "thinking.jinja"
    template.write_text(sc.CHATML_THINKING)
    fixed = line(target, draft, f"--chat-template {template}")
    found = doctor(capsys, draft, fixed, "--train-tokenizer", str(train))
    assert "CHAT_TEMPLATE_MISMATCH" not in found


def test_template_tokens_outside_the_draft_vocabulary(capsys, tmp_path, served):
    """d2t maps the draft's 200 ids to target ids 100 …: the template's role markers and EOS (ids
    1 - 5) are never among them, so the draft can never propose a turn boundary."""
    target, _ = served
    draft = sc.with_d2t(sc.speculators_draft(tmp_path / "draft"), list(range(100, 300)))
    f = doctor(capsys, draft, line(target, draft))["TEMPLATE_TOKENS_UNREACHABLE"]
    assert "<|im_end|> (3)" in f["evidence"][0] and "<eos> (1)" in f["evidence"][0]
    covered = sc.with_d2t(sc.speculators_draft(tmp_path / "covered"), list(range(200)))
    assert "TEMPLATE_TOKENS_UNREACHABLE" not in doctor(capsys, covered, line(target, covered))


def test_a_train_tokenizer_folder_without_a_tokenizer_is_one_clear_error(capsys, tmp_path, served):
    from kit.cli import main

    target, draft = served
    empty = tmp_path / "empty"
    empty.mkdir()
    args = ["doctor", "--draft", str(draft), "--launch", line(target, draft)]
    code = main([*args, "--train-tokenizer", str(empty)])
    err = capsys.readouterr().err
    assert code == 2 and "empty" in err and "no tokenizer files" in err

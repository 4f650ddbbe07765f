"""An engine and release spelled another way (`vllm=0.11`, `vllm:0.11.0`, `tensorrt-llm==…`) is
one line with the spelling that works, in every command that takes `--engine`; the spelling it
suggests is accepted."""

from __future__ import annotations

import pytest

from kit import cli
from kit.engines import did_you_mean, parse_engine
from tests.conftest import DATA, DRAFT

TYPOS = {
    "vllm=0.11": "vllm==0.11.0",
    "vllm:0.11.2": "vllm==0.11.2",
    "vllm 0.11.2": "vllm==0.11.2",
    "vllm@v0.33.0": "vllm==0.33.0",
    "vlm==0.33.0": "vllm==0.33.0",
    "SGLang = 0.5.10": "sglang==0.5.10",
    "sglang0.5.10": "sglang==0.5.10",
    "tensorrt-llm==1.2.0rc2": "tensorrt_llm==1.2.0rc2",
    "trtllm=1.2.0rc2": "tensorrt_llm==1.2.0rc2",
}
LOG = DATA / "incident" / "logs" / "before.log"
COMMANDS = {
    "acceptance": ["acceptance", str(LOG)],
    "simulate": ["simulate", str(DRAFT)],
    "doctor": ["doctor", "--draft", str(DRAFT)],
    "deployment": [
        "deployment",
        "--draft",
        str(DRAFT),
        "--target-config",
        str(DATA / "pair" / "target"),
    ],
}


@pytest.mark.parametrize("typo", sorted(TYPOS))
def test_the_suggestion_is_a_release_the_kit_reads(typo):
    assert did_you_mean(typo, ["sglang", "vllm", "lmdeploy", "tensorrt_llm"]) == TYPOS[typo]
    parse_engine(TYPOS[typo])  # no error: the suggestion works as given


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_says_did_you_mean_in_one_line(command, capsys):
    assert cli.main([*COMMANDS[command], "--engine", "vllm=0.11"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "did you mean vllm==0.11.0?" in err, err
    assert cli.main([*COMMANDS[command], "--engine", "vllm==0.11.0"]) in (0, 1)


@pytest.mark.parametrize("text", ["foo=1.0", "0.11.0", "==", "vllm=="])
def test_no_suggestion_where_there_is_nothing_to_suggest(text):
    assert did_you_mean(text, ["sglang", "vllm"]) is None


def test_a_name_alone_mistyped_gets_the_name(capsys):
    assert cli.main(["acceptance", str(LOG), "--engine", "vlm"]) == 2
    assert "did you mean vllm?" in capsys.readouterr().err

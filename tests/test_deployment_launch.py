"""Launch lines read as each release's parser reads them: entrypoints, environment, flag spellings
per release, values by type, and bad launch text as one clear error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kit.deployment.launch import read_launch
from kit.deployment.lines import read_served
from kit.engines.serving import Method
from kit.errors import KitError

ROOT = Path(__file__).resolve().parent.parent
SG = "python -m sglang.launch_server --model-path m"


def issues(served):
    return {i.spelled: i for i in served.arguments.issues}


def test_a_script_with_environment_exports_and_continuations(tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text(
        "#!/bin/bash\n# start the server\nexport NCCL_DEBUG=WARN\n"
        "CUDA_VISIBLE_DEVICES=0,1 /opt/venv/bin/python3 -m sglang.launch_server \\\n"
        "  --model-path m --tp-size 2 \\\n  --speculative-algorithm EAGLE3  # the draft\n"
    )
    cmd = read_launch(script)
    assert cmd.engine == "sglang" and cmd.source == str(script)
    assert cmd.env == {"NCCL_DEBUG": "WARN", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert cmd.argv == ("--model-path", "m", "--tp-size", "2", "--speculative-algorithm", "EAGLE3")


@pytest.mark.parametrize(
    ("text", "engine", "entrypoint"),
    [
        ("vllm serve org/model --port 8000", "vllm", "vllm serve"),
        ("cd /srv && python -m vllm.entrypoints.openai.api_server --model m", "vllm",
         "python -m vllm.entrypoints.openai.api_server"),
        ("env A=1 sglang serve --model-path m", "sglang", "sglang serve"),
    ],
)  # fmt: skip
def test_entrypoints(text, engine, entrypoint):
    cmd = read_launch(text)
    assert (cmd.engine, cmd.entrypoint) == (engine, entrypoint)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('vllm serve m --speculative-config \'{"method": "eagle3"', "No closing quotation"),
        ("vllm serve m --speculative-config '{method: eagle3}'", "is not valid JSON"),
        ("missing-launch.sh", "no such file"),
        ("python train.py --lr 3e-4", "no server command"),
    ],
)
def test_bad_launch_text_is_one_clear_error(text, problem):
    with pytest.raises(KitError, match=problem):
        read_served(text, "vllm==0.11.0" if "vllm" in text else None)


def test_bad_launch_text_on_the_cli_exits_2_without_a_traceback(tmp_path):
    draft = tmp_path / "d"
    draft.mkdir()
    out = subprocess.run(
        [sys.executable, "-m", "kit", "deployment", "--launch",
         "vllm serve m --speculative-config '{bad json'"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1 and "--speculative-config is not valid JSON" in out.stderr


def test_a_misspelled_flag_is_reported_with_the_nearest_spelling():
    served = read_served(f"{SG} --speculative-num-draft-tokes 4", "sglang==0.5.10")
    [issue] = served.arguments.issues
    assert issue.spelled == "--speculative-num-draft-tokes"
    assert "did you mean --speculative-num-draft-tokens" in issue.detail
    assert served.num_draft_tokens is None  # the value went with the unknown flag


def test_an_unambiguous_prefix_is_what_argparse_accepts():
    """SGLang's parser is a plain argparse.ArgumentParser (0.5.10 server_args.py:6526)."""
    served = read_served(f"{SG} --speculative-algo EAGLE3", "sglang==0.5.10")
    assert not served.arguments.issues and served.method is Method.EAGLE3


def test_a_flag_removed_before_the_release_names_where_it_existed():
    """--speculative-model is a flag of vllm 0.8.2 (engine/arg_utils.py:788), gone in 0.8.3: the
    intended speculation is still read, the flag reported."""
    served = read_served("vllm serve m --speculative-model d --num-speculative-tokens 3",
                         "vllm==0.11.0")  # fmt: skip
    unknown = issues(served)
    assert "vllm 0.8.2 … 0.8.2 only (0.8.2 vllm/engine/arg_utils.py:788)" in (
        unknown["--speculative-model"].detail
    )
    assert served.draft == "d" and served.num_speculative_tokens == 3


def test_choices_and_case_follow_the_release():
    """EAGLE4 is no choice in 0.5.10; lowercase eagle3 is rejected by 0.5.11's choices and
    read case-insensitively from 0.5.12 (server_args.py:3562)."""
    bad = read_served(f"{SG} --speculative-algorithm EAGLE4", "sglang==0.5.10")
    assert "is not one of its choices" in issues(bad)["--speculative-algorithm"].detail
    assert issues(read_served(f"{SG} --speculative-algorithm eagle3", "sglang==0.5.11"))
    assert read_served(f"{SG} --speculative-algorithm eagle3", "sglang==0.5.12").method is (
        Method.EAGLE3
    )


def test_values_by_type_and_each_engines_human_readable_ints():
    """SGLang: k = 10^3, Ki = 2^10 (0.5.10 utils/common.py:2229); vLLM: k = 10^3, K = 2^10
    (0.9.2 engine/arg_utils.py:1753)."""
    assert read_served(f"{SG} --context-length 32k", "sglang==0.5.10").context == 32000
    assert read_served(f"{SG} --context-length 32Ki", "sglang==0.5.10").context == 32768
    assert read_served("vllm serve m --max-model-len 32K", "vllm==0.11.0").context == 32768
    bad = read_served(f"{SG} --speculative-num-steps three", "sglang==0.5.10")
    assert "is not a whole number" in issues(bad)["--speculative-num-steps"].detail
    missing = read_served(f"{SG} --speculative-num-steps", "sglang==0.5.10")
    assert issues(missing)["--speculative-num-steps"].detail == "expects a value"


def test_vllm_underscores_dotted_json_and_negated_switches():
    """FlexibleArgumentParser (0.11.0 utils/__init__.py:1871,1905)."""
    served = read_served(
        "vllm serve m --max_model_len 4096 --speculative-config.method eagle3 "
        "--speculative-config.model d --speculative-config.num_speculative_tokens 2 "
        "--no-enable-prefix-caching",
        "vllm==0.11.0",
    )
    assert not served.arguments.issues
    assert (served.context, served.method, served.draft, served.chain) == (
        4096,
        Method.EAGLE3,
        "d",
        2,
    )
    assert "prefix_caching" not in served.facts


def test_vllm_spec_shorthands_from_0_24():
    """--spec-method / --spec-model / --spec-tokens (0.24.0 engine/arg_utils.py:1501-1503)."""
    served = read_served("vllm serve m --spec-method eagle3 --spec-model d --spec-tokens 4",
                         "vllm==0.33.0")  # fmt: skip
    assert (served.method, served.draft, served.chain) == (Method.EAGLE3, "d", 4)
    assert issues(read_served("vllm serve m --spec-method eagle3", "vllm==0.18.0"))


def test_without_a_release_the_line_names_the_range_it_fits():
    """--speculative-draft-window-size exists from sglang 0.5.12: a line using it is judged as the
    newest release, and the releases accepting it are kept for the verdict."""
    served = read_served(f"{SG} --speculative-draft-window-size 2048")
    assert not served.release_given and str(served.release) == "sglang==0.5.23"
    assert served.fitting[0] == "0.5.12" and served.fitting[-1] == "0.5.23"


def test_vllm_serves_a_speculators_checkpoint_as_its_verifier(tmp_path):
    """From 0.11.0 (engine/arg_utils.py:1135) `vllm serve DRAFT` speculates with the draft."""
    import deployment_scenarios as sc

    draft = sc.speculators_draft(tmp_path / "draft", speculative_tokens=4)
    served = read_served(f"vllm serve {draft}", "vllm==0.11.0")
    assert (served.method, served.chain, served.target) == (Method.EAGLE3, 4, "target")
    assert read_served(f"vllm serve {draft}", "vllm==0.10.2").method is None


def test_engine_and_line_must_agree():
    with pytest.raises(KitError, match=r"--engine vllm==0\.11\.0 but the launch line starts"):
        read_served(SG, "vllm==0.11.0")


@pytest.mark.parametrize(
    ("flags", "loose"),
    [
        ("", False),
        ("--speculative-accept-threshold-acc 1.0", False),
        ("--speculative-accept-threshold-acc 0.5", True),
        ("--speculative-accept-threshold-single 0.15", True),
    ],
    ids=["defaults", "acc-1.0", "acc-0.5", "single-0.15"],
)
def test_sglang_thresholds_below_one_are_loose_verification(flags, loose):
    """SGLang accepts a drafted token when coin < p/threshold_acc or p >= threshold_single:
    below 1.0 the logged acceptance is inflated and not comparable with offline figures."""
    import kit

    line = (
        "python -m sglang.launch_server --model-path t --speculative-algorithm EAGLE3 "
        f"--speculative-draft-model-path d --speculative-num-steps 4 {flags}"
    )
    report = kit.check_deployment(line, engine="sglang==0.5.10")
    found = [f for f in report.findings if f.code == "LAUNCH_LOOSE_VERIFICATION"]
    assert bool(found) is loose
    if loose:
        assert flags.split()[0] in found[0].evidence[0] and "sampling.cuh" in found[0].source

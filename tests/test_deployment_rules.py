"""Each deployment cause as a small scenario (configs in tmp_path, launch lines as strings), named
by `doctor --launch … --json` with its code and evidence; the healthy deployments stay quiet.

Release-dependent rules name the release and the engine source line they reproduce.
"""

from __future__ import annotations

import json

import deployment_scenarios as sc
import pytest

from kit.findings import Severity

SG = "python -m sglang.launch_server"


def sglang_line(target, draft, *extra: str, algo: str = "EAGLE3") -> str:
    return (
        f"{SG} --model-path {target} --speculative-algorithm {algo} "
        f"--speculative-draft-model-path {draft} --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 " + " ".join(extra)
    )


def vllm_line(target, draft, *extra: str, **spec) -> str:
    cfg = {"method": "eagle3", "model": str(draft), "num_speculative_tokens": 3, **spec}
    cfg = {k: v for k, v in cfg.items() if v is not None}
    return f"vllm serve {target} --speculative-config '{json.dumps(cfg)}' " + " ".join(extra)


@pytest.fixture
def pair(tmp_path):
    return sc.target(tmp_path / "target"), sc.specforge_draft(tmp_path / "draft")


@pytest.fixture
def spec_pair(tmp_path):
    return sc.target(tmp_path / "target"), sc.speculators_draft(tmp_path / "draft")


def quiet(report) -> None:
    bad = [(f["code"], f["severity"]) for f in report["findings"] if f["severity"] != "info"]
    assert not bad, bad
    assert not [f for f in report["findings"] if f["root_cause"]]


# ----------------------------------------------------------------------------------------------
# Healthy controls


@pytest.mark.parametrize("release", ["sglang==0.4.10", "sglang==0.5.10", "sglang==0.5.23"])
def test_a_consistent_sglang_deployment_is_quiet(capsys, pair, release):
    target, draft = pair
    line = sglang_line(target, draft, "--context-length 32768 --dtype bfloat16")
    report = sc.doctor_json(capsys, "--draft", str(draft), "--launch", line, "--engine", release)
    assert "deployment" in report["checks_run"]
    quiet(report)


@pytest.mark.parametrize("release", ["vllm==0.11.2", "vllm==0.14.0", "vllm==0.33.0"])
def test_a_consistent_vllm_deployment_is_quiet(capsys, spec_pair, release):
    target, draft = spec_pair
    line = vllm_line(target, draft, "--max-model-len 32k")
    report = sc.doctor_json(
        capsys, "--draft", str(draft), "--target-config", str(target), "--launch", line,
        "--engine", release,
    )  # fmt: skip
    assert report["facts"]["launch judged as"] == release
    quiet(report)


def test_the_healthy_pair_from_configs_alone_is_quiet(capsys, pair):
    target, draft = pair
    report = sc.doctor_json(capsys, "--draft", str(draft), "--target-config", str(target))
    quiet(report)


# ----------------------------------------------------------------------------------------------
# Algorithm / method against the draft


def test_sglang_eagle_with_an_eagle3_draft_is_the_root_cause(capsys, pair):
    """sglang PR #21272: EAGLE does not capture aux states (0.5.10 model_runner.py:356)."""
    target, draft = pair
    line = sglang_line(target, draft, algo="EAGLE")
    found = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                    "--engine", "sglang==0.5.10"))  # fmt: skip
    f = found["ALGORITHM_MISMATCH"]
    assert f["root_cause"] and f["severity"] == "critical"
    assert "sglang PR #21272" in f["source"]
    assert any("LlamaForCausalLMEagle3" in e for e in f["evidence"])
    assert any("model_runner.py:356" in e for e in f["evidence"])


def test_sglang_eagle3_with_an_eagle1_draft_is_the_reverse_mismatch(capsys, tmp_path):
    target = sc.target(tmp_path / "target")
    draft = sc.eagle1_draft(tmp_path / "draft")
    line = sglang_line(target, draft, algo="EAGLE3")
    found = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                    "--engine", "sglang==0.5.10"))  # fmt: skip
    f = found["ALGORITHM_MISMATCH"]
    assert f["title"].startswith("EAGLE-1/2 draft served as EAGLE3")
    assert any("fc.weight [64, 128]" in e for e in f["evidence"])


@pytest.mark.parametrize(
    ("method", "shown"), [("eagle", "eagle"), ("draft_model", "draft_model"), ("mtp", "mtp")]
)
def test_vllm_method_other_than_eagle3_for_an_eagle3_draft(capsys, spec_pair, method, shown):
    """vllm-ascend issue #13665: an EAGLE-3 checkpoint run as "draft_model"."""
    target, draft = spec_pair
    line = vllm_line(target, draft, method=method)
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                "--engine", "vllm==0.14.0"))["ALGORITHM_MISMATCH"]  # fmt: skip
    assert f["root_cause"] and f"served as {shown}" in f["title"]
    assert f["source"] == "vllm-project/vllm-ascend issue #13665"


def test_vllm_picks_the_method_from_the_draft_path_when_none_is_given(tmp_path, capsys):
    """No "method": 0.9.2 maps a path with "eagle3-" to EAGLE-1 (config.py:2687-2689); 0.10.2
    maps "eagle3" to eagle3 (config/__init__.py:2143-2145); a path without either runs as an
    independent draft model (0.24.0 config/speculative.py:587)."""
    target = sc.target(tmp_path / "target")
    named = sc.speculators_draft(tmp_path / "EAGLE3-llama-draft")
    plain = sc.speculators_draft(tmp_path / "my-draft")

    def run(draft, release):
        line = vllm_line(target, draft, method=None)
        rep = sc.doctor_json(capsys, "--draft", str(draft), "--launch", line, "--engine", release)
        return sc.codes(rep)

    old = run(named, "vllm==0.9.2")["ALGORITHM_MISMATCH"]
    assert "served as eagle" in old["title"] and "config.py:2687-2689" in " ".join(old["evidence"])
    assert "ALGORITHM_MISMATCH" not in run(named, "vllm==0.10.2")
    plain_run = run(plain, "vllm==0.24.0")["ALGORITHM_MISMATCH"]
    assert "served as draft_model" in plain_run["title"]


# ----------------------------------------------------------------------------------------------
# Chain length


def test_sglang_draft_tokens_not_steps_plus_one(capsys, pair):
    """SpecForge issue #310 (steps 4, topk 1, 24 draft tokens). 0.4.5 uses the value as given;
    from 0.4.6.post1 it is replaced by steps + 1 (server_args.py:359)."""
    target, draft = pair
    line = (f"{SG} --model-path {target} --speculative-algorithm EAGLE3 "
            f"--speculative-draft-model-path {draft} --speculative-num-steps 4 "
            "--speculative-eagle-topk 1 --speculative-num-draft-tokens 24")  # fmt: skip
    old = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                  "--engine", "sglang==0.4.5"))["CHAIN_ROOT_MISCOUNTED"]  # fmt: skip
    assert old["severity"] == "warning" and "uses the value as given" in old["title"]
    new = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                  "--engine", "sglang==0.4.6.post1"))["CHAIN_ROOT_MISCOUNTED"]  # fmt: skip
    assert new["severity"] == "info" and "replaced by steps + 1 = 5" in new["title"]
    assert any("0.4.6.post1 srt/server_args.py:359" in e for e in new["evidence"])


def test_vllm_chain_one_past_the_trained_length(capsys, tmp_path):
    """vllm PR #16035: SGLang's draft-token count includes the root; carried into vLLM's
    num_speculative_tokens it is one draft past what the draft was trained for."""
    target = sc.target(tmp_path / "target")
    draft = sc.speculators_draft(tmp_path / "draft", speculative_tokens=3)
    line = vllm_line(target, draft, num_speculative_tokens=4)
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                "--engine", "vllm==0.14.0"))["CHAIN_LONGER_THAN_TRAINED"]  # fmt: skip
    assert f["severity"] == "warning" and f["source"] == "vllm-project/vllm PR #16035"
    assert any("num_speculative_tokens 4" in e for e in f["evidence"])
    assert any("trained for 3" in e for e in f["evidence"])


# ----------------------------------------------------------------------------------------------
# Context


def test_a_2048_token_draft_served_at_32k(capsys, tmp_path):
    """sglang issue #6783; with --context-length above it sglang refuses to start
    (0.5.10 configs/model_config.py:383-403) unless the override env var is set."""
    target = sc.target(tmp_path / "target")
    draft = sc.specforge_draft(tmp_path / "draft", max_position_embeddings=2048)
    line = sglang_line(target, draft, "--context-length 32768")
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                "--engine", "sglang==0.5.10"))["DRAFT_CONTEXT_SHORT"]  # fmt: skip
    assert f["severity"] == "error" and "refuses to start" in f["title"]
    assert "draft max_position_embeddings 2048" in f["evidence"]
    allowed = f"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 {line}"
    g = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", allowed,
                                "--engine", "sglang==0.5.10"))["DRAFT_CONTEXT_SHORT"]  # fmt: skip
    assert g["severity"] == "warning" and g["source"] == "sgl-project/sglang issue #6783"


def test_vllm_short_draft_context_is_a_device_assert_until_0_28(capsys, tmp_path):
    """vllm issue #48894 (0.24.0): the draft's RoPE cache is sized by its own
    max_position_embeddings; 0.28.0 raises it to the target's (config/speculative.py:985-987)."""
    target = sc.target(tmp_path / "target")
    draft = sc.speculators_draft(tmp_path / "draft", max_position_embeddings=2048)
    line = vllm_line(target, draft, "--max-model-len 32768")

    def finding(release):
        rep = sc.doctor_json(capsys, "--draft", str(draft), "--launch", line, "--engine", release)
        return sc.codes(rep)["DRAFT_CONTEXT_SHORT"]

    old = finding("vllm==0.24.0")
    assert old["severity"] == "error" and "device assert" in old["title"]
    assert "vllm issue #48894" in old["source"]
    new = finding("vllm==0.28.0")
    assert new["severity"] == "warning"
    assert any("config/speculative.py:985-987" in e for e in new["evidence"])


def test_context_from_the_configs_alone(capsys, tmp_path):
    target = sc.target(tmp_path / "target")
    draft = sc.specforge_draft(tmp_path / "draft", max_position_embeddings=2048)
    report = sc.doctor_json(capsys, "--draft", str(draft), "--target-config", str(target))
    f = sc.codes(report)["DRAFT_CONTEXT_SHORT"]
    assert "the target's max_position_embeddings 131072" in " ".join(f["evidence"])


# ----------------------------------------------------------------------------------------------
# RoPE


def test_rope_theta_differs(capsys, tmp_path):
    target = sc.target(tmp_path / "target")
    draft = sc.specforge_draft(tmp_path / "draft", rope_theta=10000.0)
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--target-config",
                                str(target)))["ROPE_THETA_MISMATCH"]  # fmt: skip
    assert "theta 10000" in f["title"] and "500000" in f["title"]


def test_transformers5_rope_parameters_under_a_transformers4_release(capsys, tmp_path):
    """A draft written by transformers 5 (`rope_parameters` only): sglang 0.5.9 requires
    transformers==4.57.1 and reads theta 10000; 0.5.10 requires 5.3.0 and reads it."""
    target = sc.target(tmp_path / "target")
    v5 = {"rope_theta": None, "rope_scaling": None,
          "rope_parameters": {"rope_theta": 500000.0, **sc.LLAMA3_SCALING}}  # fmt: skip
    draft = sc.specforge_draft(tmp_path / "draft", **v5)
    line = sglang_line(target, draft)

    def found(release):
        return sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                       "--engine", release))  # fmt: skip

    old = found("sglang==0.5.9")["ROPE_THETA_MISMATCH"]
    assert any("transformers ==4.57.1" in e for e in old["evidence"])
    assert "ROPE_THETA_MISMATCH" not in found("sglang==0.5.10")


def test_a_converter_dropped_rope_scaling(capsys, tmp_path):
    """speculators PR #574: the converter wrote no rope_scaling for a llama3-scaled target."""
    target = sc.target(tmp_path / "target")
    draft = sc.speculators_draft(tmp_path / "draft", rope_scaling=None)
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--target-config",
                                str(target)))["ROPE_SCALING_MISMATCH"]  # fmt: skip
    assert "speculators PR #574" in f["source"] and "llama3" in f["title"]


def test_an_export_injected_yarn(capsys, tmp_path):
    """Model-Optimizer PR #1238: YaRN (factor 32, original 2048) written at export."""
    target = sc.target(tmp_path / "target", rope_scaling=None)
    yarn = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 2048}
    draft = sc.specforge_draft(tmp_path / "draft", rope_scaling=yarn)
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--target-config",
                                str(target)))["ROPE_SCALING_MISMATCH"]  # fmt: skip
    assert "Model-Optimizer PR #1238" in f["source"]


# ----------------------------------------------------------------------------------------------
# Sliding window, dtype, quantization, vocabulary, positions


def test_a_sliding_window_draft_under_releases_that_ignore_it(capsys, tmp_path):
    """speculators PR #684: vLLM ignored a Qwen3 draft's window until 0.28.0
    (models/qwen3_eagle3.py:46-53); SGLang never reads it, only --speculative-draft-window-size
    (0.5.23 models/llama_eagle3.py:287-299)."""
    target = sc.target(tmp_path / "target")
    window = {"model_type": "qwen3", "layer_types": ["sliding_attention"], "sliding_window": 2048}
    draft = sc.speculators_draft(tmp_path / "draft", **window)

    def found(line, release):
        return sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                       "--engine", release))  # fmt: skip

    f = found(vllm_line(target, draft), "vllm==0.24.0")["DRAFT_SLIDING_WINDOW_IGNORED"]
    assert "speculators PR #684" in f["source"]
    assert "DRAFT_SLIDING_WINDOW_IGNORED" not in found(vllm_line(target, draft), "vllm==0.28.0")
    sg = sglang_line(target, draft)
    assert "DRAFT_SLIDING_WINDOW_IGNORED" in found(sg, "sglang==0.5.12")
    assert "DRAFT_SLIDING_WINDOW_IGNORED" not in found(
        sg + " --speculative-draft-window-size 2048", "sglang==0.5.12"
    )


def test_a_bf16_draft_served_in_fp16(capsys, pair):
    """tanishqkumar/ssd PR #18; SGLang runs the draft in the served --dtype
    (0.5.10 configs/model_config.py:278)."""
    target, draft = pair
    line = sglang_line(target, draft, "--dtype float16")
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                "--engine", "sglang==0.5.10"))["DTYPE_HALF_RANGE"]  # fmt: skip
    assert "served --dtype float16" in f["evidence"] and f["source"] == "tanishqkumar/ssd PR #18"


def test_vllm_runs_the_draft_in_the_targets_dtype(capsys, tmp_path):
    """The draft's ModelConfig takes the target's dtype (0.24.0 config/speculative.py:721): an
    fp16 target config puts the bf16 draft in fp16 without any --dtype."""
    target = sc.target(tmp_path / "target", torch_dtype="float16")
    draft = sc.speculators_draft(tmp_path / "draft")
    line = vllm_line(target, draft)
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                "--engine", "vllm==0.24.0"))["DTYPE_HALF_RANGE"]  # fmt: skip
    assert any("config/speculative.py:721" in e for e in f["evidence"])


def test_a_quantized_target_is_a_warning_until_acceptance_is_near_zero(capsys, tmp_path):
    """vllm issue #9534, vllm-ascend issue #5974: a warning with evidence; a root cause only with
    near-zero acceptance observed and nothing else explaining it."""
    from kit.deployment import check

    fp8 = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    target = sc.target(tmp_path / "target", quantization_config=fp8)
    draft = sc.specforge_draft(tmp_path / "draft")
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--target-config",
                                str(target)))["QUANTIZED_TARGET"]  # fmt: skip
    assert f["severity"] == "warning" and not f["root_cause"]
    assert any("quant_method fp8" in e for e in f["evidence"])
    line = sglang_line(target, draft)
    near_zero = check(line, engine="sglang==0.5.10", accept_len=1.0)
    [q] = [f for f in near_zero.findings if f.code == "QUANTIZED_TARGET"]
    assert q.root_cause and q.severity == Severity.ERROR
    explained = check(sglang_line(target, draft, algo="EAGLE"), engine="sglang==0.5.10",
                      accept_len=1.0)  # fmt: skip
    [q] = [f for f in explained.findings if f.code == "QUANTIZED_TARGET"]
    assert not q.root_cause


def test_served_quantization_flag(capsys, pair):
    target, draft = pair
    line = vllm_line(target, draft, "--quantization fp8")
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                "--engine", "vllm==0.14.0"))["QUANTIZED_TARGET"]  # fmt: skip
    assert "served --quantization fp8" in f["evidence"]


def test_vocabulary_sizes_differ(capsys, tmp_path):
    target = sc.target(tmp_path / "target", vocab_size=1200)
    draft = sc.specforge_draft(tmp_path / "draft")
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--target-config",
                                str(target)))["VOCAB_MISMATCH"]  # fmt: skip
    assert "the target 1200" in f["title"]


def test_a_vl_target_and_a_draft_without_mrope(capsys, tmp_path):
    """sglang PR #8801: from 0.5.2 the draft reads mrope positions only if its config has
    mrope_section (models/llama_eagle3.py:113-119); vLLM 0.11.1 - 0.18 follows the target
    (v1/spec_decode/eagle.py:117), 0.24.0 the draft (llm_base_proposer.py:159)."""
    target = sc.vl_target(tmp_path / "target")
    plain = sc.specforge_draft(tmp_path / "plain", rope_theta=1000000.0, rope_scaling=None,
                               max_position_embeddings=32768)  # fmt: skip

    def found(line, release, draft):
        return sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                       "--engine", release))  # fmt: skip

    sg = found(sglang_line(target, plain), "sglang==0.5.10", plain)["MROPE_POSITIONS_MISSING"]
    assert "sglang PR #8801" in sg["source"] and "llama_eagle3.py:113-119" in sg["source"]
    assert "MROPE_POSITIONS_MISSING" not in found(vllm_line(target, plain), "vllm==0.14.0", plain)
    assert "MROPE_POSITIONS_MISSING" in found(vllm_line(target, plain), "vllm==0.24.0", plain)


# ----------------------------------------------------------------------------------------------
# Capture (kit.tracing.capture) and known issues


def test_a_target_class_the_release_cannot_capture_from(capsys, tmp_path):
    """vLLM 0.9.2 captures aux states for Llama targets only: the capture check's finding."""
    target = sc.target(tmp_path / "target", architectures=["Qwen2ForCausalLM"], model_type="qwen2")
    draft = sc.speculators_draft(tmp_path / "draft")
    found = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch",
                                    vllm_line(target, draft), "--engine", "vllm==0.9.2"))  # fmt: skip
    assert "AUX_CAPTURE_UNSUPPORTED" in found


@pytest.mark.parametrize(
    ("release", "line_extra", "env", "code"),
    [
        ("vllm==0.11.0", "", "", "KNOWN_ISSUE_GREEDY_SENTINEL"),
        ("vllm==0.18.0", "", "", "KNOWN_ISSUE_PREFIX_CACHE_DECAY"),
        ("vllm==0.14.0", "", "VLLM_USE_V2_MODEL_RUNNER=1 ", "KNOWN_ISSUE_MODEL_RUNNER_V2"),
    ],
)
def test_vllm_known_issues_apply_to_their_releases(
    capsys, spec_pair, release, line_extra, env, code
):
    """vllm PR #27077 (0.11.0 rejection_sampler.py:17), issue #41838 (0.17.1 on, prefix caching
    on by default), issue #40551 (VLLM_USE_V2_MODEL_RUNNER from 0.12.0 envs.py:1550)."""
    target, draft = spec_pair
    line = env + vllm_line(target, draft, line_extra)
    f = sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                "--engine", release))[code]  # fmt: skip
    assert f["severity"] == "info" and f["title"].startswith("known issue:")


def test_known_issues_stay_out_of_other_releases_and_settings(capsys, spec_pair):
    target, draft = spec_pair

    def found(line, release):
        return sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                       "--engine", release))  # fmt: skip

    assert "KNOWN_ISSUE_GREEDY_SENTINEL" not in found(vllm_line(target, draft), "vllm==0.11.2")
    off = vllm_line(target, draft, "--no-enable-prefix-caching")
    assert "KNOWN_ISSUE_PREFIX_CACHE_DECAY" not in found(off, "vllm==0.18.0")


def test_sglang_dp_attention_with_spec_v2_graphs(capsys, pair):
    """sglang PR #16974: 0.5.6 - 0.5.7 with DP attention, spec v2 (SGLANG_ENABLE_SPEC_V2,
    environ.py) and CUDA graphs; fixed in 0.5.8 (eagle_draft_extend_cuda_graph_runner.py:258)."""
    target, draft = pair
    line = "SGLANG_ENABLE_SPEC_V2=1 " + sglang_line(
        target, draft, "--enable-dp-attention --dp-size 2"
    )

    def found(line, release):
        return sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                       "--engine", release))  # fmt: skip

    assert "KNOWN_ISSUE_DP_ATTENTION_DRAFT_EXTEND" in found(line, "sglang==0.5.6")
    assert "KNOWN_ISSUE_DP_ATTENTION_DRAFT_EXTEND" not in found(line, "sglang==0.5.8")
    no_v2 = line.replace("SGLANG_ENABLE_SPEC_V2=1 ", "")
    assert "KNOWN_ISSUE_DP_ATTENTION_DRAFT_EXTEND" not in found(no_v2, "sglang==0.5.6")


def test_sglang_spec_v2_overlap_with_a_vl_target(capsys, tmp_path):
    """sglang PR #14063: spec v2 is on by default from 0.5.11 (environ.py:459);
    --disable-overlap-schedule selects the synchronous path."""
    target = sc.vl_target(tmp_path / "target")
    draft = sc.specforge_draft(tmp_path / "draft", rope_theta=1000000.0,
                               rope_scaling={"type": "mrope", "mrope_section": [4, 2, 2]},
                               max_position_embeddings=32768)  # fmt: skip

    def found(line):
        return sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch", line,
                                       "--engine", "sglang==0.5.11"))  # fmt: skip

    assert "KNOWN_ISSUE_SPEC_V2_MULTIMODAL" in found(sglang_line(target, draft))
    synchronous = sglang_line(target, draft, "--disable-overlap-schedule")
    assert "KNOWN_ISSUE_SPEC_V2_MULTIMODAL" not in found(synchronous)


def test_a_quantized_target_with_zero_acceptance_in_the_log_is_the_root_cause(capsys, tmp_path):
    """The incident's before.log (sglang 0.5.10, accept len 1.00) with an FP8 target and nothing
    else found wrong: doctor hands the observed accept length to the deployment check."""
    fp8 = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    target = sc.target(tmp_path / "target", quantization_config=fp8)
    draft = sc.specforge_draft(tmp_path / "draft")
    log = sc.ROOT / "data" / "incident" / "logs" / "before.log"
    report = sc.doctor_json(
        capsys, "--draft", str(draft), "--target-config", str(target), "--log", str(log),
        "--launch", sglang_line(target, draft), "--engine", "sglang==0.5.10",
    )  # fmt: skip
    [cause] = [f for f in report["findings"] if f["root_cause"]]
    assert cause["code"] == "QUANTIZED_TARGET" and cause["severity"] == "error"
    assert "observed accept length 1.00: near zero" in cause["evidence"]


def test_a_llama_draft_window_across_vllm_releases(capsys, tmp_path):
    """Llama drafts: 0.10.0 reads no layer_types (models/llama.py:170-173), 0.10.1.1 reads them
    at the target's layer index (llama.py:171-172), 0.10.2 at the draft's (llama.py:173-180)."""
    target = sc.target(tmp_path / "target")
    window = {"layer_types": ["sliding_attention"], "sliding_window": 2048}
    draft = sc.speculators_draft(tmp_path / "draft", **window)

    def found(release):
        return sc.codes(sc.doctor_json(capsys, "--draft", str(draft), "--launch",
                                       vllm_line(target, draft), "--engine", release))  # fmt: skip

    assert "(ignored)" in found("vllm==0.10.0")["DRAFT_SLIDING_WINDOW_IGNORED"]["title"]
    assert "(misindexed)" in found("vllm==0.10.1.1")["DRAFT_SLIDING_WINDOW_IGNORED"]["title"]
    assert "DRAFT_SLIDING_WINDOW_IGNORED" not in found("vllm==0.10.2")

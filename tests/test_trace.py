"""Tracing the target -> draft hand-over through the reference draft module, CLI and figure.

The incident (README.md; docs/engines.md#sglang-aux-capture-and-the-fc-gate): Kimi-K2.5
(H = 7168, 61 layers) served by
sglang 0.5.10 with the aux capture inactive handed the draft one 7168-wide state, and the fc
gate `hidden_states.shape[-1] != embeds.shape[-1]` (0.5.10 models/llama_eagle3.py:176) skipped
the fusion.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from kit.checkpoint.config import load_draft_config, load_target_config, parse_target_config
from kit.checkpoint.files import open_checkpoint
from kit.cli import main
from kit.engines import all_releases
from kit.errors import KitError
from kit.findings import Severity
from kit.report.plots.datapath import BAD, datapath_figure
from kit.tracing.capture import simulate_capture
from kit.tracing.shapes import trace_draft

ROOT = Path(__file__).resolve().parent.parent
KIMI = ROOT / "data" / "incident" / "kimi-k2.5"
SAMPLE = ROOT / "data" / "samples" / "speculators-0.9.0-tiny"


@pytest.fixture(scope="module")
def kimi():
    return load_target_config(KIMI / "target"), load_draft_config(KIMI / "draft")


def tiny_target(n=32, hidden=32):
    """A Llama target matching the bundled sample's verifier shape (hidden 32, 32 layers)."""
    return parse_target_config(
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "num_hidden_layers": n,
            "hidden_size": hidden,
            "vocab_size": 64,
        }
    )


def shapes(report):
    return {h.name: h.shape for h in report.hooks}


def test_incident_configs_are_kimi_k25_sized(kimi):
    target, draft = kimi
    assert target.architecture == "KimiK25ForConditionalGeneration"
    assert (target.num_hidden_layers, target.hidden_size, target.vocab_size) == (61, 7168, 163840)
    assert target.raw["text_config"]["model_type"] == "deepseek_v3"
    assert (draft.hidden_size, draft.vocab_size, draft.draft_vocab_size) == (7168, 163840, 32000)
    assert draft.source == "speculators" and draft.aux_layer_ids == [2, 30, 58]


def test_incident_no_aux_capture_bypasses_fc(kimi):
    """sglang 0.5.10, capture inactive: the logits processor's post-norm hidden (7168) reaches
    the draft; 7168 == H so fc is skipped (0.5.10 models/llama_eagle3.py:176)."""
    report = trace_draft(*kimi, "sglang==0.5.10", aux_capture=False)
    d = report.to_dict()
    assert d["hidden_width"] == 7168 and d["fc_applied"] is False and d["captured_layers"] == []
    assert d["feeds"] == "final_hidden_post_norm" and report.bypassed_step == "fc"
    s = shapes(report)
    assert "fc_in" not in s and "fc_out" not in s
    assert s["aux_hidden_states"] == (8, 7168) and s["attn_in"] == (8, 2 * 7168)
    assert s["logits"] == (8, 32000)
    f = next(f for f in report.findings if f.code == "FC_BYPASSED")
    assert f.severity == Severity.CRITICAL and f.root_cause
    assert "unlike its training" in f.title and "llama_eagle3.py:176" in f.source
    assert f.data == {"hidden_width": 7168, "expected_width": 21504}


def test_incident_with_capture_runs_fc(kimi):
    """With capture on: 3 × 7168 = 21504 -> fc -> 7168, the defaults [2, 30, 58]."""
    report = trace_draft(*kimi, "sglang==0.5.10")
    s = shapes(report)
    assert report.captured_layers == [2, 30, 58] and report.hidden_width == 21504
    assert report.fc_applied and report.bypassed_step is None and report.failed_step is None
    assert s["aux_hidden_states"] == s["fc_in"] == (8, 21504) and s["fc_out"] == (8, 7168)
    # the one warning: the draft was trained with norm_before_residual, which SGLang never
    # implements (0.5.12 models/llama_eagle3.py:93-97 keeps the pre-hidden_norm residual)
    warned = [f for f in report.findings if f.severity > Severity.INFO]
    assert [f.code for f in warned] == ["TRAINED_FLAG_IGNORED"]
    assert "norm_before_residual=False (trained True)" in warned[0].title


def test_incident_sglang_059_cannot_start(kimi):
    """KimiK25ForConditionalGeneration has no set_eagle3_layers_to_capture before 0.5.10
    (0.5.9 adds models/kimi_k25.py without it; 0.5.10 models/kimi_k25.py:841-850 delegates to
    the inner DeepSeek-V3 model)."""
    report = trace_draft(*kimi, "sglang==0.5.9")
    assert report.failed_step == "startup" and report.hooks == []
    assert "set_eagle3_layers_to_capture" in report.error
    assert report.findings[0].code == "AUX_CAPTURE_UNSUPPORTED"


def test_full_scale_trace_holds_no_tensor_memory(kimi):
    """The Kimi-K2.5-sized draft (embed 163840 × 7168 alone is 2.3 GB in bf16) traces on meta."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = trace_draft(*kimi, "vllm==0.18.0", device="meta", tokens=16)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert report.device == "meta" and shapes(report)["fc_in"] == (16, 21504)
    assert grown_mb < 500


_IMPORTS_CHILD = """
import json, sys
import torch
from kit.checkpoint.config import load_draft_config, load_target_config, parse_target_config
from kit.tracing.shapes import trace_draft
root, sample, kimi = sys.argv[1:]
lazy = lambda: sorted(m for m in ("sympy", "torch._dynamo") if m in sys.modules)
tiny = parse_target_config({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32,
                            "hidden_size": 32})
trace_draft(tiny, load_draft_config(sample), "sglang==0.5.12", device="cpu")
out = {"after_cpu_trace": lazy()}
torch.empty(4, device="meta") + 1
out["after_one_meta_op"] = lazy()
before = set(sys.modules)
trace_draft(load_target_config(kimi + "/target"), load_draft_config(kimi + "/draft"),
            "sglang==0.5.10", device="meta")
out["meta_trace_adds"] = sorted(set(sys.modules) - before)
print(json.dumps(out))
"""


def test_trace_imports_nothing_beyond_what_torch_needs_for_meta():
    """A cpu trace runs no meta kernel, so torch's lazy sympy / torch._dynamo imports (about 1 s
    and 70 MB, paid by the first Python meta kernel in a process) stay out; a full-scale meta
    trace imports nothing beyond what a single meta op already imported. Fresh interpreter."""
    run = subprocess.run(
        [sys.executable, "-c", _IMPORTS_CHILD, str(ROOT), str(SAMPLE), str(KIMI)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["after_cpu_trace"] == []
    assert out["after_one_meta_op"] == ["sympy", "torch._dynamo"]
    assert out["meta_trace_adds"] == []


def test_fc_failure_is_a_named_step(kimi):
    """vLLM always runs fc (0.9.2 v1/spec_decode/eagle.py:100-104): one 7168-wide state fails in
    fc's matmul, and the trace stops there with the hooks that fired."""
    report = trace_draft(*kimi, "vllm==0.18.0", aux_capture=False)
    assert report.failed_step == "fc" and report.fc_applied
    assert [h.name for h in report.hooks][-1] == "fc_in"
    assert "21504" in report.error
    assert {f.code for f in report.findings} == {"AUX_WIDTH_MISMATCH"}


def test_sample_traces_with_real_tensors_matching_its_checkpoint(sample_dir):
    """The bundled speculators 0.9.0 checkpoint on CPU: every hook width agrees with the
    tensor shapes in its safetensors header."""
    ck = open_checkpoint(sample_dir)
    t = ck.tensors
    report = trace_draft(
        tiny_target(), load_draft_config(sample_dir), "sglang==0.5.12", device="cpu"
    )
    s = shapes(report)
    assert report.device == "cpu" and report.failed_step is None
    assert s["fc_in"][-1] == t["fc.weight"].shape[1] and s["fc_out"][-1] == t["fc.weight"].shape[0]
    assert s["attn_in"][-1] == t["layers.0.self_attn.q_proj.weight"].shape[1]
    qkv = sum(t[f"layers.0.self_attn.{p}_proj.weight"].shape[0] for p in "qkv")
    assert s["qkv"][-1] == qkv
    assert s["logits"][-1] == t["lm_head.weight"].shape[0]
    assert {h.dtype for h in report.hooks if h.name != "draft_token_ids"} == {"bfloat16"}


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_module_and_rules_agree_on_every_release(engine):
    """The reference module's fc decision (kit.tracing.draft) and the capture rules (kit.tracing.capture) are
    written independently; they must agree for every release, capture on and off."""
    draft = load_draft_config(SAMPLE)
    for rel in all_releases(engine):
        for aux in (None, False):
            report = trace_draft(tiny_target(), draft, rel, aux_capture=aux)
            cap = simulate_capture(tiny_target(), draft, rel, aux_capture=aux)
            assert report.fc_applied == cap.fc_applied, (rel, aux)
            assert (report.failed_step is not None) == (cap.feeds == "crash"), (rel, aux)
            assert "TRACE_DISAGREES_WITH_RULES" not in {f.code for f in report.findings}


def cli(capsys, *args):
    rc = main(["trace", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


INCIDENT = ("--draft", str(KIMI / "draft"), "--target-config", str(KIMI / "target"))


def test_cli_json_is_the_issue_shape(capsys):
    rc, out, _ = cli(capsys, *INCIDENT, "--engine", "sglang==0.5.10", "--no-aux-capture", "--json")
    d = json.loads(out)
    assert rc == 0
    assert list(d)[:5] == ["captured_layers", "hidden_width", "fc_applied", "hooks", "findings"]
    assert d["hidden_width"] == 7168 and d["fc_applied"] is False
    assert all(set(h) == {"name", "shape", "dtype"} for h in d["hooks"])
    assert d["findings"][0]["code"] == "FC_BYPASSED"


def test_cli_text_and_gate(capsys, tmp_path):
    html = tmp_path / "path.html"
    rc, out, _ = cli(
        capsys,
        *INCIDENT,
        "--engine",
        "sglang==0.5.10",
        "--no-aux-capture",
        "--fail-on",
        "critical",
        "--html",
        str(html),
    )
    assert rc == 1 and "FC_BYPASSED" in out and "bypassed" in out and "attn_in" in out
    assert html.stat().st_size > 100_000  # plotly.js embedded: opens offline


def test_cli_reads_the_config_beside_a_checkpoint_file(capsys, tmp_path):
    target = tmp_path / "target.json"
    target.write_text(json.dumps(tiny_target().raw))
    rc, out, _ = cli(
        capsys,
        "--draft",
        str(SAMPLE / "model.safetensors"),
        "--target-config",
        str(target),
        "--engine",
        "vllm==0.11.2",
        "--json",
    )
    assert rc == 0 and json.loads(out)["captured_layers"] == [2, 16, 29]


def test_cli_bad_input_is_one_line(capsys, tmp_path):
    missing = tmp_path / "nope.json"
    rc, out, err = cli(
        capsys,
        "--draft",
        str(SAMPLE),
        "--target-config",
        str(missing),
        "--engine",
        "sglang==0.5.10",
    )
    assert rc == 2 and out == "" and err.count("\n") == 1 and str(missing) in err
    rc, _, err = cli(capsys, *INCIDENT, "--engine", "sglang==0.3.0")
    assert rc == 2 and "outside the supported range" in err


def _boxes(fig):
    return [s for s in fig.layout.shapes if s.type == "rect"]


def _labels(fig):
    return [a.text for a in fig.layout.annotations if a.text]


def test_datapath_marks_the_bypassed_fc(kimi):
    report = trace_draft(*kimi, "sglang==0.5.10", aux_capture=False)
    fig = datapath_figure(report)
    boxes = _boxes(fig)
    assert len(boxes) == len(report.hooks) + 2  # + the target, + the bypassed fc
    red = [b for b in boxes if b.fillcolor == BAD]
    assert len(red) == 1
    assert any("fc bypassed" in t for t in _labels(fig))
    assert any("[8, 7168]" in t and "aux_hidden_states" in t for t in _labels(fig))


def test_datapath_healthy_and_failing(kimi):
    healthy = datapath_figure(trace_draft(*kimi, "sglang==0.5.10"))
    assert not [b for b in _boxes(healthy) if b.fillcolor == BAD]
    assert any("fc_out" in t and "[8, 7168]" in t for t in _labels(healthy))
    failing = datapath_figure(trace_draft(*kimi, "vllm==0.18.0", aux_capture=False))
    assert any("fc fails" in t and "21504 expected" in t for t in _labels(failing))


def test_full_scale_on_cpu_is_refused_with_the_way_out(kimi):
    """Real tensors for a 4 GiB draft would exhaust a laptop: one clear error naming meta."""
    with pytest.raises(KitError, match="meta device"):
        trace_draft(*kimi, "sglang==0.5.10", device="cpu")
    with pytest.raises(KitError, match="meta or cpu"):
        trace_draft(*kimi, "sglang==0.5.10", device="cuda")


def test_cli_convention_and_cuda_graph_switches(capsys, tmp_path):
    """--aux-convention: kimi-k2.5-eagle3-mla style "capture-before" ids [2, 30, 58] in
    eagle_config are read one layer late by sglang 0.5.12 (deepseek_v2.py ids+1) and as meant
    by 0.5.13 (:2752, PR #25454). --cuda-graph: 0.5.10 graph replays capture the defaults
    (cuda_graph_runner.py:644-653)."""
    from kit.checkpoint.config import flatten_speculators

    raw = flatten_speculators(
        json.loads((SAMPLE / "config.json").read_text()), "LlamaForCausalLMEagle3"
    )
    raw["hidden_size"] = 7168
    raw["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}
    draft = tmp_path / "config.json"
    draft.write_text(json.dumps(raw))
    base = ("--draft", str(draft), "--target-config", str(KIMI / "target"), "--json")

    def run(*extra):
        rc, out, _ = cli(capsys, *base, *extra)
        assert rc == 0
        d = json.loads(out)
        codes = {f["code"] for f in d["findings"]} - {"TRAINED_FLAG_IGNORED"}  # SGLang: residual
        return d["captured_layers"], codes, d["cuda_graph_layers"]

    meant = ("--aux-convention", "after_k_layers")
    assert run("--engine", "sglang==0.5.12", *meant)[:2] == ([3, 31, 59], {"AUX_LAYER_OFFSET"})
    assert run("--engine", "sglang==0.5.13", *meant)[:2] == ([2, 30, 58], set())
    layers, found, graph = run("--engine", "sglang==0.5.10", "--cuda-graph")
    assert layers == [3, 31, 59] and graph == [2, 30, 58]
    assert "AUX_LAYERS_DIFFER_UNDER_CUDA_GRAPH" in found

"""Where the real vLLM 0.32.0 parted from the kit on the bundled pair, pinned fast: each test
builds the fault from the bundled draft and checks the kit tells what the engine does.

1. `use_aux_hidden_state: false` in the draft's `eagle_config` (inside `transformer_layer_config`
   of a speculators config, the top level of a flat one): vLLM hands the draft the target's last
   hidden state and skips `fc` (0.32.0 model_executor/models/llama_eagle3.py:179-183, :401-402;
   v1/worker/gpu_model_runner.py:644-648, 4952-4957).
2. Parameters no key writes: the draft's `load_weights` returns None, so vLLM's own "not
   initialized from checkpoint" check never runs (0.32.0 llama_eagle3.py:420-470,
   model_loader/default_loader.py:498-518) and they keep torch.empty memory.
3. 0.32.0 is a release the kit read, as is every release between its rows that changed a rule.
"""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from kit.checkpoint.config import load_draft_config, load_target_config, parse_draft_config
from kit.checkpoint.files import open_checkpoint
from kit.engines import parse_engine, pick
from kit.engines.vllm import acceptance, capture, config, load, params
from kit.engines.vocab import Outcome
from kit.findings import Severity
from kit.load.replay import simulate_load
from kit.offline_acceptance import as_deployed, healthy, load_prompts
from kit.tracing.capture import Feed, simulate_capture
from kit.verdict import diagnose
from tests.conftest import DRAFT, PROMPTS, TARGET

torch.set_num_threads(1)
FLAG = "transformer_layer_config.eagle_config.use_aux_hidden_state"


def _copy(tmp_path, name, edit_config=None, keep=lambda key: True):
    """The bundled draft, its config edited and its tensors filtered."""
    out = tmp_path / name
    out.mkdir()
    raw = json.loads((DRAFT / "config.json").read_text())
    (out / "config.json").write_text(json.dumps(edit_config(raw) if edit_config else raw))
    tensors = load_file(DRAFT / "model.safetensors")
    save_file({k: v for k, v in tensors.items() if keep(k)}, out / "model.safetensors")
    return out


def _aux_off_nested(raw):
    raw["transformer_layer_config"]["eagle_config"] = {"use_aux_hidden_state": False}
    return raw


def _flat_aux_off(raw):
    flat, _ = config.rewritten_config(parse_draft_config(raw), parse_engine("vllm==0.9.2"))
    flat["eagle_config"] = {"use_aux_hidden_state": False}
    return flat


@pytest.fixture(scope="module")
def few(target):
    return {"prompts": load_prompts(PROMPTS)[:12], "target": target, "progress": False}


# ---- 1. aux capture switched off in the draft's config -------------------------------------


def test_the_flag_inside_transformer_layer_config_is_read(tmp_path):
    """vLLM's draft config is `transformer_layer_config` (0.32.0 speculators/base.py:59-63), so
    its `eagle_config` carries the flag; capture and fc are off, the width handed over is the
    target's own (128), and the finding names where the flag is."""
    draft = load_draft_config(_copy(tmp_path, "off", _aux_off_nested))
    assert not draft.use_aux_hidden_state and draft.provenance["use_aux_hidden_state"] == FLAG
    cap = simulate_capture(load_target_config(TARGET), draft, "vllm==0.32.0")
    assert (cap.aux_capture, cap.fc_applied, cap.hidden_width) == (False, False, 128)
    assert cap.feeds == Feed.FINAL_HIDDEN_POST_NORM
    bypass = next(f for f in cap.findings if f.code == "FC_BYPASSED")
    assert any(FLAG in e for e in bypass.evidence) and FLAG in bypass.fix
    assert "0.32.0" in bypass.source and "384 wide" in bypass.fix
    before = simulate_capture(load_target_config(TARGET), draft, "vllm==0.11.2")
    assert before.fc_applied and before.hidden_width == 384  # read from 0.12.0 only


def test_a_top_level_eagle_config_of_a_speculators_config_is_not_read(tmp_path):
    """`update_eagle3` copies no `eagle_config` (0.32.0 speculators/algos.py:30-50): vLLM never
    sees a top-level one, so fc runs."""

    def top(raw):
        raw["eagle_config"] = {"use_aux_hidden_state": False}
        return raw

    draft = load_draft_config(_copy(tmp_path, "top", top))
    assert draft.use_aux_hidden_state
    assert simulate_capture(load_target_config(TARGET), draft, "vllm==0.32.0").fc_applied


def test_fc_keys_are_skipped_and_doctor_names_the_flag(tmp_path):
    """The loader drops `fc.` keys when the flag is off (0.32.0 llama_eagle3.py:462-463); doctor
    reports fc not applied at the target's width, the flag as the root cause."""
    path = _copy(tmp_path, "off", _aux_off_nested)
    rep = simulate_load(open_checkpoint(path), load_draft_config(path), "vllm==0.32.0")
    fc = next(k for k in rep.keys if k.key == "fc.weight")
    assert fc.outcome == Outcome.IGNORED and FLAG in fc.message
    report = diagnose(path, target_config=TARGET, engine="vllm==0.32.0")
    assert report.facts["fc_applied"] is False and report.facts["hidden_width"] == 128
    root = [f for f in report.findings if f.root_cause]
    assert root[0].code == "FC_BYPASSED" and any(FLAG in e for e in root[0].evidence)


@pytest.mark.parametrize("form", ["speculators", "flat"])
def test_offline_measures_the_draft_without_fc_in_both_forms(tmp_path, few, form):
    """The flat form built no fc and offline asked it for its dtype; both forms now measure the
    draft fed the target's last state, fc bypassed, far below healthy (the real engine: 2.545
    against 4.72 on 300 prompts)."""
    edit = _aux_off_nested if form == "speculators" else _flat_aux_off
    path = _copy(tmp_path, form, edit)
    ref = healthy(TARGET, DRAFT, count_as="vllm==0.32.0", **few)
    row = as_deployed(TARGET, path, "vllm==0.32.0", against=ref, **few)
    assert row.crash is None and row.result is not None
    assert row.wiring.feeds == Feed.FINAL_HIDDEN_POST_NORM and row.result.wiring.fc_applied is False
    flag = FLAG if form == "speculators" else "eagle_config.use_aux_hidden_state"
    assert row.wiring.describe()[0].endswith(f"{flag} is false)")
    assert row.vs_healthy.beyond_noise and row.vs_healthy.difference < -1.0
    assert not row.result.undetermined and "OFFLINE_BELOW_HEALTHY" in {f.code for f in row.findings}


# ---- 2. parameters the loader never writes -------------------------------------------------


def _no_layer(tmp_path):
    return _copy(tmp_path, "nolayer", keep=lambda k: not k.startswith("layers.0."))


def test_unwritten_parameters_are_torch_empty_not_an_init(tmp_path):
    """Without the decoder layer's keys the load is clean (no check runs) and the findings call
    the four projections torch.empty memory, not a default init."""
    path = _no_layer(tmp_path)
    rep = simulate_load(open_checkpoint(path), load_draft_config(path), "vllm==0.32.0")
    assert not rep.crashed
    left = next(f for f in rep.findings if f.code == "PARAM_LEFT_AT_INIT")
    empty = [e for e in left.evidence if "torch.empty memory" in e]
    assert len(empty) == 4 and all("proj" in e for e in empty)
    assert "returns None" in load.UNWRITTEN and "0.32.0" in load.UNWRITTEN


def test_offline_gives_a_range_from_the_floor_to_a_named_best_case(tmp_path, few):
    """No figure with an interval as if known: 1.00 (NaN: nothing accepted) to the best case,
    measured at PyTorch's default init, which the finding names as an assumption."""
    row = as_deployed(TARGET, _no_layer(tmp_path), "vllm==0.32.0", **few)
    res = row.result
    assert res is not None and res.undetermined
    assert len(row.wiring.empty_params) == 4
    lo, hi = res.accept_len_range
    assert lo == 1.0 and hi == res.accept_len > 1.0
    figures = res.figures()
    assert figures["outcome"] == "undetermined" and figures["accept_len_range"][0] == 1.0
    verdict = next(f for f in row.findings if f.code == "OFFLINE_ACCEPTANCE_UNDETERMINED")
    assert verdict.severity == Severity.CRITICAL and "1.00" in verdict.title
    assert any("default init" in e and "assumption" in e for e in verdict.evidence)
    assert verdict.source == load.UNWRITTEN
    assert "OFFLINE_ACCEPTANCE" not in {f.code for f in row.findings}


def test_a_fully_loaded_draft_is_measured_not_undetermined(few):
    row = as_deployed(TARGET, DRAFT, "vllm==0.32.0", **few)
    assert row.result is not None and not row.result.undetermined
    lo, hi = row.result.accept_len_range
    assert lo == hi == row.result.accept_len > 4.0


# ---- 3. the releases read -------------------------------------------------------------------


@pytest.mark.parametrize(
    "version", ["0.19.0", "0.22.0", "0.25.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0"]
)
def test_the_releases_read_between_the_rows_are_not_assumed(version):
    assert parse_engine(f"vllm=={version}").assumed_from is None


@pytest.mark.parametrize(
    ("rows", "before", "first", "value"),
    [
        (config.COPIES_NORM_BEFORE_FC, "0.18.0", "0.19.0", True),  # 0.19.0 algos.py:38
        (config.FC_NUM_AUX, "0.19.0", "0.22.0", True),  # 0.22.0 llama_eagle3.py:178-190
        (config.FC_NORM, "0.19.0", "0.22.0", True),  # 0.22.0 llama_eagle3.py:200-201
        (capture.IDS_SOURCE, "0.19.0", "0.22.0", ("top_level", "eagle_config")),
        (load.UNKNOWN_KEY, "0.24.0", "0.25.0", "ValueError"),  # 0.25.0 llama_eagle3.py:256-269
        (load.IGNORE_UNEXPECTED_BIAS, "0.24.0", "0.25.0", True),  # 0.25.0 utils.py:402
        (config.COPIES_POST_NORM_FLAGS, "0.24.0", "0.25.0", True),  # 0.25.0 algos.py:39-40
        (params.D2T_ALWAYS, "0.29.0", "0.30.0", False),  # 0.30.0 llama_eagle3.py:338-345
    ],
)
def test_rules_change_where_the_wheels_change(rows, before, first, value):
    """Each row turns at the first release whose wheel differs, not at the next one read."""
    new, old = (
        pick(rows, parse_engine(f"vllm=={first}")),
        pick(rows, parse_engine(f"vllm=={before}")),
    )
    assert new.value == value and old.value != value and first in new.source


def test_per_request_metrics_exist_from_029():
    """`metrics.speculative_decoding` (0.29.0 v1/metrics/stats.py:348-366)."""
    assert parse_engine("vllm==0.29.0") in acceptance.PER_REQUEST.versions
    assert parse_engine("vllm==0.28.0") not in acceptance.PER_REQUEST.versions


def test_a_full_vocab_draft_that_ships_d2t_fails_from_030(tmp_path):
    """From 0.30.0 a draft whose vocabulary is the target's builds no draft_id_to_target_id, so
    its d2t key names nothing (ValueError); 0.29.0 still loads it."""

    def full(raw):
        raw["draft_vocab_size"] = raw["transformer_layer_config"]["vocab_size"]
        return raw

    path = _copy(tmp_path, "full", full, keep=lambda k: k not in ("d2t", "t2d", "lm_head.weight"))
    tensors = load_file(path / "model.safetensors")
    tensors["d2t"] = torch.zeros(512, dtype=torch.long)
    save_file(tensors, path / "model.safetensors")
    cfg, ck = load_draft_config(path), open_checkpoint(path)
    assert not simulate_load(ck, cfg, "vllm==0.29.0").crashed
    new = simulate_load(ck, cfg, "vllm==0.30.0")
    assert new.crashed and "ValueError" in next(k for k in new.keys if k.key == "d2t").message

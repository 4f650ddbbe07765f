"""Aux ids off by one (kit/offline_acceptance/aux_shift.py): the bundled draft with its config's
ids shifted either way is named, with the ids it was trained on; the draft as trained is quiet,
and doctor with a target ranks the shift as the root cause."""

from __future__ import annotations

import json
import shutil

import pytest

import kit
from kit.offline_acceptance import healthy, load_prompts
from kit.offline_acceptance.aux_shift import aux_shift_finding
from tests.conftest import DRAFT, PROMPTS, TARGET

TRAINED = json.loads((DRAFT / "config.json").read_text())["eagle_aux_hidden_state_layer_ids"]


def shifted(tmp_path, shift: int):
    out = tmp_path / f"draft{shift:+d}"
    shutil.copytree(DRAFT, out)
    cfg = json.loads((out / "config.json").read_text())
    cfg["eagle_aux_hidden_state_layer_ids"] = [i + shift for i in TRAINED]
    (out / "config.json").write_text(json.dumps(cfg))
    return out


@pytest.fixture(scope="module")
def common(target):
    return {"target": target, "prompts": load_prompts(PROMPTS)[:120], "progress": False}


def test_the_draft_as_trained_is_quiet(common):
    ref = healthy(TARGET, DRAFT, **common)
    assert aux_shift_finding(TARGET, DRAFT, ref, **common) is None


@pytest.mark.parametrize("shift", [-1, 1])
def test_ids_off_by_one_either_way_are_named_with_the_trained_ones(tmp_path, common, shift):
    draft = shifted(tmp_path, shift)
    ref = healthy(TARGET, draft, **common)
    found = aux_shift_finding(TARGET, draft, ref, **common)
    assert found is not None and found.code == "AUX_IDS_SHIFTED" and found.root_cause
    assert found.data["shift"] == -shift
    assert str(TRAINED) in found.fix


def test_doctor_with_a_target_ranks_the_shift_first(tmp_path):
    draft = shifted(tmp_path, -1)
    report = kit.doctor(
        draft, target=TARGET, target_config=TARGET / "config.json", engine="vllm==0.32.0",
        num_prompts=120,
    )  # fmt: skip
    assert report.root_causes and report.root_causes[0].code == "AUX_IDS_SHIFTED"

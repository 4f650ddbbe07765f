"""TensorRT-LLM 1.2.0rc2 aux capture, one test per rule of `kit.engines.tensorrt_llm.capture`.

Sources: `_torch/speculative/eagle3.py` Eagle3SpecMetadata.__post_init__ (default ids),
`speculative/utils.py` get_spec_metadata (ids from eagle3_layers_to_capture only), the target's
decoder layers (maybe_capture_hidden_states after the MLP) and `modeling_speculative.py`
apply_eagle3_fc (SPEC:325-340, the width gate).
"""

from __future__ import annotations

import pytest
from capture_configs import codes, flat_draft, sample_draft, target

from kit.engines.tensorrt_llm.capture import NO_FALLBACK, default_ids
from kit.findings import Severity
from kit.tracing.capture import Feed, simulate_capture

TRT = "tensorrt_llm==1.2.0rc2"


def test_default_ids_are_the_outputs_of_layers_1_n2_minus_1_n_minus_4():
    """`DEFAULT_IDS`: (1, n//2 - 1, n - 4) are outputs of those layers (`CAPTURE_LOOP`), i.e. the
    states after 2, n//2 and n - 3 layers: what SpecForge's [1, 15, 28] means on 32 layers."""
    r = simulate_capture(target(n=32), flat_draft(ids=[1, 15, 28]), TRT)
    assert default_ids(32) == (1, 15, 28)
    assert r.captured_layers == [2, 16, 29] == r.trained_layers
    assert r.feeds == Feed.AUX_CONCAT and r.fc_applied and r.hidden_width == 3 * 4096
    # the draft's ids are not read, but the defaults happen to be the ones it was trained on
    assert codes(r)["AUX_IDS_IGNORED"].severity == Severity.INFO
    assert "AUX_LAYER_OFFSET" not in codes(r)


def test_draft_ids_are_never_read():
    """`IDS_SOURCE`: only the speculative config's eagle3_layers_to_capture sets the capture; a
    draft trained on other layers is fed the defaults, and the fix names the ids to pass."""
    r = simulate_capture(target(n=32, hidden=32), sample_draft([3, 10, 20]), TRT)
    assert r.config_layer_ids is None and r.captured_layers == [2, 16, 29]
    finding = codes(r)["AUX_IDS_IGNORED"]
    assert finding.severity == Severity.ERROR
    assert "eagle3_layers_to_capture" in finding.fix and "{2, 9, 19}" in finding.fix


@pytest.mark.parametrize("n", [2, 5])
def test_small_targets_are_refused(n):
    """Eagle3SpecMetadata.__post_init__: `num_layers <= 5` raises "Not enough hidden layers for
    default EAGLE3 capture" (a one-layer target captures its only layer)."""
    r = simulate_capture(target(n=n, hidden=32), sample_draft(), TRT)
    assert r.feeds == Feed.CRASH and "Not enough hidden layers" in r.startup_error
    assert codes(r)["AUX_CAPTURE_UNSUPPORTED"].root_cause
    one = simulate_capture(target(n=1, hidden=32), sample_draft(), TRT)
    assert one.startup_error is None and one.captured_layers == [1]


def test_width_gate_bypasses_fc_on_a_draft_wide_state():
    """`forward.ERAS` (SPEC:325-340): fc runs only when the state is not the draft's width; a
    target that hands over one H-wide state skips fc without a word."""
    r = simulate_capture(target(n=32, hidden=4096), flat_draft(), TRT, aux_capture=False)
    assert not r.fc_applied and r.feeds == Feed.FINAL_HIDDEN_POST_NORM
    assert "FC_BYPASSED" in codes(r)
    assert codes(r)["AUX_CAPTURE_UNVERIFIED"].evidence == (NO_FALLBACK,)


def test_targets_outside_the_table_are_unverified():
    """`CAPTURE_CLASSES`: only targets whose decoder layers were read calling
    maybe_capture_hidden_states are taken as capturing."""
    known = simulate_capture(target(), flat_draft(ids=[1, 15, 28]), TRT)
    assert "AUX_CAPTURE_UNVERIFIED" not in codes(known)
    other = simulate_capture(target(arch="MiniMaxM2ForCausalLM"), flat_draft(), TRT)
    assert "AUX_CAPTURE_UNVERIFIED" in codes(other)


def test_speculators_config_is_traced_as_rewritten():
    """A refused config is traced as the rewrite TensorRT-LLM reads, and says so."""
    r = simulate_capture(target(n=32, hidden=32), sample_draft(), TRT)
    assert "TRACED_AS_REWRITTEN" in codes(r) and r.fc_in_features == 96

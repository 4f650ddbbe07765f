"""Which verdicts a real engine has shown, and how anyone can see them again.

A verdict is the kit's reading of an engine's source; the strongest proof a reader can get that it
is also the engine's is the engine itself showing the same fault. The real-engine suite
(`tests_engine/`, `make test-engine`) serves the bundled pair with each fault the kit models, in
vLLM and in SGLang as they run, and asserts that `doctor` on the draft and the engine's own log
names that fault. `SEEN` lists those runs by finding code, so the postmortem can say, beside a
root cause, where a running engine showed it and the command that shows it again.
`tests/test_real_engine.py` fails if a row names a test that does not exist or does not
assert its code.

The incident itself is the other proof: `make incident-sglang` serves the incident's draft on real
SGLang 0.5.10 and writes `runs/incident-sglang/incident.json`, whose figures the postmortem shows
when it is there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUITE = "make test-engine"
INCIDENT_COMMAND = "make incident-sglang"
INCIDENT_JSON = Path("runs/incident-sglang/incident.json")
INCIDENT_CODES = ("KEYS_SILENTLY_DROPPED", "FC_BYPASSED")  # the two faults it reproduces
HEALTHY = "healthy"  # SEEN's key for a healthy pair: no root cause, the kit's figure


@dataclass(frozen=True)
class Seen:
    """One real-engine run: the releases, what the engine showed, the test that asserts it."""

    releases: str
    showed: str
    test: str  # pytest node id, relative to a clone of the kit

    @property
    def command(self) -> str:
        return f"python -m pytest {self.test}"


_SG = "tests_engine/test_sglang_scenarios.py::"
_VL = "tests_engine/test_vllm_scenarios.py::"
_EC = "tests_engine/test_engine_check_"
SGLANG_RELEASES = "sglang 0.5.10, 0.5.11, 0.5.12, 0.5.23"

SEEN: dict[str, tuple[Seen, ...]] = {
    HEALTHY: (
        Seen(
            SGLANG_RELEASES,
            "verify steps equal to the kit's count for each release's positions",
            _SG + "test_healthy_is_the_kits_prediction_for_the_release",
        ),
        Seen(
            "vllm 0.32.0",
            "accepted tokens per position equal to the kit's",
            _VL + "test_healthy_counts_equal_the_kits",
        ),
    ),
    "KEYS_SILENTLY_DROPPED": (
        Seen(
            "sglang 0.5.10",
            "the decoder left unwritten; accept length inside the kit's range from the floor",
            _SG + "test_keys_as_layers0_leave_the_decoder_unwritten",
        ),
    ),
    "PARAM_LEFT_AT_INIT": (
        Seen(
            "vllm 0.32.0",
            "the decoder layer skipped by the loader; accept length inside the kit's range",
            _VL + "test_decoder_layer_skipped_root_cause",
        ),
    ),
    "FC_BYPASSED": (
        Seen(
            "sglang 0.5.10",
            "fc bypassed: the engine's accept length inside the kit's interval",
            _SG + "test_aux_capture_off_bypasses_fc",
        ),
        Seen(
            "vllm 0.32.0",
            "fc bypassed: the engine's accept length inside the kit's interval",
            _VL + "test_aux_capture_off_speculators_form",
        ),
    ),
    "AUX_IDS_SHIFTED": (
        Seen(
            "sglang 0.5.10",
            "the shifted layers captured, accept length inside the kit's interval",
            _SG + "test_aux_ids_shifted",
        ),
        Seen(
            "vllm 0.32.0",
            "its own start-up line naming the shifted layers",
            _VL + "test_aux_ids_shifted",
        ),
    ),
    "D2T_MISSING": (
        Seen("sglang 0.5.10", "draft ids read as target ids", _SG + "test_no_d2t"),
        Seen("vllm 0.32.0", "draft ids read as target ids", _VL + "test_no_d2t"),
    ),
    "UNSUPPORTED_CONFIG": (
        Seen(
            "sglang 0.5.10",
            "the server refusing the config at start-up",
            _SG + "test_a_config_sglang_refuses",
        ),
    ),
    "SHAPE_CONTRADICTS_CONFIG": (
        Seen(
            "sglang 0.5.10",
            "the loader's shape assertion, with the kit's shapes",
            _SG + "test_a_start_up_crash_is_the_kits_crash_row",
        ),
    ),
    "STARTUP_CRASH": (
        Seen(
            "sglang 0.5.10",
            "the crash the kit's row predicts, with the same exception",
            _SG + "test_a_start_up_crash_is_the_kits_crash_row",
        ),
        Seen(
            "vllm 0.32.0",
            "the crash the kit's row predicts, with the same exception",
            _VL + "test_key_naming_a_module_vllm_lacks",
        ),
    ),
    "ENGINE_KNOWN_DEFECT": (
        Seen(
            "sglang 0.5.10 beside 0.5.12",
            "draft positions one late, named beside the release with the fix",
            _EC + "sglang.py::test_0_5_10_drafts_late_and_is_named_beside_the_release_with_the_fix",
        ),
        Seen(
            "vllm 0.32.0 (CPU build)",
            "sampled verification at uninitialised temperatures",
            _EC + "vllm.py::test_the_cpu_build_as_shipped",
        ),
    ),
}


def seen_for(codes: list[str], healthy: bool) -> list[tuple[str, Seen]]:
    """The real-engine runs behind these root causes (or behind a healthy verdict), in order."""
    keys = [HEALTHY] if healthy else list(dict.fromkeys(codes))
    return [(key, seen) for key in keys for seen in SEEN.get(key, ())]


def incident_applies(codes: list[str], engine: str) -> bool:
    """The incident reproduction is this run's proof when its faults are this run's on SGLang."""
    return engine.startswith("sglang") and any(code in codes for code in INCIDENT_CODES)


def incident_result(root: Path) -> dict[str, Any] | None:
    """`make incident-sglang`'s record in this clone, if it ran and reproduced; else None."""
    path = root / INCIDENT_JSON
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(result, dict) and result.get("reproduced") is True
    return result if ok and isinstance(result.get("runs"), dict) else None

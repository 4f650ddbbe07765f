"""`offline --backend sglang` where SGLang is not installed (this venv), and the backend's
arithmetic: SGLang's per-request counters as counts, the exception its log names when it does
not start, the server it launches. Against the real engine: `tests_engine/` (make test-engine)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kit
from kit.errors import KitError
from kit.offline_acceptance.sglang_backend import (
    INSTALL,
    EngineSettings,
    _counts,
    greedy_on_cpu_finding,
    server_command,
    startup_crash,
)
from tests.conftest import DRAFT, TARGET

# one request of a real sglang 0.5.10 run on the bundled pair (4 steps, 5 draft tokens): 7
# tokens, the prefill's and 6 from 3 verify steps that accepted 0, 1 and 4 drafts, the last step
# 2 of them past the stop token
META_0_5_10 = {
    "completion_tokens": 7,
    "spec_accept_token_num": 5,
    "spec_draft_token_num": 12,
    "spec_verify_ct": 3,
    "spec_accept_histogram": [1, 1, 0, 0, 1],
}


def test_cli_without_sglang_says_how_to_install_it():
    done = subprocess.run(
        [sys.executable, "-m", "kit", "offline", "--target", str(TARGET), "--draft", str(DRAFT),
         "--backend", "sglang"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {INSTALL}"]
    assert "requirements-sglang.txt" in INSTALL and done.stdout == ""


def test_api_without_sglang_raises_the_same_line():
    with pytest.raises(KitError, match=r"requirements-sglang\.txt"):
        kit.offline(TARGET, DRAFT, backend="sglang")


def test_a_release_that_stops_at_the_stop_token_counts_what_was_emitted():
    """0.5.10's scheduler counts the last step up to the stop (6 emitted, 3 steps: 3 accepted)
    where the request's own counter has 5; a release counting past it takes the 5."""
    at_stop, past = _counts(META_0_5_10, 4, past_stop=False), _counts(META_0_5_10, 4, True)
    assert (at_stop.steps, at_stop.accepted, at_stop.emitted) == (3, 3, 6)
    assert (past.steps, past.accepted, past.emitted) == (3, 5, 6)
    assert at_stop.per_position == past.per_position == [2, 1, 1, 1]


def test_later_releases_name_the_histogram_and_the_count_anew():
    """0.5.12 on: `spec_correct_drafts_histogram`, `spec_num_correct_drafts`."""
    meta = {"completion_tokens": 7, "spec_verify_ct": 3, "spec_num_correct_drafts": 5,
            "spec_correct_drafts_histogram": [1, 1, 0, 0, 1]}  # fmt: skip
    assert _counts(meta, 4, past_stop=True).accepted == 5


@pytest.mark.parametrize(
    "change",
    [{"spec_verify_ct": 4}, {"spec_accept_token_num": 6}, {"completion_tokens": 12}],
)
def test_counters_that_disagree_are_not_figures(change):
    with pytest.raises(KitError, match="disagree"):
        _counts({**META_0_5_10, **change}, 4, past_stop=False)


SCHEDULER_LOG = """\
[2026-12-06 18:58:06] Traceback (most recent call last):
  File "urllib3/connection.py", line 85, in create_connection
ConnectionRefusedError: [Errno 111] Connection refused
[2026-12-06 18:58:06] Scheduler hit an exception: Traceback (most recent call last):
  File "sglang/srt/model_loader/weight_utils.py", line 1, in default_weight_loader
AssertionError: Attempted to load weight (torch.Size([128, 256])) into parameter model.fc.weight
[2026-12-06 18:58:07] Received sigquit from a child process. It usually means the child failed.
"""
LAUNCHER_LOG = """\
Traceback (most recent call last):
  File "sglang/launch_server.py", line 8, in <module>
ImportError: first
Traceback (most recent call last):
  File "sglang/srt/utils/hf_transformers_utils.py", line 514, in get_config
ValueError: Unrecognized model in /d. Should have a `model_type` key in its config.json
"""


def test_the_scheduler_s_exception_is_the_crash_and_connection_errors_are_not(tmp_path):
    log = tmp_path / "sglang.log"
    log.write_text(SCHEDULER_LOG)
    crash = startup_crash(log)
    assert crash.kind == "AssertionError" and "model.fc.weight" in crash.message
    log.write_text(LAUNCHER_LOG)  # no scheduler: the launcher's own, the last one it printed
    assert str(startup_crash(log)).startswith("ValueError: Unrecognized model in /d.")
    log.write_text("loading\nkilled\n")  # no exception named: its last lines say what there is
    crash = startup_crash(log)
    assert crash.kind == "EngineExit" and crash.message.endswith("it said last: loading | killed")


def test_a_cpu_launch_carries_sglangs_cpu_path_and_a_gpu_launch_does_not():
    settings = EngineSettings(python="py", engine_dtype="bfloat16", extra_args=("--x", "1"))
    cpu = server_command(TARGET, DRAFT, 4, 0, (30000, 20001), settings, cpu=True)
    gpu = server_command(TARGET, DRAFT, 4, 0, (30000, 20001), settings, cpu=False)
    assert cpu[:3] == ["py", "-m", "sglang.launch_server"] and cpu[-2:] == ["--x", "1"]
    for flag, value in [("--speculative-num-steps", "4"), ("--speculative-eagle-topk", "1"),
                        ("--speculative-num-draft-tokens", "5"), ("--dtype", "bfloat16")]:  # fmt: skip
        assert cpu[cpu.index(flag) + 1] == value and gpu[gpu.index(flag) + 1] == value
    assert cpu[cpu.index("--device") + 1] == "cpu" and "--device" not in gpu
    for cmd in (cpu, gpu):  # its own NCCL port, not one SGLang takes from bind(0)
        assert (
            cmd[cmd.index("--port") + 1] == "30000" and cmd[cmd.index("--nccl-port") + 1] == "20001"
        )


def test_a_sampled_figure_on_a_cpu_is_called_greedy():
    found = greedy_on_cpu_finding("sglang==0.5.10", 0.7)
    assert found is not None and found.code == "ENGINE_CPU_SAMPLING_UNRELIABLE"
    assert "spec_utils.py:49" in found.source
    assert greedy_on_cpu_finding("sglang==0.5.10", 0.0) is None


def test_a_request_stopped_at_the_targets_eos_is_refused():
    """SGLang ends a request at the target's end of sequence too; the kit's completion runs on to
    the prompt's stop ids, so that request's counts would not compare."""
    from kit.offline_acceptance.prompts import Prompt
    from kit.offline_acceptance.sglang_backend import _check_stop

    prompt = Prompt(ids=[1, 2], stop_ids=[40])
    _check_stop(1, prompt, {"finish_reason": {"type": "stop", "matched": 40}})
    _check_stop(1, prompt, {"finish_reason": {"type": "length", "length": 24}})
    with pytest.raises(KitError, match="prompt 3: SGLang stopped at token 0"):
        _check_stop(3, prompt, {"finish_reason": {"type": "stop", "matched": 0}})


def test_each_server_gets_ports_below_the_ephemeral_range_never_twice():
    """A server binds its ports only after it starts; ports from the kernel's ephemeral range can
    meanwhile go to another socket (a neighbour's NCCL port from bind(0)), and one port handed to
    two servers started side by side stops one of them."""
    from kit.offline_acceptance.sglang_backend import _ephemeral_low, _free_port

    ports = [_free_port() for _ in range(100)]
    assert len(set(ports)) == 100
    assert all(20000 <= p < min(32000, _ephemeral_low()) for p in ports)


def test_ports_still_come_where_the_ephemeral_range_starts_low(monkeypatch):
    from kit.offline_acceptance import sglang_backend

    monkeypatch.setattr(sglang_backend, "_ephemeral_low", lambda: 10000)
    assert 20000 <= sglang_backend._free_port() < 32000

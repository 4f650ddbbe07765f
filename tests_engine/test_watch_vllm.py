"""`kit watch` on the real vLLM 0.32.0 CPU build, on the bundled pair and faulty copies of it.

Needs the engine's venv (`.venv-vllm/`, or VLLM_PYTHON naming its interpreter); `make test` does
not collect this folder. Each scenario starts the real engine (about 25 s on 2 cores): a server on
127.0.0.1 for the healthy and the silently broken draft, offline `vllm.LLM` scripts otherwise.
Fixtures live here, not in a conftest, so that this file stands beside the rest of the engine
suite without touching it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parent.parent
TARGET, DRAFT = ROOT / "data/pair/target", ROOT / "data/pair/draft"
VLLM_PYTHON = Path(os.environ.get("VLLM_PYTHON", ROOT / ".venv-vllm/bin/python"))
SPEC = {"method": "eagle3", "num_speculative_tokens": 5}
ENGINE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "KIT_WATCH_INTERVAL": "0.5"}

pytestmark = pytest.mark.skipif(
    not VLLM_PYTHON.exists(), reason=f"no vLLM interpreter at {VLLM_PYTHON} (set VLLM_PYTHON)"
)

OFFLINE = """
import sys
if __name__ == "__main__":
    from vllm import LLM, SamplingParams
    llm = LLM(model=sys.argv[1], dtype="float32", enforce_eager=True, max_model_len=256,
              gpu_memory_utilization=0.3,
              speculative_config={"model": sys.argv[2], "method": "eagle3",
                                  "num_speculative_tokens": 5})
    llm.generate(["Once upon a time"] * 4, SamplingParams(temperature=0, max_tokens=24))
    print("offline done")
"""

IN_PROCESS = """
import sys
if __name__ == "__main__":
    import kit
    from vllm import LLM, SamplingParams
    with kit.watch(sys.argv[3]) as w:
        llm = LLM(model=sys.argv[1], dtype="float32", enforce_eager=True, max_model_len=256,
                  gpu_memory_utilization=0.3,
                  speculative_config={"model": sys.argv[2], "method": "eagle3",
                                      "num_speculative_tokens": 5})
        llm.generate(["Once upon a time"] * 4, SamplingParams(temperature=0, max_tokens=24))
        del llm
    print("codes:", " ".join(f.code for f in w.findings()))
"""


def faulty_copy(dst: Path, rename=None, config=None) -> Path:
    """The bundled draft with its keys renamed or its config edited, made at test time."""
    dst.mkdir(parents=True, exist_ok=True)
    tensors = load_file(str(DRAFT / "model.safetensors"))
    renamed = {(rename(k) if rename else k): v for k, v in tensors.items()}
    save_file(renamed, str(dst / "model.safetensors"))
    cfg = json.loads((DRAFT / "config.json").read_text())
    if config:
        config(cfg)
    (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def skip_layer(k: str) -> str:
    """vLLM 0.32's draft loader drops any name containing `t2d`, without a word."""
    return "t2d." + k if k.startswith("layers.0.") else k


def aux_off(cfg: dict) -> None:
    cfg["transformer_layer_config"]["eagle_config"] = {"use_aux_hidden_state": False}


def watch_cmd(report: Path, *command: str) -> list[str]:
    return [sys.executable, "-m", "kit", "watch", "--report", str(report), "--", *command]


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, **ENGINE_ENV, **extra}


def run_offline(tmp_path: Path, draft: Path) -> tuple[subprocess.CompletedProcess, dict]:
    script = tmp_path / "offline.py"
    script.write_text(OFFLINE)
    report = tmp_path / "kit-watch.json"
    cmd = watch_cmd(report, str(VLLM_PYTHON), str(script), str(TARGET), str(draft))
    out = subprocess.run(cmd, env=env(), cwd=tmp_path, capture_output=True, text=True, timeout=400)
    return out, json.loads(report.read_text())


def block(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("eagle3-kit:")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python -m vllm.entrypoints.openai.api_server` under `kit watch`, stderr read live."""

    def __init__(self, tmp_path: Path, draft: Path) -> None:
        self.port = free_port()
        self.report = tmp_path / "kit-watch.json"
        self.stderr_path = tmp_path / "stderr.log"
        server = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server"]
        server += ["--model", str(TARGET), "--port", str(self.port), "--host", "127.0.0.1"]
        server += ["--dtype", "float32", "--enforce-eager", "--max-model-len", "256"]
        server += ["--gpu-memory-utilization", "0.3"]
        server += ["--speculative-config", json.dumps({"model": str(draft), **SPEC})]
        self.err = self.stderr_path.open("w")
        self.proc = subprocess.Popen(
            watch_cmd(self.report, *server), env=env(), cwd=tmp_path,
            stdout=subprocess.DEVNULL, stderr=self.err,
        )  # fmt: skip

    def healthy(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.port}/health"
            return urllib.request.urlopen(url, timeout=2).status == 200
        except OSError:
            return False

    def wait_ready(self, timeout: float = 300) -> None:
        end = time.time() + timeout
        while not self.healthy():
            assert self.proc.poll() is None, self.stderr_path.read_text()[-3000:]
            assert time.time() < end, "server did not start"
            time.sleep(0.5)

    def complete(self, n: int = 4) -> None:
        body = {"model": str(TARGET), "prompt": "Once upon a time", "max_tokens": 24}
        body["temperature"] = 0
        for _ in range(n):
            req = urllib.request.Request(
                f"http://127.0.0.1:{self.port}/v1/completions", json.dumps(body).encode(),
                {"Content-Type": "application/json"},
            )  # fmt: skip
            urllib.request.urlopen(req, timeout=120).read()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=90)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.err.close()
        return code

    def stderr(self) -> str:
        return self.stderr_path.read_text()


def test_healthy_server_is_quiet_and_reports_width_and_fc(tmp_path):
    server = Server(tmp_path, DRAFT)
    try:
        server.wait_ready()
        server.complete()
        time.sleep(1.5)  # one acceptance interval
    finally:
        code = server.stop()
    report = json.loads(server.report.read_text())
    assert block(server.stderr()) == []  # quiet
    ff = report["first_forward"]
    assert (ff["width"], ff["fc_ran"], ff["nan"], ff["captured_layers"]) == (
        384,
        True,
        False,
        [2, 4, 5],
    )
    assert all(p["state"] in ("written", "from_target") for p in report["load"]["params"])
    assert report["acceptance"]["totals"]["accepted"] > 0
    assert report["exit_code"] == code and report["engine"] == {"name": "vllm", "version": "0.32.0"}


def test_silently_skipped_layer_is_named_before_the_server_serves(tmp_path):
    draft = faulty_copy(tmp_path / "draft", rename=skip_layer)
    server = Server(tmp_path, draft)
    try:
        server.wait_ready()
        named_before_ready = "OBSERVED_PARAMS_UNWRITTEN" in server.stderr()
        loaded_at = json.loads(server.report.read_text())["loaded"]["at"]
    finally:
        server.stop()
    assert named_before_ready  # in its first seconds, before any request
    lines = block(server.stderr())
    assert "[CRITICAL] OBSERVED_PARAMS_UNWRITTEN" in lines[1]
    assert any("model.layers.0.self_attn.qkv_proj.weight" in line for line in lines)
    assert any(
        "'weights not initialized from checkpoint' check never ran" in line for line in lines
    )
    assert loaded_at > 0


def test_aux_capture_off_is_observed_as_fc_not_run(tmp_path):
    out, report = run_offline(tmp_path, faulty_copy(tmp_path / "draft", config=aux_off))
    assert out.returncode == 0 and "offline done" in out.stdout
    ff = report["first_forward"]
    assert (ff["fc_ran"], ff["width"]) == (False, 128)
    assert report["draft"]["use_aux_hidden_state"] is False
    assert any("[CRITICAL] OBSERVED_FC_NOT_RUN" in line for line in block(out.stderr))


def test_doctor_watch_ranks_the_observed_fault_first(tmp_path):
    out, _ = run_offline(tmp_path, faulty_copy(tmp_path / "draft", config=aux_off))
    assert out.returncode == 0
    doctor = [sys.executable, "-m", "kit", "doctor", "--watch", str(tmp_path / "kit-watch.json")]
    verdict = subprocess.run([*doctor, "--json"], capture_output=True, text=True, cwd=tmp_path)
    assert verdict.returncode == 0, verdict.stderr
    report = json.loads(verdict.stdout)
    assert report["engine"] == "vllm==0.32.0"  # the release the engine reported
    assert report["findings"][0]["code"] == "OBSERVED_FC_NOT_RUN"
    assert "observed_fc_ran" in report["facts"] and report["facts"]["observed_fc_ran"] is False


def test_startup_crash_is_captured_with_the_engines_exception(tmp_path):
    rename = lambda k: k.replace("hidden_norm", "hidden_nrm")  # noqa: E731
    out, report = run_offline(tmp_path, faulty_copy(tmp_path / "draft", rename=rename))
    assert out.returncode != 0 and report["exit_code"] == out.returncode
    first = min(report["crashes"].values(), key=lambda c: c["at"])
    assert first["type"] == "ValueError" and "hidden_nrm" in first["message"]
    assert first["message"] in out.stderr  # the engine's own words, as it logged them
    assert "[CRITICAL] OBSERVED_STARTUP_CRASH: the engine failed: ValueError" in "\n".join(
        block(out.stderr)
    )


def test_context_manager_around_an_offline_llm_in_the_calling_process(tmp_path):
    draft = faulty_copy(tmp_path / "draft", rename=skip_layer)
    script = tmp_path / "in_process.py"
    script.write_text(IN_PROCESS)
    report = tmp_path / "w.json"
    cmd = [str(VLLM_PYTHON), str(script), str(TARGET), str(draft), str(report)]
    out = subprocess.run(
        cmd, env=env(PYTHONPATH=str(ROOT)), cwd=tmp_path, capture_output=True, text=True,
        timeout=400,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    codes = out.stdout.split("codes:")[1].split()
    assert codes[0] == "OBSERVED_PARAMS_UNWRITTEN"
    assert any("OBSERVED_PARAMS_UNWRITTEN" in line for line in block(out.stderr))

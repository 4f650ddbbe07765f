"""Each crash the fuzzing found, as a plain case, and the bounds on work any input can cause.

The first three are the crashes issue 24 reported; the rest were found by tests/fuzz. Each case
is one input that used to end in a traceback and now ends in one `KitError` naming the file.
"""

from __future__ import annotations

import json
import resource
import shutil
import struct
import time
from pathlib import Path

import pytest
from fuzz_inputs import DRAFT, TARGET, deep_text, safetensors_parts

import kit
from kit.cli import main
from kit.errors import KitError
from kit.limits import MAX_JSON_DEPTH

HEADER, DATA = safetensors_parts()


def draft_with(tmp_path: Path, config: str | bytes) -> Path:
    shutil.copy(DRAFT / "model.safetensors", tmp_path / "model.safetensors")
    raw = config.encode() if isinstance(config, str) else config
    (tmp_path / "config.json").write_bytes(raw)
    return tmp_path


def safetensors(tmp_path: Path, header: dict | bytes, data: bytes = DATA, n: int | None = None):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw) if n is None else n) + raw + data)
    shutil.copy(DRAFT / "config.json", tmp_path / "config.json")
    return path


@pytest.mark.parametrize("call", ["inspect", "simulate", "doctor"])
def test_a_config_nested_thousands_deep_is_one_error(tmp_path, call):
    draft = draft_with(tmp_path, deep_text(5000))
    calls = {"inspect": lambda: kit.inspect(draft), "doctor": lambda: kit.doctor(draft),
             "simulate": lambda: kit.simulate(draft, "sglang==0.5.10")}  # fmt: skip
    with pytest.raises(KitError, match=f"nests deeper than the limit of {MAX_JSON_DEPTH}") as e:
        calls[call]()
    assert e.value.path == str(draft / "config.json")


@pytest.mark.parametrize("value", [7, True, {"a": 1}, "LlamaForCausalLMEagle3"])
def test_architectures_not_a_list_of_names_is_one_error(tmp_path, value):
    config = {**json.loads((DRAFT / "config.json").read_text()), "architectures": value}
    draft = draft_with(tmp_path, json.dumps(config))
    with pytest.raises(KitError, match=r"'architectures' is .*, not a list of class names"):
        kit.inspect(draft)


def test_an_accept_len_too_large_for_a_float_is_not_a_figure(tmp_path):
    log = tmp_path / "server.log"
    good = "[2026-01-05 08:00:01 TP0] Decode batch, #running-req: 1, accept len: 2.50, cuda graph: True"
    log.write_text(good + "\n" + good.replace("2.50", "9" * 400) + "\n")
    report = kit.analyze_logs([log])
    assert report.runs[0].accept_len.mean == pytest.approx(2.5)  # the huge one read as none


def test_a_request_count_too_large_for_a_float_is_an_unread_line(tmp_path):
    """Found by fuzzing: `#running-req: 9…9` (400 digits) is an int no float holds, and
    `math.isfinite` of it raised OverflowError out of the SGLang decode reader."""
    log = tmp_path / "server.log"
    good = "[2026-01-05 08:00:01 TP0] Decode batch, #running-req: 1, accept len: 2.50, cuda graph: True"
    log.write_text(good + "\n" + good.replace("req: 1,", "req: " + "9" * 400 + ",") + "\n")
    run = kit.analyze_logs([log]).runs[0]
    assert run.accept_len.count == 1 and run.unparsed_lines == 1
    assert "not a finite figure" in next(iter(run.unparsed_reasons))


@pytest.mark.parametrize(
    "header, problem",
    [
        ({**HEADER, "__metadata__": 0}, "__metadata__ is not a JSON object of strings"),
        ({**HEADER, "__metadata__": {"format": 1}}, "__metadata__ is not a JSON object of strings"),
        (json.dumps(HEADER)[:-1].encode() + b', "d2t": ' + json.dumps(HEADER["d2t"]).encode()
         + b"}", "key 'd2t' appears twice"),
    ],
)  # fmt: skip
def test_a_header_safetensors_refuses_is_refused_before_its_bytes_are_read(
    tmp_path, header, problem
):
    """Found by fuzzing: both passed the header check and then failed in safe_open."""
    safetensors(tmp_path, header)
    with pytest.raises(KitError, match=problem):
        kit.inspect(tmp_path)


@pytest.mark.parametrize("field, value", [("num_attention_heads", 10**30), ("hidden_size", 0),
                                          ("num_hidden_layers", 10**9)])  # fmt: skip
def test_a_size_no_model_has_is_one_error_not_an_endless_trace(tmp_path, field, value):
    """Found by fuzzing: 10^30 heads died in torch.empty; a billion layers would build forever."""
    config = json.loads((DRAFT / "config.json").read_text())
    config.get("transformer_layer_config", config)[field] = value  # where the sizes are read
    draft = draft_with(tmp_path, json.dumps(config))
    t0 = time.monotonic()
    with pytest.raises(KitError, match=f"{field} = {value} is outside"):
        kit.trace(draft, TARGET, "sglang==0.5.10")
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("info", [{"internal_states": 5, "speculative_num_steps": "x"},
                                  {"internal_states": [{"avg_spec_accept_length": {"a": 1}}],
                                   "speculative_num_steps": {"b": 2}}])  # fmt: skip
def test_server_info_with_objects_where_figures_go_is_read_without_them(tmp_path, info):
    """Found by fuzzing: TypeError in the draft share, AttributeError in the number reader."""
    path = tmp_path / "server_info.json"
    path.write_text(json.dumps(info))
    report = kit.analyze_logs([path])
    assert report.runs[0].num_steps is None and report.runs[0].window_count == 0


def test_a_prometheus_value_too_large_for_a_float_is_one_error(tmp_path):
    path = tmp_path / "metrics.prom"
    path.write_text("# TYPE vllm:spec_decode_num_drafts counter\nvllm:spec_decode_num_drafts "
                    + "9" * 400 + "\n")  # fmt: skip
    notes = kit.analyze_logs([path]).runs[0].notes  # read as a log after the parse failed
    assert any("not valid Prometheus text" in n and len(n) < 300 for n in notes), notes


def test_a_launch_token_too_long_for_a_file_name_is_read_as_a_word(tmp_path):
    line = f"python -m sglang.launch_server --model-path {'9' * 400} --tp-size 8"
    report = kit.check_deployment(line)
    assert report is not None


# --- bounded work -----------------------------------------------------------------------------


def test_a_header_length_of_2_to_the_40_allocates_nothing(tmp_path):
    safetensors(tmp_path, HEADER, n=2**40)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(KitError, match="header length 1099511627776 is implausible"):
        kit.inspect(tmp_path)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB


def test_a_tensor_claiming_2_to_the_62_elements_allocates_nothing(tmp_path):
    header = {**HEADER, "d2t": {**HEADER["d2t"], "shape": [2**31, 2**31]}}
    safetensors(tmp_path, header)
    with pytest.raises(KitError, match="spans 2048 bytes but I64"):
        kit.inspect(tmp_path)


def test_a_multi_gigabyte_checkpoint_is_read_by_its_head(tmp_path):
    """A 6 GB sparse file whose header is valid: inspect without stats reads the header only,
    in well under the time a whole read of 6 GB takes."""
    big = 6 << 30
    header = {"embed_tokens.weight": {"dtype": "BF16", "shape": [big // 2],
                                      "data_offsets": [0, big]}}  # fmt: skip
    raw = json.dumps(header).encode()
    path = tmp_path / "model.safetensors"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + big)
    shutil.copy(DRAFT / "config.json", tmp_path / "config.json")
    t0 = time.monotonic()
    report = kit.inspect(tmp_path, stats="none")
    assert report.checkpoint.tensors["embed_tokens.weight"].nbytes == big
    assert time.monotonic() - t0 < 3


# --- paths from inputs ------------------------------------------------------------------------


def test_an_index_naming_a_shard_outside_its_folder_is_refused_unread(tmp_path):
    folder = tmp_path / "draft"
    folder.mkdir()
    shutil.copy(DRAFT / "model.safetensors", tmp_path / "outside.safetensors")
    shutil.copy(DRAFT / "config.json", folder / "config.json")
    weight_map = {name: "../outside.safetensors" for name in HEADER if name != "__metadata__"}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    with pytest.raises(KitError, match="outside its folder"):
        kit.inspect(folder)


def test_a_run_summary_naming_a_notebook_outside_the_run_is_refused(tmp_path):
    from kit.report.runs import load_run

    step = {"name": "inspect", "status": "ok", "notebook": "../../secret.ipynb"}
    (tmp_path / "run.json").write_text(json.dumps({"inputs": {}, "steps": [step]}))
    with pytest.raises(KitError, match="not a file of the run's folder"):
        load_run(tmp_path)


# --- the CLI ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["inspect", "simulate"])
def test_the_cli_prints_one_line_naming_the_file_and_exits_2(tmp_path, capsys, command):
    draft = draft_with(tmp_path, deep_text(5000))
    argv = [command, str(draft)] + (["--engine", "sglang==0.5.10"] if command == "simulate" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {draft / 'config.json'}"), err


@pytest.mark.parametrize("theta", [None, "fast", True, -1])
def test_a_target_rope_theta_that_is_no_number_is_one_error_naming_the_config(tmp_path, theta):
    """Found by `make fuzz`: doctor's deployment checks died in float(None) in read_rope."""
    config = {**json.loads((TARGET / "config.json").read_text()), "rope_theta": theta}
    target = tmp_path / "config.json"
    target.write_text(json.dumps(config))
    with pytest.raises(KitError, match="target config has a field of the wrong type") as e:
        kit.doctor(DRAFT, target_config=target, engine="sglang==0.5.10")
    assert e.value.path == str(target)


@pytest.mark.parametrize("value", [None, "x", 0, 10**400])
def test_an_initializer_range_that_is_no_number_does_not_stop_inspect(tmp_path, value):
    """Found by `make fuzz`: float(None) and a division by zero in the untrained-weight check."""
    config = json.loads((DRAFT / "config.json").read_text())
    config.get("transformer_layer_config", config)["initializer_range"] = value
    report = kit.inspect(draft_with(tmp_path, json.dumps(config)))
    assert report.config.initializer_range == 0.02

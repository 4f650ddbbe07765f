"""A corpus of broken inputs: each builder writes one into a folder and says what must be reported.

Every case is what a user can really hand the kit: a download cut short, a corrupt header, a
hand-edited index, a file that is no checkpoint at all, a pickle that tries to run code.
"""

from __future__ import annotations

import json
import pickle
import struct
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import save_file

Case = Callable[[Path], tuple[Path, str]]  # folder -> (path to pass, text the error must contain)


def _good(folder: Path) -> Path:
    path = folder / "model.safetensors"
    g = torch.Generator().manual_seed(0)
    save_file(
        {"fc.weight": torch.randn(8, 24, generator=g), "norm.weight": torch.ones(8)}, str(path)
    )
    return path


def _raw(folder: Path, header: dict | bytes, data: bytes, n: int | None = None) -> Path:
    """A safetensors file written by hand: 8-byte length, header, data."""
    body = header if isinstance(header, bytes) else json.dumps(header).encode()
    path = folder / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(body) if n is None else n) + body + data)
    return path


def truncated(folder: Path) -> tuple[Path, str]:
    path = _good(folder)
    blob = path.read_bytes()
    path.write_bytes(blob[: len(blob) - 100])
    return path, "runs outside"


def truncated_to_nothing(folder: Path) -> tuple[Path, str]:
    path = folder / "model.safetensors"
    path.write_bytes(b"\x10\x00")
    return path, "truncated"


def header_beyond_eof(folder: Path) -> tuple[Path, str]:
    return _raw(folder, {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"", 5000), (
        "past the end of the file"
    )


def invalid_json(folder: Path) -> tuple[Path, str]:
    return _raw(folder, b'{"a": {"dtype": "F32", "shape": [1], ', bytes(4)), "not valid JSON"


def _entry(dtype: str, shape: list[int], begin: int, end: int) -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def overlapping(folder: Path) -> tuple[Path, str]:
    header = {"a": _entry("F32", [4], 0, 16), "b": _entry("F32", [4], 8, 24)}
    return _raw(folder, header, bytes(24)), "overlap"


def outside_data(folder: Path) -> tuple[Path, str]:
    header = {"a": _entry("F32", [4], 0, 16), "b": _entry("F32", [4], 16, 32)}
    return _raw(folder, header, bytes(20)), "runs outside"


def unknown_dtype(folder: Path) -> tuple[Path, str]:
    return _raw(folder, {"a": _entry("F12", [2], 0, 4)}, bytes(4)), "unknown dtype 'F12'"


def missing_shard(folder: Path) -> tuple[Path, str]:
    good = _good(folder)
    good.rename(folder / "model-00001-of-00002.safetensors")
    index = {
        "metadata": {},
        "weight_map": {
            "fc.weight": "model-00001-of-00002.safetensors",
            "norm.weight": "model-00002-of-00002.safetensors",
        },
    }
    path = folder / "model.safetensors.index.json"
    path.write_text(json.dumps(index))
    return path, "model-00002-of-00002.safetensors"


def not_a_checkpoint(folder: Path) -> tuple[Path, str]:
    path = folder / "notes.txt"
    path.write_text("just some notes\n")
    return path, "not a checkpoint"


def text_named_safetensors(folder: Path) -> tuple[Path, str]:
    path = folder / "model.safetensors"
    path.write_text("<html>404 Not Found</html>\n" * 4)
    return path, "not a safetensors file"


def empty_folder(folder: Path) -> tuple[Path, str]:
    path = folder / "empty"
    path.mkdir()
    return path, "no checkpoint here"


def broken_config(folder: Path) -> tuple[Path, str]:
    """Good weights beside a config.json cut off mid-write: the error names the config."""
    _good(folder)
    config = folder / "config.json"
    config.write_text('{"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 32,')
    return folder, f"{config}: not valid JSON"


def config_wrong_type(folder: Path) -> tuple[Path, str]:
    """A draft config whose hidden size is a string: named, not a traceback."""
    _good(folder)
    config = folder / "config.json"
    config.write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLMEagle3"],
                "hidden_size": "thirty-two",
                "num_attention_heads": 4,
                "intermediate_size": 64,
                "vocab_size": 64,
            }
        )
    )
    return folder, f"{config}: draft config has a field of the wrong type"


class RunsCode:
    """Unpickling this calls open(marker, "w"): the marker file appears if the pickle ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def malicious_torch_zip(folder: Path) -> tuple[Path, str]:
    """A torch.save archive whose pickle calls a builtin: refused by weights_only."""
    path = folder / "pytorch_model.bin"
    torch.save({"fc.weight": torch.zeros(2), "x": RunsCode(folder / "PWNED")}, str(path))
    return path, "refused to unpickle"


def malicious_legacy_pickle(folder: Path) -> tuple[Path, str]:
    """A plain (pre-zip) pickle: torch never unpickles it with mmap + weights_only."""
    path = folder / "pytorch_model.bin"
    path.write_bytes(pickle.dumps({"fc.weight": RunsCode(folder / "PWNED")}))
    return path, "pickle is refused"


CASES: dict[str, Case] = {
    "truncated": truncated,
    "truncated_to_nothing": truncated_to_nothing,
    "header_beyond_eof": header_beyond_eof,
    "invalid_json": invalid_json,
    "overlapping_offsets": overlapping,
    "offsets_outside_data": outside_data,
    "unknown_dtype": unknown_dtype,
    "index_missing_shard": missing_shard,
    "not_a_checkpoint": not_a_checkpoint,
    "text_named_safetensors": text_named_safetensors,
    "empty_folder": empty_folder,
    "broken_config": broken_config,
    "config_wrong_type": config_wrong_type,
    "malicious_torch_zip": malicious_torch_zip,
    "malicious_legacy_pickle": malicious_legacy_pickle,
}

"""kit.checkpoint.decode reads safetensors bytes with numpy alone (the core install has no torch):
every value of every dtype must be the one torch reads from the same bytes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from kit.checkpoint.decode import DECODABLE, decode
from kit.checkpoint.files import open_checkpoint, read_array, tensor_stats

FLOAT8 = {
    "F8_E5M2": torch.float8_e5m2,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E8M0": torch.float8_e8m0fnu,
}


@pytest.mark.parametrize("dtype", sorted(FLOAT8))
def test_every_float8_code_decodes_as_torch_reads_it(dtype):
    codes = torch.arange(256, dtype=torch.uint8)
    expected = codes.view(FLOAT8[dtype]).to(torch.float32).numpy()
    got = decode(codes.numpy().tobytes(), dtype)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)  # NaN where torch has NaN, ±inf included


def test_every_bf16_bit_pattern_decodes_as_torch_reads_it():
    bits = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16)
    expected = bits.view(torch.bfloat16).to(torch.float32).numpy()
    np.testing.assert_array_equal(decode(bits.numpy().tobytes(), "BF16"), expected)


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.float32, torch.float64, torch.int8, torch.int16,
              torch.int32, torch.int64, torch.uint8, torch.bool]
)  # fmt: skip
def test_read_array_matches_torch_for_plain_dtypes(tmp_path, dtype):
    values = (torch.randn(37, 5, generator=torch.Generator().manual_seed(3)) * 50).to(dtype)
    save_file({"t": values}, str(tmp_path / "m.safetensors"))
    ck = open_checkpoint(tmp_path / "m.safetensors")
    assert ck.tensors["t"].dtype in DECODABLE
    np.testing.assert_array_equal(read_array(ck, "t"), values.reshape(-1).numpy())


def test_float8_statistics_without_torch_match_torch(tmp_path):
    w = torch.randn(256, 64, generator=torch.Generator().manual_seed(4)).to(torch.float8_e4m3fn)
    save_file({"w": w}, str(tmp_path / "m.safetensors"))
    s = tensor_stats(open_checkpoint(tmp_path / "m.safetensors"), "w", chunk_bytes=1000)
    ref = w.double().flatten()
    assert (s.min, s.max) == (ref.min().item(), ref.max().item())
    assert s.mean == pytest.approx(ref.mean().item(), rel=1e-9)
    assert s.std == pytest.approx(ref.std().item(), rel=1e-9)

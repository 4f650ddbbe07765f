"""safetensors tensor bytes as numpy arrays: the statistics and the vocab-map checks read values
without torch, so `inspect` runs in an environment that has only the kit's core installed.

numpy has no bfloat16 or float8 type: bf16 is the upper half of a float32 (shifted into place),
and each float8 format has 256 values, decoded once into a lookup table.
"""

from __future__ import annotations

from functools import cache

import numpy as np

# safetensors dtype name -> numpy dtype of the same bytes (little-endian, as the format stores).
_PLAIN = {
    "BOOL": "|b1",
    "U8": "|u1",
    "I8": "|i1",
    "I16": "<i2",
    "U16": "<u2",
    "I32": "<i4",
    "U32": "<u4",
    "I64": "<i8",
    "U64": "<u8",
    "F16": "<f2",
    "F32": "<f4",
    "F64": "<f8",
}
_FLOAT8 = ("F8_E5M2", "F8_E4M3", "F8_E8M0")
DECODABLE = frozenset((*_PLAIN, "BF16", *_FLOAT8))


def decode(buf: bytes | bytearray | memoryview, dtype: str) -> np.ndarray:
    """The values stored in `buf` as a flat numpy array (float32 for bf16 and float8)."""
    if dtype in _PLAIN:
        return np.frombuffer(buf, dtype=_PLAIN[dtype])
    if dtype == "BF16":
        return (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    if dtype in _FLOAT8:
        return _float8_table(dtype)[np.frombuffer(buf, dtype=np.uint8)]
    raise ValueError(f"no numpy decoding for dtype {dtype}")


@cache
def _float8_table(dtype: str) -> np.ndarray:
    """The 256 values of one float8 format, by byte (OCP FP8 spec; E4M3 is the `fn` variant
    torch and the engines store: no infinities, S.1111.111 is NaN; E8M0 is a bare exponent)."""
    codes = np.arange(256, dtype=np.int64)
    if dtype == "F8_E8M0":
        values = np.ldexp(1.0, codes - 127)
        values[255] = np.nan
        return values.astype(np.float32)
    exp_bits, man_bits = (5, 2) if dtype == "F8_E5M2" else (4, 3)
    bias = (1 << (exp_bits - 1)) - 1
    sign = np.where(codes >> 7, -1.0, 1.0)
    exp = (codes >> man_bits) & ((1 << exp_bits) - 1)
    man = codes & ((1 << man_bits) - 1)
    normal = np.ldexp(1.0 + man / (1 << man_bits), exp - bias)
    subnormal = np.ldexp(man / (1 << man_bits), 1 - bias)
    values = sign * np.where(exp == 0, subnormal, normal)
    top = exp == (1 << exp_bits) - 1
    if dtype == "F8_E5M2":  # IEEE-like: the top exponent is inf (mantissa 0) or NaN
        values = np.where(top & (man == 0), sign * np.inf, values)
        values = np.where(top & (man != 0), np.nan, values)
    else:
        values = np.where(top & (man == (1 << man_bits) - 1), np.nan, values)
    return values.astype(np.float32)

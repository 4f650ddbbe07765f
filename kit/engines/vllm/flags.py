"""vLLM's server flags per release: the table read from `engine/arg_utils.py`, the config
dataclasses its flags are derived from (`config.py`, `config/*.py`) and the OpenAI server's
`cli_args.py`, and how `FlexibleArgumentParser` reads a command line.

The table is data (`flags.json`, written by `data/make_flag_tables.py` from the released wheels);
it also holds vllm 0.8.2 and 0.8.3, read for `--speculative-model` and `--num-speculative-tokens`,
which 0.8.3 removed.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from kit.engines.base import Row, VersionRange
from kit.engines.flagtable import FlagTable, ParserRules, load_table

TABLE_PATH = Path(__file__).with_name("flags.json")

MODULES = ("vllm.entrypoints.openai.api_server",)
COMMANDS = (("vllm", "serve"),)

_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_int(text: str) -> int:
    """`--max-model-len 32k` (32,000) or `32K` (32,768) (0.9.2 engine/arg_utils.py:1753-1785);
    `auto` or -1 for max_model_len (0.33.0 engine/arg_utils.py:131,403-405)."""
    value = text.strip()
    if value in ("auto", "-1"):
        return -1
    m = _HUMAN.fullmatch(value)
    try:
        if m:
            number, suffix = m.groups()
            scale = _DECIMAL[suffix] if suffix in _DECIMAL else _BINARY[suffix]
            return int(float(number) * scale)
        return int(value)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number (32768, 32k or 32K)") from None


# FlexibleArgumentParser: `--max_model_len` reads as `--max-model-len`; `--speculative-config.method
# eagle3` is merged into the JSON flag; argparse's prefix matching stays on.
PARSER: tuple[Row[ParserRules], ...] = (
    Row(
        VersionRange("0.8.2"),
        ParserRules(abbreviations=True, underscores=True, dotted_json=True, human_int=human_int),
        "0.9.2 utils/__init__.py:1488,1518; 0.11.0 utils/__init__.py:1871,1905; "
        "0.33.0 utils/argparse_utils.py:376,410 (FlexibleArgumentParser.parse_args)",
    ),
)

# `--spec-method`, `--spec-model`, `--spec-tokens` fill the speculative config's keys, from 0.24.0
# (0.24.0 engine/arg_utils.py:1501-1503,1707-1709; 0.33.0 engine/arg_utils.py:2109-2111).
SPEC_SHORTHANDS = {
    "spec_method": "method",
    "spec_model": "model",
    "spec_tokens": "num_speculative_tokens",
}
# Before 0.8.3: `--speculative-model` and `--num-speculative-tokens` (0.8.2 engine/arg_utils.py:788,806).
SPEC_LEGACY = {"speculative_model": "model", "num_speculative_tokens": "num_speculative_tokens"}


@cache
def table() -> FlagTable:
    """The committed flag table (every modelled release, and 0.8.2 / 0.8.3)."""
    return load_table(TABLE_PATH)

"""SGLang's server flags per release: the table read from `srt/server_args.py` (and, from 0.5.14,
the annotated fields of `srt/arg_groups/`), and how its command line is parsed.

The table is data (`flags.json`, written by `data/make_flag_tables.py` from the released wheels);
this module loads it and says which commands start the server.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path

from kit.engines.base import Row, VersionRange
from kit.engines.flagtable import FlagTable, ParserRules, load_table

TABLE_PATH = Path(__file__).with_name("flags.json")

# `python -m sglang.launch_server ...` (every release) and the `sglang serve ...` console script.
MODULES = ("sglang.launch_server",)
COMMANDS = (("sglang", "serve"),)

_HUMAN = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)")
_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def human_int(text: str) -> int:
    """`--context-length 32k`: SI suffixes k, M, G, T and IEC Ki, Mi, Gi, Ti, case-sensitive
    (0.5.10 srt/utils/common.py:2229-2259)."""
    value = text.strip()
    m = _HUMAN.fullmatch(value)
    try:
        if m:
            number, suffix = m.groups()
            if suffix in _IEC:
                return int(number) * _IEC[suffix]
            return int(Decimal(number) * _SI[suffix])
        return int(value)
    except (ValueError, InvalidOperation):
        raise ValueError(f"{text!r} is not a whole number (32768, 32k or 32Ki)") from None


# A plain `argparse.ArgumentParser()`: an unambiguous prefix of a flag is accepted (allow_abbrev),
# `--flag=value` too; no underscore spellings, no dotted JSON keys.
PARSER: tuple[Row[ParserRules], ...] = (
    Row(
        VersionRange("0.4.4.post2"),
        ParserRules(abbreviations=True, underscores=False, dotted_json=False, human_int=human_int),
        "0.4.4.post2 srt/server_args.py:1154; 0.5.10 srt/server_args.py:6526; "
        "0.5.23 srt/server_args.py:679 (argparse.ArgumentParser)",
    ),
)


@cache
def table() -> FlagTable:
    """The committed flag table (every modelled release)."""
    return load_table(TABLE_PATH)

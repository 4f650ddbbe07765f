"""The launch-flag tables: generated from the released wheels by data/make_flag_tables.py, which
reads the engines' own argument definitions. The committed tables cover every modelled release
(wheel and sha256 recorded per release); the generator's reading rules are pinned on small
sources written in each engine's style, and a few table rows on the release and line they were
read from."""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path

import pytest

from kit.engines import RELEASES, all_releases, parse_engine, pick
from kit.engines import sglang as sglang_pkg
from kit.engines import vllm as vllm_pkg
from kit.engines.flagtable import FlagKind, ValueType

ROOT = Path(__file__).resolve().parent.parent
TABLES = {"sglang": sglang_pkg.flags.table(), "vllm": vllm_pkg.flags.table()}


def _generator():
    spec = importlib.util.spec_from_file_location(
        "make_flag_tables", ROOT / "data/make_flag_tables.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module's annotations
    spec.loader.exec_module(module)
    return module


GEN = _generator()


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_every_modelled_release_was_read_from_its_wheel(engine):
    table = TABLES[engine]
    read = {r.version: r for r in table.releases}
    assert set(RELEASES[engine]) <= set(read)
    for r in read.values():
        assert r.wheel.startswith(f"{engine}-{r.version}-") and r.wheel.endswith(".whl")
        assert re.fullmatch(r"[0-9a-f]{64}", r.sha256)
        assert r.history == (r.version not in RELEASES[engine])
    for release in all_releases(engine):  # every release has a parser row and some flags
        pick((sglang_pkg if engine == "sglang" else vllm_pkg).flags.PARSER, release)
        assert len(table.flags_at(release)) > 100


def test_history_releases_hold_the_flags_vllm_removed():
    """vllm 0.8.2 defines --speculative-model (engine/arg_utils.py:788); 0.8.3 does not."""
    [row] = TABLES["vllm"].named("--speculative-model")
    assert (row.versions.first, row.last, row.versions.until) == ("0.8.2", "0.8.2", "0.8.3")
    assert row.source == "0.8.2 vllm/engine/arg_utils.py:788"


def test_sglang_rows_pinned_on_their_source_lines():
    """0.4.4.post2 server_args.py:836 defaults --speculative-num-draft-tokens to 8; from 0.4.4.post4
    the three counts default to None (auto-chosen). --speculative-algorithm gains STANDALONE in
    0.5.2 and loses its choices in 0.5.12 (a registry)."""
    table = TABLES["sglang"]
    first = table.flags_at(parse_engine("sglang==0.4.4.post2"))["--speculative-num-draft-tokens"]
    assert first.default == 8 and first.source == "0.4.4.post2 sglang/srt/server_args.py:836"
    assert (
        table.flags_at(parse_engine("sglang==0.4.5"))["--speculative-num-draft-tokens"].default
        is None
    )
    algo = {v: table.flags_at(parse_engine(f"sglang=={v}"))["--speculative-algorithm"] for v in
            ("0.5.1", "0.5.2", "0.5.12")}  # fmt: skip
    assert "STANDALONE" not in algo["0.5.1"].choices and "STANDALONE" in algo["0.5.2"].choices
    assert algo["0.5.12"].choices is None


def test_vllm_rows_pinned_on_their_source_lines():
    """--max-model-len reads k/K suffixes from 0.9.2 (engine/arg_utils.py:522, human_readable_int);
    --speculative-config is JSON and gains the -sc alias in 0.24.0; --enable-prefix-caching has
    a --no- form (BooleanOptionalAction)."""
    table = TABLES["vllm"]
    at = table.flags_at(parse_engine("vllm==0.9.2"))
    assert at["--max-model-len"].type is ValueType.HUMAN_INT
    assert at["--max-model-len"].source == "0.9.2 vllm/engine/arg_utils.py:522"
    assert at["--speculative-config"].type is ValueType.JSON and "-sc" not in at
    assert "-sc" in table.flags_at(parse_engine("vllm==0.24.0"))
    assert at["--enable-prefix-caching"].kind is FlagKind.BOOL_OPTIONAL


def test_transformers_requirements_recorded_per_release():
    """The RoPE rule reads them: sglang 0.5.9 pins transformers 4, 0.5.10 pins 5; vllm 0.9.2
    admits both (>=4.51.1)."""
    sg = TABLES["sglang"]
    assert sg.reads_transformers5(parse_engine("sglang==0.5.9")) is False
    assert sg.reads_transformers5(parse_engine("sglang==0.5.10")) is True
    assert TABLES["vllm"].reads_transformers5(parse_engine("vllm==0.9.2")) is None


def _read(engine: str, files: dict[str, str]):
    return {
        f.names[0]: f
        for f in GEN.read_flags(engine, {k: textwrap.dedent(v) for k, v in files.items()})
    }


def test_generator_reads_explicit_add_argument_calls():
    """SGLang up to 0.5.13: `parser.add_argument(...)` in ServerArgs.add_cli_args, defaults from
    the dataclass fields, custom actions by their nargs."""
    src = """
        import argparse
        class ServerArgs:
            speculative_num_steps: int = 5
            @staticmethod
            def add_cli_args(parser):
                parser.add_argument("--speculative-num-steps", type=int, default=ServerArgs.speculative_num_steps)
                parser.add_argument("--tensor-parallel-size", "--tp-size", type=int, default=1)
                parser.add_argument("--disable-cuda-graph", action="store_true")
                parser.add_argument("--lora-paths", nargs="*", type=str)
                parser.add_argument("--dtype", choices=["auto", "half"], default="auto")
                parser.add_argument("--old", action=DeprecatedAction)
        class DeprecatedAction(argparse.Action):
            def __init__(self, option_strings, dest, nargs=0, **kwargs):
                pass
    """
    flags = _read("sglang", {"sglang/srt/server_args.py": src})
    steps = flags["--speculative-num-steps"]
    assert (steps.kind, steps.type, steps.default) == ("value", "int", 5)
    assert flags["--tensor-parallel-size"].names == ["--tensor-parallel-size", "--tp-size"]
    assert flags["--disable-cuda-graph"].kind == "switch"
    assert flags["--lora-paths"].kind == "multi"
    assert flags["--dtype"].choices == ["auto", "half"]
    assert flags["--old"].kind == "switch"  # DeprecatedAction(nargs=0)
    assert steps.source == "sglang/srt/server_args.py:7"


def test_generator_reads_annotated_fields():
    """SGLang from 0.5.14: `A[T, "help" | Arg(...)]` fields become flags (arg_utils.py,
    add_cli_args_from_dataclass): bool -> store_true, Literal -> choices, no_cli skipped."""
    src = """
        from typing import Literal, Optional
        class Spec(msgspec.Struct):
            context_length: A[Optional[int], Arg(help="", type_parser=human_readable_int)] = None
            enable_x: A[bool, "help"] = False
            mode: A[Literal["prefill", "decode"], "help"] = "prefill"
            draft_path: A[Optional[str], Arg(help="", aliases=["--draft"])] = None
            internal: A[int, Arg(no_cli=True)] = 1
    """
    flags = _read("sglang", {"sglang/srt/arg_groups/fields/spec.py": src})
    assert set(flags) == {"--context-length", "--enable-x", "--mode", "--draft-path"}
    assert flags["--context-length"].type == "human_int"
    assert flags["--enable-x"].kind == "switch"
    assert flags["--mode"].choices == ["decode", "prefill"]
    assert flags["--draft-path"].names == ["--draft-path", "--draft"]


def test_generator_reads_vllm_get_kwargs():
    """vLLM: `add_argument("--x", **model_kwargs["x"])` with `model_kwargs = get_kwargs(ModelConfig)`:
    the kind follows the field's type (bool -> --x/--no-x, Literal -> choices, dataclass or dict
    -> JSON) and `_compute_kwargs` names the human-readable ints."""
    config = """
        from typing import Literal, Optional, Any
        ModelDType = Literal["auto", "half", "bfloat16"]
        @config
        @dataclass
        class SpeculativeConfig:
            method: Optional[str] = None
        @config
        @dataclass
        class ModelConfig:
            max_model_len: SkipValidation[int] = None
            enforce_eager: bool = False
            dtype: ModelDType = "auto"
            hf_overrides: dict[str, Any] = field(default_factory=dict)
    """
    args = """
        def _compute_kwargs(cls):
            if name in {"max_model_len"}:
                kwargs[name]["type"] = human_readable_int
        class EngineArgs:
            @staticmethod
            def add_cli_args(parser):
                model_kwargs = get_kwargs(ModelConfig)
                g = parser.add_argument_group("model")
                g.add_argument("--max-model-len", **model_kwargs["max_model_len"])
                g.add_argument("--enforce-eager", **model_kwargs["enforce_eager"])
                g.add_argument("--dtype", **model_kwargs["dtype"])
                g.add_argument("--hf-overrides", **model_kwargs["hf_overrides"])
                g.add_argument("--speculative-config", type=json.loads, default=None)
    """
    flags = _read("vllm", {"vllm/config.py": config, "vllm/engine/arg_utils.py": args})
    assert flags["--max-model-len"].type == "human_int"
    assert flags["--enforce-eager"].kind == "bool_optional"
    assert flags["--dtype"].choices == ["auto", "bfloat16", "half"]
    assert flags["--hf-overrides"].type == "json"
    assert flags["--speculative-config"].type == "json"


def test_releases_reading_alike_become_one_row():
    flag = GEN.Flag(["--a"], "a", "value", "int", None, 1, "f.py:1")
    moved = GEN.Flag(["--a"], "a", "value", "int", None, 1, "f.py:9")  # same reading, other line
    changed = GEN.Flag(["--a"], "a", "value", "int", None, 2, "f.py:9")
    rows = GEN.rows("x", {"1.0": [flag], "1.1": [moved], "1.2": [changed], "1.3": []})
    assert [(r["first"], r["last"], r["until"], r["default"]) for r in rows] == [
        ("1.0", "1.1", "1.2", 1),
        ("1.2", "1.2", "1.3", 2),
    ]
    assert rows[0]["source"] == "1.0 f.py:1"

"""Write the launch-flag tables the deployment check parses server command lines with.

For every release the kit models (and a few older vLLM releases, for flags removed before that
range), download the engine's wheel from PyPI with pip, read the files that define its server
arguments, and record each flag: its spellings, whether it takes a value, the value's type and
choices, the argparse default, and the file:line it was read from. Consecutive releases where a
flag reads the same become one row (first and last release read).

    python data/make_flag_tables.py [--engine sglang|vllm] [--cache DIR]

Nothing is imported from the engines (they need GPUs and hundreds of dependencies): the sources
are read with `ast`, following the engines' own rules for turning a field into a flag
(SGLang's `add_cli_args_from_dataclass`, vLLM's `get_kwargs`). Writes
`kit/engines/<engine>/flags.json`; running it twice gives the same file.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kit.engines import RELEASES  # noqa: E402

# Read for flags that left before the modelled range: `--speculative-model` and
# `--num-speculative-tokens` are in vllm 0.8.2 and gone in 0.8.3.
HISTORY = {"sglang": (), "vllm": ("0.8.2", "0.8.3")}

# Files that define the server's flags, per engine (globs inside the wheel).
FILES = {
    "sglang": ("sglang/srt/server_args.py", "sglang/srt/arg_groups/*.py",
               "sglang/srt/arg_groups/fields/*.py"),
    "vllm": ("vllm/engine/arg_utils.py", "vllm/config.py", "vllm/config/*.py",
             "vllm/entrypoints/openai/cli_args.py", "vllm/entrypoints/common/cli_args.py",
             "vllm/entrypoints/launchers/cli_args.py",
             "vllm/entrypoints/cli/serve.py",
             "vllm/model_executor/layers/quantization/__init__.py"),
}  # fmt: skip
UNRESOLVED = object()


@dataclass
class Flag:
    """One flag as one release defines it (what a launch-line parser needs)."""

    names: list[str]
    dest: str
    kind: str  # value | switch | bool_optional | multi | optional_value | positional
    type: str  # int | float | str | json | bool
    choices: list[Any] | None
    default: Any
    source: str  # file:line inside the wheel

    def identity(self) -> str:
        d = {k: v for k, v in self.__dict__.items() if k != "source"}
        return json.dumps(d, sort_keys=True, default=str)


# ----------------------------------------------------------------------------------------------
# Reading Python sources without importing them


@dataclass
class Index:
    """Classes, module-level names and functions of a set of source files."""

    files: dict[str, ast.Module]
    classes: dict[str, tuple[str, ast.ClassDef]] = field(default_factory=dict)
    names: dict[str, ast.expr] = field(default_factory=dict)
    human_ints: set[str] = field(default_factory=set)  # fields vLLM parses with k/M/G suffixes

    def __post_init__(self) -> None:
        for path, tree in self.files.items():
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, (path, node))
                elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                    if isinstance(node.targets[0], ast.Name):
                        self.names.setdefault(node.targets[0].id, node.value)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    if node.value is not None:
                        self.names.setdefault(node.target.id, node.value)
                elif isinstance(node, getattr(ast, "TypeAlias", ())):
                    self.names.setdefault(node.name.id, node.value)
            for fn in ast.walk(tree):
                if isinstance(fn, ast.FunctionDef) and fn.name in ("_compute_kwargs", "get_kwargs"):
                    self.human_ints |= human_int_fields(fn)

    def fields(self, cls: str) -> dict[str, ast.AnnAssign]:
        """Annotated class attributes, bases first (as a dataclass collects them)."""
        if cls not in self.classes:
            return {}
        _, node = self.classes[cls]
        out: dict[str, ast.AnnAssign] = {}
        for base in node.bases:
            if isinstance(base, ast.Name):
                out.update(self.fields(base.id))
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                out[stmt.target.id] = stmt
        return out

    def is_dataclass(self, name: str) -> bool:
        if name not in self.classes:
            return False
        node = self.classes[name][1]
        decorators = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
        return bool(decorators & {"dataclass", "config", "dataclasses.dataclass"})

    def value(self, expr: ast.expr | None, depth: int = 0) -> Any:
        """A literal, following names and `Class.field` to their values; UNRESOLVED if not."""
        if expr is None or depth > 6:
            return UNRESOLVED
        try:
            return ast.literal_eval(expr)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if isinstance(expr, ast.Name) and expr.id in self.names:
            return self.value(self.names[expr.id], depth + 1)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            stmt = self.fields(expr.value.id).get(expr.attr)
            if stmt is not None:
                return self.value(stmt.value, depth + 1)
        if isinstance(expr, ast.Call) and ast.unparse(expr.func) in (
            "field",
            "dataclasses.field",
            "Field",
        ):
            for kw in expr.keywords:
                if kw.arg == "default":
                    return self.value(kw.value, depth + 1)
        return UNRESOLVED

    def alias(self, expr: ast.expr, depth: int = 0) -> ast.expr:
        """A type alias followed to its definition (`ModelDType` -> `Literal[...]`)."""
        while isinstance(expr, ast.Name) and expr.id in self.names and depth < 6:
            target = self.names[expr.id]
            if isinstance(target, ast.Call):  # e.g. TypeVar(...), not an alias
                break
            expr, depth = target, depth + 1
        return expr


def human_int_fields(fn: ast.FunctionDef) -> set[str]:
    """Field names an `if name in {...}` / `name == "..."` test sends to `human_readable_int`
    (vLLM's `_compute_kwargs`; the set moved and grew between releases)."""
    local_sets = {
        t.id: {c.value for c in ast.walk(stmt.value) if isinstance(c, ast.Constant)}
        for stmt in ast.walk(fn)
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Set)
        for t in stmt.targets
        if isinstance(t, ast.Name)
    }
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.If) and "human_readable_int" in ast.unparse(node.body[0]):
            for part in ast.walk(node.test):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    out.add(part.value)
                elif isinstance(part, ast.Name):
                    out |= local_sets.get(part.id, set())
    return out


def hints(index: Index, ann: ast.expr) -> list[ast.expr]:
    """The types a field may hold: Optional / Union / `X | Y` / Annotated unwrapped."""
    ann = index.alias(ann)
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):  # a string annotation
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return [ann]
        return hints(index, ann)
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return hints(index, ann.left) + hints(index, ann.right)
    if isinstance(ann, ast.Subscript):
        outer = ast.unparse(ann.value).split(".")[-1]
        inner = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if outer in ("Optional", "Union"):
            return [h for i in inner for h in hints(index, i)]
        if outer in ("Annotated", "A", "SkipValidation"):
            return hints(index, inner[0])
    return [ann]


def head(h: ast.expr) -> str:
    """A hint's name without its module and arguments (`typing.Optional[int]` -> Optional)."""
    name = ast.unparse(h.value if isinstance(h, ast.Subscript) else h)
    return name.split(".")[-1]


def literal_values(index: Index, hs: list[ast.expr]) -> list[Any] | None:
    """The options of the `Literal[...]` among the hints (aliases followed)."""
    values: list[Any] = []
    for h in hs:
        if head(h) != "Literal":
            continue
        elts = h.slice.elts if isinstance(h.slice, ast.Tuple) else [h.slice]
        for e in elts:
            v = index.value(e)
            values.extend(hints_literal(index, e) if v is UNRESOLVED else [v])
    return values or None


def hints_literal(index: Index, e: ast.expr) -> list[Any]:
    """A nested alias inside a Literal (`Literal[Foo, "x"]` where Foo is Literal[...])."""
    inner = literal_values(index, hints(index, e))
    return inner or []


def base_type(hs: list[ast.expr], index: Index) -> str:
    """The value type vLLM's `_compute_kwargs` picks for a field's hints (int before float
    before JSON, anything else a string)."""
    names = {head(h) for h in hs}
    if names & {"int"}:
        return "int"
    if names & {"float"}:
        return "float"
    if names & {"dict", "Dict"} or any(index.is_dataclass(n) for n in names):
        return "json"
    return "str"


# ----------------------------------------------------------------------------------------------
# argparse calls


def call_names(call: ast.Call) -> list[str] | None:
    names = [a.value for a in call.args if isinstance(a, ast.Constant)]
    if not names or not all(isinstance(n, str) for n in names):
        return None
    return names


def action_kind(index: Index, action: ast.expr | None) -> str | None:
    """`switch` for actions that take no value (store_true, a custom nargs=0 action)."""
    if action is None:
        return None
    text = ast.unparse(action)
    if "BooleanOptionalAction" in text:
        return "bool_optional"
    literal = index.value(action)
    if literal in ("store_true", "store_false", "store_const", "count", "help", "version"):
        return "switch"
    if isinstance(literal, str):
        return "value"  # append, extend, store
    cls = index.classes.get(text.split(".")[-1])
    if cls is not None:
        for stmt in cls[1].body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                args = stmt.args.args[-len(stmt.args.defaults) :] if stmt.args.defaults else []
                for arg, default in zip(args, stmt.args.defaults, strict=False):
                    if arg.arg == "nargs" and index.value(default) == 0:
                        return "switch"
    return "value"


def nargs_kind(nargs: Any) -> str:
    if nargs in ("+", "*") or (isinstance(nargs, int) and nargs > 1):
        return "multi"
    if nargs == "?":
        return "optional_value"
    return "value"


def type_name(index: Index, expr: ast.expr | None) -> str:
    """The value type of an explicit `type=` (a builtin or one of the engines' parsers)."""
    if expr is None:
        return "str"
    text = ast.unparse(expr)
    if "human_readable_int" in text:
        return "human_int"
    if re.search(r"\bint\b|positive_int|check_port", text):
        return "int"
    if re.search(r"\bfloat\b", text):
        return "float"
    if "json" in text.lower() or "dict" in text.lower():
        return "json"
    return "str"


def jsonable(value: Any) -> Any:
    if value is UNRESOLVED:
        return None
    try:
        json.dumps(value)
    except TypeError:
        return repr(value)
    return value


def flag_from_call(
    index: Index, call: ast.Call, kwargs_of: dict[str, dict[str, Any]], path: str
) -> Flag | None:
    """One `add_argument(...)`; `**x_kwargs["field"]` takes the field's derived kwargs."""
    names = call_names(call)
    if names is None:
        return None
    kw: dict[str, Any] = {}
    for k in call.keywords:
        if k.arg is None:
            kw.update(unpacked(index, k.value, kwargs_of))
        else:
            kw[k.arg] = ("ast", k.value)
    long = [n for n in names if n.startswith("--")] or names
    dest = index.value(kw["dest"][1]) if "dest" in kw and kw["dest"][0] == "ast" else None
    if not isinstance(dest, str):
        dest = long[0].lstrip("-").replace("-", "_")
    kind, typ, choices = derived(index, kw)
    if not names[0].startswith("-"):
        kind = "positional"
    default = kw.get("default")
    default = (
        index.value(default[1])
        if default and default[0] == "ast"
        else (default[1] if default else None)
    )
    return Flag(names, dest, kind, typ, choices, jsonable(default), f"{path}:{call.lineno}")


def derived(index: Index, kw: dict[str, Any]) -> tuple[str, str, list[Any] | None]:
    """Kind, value type and choices from explicit keywords (or the field's derived ones)."""

    def get(key: str) -> Any:
        item = kw.get(key)
        if item is None:
            return None
        return index.value(item[1]) if item[0] == "ast" else item[1]

    action = kw.get("action")
    kind = None
    if action is not None:
        kind = action_kind(index, action[1]) if action[0] == "ast" else action[1]
    nargs = get("nargs")
    if kind in (None, "value"):
        kind = nargs_kind(nargs) if nargs is not None else (kind or "value")
    typ = kw["type"][1] if kw.get("type", ("", ""))[0] == "derived" else None
    if typ is None:
        typ = type_name(index, kw["type"][1]) if "type" in kw else "str"
    if kind in ("switch", "bool_optional"):
        typ = "bool"
    choices = get("choices")
    if choices is UNRESOLVED or not isinstance(choices, list | tuple | set):
        choices = None
    return kind, typ, sorted(map(str, choices)) if choices else None


def unpacked(index: Index, expr: ast.expr, kwargs_of: dict[str, dict[str, Any]]) -> dict:
    """`**model_kwargs["dtype"]` or `**{**model_kwargs["x"], "deprecated": True}`."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
        key = index.value(expr.slice)
        return dict(kwargs_of.get(expr.value.id, {}).get(key, {}))
    out: dict[str, Any] = {}
    if isinstance(expr, ast.Dict):
        for k, v in zip(expr.keys, expr.values, strict=False):
            if k is None:
                out.update(unpacked(index, v, kwargs_of))
            elif isinstance(k, ast.Constant):
                out[k.value] = ("ast", v)
    return out


def field_kwargs(index: Index, cls: str) -> dict[str, dict[str, Any]]:
    """vLLM's `get_kwargs(Config)`: argparse keywords derived from each field's type."""
    out: dict[str, dict[str, Any]] = {}
    for name, stmt in index.fields(cls).items():
        if name.startswith("_") or "ClassVar" in ast.unparse(stmt.annotation):
            continue
        hs = hints(index, stmt.annotation)
        heads = {head(h) for h in hs}
        kw: dict[str, Any] = {"default": ("ast", stmt.value) if stmt.value else None}
        if any(index.is_dataclass(h) for h in heads):
            kw["type"] = ("derived", "json")
        elif heads - {"None"} == {"bool", "str"}:  # 0.33: a bare flag is True, else a string
            kw["nargs"] = ("derived", "?")
        elif "bool" in heads:
            kw["action"] = ("derived", "bool_optional")
        elif "Literal" in heads:
            options = literal_values(index, hs) or [""]
            if "str" not in heads:  # Literal | str: a metavar, not choices (literal_to_kwargs)
                kw["choices"] = ("derived", options)
            kw["type"] = ("derived", {int: "int", float: "float"}.get(type(options[0]), "str"))
        elif heads & {"tuple", "Tuple", "list", "List"}:
            inner = next(h for h in hs if head(h) in ("tuple", "Tuple", "list", "List"))
            elem = inner.slice.elts[0] if isinstance(inner.slice, ast.Tuple) else inner.slice
            kw["nargs"] = ("derived", "+")
            kw["type"] = ("derived", base_type(hints(index, elem), index))
        else:
            typ = base_type(hs, index)
            kw["type"] = (
                "derived",
                "human_int" if typ == "int" and name in index.human_ints else typ,
            )
        out[name] = {k: v for k, v in kw.items() if v is not None}
    return out


# ----------------------------------------------------------------------------------------------
# Per engine


def sglang_fields(index: Index, path_of: dict[str, str]) -> list[Flag]:
    """SGLang >= 0.5.14: `A[T, "help" | Arg(...)]` fields of `ServerArgs` (0.5.14 - 0.5.19) or of
    its namespaces in `arg_groups/fields/` (0.5.20 on) become flags (`arg_groups/arg_utils.py`,
    `add_cli_args_from_dataclass`)."""
    out = []
    for cls, (path, node) in sorted(index.classes.items()):
        if cls != "ServerArgs" and "/arg_groups/fields/" not in path:
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            ann = stmt.annotation
            if not (isinstance(ann, ast.Subscript) and head(ann) in ("A", "Annotated")):
                continue
            parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            meta = next((p for p in parts[1:] if isinstance(p, ast.Call)), None)
            arg = {k.arg: k.value for k in meta.keywords} if meta is not None else {}
            if arg.get("no_cli") is not None and index.value(arg["no_cli"]) is True:
                continue
            name = stmt.target.id
            cli = (
                index.value(arg["cli_name"]) if "cli_name" in arg else "--" + name.replace("_", "-")
            )
            aliases = index.value(arg["aliases"]) if "aliases" in arg else []
            hs = hints(index, parts[0])
            heads = {head(h) for h in hs}
            kw: dict[str, Any] = {}
            if "action" in arg:
                kw["action"] = ("ast", arg["action"])
            elif "Literal" in heads:
                kw["choices"] = ("derived", literal_values(index, hs))
            elif heads & {"list", "List"} and "type_parser" not in arg:
                kw["nargs"] = ("derived", index.value(arg["nargs"]) if "nargs" in arg else "+")
            elif heads == {"bool"}:
                kw["action"] = ("derived", "switch")
            if "choices" in arg:
                kw["choices"] = ("ast", arg["choices"])
            if "nargs" in arg and "nargs" not in kw:
                kw["nargs"] = ("ast", arg["nargs"])
            parser = arg.get("type_parser")
            kw["type"] = ("derived", type_name(index, parser) if parser else base_type(hs, index))
            kind, typ, choices = derived(index, kw)
            names = [cli, *(aliases if isinstance(aliases, list) else [])]
            out.append(
                Flag(
                    names, name, kind, typ, choices, jsonable(index.value(stmt.value)),
                    f"{path_of[path]}:{stmt.lineno}",
                )
            )  # fmt: skip
    return out


def read_flags(engine: str, sources: dict[str, str]) -> list[Flag]:
    """Every flag the release's server parser accepts."""
    trees = {p: ast.parse(t) for p, t in sources.items()}
    index = Index(trees)
    path_of = {p: p for p in sources}
    flags: list[Flag] = []
    if engine == "sglang":
        flags += sglang_fields(index, path_of)
    for path, tree in trees.items():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            if fn.name not in ("add_cli_args", "make_arg_parser", "subparser_init"):
                continue
            kwargs_of = local_kwargs(index, fn)
            flags += loop_flags(index, fn, kwargs_of, path)
            for call in ast.walk(fn):
                if isinstance(call, ast.Call) and ast.unparse(call.func).endswith(".add_argument"):
                    f = flag_from_call(index, call, kwargs_of, path)
                    if f is not None:
                        flags.append(f)
    merged: dict[str, Flag] = {}
    for f in flags:  # a flag registered twice (e.g. two subparsers) keeps its first reading
        merged.setdefault(f.names[0], f)
    return sorted(merged.values(), key=lambda f: f.names[0])


def local_kwargs(index: Index, fn: ast.FunctionDef) -> dict[str, dict[str, Any]]:
    """`x_kwargs = get_kwargs(Config)` in a function, with its later edits
    (`x_kwargs["f"]["type"] = ...`, `del x_kwargs["f"]["nargs"]`)."""
    out: dict[str, dict[str, Any]] = {}
    for stmt in ast.walk(fn):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            func = ast.unparse(stmt.value.func)
            target = stmt.targets[0]
            if func.endswith("get_kwargs") and isinstance(target, ast.Name):
                arg = ast.unparse(stmt.value.args[0]) if stmt.value.args else ""
                cls = arg if arg != "cls" else enclosing_class(index, fn)
                out[target.id] = field_kwargs(index, cls)
    for stmt in ast.walk(fn):
        edit = nested_key(stmt.targets[0] if isinstance(stmt, ast.Assign) else None, index)
        if edit and edit[0] in out and edit[2] in ("action", "nargs", "type"):
            out[edit[0]].setdefault(edit[1], {})[edit[2]] = ("ast", stmt.value)
        if isinstance(stmt, ast.Delete):
            for t in stmt.targets:
                edit = nested_key(t, index)
                if edit and edit[0] in out:
                    out[edit[0]].get(edit[1], {}).pop(edit[2], None)
    return out


def nested_key(node: ast.expr | None, index: Index) -> tuple[str, str, str] | None:
    """`name["field"]["key"]` -> (name, field, key)."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Subscript)):
        return None
    inner = node.value
    if not isinstance(inner.value, ast.Name):
        return None
    f, k = index.value(inner.slice), index.value(node.slice)
    return (inner.value.id, f, k) if isinstance(f, str) and isinstance(k, str) else None


def enclosing_class(index: Index, fn: ast.FunctionDef) -> str:
    for name, (_, node) in index.classes.items():
        if fn in node.body:
            return name
    return ""


def loop_flags(
    index: Index, fn: ast.FunctionDef, kwargs_of: dict[str, dict[str, Any]], path: str
) -> list[Flag]:
    """vLLM's frontend: `for key, value in frontend_kwargs.items(): add_argument(f"--{key}")`."""
    out = []
    for loop in ast.walk(fn):
        if not (isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call)):
            continue
        source = loop.iter.func
        if not (isinstance(source, ast.Attribute) and isinstance(source.value, ast.Name)):
            continue
        for key, kw in kwargs_of.get(source.value.id, {}).items():
            kind, typ, choices = derived(index, kw)
            default = kw.get("default")
            value = index.value(default[1]) if default and default[0] == "ast" else None
            name = "--" + key.replace("_", "-")
            out.append(
                Flag([name], key, kind, typ, choices, jsonable(value), f"{path}:{loop.lineno}")
            )
    return out


# ----------------------------------------------------------------------------------------------
# Wheels


def fetch(engine: str, version: str, cache: Path) -> dict[str, Any]:
    """Download one wheel with pip, keep only the flag files and the metadata."""
    folder = cache / f"{engine}-{version}"
    manifest = folder / "manifest.json"
    if manifest.is_file():
        return json.loads(manifest.read_text())
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
             "--disable-pip-version-check", f"{engine}=={version}", "-d", tmp],
            check=True,
        )  # fmt: skip
        [wheel] = Path(tmp).glob("*.whl")
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        files: dict[str, str] = {}
        with zipfile.ZipFile(wheel) as z:
            for name in sorted(z.namelist()):
                if any(fnmatch(name, g) for g in FILES[engine]):
                    (folder / name).parent.mkdir(parents=True, exist_ok=True)
                    (folder / name).write_bytes(z.read(name))
                    files[name] = hashlib.sha256(z.read(name)).hexdigest()
                elif name.endswith(".dist-info/METADATA"):
                    meta = z.read(name).decode()
        pins = re.findall(r"^Requires-Dist: transformers\s*([^;\n]*)", meta, re.M)
        info = {
            "wheel": wheel.name,
            "sha256": digest,
            "transformers": pins[0].strip() if pins else None,
            "files": files,
        }
    manifest.write_text(json.dumps(info, indent=1))
    return info


def rows(engine: str, per_release: dict[str, list[Flag]]) -> list[dict[str, Any]]:
    """Runs of releases (in order) where a flag reads the same become one row."""
    order = list(per_release)
    out: list[dict[str, Any]] = []
    open_rows: dict[str, dict[str, Any]] = {}
    for i, version in enumerate(order):
        seen = set()
        for f in per_release[version]:
            key = f.names[0]
            seen.add(key)
            row = open_rows.get(key)
            if row is not None and row["_id"] == f.identity() and row["last"] == order[i - 1]:
                row["last"] = version
                continue
            row = {**f.__dict__, "first": version, "last": version, "_id": f.identity()}
            row["source"] = f"{version} {f.source}"
            open_rows[key] = row
            out.append(row)
    for row in out:
        row.pop("_id")
        j = order.index(row["last"])
        row["until"] = order[j + 1] if j + 1 < len(order) else None
    return sorted(out, key=lambda r: (r["names"][0], order.index(r["first"])))


def write(engine: str, cache: Path) -> Path:
    """Read every release of `engine` (downloading what the cache lacks) and write its table."""
    versions = sorted({*RELEASES[engine], *HISTORY[engine]}, key=lambda v: tuple(_version_key(v)))
    read: dict[str, Any] = {}
    per_release: dict[str, list[Flag]] = {}
    for version in versions:
        info = fetch(engine, version, cache)
        folder = cache / f"{engine}-{version}"
        sources = {name: (folder / name).read_text() for name in info["files"]}
        per_release[version] = read_flags(engine, sources)
        read[version] = {
            **{k: v for k, v in info.items() if k != "files"},
            "history": version in HISTORY[engine],
            "files": info["files"],
            "flags": len(per_release[version]),
        }
        print(f"{engine}=={version}: {len(per_release[version])} flags", file=sys.stderr)
    out = ROOT / "kit" / "engines" / engine / "flags.json"
    lines = [json.dumps(r, sort_keys=True) for r in rows(engine, per_release)]
    head = json.dumps({"engine": engine, "script": "data/make_flag_tables.py", "releases": read},
                      indent=1, sort_keys=True)  # fmt: skip
    out.write_text(head[:-2] + ',\n "flags": [\n' + ",\n".join(lines) + "\n ]\n}\n")
    return out


def _version_key(v: str) -> tuple[int, ...]:
    from packaging.version import Version

    ver = Version(v)
    return (*ver.release, ver.post or 0)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", choices=sorted(FILES), action="append")
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kit-flag-wheels")
    args = p.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    for engine in args.engine or sorted(FILES):
        print(write(engine, args.cache))


if __name__ == "__main__":
    main()

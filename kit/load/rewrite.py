"""Fix a draft checkpoint for one engine release: plan the renames, then rewrite it safely.

`plan_fix` tries the few whole-checkpoint layout transforms of `kit.checkpoint.formats` (`layers.0.` ↔
`midlayer.`, `midlayer.{i}.` → `layers.{i}.`, adding / stripping `model.`) together with the
config.json changes the release needs, replays each on the simulator and keeps the smallest one
under which every tensor loads. It refuses, with the reason, when none does or when a parameter
has no tensor at all.

`write_fixed` streams: a new safetensors header, then each tensor's byte range copied from the
source by the kernel (`copy_file_range`) into a temporary file in the destination folder; every
tensor is compared byte for byte with the source while the file is fsynced, then it is renamed
into place and the folder is fsynced. Memory stays flat (8 MB map windows) whatever the
checkpoint's size. The source is only ever opened for reading; `--in-place` keeps it as `*.orig`
(a hard link, no copy).

`--in-place` with renames that all keep their key's byte length (`layers.0.` ↔ `midlayer.`)
writes only the headers, in place, after an undo record (`kit.load.header_fix`, which states what a
crash leaves); `fix --undo` restores the original byte for byte.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import shutil
import struct
import tempfile
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.checkpoint.config import DraftConfig, parse_draft_config
from kit.checkpoint.files import Checkpoint, open_checkpoint, read_safetensors_header
from kit.checkpoint.formats import LAYOUTS, rename_plan
from kit.checkpoint.header import INDEX_NAME, TensorInfo
from kit.engines import ENGINES, EngineRelease, parse_engine
from kit.engines.classes import shape_of
from kit.engines.vocab import Init, State
from kit.errors import KitError
from kit.limits import read_json_file
from kit.load.atomic import default_mode, fsync_dir, replace_text, temp_beside, write_all
from kit.load.findings import no_class_fix
from kit.load.header_fix import fix_in_place
from kit.load.replay import simulate_keys
from kit.load.report import LoadReport, ParamState

CHUNK = 8 << 20  # buffer of the read/write fallback copy
WINDOW = 8 << 20  # bytes of each file mapped at once while verifying


@dataclass
class FixPlan:
    """What `fix` will change for one release, and the replay before and after."""

    engine: str
    renames: dict[str, str]
    config: dict[str, Any] | None  # the new config.json, None when it stays as is
    config_changes: list[str]
    notes: list[str]
    before: LoadReport
    after: LoadReport
    cfg_after: DraftConfig = field(repr=False)

    @property
    def changes_anything(self) -> bool:
        return bool(self.renames or self.config)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "renames": self.renames,
            "config_changes": self.config_changes,
            "notes": self.notes,
            "problems_before": _problems(self.before),
            "problems_after": _problems(self.after),
        }


def _problems(report: LoadReport) -> list[str]:
    """What stops every tensor loading: a refused config.json, then the keys lost as the release
    would load them under the config it reads."""
    problems = [f"config.json refused: {report.refusal.message}"] if report.refusal else []
    return problems + [f"{k.key}: {k.outcome} ({k.message})" for k in report.as_served.lost]


def _why(report: LoadReport) -> str:
    """What stops the load, each distinct reason once with the first keys it hits (a start-up
    exception that fails every key is said once, not per key)."""
    reasons: dict[str, list[str]] = {}
    for k in report.as_served.lost:
        reasons.setdefault(f"{k.outcome} ({k.message})", []).append(k.key)
    parts = [f"config.json refused: {report.refusal.message}"] if report.refusal else []
    for reason, keys in reasons.items():
        more = f" … (+{len(keys) - 2})" if len(keys) > 2 else ""
        parts.append(f"{reason}: {', '.join(keys[:2])}{more}")
    return "; ".join(parts[:4])


# --- config.json ------------------------------------------------------------------------------


def fixed_config(cfg: DraftConfig, ck: Checkpoint, release: EngineRelease) -> tuple[dict, list]:
    """The config.json this release reads (the engine's own form, `rewritten_config`) and what
    changed; a config without `draft_vocab_size` gets the head's row count."""
    raw, changes = ENGINES[release.name].rewritten_config(cfg, release, sorted(ck.tensors))
    if "draft_vocab_size" not in raw and "transformer_layer_config" not in raw:
        head = ck.tensors.get("lm_head.weight")
        raw["draft_vocab_size"] = head.shape[0] if head else cfg.vocab_size
        changes.append(f"draft_vocab_size added: {raw['draft_vocab_size']} (lm_head rows)")
    return raw, changes


# --- the plan -------------------------------------------------------------------------------


def _required_missing(report: LoadReport) -> list[str]:
    """Parameters left as torch.empty garbage: their tensor is simply not in the checkpoint.

    Parameters at a defined init (RMSNorm ones, a random fc.bias, zero d2t) are reported as
    notes instead: e.g. ModelOpt's layers ≥ 1 ship no input_layernorm, and no rename adds one.
    """
    return [
        f"{p.name} {list(p.shape)}"
        for p in report.params
        if p.state == State.LEFT_AT_INIT and p.init == Init.UNINITIALIZED and not p.unused
    ]


def _with_norm_renames(
    ck: Checkpoint, plan: dict[str, str], after: LoadReport, cfg: DraftConfig, rel: EngineRelease
) -> tuple[dict[str, str], LoadReport]:
    """Where a later layer opens with a norm the checkpoint names otherwise (SGLang ≥0.5.12 uses
    hidden_norm, speculators trains input_layernorm), rename the trained norm to the used one."""
    swap = next((f for f in after.findings if f.code == "TRAINED_NORM_UNUSED"), None)
    if swap is None:
        return plan, after
    renamed_back = {new: old for old, new in plan.items()}
    extra = {renamed_back.get(k, k): v for k, v in swap.data["key_renames"].items()}
    plan = {**plan, **extra}
    shapes = {plan.get(n, n): t.shape for n, t in ck.tensors.items()}
    return plan, simulate_keys(shapes, cfg, rel)


def _left_note(p: ParamState, engine: str) -> str:
    """What a parameter nothing loads means for the served draft."""
    if p.unused:
        return f"{p.name} stays {p.init} in {engine}, and is never used"
    if p.init == Init.RANDOM:
        return (
            f"{p.name} stays random in {engine}: the release builds it, the checkpoint has no "
            "tensor for it (the trainer had none), so every draft step adds a random offset"
        )
    return f"{p.name} stays {p.init} in {engine}: the checkpoint has no tensor for it"


def plan_fix(ck: Checkpoint, cfg: DraftConfig, release: EngineRelease | str) -> FixPlan:
    """The smallest rename + config change under which every tensor loads in `release`."""
    rel = parse_engine(release) if isinstance(release, str) else release
    shape = shape_of(cfg, ck.tensors)
    if ENGINES[rel.name].class_for(shape, rel) is None:
        raise KitError(f"refusing: the draft is {shape.words}, and {no_class_fix(rel, shape)}",
                       ck.path)  # fmt: skip
    before = simulate_keys({n: t.shape for n, t in ck.tensors.items()}, cfg, rel)
    raw, changes = fixed_config(cfg, ck, rel)
    cfg_after = parse_draft_config(raw, cfg.path) if changes else cfg
    candidates: list[dict[str, str]] = [{}]
    for layout in LAYOUTS:
        with suppress(KitError):  # a layout that cannot hold these keys is simply not a candidate
            plan = rename_plan(ck.tensors, layout)
            if plan not in candidates:
                candidates.append(plan)
    tried = []
    for plan in sorted(candidates, key=len):
        shapes = {plan.get(n, n): t.shape for n, t in ck.tensors.items()}
        after = simulate_keys(shapes, cfg_after, rel)
        tried.append((plan, after))
        if after.loads_cleanly:
            break
    else:
        plan, after = min(tried, key=lambda t: (t[1].crashed, len(_problems(t[1]))))
        raise KitError(f"no rename makes every tensor load in {rel}: {_why(after)}", ck.path)
    plan, after = _with_norm_renames(ck, plan, after, cfg_after, rel)
    missing = _required_missing(after)
    if missing:
        raise KitError(
            f"refusing: the checkpoint has no tensor for {', '.join(missing[:4])}"
            + (f" (+{len(missing) - 4} more)" if len(missing) > 4 else "")
            + f"; no rename can make {rel} load it",
            ck.path,
        )
    d2t = [f for f in after.findings if f.code == "D2T_MISSING"]
    if d2t:
        raise KitError(f"refusing: {d2t[0].title}; a rename cannot create d2t", ck.path)
    notes = [f.title for f in after.findings if f.code == "TRAINED_FLAG_IGNORED"]
    notes += [_left_note(p, str(rel)) for p in after.params if p.state == State.LEFT_AT_INIT]
    return FixPlan(
        str(rel), plan, raw if changes else None, changes, notes, before, after, cfg_after
    )


# --- streaming, verified, atomic writes -------------------------------------------------------


def _header_bytes(entries: list[tuple[str, TensorInfo]], metadata: dict[str, str]) -> bytes:
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, info in entries:
        header[name] = {
            "dtype": info.dtype,
            "shape": list(info.shape),
            "data_offsets": [offset, offset + info.nbytes],
        }
        offset += info.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the format aligns the data section to 8 bytes
    return struct.pack("<Q", len(raw)) + raw


def _copy_range(src_fd: int, dst_fd: int, src_at: int, dst_at: int, length: int) -> None:
    """Copy `length` bytes between explicit offsets, in the kernel when it can."""
    done = 0
    try:
        while done < length:
            n = os.copy_file_range(src_fd, dst_fd, length - done, src_at + done, dst_at + done)
            if n == 0:
                raise KitError(f"source ended at byte {src_at + done} while copying")
            done += n
    except OSError:  # another filesystem or no kernel support: plain reads and writes
        buf = bytearray(CHUNK)
        while done < length:
            view = memoryview(buf)[: min(CHUNK, length - done)]
            n = os.preadv(src_fd, [view], src_at + done)
            if n == 0:
                raise KitError(f"source ended at byte {src_at + done} while copying") from None
            os.pwrite(dst_fd, view[:n], dst_at + done)
            done += n


@dataclass(frozen=True)
class _Segment:
    name: str  # the tensor's new name
    src_at: int
    dst_at: int
    length: int


def _segments(named: list[tuple[str, TensorInfo]], data_start: int) -> list[_Segment]:
    """Each tensor's source byte range and where it goes in the new file."""
    out, at = [], data_start
    for new, t in named:
        assert t.offsets is not None
        out.append(_Segment(new, t.offsets[0], at, t.nbytes))
        at += t.nbytes
    return out


def _mapped(fd: int, offset: int, length: int) -> tuple[mmap.mmap, int]:
    """A read-only map of [offset, offset+length) and where `offset` sits in it."""
    lead = offset % mmap.ALLOCATIONGRANULARITY
    return mmap.mmap(fd, length + lead, prot=mmap.PROT_READ, offset=offset - lead), lead


def _first_difference(src_fd: int, dst_fd: int, segments: list[_Segment]) -> str | None:
    """Compare every copied range with the source: memcmp over read-only maps of both files.

    A map shares the page cache, so this is one pass over each side with no copies into Python
    buffers (re-reading with `read()` costs twice as much). Maps are WINDOW bytes at a time and
    unmapped after use: mapped pages count as resident memory. Returns the first tensor whose
    bytes differ, or None.
    """
    import numpy as np

    memcmp = ctypes.CDLL(None).memcmp
    memcmp.restype = ctypes.c_int
    memcmp.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    for seg in segments:
        for off in range(0, seg.length, WINDOW):
            n = min(WINDOW, seg.length - off)
            (src, i), (dst, j) = (
                _mapped(src_fd, seg.src_at + off, n),
                _mapped(dst_fd, seg.dst_at + off, n),
            )
            with src, dst:
                a, b = np.frombuffer(src, np.uint8), np.frombuffer(dst, np.uint8)
                differ = memcmp(a.ctypes.data + i, b.ctypes.data + j, n)
                del a, b  # release the buffer exports before the maps close
            if differ:
                return seg.name
    return None


def _copy_verify_sync(src_fd: int, dst_fd: int, segments: list[_Segment], tmp: Path) -> None:
    """Copy every segment in the kernel, then verify while the file is fsynced.

    The fsync (waiting on the disk) runs in a thread while this one compares bytes (CPU), so
    verification costs little wall time; the caller renames the file into place only after
    both have finished.
    """
    for seg in segments:
        _copy_range(src_fd, dst_fd, seg.src_at, seg.dst_at, seg.length)
    failure: list[BaseException] = []

    def sync() -> None:
        try:
            os.fsync(dst_fd)
        except BaseException as e:  # re-raised below, in the calling thread
            failure.append(e)

    syncer = threading.Thread(target=sync)
    syncer.start()
    try:
        bad = _first_difference(src_fd, dst_fd, segments)
    finally:
        syncer.join()
    if failure:
        raise failure[0]
    if bad is not None:
        raise KitError(f"verification failed: {bad} differs from the source", tmp)


def rewrite_safetensors(
    src: Path, renames: dict[str, str], dest: Path, metadata: dict[str, str] | None = None
) -> None:
    """Write `src` with tensors renamed to `dest` (atomically, verified, fsynced)."""
    tensors, meta = read_safetensors_header(src)
    entries = sorted(tensors.values(), key=lambda t: t.offsets or (0, 0))
    named = [(renames.get(t.name, t.name), t) for t in entries]
    head = _header_bytes(named, meta if metadata is None else metadata)
    dest.parent.mkdir(parents=True, exist_ok=True)
    src_fd = os.open(src, os.O_RDONLY)
    try:
        with temp_beside(dest.parent, dest.name, os.fstat(src_fd).st_mode & 0o777) as (fd, tmp):
            write_all(fd, head)
            _copy_verify_sync(src_fd, fd, _segments(named, len(head)), tmp)
            written, _ = read_safetensors_header(tmp)
            for new, t in named:
                w = written[new]
                if (w.dtype, w.shape) != (t.dtype, t.shape):
                    raise KitError(f"verification failed: header of {new} differs", tmp)
            os.replace(tmp, dest)
            fsync_dir(dest.parent)
    finally:
        os.close(src_fd)


def copy_verified(src: Path, dest: Path) -> None:
    """Copy a file unchanged (a pickle checkpoint whose tensors keep their names), verified."""
    src_fd = os.open(src, os.O_RDONLY)
    try:
        with temp_beside(dest.parent, dest.name, os.fstat(src_fd).st_mode & 0o777) as (fd, tmp):
            _copy_verify_sync(src_fd, fd, [_Segment(src.name, 0, 0, os.fstat(src_fd).st_size)], tmp)
            os.replace(tmp, dest)
            fsync_dir(dest.parent)
    finally:
        os.close(src_fd)


def _check_writable(ck: Checkpoint, plan: FixPlan) -> None:
    if ck.kind == "pickle" and plan.renames:
        raise KitError(
            "renaming tensors inside a pickle checkpoint is not supported (it cannot be streamed); "
            "convert it to safetensors first",
            ck.files[0],
        )


def write_fixed(
    ck: Checkpoint, plan: FixPlan, out: Path | None = None, in_place: bool = False
) -> Path:
    """Apply `plan`: a complete new folder at `out`, or the same folder (`*.orig` kept)."""
    _check_writable(ck, plan)
    files = ck.files
    if in_place == (out is not None):
        raise KitError("choose exactly one of --out DIR or --in-place")
    if in_place:
        return _write_in_place(ck, plan, files)
    assert out is not None
    if out.exists():
        raise KitError("already exists; choose a new --out folder", out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        stage.chmod(default_mode(0o777))
        for f in files:
            if ck.kind == "pickle":
                copy_verified(f, stage / f.name)
            else:
                rewrite_safetensors(f, plan.renames, stage / f.name)
        if ck.kind == "sharded":
            replace_text(stage / INDEX_NAME, _renamed_index(ck, plan.renames), sync_folder=False)
        for extra in sorted(ck.folder.iterdir()):
            skip = {f.name for f in files} | {INDEX_NAME, "config.json"}
            if extra.is_file() and extra.name not in skip and not extra.name.endswith(".orig"):
                shutil.copy2(extra, stage / extra.name)
        config = plan.config if plan.config is not None else _raw_config(ck)
        if config is not None:
            replace_text(stage / "config.json", _config_text(config), sync_folder=False)
        fsync_dir(stage)
        os.rename(stage, out)
        fsync_dir(out.parent)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return out


def _raw_config(ck: Checkpoint) -> dict | None:
    return read_json_file(ck.config_path) if ck.config_path else None


def _renamed_index(ck: Checkpoint, renames: dict[str, str]) -> str:
    data = read_json_file(ck.folder / INDEX_NAME)
    data["weight_map"] = {renames.get(k, k): v for k, v in data["weight_map"].items()}
    return json.dumps(data, indent=2) + "\n"


def _keep_orig(path: Path) -> None:
    orig = path.with_name(path.name + ".orig")
    if not orig.exists():
        os.link(path, orig)  # the original bytes stay reachable under *.orig; nothing is copied


def _config_text(config: dict) -> str:
    return json.dumps(config, indent=2) + "\n"


def _write_in_place(ck: Checkpoint, plan: FixPlan, files: list[Path]) -> Path:
    """Header-only when every rename keeps its key's byte length (`kit.load.header_fix`, undo record
    beside); otherwise each file streamed to a temporary copy, its original kept as `*.orig`."""
    folder = ck.folder
    index = _renamed_index(ck, plan.renames) if ck.kind == "sharded" else None
    config = _config_text(plan.config) if plan.config is not None else None
    if fix_in_place(ck, plan.renames, index, config):
        return folder
    for f in files if plan.renames else []:
        _keep_orig(f)
        rewrite_safetensors(f, plan.renames, f)
    if index is not None:
        _keep_orig(folder / INDEX_NAME)
        replace_text(folder / INDEX_NAME, index, sync_folder=False)
    if config is not None:
        cfg_path = folder / "config.json"
        if cfg_path.exists():
            _keep_orig(cfg_path)
        replace_text(cfg_path, config, sync_folder=False)
    fsync_dir(folder)
    return folder


def verify_output(path: Path, release: EngineRelease | str) -> LoadReport:
    """Re-open a written checkpoint and replay the release on it (the fix must show no drops)."""
    from kit.checkpoint.config import load_draft_config
    from kit.load.replay import simulate_load

    ck = open_checkpoint(path)
    if ck.config_path is None:
        raise KitError("no config.json beside the written checkpoint", path)
    return simulate_load(ck, load_draft_config(ck.config_path), release)

"""A draft named by its Hub repo id, read from a Hub on 127.0.0.1 (tests/hub_server.py) serving
the bundled checkpoints: the verdicts equal those on the same files on disk, only headers and
small files are fetched, the revision resolves to its commit, and each Hub failure is one line."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hub_server import FakeHub, serve

import kit
from kit import cli
from kit.checkpoint import hub as hubmod
from tests.conftest import DATA, DRAFT, ROOT, TARGET

ENGINE = "sglang==0.5.10"
CHECKPOINTS = {
    "org/pair-draft": DRAFT,
    "org/specforge": DATA / "layouts" / "specforge",
    "org/speculators-converter": DATA / "layouts" / "speculators-converter",
    "org/speculators-trainer": DATA / "layouts" / "speculators-trainer",
    "org/modelopt-layers": DATA / "layouts" / "modelopt-layers",
    "org/modelopt-midlayer": DATA / "layouts" / "modelopt-midlayer",
    "org/speculators-tiny": DATA / "samples" / "speculators-0.9.0-tiny",
}
# Headers and small files only: a few hundred KB whatever the checkpoint's size.
FETCH_LIMIT = 400_000


def _large_draft(folder: Path) -> Path:
    """The bundled draft's config with a 4 GiB lm_head: a sparse file, the header real."""
    folder.mkdir()
    (folder / "config.json").write_text((DRAFT / "config.json").read_text())
    rows, cols = 1 << 17, 1 << 14  # BF16: 4 GiB
    header = {"lm_head.weight": {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [0, 0]}}
    header["lm_head.weight"]["data_offsets"][1] = rows * cols * 2
    raw = json.dumps(header).encode()
    with open(folder / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + rows * cols * 2)
    return folder


def _sharded_draft(folder: Path) -> Path:
    """The bundled draft in two shards behind an index, shard 1's header longer than the first
    range the kit asks for (a long __metadata__), so its header takes a second request."""
    from safetensors.torch import load_file, save_file

    folder.mkdir()
    (folder / "config.json").write_text((DRAFT / "config.json").read_text())
    tensors = load_file(DRAFT / "model.safetensors")
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[::2]}
    shards["model-00002-of-00002.safetensors"] = names[1::2]
    long = {"note": "x" * (2 * hubmod.FIRST_RANGE_BYTES)}
    for i, (shard, keys) in enumerate(shards.items()):
        save_file({k: tensors[k] for k in keys}, folder / shard, metadata=long if i == 0 else None)
    weight_map = {k: shard for shard, keys in shards.items() for k in keys}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return folder


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    hub = FakeHub()
    for repo, folder in CHECKPOINTS.items():
        hub.add(repo, folder)
    hub.repos["org/pair-draft"].revisions["v1.0"] = "ab" * 20
    hub.add("org/target", TARGET)
    hub.add("org/large", _large_draft(tmp_path_factory.mktemp("large") / "draft"))
    hub.add("org/sharded", _sharded_draft(tmp_path_factory.mktemp("sharded") / "draft"))
    hub.add("org/pickle-only", DATA / "layouts" / "eagle-official")
    hub.add("org/gated", DRAFT, gated=True)
    hub.add("org/private", DRAFT, private=True)
    hub.add("org/config-only", TARGET / "config.json", commit="cd" * 20)
    hub.repos["org/config-only"].files = {"config.json": TARGET / "config.json"}
    server, url = serve(hub)
    hub.url = url
    yield hub
    server.shutdown()


@pytest.fixture
def hub(fake, tmp_path, monkeypatch):
    """huggingface_hub pointed at the fake Hub with an empty cache, as HF_ENDPOINT and HF_HOME
    would set it at import (its constants are read once, so they are set here directly)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", fake.url)
    template = fake.url + "/{repo_id}/resolve/{revision}/{filename}"
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setattr(hubmod, "_SOURCES", {})
    monkeypatch.setattr(hubmod, "_RESOLVED", {})
    fake.reset_counts()
    return fake


def _verdict(findings, *folders: Path) -> list[tuple]:
    """Findings as comparable tuples, the folder each path names in its evidence left out."""

    def plain(text: str) -> str:
        for folder in folders:
            text = text.replace(str(folder), "<folder>")
        return text

    return sorted(
        (f.code, f.severity.name, f.title, tuple(map(plain, f.evidence))) for f in findings
    )


@pytest.mark.parametrize("repo", sorted(CHECKPOINTS))
def test_verdicts_equal_those_on_disk(hub, repo):
    on_disk = CHECKPOINTS[repo]
    remote = kit.simulate(repo, ENGINE)
    local = kit.simulate(on_disk, ENGINE)
    assert _verdict(remote.findings) == _verdict(local.findings)
    inspected, inspected_disk = kit.inspect(repo), kit.inspect(on_disk)
    assert _verdict(inspected.findings) == _verdict(inspected_disk.findings)
    assert [t.to_dict() for t in inspected.checkpoint.tensors.values()] == [
        t.to_dict() for t in inspected_disk.checkpoint.tensors.values()
    ]
    assert inspected.format.name == inspected_disk.format.name
    (source,) = hubmod.sources()
    assert source.repo == repo and source.commit == hub.repos[repo].commit
    assert 0 < source.fetched <= hub.sent < FETCH_LIMIT
    assert inspected.to_dict()["hub"]["bytes_fetched"] == source.fetched


def test_a_4_gib_checkpoint_costs_its_header_and_bounded_samples(hub):
    large = hub.repos["org/large"].files["model.safetensors"]
    assert large.stat().st_size > 4 << 30
    remote, local = kit.inspect("org/large"), kit.inspect(large.parent)
    assert _verdict(remote.findings) == _verdict(local.findings)
    assert any(f.code == "LOOKS_UNTRAINED" for f in remote.findings)  # all zeros, both ways
    assert remote.stats["lm_head.weight"].values_read == hubmod.HUB_SAMPLE_BYTES // 2
    assert hub.sent < FETCH_LIMIT
    ranges = [r for r in hub.requests if "bytes=" in r]
    assert ranges and all("model.safetensors" in r for r in ranges)


def test_a_sharded_checkpoint_reads_the_index_and_every_shard_header(hub):
    folder = hub.repos["org/sharded"].files["config.json"].parent
    remote, local = kit.inspect("org/sharded"), kit.inspect(folder)
    assert remote.checkpoint.kind == local.checkpoint.kind == "sharded"
    assert _verdict(remote.findings) == _verdict(local.findings)
    assert _verdict(kit.simulate("org/sharded", ENGINE).findings) == _verdict(
        kit.simulate(folder, ENGINE).findings
    )
    assert {t.file.name for t in remote.checkpoint.tensors.values()} == {
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    }
    first = [r for r in hub.requests if "00001-of-00002.safetensors bytes=" in r]
    assert first[0].endswith(f"bytes=0-{hubmod.FIRST_RANGE_BYTES - 1}")
    assert first[1].split("bytes=")[1].startswith(f"{hubmod.FIRST_RANGE_BYTES}-")  # the rest


def test_full_statistics_need_download(hub):
    with pytest.raises(kit.KitError, match="--download"):
        kit.inspect("org/large", stats="full")


def test_revision_resolves_to_its_commit(hub, capsys):
    assert cli.main(["simulate", "org/pair-draft@v1.0", "--engine", ENGINE, "--json"]) == 0
    (source,) = hubmod.sources()
    assert source.commit == "ab" * 20 and source.revision == "v1.0"
    assert source.folder.name == "ab" * 20
    err = capsys.readouterr().err
    assert f"commit {'ab' * 20}" in err and f"{source.fetched:,} bytes fetched" in err
    assert any(f"/resolve/{'ab' * 20}/model.safetensors" in r for r in hub.requests)


def test_doctor_on_hub_ids_equals_doctor_on_folders(hub):
    remote = kit.doctor("org/pair-draft", target_config="org/target", engine=ENGINE)
    local = kit.doctor(DRAFT, target_config=TARGET, engine=ENGINE)
    folders = [s.folder for s in hubmod.sources()]
    assert _verdict(remote.findings, *folders) == _verdict(local.findings, DRAFT, TARGET)
    assert remote.checks.keys() == local.checks.keys()
    assert {s.repo for s in hubmod.sources()} == {"org/pair-draft", "org/target"}
    assert hub.sent < FETCH_LIMIT


def test_offline_acceptance_needs_the_weights(hub):
    report = kit.doctor("org/pair-draft", target="org/target", engine=ENGINE)
    assert "--download" in report.skipped["offline"]
    with pytest.raises(kit.KitError, match="--download"):
        kit.offline("org/target", "org/pair-draft")


def test_download_fills_the_cache_then_offline_mode_reads_it(hub, monkeypatch, capsys):
    from huggingface_hub import constants

    args = ["simulate", "org/specforge", "--engine", ENGINE, "--download"]
    assert cli.main(args) == 0
    assert hub.sent > (CHECKPOINTS["org/specforge"] / "model.safetensors").stat().st_size
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hubmod, "_RESOLVED", {})
    hub.reset_counts()
    assert cli.main(["simulate", "org/specforge", "--engine", ENGINE]) == 0
    assert _asked(hub) == []  # the complete snapshot in the cache, nothing asked of the Hub


def test_fix_plans_from_headers_and_writes_only_after_download(hub, tmp_path, capsys):
    repo = "org/speculators-converter"
    assert cli.main(["fix", repo, "--engine", ENGINE, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan == kit.fix(CHECKPOINTS[repo], ENGINE)[0].to_dict()
    out = tmp_path / "fixed"
    assert cli.main(["fix", repo, "--engine", ENGINE, "--out", str(out)]) == 2
    assert "--download" in capsys.readouterr().err and not out.exists()
    assert cli.main(["fix", repo, "--engine", ENGINE, "--out", str(out), "--download"]) == 0
    assert (out / "model.safetensors").is_file()


def test_trace_and_deployment_take_hub_ids(hub, capsys):
    """trace and deployment read the draft's and the target's configs (and the target's
    tokenizer for the template rules) from the Hub: the same JSON as on disk."""

    def same(command: str) -> list[dict]:
        argv = [command, "--engine", ENGINE, "--json"]
        assert cli.main([*argv, "--draft", "org/pair-draft", "--target-config", "org/target"]) == 0
        remote = json.loads(capsys.readouterr().out)["findings"]
        assert cli.main([*argv, "--draft", str(DRAFT), "--target-config", str(TARGET)]) == 0
        local = json.loads(capsys.readouterr().out)["findings"]
        folders = [s.folder for s in hubmod.sources()]
        assert _verdict(map(kit.Finding.from_dict, remote), *folders) == _verdict(
            map(kit.Finding.from_dict, local), DRAFT, TARGET
        )
        return remote

    assert any(f["code"] == "TRACED_AS_REWRITTEN" for f in same("trace"))
    assert any(f["code"] == "TEMPLATE_TOKENS_UNREACHABLE" for f in same("deployment"))


def test_a_snapshot_folder_reads_from_the_hub_in_another_process(hub, fake, tmp_path):
    """run hands notebook kernels the snapshot folder: a fresh process, given HF_ENDPOINT and
    the cache as a user's kernel inherits them, opens it from the Hub too."""
    from kit.report.runbook import RunInputs, plan

    folder = hubmod.resolve("org/pair-draft")
    target = hubmod.resolve("org/target", target=True)
    _, skipped = plan(RunInputs(draft=folder, target=target))
    offline = next(s for s in skipped if s.name == "05_offline_acceptance")
    assert "--download" in offline.summary_line()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env |= {"HF_ENDPOINT": fake.url, "HF_HUB_CACHE": str(folder.parents[2])}
    code = f"import kit; r = kit.inspect({str(folder)!r}); print(r.to_dict()['hub']['commit'])"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == fake.repos["org/pair-draft"].commit


def _asked(hub) -> list[str]:
    """The requests for a repo (model info, files): huggingface_hub's own housekeeping left out."""
    return [r for r in hub.requests if "/api/models/" in r or "/resolve/" in r]


def _one_line_error(argv: list[str], capsys) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: "), err
    return err


@pytest.mark.parametrize(
    "answer", [(401, "RepoNotFound"), (404, "RepoNotFound"), (404, "EntryNotFound"), (404, None)]
)
def test_missing_repo(hub, monkeypatch, capsys, answer):
    """The Hub's answer to an anonymous caller, to a signed-in one, and what a mirror or proxy
    may send instead: each is the one line that says no such repo, never "a file is missing"."""
    monkeypatch.setattr(hub, "missing", answer)
    for argv in (["simulate", "acme/no-such-draft", "--engine", ENGINE],
                 ["inspect", "acme/no-such-draft"]):  # fmt: skip
        err = _one_line_error(argv, capsys)
        assert err.startswith("error: acme/no-such-draft: no such local file or folder, nor a repo")
        assert "mistyped, or the repo is private" in err and "lists" not in err


def test_gated_repo_without_then_with_a_token(hub, monkeypatch, capsys):
    err = _one_line_error(["simulate", "org/gated", "--engine", ENGINE], capsys)
    assert "gated" in err and "HF_TOKEN" in err
    monkeypatch.setenv("HF_TOKEN", hub.token)
    monkeypatch.setattr(hubmod, "_RESOLVED", {})
    assert cli.main(["simulate", "org/gated", "--engine", ENGINE]) == 0


def test_private_repo_without_a_token(hub, capsys):
    err = _one_line_error(["inspect", "org/private"], capsys)
    assert "private" in err and "HF_TOKEN" in err


def test_missing_revision(hub, capsys):
    err = _one_line_error(["simulate", "org/pair-draft@v9", "--engine", ENGINE], capsys)
    assert "the repo exists but has no revision 'v9'" in err


def test_private_repo_with_a_token_of_another_account(hub, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_someone_else")
    err = _one_line_error(["inspect", "org/private"], capsys)
    assert "private and the token set has no access to it" in err


def test_offline_mode_without_a_cached_copy(hub, monkeypatch, capsys):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    err = _one_line_error(["inspect", "org/pair-draft"], capsys)
    assert "HF_HUB_OFFLINE=1" in err and _asked(hub) == []


def test_no_network(hub, monkeypatch, capsys):
    from huggingface_hub import constants

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setattr(constants, "ENDPOINT", dead)
    err = _one_line_error(["doctor", "--draft", "org/pair-draft", "--engine", ENGINE], capsys)
    assert f"cannot reach the Hub at {dead}" in err


@pytest.mark.parametrize("repo", ["org/pickle-only", "org/config-only"])
def test_repo_without_safetensors(hub, repo, capsys):
    err = _one_line_error(["simulate", repo, "--engine", ENGINE], capsys)
    assert "no safetensors" in err or "holds no weights" in err
    if repo == "org/pickle-only":
        assert "pytorch_model.bin" in err and "--download" in err


def test_an_endpoint_that_ignores_ranges_is_refused_not_downloaded(hub, monkeypatch, capsys):
    monkeypatch.setattr(hub, "ranges", False)
    err = _one_line_error(["simulate", "org/pair-draft", "--engine", ENGINE], capsys)
    assert "HTTP 200, not 206" in err and "--download" in err


def test_mistyped_local_path_stays_no_such_file(hub, capsys):
    err = _one_line_error(["inspect", "data/pair/drat"], capsys)
    assert "no such file or folder" in err and _asked(hub) == []


@pytest.mark.parametrize(
    "argv",
    [["inspect", "./drafts/mine"], ["inspect", "drafts/mine/"], ["inspect", "~/drafts"],
     ["inspect", "drafts/config.json"], ["inspect", "C:\\drafts\\mine"],
     ["simulate", "./acme/draft", "--engine", ENGINE],
     ["doctor", "--draft", "./acme/draft"], ["doctor", "--draft=./acme/draft"],
     ["deployment", "--draft", str(DRAFT), "--target-config", "./acme/target"]],
)  # fmt: skip
def test_a_missing_path_spelled_as_one_is_never_sent_to_the_hub(hub, capsys, argv):
    """`./acme/draft` reaches the command as `acme/draft` (argparse's Path drops the `./`), a
    valid repo id: what was typed decides, and the Hub is not asked."""
    err = _one_line_error(argv, capsys)
    assert "no such file or " in err and _asked(hub) == []


def test_a_repo_id_spelled_as_one_is_still_looked_up(hub, capsys):
    assert cli.main(["inspect", "org/pair-draft", "--header-only"]) == 0
    assert any("/api/models/org/pair-draft" in r for r in _asked(hub))


def test_environment_variables_drive_the_cli(fake, tmp_path):
    """HF_ENDPOINT and HF_HOME as a user sets them, in a fresh process: same answer as on disk."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env |= {"HF_ENDPOINT": fake.url, "HF_HOME": str(tmp_path), "NO_PROXY": "127.0.0.1"}
    fake.reset_counts()

    def simulate(target: str) -> tuple[dict, str]:
        cmd = [sys.executable, "-m", "kit", "simulate", target, "--engine", ENGINE, "--json"]
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout), done.stderr

    remote, err = simulate("org/pair-draft")
    local, _ = simulate(str(DRAFT))
    assert remote["findings"] == local["findings"]
    assert f"commit {fake.repos['org/pair-draft'].commit}" in err
    assert (tmp_path / "hub" / "models--org--pair-draft").is_dir()  # HF_HOME's cache
    assert 0 < fake.sent < FETCH_LIMIT

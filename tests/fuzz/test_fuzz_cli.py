"""The CLI on hostile inputs: exit 2 comes with exactly one line that names the file.

The same mutated checkpoints, logs and launch scripts as the API fuzz tests, through
`python -m kit inspect`, `acceptance` and `deployment` (in process: `kit.cli.main`). An exit of
2 must print one stderr line, `error: PATH: problem`, with PATH the input or a file inside it.
"""

from __future__ import annotations

import contextlib
import io

from fuzz_inputs import DRAFT, Fence, log_lines, more, survives
from hypothesis import given
from test_fuzz_checkpoint import hostile_file
from test_fuzz_launch import launch_line
from test_fuzz_logs import log_text

from kit.cli import main


def one_line_naming(argv: list[str], fence: Fence) -> None:
    """Run the CLI; on exit 2, one line starting `error: ` and naming a path in the fence."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = survives(main, argv)  # a KitError escaping main would be a CLI bug
    assert code is not None, "main let a KitError out instead of exiting 2"
    if code == 2:
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"error: {fence.inside}"), lines[0]


@more(2)
@given(hostile_file())
def test_inspect_cli_on_hostile_checkpoints(body: bytes):
    with Fence() as fence:
        (fence.inside / "model.safetensors").write_bytes(body)
        fence.copy(DRAFT / "config.json")
        one_line_naming(["inspect", str(fence.inside), "--header-only"], fence)


@given(log_text(log_lines()))
def test_acceptance_cli_on_hostile_logs(text: bytes):
    with Fence() as fence:
        log = fence.inside / "server.log"
        log.write_bytes(text)
        one_line_naming(["acceptance", str(log)], fence)


@given(launch_line())
def test_deployment_cli_on_hostile_launch_scripts(line: bytes):
    with Fence() as fence:
        script = fence.inside / "launch.sh"
        script.write_bytes(line)
        one_line_naming(["deployment", "--launch", str(script)], fence)

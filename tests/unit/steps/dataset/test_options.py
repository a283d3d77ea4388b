"""The dataset step's `name` checks (parse_options), one value after another: the CLI path that
carries --name to them and prints their sentence with exit 2 is proven once per sentence in
tests/integration/test_dataset.py (test_a_bad_flag_value_names_the_flag_not_a_line); each
further value here costs no CLI start and no test host."""

from __future__ import annotations

import pytest

from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.dataset.hostdirs import probes
from gpuonboard.steps.dataset.options import parse_options


def _refused(name: str) -> str:
    with pytest.raises(StepArgsError) as err:
        parse_options({"source": "/d/corpus", "dest": "/data", "name": name})
    return str(err.value)


@pytest.mark.parametrize("name", ["cr\rx", "ff\x0cx", "a\u2028b", "a\x85b", "esc\x1b[31m", "tab\tx"])
def test_a_name_with_a_line_break_or_control_character_is_refused(name: str) -> None:
    """Each line break str.splitlines() knows, and a Cc character (ESC, TAB)."""
    assert _refused(name) == (
        "name must not hold a line break or another control character (\\n, \\r, \\t, ESC, a Unicode"
        f" line separator ...), not {name!r}; pick another with --name"
    )


@pytest.mark.parametrize(
    "name", [".gpuonboard-copy", ".corpus.gpuonboard-upload", ".corpus.gpuonboard-unpack-ab12cd34-0123"]
)
def test_a_name_gpuonboard_uses_for_its_own_files_is_refused(name: str) -> None:
    assert _refused(name) == (
        "name must not be one gpuonboard uses for its own files on the host (.gpuonboard-copy,"
        " .<name>.gpuonboard-upload, .<name>.gpuonboard-unpack-*), not"
        f" {name!r}; pick another with --name"
    )


def test_a_name_with_a_space_is_taken() -> None:
    assert parse_options({"source": "/d/corpus", "dest": "/data", "name": "two lines"}).dirname == "two lines"


@pytest.mark.parametrize(
    ("args", "probed"),
    [({}, True), ({"shards": "auto"}, True), ({"shards": True}, False), ({"unpack": True}, False)],
)
def test_the_list_of_what_uploads_wrote_is_probed_only_where_plain_mode_can_run(
    args: dict[str, object], probed: bool
) -> None:
    """The host's list of what uploads wrote in the copy is read by plain mode's plan alone:
    it was probed in shard mode too (`--shards`, `--unpack`), which never reads it."""
    opts = parse_options({"source": "/d/corpus", "dest": "/data", **args})
    names = [p.name for p in probes(opts)]
    assert any(n.startswith("dataset-written:") for n in names) is probed

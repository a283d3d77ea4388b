"""summary.json and the JSON reports stay strict JSON: a loss that went NaN (or an infinite
ratio) is written as null, never as the bare NaN/Infinity that `jq` and other readers refuse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.report import jsonfile
from gpuonboard.report.strictjson import dumps


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_nan_and_infinity_are_written_as_null(tmp_path: Path) -> None:
    nan, inf = float("nan"), float("inf")
    doc = {
        "schema": "x",
        "hosts": [{"steps": [{"diff": {"loss": [2.5, nan, -inf], "ratio": inf, "ok": 1.0}}]}],
    }
    path = tmp_path / "summary.json"
    jsonfile.write(path, doc)
    got = _strict(path.read_text())
    assert got["hosts"][0]["steps"][0]["diff"] == {"loss": [2.5, None, None], "ratio": None, "ok": 1.0}
    with pytest.raises(ValueError):
        _strict(json.dumps({"loss": nan}))  # (what json.dumps alone writes)
    assert _strict(dumps({"t": (1.0, nan)}, indent=2)) == {"t": [1.0, None]}

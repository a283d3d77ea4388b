"""The report templates render in templating.BoundedSandbox, as user templates do: a project's
own report template that builds a huge value or loops without end is one sentence (exit 2)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.report import render

sys.path.insert(0, str(Path(__file__).parent))
from test_report_render import _host, _run  # noqa: E402

RUN = "20261129-000000-aaaa"


@pytest.mark.parametrize(
    "body",
    [
        "{{ 'x' * (2 ** 40) }}",  # a 1 TiB string: refused before it is built
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",  # 10**10 steps
    ],
)
def test_a_project_report_template_is_bounded(tmp_path: Path, body: str) -> None:
    _run(tmp_path, [_host("gpu-1", "pass", "8")])
    (tmp_path / "templates" / "report").mkdir(parents=True)
    (tmp_path / "templates" / "report" / "md.j2").write_text(body + "\n")
    with pytest.raises(
        UsageError, match=r"^report template .*/templates/report/md\.j2: .*simplify the template"
    ):
        render.report(tmp_path / "reports", RUN, "md", tmp_path)


def test_the_shipped_report_filters_still_work_bounded(tmp_path: Path) -> None:
    _run(tmp_path, [_host("gpu-1", "pass", "8")])
    (tmp_path / "templates" / "report").mkdir(parents=True)
    (tmp_path / "templates" / "report" / "md.j2").write_text("{{ 'a|b' | mdcell }} {{ 1000 | size }}\n")
    out, _digest, _go = render.report(tmp_path / "reports", RUN, "md", tmp_path)
    assert out.read_text().startswith("a\\|b ")

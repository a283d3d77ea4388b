"""QA round 3 (playbooks): a template step naming a missing file stops the run before any
connection (exit 2, file and line), instead of failing every host after its login."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import api, connection
from gpuonboard.errors import ExitCode, PlaybookError


def project(tmp_path: Path, src: str) -> Path:
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / "t.yml").write_text(
        "steps:\n  - step: acceptance\n  - step: template\n    name: envfile\n"
        f"    args: {{src: {src}, dest: /tmp/x.env}}\n"
    )
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "hosts.yml").write_text("hosts:\n  gpu-1: {address: 192.0.2.1}\n")
    return tmp_path


def test_missing_template_is_a_playbook_error_before_connecting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_connection(*_: object, **__: object) -> None:
        raise AssertionError("connected despite a missing template")

    monkeypatch.setattr(api, "Preconnect", no_connection)
    monkeypatch.setattr(connection, "open_runner", no_connection)
    root = project(tmp_path, "remote/nope.j2")
    with pytest.raises(PlaybookError) as info:
        api.provision(api.Selection(), api.Settings(project=root), playbook="t")
    assert info.value.exit_code == ExitCode.USAGE
    assert str(info.value) == (
        f"{root / 'playbooks' / 't.yml'}, line 3: step 'envfile' names the template 'remote/nope.j2',"
        f" which is not under {root / 'templates'} nor the shipped templates; fix 'src' or add the file."
    )


def test_skipped_or_shipped_templates_pass_the_check(tmp_path: Path) -> None:
    from gpuonboard.runner import playbook

    root = project(tmp_path, "remote/nope.j2")
    book = playbook.load(root / "playbooks" / "t.yml")
    playbook.check_templates(book, root, ["acceptance"])  # --skip envfile
    (root / "playbooks" / "t.yml").write_text(
        "steps:\n  - step: template\n    args: {src: remote/acceptance.env.j2, dest: /tmp/x.env}\n"
    )
    playbook.check_templates(playbook.load(root / "playbooks" / "t.yml"), root, ["template"])


def test_acceptance_env_is_safe_to_source(tmp_path: Path) -> None:
    import subprocess

    from gpuonboard.inventory import Host, OrderSpec
    from gpuonboard.templating import render_file

    model = 'RTX 4090 "D" $(touch pwned) `id` \\'
    text = render_file(
        tmp_path,
        "remote/acceptance.env.j2",
        host="gpu-1",
        inventory_host=Host(name="gpu-1", address="x"),
        order=OrderSpec(gpu_model=model, gpu_count=8),
        vars={},
        facts={
            "gpu_count": 0,
            "gpu_model": None,
            "driver_version": "535.54.03",
            "cuda_version": None,
            "interconnect": "nvlink",
        },
        p={},
    )
    (tmp_path / "a.env").write_text(text)
    out = subprocess.run(
        [
            "sh",
            "-c",
            '. ./a.env && printf "%s|%s|%s|%s" "$ORDER_GPU_MODEL" "$ORDER_GPU_COUNT"'
            ' "$DELIVERED_GPU_MODEL" "$DRIVER_VERSION"',
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == f"{model}|8||535.54.03"
    assert not (tmp_path / "pwned").exists()
    assert "DELIVERED_GPU_COUNT=0" in text


@pytest.mark.parametrize("name", ["pull,verify", " acceptance", "nap "])
def test_a_step_name_that_only_and_skip_cannot_name_is_refused(tmp_path: Path, name: str) -> None:
    from gpuonboard.runner import playbook

    path = tmp_path / "b.yml"
    path.write_text(f"steps:\n  - step: acceptance\n    name: {name!r}\n")
    with pytest.raises(PlaybookError) as info:
        playbook.load(path)
    assert str(info.value).startswith(f"{path}, line 3: step 1 name {name!r} must have no comma")


def test_playbook_by_file_name_is_found_under_playbooks(tmp_path: Path) -> None:
    root = project(tmp_path, "remote/acceptance.env.j2")
    assert api.find_playbook(root, "t.yml") == root / "playbooks" / "t.yml"
    assert api.find_playbook(root, "t") == root / "playbooks" / "t.yml"
    assert api.find_playbook(root, "provision.yml").name == "provision.yml"  # the shipped one
    (root / "t.yml").write_text("steps:\n  - step: acceptance\n")
    assert api.find_playbook(root, "t.yml") == root / "t.yml"  # a file in the project wins
    with pytest.raises(Exception, match="playbook not found"):
        api.find_playbook(root, "nope.yml")

"""paramiko's first import (`connection.base.import_paramiko`) without importlib.metadata, its
version read from its distribution's METADATA instead: the same version, the real module for
anything else, and the plain import where the distribution is not found beside the package."""

from __future__ import annotations

import importlib
import importlib.metadata
import subprocess
import sys
from pathlib import Path

from gpuonboard.connection import base

SRC = Path(base.__file__).resolve().parents[2]


def test_paramiko_is_imported_without_importlib_metadata_and_with_its_own_version() -> None:
    """A fresh interpreter's first login import: paramiko loaded, importlib.metadata not, and
    `paramiko.__version__` (its SSH banner's) what importlib.metadata says."""
    code = (
        "import sys; from gpuonboard.connection import login; login._fabric();"
        " import paramiko, fabric, importlib;"
        " print('importlib.metadata' in sys.modules, hasattr(importlib, 'metadata'), paramiko.__version__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env={"PYTHONPATH": str(SRC)}, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False", importlib.metadata.version("paramiko")]


def test_the_distribution_version_is_the_one_importlib_metadata_reads() -> None:
    for package in ("paramiko", "yaml", "invoke"):
        version = base.dist_version(package)
        # (PyYAML's distribution is not named after its package: not read, the plain import)
        assert version is None if package == "yaml" else version == importlib.metadata.version(package)
    assert base.dist_version("gpuonboard_no_such_package") is None
    assert base.dist_version("json") is None  # (the standard library's: no distribution)


def test_the_stand_in_answers_other_names_from_the_real_module() -> None:
    stand_in = base._metadata_stand_in({"paramiko": "9.9.9"})
    assert stand_in.version("paramiko") == "9.9.9"
    assert stand_in.version("invoke") == importlib.metadata.version("invoke")
    assert stand_in.PackageNotFoundError is importlib.metadata.PackageNotFoundError

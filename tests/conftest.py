"""Setup shared by every test: the CLI runs the tests start keep the code Python generates
(gpuonboard.codecache) in a folder of the test runs' own, never the developer's cache, so that
no result depends on what the developer's own runs left there."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault(
    "GPUONBOARD_CODE_CACHE", os.path.join(tempfile.gettempdir(), f"gpuonboard-test-code-{os.getuid()}")
)

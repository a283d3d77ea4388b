"""JSON that strict readers accept: never NaN or Infinity (Python's json writes both)."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(obj: Any) -> Any:
    """`obj` with every NaN or infinite float as None: JSON has no NaN (`jq` and strict readers
    refuse the file), and a loss that went NaN is a fact the rules already judged."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: Any, **kw: Any) -> str:
    """json.dumps that never writes NaN or Infinity (see `finite`); the walk runs only when
    the fast strict pass finds one."""
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, **kw)
    except ValueError:
        return json.dumps(finite(obj), ensure_ascii=False, allow_nan=False, **kw)

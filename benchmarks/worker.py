"""One benchmark area in a process of its own; the suite starts it (`suite.measure_apart`).

Run as `python benchmarks/worker.py REQUEST`, where REQUEST is a JSON file naming the area's
function (`module`, `name`), the settings (`quick`, `out`), the suite's `sys_path` and where to
write the `result`: `{"section": Section}` pickled, or `{"error": "Type: message"}` (after the
traceback, on stderr) when the area raised. The suite turns an error, and a process that died
without a result, into the failed row an area that raises in the suite's own process gives.
"""

from __future__ import annotations

import importlib
import json
import pickle
import sys
import traceback
from pathlib import Path


def main(argv: list[str]) -> int:
    """Measure the requested area and write its result; 0, or 1 when the area raised."""
    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    sys.path[:] = request["sys_path"]  # import what the suite imports, from the same places
    from benchmarks.harness import Settings

    area = importlib.import_module(request["module"])
    for part in request["name"].split("."):
        area = getattr(area, part)
    settings = Settings(quick=request["quick"], out=Path(request["out"]))
    result = Path(request["result"])
    try:
        section = area(settings)  # type: ignore[operator]
    except Exception as exc:
        traceback.print_exc()
        result.write_bytes(pickle.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    result.write_bytes(pickle.dumps({"section": section}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

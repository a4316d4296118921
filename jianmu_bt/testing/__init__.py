"""Testing trees like code: overlays that substitute tools and LLMs, traces, record and replay.

```python
from jianmu_bt.loader import load_tree
from jianmu_bt.testing import Overlay, Stub, Trace

tree = load_tree("tree.yaml")
Overlay(tools={"http_request": Stub(result={"status": 200, "body": "hi"})},
        llm=["The page says hi."]).apply(tree)
trace = Trace()
tree.events.subscribe(trace)
tree.run()
```
An overlay file (`load_overlay`, `jianmu run TREE --overlay FILE`) says the same in YAML; the
pytest plugin (`jianmu_tree`, `jianmu_run` fixtures) loads, overlays, runs and traces; a run's
trace becomes an overlay that replays it (`record_overlay`, `jianmu overlay record`). See
docs/testing-trees.md.

Each name is imported from its module on first use (`jianmu_bt._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.testing.overlay import (
        NodeRule as NodeRule,
        Overlay as Overlay,
        OverlayError as OverlayError,
    )
    from jianmu_bt.testing.overlay_file import (
        load_overlay as load_overlay,
        overlay_from_data as overlay_from_data,
    )
    from jianmu_bt.testing.recording import (
        dump_overlay as dump_overlay,
        record_overlay as record_overlay,
        write_overlay as write_overlay,
    )
    from jianmu_bt.testing.running import (
        CallWaitsError as CallWaitsError,
        ReplayDivergedError as ReplayDivergedError,
        TreeRun as TreeRun,
        ValueWaitsError as ValueWaitsError,
        open_tree as open_tree,
        run_tree as run_tree,
    )
    from jianmu_bt.testing.substitutes import (
        FunctionSubstitute as FunctionSubstitute,
        Recorded as Recorded,
        RecordedCall as RecordedCall,
        Stub as Stub,
        Substitute as Substitute,
        SubstituteTool as SubstituteTool,
    )
    from jianmu_bt.testing.trace import Call as Call, Trace as Trace

__getattr__, __dir__ = lazy_exports(__name__, globals())

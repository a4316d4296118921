"""The tree viewer in the browser: watch a run live, replay a trace or a durable run, answer
held calls (`jianmu view`, `jianmu run --view`; see docs/viewer.md).

```python
from jianmu_bt.viewer import ViewerServer, live_source

source = live_source(tree)                   # before the run starts
with ViewerServer(source, port=0) as server: # 127.0.0.1, any free port
    print(server.url, server.token)
    tree.run()
```
The server needs the `viewer` extra (Starlette, uvicorn). What a trace records for a replay
(`tree.nodes`, `state.write`) and its reader are in `jianmu_bt.viz.trace_status`. Names load on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:
    from jianmu_bt.http_guard import Access as Access
    from jianmu_bt.viewer.deps import (
        ViewerUnavailableError as ViewerUnavailableError,
        require_viewer_packages as require_viewer_packages,
    )
    from jianmu_bt.viewer.hub import EventHub as EventHub
    from jianmu_bt.viewer.server import ViewerError as ViewerError, ViewerServer as ViewerServer
    from jianmu_bt.viewer.sources import (
        Source as Source,
        history_source as history_source,
        live_source as live_source,
        static_source as static_source,
        trace_source as trace_source,
    )
    from jianmu_bt.viewer.tree_view import TreeView as TreeView


__getattr__, __dir__ = lazy_exports(__name__, globals())

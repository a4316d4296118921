"""The pytest plugin (entry point `pytest11`): fixtures that load, overlay, run and trace trees.

```python
def test_offline(jianmu_run):
    run = jianmu_run("tree.yaml", overlay="tree.overlay.yaml", inputs={"url": "https://x/"})
    assert run.succeeded
    assert [c.arguments["url"] for c in run.calls("http_request")] == ["https://x/"]
    run.trace.assert_order("Fetch", "Summarise")
```
- `jianmu_tree(source, overlay=None, **load_options)`: the loaded Tree, overlay applied.
- `jianmu_run(source, overlay=None, *, inputs=None, timeout=30, decisions=None,
  **load_options)`: a `TreeRun` (result, trace, final state, calls still held); a replay that
  diverged fails the test with the calls it made that the recording did not have. `decisions`
  decide the calls the guard holds (`{"send_email": "approve", "call_7": "deny"}`: by call id or
  tool name; "approve", "deny", "hold", or (action, note)); a held call with no decision fails
  the test at once, naming the call.

Every tree a fixture opened is closed after the test. Importing this module loads nothing of
jianmu_bt: the fixtures import it when a test uses them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest


@pytest.fixture
def jianmu_tree() -> Iterator[Callable[..., Any]]:
    """A factory: `jianmu_tree(source, overlay=None, **load_options)` -> Tree (closed after)."""
    from jianmu_bt.testing.running import open_tree

    opened: list[Any] = []

    def factory(source: Any, overlay: Any = None, **load_options: Any) -> Any:
        tree = open_tree(source, overlay, **load_options)
        opened.append(tree)
        return tree

    yield factory
    for tree in reversed(opened):
        tree.close()


@pytest.fixture
def jianmu_run(jianmu_tree: Callable[..., Any]) -> Callable[..., Any]:
    """A factory: `jianmu_run(source, overlay=None, *, inputs=None, timeout=30, decisions=None,
    answers=None, results=None, **options)` -> TreeRun; a diverged replay, a held call with no
    decision, or a question or external call with no value, fails the test."""
    from jianmu_bt.testing.running import (
        DEFAULT_TIMEOUT,
        CallWaitsError,
        ReplayDivergedError,
        ValueWaitsError,
        run_tree,
    )

    def factory(
        source: Any,
        overlay: Any = None,
        *,
        inputs: Any = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        decisions: Any = None,
        answers: Any = None,
        results: Any = None,
        **load_options: Any,
    ) -> Any:
        tree = jianmu_tree(source, overlay, **load_options)
        try:
            return run_tree(
                tree,
                inputs,
                timeout=timeout,
                decisions=decisions,
                answers=answers,
                results=results,
            )
        except (ReplayDivergedError, CallWaitsError, ValueWaitsError) as exc:
            pytest.fail(str(exc), pytrace=False)

    return factory

"""State writes in a run's events: one `state.write` per write however many recorders ask (a run
viewed and traced at once), none once every recorder stopped."""

from __future__ import annotations

from viewer_helpers import REPO

from jianmu_bt.loader import load_tree
from jianmu_bt.viewer import record_state_writes


def test_each_write_is_recorded_once_while_anyone_records():
    with load_tree(REPO / "trees" / "quickstart.yaml") as tree:
        seen = []
        tree.events.subscribe(lambda e: seen.append(e) if e.type == "state.write" else None)
        first, second = record_state_writes(tree), record_state_writes(tree)
        assert [e.data["initial"] for e in seen] == [True, True]  # each starts with the state
        assert seen[0].data["values"]["numbers"] == "2 + 3 * 4"

        def writes() -> list:
            return [e.data["values"] for e in seen if not e.data.get("initial")]

        tree.state.update({"numbers": "1 + 1"})
        assert writes() == [{"numbers": "1 + 1"}]
        first()
        first()  # stopping twice is harmless
        tree.state.update({"numbers": "1 + 2"})
        assert writes() == [{"numbers": "1 + 1"}, {"numbers": "1 + 2"}]
        second()
        tree.state.update({"numbers": "1 + 3"})
        assert len(writes()) == 2

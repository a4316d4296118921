"""OverlayScript: the scripted model an overlay makes from replies or a reply function."""

from __future__ import annotations

from typing import Any

from jianmu_bt.llm.scripted import ScriptedProvider


class OverlayScript(ScriptedProvider):
    """A `ScriptedProvider` that keeps its script, so each application of an overlay starts a
    new one from the first reply (`fresh`)."""

    def __init__(self, script: Any) -> None:
        super().__init__(script)
        self.script = script

    def fresh(self) -> OverlayScript:
        """A new provider from the same script, with no call made."""
        return OverlayScript(self.script)


__all__ = ["OverlayScript"]

"""The progress line: counts by status, rate and ETA; redrawn in place on a terminal, plain
lines otherwise (checked on the text, never on times)."""

from __future__ import annotations

import io

from jianmu_bt.batch.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_line_is_redrawn_in_place_and_ends_with_a_newline():
    stream = Terminal()
    meter = Progress(4, stream)
    meter.every = 0.0  # draw on every result
    for status in ("succeeded", "failed", "paused", "invalid"):
        meter.add(status)
    meter.finish()
    text = stream.getvalue()
    assert text.count("\r\x1b[K") == 5 and text.endswith("\n") and text.count("\n") == 1
    assert "batch: 4/4 | done 1, failed 1, paused 1, invalid 1 |" in text
    assert "runs/s | ETA 0s" in text


def test_in_a_log_plain_lines_and_the_final_counts():
    stream = io.StringIO()
    meter = Progress(3, stream, every=3600)  # nothing between results in this test
    meter.add("succeeded")
    meter.add("error")
    meter.add("succeeded", recorded=True)
    meter.finish()
    lines = stream.getvalue().splitlines()
    assert lines == [lines[-1]] and "\r" not in lines[0]
    assert lines[0].startswith("batch: 3/3 | done 2, failed 1, paused 0 (1 recorded before) |")
    assert Progress(3, None).line().endswith("ETA ?")  # nothing done yet: no estimate

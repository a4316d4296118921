"""research.yaml tested offline: its network tool and its model are substituted by overlays.

Run with `pytest examples/testing/test_research.py` (the jianmu pytest plugin gives the
`jianmu_run` fixture once jianmu-bt is installed).
"""

from pathlib import Path

HERE = Path(__file__).parent
TREE = HERE / "research.yaml"


def test_the_agent_summarises_the_fetched_pages(jianmu_run):
    run = jianmu_run(TREE, overlay=HERE / "research.overlay.yaml")

    assert run.succeeded, run.reason
    assert run.state["summary"].startswith("Example Domain")
    urls = [call.arguments["url"] for call in run.calls("http_request")]
    assert urls == ["https://example.org/", "https://example.org/about"]
    assert [call.node for call in run.calls()] == ["Fetch", "Summarise.tools"]
    run.trace.assert_order("Fetch", "PageOK", "Summarise", "HasSummary")


def test_a_failed_fetch_stops_before_the_agent(jianmu_run):
    overlay = {"tools": {"http_request": {"error": "connection refused"}}}
    run = jianmu_run(TREE, overlay=overlay)

    assert not run.succeeded
    assert "connection refused" in run.calls("http_request")[0].error
    run.trace.assert_not_ran("PageOK", "Summarise")

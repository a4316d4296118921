"""duckduckgo_search with its backend replaced by a local search service (tests have no internet).

The stand-in is a real HTTP service on 127.0.0.1 answering in ddgs's result shape, reached by a
backend that uses httpx with a timeout, so the tool's normalisation, limits, deadline and error
reporting are exercised over a real connection. The ddgs backend itself is run against a proxy
that refuses connections, which is how it behaves without a network.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from conftest import Handler, LocalHTTPServer, Servers

from jianmu_bt.tools import ToolSet
from jianmu_bt.tools.builtin.web_search import DDGSBackend, DuckDuckGoSearchTool

pytestmark = pytest.mark.anyio

RESULTS = [
    {"title": "Python", "href": "https://www.python.org/", "body": "The official home."},
    {"title": "Docs", "href": "https://docs.python.org/3/", "body": "Documentation " * 100},
    {"title": "No link", "body": "dropped: a result without a URL"},
    {"title": "PyPI", "url": "https://pypi.org/", "snippet": "The package index."},
]


class LocalSearchBackend:
    """A SearchBackend that asks the local search service over HTTP."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.returned = threading.Event()

    def search(
        self, query: str, *, max_results: int, region: str, safesearch: str, timeout: float
    ) -> list[Mapping[str, Any]]:
        try:
            response = httpx.get(
                f"{self.base_url}/search",
                params={"q": query, "n": max_results, "region": region, "safe": safesearch},
                timeout=timeout,
            )
            response.raise_for_status()
            return response.json()
        finally:
            self.returned.set()


@pytest.fixture
def service(servers: Servers) -> LocalHTTPServer:
    server = servers.start()

    def search(h: Handler) -> None:
        query = parse_qs(urlsplit(h.path).query)
        q = query["q"][0]
        if q == "nothing":
            h.reply_json([])
        elif q == "broken":
            h.reply(503, b"service unavailable")
        elif q == "slow":
            h.server.release.wait(30)
            h.reply_json([])
        else:
            h.reply_json(RESULTS[: int(query["n"][0]) + 1])

    server.routes["/search"] = search
    return server


async def test_results_are_title_url_snippet(service: LocalHTTPServer) -> None:
    tools = ToolSet.resolve(["web_search"], search_backend=LocalSearchBackend(service.url))
    result = await tools.call("duckduckgo_search", {"query": "python", "max_results": 10})
    assert result.ok
    results = result.output["results"]
    assert [r["url"] for r in results] == [
        "https://www.python.org/",
        "https://docs.python.org/3/",
        "https://pypi.org/",
    ]
    assert results[0] == {
        "title": "Python",
        "url": "https://www.python.org/",
        "snippet": "The official home.",
    }
    assert len(results[1]["snippet"]) == 501 and results[1]["snippet"].endswith("…")


async def test_max_results_region_and_safesearch_reach_the_backend(
    service: LocalHTTPServer,
) -> None:
    tool = DuckDuckGoSearchTool(search_backend=LocalSearchBackend(service.url))
    result = await tool.call(
        {"query": "python", "max_results": 1, "region": "de-de", "safesearch": "off"}
    )
    assert len(result.output["results"]) == 1
    query = parse_qs(urlsplit(service.hits[-1][1]).query)
    assert query == {"q": ["python"], "n": ["1"], "region": ["de-de"], "safe": ["off"]}


async def test_no_results_is_an_empty_list(service: LocalHTTPServer) -> None:
    tool = DuckDuckGoSearchTool(search_backend=LocalSearchBackend(service.url))
    result = await tool.call("nothing")
    assert result.ok and result.output == {"query": "nothing", "results": []}


async def test_a_failing_service_is_a_clear_error(service: LocalHTTPServer) -> None:
    tool = DuckDuckGoSearchTool(search_backend=LocalSearchBackend(service.url))
    result = await tool.call({"query": "broken"})
    assert not result.ok
    assert "web search for 'broken' failed: HTTPStatusError" in result.error
    assert "503" in result.error


async def test_a_hanging_search_ends_at_the_deadline(service: LocalHTTPServer) -> None:
    backend = LocalSearchBackend(service.url)
    tool = DuckDuckGoSearchTool(search_backend=backend, search_timeout=0.5)
    result = await tool.call({"query": "slow"})
    assert not result.ok and "timed out after 0.5s" in result.error
    assert not backend.returned.is_set()  # the call ended before the search did
    # The abandoned worker thread ends with the backend's own timeout (here: the server answers).
    service.release.set()
    assert backend.returned.wait(10)


async def test_arguments_are_validated() -> None:
    tool = DuckDuckGoSearchTool(search_backend=LocalSearchBackend("http://127.0.0.1:9"))
    assert "query" in (await tool.call({"query": ""})).error
    assert "max_results" in (await tool.call({"query": "x", "max_results": 100})).error
    assert "region" in (await tool.call({"query": "x", "region": "germany"})).error


def test_a_backend_without_search_is_refused() -> None:
    with pytest.raises(TypeError, match="search"):
        DuckDuckGoSearchTool(search_backend=object())  # type: ignore[arg-type]


async def test_the_ddgs_backend_without_a_network_gives_a_clear_error(servers: Servers) -> None:
    pytest.importorskip("ddgs")
    closed = servers.start()
    port = closed.server_address[1]
    closed.shutdown()
    closed.server_close()
    tool = DuckDuckGoSearchTool(search_backend=DDGSBackend(proxy=f"http://127.0.0.1:{port}"))
    result = await tool.call({"query": "python"})
    assert not result.ok
    assert "web search for 'python' failed" in result.error
    assert "unreachable" in result.error


async def test_a_missing_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ddgs", None)  # makes `import ddgs` fail
    monkeypatch.setitem(sys.modules, "duckduckgo_search", None)
    result = await DuckDuckGoSearchTool().call({"query": "python"})
    assert not result.ok
    assert "neither the 'ddgs' nor the 'duckduckgo_search' package" in result.error
    assert "pip install" in result.error


async def test_the_duckduckgo_search_import_is_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service: LocalHTTPServer
) -> None:
    """Without ddgs, the older package's DDGS class (same API) is used."""
    (tmp_path / "duckduckgo_search.py").write_text(
        textwrap.dedent(
            f"""
            import httpx

            class DDGS:
                def __init__(self, proxy=None, timeout=10):
                    self.timeout = timeout

                def text(self, keywords, region, safesearch, max_results, backend):
                    return httpx.get(
                        "{service.url}/search",
                        params={{"q": keywords, "n": max_results, "region": region,
                                 "safe": safesearch}},
                        timeout=self.timeout,
                    ).json()
            """
        )
    )
    monkeypatch.setitem(sys.modules, "ddgs", None)
    monkeypatch.delitem(sys.modules, "duckduckgo_search", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = await DuckDuckGoSearchTool().call({"query": "python", "max_results": 1})
    assert result.ok and result.output["results"][0]["url"] == "https://www.python.org/"


def test_building_the_tools_does_not_import_ddgs() -> None:
    code = (
        "import sys; from jianmu_bt.tools import ToolSet; "
        "ts = ToolSet.resolve(['duckduckgo_search', 'http_request', 'read_file']); "
        "ts.schemas(); "
        "print(json.dumps(['ddgs' in sys.modules, 'duckduckgo_search' in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import json; " + code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, False]

"""duckduckgo_search: web search through a replaceable backend (ddgs by default).

The default backend uses the `ddgs` package (the maintained successor of `duckduckgo_search`,
whose import is accepted as a fallback); it is imported only when a search runs, so the tool can
be listed and described without it. Any object with a `search(...)` method of the `SearchBackend`
shape can stand in (a company search API, or a local stand-in in tests). Results are normalised
to title/url/snippet; the call has a deadline; a missing package or an unreachable network is a
clear error.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any, Literal, Protocol, runtime_checkable

import anyio
from pydantic import Field

from jianmu_bt.tools.blocking import run_blocking
from jianmu_bt.tools.builtin.model_tool import ModelTool, ToolArguments, ToolFault, reports_faults

_MAX_SNIPPET_CHARS = 500


@runtime_checkable
class SearchBackend(Protocol):
    """Where duckduckgo_search gets its results. A blocking call; it runs in a worker thread."""

    def search(
        self, query: str, *, max_results: int, region: str, safesearch: str, timeout: float
    ) -> list[Mapping[str, Any]]:
        """Up to `max_results` results, each a mapping with a title, a URL and a snippet.

        The keys may be `title`/`href`/`body` (ddgs) or `title`/`url`/`snippet`. No results is
        an empty list; a failure raises.
        """
        ...


def import_ddgs_class() -> type[Any]:
    """The DDGS class from `ddgs`, else from `duckduckgo_search`; ToolFault when neither exists."""
    for module_name in ("ddgs", "duckduckgo_search"):
        try:
            found: type[Any] = importlib.import_module(module_name).DDGS
        except ImportError:
            continue
        return found
    raise ToolFault(
        "web search is not available here: neither the 'ddgs' nor the 'duckduckgo_search' "
        "package is installed (pip install 'jianmu-bt[search]')"
    )


class DDGSBackend:
    """The default backend: DuckDuckGo and other engines through the `ddgs` package."""

    def __init__(self, proxy: str | None = None, backend: str = "auto") -> None:
        """`proxy` as ddgs takes it (http/https/socks5 URL); `backend` picks ddgs's engines."""
        self.proxy = proxy
        self.backend = backend

    def search(
        self, query: str, *, max_results: int, region: str, safesearch: str, timeout: float
    ) -> list[Mapping[str, Any]]:
        """Text search; ddgs's "No results found." becomes an empty list."""
        ddgs_class = import_ddgs_class()
        client = ddgs_class(proxy=self.proxy, timeout=max(1, round(timeout)))
        try:
            return list(
                client.text(
                    query,
                    region=region,
                    safesearch=safesearch,
                    max_results=max_results,
                    backend=self.backend,
                )
                or []
            )
        except Exception as exc:
            if "no results found" in str(exc).lower():
                return []
            raise

    def __repr__(self) -> str:
        return f"DDGSBackend(proxy={self.proxy!r}, backend={self.backend!r})"


def normalise_result(item: Mapping[str, Any]) -> dict[str, str] | None:
    """A result as {title, url, snippet}; None when it has no URL."""
    url = item.get("href") or item.get("url") or item.get("link")
    if not url:
        return None
    snippet = str(item.get("body") or item.get("snippet") or item.get("description") or "")
    if len(snippet) > _MAX_SNIPPET_CHARS:
        snippet = snippet[:_MAX_SNIPPET_CHARS] + "…"
    return {"title": str(item.get("title") or ""), "url": str(url), "snippet": snippet}


class WebSearchArgs(ToolArguments):
    query: str = Field(min_length=1, max_length=500, description="What to search for")
    max_results: int = Field(5, ge=1, le=25, description="Most results to return")
    region: str = Field(
        "us-en",
        pattern=r"^[a-z]{2}-[a-z]{2}$",
        description="Region code such as 'us-en', 'de-de', 'cn-zh'; 'wt-wt' for none",
    )
    safesearch: Literal["on", "moderate", "off"] = Field("moderate", description="Safe search")


class DuckDuckGoSearchTool(ModelTool):
    """Search the web and return result titles, URLs and snippets."""

    name = "duckduckgo_search"
    description = (
        "Search the web (DuckDuckGo and related engines). Returns a list of results, each with "
        "title, url and snippet. Use http_request to fetch a result's page."
    )
    Arguments = WebSearchArgs
    primary_argument = "query"
    replaces_requirement = ("search_backend",)  # a backend of one's own needs no ddgs

    @classmethod
    def missing_requirement(cls) -> str | None:
        """The default backend's package (ddgs, or the older duckduckgo_search), when missing."""
        if any(importlib.util.find_spec(name) for name in ("ddgs", "duckduckgo_search")):
            return None
        return (
            "the default search backend needs the 'ddgs' package (pip install "
            "'jianmu-bt[search]'); a search_backend of your own works without it"
        )

    output_schema: dict[str, Any] = {
        "type": "object",
        "description": "query and results: [{title, url, snippet}]",
        "properties": {
            "query": {"type": "string"},
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string"},
                        "url": {"type": "string"},
                        "snippet": {"type": "string"},
                    },
                },
            },
        },
    }
    effect_tags = ("web_search",)
    read_only = True

    def __init__(
        self,
        search_backend: SearchBackend | None = None,
        search_timeout: float = 15.0,
        proxy: str | None = None,
    ) -> None:
        """`search_backend` replaces ddgs; `search_timeout` bounds each search in seconds;
        `proxy` is the proxy URL of the default ddgs backend."""
        if search_backend is not None and not isinstance(search_backend, SearchBackend):
            raise TypeError(f"search_backend needs a search(...) method, got {search_backend!r}")
        self.backend: SearchBackend = search_backend or DDGSBackend(proxy=proxy)
        self.search_timeout = search_timeout

    def sandbox_kwargs(self) -> dict[str, Any]:
        """Constructor arguments (JSON) that rebuild this tool in a sandbox worker.

        Only the default ddgs backend can be rebuilt there; a custom backend object cannot
        cross a process boundary.
        """
        if type(self.backend) is not DDGSBackend:
            raise ValueError(
                "duckduckgo_search with a custom search_backend cannot be re-created in a "
                "sandbox; run it in process"
            )
        return {"search_timeout": self.search_timeout, "proxy": self.backend.proxy}

    @reports_faults
    async def run(self, input: WebSearchArgs) -> dict[str, Any]:
        call = functools.partial(
            self.backend.search,
            input.query,
            max_results=input.max_results,
            region=input.region,
            safesearch=input.safesearch,
            timeout=self.search_timeout,
        )
        try:
            with anyio.fail_after(self.search_timeout):
                # A stuck search returns at the deadline (the call is abandoned); the thread
                # ends when the backend's own timeout fires.
                raw = await run_blocking(call)
        except TimeoutError:
            raise ToolFault(
                f"web search for {input.query!r} timed out after {self.search_timeout}s"
            ) from None
        except ToolFault:
            raise
        except Exception as exc:
            raise ToolFault(
                f"web search for {input.query!r} failed: {type(exc).__name__}: {exc}; the "
                "search service may be unreachable from here (no network) or rate-limiting"
            ) from None
        results = [r for r in map(normalise_result, raw or []) if r is not None]
        return {"query": input.query, "results": results[: input.max_results]}

"""Shared pieces of the guard tests: real tools with effect tags, a tool set and a fake clock."""

import pytest

from jianmu_bt.tools import ToolCall, ToolSet, tool


class FakeClock:
    """A wall clock the test moves by hand."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@tool(name="write_file", effect_tags=("file_write",))
def write_file(path: str, content: str) -> str:
    """Write a file."""
    return f"wrote {len(content)} bytes to {path}"


@tool(name="http_request", effect_tags=("http",))
def http_request(url: str) -> str:
    """Fetch a URL."""
    return f"GET {url}"


@tool(name="bash", effect_tags=("shell",))
def bash(command: str) -> str:
    """Run a shell command."""
    return command


@tool
def calculator(expression: str) -> str:
    """Evaluate arithmetic."""
    return expression


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def toolset() -> ToolSet:
    return ToolSet.from_tools([write_file, http_request, bash, calculator])


def call(name: str, call_id: str | None = None, **arguments) -> ToolCall:
    """A ToolCall with keyword arguments (the id defaults to `c_<name>`)."""
    return ToolCall(name=name, arguments=arguments, id=call_id or f"c_{name}")


@pytest.fixture
def make_call():
    return call

"""SandboxLimits: sizes with units, validation, clear errors."""

import pytest
from pydantic import ValidationError

from jianmu_bt.sandbox.limits import SandboxLimits, format_size, limit_error, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [("512MiB", 512 * 1024**2), ("1g", 1024**3), ("64k", 65536), ("1.5m", 1572864), (10, 10)],
)
def test_sizes_read_units(text, expected):
    assert parse_size(text) == expected


def test_an_unreadable_size_names_the_value():
    with pytest.raises(ValueError, match="'lots'"):
        parse_size("lots")


def test_limits_accept_size_strings_and_reject_unknown_fields():
    assert SandboxLimits(memory_bytes="256MiB").memory_bytes == 256 * 1024**2
    with pytest.raises(ValidationError, match="memmory"):
        SandboxLimits(memmory="1g")
    with pytest.raises(ValidationError, match="timeout"):
        SandboxLimits(timeout=0)


def test_a_limit_error_names_the_limit():
    raw = limit_error("memory", "ran out")
    assert raw == {"ok": False, "error": "Error: memory limit exceeded: ran out", "limit": "memory"}
    assert format_size(256 * 1024**2) == "256 MiB"

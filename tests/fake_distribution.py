"""An installed distribution's metadata in a folder, as installing a package writes it."""

from __future__ import annotations

from pathlib import Path


def write_distribution(site: Path, name: str, entry_points: str) -> Path:
    """Write `name`'s dist-info (its METADATA and `entry_points.txt`) into `site`; `site`
    then goes on PYTHONPATH for `importlib.metadata` to find it there."""
    info = site / f"{name.replace('-', '_')}-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return site

"""The printed table: one line per row (median, spread, target, verdict), notes, extra tables."""

from __future__ import annotations

import textwrap

from benchmarks.harness import Row, Section, fmt_value

WIDTH = 58


def fmt_spread(row: Row) -> str:
    """p25-p75 of the per-round ratios ('10.8-12.1'), or of the values as +-% of the median."""
    if row.spread is None:
        return "-"
    low, high = row.spread
    if row.ratio is not None:
        return f"{low:.2f}-{high:.2f}"
    if not row.ours:
        return "-"
    return f"{low / row.ours - 1:+.0%}/{high / row.ours - 1:+.0%}"


def table_header() -> str:
    """The column titles and a rule under them."""
    header = (
        f"{'measure':<{WIDTH}} {'ours':>10} {'anchor':>10} {'ratio':>8} {'p25-p75':>11} "
        f"{'target':>9}  {'met':<4} anchor"
    )
    return f"{header}\n{'-' * (len(header) + 24)}"


def row_notes(row: Row) -> list[str]:
    """The notes of a row: its own, and the machine load it was measured under."""
    notes = [row.note] if row.note else []
    if row.verdict() == "load":
        raw = "yes" if row.met else "NO"
        notes.append(f"measured under load {row.load:.2f}: not a verdict (it read {raw})")
    return notes


def format_rows(rows: list[Row], notes: list[str]) -> list[str]:
    """Table lines for `rows`; each row's notes are appended to `notes` and marked [n]."""
    lines = []
    for row in rows:
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
        name = row.anchor_name
        for note in row_notes(row):
            if note not in notes:
                notes.append(note)
            name = f"{name} [{notes.index(note) + 1}]"
        lines.append(
            f"{row.what:<{WIDTH}} {fmt_value(row.ours, row.unit):>10} "
            f"{fmt_value(row.anchor, row.unit):>10} {ratio:>8} {fmt_spread(row):>11} "
            f"{row.target:>9}  {row.verdict():<4} {name}"
        )
    return lines


def print_sections(sections: list[Section]) -> None:
    """One table for every section's rows (a heading line per section), the notes, the extras."""
    notes: list[str] = []
    print(table_header())
    for section in sections:
        if section.rows:
            print(f"## {section.title}")
            print("\n".join(format_rows(section.rows, notes)))
    print(
        "\nratio: anchor/ours for a '>=' target (times less than the anchor), ours/anchor for "
        "'<=Nx',\n       ours/ideal for a time limit; p25-p75: of the per-round ratios (or of "
        "the values,\n       as a share of the median). met: n/a = the anchor is not installed; "
        "load = measured\n       while the machine was busy (1-minute load above its CPUs): "
        "not a verdict.\n       Rows marked (tuned: ...) are not the default path."
    )
    if notes:
        print("\nnotes:")
        for index, note in enumerate(notes, 1):
            print(textwrap.fill(note, 100, initial_indent=f"[{index}] ", subsequent_indent="    "))
    for section in sections:
        for table in section.tables:
            print(f"\n{table}")
        for path in section.files:
            print(f"wrote {path}")

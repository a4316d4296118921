"""Attack: YAML resource bombs. Each source is refused with one located diagnostic, quickly.

Every bomb is loaded in a subprocess limited to 1 GiB of address space (RLIMIT_AS) with a
generous timeout that only bounds a hang (it is not a timing assertion): a bomb that went off
would die of MemoryError or be killed, and the test would see that instead of the diagnostic.
The same files go through `load_tree`, `validate_source` and `jianmu validate`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jianmu_bt.loader import validate_source
from jianmu_bt.loader.positions import LIMITS
from jianmu_bt.loader.units import MAX_FILE_BYTES

HANG_BOUND = 120  # seconds; only a hang gets near it
MEMORY = 1 << 30

_PROBE = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
    from jianmu_bt.loader import TreeLoadError, load_tree, validate_source
    kind, source = sys.argv[1], sys.argv[2]
    source = Path(source) if kind == "path" else Path(source).read_text()
    found = [d.to_dict() | {{"text": str(d)}} for d in validate_source(source)]
    try:
        load_tree(source).close()
        raised = None
    except TreeLoadError as exc:
        raised = str(exc)
    print(json.dumps({{"found": found, "raised": raised}}))
    """
).format(memory=MEMORY)


def probe(source: Path, cwd: Path, *, as_text: bool = False) -> dict:
    """validate_source and load_tree of `source` (a path, or its text) in a bounded process."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "text" if as_text else "path", str(source)],
        capture_output=True,
        text=True,
        timeout=HANG_BOUND,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def refused(
    source: Path, cwd: Path, code: str, where: tuple[str, int, int], *words: str, text=False
) -> dict:
    """One error diagnostic with `code` at `where` (run in `cwd`), the same from load_tree."""
    result = probe(source, cwd, as_text=text)
    (found,) = result["found"]
    assert (found["code"], found["severity"]) == (code, "error"), found
    assert (found["file"], found["line"], found["col"]) == where, found
    for word in words:
        assert word in found["message"], found
    assert "\n" not in found["text"]
    assert result["raised"] == found["text"]
    return found


# -- sources ----------------------------------------------------------------------------------


def laughs_lists(levels: int = 9) -> str:
    lines = ["lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * 9) + "]")
    lines.append(f"root: {{set: {{values: {{x: *lol{levels - 1}}}}}}}")
    return "\n".join(lines) + "\n"


def laughs_merge(levels: int = 12) -> str:
    lines = ["m0: &m0 {" + ", ".join(f"k{j}: {j}" for j in range(10)) + "}"]
    for i in range(1, levels):
        body = ", ".join(f"k{j}: {{<<: *m{i - 1}}}" for j in range(10))
        lines.append(f"m{i}: &m{i} {{{body}}}")
    lines.append(
        f"root: {{retry: {{<<: *m{levels - 1}, child: {{condition: {{check: 'True'}}}}}}}}"
    )
    return "\n".join(lines) + "\n"


def laughs_block() -> str:
    text = "a: &a\n" + "".join(f"  - {'x' * 50}\n" for _ in range(10))
    for i, name in enumerate("bcdefgh"):
        prev = "abcdefgh"[i]
        text += f"{name}: &{name}\n" + f"  - *{prev}\n" * 10
    return text + "root: {condition: {check: 'True'}}\n"


def long_strings() -> str:
    big = "x" * (LIMITS.max_string - 10)
    return f'big: &big "{big}"\nmany: [' + ", ".join(["*big"] * 40) + "]\n"


BOMBS = {
    # name: (text, code, line, col, words)
    "laughs_nested_lists": (laughs_lists(), "yaml-limit", 6, 21, ["alias *lol4", "values"]),
    "laughs_merge_keys": (laughs_merge(), "yaml-limit", 5, 124, ["alias *m3", "values"]),
    "laughs_block_style": (laughs_block(), "yaml-limit", 57, 5, ["alias *e", "values"]),
    "laughs_long_strings": (long_strings(), "yaml-limit", 2, 98, ["alias *big", "characters"]),
    "integer_100k_digits": ("version: " + "9" * 100_000 + "\n", "yaml-limit", 1, 10, ["number"]),
    "float_100k_digits": ("x: 0." + "5" * 100_000 + "\n", "yaml-limit", 1, 4, ["number"]),
    "deep_flow_sequences": ("root: " + "[" * 300 + "]" * 300 + "\n", "yaml-limit", 1, 206, []),
    # libyaml's scanner refuses this before any event: its own located error
    "deep_flow_libyaml": ("root: " + "[" * 5000 + "]" * 5000 + "\n", "yaml-syntax", 1, 1006, []),
    "deep_block_mappings": (
        "".join(f"{'  ' * i}k{i}:\n" for i in range(300)),
        "yaml-limit",
        201,
        401,
        ["nests deeper than 200"],
    ),
    "huge_single_line": (
        'description: "' + "y" * (MAX_FILE_BYTES - 100) + '"\n',
        "yaml-limit",
        1,
        14,
        ["scalar of"],
    ),
    "many_values_one_line": (
        "description: [" + ",".join(["0"] * (LIMITS.max_values + 5)) + "]\n",
        "yaml-limit",
        1,
        15 + 2 * (LIMITS.max_values - 3),  # the root, its key and the list count first
        ["more than 200000 values"],
    ),
    "bad_timestamp": ("root: {set: {values: {x: 2024-13-45}}}\n", "yaml-syntax", 1, 26, ["month"]),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_a_bomb_in_a_tree_file_is_refused_where_it_is(name: str, tmp_path: Path):
    text, code, line, col, words = BOMBS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    refused(path, tmp_path, code, (path.name, line, col), *words)


@pytest.mark.parametrize("name", ["laughs_nested_lists", "integer_100k_digits"])
def test_a_bomb_in_yaml_text_is_refused_too(name: str, tmp_path: Path):
    text, code, line, col, words = BOMBS[name]
    path = tmp_path / "text.yaml"
    path.write_text(text, encoding="utf-8")
    refused(path, tmp_path, code, ("<string>", line, col), *words, text=True)


@pytest.mark.parametrize("name", ["laughs_merge_keys", "integer_100k_digits"])
def test_a_bomb_in_an_included_file_is_refused_in_that_file(name: str, tmp_path: Path):
    text, code, line, col, words = BOMBS[name]
    (tmp_path / "part.yaml").write_text(text, encoding="utf-8")
    main = tmp_path / "main.yaml"
    main.write_text("root:\n  subtree: {file: part.yaml}\n", encoding="utf-8")
    refused(main, tmp_path, code, ("part.yaml", line, col), *words)


# -- files that are not tree files --------------------------------------------------------------


def special_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name -> (a path that is not a readable tree file, what the message says)."""
    fifo = tmp / "pipe.yaml"
    os.mkfifo(fifo)
    folder = tmp / "folder.yaml"
    folder.mkdir()
    big = tmp / "big.yaml"
    with big.open("wb") as handle:  # 50 MB, sparse: the loader must refuse it unread
        handle.truncate(50 * 1024 * 1024)
    zero_link = tmp / "zero.yaml"
    zero_link.symlink_to("/dev/zero")
    loop = tmp / "loop.yaml"
    loop.symlink_to(loop)
    return {
        "dev_zero": (Path("/dev/zero"), "a character device, not a regular file"),
        "fifo": (fifo, "a named pipe (FIFO), not a regular file"),
        "directory": (folder, "is a directory"),
        "fifty_megabytes": (big, f"larger than {MAX_FILE_BYTES} bytes"),
        "symlink_to_dev_zero": (zero_link, "a character device, not a regular file"),
        "symlink_loop": (loop, "cannot read"),
    }


SPECIAL = [
    "dev_zero",
    "fifo",
    "directory",
    "fifty_megabytes",
    "symlink_to_dev_zero",
    "symlink_loop",
]


@pytest.mark.parametrize("name", SPECIAL)
def test_an_include_that_is_not_a_regular_file_is_refused_unread(name: str, tmp_path: Path):
    target, words = special_files(tmp_path)[name]
    main = tmp_path / "main.yaml"
    main.write_text(f"root:\n  subtree: {{file: '{target}'}}\n", encoding="utf-8")
    found = refused(main, tmp_path, "include-error", ("main.yaml", 2, 19), words)
    assert found["message"].count("\n") == 0


@pytest.mark.parametrize("name", SPECIAL)
def test_a_main_file_that_is_not_a_regular_file_is_refused_unread(name: str, tmp_path: Path):
    target, words = special_files(tmp_path)[name]
    # shown relative to the working folder when the file (symlinks resolved) is below it
    shown = str(target) if name in ("dev_zero", "symlink_to_dev_zero") else target.name
    refused(target, tmp_path, "file-error", (shown, 1, 1), words)


def test_jianmu_validate_reports_every_bomb_on_one_line_each(tmp_path: Path):
    files = []
    for name in ("laughs_nested_lists", "laughs_merge_keys", "integer_100k_digits"):
        path = tmp_path / f"{name}.yaml"
        path.write_text(BOMBS[name][0], encoding="utf-8")
        files.append(path.name)
    special = special_files(tmp_path)
    for name in ("dev_zero", "fifo", "symlink_to_dev_zero"):
        target = special[name][0]
        include = tmp_path / f"include_{name}.yaml"
        include.write_text(f"root:\n  subtree: {{file: '{target}'}}\n", encoding="utf-8")
        files += [include.name, target.name if target.parent == tmp_path else str(target)]
    cli = textwrap.dedent(
        f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({MEMORY}, {MEMORY}))
        from jianmu_bt.cli.app import main
        sys.exit(main(sys.argv[1:]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", cli, "validate", *files],
        capture_output=True,
        text=True,
        timeout=HANG_BOUND,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if ": error: " in line]
    assert len(errors) == len(files)
    for file in files:
        (line,) = [e for e in errors if e.startswith(f"{file}:")]
        assert line.split(":")[1].isdigit() and line.split(":")[2].isdigit()
    assert f"checked {len(files)} file(s): {len(files)} error(s)" in done.stdout


# -- nothing legitimate is refused --------------------------------------------------------------


def test_aliases_merges_and_long_text_within_the_limits_still_load(tmp_path: Path):
    prompt = "p" * 100_000
    text = f"""
state:
  count: {{type: integer, default: {"9" * 90}}}
  note: {{type: string, default: "{prompt}"}}
trees:
  check: &check {{condition: {{check: "count > 0"}}}}
  base: {{retry: &defaults {{num_failures: 2, child: *check}}}}
root:
  retry:
    <<: *defaults
    child: {{sequence: {{children: [*check, *check, *check]}}}}
"""
    path = tmp_path / "fine.yaml"
    path.write_text(text, encoding="utf-8")
    assert [d for d in validate_source(path) if d.is_error] == []

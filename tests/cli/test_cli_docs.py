"""docs/cli.md stays true: it has a section for every command of the real parser, describes
every option in it, and its sample sessions marked `<!-- runs -->` run as shown."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cli_helpers import REPO

from jianmu_bt.cli.app import build_parser

DOC = REPO / "docs" / "cli.md"
TEXT = DOC.read_text(encoding="utf-8")
#: A hang guard for one sample command (never a bound on its time).
PATIENCE = 120


# -- the parser ----------------------------------------------------------------------------------


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's subcommands by name (empty when it has none)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def commands() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command line's command words (`run`, `mcp serve`, `overlay check`, ...) with its
    parser: the ones that take options, nested commands by their full words."""
    found: list[tuple[str, argparse.ArgumentParser]] = []

    def walk(words: str, parser: argparse.ArgumentParser) -> None:
        nested = subparsers(parser)
        if not nested:
            found.append((words, parser))
        for name, sub in nested.items():
            walk(f"{words} {name}".strip(), sub)

    walk("", build_parser())
    return found


def options(parser: argparse.ArgumentParser) -> list[str]:
    """The parser's option strings, help aside."""
    return [
        flag
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction)
        for flag in action.option_strings
    ]


def positionals(parser: argparse.ArgumentParser) -> list[str]:
    """The words that name the parser's positional arguments (`FILE`, `RUN_ID`, ...)."""
    words: list[str] = []
    for action in parser._actions:
        if action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        words += [w for w in re.split(r"[\s|]+", str(action.metavar or action.dest)) if w]
    return words


def section(command: str) -> str:
    """The text of the `## \\`jianmu COMMAND...` section of the page (to the next `## `)."""
    top = command.split()[0]
    found = re.search(rf"^## `jianmu {re.escape(top)}[ `].*?(?=^## |\Z)", TEXT, re.M | re.S)
    assert found, f"docs/cli.md has no '## `jianmu {top}' section"
    return found.group(0)


def mentions(text: str, flag: str) -> bool:
    """Whether `text` names the option in code (`--view`, not only `--view-port`)."""
    return re.search(rf"`{re.escape(flag)}(?![\w-])", text) is not None


def test_the_parser_is_walked_whole():
    words = [words for words, _ in COMMANDS]
    assert {"run", "resume", "batch", "view", "mcp serve", "overlay record"} <= set(words)
    assert len(words) == len(set(words))


COMMANDS = commands()


@pytest.mark.parametrize(("command", "parser"), COMMANDS, ids=[words for words, _ in COMMANDS])
def test_every_command_has_a_section_naming_its_arguments_and_options(command, parser):
    text = section(command)
    heading = text.splitlines()[0]
    assert f"`jianmu {command}" in heading, (command, heading)
    missing = [flag for flag in options(parser) if not mentions(text, flag)]
    assert not missing, f"docs/cli.md, '{heading}': options not described: {missing}"
    unnamed = [word for word in positionals(parser) if word not in text]
    assert not unnamed, f"docs/cli.md, '{heading}': arguments not named: {unnamed}"


def test_the_top_level_options_are_described():
    before_commands = TEXT[: TEXT.index("## `jianmu ")]
    for flag in options(build_parser()):
        assert mentions(before_commands, flag), flag


def test_no_section_describes_a_command_the_parser_does_not_have():
    known = {words.split()[0] for words, _ in COMMANDS}
    for top in re.findall(r"^## `jianmu (\w+)", TEXT, re.M):
        assert top in known, top


# -- the sample sessions -------------------------------------------------------------------------


@dataclass
class Step:
    """One `$ command` of a sample, the exit status the mark gives it, and the lines shown."""

    command: str
    status: int = 0
    shown: list[str] = field(default_factory=list)


@dataclass
class Sample:
    """A ```console block marked `<!-- runs -->`: its line in the page and its steps."""

    line: int
    steps: list[Step]


MARK = re.compile(
    r"^<!-- runs(?::\s*exits((?:\s+\d+)+))?\s*-->\n+```console\n(.*?)^```", re.M | re.S
)
FILE_BLOCK = re.compile(r"^```\w*\n# file: (\S+)\n(.*?)^```", re.M | re.S)


def samples() -> list[Sample]:
    """The page's runnable samples, in order."""
    found = []
    for match in MARK.finditer(TEXT):
        steps: list[Step] = []
        for line in match.group(2).splitlines():
            if line.startswith("$ "):
                steps.append(Step(line[2:]))
            else:
                assert steps, f"docs/cli.md: a sample starts with output, not a command: {line!r}"
                steps[-1].shown.append(line.rstrip())
        statuses = [int(s) for s in (match.group(1) or "").split()]
        if statuses:
            assert len(statuses) == len(steps), f"docs/cli.md: {match.group(0).splitlines()[0]}"
            for step, status in zip(steps, statuses, strict=True):
                step.status = status
        found.append(Sample(TEXT[: match.start()].count("\n") + 1, steps))
    return found


def shown_as_pattern(line: str) -> re.Pattern[str]:
    """A shown line as a pattern: `...` stands for any text."""
    return re.compile(".*".join(re.escape(part) for part in line.split("...")))


def lines_missing(shown: list[str], printed: str) -> list[str]:
    """The shown lines (`...` lines aside) that no printed line matches."""
    actual = [line.rstrip() for line in printed.splitlines()]
    return [
        line
        for line in shown
        if line.strip() != "..."
        and not any(shown_as_pattern(line).fullmatch(got) for got in actual)
    ]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A fresh working folder: a copy of the repository's trees/, the page's `# file:` blocks,
    and a `jianmu` command on PATH (this checkout's, run by this Python)."""
    work = tmp_path / "work"
    shutil.copytree(REPO / "trees", work / "trees")
    for name, body in FILE_BLOCK.findall(TEXT):
        (work / name).write_text(body, encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "jianmu"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m jianmu_bt.cli "$@"\n')
    wrapper.chmod(0o755)
    return work


def run_step(step: Step, work: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "JIANMU_STORE"}  # the folder's own store
    env.update(
        PATH=f"{work.parent / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(REPO),
        TERM="dumb",
    )
    return subprocess.run(
        ["bash", "-c", step.command],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=PATIENCE,
        check=False,
    )


SAMPLES = samples()


def test_the_page_has_runnable_samples_of_most_commands():
    run = " ".join(step.command for sample in SAMPLES for step in sample.steps)
    for command in ("run", "resume", "runs", "validate", "dot", "tools", "schema", "batch"):
        assert f"jianmu {command} " in run, command
    assert "jianmu overlay record" in run and "jianmu overlay check" in run


@pytest.mark.timeout(600)
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: f"line{s.line}")
def test_a_sample_session_runs_as_shown(sample: Sample, folder: Path):
    for step in sample.steps:
        done = run_step(step, folder)
        where = f"docs/cli.md:{sample.line}: $ {step.command}"
        assert done.returncode == step.status, (where, done.returncode, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, (where, done.stderr)
        missing = lines_missing(step.shown, done.stdout + "\n" + done.stderr)
        assert not missing, (where, missing, done.stdout, done.stderr)

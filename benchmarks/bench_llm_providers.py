"""Our LLM providers next to litellm, any-llm and the official SDKs: import, per request, fidelity.

These numbers decide whether jianmu_bt keeps its own providers or adapts a multi-provider
library; none of those libraries is a dependency: one that is missing is skipped and says so.

- import: each statement in a fresh `python -X importtime` process (as `bench_import.py`), the
  rounds interleaved, medians. Ours: each provider module in this checkout (`openai_compat`,
  `anthropic`, and `openai_responses`, `gemini`, `bedrock` when present) and all of them in
  one process; theirs: `import litellm` (with `LITELLM_LOCAL_MODEL_COST_MAP=True`: otherwise it
  fetches its price list from the internet while importing), `import any_llm`, `import openai`,
  `import anthropic`.
- per request: one Chat Completions request (a system and a user message, one tool; the reply
  asks for a tool call) against the stand-in server on 127.0.0.1 (`llm_server.py`), each client
  kept open across requests as a user keeps it: ours `OpenAICompatibleProvider.complete` inside
  `async with`; `litellm.acompletion(model="openai/...", api_base=...)`; any-llm's
  `AnyLLM.create("openai", api_base=...)` then `acompletion`, and its module-level `acompletion`
  (a client per call) as context; `openai.AsyncOpenAI` inside `async with`. Each request is
  paired with one of a bare `httpx.AsyncClient` posting the same body (the floor), and reported
  as the wall time above its floor request and as the client process's CPU time above it; a
  full garbage collection before each sample (untimed).
- fidelity (`llm_libraries.py`): whether a second turn sends back DeepSeek's `reasoning_content`,
  Gemini's `thought_signature` and Anthropic's signed thinking block.

Run: python benchmarks/bench_llm_providers.py [--quick]
"""

from __future__ import annotations

import gc
import importlib.util
import statistics
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_import import import_seconds
from benchmarks.harness import (
    Row,
    Samples,
    Section,
    Settings,
    ainterleave,
    faster,
    interleave,
    limit,
)
from benchmarks.llm_libraries import OFFLINE, Call, clients, fidelity
from benchmarks.llm_server import LLMServer
from benchmarks.suite import installed, main

ROOT = Path(__file__).resolve().parents[1]
OUR_MODULES = ("openai_compat", "anthropic", "openai_responses", "gemini", "bedrock")
ALL_OURS = "all of ours"
#: Their imports: (library, its pip name, the import of ours it is compared with).
THEIRS = (
    ("litellm", "litellm", ALL_OURS),
    ("any_llm", "any-llm-sdk", ALL_OURS),
    ("openai", "openai", "jianmu_bt.llm.openai_compat"),
    ("anthropic", "anthropic", "jianmu_bt.llm.anthropic"),
)
ENV_PREFIX = "".join(f"import os; os.environ[{k!r}] = {v!r}; " for k, v in OFFLINE.items())

Sampler = Callable[[], Awaitable[float]]


def our_modules() -> tuple[list[str], list[str]]:
    """Our provider modules present in this checkout, and those that are not (yet)."""
    present = [m for m in OUR_MODULES if (ROOT / "jianmu_bt" / "llm" / f"{m}.py").exists()]
    return present, [m for m in OUR_MODULES if m not in present]


def import_rows(settings: Settings) -> tuple[list[Row], dict[str, float]]:
    """Import time of each module (fresh processes, interleaved); medians in ms by library."""
    present, absent = our_modules()
    statements = {f"jianmu_bt.llm.{m}": f"import jianmu_bt.llm.{m}" for m in present}
    statements[ALL_OURS] = "import " + ", ".join(f"jianmu_bt.llm.{m}" for m in present)
    missing = {}
    for library, pip, _ in THEIRS:
        if importlib.util.find_spec(library) is None:
            missing[library] = f"{library} is not installed (pip install {pip}): not measured"
        else:
            prefix = ENV_PREFIX if library == "litellm" else ""
            statements[library] = f"{prefix}import {library}"
    broken: dict[str, str] = {}

    def sampler(name: str) -> Callable[[], float]:
        def sample() -> float:
            try:
                return import_seconds(statements[name])
            except RuntimeError as exc:  # a module being written by someone else right now
                broken[name] = str(exc)[:200]
                return float("nan")

        return sample

    t = interleave({n: sampler(n) for n in statements}, settings.pick(7, 2), warmup=1)
    rows = []
    for name in broken:
        rows.append(
            Row(f"import {name}: failed", None, None, "-", None, "-", None, note=broken[name])
        )
        t.pop(name)
    for module in [f"jianmu_bt.llm.{m}" for m in present] + [ALL_OURS]:
        if module in t:
            label = module if module != ALL_OURS else f"{module} ({len(present)} modules)"
            rows.append(limit(f"import {label}", t[module], None))
    for module in absent:
        note = "not in this checkout when the benchmark ran"
        rows.append(
            Row(f"import jianmu_bt.llm.{module}", None, None, "-", None, "-", None, note=note)
        )
    for library, _, ours in THEIRS:
        if ours not in t:
            continue
        theirs = t.get(library)
        note = missing.get(library, "")
        if library == "litellm" and theirs:
            note = "with LITELLM_LOCAL_MODEL_COST_MAP=True (no price list download)"
        what = f"  import {library} vs {ours}"
        rows.append(faster(what, t[ours], theirs, f"import {library}", None, note=note))
    medians = {name: statistics.median(values) * 1e3 for name, values in t.items()}
    return rows, medians


def paired(call: Call, floor: Call, count: int, kept: dict[str, list[float]]) -> Sampler:
    """A sampler: `count` requests of `call`, each next to one of the bare floor (alternating
    which goes first), so both meet the machine at the same moment (its speed drifts by up to
    2x within minutes here). Returns the wall seconds per request of `call`; its CPU seconds
    and the floor's wall and CPU seconds go to `kept` ("cpu", "floor", "floor:cpu")."""

    async def sample() -> float:
        gc.collect()  # untimed: no client pays for the garbage of the one before it
        totals = dict.fromkeys(("wall", "cpu", "floor", "floor:cpu"), 0.0)
        for i in range(count):
            for which, run in (("", call), ("floor", floor))[:: 1 if i % 2 else -1]:
                start, used = time.perf_counter(), time.process_time()
                await run()
                totals[which or "wall"] += time.perf_counter() - start
                totals[f"{which}:cpu".lstrip(":")] += time.process_time() - used
        for key in ("cpu", "floor", "floor:cpu"):
            kept[key].append(totals[key] / count)
        return totals["wall"] / count

    return sample


async def measure_requests(settings: Settings, url: str) -> tuple[Samples, dict[str, str]]:
    """Seconds per request of every client, interleaved, each request paired with one of the
    floor: `<name>` (wall), `<name>:cpu`, `<name>:floor`, `<name>:floor:cpu`."""
    async with AsyncExitStack() as stack:
        calls, missing = await clients(url, stack)
        floor = calls.pop("floor")
        count, rounds = settings.pick(30, 8), settings.pick(15, 3)
        keys = ("cpu", "floor", "floor:cpu")
        kept: dict[str, dict[str, list[float]]] = {n: {k: [] for k in keys} for n in calls}
        samplers = {
            name: paired(call, floor, count // 6 if "function" in name else count, kept[name])
            for name, call in calls.items()
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # libraries' deprecation chatter, not results
            samples = await ainterleave(samplers, rounds, warmup=2)
    for name, lists in kept.items():
        samples |= {f"{name}:{key}": values[-rounds:] for key, values in lists.items()}
    return samples, missing


def above(samples: Samples, name: str, kind: str = "") -> list[float]:
    """`name`'s seconds per request minus those of the floor requests paired with them (`kind`
    ":cpu": the client process's CPU seconds)."""
    mine, floor = samples[name + kind], samples[f"{name}:floor{kind}"]
    return [a - b for a, b in zip(mine, floor, strict=True)]


NAMES = {
    "litellm": "litellm.acompletion",
    "any_llm": "AnyLLM.create(...).acompletion",
    "any_llm (function)": "any_llm.acompletion",
    "openai": "openai.AsyncOpenAI",
}
CPU_NOTE = (
    "the client process's CPU time per request (time.process_time) above the floor's: the same "
    "comparison without the waits, steadier on a busy machine"
)


def request_rows(samples: Samples, missing: dict[str, str]) -> tuple[list[Row], dict[str, float]]:
    """The floor, ours above it, and each library above it next to ours (wall, then CPU)."""
    rows = [limit("one request: the floor (bare httpx.AsyncClient)", samples["ours:floor"], None)]
    rows.append(limit("  its client CPU", samples["ours:floor:cpu"], None))
    ours, ours_cpu = above(samples, "ours"), above(samples, "ours", ":cpu")
    rows.append(limit("ours: OpenAICompatibleProvider.complete, above floor", ours, None))
    rows.append(limit("  client CPU above the floor's (ours)", ours_cpu, None, note=CPU_NOTE))
    for name, label in NAMES.items():
        note = missing.get(name.split(" ")[0], "")
        if name == "any_llm (function)" and name in samples:
            note = "the module-level function makes a client (and a connection) per call"
        theirs = above(samples, name) if name in samples else None
        rows.append(faster(f"  {label}, above the floor", ours, theirs, label, None, note))
        theirs = above(samples, name, ":cpu") if name in samples else None
        rows.append(faster(f"    client CPU above floor: {label}", ours_cpu, theirs, label, None))
    names = [name for name in samples if ":" not in name]
    medians = {name: statistics.median(above(samples, name)) * 1e6 for name in names}
    medians |= {
        f"{name}:cpu": statistics.median(above(samples, name, ":cpu")) * 1e6 for name in names
    }
    return rows, medians


LIBRARIES = (  # (name in the decision table, import key, request key, fidelity name)
    ("jianmu_bt (ours)", ALL_OURS, "ours", "jianmu_bt"),
    ("litellm", "litellm", "litellm", "litellm"),
    ("any-llm", "any_llm", "any_llm", "any-llm"),
    ("openai SDK", "openai", "openai", "openai SDK"),
    ("anthropic SDK", "anthropic", None, "anthropic SDK"),
)


def verdict(name: str, imp: float | None, req: float | None, lost: list[str], ours: dict) -> str:
    """One line: what adopting this library would cost or break, next to ours."""
    if name.startswith("jianmu_bt"):
        return "the baseline" + (f"; does not send back {', '.join(lost)}" if lost else "")
    times = {}
    if imp and ours.get("import"):
        times["import"] = imp / ours["import"]
    if req and ours.get("request"):
        times["per-request overhead"] = req / ours["request"]
    cost = " and ".join(f"{x:.1f}x our {what}" for what, x in times.items()) or "not timed"
    if lost:
        return f"keep ours: {cost}; does not send back {', '.join(lost)} unchanged"
    if times and all(x > 1 for x in times.values()):
        return f"keep ours: keeps every part, but {cost}"
    return f"no clear loss: {cost}"


def decision_table(imports: dict[str, float], requests: dict[str, float], checks: list) -> str:
    """The table the decision is read from, a verdict per library."""
    ours = {"import": imports.get(ALL_OURS), "request": requests.get("ours:cpu")}
    cells = [("library", "import", "us/request", "CPU us/req", "parts sent back", "verdict")]
    for name, imp_key, req_key, fid in LIBRARIES:
        mine = [c for c in checks if c[0] == fid]
        kept = sum(1 for c in mine if c[3] == "kept")
        lost = sorted({c[2].split(" (")[0] for c in mine if c[3] != "kept"})
        imp = imports.get(imp_key)
        req = requests.get(req_key) if req_key else None
        cpu = requests.get(f"{req_key}:cpu") if req_key else None
        cells.append(
            (
                name,
                f"{imp:.0f} ms" if imp else "-",
                f"{req:.0f}" if req is not None else "-",
                f"{cpu:.0f}" if cpu is not None else "-",
                f"{kept}/{len(mine)}" + (f", not {', '.join(lost)}" if lost else ""),
                verdict(name, imp, cpu, lost, ours),
            )
        )
    widths = [max(len(row[i]) for row in cells) for i in range(5)]
    lines = ["Decision: keep jianmu_bt's providers, or adapt a multi-provider library? (medians)"]
    for row in cells:
        numbers = "  ".join(f"{row[i]:>{widths[i]}}" for i in range(1, 4))
        lines.append(f"  {row[0]:<{widths[0]}}  {numbers}  {row[4]:<{widths[4]}}  {row[5]}")
    lines.append("  import: ours = every provider module of the checkout in one process;")
    lines.append("  us/request: wall time above the bare-httpx floor (one OpenAI-compatible")
    lines.append("  request); CPU us/req: the client's CPU above the floor's (the verdicts use it)")
    return "\n".join(lines)


def fidelity_rows(checks: list[tuple[str, str, str, str]]) -> list[Row]:
    """A row per check, its outcome in the last column (no timing: no verdict of load)."""
    return [
        Row(f"{library} {route}: {part}", None, None, outcome, None, "-", None)
        for library, route, part, outcome in checks
    ]


async def settle() -> None:
    """Close what the libraries keep open (litellm's client cache; clients that the openai SDK
    closes from `__del__` with a task), while this event loop still runs."""
    litellm = sys.modules.get("litellm")
    if litellm is not None and hasattr(litellm, "close_litellm_async_clients"):
        await litellm.close_litellm_async_clients()
    gc.collect()
    await anyio.sleep(0.1)


async def measure_all(
    settings: Settings, server: LLMServer
) -> tuple[Samples, dict[str, str], list[tuple[str, str, str, str]]]:
    """Per-request times, then the fidelity checks, in one event loop (litellm keeps its
    clients across calls, bound to the loop that made them)."""
    samples, missing = await measure_requests(settings, server.base_url)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # litellm's serializer warnings on extra_content
        checks = await fidelity(server)
    await settle()
    return samples, missing, checks


def llm_providers(settings: Settings) -> Section:
    """Import time, per-request overhead and round-trip fidelity: ours next to the libraries."""
    imports, import_ms = import_rows(settings)
    with LLMServer() as server:
        samples, missing, checks = anyio.run(measure_all, settings, server)
    requests, request_us = request_rows(samples, missing)
    versions = {
        name: installed(name) for name in ("litellm", "any-llm-sdk", "openai", "anthropic", "httpx")
    }
    return Section(
        "LLM providers: import, per request, fidelity (ratio theirs / ours)",
        [*imports, *requests, *fidelity_rows(checks)],
        tables=[decision_table(import_ms, request_us, checks)],
        data={
            "versions": versions,
            "import_ms": import_ms,
            "request_us": request_us,
            "fidelity": checks,
        },
    )


AREAS = {"llm_providers": llm_providers}

if __name__ == "__main__":
    sys.exit(main(AREAS))

"""What an LLM reply means for the agent: go on with tools, answer, ask again, or fail.

- a reply that asks for tools: the executor runs them (after the tool-call limit check);
- a refusal (`refusal`, `content_filter`): the node fails with the model's words, unless
  `on_refusal: answer` makes them the answer;
- a reply cut off at the token limit (`length`) without tools: `on_length` says `fail` (the
  default), `accept` the text, or `continue` (ask the model to go on; the pieces are joined);
- Anthropic's `pause_turn` (a long server-tool turn paused): the reply is sent back as it is
  and the model goes on; any other ending of the `other` kind without text fails the node;
- an answer with a typed output declared: parsed and validated; a rejected answer goes back to
  the model with what was wrong, up to the output's `retries` times;
- any other answer: the final answer.

`TurnPolicy` holds the node's choices; `judge` applies them to one reply and says what to write
and whether to ask again. It decides from the reply alone (and the counts so far), so a replayed
run decides the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from jianmu_bt.llm import LLMResponse
from jianmu_bt.llm.limits import UsageLimitExceeded
from jianmu_bt.llm.output import OutputRejected, OutputSpec

OnRefusal = Literal["fail", "answer"]
OnLength = Literal["fail", "continue", "accept"]

MAX_CONTINUES = 5
"""Most times one answer is continued after a `length` cut (`on_length: continue`)."""

CONTINUE_PROMPT = (
    "Your reply was cut off at the output token limit. Continue exactly where it stopped, "
    "without repeating anything."
)


class AgentRefusedError(RuntimeError):
    """The model declined to answer (and the node was not told to take that as the answer)."""


class OutputTruncatedError(RuntimeError):
    """The final reply was cut off at the output token limit."""


class OutputInvalidError(RuntimeError):
    """The final answer did not fit the declared output after every retry."""


@dataclass(frozen=True, slots=True)
class TurnPolicy:
    """How a node takes replies: typed `output`, `on_refusal`, `on_length`."""

    output: OutputSpec | None = None
    on_refusal: OnRefusal = "fail"
    on_length: OnLength = "fail"

    def __post_init__(self) -> None:
        if self.on_refusal not in ("fail", "answer"):
            raise ValueError(f"on_refusal must be fail or answer, got {self.on_refusal!r}")
        if self.on_length not in ("fail", "continue", "accept"):
            raise ValueError(f"on_length must be fail, continue or accept, got {self.on_length!r}")


@dataclass
class Verdict:
    """What to do with one reply: `messages` to append after it, whether the agent has its
    `answer` (`finished`), whether to ask again at once (`again`), or the `error` to fail with."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False
    answer: Any = None
    again: bool = False
    error: Exception | None = None


@dataclass
class TurnState:
    """What one entry of the node has seen so far: answer pieces and re-asks."""

    pieces: list[str] = field(default_factory=list)
    continues: int = 0
    rejections: int = 0


def judge(response: LLMResponse, policy: TurnPolicy, seen: TurnState) -> Verdict:
    """The verdict on `response` under `policy`, given what this entry has `seen`."""
    if response.refused:
        words = response.refusal or response.text or f"finish reason {response.finish_reason}"
        if policy.on_refusal == "answer":
            return Verdict(finished=True, answer=words)
        return Verdict(error=AgentRefusedError(f"the model refused: {words}"))
    if response.has_tool_calls:
        return Verdict()
    if response.vendor_finish_reason == "pause_turn" and seen.continues < MAX_CONTINUES:
        # Anthropic paused a long server-tool turn: sending the reply back lets it go on.
        seen.continues += 1
        seen.pieces.append(response.text)
        return Verdict(again=True)
    if response.finish_reason == "other" and not response.text:
        word = response.vendor_finish_reason or "an unknown reason"
        return Verdict(error=OutputTruncatedError(f"the reply ended ({word}) without an answer"))
    if response.finish_reason == "length" and policy.on_length != "accept":
        if policy.on_length == "continue" and seen.continues < MAX_CONTINUES:
            seen.continues += 1
            seen.pieces.append(response.text)
            return Verdict(messages=[{"role": "user", "content": CONTINUE_PROMPT}], again=True)
        return Verdict(
            error=OutputTruncatedError(
                "the reply was cut off at the output token limit (finish 'length'); raise "
                "max_tokens, or set on_length to continue or accept"
            )
        )
    text = "".join(seen.pieces) + response.text
    seen.pieces.clear()
    if policy.output is None:
        return Verdict(finished=True, answer=text)
    try:
        return Verdict(finished=True, answer=policy.output.parse(text))
    except OutputRejected as rejected:
        if seen.rejections < policy.output.retries:
            seen.rejections += 1
            retry = (
                f"Your answer was not accepted: {rejected}. Reply again with the corrected "
                "answer only."
            )
            return Verdict(messages=[{"role": "user", "content": retry}], again=True)
        return Verdict(
            error=OutputInvalidError(
                f"the answer does not fit the declared output after "
                f"{policy.output.retries} retr{'y' if policy.output.retries == 1 else 'ies'}: "
                f"{rejected}"
            )
        )


def usage_counts(response: LLMResponse) -> dict[str, int | float]:
    """The usage counters one reply adds (`jianmu_bt.llm.limits.COUNTERS`)."""
    usage = response.usage
    counts: dict[str, int | float] = {
        "requests": 1,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "tool_calls": len(response.tool_calls),
    }
    if response.cost is not None:
        counts["cost"] = response.cost
    return counts


__all__ = [
    "AgentRefusedError",
    "OutputInvalidError",
    "OutputTruncatedError",
    "TurnPolicy",
    "TurnState",
    "UsageLimitExceeded",
    "Verdict",
    "judge",
    "usage_counts",
]

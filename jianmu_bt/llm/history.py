"""Conversations that grow a turn at a time, each message checked once.

An agent sends its whole conversation at every turn, one turn longer than the last. Checking it
all again each time costs O(n) per turn, O(n²) per run. A provider keeps a `ConversationCache`:
`normalize(messages)` looks for a conversation it checked before whose messages are the very same
objects (compared by identity, a pointer comparison) as the start of `messages`, keeps their
checked copies and checks only the messages after them, exactly as `normalize_messages` would
(same errors, same positions). The checked copies are shared by the requests of a conversation.

A message already sent must not be changed in place (a tree's state never does: its messages are
read-only and its reducers make new lists); the cache would not notice such a change. Build a new
dict, or a new list of messages, to change what was said.
"""

from __future__ import annotations

import copy
import operator
import threading
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from jianmu_bt.llm.messages import check_conversation, normalize_tail

#: How many conversations one provider remembers (the least recently used one is forgotten).
MAX_CONVERSATIONS = 32


class Transcript(NamedTuple):
    """The checked messages of one request: the first `length` entries of `messages`, a list
    shared by every request of the conversation, which only ever grows at its end."""

    messages: list[dict[str, Any]]
    length: int


class _Conversation:
    """One remembered conversation: the messages as given, their checked copies, answered ids."""

    __slots__ = ("answered", "checked", "given")

    def __init__(self) -> None:
        self.given: list[Any] = []
        self.checked: list[dict[str, Any]] = []
        self.answered: set[str] = set()

    def starts(self, messages: Sequence[Any]) -> bool:
        """True when `messages` begins with this conversation's very message objects."""
        given = self.given
        return len(messages) >= len(given) and all(map(operator.is_, messages, given))


class ConversationCache:
    """Checks conversations, reusing the checked start of a conversation seen before."""

    __slots__ = ("_conversations", "_limit", "_lock")

    def __init__(self, limit: int = MAX_CONVERSATIONS) -> None:
        """Remember up to `limit` conversations."""
        self._conversations: dict[int, _Conversation] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def normalize(self, messages: Sequence[Mapping[str, Any]]) -> Transcript:
        """The checked `messages` (see `normalize_messages`), checking only the new ones."""
        check_conversation(messages)
        # Keyed by the first message; the conversation holds it, so its id stays its own.
        key = id(messages[0])
        with self._lock:
            conversation = self._conversations.get(key)
            if conversation is None or not conversation.starts(messages):
                conversation = _Conversation()
            start = len(conversation.given)
            answered: set[str] = set()
            checked = normalize_tail(messages, start, conversation.answered, answered)
            # Checked without error: only now does the conversation grow.
            conversation.given.extend(messages[index] for index in range(start, len(messages)))
            conversation.checked.extend(checked)
            conversation.answered |= answered
            self._conversations.pop(key, None)  # most recently used last
            self._conversations[key] = conversation
            if len(self._conversations) > self._limit:
                del self._conversations[next(iter(self._conversations))]
            return Transcript(conversation.checked, len(conversation.checked))

    def __reduce__(self) -> tuple[type[ConversationCache], tuple[int]]:
        # A copied or pickled provider starts with an empty cache (a lock cannot be copied).
        return (ConversationCache, (self._limit,))

    def clear(self) -> None:
        """Forget every conversation."""
        with self._lock:
            self._conversations.clear()


def copy_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Deep copies of checked messages (JSON-shaped: dicts, lists and plain values), for code
    that may change what it is given."""
    return [_copy(message) for message in messages]


def _copy(value: Any) -> Any:
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return copy.deepcopy(value)


_PLAIN = (str, int, float, bool, type(None))

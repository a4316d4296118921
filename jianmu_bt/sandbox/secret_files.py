"""Secret files: which host paths no sandbox may read, and a bounded search for them.

`SECRET_PATTERNS` names environment files, keys, credential files and folders. Both sandboxes
cover every match inside what they share with the sandboxed code: DockerSandbox in the code and
workspace it mounts (`plan.MountPlan`), LocalSandbox (as root) in the code directories it binds
back into its private mount namespace (`secrets_under`, then `isolation.cover_secrets`). A search
never follows links (a link that is or leads to a secret gives its real target instead) and
stops with SecretScanError past `MAX_SCANNED_ENTRIES` entries, so a huge directory is refused
rather than shared unchecked.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable

#: Files and directories that are never shared with a sandbox, matched case-insensitively against
#: a path's last component (a pattern with "/" against its last components). DockerSandbox mounts
#: no code root that matches, and covers every match inside a mounted directory (the code it
#: shares and the workspace) with an empty read-only file or directory; LocalSandbox covers every
#: match inside the code directories it binds in. Templates such as `.env.example` match too:
#: the list errs on the side of hiding.
_SECRET_LIST = """
    .env .env.* *.env .envrc
    *.pem *.key *.p12 *.pfx *.jks *.keystore *.ppk *.kdbx id_rsa* id_dsa* id_ecdsa* id_ed25519*
    .git-credentials .git/config .netrc _netrc .npmrc .pypirc .pgpass .my.cnf .htpasswd
    .dockercfg .vault-token .s3cfg .boto credentials credentials.json
    secrets.json secrets.yaml secrets.yml secrets.toml *.tfvars *.tfstate *.tfstate.*
    .ssh .aws .azure .gnupg .docker .kube .password-store .config/gcloud .config/gh
"""
SECRET_PATTERNS: tuple[str, ...] = tuple(_SECRET_LIST.split())

#: Entries one plan (a container's mounts, a LocalSandbox worker's code directories) looks at
#: before it gives up and refuses.
MAX_SCANNED_ENTRIES = 200_000


class SecretScanError(ValueError):
    """A mount cannot be planned safely (a secret path, or too much to check)."""


def secret_match(path: str, patterns: Iterable[str] = SECRET_PATTERNS) -> str | None:
    """The pattern `path` (its last components) matches, else None."""
    parts = path.lower().rstrip("/").split("/")
    for pattern in patterns:
        wanted = pattern.lower().split("/")
        if len(wanted) <= len(parts) and all(
            fnmatch.fnmatchcase(part, want)
            for part, want in zip(parts[-len(wanted) :], wanted, strict=True)
        ):
            return pattern
    return None


def secret_within(path: str, patterns: Iterable[str] = SECRET_PATTERNS) -> str | None:
    """The pattern matched by `path` or by any directory above it, else None."""
    patterns = tuple(patterns)
    parts = path.rstrip("/").split("/")
    for end in range(2, len(parts) + 1):
        found = secret_match("/".join(parts[:end]), patterns)
        if found:
            return found
    return None


def scan(
    root: str, patterns: tuple[str, ...], budget: list[int], skip: Iterable[str] = ()
) -> tuple[list[tuple[str, bool]], list[str]]:
    """(secret paths with is-dir flags, symbolic links) under `root`, never entering the
    directories `skip` names; links are not followed. `budget[0]` entries may still be looked at
    (shared between calls)."""
    skip = frozenset(skip)
    secrets: list[tuple[str, bool]] = []
    links: list[str] = []
    stack = [root]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        budget[0] -= len(entries)
        if budget[0] < 0:
            raise SecretScanError(
                f"more than {MAX_SCANNED_ENTRIES:,} entries to check for secret files under "
                f"{root}; share a smaller directory (secret_patterns=() skips the check)"
            )
        for entry in entries:
            if entry.is_symlink():
                links.append(entry.path)
            elif secret_match(entry.path, patterns):
                secrets.append((entry.path, entry.is_dir(follow_symlinks=False)))
            elif entry.is_dir(follow_symlinks=False) and entry.path not in skip:
                stack.append(entry.path)
    return secrets, links


def find_secrets(root: str, patterns: Iterable[str] = SECRET_PATTERNS) -> list[tuple[str, bool]]:
    """The secret files and directories (path, is-dir) under `root`, for any sandbox that shares
    a host directory and must cover them; links are not followed (see MountPlan for those)."""
    return scan(os.path.realpath(root), tuple(patterns), [MAX_SCANNED_ENTRIES])[0]


def secrets_under(
    roots: Iterable[str], patterns: Iterable[str] = SECRET_PATTERNS, skip: Iterable[str] = ()
) -> dict[str, bool]:
    """{path: is_dir} of what must be covered so that nothing secret in `roots` can be read: a
    root that is (or lies in) a secret place whole, the secrets under the others, and the real
    target of every link in them that is or leads to a secret. The directories `skip` names are
    never entered on the way down. Raises SecretScanError past MAX_SCANNED_ENTRIES entries."""
    patterns = tuple(patterns)
    skip = tuple(os.path.realpath(path) for path in skip)
    budget = [MAX_SCANNED_ENTRIES]
    found: dict[str, bool] = {}
    if not patterns:
        return found
    for root in dict.fromkeys(os.path.realpath(path) for path in roots):
        if not os.path.exists(root):
            continue
        if secret_within(root, patterns):
            found[root] = os.path.isdir(root)
            continue
        if not os.path.isdir(root):
            continue
        secrets, links = scan(root, patterns, budget, skip)
        found.update(secrets)
        for link in links:
            real = os.path.realpath(link)
            leads = secret_match(link, patterns) or secret_within(real, patterns)
            if leads and os.path.exists(real):
                found.setdefault(real, os.path.isdir(real))
    return found

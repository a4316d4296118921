"""The viewer's optional packages (Starlette, uvicorn): the `viewer` extra.

They are imported only when a viewer starts, so the rest of jianmu works without them; when one
is missing, `require_viewer_packages` raises `ViewerUnavailableError` naming the extra to install.
"""

from __future__ import annotations

import importlib.util

#: The packages the viewer's server needs, with the extra that installs them.
PACKAGES = ("starlette", "uvicorn")
EXTRA = "viewer"


class ViewerUnavailableError(RuntimeError):
    """The viewer cannot start on this machine (a package of the `viewer` extra is missing)."""


def require_viewer_packages() -> None:
    """Raise ViewerUnavailableError when Starlette or uvicorn is not installed."""
    missing = [name for name in PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ViewerUnavailableError(
            f"the tree viewer needs {' and '.join(missing)}, which is not installed: "
            f"pip install 'jianmu-bt[{EXTRA}]'"
        )

"""How a tool crosses into a sandbox: described by import path, re-created in the child.

Nothing is pickled. The parent sends a small JSON spec; the child imports the module and looks the
tool up by qualified name:

- a class tool: `type(tool).__module__:__qualname__`, built with the JSON keyword arguments its
  optional `sandbox_kwargs()` method returns (no arguments when it has none);
- a FunctionTool: its function `tool.fn` by the same path; the module attribute is normally the
  `@tool`-decorated object itself, else the plain function is wrapped again with the tool's options.

Tools that cannot be found again by import path (defined inside a function, bound under another
name, with non-JSON constructor arguments) are refused with a clear `ToolNotPortableError`.
A tool defined in the `__main__` script is re-created by running that script file under another
module name, as `multiprocessing` does with its spawn start method.
"""

from __future__ import annotations

import importlib
import json
import runpy
import sys
from typing import Any

MAIN_ALIAS = "__jianmu_main__"


class ToolNotPortableError(ValueError):
    """A tool that a sandbox cannot re-create in another process (the message says why)."""


def _lookup(obj: Any, qualname: str) -> Any:
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _portable(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise ToolNotPortableError(f"{what} must be JSON-serialisable: {exc}") from exc


def describe_tool(tool: Any) -> dict[str, Any]:
    """The JSON spec a sandbox child uses to re-create `tool`; raises ToolNotPortableError."""
    name = getattr(tool, "name", type(tool).__name__)
    fn = getattr(tool, "fn", None)
    target = fn if callable(fn) else type(tool)
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", None)
    if not module or not qualname:
        raise ToolNotPortableError(f"tool '{name}' has no import path (module and qualified name)")
    if "<locals>" in qualname or "<lambda>" in qualname:
        raise ToolNotPortableError(
            f"tool '{name}' ({module}:{qualname}) is defined inside a function; a sandbox can "
            "only re-create tools defined at module level"
        )
    spec: dict[str, Any] = {"name": name, "module": module, "qualname": qualname}
    if module == "__main__":
        main_file = getattr(sys.modules.get("__main__"), "__file__", None)
        if not main_file:
            raise ToolNotPortableError(
                f"tool '{name}' is defined in an interactive __main__ with no file; move it into "
                "a module so a sandbox can import it"
            )
        spec["main_file"] = main_file
        found = _lookup(sys.modules["__main__"], qualname)
    else:
        try:
            found = _lookup(importlib.import_module(module), qualname)
        except (ImportError, AttributeError) as exc:
            raise ToolNotPortableError(
                f"tool '{name}': {module}:{qualname} cannot be imported again ({exc})"
            ) from exc
    if target is fn:
        spec["kind"] = "function"
        if found is not tool:
            if found is not fn and getattr(found, "fn", None) is not fn:
                raise ToolNotPortableError(
                    f"tool '{name}': {module}:{qualname} is not this tool's function"
                )
            # Another FunctionTool around a module-level function: carry its options along.
            signature = getattr(tool, "signature", None)
            spec["options"] = _portable(
                {
                    "name": tool.name,
                    "injected": sorted(getattr(signature, "injected_names", ())),
                    "blocking": getattr(tool, "blocking", True),
                    "input_schema": tool.input_schema,
                },
                f"the options of tool '{name}'",
            )
    else:
        spec["kind"] = "class"
        if found is not target:
            raise ToolNotPortableError(f"tool '{name}': {module}:{qualname} is not its class")
        make_kwargs = getattr(tool, "sandbox_kwargs", None)
        kwargs = make_kwargs() if callable(make_kwargs) else {}
        spec["kwargs"] = _portable(kwargs, f"sandbox_kwargs() of tool '{name}'")
    return spec


def spec_key(spec: dict[str, Any]) -> str:
    """A stable cache key for a spec (the child keeps one tool instance per key)."""
    return json.dumps(spec, sort_keys=True)


def _import_module(spec: dict[str, Any]) -> Any:
    if spec.get("main_file"):
        module = sys.modules.get(MAIN_ALIAS)
        if module is None:
            namespace = runpy.run_path(spec["main_file"], run_name=MAIN_ALIAS)
            module = type(sys)(MAIN_ALIAS)
            module.__dict__.update(namespace)
            sys.modules[MAIN_ALIAS] = module
        return module
    return importlib.import_module(spec["module"])


def recreate_tool(spec: dict[str, Any]) -> Any:
    """Build the tool a spec describes (in the sandbox child); raises ToolNotPortableError."""
    where = f"{spec.get('module')}:{spec.get('qualname')}"
    try:
        found = _lookup(_import_module(spec), spec["qualname"])
    except Exception as exc:
        raise ToolNotPortableError(
            f"cannot import tool '{spec.get('name')}' from {where} in the sandbox: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if spec["kind"] == "function":
        if "options" not in spec and hasattr(found, "execute_local"):
            return found
        # Imported here, in the child only: the sandbox layer does not depend on the tool layer.
        from jianmu_bt.tools.function_tool import FunctionTool

        fn = getattr(found, "fn", found)
        return FunctionTool(fn, **spec.get("options", {}))
    try:
        return found(**spec.get("kwargs", {}))
    except Exception as exc:
        raise ToolNotPortableError(
            f"cannot re-create tool '{spec.get('name')}' ({where}) in the sandbox: "
            f"{type(exc).__name__}: {exc}; give the class a sandbox_kwargs() method that returns "
            "its constructor arguments as JSON"
        ) from exc

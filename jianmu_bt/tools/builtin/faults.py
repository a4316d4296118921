"""ToolFault: how a built-in tool refuses a call, in a module of its own.

The arithmetic limits, decoders and path checks raise it without importing the tool machinery
(`model_tool`), so the expression evaluator that conditions use, and `jianmu validate` with it,
do not import the tool layer's calling code.
"""


class ToolFault(Exception):
    """A refusal or fault that a built-in tool reports to its caller as an "Error: ..." result.

    The message says what was wrong and why, in words an LLM can act on.
    """

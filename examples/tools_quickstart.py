"""Build a ToolSet from a typed @tool function and built-in names, show the schemas an LLM
sees, and run calls through it (including the error observations bad calls produce).

Run: python examples/tools_quickstart.py
"""

import json

import anyio

from jianmu_bt import ToolCall, ToolSet, tool


@tool
def convert_currency(amount: float, from_currency: str, to_currency: str = "CNY") -> float:
    """Convert an amount between USD and CNY at a fixed demo rate.

    Args:
        amount: How much money to convert.
        from_currency: The currency of `amount`, "USD" or "CNY".
        to_currency: The currency to convert to.
    """
    rate = {"USDCNY": 7.1, "CNYUSD": 1 / 7.1}.get(from_currency + to_currency, 1.0)
    return round(amount * rate, 2)


async def main() -> None:
    toolset = ToolSet.resolve(["calculator"], custom_tools=[convert_currency])
    print("tools:", toolset.names())
    print(json.dumps(toolset.schemas(), indent=2))

    # Calls as an LLM would send them: names, JSON-string arguments, ids.
    calls = ToolCall.from_list(
        [
            {
                "id": "c1",
                "name": "convert_currency",
                "arguments": '{"amount": 12.5, "from_currency": "USD"}',
            },
            {"id": "c2", "name": "calculator", "arguments": '{"expression": "17 * 23"}'},
            {"id": "c3", "name": "convert_currency", "arguments": '{"amount": "lots"}'},
            {"id": "c4", "name": "no_such_tool", "arguments": "{}"},
        ]
    )
    for call in calls:
        result = await toolset.call(call)
        print(f"{call.id} {call.name}: ok={result.ok} -> {result.content}")


if __name__ == "__main__":
    anyio.run(main)

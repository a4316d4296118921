"""`jianmu mcp serve --tree FILE`: a YAML file's tools served over MCP, under the file's guard."""

import sys

import anyio
from cli_helpers import REPO, assert_clean_failure, jianmu

TREE = """
version: 1
name: served
tools: [calculator, write_file]
tool_options: {workspace: WORKSPACE}
guard: {deny: [write_file], approve: [calculator_never]}
root:
  tool: {tool: calculator, arguments: {expression: "1 + 1"}}
"""


def test_a_yaml_files_tools_are_served_with_its_guard(tmp_path):
    from jianmu_bt.mcp import MCPClient, MCPServerConfig

    tree = tmp_path / "served.yaml"
    tree.write_text(TREE.replace("WORKSPACE", str(tmp_path)))
    config = MCPServerConfig(
        command=sys.executable,
        args=["-m", "jianmu_bt.cli", "mcp", "serve", "--tree", str(tree)],
        env={"PYTHONPATH": str(REPO)},
        cwd=str(REPO),
        timeout=20,
        connect_timeout=30,
    )

    async def session():
        async with MCPClient.from_config(config) as client:
            names = [t.name for t in await client.list_tools()]
            product = await client.call_tool("calculator", {"expression": "6 * 7"})
            refused = await client.call_tool("write_file", {"path": "x.txt", "content": "hi"})
            return names, product, refused

    names, product, refused = anyio.run(session)
    assert names == ["calculator", "write_file"]
    assert not product.is_error and "42" in str(product.content)
    assert refused.is_error and "policy deny_list" in str(refused.content)
    assert not (tmp_path / "x.txt").exists()


def test_a_broken_tree_file_is_reported_with_its_location(tmp_path):
    tree = tmp_path / "broken.yaml"
    tree.write_text("version: 1\nroot:\n  tool: {tool: calculater}\n")
    result = jianmu("mcp", "serve", "--tree", str(tree))
    assert_clean_failure(result, "broken.yaml:3:")

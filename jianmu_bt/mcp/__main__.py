"""`python -m jianmu_bt.mcp serve ...` (see jianmu_bt.mcp.cli)."""

import sys

from jianmu_bt.mcp.cli import main

if __name__ == "__main__":
    sys.exit(main())

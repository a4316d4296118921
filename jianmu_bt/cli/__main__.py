"""`python -m jianmu_bt.cli ...`: the same as the `jianmu` console script."""

import sys

from jianmu_bt.cli import main

if __name__ == "__main__":
    sys.exit(main())

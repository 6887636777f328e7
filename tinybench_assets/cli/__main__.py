"""``python -m tinybench_assets.cli``: the ``tinybench`` console script."""

import sys

from tinybench_assets.cli import main

sys.exit(main())

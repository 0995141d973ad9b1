"""`python -m benchmarks TARGET ...` is `ludo bench TARGET ...` (the same parser, the same
exit statuses), for a checkout whose `ludo` command is not on PATH."""

from __future__ import annotations

import sys

from ludo_cli.main import main

sys.exit(main(["bench", *sys.argv[1:]]))

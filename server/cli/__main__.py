"""`python -m server.cli ...` is the `oracle` command (tests, benchmarks and the engine's spawn use it)."""

import sys

from server.cli import main

sys.exit(main())

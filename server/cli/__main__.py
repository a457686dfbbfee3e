"""`python -m oracle_server.cli ...` is the `oracle` command (tests, benchmarks and the engine's spawn use it)."""

import sys

from oracle_server.cli import main

sys.exit(main())

"""Run the command line with ``python -m pi_durable_tui``."""

from pi_durable_tui.cli import main

raise SystemExit(main())

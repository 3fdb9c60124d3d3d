"""``python -m pi_durable_tui.bench.storage``: the storage benchmark (see the package)."""

import sys

from pi_durable_tui.bench.storage import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""``python -m qpnlp``: the ``qpnlp`` command (:func:`qpnlp.cli.main`), for an environment whose scripts directory
is not on ``PATH``."""

import sys

from qpnlp.cli import main

if __name__ == "__main__":
    sys.exit(main())

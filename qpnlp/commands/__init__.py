"""Sub-commands of the ``qpnlp`` CLI; each module provides ``register(subparsers)``."""

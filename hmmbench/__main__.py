"""``python3 -m hmmbench``: the same as the ``hmmbench`` command."""
import sys

from .cli import main

sys.exit(main())

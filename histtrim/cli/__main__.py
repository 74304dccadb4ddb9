"""`python -m histtrim.cli`: the same as the `histtrim` command."""

import sys

from . import main

sys.exit(main())

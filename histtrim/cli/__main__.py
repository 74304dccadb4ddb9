"""`python -m histtrim.cli`: the same as the `histtrim` command."""

import sys

from histtrim.cli import main

sys.exit(main())

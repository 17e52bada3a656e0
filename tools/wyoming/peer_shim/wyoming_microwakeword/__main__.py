"""`python -m wyoming_microwakeword ARGS` → `$NEON serve --engine micro ARGS` (see __init__)."""

import os
import sys

neon = os.environ.get("NEON")
if not neon:
    sys.exit("wyoming_microwakeword stand-in: set NEON to the neon binary")
os.execv(neon, [neon, "serve", "--engine", "micro", *sys.argv[1:]])

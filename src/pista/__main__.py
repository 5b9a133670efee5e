import sys

from pista.cli import main

sys.exit(main())

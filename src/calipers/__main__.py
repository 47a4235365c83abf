import sys

from calipers.cli import main

sys.exit(main())

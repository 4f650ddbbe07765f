import sys

from kit.cli import main

if __name__ == "__main__":  # engines that start workers with spawn re-import this module
    sys.exit(main())

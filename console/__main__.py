import sys

if sys.argv[1:2] == ["hook"] and len(sys.argv) > 2:
    # A hook process runs on every tool call: it starts without the command line's parser.
    from console.adapters import hookmain

    if sys.argv[2] in hookmain.HOOKS and not hookmain.wants_help(sys.argv[3:]):
        raise SystemExit(hookmain.main(sys.argv[2:]))

from console.cli import main

raise SystemExit(main())

from rlcompare.cli import main

raise SystemExit(main())

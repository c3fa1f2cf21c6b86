from rlcompare.cli.main import main

raise SystemExit(main())

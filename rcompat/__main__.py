from rcompat.cli.main import main

raise SystemExit(main())

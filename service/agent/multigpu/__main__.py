from service.agent.multigpu.cli import main

raise SystemExit(main())

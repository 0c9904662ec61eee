from edgerollout.cli.main import main

main()

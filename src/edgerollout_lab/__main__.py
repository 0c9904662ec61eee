from edgerollout_lab.commands import main

main()

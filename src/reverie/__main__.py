from reverie.cli import main

main()

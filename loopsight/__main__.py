"""``python -m loopsight`` runs the CLI."""

from loopsight.cli import main

main()

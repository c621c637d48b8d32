"""``python -m memfold.cli``."""

from memfold.cli import main

main()

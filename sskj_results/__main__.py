"""`python -m sskj_results` = `sskj-results`."""

from sskj_results.cli import main

main()

"""sskj_results: the results.json contract of the sskj benchmark workflow."""
__version__ = "0.1.0"

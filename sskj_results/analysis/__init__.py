"""What the numbers say: metrics, statistics, SLOs, validity, comparison, the runs table. No rendering."""

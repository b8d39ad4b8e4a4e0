"""The run loop's Python side: planning, launch commands, supervision, preflight, platforms, Slurm, env setup."""

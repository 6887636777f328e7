"""Errors the subcommands report as one line on stderr with exit code 2."""


class UsageError(ValueError):
    """Bad arguments or input files of a ``tinybench`` subcommand."""

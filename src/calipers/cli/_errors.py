"""Errors the CLI reports as one line and exit status 2."""


class InputError(Exception):
    """A bad input file or argument: the message names the file, column and row."""

# This is a placeholder.

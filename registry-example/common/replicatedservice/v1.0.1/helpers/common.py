"""Helpers shared by replicatedservice.py.

Imported as `from helpers import common`. Plain functions only, so the module
runs both as Python and as Starlark.
"""


def labels(name, extra):
    """Returns the labels of every object of one instance: app=<name> plus extra."""
    result = {"app": name}
    for key in sorted(extra.keys()):
        if key != "app":
            result[key] = extra[key]
    return result


def env_list(env):
    """Turns a {NAME: value} mapping into a container env list, sorted by name.

    Values are converted to strings, as Kubernetes requires.
    """
    return [{"name": key, "value": str(env[key])} for key in sorted(env.keys())]


def compute_resources(resources):
    """Drops empty request and limit entries so they are not sent as blanks."""
    result = {}
    for section in ["requests", "limits"]:
        values = resources.get(section, {})
        kept = {}
        for key in sorted(values.keys()):
            if values[key]:
                kept[key] = values[key]
        if kept:
            result[section] = kept
    return result

import json
import yaml
import helpers.common
import helpers.common as hc
from helpers import common
from helpers.common import labels as L, VERSION


def GenerateConfig(context):
    name = context.env["name"]
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": L(name)},
        "data": {
            "json": json.dumps(context.properties["annotations"]),
            "back": str(json.loads('{"x": [1, 2]}')["x"][1]),
            "yaml": yaml.dump({"k": "v"}),
            "parsed": yaml.safe_load("a: 3")["a"] * 2,
            "v": VERSION + hc.VERSION + common.VERSION + helpers.common.VERSION,
            "imports": ",".join(sorted(context.imports.keys())),
        },
    }
    i = 0
    while i < 3:
        i += 1
    cm["data"]["loops"] = i
    return {"resources": [{"name": name, "type": "ConfigMap", "properties": cm}]}

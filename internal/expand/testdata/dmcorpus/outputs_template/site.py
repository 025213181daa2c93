"""Outputs from a Python template, one of them a mapping."""


def GenerateConfig(context):
    name = context.env["name"] + "-bucket"
    return {
        "resources": [{
            "name": name,
            "type": "storage.v1.bucket",
            "properties": {"location": context.properties["zone"]},
        }],
        "outputs": [
            {"name": "zone", "value": context.properties["zone"]},
            {"name": "bucket", "value": {"name": name, "url": "gs://" + name}},
        ],
    }

"""A Service and a Deployment, DM style."""
import yaml
import helpers.common
from helpers import common


def GenerateConfig(context):
    name = context.env["name"]
    props = context.properties
    labels = helpers.common.labels(name)
    resources = [
        {
            "name": name + "-svc",
            "type": "Service",
            "properties": {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "labels": labels},
                "spec": {"ports": [{"port": props["port"]}], "selector": labels},
            },
        },
        {
            "name": name + "-deploy",
            "type": "apps/v1/Deployment",
            "properties": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "labels": common.labels(name)},
                "spec": {
                    "replicas": props["replicas"],
                    "template": {"spec": {"containers": [{"name": "main", "image": props["image"]}]}},
                },
            },
        },
    ]
    return yaml.dump({"resources": resources})

"""Replicated service: a Deployment of identical pods behind a Service.

replicatedservice v1.0.1. The template of DM's registries, carried over: the
properties keep their snake_case names.

v1.0.1 (fix): target_port now defaults to container_port. v1 defaulted it to
service_port, which broke every instance whose two ports differ.

Emits, named from env["name"] so that two instances never collide:
  <name>-service      Service              <name>
  <name>-deployment   apps/v1/Deployment   <name>
"""

import yaml

from helpers import common


def GenerateConfig(context):
    """Returns the configuration of one replicated service as YAML."""
    props = context.properties
    name = context.env["name"]
    labels = common.labels(name, props.get("labels", {}))

    container_port = props["container_port"]
    service_port = props["service_port"]
    # The port the Service forwards to on the pods.
    target_port = props.get("target_port", container_port)

    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "labels": labels,
        },
        "spec": {
            "type": props["service_type"],
            "ports": [{
                "name": "main",
                "port": service_port,
                "targetPort": target_port,
                "protocol": props["protocol"],
            }],
            "selector": {"app": name},
        },
    }

    container = {
        "name": props.get("container_name", name),
        "image": props["image"],
        "ports": [{
            "name": "main",
            "containerPort": container_port,
            "protocol": props["protocol"],
        }],
    }
    env = common.env_list(props.get("env", {}))
    if env:
        container["env"] = env
    resources = common.compute_resources(props.get("resources", {}))
    if resources:
        container["resources"] = resources

    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "labels": labels,
        },
        "spec": {
            "replicas": props["replicas"],
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container]},
            },
        },
    }

    config = {
        "resources": [
            {"name": name + "-service", "type": "Service", "properties": service},
            {"name": name + "-deployment", "type": "apps/v1/Deployment", "properties": deployment},
        ],
    }
    return yaml.dump(config)

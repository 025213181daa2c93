"""Replicated service: a Deployment of identical pods behind a Service.

replicatedservice v1.1.0. The template of DM's registries, carried over: the
properties keep their snake_case names.

v1.0.1 (fix): target_port now defaults to container_port. v1 defaulted it to
service_port, which broke every instance whose two ports differ.

New in v1.1.0: a readiness probe (probe, a nested object: HTTP or TCP) and
pod annotations. The helper module is imported as `import helpers.common`.

Emits, named from env["name"] so that two instances never collide:
  <name>-service      Service              <name>
  <name>-deployment   apps/v1/Deployment   <name>
"""

import yaml

import helpers.common


def readiness_probe(probe):
    """Returns the readinessProbe for the probe property, or None."""
    kind = probe.get("type", "none")
    if kind == "none":
        return None
    result = {
        "initialDelaySeconds": probe.get("initial_delay_seconds", 5),
        "periodSeconds": probe.get("period_seconds", 10),
    }
    if kind == "http":
        result["httpGet"] = {"path": probe.get("path", "/"), "port": "main"}
    else:
        result["tcpSocket"] = {"port": "main"}
    return result


def GenerateConfig(context):
    """Returns the configuration of one replicated service as YAML."""
    props = context.properties
    name = context.env["name"]
    labels = helpers.common.labels(name, props.get("labels", {}))

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
    env = helpers.common.env_list(props.get("env", {}))
    if env:
        container["env"] = env
    resources = helpers.common.compute_resources(props.get("resources", {}))
    if resources:
        container["resources"] = resources
    probe = readiness_probe(props.get("probe", {}))
    if probe:
        container["readinessProbe"] = probe

    pod_metadata = {"labels": labels}
    annotations = props.get("annotations", {})
    if annotations:
        pod_metadata["annotations"] = annotations

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
                "metadata": pod_metadata,
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

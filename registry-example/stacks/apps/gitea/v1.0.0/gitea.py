"""Gitea, a self-hosted Git service, on an ephemeral PostgreSQL.

gitea v1.0.0. A composite written in Python (run as Starlark): it returns a
configuration dict that instantiates two templates of this registry.

  <name>-db    postgres:v1.1      PostgreSQL, credentials in the Secret <name>-db
  <name>-web   common/web:v1.3    Gitea itself, published through an Ingress

Gitea reads its database settings from GITEA__database__* variables; the
user name, password and database name come from the Secret the postgres
template creates, so the generated password never appears in the
configuration.
"""

GITEA_HTTP_PORT = 3000


def secret_env(name, secret, key):
    """An env entry whose value comes from a key of a Secret."""
    return {
        "name": name,
        "valueFrom": {"secretKeyRef": {"name": secret, "key": key}},
    }


def gitea_env(domain, db_service, root_url):
    """The container environment that configures Gitea."""
    return [
        {"name": "GITEA__database__DB_TYPE", "value": "postgres"},
        {"name": "GITEA__database__HOST", "value": "%s:5432" % db_service},
        secret_env("GITEA__database__NAME", db_service, "database-name"),
        secret_env("GITEA__database__USER", db_service, "database-user"),
        secret_env("GITEA__database__PASSWD", db_service, "database-password"),
        {"name": "GITEA__server__DOMAIN", "value": domain},
        {"name": "GITEA__server__ROOT_URL", "value": root_url},
        {"name": "GITEA__server__HTTP_PORT", "value": str(GITEA_HTTP_PORT)},
        {"name": "GITEA__security__INSTALL_LOCK", "value": "true"},
    ]


def GenerateConfig(context):
    """Returns the configuration of one Gitea instance as a dict."""
    props = context.properties
    name = context.env["name"]
    domain = props["domain"]
    database = props["database"]
    ingress = props["ingress"]
    db_service = name + "-db"

    root_url = "http://%s/" % domain

    db = {
        "name": db_service,
        "type": "postgres:v1.1",
        "properties": {
            "DATABASE_SERVICE_NAME": db_service,
            "POSTGRESQL_USER": "gitea",
            "POSTGRESQL_DATABASE": database["name"],
            "POSTGRESQL_VERSION": database["version"],
            "MEMORY_LIMIT": database["memoryLimit"],
        },
    }

    web = {
        "name": name + "-web",
        "type": "common/web:v1.3",
        "properties": {
            "image": props["image"],
            # Repositories live in the pod: more than one replica would split them.
            "replicas": 1,
            "containerPort": GITEA_HTTP_PORT,
            "port": 80,
            "readinessPath": "/api/healthz",
            "env": gitea_env(domain, db_service, root_url),
            "labels": {"app.kubernetes.io/part-of": name},
            "ingress": {
                "enabled": True,
                "className": ingress["className"],
                "host": domain,
                "tls": {"enabled": ingress["tls"]},
            },
        },
    }

    return {"resources": [db, web]}

#!/usr/bin/env python3
"""Reference expansion of Deployment Manager configurations.

Follows DM's expansion code (expandybird's expansion.py and the hosted
successor's client, which gathered imports): a configuration's imports and
every template's schema, with the files a schema imports (relative to the
schema, with their names), recursively; Jinja templates rendered by jinja2
with properties, env and imports as globals and a DictLoader over the
imports (by name); Python templates run as GenerateConfig(context); schema
defaults applied before rendering (DM's default-setting draft 4 validator,
jsonschema when installed); template output read by yaml.safe_load;
templates expanded recursively until only other types remain.

It writes, for each case directory given, want.json: {"resources": [...]}
(plus configVersion when the configuration has one), what dm's
Result.Config must equal as data. Value references $(ref.NAME.PATH) are
replaced as dm replaces them when PATH exists in the rendered resource
NAME, and left in place otherwise (deferred to deploy time); where NAME is
a template resource, $(ref.NAME.OUTPUT) is the template's output first.

Non-JSON values: .inf/-.inf/.nan become the strings ".inf", "-.inf",
".nan"; dates and times their YAML text (what dm keeps).

Schema patterns are checked as DM's validator checked them, with
Python's re.search (other keywords dm checks with DM's own leniencies).

Usage: scripts/dmref/expand.py internal/expand/testdata/dmcorpus/*/
       scripts/dmref/expand.py --serve   (the differential test's mode:
       one case a line on stdin, one answer a line on stdout; see serve)
Needs python3, jinja2 and PyYAML (Debian: python3-jinja2 python3-yaml).
"""

import copy
import datetime
import importlib.abc
import importlib.util
import json
import math
import os
import re
import sys
import types

import jinja2
import yaml

# The env every corpus case gets (the Go test sets the same).
BASE_ENV = {
    "deployment": "dep",
    "namespace": "ns",
    "project": "proj",
    "project_number": "123456",
    "current_time": "2026-01-01T00:00:00Z",
    "username": "user@example.com",
}


class ExpansionError(Exception):
    pass


def is_template(path):
    return path.endswith(".py") or path.endswith(".jinja")


class DirFS(object):
    """The files of a case directory on disk."""

    def read(self, path):
        with open(path) as f:
            return f.read()

    def exists(self, path):
        return os.path.exists(path)


class MemFS(object):
    """Files sent with a case (--serve): paths relative to the
    configuration's directory, as dm's Request.Imports holds them."""

    def __init__(self, files):
        self.files = {os.path.normpath(k): v for k, v in files.items()}

    def read(self, path):
        if path not in self.files:
            raise ExpansionError("no file %s" % path)
        return self.files[path]

    def exists(self, path):
        return path in self.files


def read_imports(config_dir, config, fs=None):
    """Returns {name: {"path": p, "content": c}} as DM's client built it."""
    fs = fs or DirFS()
    imports = {}
    todo = []

    def add(name, path):
        full = os.path.normpath(os.path.join(config_dir, path))
        content = fs.read(full)
        imports.setdefault(name, {"path": path, "content": content})
        if is_template(path):
            todo.append(path)

    for imp in config.get("imports") or []:
        if isinstance(imp, str):
            imp = {"path": imp}
        add(imp.get("name") or imp["path"], imp["path"])
    done = set()
    while todo:
        path = todo.pop(0)
        if path in done:
            continue
        done.add(path)
        schema = path + ".schema"
        full = os.path.normpath(os.path.join(config_dir, schema))
        if not fs.exists(full):
            continue
        content = fs.read(full)
        imports.setdefault(schema, {"path": schema, "content": content})
        s = yaml.safe_load(content) or {}
        for imp in s.get("imports") or []:
            if isinstance(imp, str):
                imp = {"path": imp}
            p = os.path.normpath(os.path.join(os.path.dirname(path), imp["path"]))
            add(imp.get("name") or imp["path"], p)
    return imports


def apply_defaults(schema, instance):
    """DM's default-setting validator: fills defaults of properties,
    recursively into objects that are present or defaulted."""
    props = schema.get("properties") or {}
    if not isinstance(instance, dict):
        return instance
    for name, sub in props.items():
        if not isinstance(sub, dict):
            continue
        if name not in instance and "default" in sub:
            instance[name] = copy.deepcopy(sub["default"])
        if name in instance and isinstance(instance[name], dict):
            apply_defaults(sub, instance[name])
    return instance


def validate(doc, props, path):
    """The part of DM's validation that the reference checks: every
    string a schema's `pattern` applies to must contain a match, found
    by Python's re.search as jsonschema finds it (draft 4: properties
    and items, recursively). Other keywords dm checks as DM did, with
    DM's own leniencies, which plain jsonschema lacks."""
    problems = []

    def walk(s, v, at):
        if not isinstance(s, dict):
            return
        if isinstance(v, str) and isinstance(s.get("pattern"), str):
            if not re.search(s["pattern"], v):
                problems.append("%s: %r does not match %r" % (at or "properties", v, s["pattern"]))
        if isinstance(v, dict) and isinstance(s.get("properties"), dict):
            for k, sub in s["properties"].items():
                if k in v:
                    walk(sub, v[k], at + "." + k if at else k)
        if isinstance(v, list) and isinstance(s.get("items"), dict):
            for i, e in enumerate(v):
                walk(s["items"], e, "%s[%d]" % (at, i))

    walk(doc, props, "")
    if problems:
        raise ExpansionError("%s: invalid properties: %s" % (path, "; ".join(problems)))


class Context(object):
    def __init__(self, resource):
        self.properties = resource["properties"]
        self.env = resource["env"]
        self.imports = resource["imports"]


class ImportsFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Lets a Python template import the .py files it was given."""

    def __init__(self, imports):
        self.imports = imports

    def _name(self, fullname):
        for cand in (fullname.replace(".", "/") + ".py", fullname.replace(".", "/") + "/__init__.py"):
            if cand in self.imports:
                return cand
        return None

    def find_spec(self, fullname, path, target=None):
        name = self._name(fullname)
        if name is None:
            prefix = fullname.replace(".", "/") + "/"
            if any(k.startswith(prefix) for k in self.imports):
                return importlib.util.spec_from_loader(fullname, self, is_package=True)
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=name.endswith("__init__.py"))

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = self._name(module.__name__)
        if name is None:
            module.__path__ = []
            return
        exec(compile(py2(self.imports[name]), name, "exec"), module.__dict__)


def py2(src):
    """The Python 2 spellings DM's templates use, in Python 3."""
    src = re.sub(r"\.iteritems\(\)", ".items()", src)
    src = re.sub(r"\.itervalues\(\)", ".values()", src)
    src = re.sub(r"\.iterkeys\(\)", ".keys()", src)
    return src


PY2_BUILTINS = {"xrange": range, "unicode": str, "basestring": str, "long": int}


def dm_yaml():
    """PyYAML as DM's Python 2.7 templates saw it: load without a Loader."""
    m = types.ModuleType("yaml")
    m.__dict__.update(yaml.__dict__)
    m.load = lambda stream, Loader=yaml.SafeLoader: yaml.load(stream, Loader=Loader)
    return m


def expand_python(source, name, resource, imports):
    finder = ImportsFinder({k: v["content"] for k, v in imports.items()})
    sys.meta_path.insert(0, finder)
    saved = {k: m for k, m in sys.modules.items()}
    sys.modules["yaml"] = dm_yaml()
    try:
        ns = dict(PY2_BUILTINS)
        exec(compile(py2(source), name, "exec"), ns)
        return ns["GenerateConfig"](Context(resource))
    finally:
        sys.meta_path.remove(finder)
        for k in list(sys.modules):
            if k not in saved:
                del sys.modules[k]
        sys.modules["yaml"] = yaml


def expand_jinja(source, resource, imports):
    env = jinja2.Environment(loader=jinja2.DictLoader({k: v["content"] for k, v in imports.items()}))
    return env.from_string(source).render(resource)


def expand_template(resource, imports, base_env):
    name = resource["type"]
    path = imports[name]["path"]
    env = dict(base_env)
    env["name"] = resource["name"]
    env["type"] = resource["type"]
    props = resource.get("properties") or {}
    schema = imports.get(path + ".schema") or imports.get(name + ".schema")
    if schema:
        doc = yaml.safe_load(schema["content"]) or {}
        props = apply_defaults(doc, props)
        validate(doc, props, schema["path"])
    r = {"properties": props, "env": env, "imports": {k: v["content"] for k, v in imports.items()}}
    if path.endswith(".jinja"):
        out = expand_jinja(imports[name]["content"], r, imports)
    else:
        out = expand_python(imports[name]["content"], path, r, imports)
    if isinstance(out, str):
        out = yaml.safe_load(out)
    if not isinstance(out, dict) or "resources" not in out:
        raise ExpansionError("%s: output has no resources" % name)
    return out["resources"] or [], out.get("outputs") or []


def process(resource, imports, base_env, out, outputs):
    """Appends resource's primitives to out; outputs collects the
    templates' outputs: {resource name: {output name: value}}."""
    t = resource["type"]
    if t in imports and is_template(imports[t]["path"]):
        children, outs = expand_template(resource, imports, base_env)
        if outs:
            outputs[resource["name"]] = {o["name"]: o["value"] for o in outs}
        for child in children:
            process(child, imports, base_env, out, outputs)
    else:
        if not isinstance(resource.get("properties"), (dict, type(None))):
            raise ExpansionError("%s: properties is not a mapping" % resource["name"])
        r = {"name": resource["name"], "type": t}
        for k in ("properties", "metadata", "accessControl"):
            if resource.get(k) is not None:
                r[k] = resource[k]
        out.append(r)


REF = re.compile(r"\$\(ref\.([^.\[\)\s]+)((?:\.[^.\[\)\s]+|\[\d+\])*)\)")
MISSING = object()


def lookup(res, name, path):
    """The value at path in the rendered properties of resource name, as
    dm looks it up; MISSING for what only the live object will have."""
    return walk(res[name].get("properties") or {}, path)


def scalar_string(v):
    if isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":"))


def walk(v, path):
    """The value at path (".a[0]") in v, or MISSING."""
    for step in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path):
        key, idx = step
        if key:
            if not isinstance(v, dict) or key not in v:
                return MISSING
            v = v[key]
        else:
            if not isinstance(v, list) or int(idx) >= len(v):
                return MISSING
            v = v[int(idx)]
    return v


def inline_outputs(resources, outputs):
    """DM's template outputs: $(ref.NAME.OUTPUT[.PATH]), NAME a template
    resource, is the output's value (at PATH), references in it kept for
    resolve_refs. An output that is one reference followed by a PATH
    becomes the longer reference."""
    prims = {r["name"] for r in resources}

    def target(m):
        name, path = m.group(1), m.group(2)
        step = re.match(r"\.([^.\[]+)", path)
        if name not in outputs or not step:
            return None
        out = step.group(1)
        if out not in outputs[name]:
            if name in prims:
                return None
            raise ExpansionError("%s: no output %s" % (m.group(0), out))
        return outputs[name][out], path[step.end():]

    def value(m):
        v, rest = target(m)
        v = sub(v)
        if rest and isinstance(v, str) and REF.fullmatch(v):
            return v[:-1] + rest + ")"
        got = walk(v, rest)
        if got is MISSING:
            raise ExpansionError("%s: no %s" % (m.group(0), rest))
        return copy.deepcopy(got)

    def sub(v):
        if isinstance(v, str) and "$(ref." in v:
            ms = list(REF.finditer(v))
            if len(ms) == 1 and ms[0].start() == 0 and ms[0].end() == len(v):
                return value(ms[0]) if target(ms[0]) else v
            return REF.sub(lambda m: scalar_string(value(m)) if target(m) else m.group(0), v)
        if isinstance(v, dict):
            return {k: sub(e) for k, e in v.items()}
        if isinstance(v, list):
            return [sub(e) for e in v]
        return v

    for r in resources:
        if "properties" in r:
            r["properties"] = sub(r["properties"])


def resolve_refs(resources):
    byname = {r["name"]: r for r in resources}

    def sub(v):
        if isinstance(v, str) and "$(ref." in v:
            ms = list(REF.finditer(v))
            if len(ms) == 1 and ms[0].start() == 0 and ms[0].end() == len(v):
                got = lookup(byname, ms[0].group(1), ms[0].group(2))
                return v if got is MISSING else sub(got)
            def rep(m):
                got = lookup(byname, m.group(1), m.group(2))
                return m.group(0) if got is MISSING else scalar_string(sub(got))
            return REF.sub(rep, v)
        if isinstance(v, dict):
            return {k: sub(e) for k, e in v.items()}
        if isinstance(v, list):
            return [sub(e) for e in v]
        return v

    for r in resources:
        if "properties" in r:
            r["properties"] = sub(r["properties"])


def plain(v):
    """JSON-safe, as dm writes it."""
    if isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        return ".nan" if math.isnan(v) else (".inf" if v > 0 else "-.inf")
    if isinstance(v, (datetime.date, datetime.datetime)):
        return str(v)
    if isinstance(v, dict):
        return {str(k) if not isinstance(k, bool) else str(k).lower(): plain(e) for k, e in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(e) for e in v]
    return v


def find_config(case):
    for root, _, files in sorted(os.walk(case)):
        if "config.yaml" in files:
            return os.path.join(root, "config.yaml")
    raise ExpansionError("%s: no config.yaml" % case)


def expand_case(case):
    cfg_path = find_config(case)
    with open(cfg_path) as f:
        text = f.read()
    env = {}
    env_file = os.path.join(case, "env.yaml")
    if os.path.exists(env_file):
        with open(env_file) as f:
            env = yaml.safe_load(f) or {}
    result = expand_config(text, os.path.dirname(cfg_path), DirFS(), env)
    result.pop("outputs", None)  # want.json holds the resources
    return result


def expand_config(text, config_dir, fs, extra_env):
    """Expands a configuration's text; its files are read through fs,
    relative to config_dir. Returns {"resources": [...], "outputs":
    [...]} (plus configVersion when the configuration has one)."""
    config = yaml.safe_load(text) or {}
    if not isinstance(config, dict):
        raise ExpansionError("the configuration is not a mapping")
    env = dict(BASE_ENV)
    env.update(extra_env or {})
    imports = read_imports(config_dir, config, fs)
    out, outputs = [], {}
    for r in config.get("resources") or []:
        process(r, imports, env, out, outputs)
    # The configuration's outputs go through the same substitutions as
    # properties: a pseudo resource that no reference can name.
    pseudo = {"name": "\0outputs", "properties": [o.get("value") for o in config.get("outputs") or []]}
    out.append(pseudo)
    inline_outputs(out, outputs)
    resolve_refs(out)
    out.pop()
    result = {"resources": plain(out)}
    result["outputs"] = [{"name": o["name"], "value": plain(v)} for o, v in zip(config.get("outputs") or [], pseudo["properties"])]
    if "configVersion" in config:
        result["configVersion"] = plain(config["configVersion"])
    return result


def serve():
    """One case a line on stdin, one answer a line on stdout, for the
    differential test (internal/expand's TestDMDiff): a case is
    {"config": TEXT, "files": {PATH: TEXT}, "env": {KEY: VALUE}}, paths
    relative to the configuration's directory; the answer is
    {"ok": true, "resources": [...], "outputs": [...]} or {"ok": false,
    "error": "TYPE: MESSAGE"}. A case runs at most CASE_SECONDS; what a
    template prints goes to stderr."""
    import contextlib
    import resource
    import signal

    # A template that allocates without bound fails with MemoryError
    # rather than taking the machine.
    limit = 2 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def timeout(signum, frame):
        raise TimeoutError("the case ran more than %d seconds" % CASE_SECONDS)

    signal.signal(signal.SIGALRM, timeout)
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            case = json.loads(line)
            signal.alarm(CASE_SECONDS)
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    result = expand_config(case["config"], "", MemFS(case.get("files") or {}), case.get("env") or {})
            finally:
                signal.alarm(0)
            answer = {"ok": True}
            answer.update(result)
            text = json.dumps(answer, sort_keys=True, allow_nan=False, default=str)
        except (Exception, SystemExit, RecursionError) as e:
            msg = str(e).splitlines()[0] if str(e) else ""
            text = json.dumps({"ok": False, "error": "%s: %s" % (type(e).__name__, msg)})
        out.write(text + "\n")
        out.flush()
    return 0


CASE_SECONDS = 10


def main(argv):
    if argv[1:] == ["--serve"]:
        return serve()
    for case in argv[1:]:
        case = case.rstrip("/")
        if not os.path.isdir(case):
            continue
        try:
            result = expand_case(case)
        except Exception as e:  # the corpus holds expansions that succeed
            print("%s: %s: %s" % (case, type(e).__name__, e), file=sys.stderr)
            return 1
        with open(os.path.join(case, "want.json"), "w") as f:
            json.dump(result, f, indent=2, sort_keys=True, allow_nan=False)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

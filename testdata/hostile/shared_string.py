def GenerateConfig(context):
    s = "x" * 4000000
    return {"resources": [{"name": "r%d" % i, "type": "ConfigMap", "properties": {"data": {"a": s}}} for i in range(3000)]}

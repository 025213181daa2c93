def GenerateConfig(context):
    l = ["x"]
    for i in range(31):
        l.extend(l)
    return {"resources": [{"name": "x", "type": "ConfigMap", "properties": {"data": {"n": len(l)}}}]}
